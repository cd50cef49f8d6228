"""The camera on the tablet (companion/web/camera.py) through Flask's test client, with a fake
LiveSession that has the interface of docs/LIVE.md and serves small generated JPEGs."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid

import cv2
import numpy as np
import pytest
from web_support import csrf, message

from companion.live.zones import Zones, default_zones
from companion.web import create_app

HX = {"HX-Request": "true"}


def jpeg(colour, width=160, height=90, text=None) -> bytes:
    image = np.zeros((height, width, 3), np.uint8)
    image[:] = colour
    if text:
        cv2.putText(image, text, (4, height // 2), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255))
    ok, data = cv2.imencode(".jpg", image)
    assert ok
    return data.tobytes()


class FakeLive:
    """A LiveSession as the web page sees it (docs/LIVE.md): status, frames, zones, crops."""

    def __init__(self, zone_file, camera="live", frames=True, match_id=None, fps=15.0):
        self.zone_file = zone_file
        self.zones = default_zones(2)
        self.camera = camera
        self.served = 0  # pictures encoded for the page
        self.has_frames = frames
        self.match_id = match_id
        self.fps = fps  # a new camera frame this many times a second (0: one still frame)
        self.started = time.monotonic()
        self.proposal = None
        self.crops: dict[tuple[str, str], bytes] = {}
        self.lock = threading.Lock()

    @property
    def frames(self) -> int:
        if not self.has_frames:
            return 0
        return 1 + int((time.monotonic() - self.started) * self.fps)

    def status(self) -> dict:
        return {
            "camera": self.camera,
            "source": "camera:0",
            "fps": 14.96,
            "frames": self.frames,
            "match_id": self.match_id,
            "message": "",
            "proposal": self.proposal,
        }

    def latest_jpeg(self, annotated=True):
        if not self.has_frames:
            return None
        with self.lock:
            self.served += 1
            return jpeg((0, 90, 0) if annotated else (90, 0, 0), text=str(self.frames))

    def snapshot_jpeg(self):
        return jpeg((90, 0, 0)) if self.has_frames else None

    def set_zones(self, zones):
        zones.save(self.zone_file)
        self.zones = zones

    def crop_jpeg(self, player, card):
        return self.crops.get((player, card))


@pytest.fixture
def fake(tmp_path):
    return FakeLive(tmp_path / "zones.toml")


@pytest.fixture
def client(store, fake):
    return create_app(store, testing=True, live=fake).test_client()


@pytest.fixture
def bare(store):
    """The app served without a camera."""
    return create_app(store, testing=True).test_client()


# ---------------------------------------------------------------------------------------------
# Live view, frames, status
# ---------------------------------------------------------------------------------------------


def test_live_view_shows_the_picture_state_and_frame_rate(client, fake, store):
    fake.match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    page = client.get("/live").get_data(as_text=True)
    assert 'id="live-frame"' in page and 'src="/live/frame.jpg"' in page
    assert "15.0" in page and "camera:0" in page  # frame rate and source
    assert "cam-live" in page
    assert f'href="/matches/{fake.match_id}"' in page  # back to the match
    assert 'href="/calibrate"' in page
    assert "/static/camera.js" in page


def test_frames_are_jpegs_annotated_or_plain(client):
    annotated = client.get("/live/frame.jpg")
    plain = client.get("/live/frame.jpg?plain=1")
    for response in (annotated, plain):
        assert response.status_code == 200
        assert response.mimetype == "image/jpeg"
        assert response.headers["Cache-Control"] == "no-store"
    a = cv2.imdecode(np.frombuffer(annotated.data, np.uint8), cv2.IMREAD_COLOR)
    p = cv2.imdecode(np.frombuffer(plain.data, np.uint8), cv2.IMREAD_COLOR)
    assert a.shape == (90, 160, 3)
    assert a[5, 5, 1] > 60 > a[5, 5, 0]  # the fake's annotated frame is green
    assert p[5, 5, 0] > 60 > p[5, 5, 1]  # its plain snapshot is blue


def test_status_is_the_documented_json(client, fake):
    fake.camera = "connecting"
    status = client.get("/live/status").get_json()
    keys = {"camera", "source", "fps", "frames", "match_id", "message", "proposal"}
    assert set(status) == keys
    assert status["camera"] == "connecting" and status["fps"] == 15.0
    assert status["message"] == "Connecting to the camera…" and status["proposal"] is None
    fake.proposal = {"kind": "redeal", "text": "Four of a month in the field: redeal?"}
    assert client.get("/live/status").get_json()["proposal"] == fake.proposal
    fake.camera = "started"  # a state the contract does not name
    assert client.get("/live/status").get_json()["camera"] == "connecting"


def test_a_slow_capture_says_why_on_the_live_status_in_the_pages_language(client, fake):
    from companion.live.messages import Message
    from companion.live.pipeline import LivePipeline

    # what the pipeline puts in the status when a capture is slow (``LivePipeline.unread``)
    pipeline = LivePipeline(None, default_zones(2), None, None)
    pipeline.unread = Message("camera.capture_unread", player="Aki")
    fake.proposal = {"kind": pipeline.proposal.kind, "text": pipeline.proposal.text}
    said = {
        lang: client.get(f"/live/status?lang={lang}").get_json()["proposal"]
        for lang in ("en", "fr", "ja")
    }
    assert said["en"] == {
        "kind": "unread",
        "text": "A card in Aki's captures is not read yet: is a hand over it?",
    }
    assert said["fr"]["text"] == (
        "Une carte des prises d’Aki n’est pas encore lue : une main est-elle dessus ?"
    )
    assert "Aki" in said["ja"]["text"] and "取り札" in said["ja"]["text"]
    page = client.get("/live?lang=fr").get_data(as_text=True)  # the fragment, as first served
    assert "Une carte des prises d’Aki n’est pas encore lue" in page


def test_a_lost_camera_says_keep_scoring_by_hand(client, fake):
    fake.camera = "lost"
    status = client.get("/live/status").get_json()
    assert status["message"] == "Camera lost — keep scoring by hand, retrying."
    page = client.get("/live").get_data(as_text=True)
    assert "Camera lost — keep scoring by hand, retrying." in page and "cam-lost" in page


def test_no_frame_yet_is_503_with_a_sentence(store, tmp_path):
    client = create_app(store, testing=True, live=FakeLive(tmp_path / "z.toml", frames=False))
    client = client.test_client()
    for url in ("/live/frame.jpg", "/live/frame.jpg?plain=1"):
        response = client.get(url)
        assert response.status_code == 503
        assert message(response) == "The camera has not sent a picture yet; try again in a moment."


def test_without_a_camera_the_pages_say_so_and_pictures_are_404(bare, store):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    assert "No camera" in bare.get("/live").get_data(as_text=True)
    assert "No camera" in bare.get("/calibrate").get_data(as_text=True)
    status = bare.get("/live/status").get_json()
    assert status["camera"] == "off" and status["match_id"] is None
    for url in ("/live/frame.jpg", "/live/stream.mjpg", "/live/crop?player=Aki&card=01-1"):
        response = bare.get(url)
        assert response.status_code == 404
        assert message(response).startswith("No camera")
    assert 'id="camera-link"' not in bare.get(f"/matches/{match_id}").get_data(as_text=True)
    token = csrf(bare)
    response = bare.post("/calibrate", data={"csrf_token": token, "reset": "1"})
    assert response.status_code == 404


def test_the_match_page_links_to_the_camera(client, store):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    page = client.get(f"/matches/{match_id}").get_data(as_text=True)
    assert 'id="camera-link"' in page and 'href="/live"' in page


def test_mjpeg_stream_sends_frames_and_closes_itself(client, fake):
    response = client.get("/live/stream.mjpg?max_seconds=0.35")
    assert response.status_code == 200
    assert response.mimetype == "multipart/x-mixed-replace"
    body = response.get_data()  # returns: the stream closed itself
    parts = body.split(b"--frame\r\n")[1:]
    assert body.endswith(b"--frame--\r\n")
    frames = [p for p in parts if p.startswith(b"Content-Type: image/jpeg")]
    assert 2 <= len(frames) <= 5  # a new frame every 0.1 s at most
    header, data = frames[0].split(b"\r\n\r\n", 1)
    length = int(re.search(rb"Content-Length: (\d+)", header).group(1))
    image = cv2.imdecode(np.frombuffer(data[:length], np.uint8), cv2.IMREAD_COLOR)
    assert image.shape == (90, 160, 3)


def test_mjpeg_stream_encodes_a_frame_only_once(store, tmp_path):
    still = FakeLive(tmp_path / "zones.toml", fps=0)  # the camera's frame never changes
    client = create_app(store, testing=True, live=still).test_client()
    body = client.get("/live/stream.mjpg?max_seconds=0.35").get_data()
    assert body.count(b"Content-Type: image/jpeg") == 1
    assert still.served == 1  # looked at 3-4 times, encoded once


@pytest.mark.parametrize("value", ["x", "-1", "7200", "nan"])
def test_mjpeg_stream_bad_max_seconds(client, value):
    response = client.get(f"/live/stream.mjpg?max_seconds={value}")
    assert response.status_code == 400 and "max_seconds" in message(response)


def test_crop_of_a_flagged_capture(client, fake):
    fake.crops[("Aki", "03-1")] = jpeg((0, 0, 200), 60, 90)
    response = client.get("/live/crop?player=Aki&card=03-1")
    assert response.status_code == 200 and response.mimetype == "image/jpeg"
    assert response.data == fake.crops[("Aki", "03-1")]
    missing = client.get("/live/crop?player=Ben&card=03-1")
    assert missing.status_code == 404
    assert message(missing) == "The camera kept no picture of 03-1 captured by Ben."


@pytest.mark.parametrize(
    "query, words",
    [("card=03-1", "player"), ("player=Aki", "card"), ("player=Aki&card=13-1", "13-1")],
)
def test_crop_bad_queries(client, query, words):
    response = client.get(f"/live/crop?{query}")
    assert response.status_code == 400 and words in message(response)


def test_camera_routes_refuse_post_with_405(client):
    token = csrf(client)
    for url in ("/live", "/live/frame.jpg", "/live/status", "/live/crop"):
        assert client.post(url, data={"csrf_token": token}).status_code == 405


# ---------------------------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------------------------


def test_calibration_page_draws_the_zones_over_a_snapshot(client, fake):
    page = client.get("/calibrate").get_data(as_text=True)
    assert 'src="/live/frame.jpg?plain=1"' in page
    for zone in fake.zones:
        assert f'<polygon class="zone z-{zone.kind}" data-zone="{zone.name}"' in page
        assert f'name="zone_{zone.name}"' in page
        assert page.count(f'class="handle z-{zone.kind}" data-zone="{zone.name}"') == len(
            zone.polygon
        )
    assert "/static/calibrate.js" in page


def test_calibration_saves_the_dragged_corners_as_toml(client, fake):
    token = csrf(client)
    corners = "0.1000,0.2500 0.9000,0.2600 0.8800,0.7000 0.1200,0.6900"
    response = client.post("/calibrate", data={"csrf_token": token, "zone_field": corners})
    assert response.status_code == 303 and response.headers["Location"].endswith("saved=saved")
    saved = Zones.load(fake.zone_file)
    assert saved["field"].polygon == ((0.1, 0.25), (0.9, 0.26), (0.88, 0.7), (0.12, 0.69))
    assert saved["captures_A"] == default_zones(2)["captures_A"]  # the others kept
    assert fake.zones == saved  # applied at once
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "The zones are saved" in page and "0.9000,0.2600" in page


def test_calibration_answers_json_to_a_script(client, fake):
    token = csrf(client)
    response = client.post(
        "/calibrate",
        data={"csrf_token": token, "zone_draw_pile": "0.8,0.4 0.95,0.4 0.9,0.6"},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 200
    body = response.get_json()
    assert body["saved"] is True
    assert body["zones"]["zones"]["draw_pile"]["polygon"] == [[0.8, 0.4], [0.95, 0.4], [0.9, 0.6]]


def test_calibration_reset_brings_back_the_default_layout(client, fake):
    token = csrf(client)
    client.post("/calibrate", data={"csrf_token": token, "zone_field": "0,0 1,0 1,1"})
    assert fake.zones != default_zones(2)
    response = client.post("/calibrate", data={"csrf_token": token, "reset": "1"})
    assert response.status_code == 303
    assert Zones.load(fake.zone_file) == default_zones(2) == fake.zones


@pytest.mark.parametrize(
    "fields, words",
    [
        ({}, "no zone corners"),
        ({"zone_field": "0.1,0.1 0.9,0.1"}, "Field needs at least 3 corners."),
        ({"zone_field": "0.1,0.1 0.9,0.1 1.2,0.5"}, "from 0 to 1"),
        ({"zone_field": "0.1,0.1 0.9,0.1 -0.1,0.5"}, "from 0 to 1"),
        ({"zone_field": "0.1,0.1 0.9,0.1 nan,0.5"}, "from 0 to 1"),
        ({"zone_field": "0.1,0.1 0.9,0.1 a,b"}, "two numbers"),
        ({"zone_field": "0.1,0.1,0.2 0.9,0.1 0.5,0.5"}, "two numbers"),
        ({"zone_captures_C": "0.1,0.1 0.9,0.1 0.5,0.5"}, "no zone 'captures_C'"),
        ({"zone_kitchen": "0.1,0.1 0.9,0.1 0.5,0.5"}, "no zone 'kitchen'"),
        # one good zone and one bad: nothing at all is saved
        (
            {"zone_field": "0.2,0.2 0.8,0.2 0.5,0.6", "zone_draw_pile": "0.1,0.1"},
            "Draw pile needs at least 3 corners.",
        ),
    ],
)
def test_bad_calibration_is_400_and_saves_nothing(client, fake, fields, words):
    token = csrf(client)
    response = client.post("/calibrate", data={"csrf_token": token, **fields})
    assert response.status_code == 400
    text = message(response)
    assert words in text and text.endswith(".") and "\n" not in text
    assert not fake.zone_file.exists()
    assert fake.zones == default_zones(2)


def test_calibration_needs_the_csrf_token(client, fake):
    client.get("/")
    response = client.post("/calibrate", data={"zone_field": "0,0 1,0 1,1"})
    assert response.status_code == 400 and "expired" in message(response)
    assert not fake.zone_file.exists()


def test_calibration_follows_the_join_code_and_read_only_rules(store, tmp_path):
    fake = FakeLive(tmp_path / "zones.toml")
    app = create_app(store, testing=True, live=fake, join_code="123456")
    client = app.test_client()
    token = csrf(client)
    page = client.get("/calibrate").get_data(as_text=True)
    assert 'id="zones-form"' not in page and "enter the join code" in page
    refused = client.post("/calibrate", data={"csrf_token": token, "reset": "1"})
    assert refused.status_code == 403 and not fake.zone_file.exists()
    client.post("/join", data={"csrf_token": token, "code": "123456"})
    assert client.post("/calibrate", data={"csrf_token": token, "reset": "1"}).status_code == 303
    assert fake.zone_file.exists()

    read_only = create_app(store, testing=True, live=fake, read_only=True).test_client()
    token = csrf(read_only)
    response = read_only.post("/calibrate", data={"csrf_token": token, "zone_field": "0,0 1,0 1,1"})
    assert response.status_code == 403
    assert Zones.load(fake.zone_file) == default_zones(2)


def test_camera_pictures_need_the_join_code_on_a_lan_server(store, tmp_path):
    fake = FakeLive(tmp_path / "zones.toml")
    app = create_app(store, testing=True, live=fake, join_code="123456")
    client = app.test_client()
    token = csrf(client)
    pictures = ["/live/frame.jpg", "/live/frame.jpg?plain=1", "/live/stream.mjpg?max_seconds=0.1"]
    for url in pictures:
        refused = client.get(url)
        assert refused.status_code == 403 and "join code" in message(refused), url
    assert client.get("/live/status").status_code == 200  # the state is not a picture
    client.post("/join", data={"csrf_token": token, "code": "123456"})
    response = client.get("/live/frame.jpg")
    assert response.status_code == 200 and response.data[:2] == b"\xff\xd8"


# ---------------------------------------------------------------------------------------------
# The event endpoint knows capture_checked
# ---------------------------------------------------------------------------------------------


def test_capture_checked_needs_a_player_and_a_card(client, store):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    store.append(match_id, {"type": "round_started"})
    token = csrf(client)
    base = {"csrf_token": token, "expected_seq": store.last_seq(match_id), "type": "capture_checked"}
    for missing, words in [("player", "which player"), ("card", "missing the card")]:
        data = {**base, "player": "Aki", "card": "03-1", "request_id": uuid.uuid4().hex}
        del data[missing]
        response = client.post(f"/matches/{match_id}/events", data=data, headers=HX)
        assert response.status_code == 400 and words in message(response)
    assert store.last_seq(match_id) == base["expected_seq"]


@pytest.fixture
def flagged(store):
    """A round where the camera read Aki's 03-1 with doubt (its next guesses 03-3, 03-4)."""
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    store.append(match_id, {"type": "round_started"})
    store.append(
        match_id,
        {
            "type": "card_captured",
            "player": "Aki",
            "card": "03-1",
            "source": "camera",
            "confidence": 0.41,
            "check": True,
            "alternatives": ["03-3", "03-4"],
        },
    )
    store.append(match_id, {"type": "card_captured", "player": "Ben", "card": "08-1"})
    return match_id


def post_event(client, store, match_id, **fields):
    data = {
        "csrf_token": csrf(client),
        "expected_seq": store.last_seq(match_id),
        "request_id": uuid.uuid4().hex,
        **fields,
    }
    return client.post(f"/matches/{match_id}/events", data=data, headers=HX)


def checks_panel(page: str) -> str:
    found = re.search(r'<details class="checks".*?</details>', page, re.S)
    return found.group(0) if found else ""


def test_a_doubtful_capture_asks_check_this_card_with_the_camera_crop(client, store, flagged):
    panel = checks_panel(client.get(f"/matches/{flagged}").get_data(as_text=True))
    assert "Check this card" in panel and "Aki captured" in panel
    assert 'src="/live/crop?player=Aki&amp;card=03-1"' in panel
    assert 'name="type" value="capture_checked"' in panel
    # the camera's other guesses are one tap each; any other card is two taps via the picker
    assert re.findall(r'class="btn check-alt" data-code="([^"]+)"', panel) == ["03-3", "03-4"]
    assert f"/matches/{flagged}/picker?player=Aki&amp;card=03-1" in panel
    assert 'data-card="08-1"' not in panel  # a confident read asks nothing
    # a guess someone already holds is not offered
    store.append(flagged, {"type": "card_captured", "player": "Ben", "card": "03-4"})
    panel = checks_panel(client.get(f"/matches/{flagged}").get_data(as_text=True))
    assert re.findall(r'class="btn check-alt" data-code="([^"]+)"', panel) == ["03-3"]
    # the htmx board fragment carries it too
    fragment = client.get(f"/matches/{flagged}/board", headers=HX).get_data(as_text=True)
    assert checks_panel(fragment) != ""


def test_one_tap_confirms_a_flagged_capture(client, store, flagged):
    response = post_event(client, store, flagged, type="capture_checked", player="Aki", card="03-1")
    assert response.status_code == 200
    assert checks_panel(response.get_data(as_text=True)) == ""
    state = store.state(flagged)
    assert state.checks == [] and [c.code for c in state.captures["Aki"]] == ["03-1"]
    log = client.get(f"/matches/{flagged}").get_data(as_text=True)
    assert "Aki: Camp Curtain (03-1) checked, right as read" in log
    assert store.events(flagged)[-1].event.type == "capture_checked"
    # a card with no open check cannot be "checked"
    again = post_event(client, store, flagged, type="capture_checked", player="Ben", card="08-1")
    assert again.status_code == 400 and "no open check" in message(again)


def test_one_tap_on_an_alternative_corrects_a_flagged_capture(client, store, flagged):
    response = post_event(
        client, store, flagged, type="capture_corrected", player="Aki", card="03-1", new_card="03-4"
    )
    assert response.status_code == 200
    assert checks_panel(response.get_data(as_text=True)) == ""
    state = store.state(flagged)
    assert state.checks == [] and [c.code for c in state.captures["Aki"]] == ["03-4"]


def test_check_panel_without_a_camera_shows_no_crop(bare, store, flagged):
    panel = checks_panel(bare.get(f"/matches/{flagged}").get_data(as_text=True))
    assert "Check this card" in panel and "/live/crop" not in panel


def test_read_only_pages_show_the_check_without_buttons(store, flagged, fake):
    client = create_app(store, testing=True, live=fake, read_only=True).test_client()
    panel = checks_panel(client.get(f"/matches/{flagged}").get_data(as_text=True))
    assert "Check this card" in panel and "capture_checked" not in panel


# ---------------------------------------------------------------------------------------------
# Zones proposed from the dealt field (the session's optional field_boxes())
# ---------------------------------------------------------------------------------------------


class DealtCamera(FakeLive):
    boxes: list = []

    def field_boxes(self):
        return self.boxes


def test_calibration_proposes_zones_from_the_dealt_field(store, tmp_path):
    from companion.live.layout import zones_from_field

    camera = DealtCamera(tmp_path / "zones.toml")
    camera.boxes = [(0.2 + 0.08 * i, 0.4 + 0.14 * j, 0.25 + 0.08 * i, 0.52 + 0.14 * j)
                    for i in range(4) for j in range(2)]
    client = create_app(store, testing=True, live=camera).test_client()
    assert 'id="propose-zones"' in client.get("/calibrate").get_data(as_text=True)
    page = client.get("/calibrate?propose=1").get_data(as_text=True)
    proposed = zones_from_field(camera.boxes)
    assert "Zones proposed from the dealt field" in page
    field_text = " ".join(f"{x:.4f},{y:.4f}" for x, y in proposed["field"].polygon)
    assert f'name="zone_field" value="{field_text}"' in page
    assert not camera.zone_file.exists()  # shown, not saved
    # Saving the page's form stores the proposal.
    fields = dict(re.findall(r'name="(zone_\w+)" value="([^"]+)"', page))
    response = client.post("/calibrate", data={"csrf_token": csrf(client), **fields})
    assert response.status_code == 303
    saved = Zones.load(camera.zone_file)
    assert [z.polygon for z in saved] == [proposed[z.name].polygon for z in saved]

    camera.boxes = camera.boxes[:2]
    page = client.get("/calibrate?propose=1").get_data(as_text=True)
    assert "sees 2 face-up cards" in page and "Zones proposed" not in page


def test_a_camera_that_cannot_propose_offers_no_button(client):
    assert 'id="propose-zones"' not in client.get("/calibrate").get_data(as_text=True)
    page = client.get("/calibrate?propose=1").get_data(as_text=True)
    assert "cannot propose zones" in page


# ---------------------------------------------------------------------------------------------
# The pages over the real LiveSession (companion/live/session.py)
# ---------------------------------------------------------------------------------------------


class FieldDetector:
    """Sees the same eight dealt cards in every frame."""

    def __init__(self, width, height):
        from companion.detections import Detections, class_id

        codes = ["01-1", "02-3", "03-3", "05-1", "06-2", "08-3", "09-4", "11-2"]
        quads = []
        for i in range(len(codes)):
            cx, cy = width * (0.3 + 0.12 * (i % 4)), height * (0.42 if i < 4 else 0.58)
            w, h = width * 0.05, height * 0.12
            quads.append([[cx - w, cy - h], [cx + w, cy - h], [cx + w, cy + h], [cx - w, cy + h]])
        self.detections = Detections(
            quads=np.array(quads, np.float32),
            class_ids=np.array([class_id(c) for c in codes], np.int64),
            confidence=np.full(len(codes), 0.95, np.float32),
            alt_ids=np.zeros((len(codes), 0), np.int64),
            alt_scores=np.zeros((len(codes), 0), np.float32),
        )

    def detect(self, bgr):
        return self.detections


def test_the_camera_pages_over_a_real_live_session(store, tmp_path):
    from companion.live.session import LiveSession
    from companion.live.sources import open_source

    width, height = 320, 180
    folder = tmp_path / "frames"
    folder.mkdir()
    # a cloth with a weave: an even picture is a covered lens, which the pipeline does not read
    weave = np.random.default_rng(0).integers(0, 40, (height // 4, width // 4), np.uint8)
    cloth = np.kron(weave, np.ones((4, 4), np.uint8))
    for i in range(3):
        image = np.full((height, width, 3), (30, 100 + 20 * i, 30), np.uint8)
        image[..., 1] += cloth
        cv2.imwrite(str(folder / f"{i:03d}.png"), image)
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    session = LiveSession(
        open_source(str(folder)),
        FieldDetector(width, height),
        store,
        zones_path=tmp_path / "zones.toml",
        match_id=match_id,
        realtime=False,
    )
    client = create_app(store, testing=True, live=session).test_client()
    assert client.get("/live/frame.jpg").status_code == 503  # no frame yet
    while session.step():
        pass
    status = client.get("/live/status").get_json()
    assert status["frames"] == 3 and status["match_id"] == match_id
    assert status["camera"] in ("live", "ended") and status["message"]
    for url in ("/live/frame.jpg", "/live/frame.jpg?plain=1"):
        response = client.get(url)
        assert response.status_code == 200 and response.mimetype == "image/jpeg"
        image = cv2.imdecode(np.frombuffer(response.data, np.uint8), cv2.IMREAD_COLOR)
        assert image.shape == (height, width, 3)
    annotated = cv2.imdecode(
        np.frombuffer(client.get("/live/frame.jpg").data, np.uint8), cv2.IMREAD_COLOR
    )
    plain = cv2.imdecode(
        np.frombuffer(client.get("/live/frame.jpg?plain=1").data, np.uint8), cv2.IMREAD_COLOR
    )
    assert np.abs(annotated.astype(int) - plain.astype(int)).max() > 100  # outlines drawn
    page = client.get("/live").get_data(as_text=True)
    assert f'href="/matches/{match_id}"' in page

    corners = "0.1000,0.3000 0.9000,0.3000 0.9000,0.7000 0.1000,0.7000"
    response = client.post("/calibrate", data={"csrf_token": csrf(client), "zone_field": corners})
    assert response.status_code == 303
    assert session.zones["field"].polygon[0] == (0.1, 0.3)
    assert Zones.load(tmp_path / "zones.toml") == session.zones
    missing = client.get("/live/crop?player=Aki&card=01-1")
    assert missing.status_code == 404

    # The picture carries the outlines only: the page names the cards, in its language.
    named = client.get("/live/cards?lang=fr").get_json()
    assert named["frame"] == 3 and len(named["cards"]) == 8
    assert named["cards"][0]["name"] == "Grue et soleil" and named["cards"][0]["sure"]
    quad = np.array(named["cards"][0]["quad"])
    assert quad.shape == (4, 2) and 0 < quad.min() and quad.max() < 1
    assert sorted(z["label"] for z in named["zones"]) == ["Pioche", "Prises A", "Prises B", "Tapis"]
    assert "01-1" not in json.dumps(named) and "0.95" not in json.dumps(named)


def test_the_cards_in_view_need_a_camera_and_the_join_code(store, tmp_path, bare):
    assert bare.get("/live/cards").status_code == 404
    fake = FakeLive(tmp_path / "zones.toml")
    client = create_app(store, testing=True, live=fake, join_code="123456").test_client()
    token = csrf(client)
    assert client.get("/live/cards").status_code == 403
    client.post("/join", data={"csrf_token": token, "code": "123456"})
    answer = client.get("/live/cards").get_json()  # a camera that names nothing: no cards
    assert answer["cards"] == [] and len(answer["zones"]) == 4


def test_no_deal_button_while_the_camera_deals(client, fake, store):
    """A working camera that follows the match opens each round from the deal: the board
    says so and keeps dealing by hand folded away; a lost camera gives the button back."""
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    fake.match_id = match_id
    board = client.get(f"/matches/{match_id}").get_data(as_text=True)
    assert "The camera opens round 1 when the cards are dealt." in board
    before_details = board.split('<details class="deal-by-hand">', 1)[0]
    assert "Deal round 1" not in before_details and "Deal round 1" in board  # folded away
    fake.camera = "lost"
    board = client.get(f"/matches/{match_id}").get_data(as_text=True)
    assert "The camera opens" not in board and "deal-by-hand" not in board
    assert "Deal round 1" in board
    fake.camera, fake.match_id = "live", match_id + 1  # the camera follows another match
    board = client.get(f"/matches/{match_id}").get_data(as_text=True)
    assert "The camera opens" not in board and "Deal round 1" in board


def test_a_camera_that_cannot_change_its_deck_offers_no_choice(client):
    page = client.get("/live?lang=en").get_data(as_text=True)
    assert 'id="camera-deck"' not in page
    token = re.search(r'"X-CSRF-Token": "([^"]+)"', page).group(1)
    answer = client.post("/live/deck?lang=en", data={"csrf_token": token, "deck": ""})
    assert answer.status_code == 404
    assert "reads with the deck it was started with" in answer.get_data(as_text=True)

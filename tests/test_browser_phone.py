"""A phone's browser as the camera, in headless Chromium: its camera is a fake fed from a
simulated table video (Chromium plays an MJPEG file as its camera), the page is opened in
https after joining with the code, and the round it films is scored exactly by the real
pipeline from the pictures it posts."""

from __future__ import annotations

import time

import cv2
import pytest
from browser_support import Page, close_browser, open_browser, shot  # noqa: E402 - skips as it does
from test_browser_camera import console_problems

from companion import CompanionError
from companion.game.engine import apply
from companion.store import MatchStore
from companion.web import create_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

from selenium.webdriver.common.by import By  # noqa: E402

JOIN_CODE = "2718281828"
FAKE_CAMERA_FPS = 30  # Chromium plays an MJPEG file as a camera at 30 frames a second


def mjpeg_from_video(video, out, tail_seconds: float = 3.0) -> int:
    """The video as an MJPEG file Chromium plays as its camera, at the video's pace (each frame
    repeated to make 30 a second), its last frame held ``tail_seconds`` more (the camera then
    plays it again from the start). Returns the frames written."""
    capture = cv2.VideoCapture(str(video))
    fps = capture.get(cv2.CAP_PROP_FPS) or 10.0
    repeat = max(1, round(FAKE_CAMERA_FPS / fps))
    written, last = 0, None
    with open(out, "wb") as mjpeg:
        while True:
            ok, image = capture.read()
            if not ok:
                break
            ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])
            last = data.tobytes()
            mjpeg.write(last * repeat)
            written += repeat
        if last is not None:
            held = int(tail_seconds * FAKE_CAMERA_FPS)
            mjpeg.write(last * held)
            written += held
    capture.release()
    return written


def captures_when_round_ended(store, match_id, number: int):
    """(captures per player as the round ended, its points), or None while it goes on."""
    state = None
    for stored in store.events(match_id):
        before, state = state, apply(state, stored.event)
        if before is not None and len(state.rounds) > len(before.rounds):
            result = state.rounds[-1]
            if result.number == number:
                captures = {p: sorted(c.code for c in cs) for p, cs in before.captures.items()}
                return captures, dict(result.points)
    return None


@pytest.fixture
def simulated_round(tmp_path):
    from companion.bench.replay import load_truth
    from companion.simulator.rounds import SimConfig, simulate

    try:
        simulate("traditional-scan", 7, tmp_path / "sim", SimConfig(max_turns=4))
    except CompanionError as exc:  # no shared decks on this machine
        pytest.skip(str(exc))
    return tmp_path / "sim" / "table.mp4", load_truth(tmp_path / "sim" / "truth.json")


def test_a_phone_films_a_round_through_its_page_to_the_exact_score(
    tmp_path, serve_app, simulated_round
):
    from companion.bench.replay import _match_setup
    from companion.live.session import LiveSession
    from companion.live.sources import PushedFrameSource
    from companion.live.zones import Zones
    from companion.recognizer import Recognizer
    from companion.web import tls

    video, truth = simulated_round
    camera_file = tmp_path / "camera.mjpeg"
    assert mjpeg_from_video(video, camera_file) > 0
    store = MatchStore.open(tmp_path / "phone.db")
    setup = _match_setup(truth)
    match_id = store.create_match(
        players=setup["players"], rules=setup["rules"], rounds=setup["rounds"], oya=setup["oya"]
    )
    source = PushedFrameSource()
    session = LiveSession(
        source,
        Recognizer.load(threads=2),
        store,
        zones=Zones.from_dict(truth["zones"]),
        zones_path=tmp_path / "zones.toml",
    )
    app = create_app(store, live=session, join_code=JOIN_CODE)
    cert, key = tls.write_certificate(tmp_path / "tls", tls.certificate_names([]))
    app.config["TLS_FILES"] = (cert, key)
    served = serve_app(app)
    base = f"https://127.0.0.1:{served.port}"
    browser = open_browser(
        [
            "--ignore-certificate-errors",  # the server's own certificate, as a player accepts it
            "--use-fake-ui-for-media-stream",  # "allow the camera", answered yes
            "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-video-capture={camera_file}",
        ]
    )
    session.start()
    try:
        page = Page(browser)
        # The QR code's address: the join page with the code filled in, then the phone's page.
        browser.get(f"{base}/join?code={JOIN_CODE}&next=/phone")
        page.click(".join-form button[type=submit]")
        page.wait.until(lambda d: d.find_elements(By.ID, "phone-start"))
        assert browser.execute_script("return window.isSecureContext") is True
        page.click("#phone-start")
        page.wait.until(
            lambda d: int(d.find_element(By.ID, "phone-camera").get_attribute("data-sent") or 0) > 0
        )
        # What it sends, with the zones over it.
        drawn = browser.find_elements(By.CSS_SELECTOR, "#phone-zones polygon")
        assert sorted(z.get_attribute("data-zone") for z in drawn) == sorted(
            truth["zones"]["zones"]
        )
        assert not browser.find_element(By.ID, "phone-start").is_displayed()
        # The screen is kept awake (the Wake Lock API, which Chromium has).
        page.wait.until(
            lambda d: "the screen stays on" in d.find_element(By.ID, "phone-figures").text
        )
        size = browser.execute_script(
            "var c = document.getElementById('phone-canvas'); return [c.width, c.height];"
        )
        assert size == [truth["width"], truth["height"]]
        seconds = truth["frames"] / truth["fps"]
        deadline = time.monotonic() + seconds + 60
        number = truth["rounds"][0]["round"]
        ended = None
        while ended is None and time.monotonic() < deadline:
            time.sleep(1.0)
            ended = captures_when_round_ended(store, match_id, number)
        shot(browser, "60-phone-camera")
        sent = int(browser.find_element(By.ID, "phone-camera").get_attribute("data-sent"))
        assert ended is not None, (
            f"the round did not end ({sent} pictures sent, {source.received} received)"
        )
        captures, points = ended
        expected = {p: sorted(c) for p, c in truth["rounds"][0]["captures"].items()}
        assert captures == expected
        assert points == truth["rounds"][0]["points"]
        assert source.received >= sent - 1 and sent >= 0.5 * seconds * 10  # about 10 a second
        assert console_problems(browser) == []
    finally:
        session.stop()
        close_browser(browser)

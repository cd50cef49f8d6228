"""Running a match from the command line: ``companion run``'s players, rounds and Oya, what
the page and the terminal say about a camera that sends nothing, and OpenCV kept quiet."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from companion.cli import main
from companion.detections import Detections
from companion.live.session import NO_PICTURE_AFTER, LiveSession
from companion.live.sources import FrameSource, LiveSource
from companion.store import MatchStore

ROOT = Path(__file__).resolve().parents[1]
THREE_SEATS = ROOT / "calibration" / "default-3p.toml"


class NoCards:
    """A detector that sees an empty table (the run's plumbing is under test, not vision)."""

    def detect(self, image):
        return Detections.empty()


@pytest.fixture
def run_here(tmp_path, monkeypatch):
    """``companion run`` on a folder of two images and a fresh database, without a model;
    the server answers /live/status once, then stops. Returns (invoke, db, answers)."""
    import companion.cli.live as live_cli

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # the calibrated zones' home
    monkeypatch.setattr(live_cli, "live_detector", lambda *args, **kwargs: NoCards())
    images = tmp_path / "frames"
    images.mkdir()
    for i in range(2):
        cv2.imwrite(str(images / f"{i:03d}.png"), np.full((90, 160, 3), 40 * i, np.uint8))
    db = tmp_path / "run.db"
    answers = []

    from companion.web import serving

    real_serve = serving.serve

    def serve_once(app, host, port, *, ready=None, **kwargs):
        def on_ready(server):
            ready(server)

            def ask_and_stop():
                url = f"http://127.0.0.1:{server.server_port}/live/status"
                with urllib.request.urlopen(url, timeout=20) as reply:
                    answers.append(json.loads(reply.read()))
                server.shutdown()

            threading.Thread(target=ask_and_stop, daemon=True).start()

        real_serve(app, host, 0, ready=on_ready, **kwargs)

    monkeypatch.setattr(serving, "serve", serve_once)

    def invoke(*args):
        return CliRunner().invoke(main, ["run", "--images", str(images), "--db", str(db), *args])

    return invoke, db, answers


def _started(db):
    with MatchStore.open(db) as store:
        (info,) = store.matches()
        first = store.events(info.id)[0].event.to_dict()
        return info, first


def test_run_starts_the_match_named_on_the_command_line(run_here):
    invoke, db, answers = run_here
    result = invoke("--players", "Aki, Ben ,Chloé", "--rules", "hana-awase", "--rounds", "6",
                    "--oya", "Ben")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Started match 1 (hana-awase, 6 rounds, players Aki, Ben, Chloé; Ben is Oya)." in (
        result.output
    )
    info, first = _started(db)
    assert info.players == ["Aki", "Ben", "Chloé"]
    assert (first["rounds"], first["oya"]) == (6, "Ben")
    # three names and no zone file: the three-seat layout is watched
    assert answers and set(answers[0]) == {
        "camera", "source", "fps", "frames", "match_id", "message", "proposal",
    }  # fmt: skip


def test_run_defaults_are_the_layouts_seats_and_the_presets_rounds(run_here):
    from companion.game.rules import RuleSet
    from companion.web import event_log

    invoke, db, _ = run_here
    result = invoke()
    assert result.exit_code == 0, result.output
    rounds = RuleSet.load("livret").default_rounds
    assert f"Started match 1 (livret, {rounds} rounds, players A, B; A is Oya)." in result.output
    assert "None" not in result.output
    with MatchStore.open(db) as store:
        history = " ".join(str(line) for line in _history(event_log, store))
    assert f"{rounds} rounds, A is Oya" in history and "None" not in history


def _history(event_log, store):
    from companion.web import create_app

    app = create_app(store, testing=True)
    with app.test_request_context("/"):
        return [line.text for line in event_log.log_lines(store.events(1))]


def test_run_with_a_three_seat_layout_names_its_seats(run_here):
    invoke, db, _ = run_here
    result = invoke("--zones", str(THREE_SEATS), "--rules", "hana-awase")
    assert result.exit_code == 0, result.output
    info, first = _started(db)
    assert info.players == ["A", "B", "C"] and first["rounds"] == 12 and first["oya"] == "A"


@pytest.mark.parametrize(
    "args,words",
    [
        (["--players", "Aki,Ben", "--oya", "Zed"], "'Zed' is not one of the players"),
        (["--players", "Aki,Ben", "--rounds", "5"], "plays 6 or 12 rounds, not 5"),
        (["--players", "Aki,Ben", "--zones", str(THREE_SEATS)], "has 3 seats"),
        (["--players", "Aki"], "two or three names"),
        (["--players", "Aki,,Ben"], "two or three names"),
        (["--players", "Aki,Ben,Chloé"], "played by 2 players, not 3"),  # livret, 3 seats
    ],
)
def test_run_refuses_bad_players_rounds_and_oya_in_one_sentence(run_here, args, words):
    invoke, db, answers = run_here
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert words in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert answers == []  # nothing was served
    with MatchStore.open(db) as store:
        assert store.matches() == []


def test_a_resumed_match_says_the_flags_are_for_a_new_one(run_here):
    invoke, db, _ = run_here
    with MatchStore.open(db) as store:
        store.create_match(["Aki", "Ben"], rules="livret", rounds=6)
    result = invoke("--players", "Cho,Dai,Eri")  # a new match's players, not this one's
    assert result.exit_code == 0, result.output
    assert "Resuming match 1" in result.output and "apply to a new match" in result.output
    with MatchStore.open(db) as store:
        assert len(store.matches()) == 1


# -- a camera that sends nothing ------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Unplugged:
    """A capture that never opens (no such camera), or opens and sends nothing."""

    def __init__(self, world):
        self.world = world

    def isOpened(self):
        return self.world["plugged"]

    def read(self):
        if self.world["plugged"]:
            return True, np.zeros((8, 8, 3), np.uint8)
        return False, None

    def release(self):
        pass


def _session(target, clock, world, lines, store=None):
    source = LiveSource(target, opener=lambda t: Unplugged(world), clock=clock)
    store = store or MatchStore.open(":memory:")
    return LiveSession(source, NoCards(), store, clock=clock, log=lines.append), store


@pytest.mark.parametrize(
    "target,source,check",
    [(0, "camera 0", "plugged in"), ("rtsp://cam.invalid/live", "stream rtsp://", "address")],
)
def test_after_five_seconds_without_a_picture_the_page_says_which_source_and_what_to_check(
    target, source, check
):
    from companion.web import create_app

    clock, world, lines = Clock(), {"plugged": False}, []
    session, store = _session(target, clock, world, lines)
    client = create_app(store, live=session, testing=True).test_client()
    opens = []
    while clock.now < NO_PICTURE_AFTER - 0.1:
        session.step()
        opens.append(session.source.failures)
        clock.now += 0.05
    early = client.get("/live/status").get_json()
    assert "No picture" not in early["message"] and early["camera"] == "connecting"
    clock.now += 0.2
    session.step()
    said = client.get("/live/status").get_json()
    assert said["message"].startswith(f"No picture from {source}") and check in said["message"]
    assert said["message"].count(".") <= 2 and said["message"].endswith("still trying.")
    assert set(said) == set(early)  # /live/status keeps its keys
    # ... while the pipeline keeps retrying (with backoff, not at every read)
    for _ in range(100):
        clock.now += 0.1
        session.step()
    assert 2 <= session.source.failures - opens[-1] <= 4  # every 5 s at most
    # the live view and the match page's camera link show it
    assert said["message"].split(":")[0] in client.get("/live").get_data(as_text=True)
    world["plugged"] = True
    while session.source.state != "live":
        clock.now += 0.1
        session.step()
    assert "No picture" not in client.get("/live/status").get_json()["message"]


def test_the_terminal_gets_one_line_per_state_change():
    clock, world, lines = Clock(), {"plugged": False}, []
    session, _ = _session(0, clock, world, lines)

    def run(seconds):
        end = clock.now + seconds
        while clock.now < end:
            session.step()
            clock.now += 0.05

    run(8)  # absent: connecting, then the sentence once
    world["plugged"] = True
    run(6)  # live again within 5 s (the retries back off)
    world["plugged"] = False
    run(2)  # lost
    run(6)  # ... and absent again
    world["plugged"] = True
    run(6)
    assert lines == [
        "Camera 0: connecting.",
        session.absent_sentence(),
        "Camera 0: live.",
        "Camera 0: lost; keep score by hand, it reconnects by itself.",
        session.absent_sentence(),
        "Camera 0: live.",
    ]
    assert lines[1] == (
        "No picture from camera 0 for 5 s: check that it is plugged in and that no other "
        "program is using it; still trying."
    )


def test_a_recording_ending_is_one_line_and_never_absent():
    class Two(FrameSource):
        finite = True

        def __init__(self):
            self.left, self.state = 2, "live"

        def read(self):
            if not self.left:
                self.state = "ended"
                return None
            self.left -= 1
            from companion.live.sources import Frame

            return Frame(np.zeros((8, 8, 3), np.uint8), 2 - self.left, 0.1)

        def describe(self):
            return "video two.mp4 (10 fps)"

    clock, lines = Clock(), []
    session = LiveSession(Two(), NoCards(), MatchStore.open(":memory:"), clock=clock,
                          log=lines.append)  # fmt: skip
    for _ in range(200):
        session.step()
        clock.now += 0.1
    assert lines == [
        "Video two.mp4 (10 fps): live.",
        "Video two.mp4 (10 fps): the recording has ended.",
    ]
    assert not session.absent() and session.status()["absent"] is None


def test_an_absent_camera_and_a_refused_stream_print_nothing_from_opencv(tmp_path):
    """The terminal shows our lines only: OpenCV's warnings and FFmpeg's errors are silenced."""
    code = (
        "from companion.live.sources import open_source\n"
        "for spec in ('camera:7', 'rtsp://127.0.0.1:9/none', 'http://127.0.0.1:9/x.mjpg'):\n"
        "    source = open_source(spec)\n"
        "    for _ in range(2):\n"
        "        source._retry_at = 0\n"
        "        assert source.read() is None\n"
        "    assert source.failures == 2, spec\n"
        "print('done')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert done.stderr == ""


# -- the camera demo -------------------------------------------------------------------------


def test_the_camera_demo_without_card_images_says_so_in_one_sentence(tmp_path, monkeypatch):
    from companion.demo import CameraDemo, load_script, start_match
    from companion.web import create_app

    monkeypatch.setenv("COMPANION_SHARED", str(tmp_path / "nothing-here"))
    result = CliRunner().invoke(main, ["demo", "--camera", "--port", "0"])
    assert result.exit_code == 2, result.output
    assert "../shared/decks" in result.output and "without --camera" in result.output
    assert len(result.output.strip().splitlines()) == 1
    # the scripted demo's link to it says the same, and the scripted demo goes on
    store = MatchStore.open(":memory:")
    app = create_app(store, testing=True)
    app.config["DEMO_CAMERA"] = CameraDemo(app, store).start
    scripted = start_match(store, load_script())
    client = app.test_client()
    page = client.get(f"/matches/{scripted}").get_data(as_text=True)
    assert 'href="/demo/camera"' in page and "Watch the camera keep score" in page
    reply = client.get("/demo/camera")
    assert reply.status_code == 503 and "../shared/decks" in reply.get_data(as_text=True)
    assert [m.id for m in store.matches()] == [scripted]
    # a server that is no demo has no such page
    assert create_app(store, testing=True).test_client().get("/demo/camera").status_code == 404


@pytest.mark.slow
def test_the_camera_demo_plays_a_round_through_the_real_pipeline(tmp_path):
    """The demo page's link starts a short simulated round, filmed as it is played; the real
    pipeline (recognizer, tracker, decider, engine) scores it; the page shows the live view
    beside the tally."""
    import time

    from companion import CompanionError
    from companion.demo import CAMERA_PLAYERS, CameraDemo, SimulatedTable, camera_deck_dir
    from companion.web import create_app

    try:
        deck = camera_deck_dir()
    except CompanionError as exc:
        pytest.skip(str(exc))
    store = MatchStore.open(tmp_path / "demo.db")
    app = create_app(store, testing=True)
    source = SimulatedTable(deck, rounds=1, turns=2)
    lines = []
    demo = CameraDemo(app, store, realtime=False, source=source, echo=lines.append)
    app.config["DEMO_CAMERA"] = demo.start
    client = app.test_client()
    reply = client.get("/demo/camera")
    assert reply.status_code == 303
    match_id = demo.match_id
    assert reply.headers["Location"].endswith(f"/matches/{match_id}")
    try:
        deadline = time.monotonic() + 900
        while source.state != "ended" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert source.state == "ended"
        page = client.get(f"/matches/{match_id}").get_data(as_text=True)
        assert 'class="with-live"' in page and 'id="live-view"' in page and 'id="board"' in page
        assert "Watch the camera keep score" not in page  # it is this page
        frame = client.get("/live/frame.jpg")
        assert frame.status_code == 200 and frame.mimetype == "image/jpeg"
    finally:
        demo.stop()
    (plan,) = source.plans
    truth = plan.rounds[0].captures
    assert sum(len(c) for c in truth.values()) >= 2
    state = store.state(match_id)
    assert state.rounds, "the round was never closed"
    seats = dict(zip(("A", "B"), CAMERA_PLAYERS, strict=True))
    events = [stored.event.to_dict() for stored in store.events(match_id)]
    captured = {
        player: sorted(
            e["card"] for e in events if e["type"] == "card_captured" and e["player"] == player
        )
        for player in CAMERA_PLAYERS
    }
    assert captured == {seats[seat]: sorted(codes) for seat, codes in truth.items()}
    assert lines[0].startswith("Simulated table") and lines[-1].endswith("has ended.")


# -- three players -------------------------------------------------------------------------


def _a_deck():
    from companion import CompanionError
    from companion.demo import camera_deck_dir

    try:
        return camera_deck_dir()
    except CompanionError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("seed", [1, 2])
def test_a_three_player_round_is_dealt_played_and_laid_in_its_seats(seed):
    from companion.game.engine import replay
    from companion.live.zones import default_zones
    from companion.simulator import plans, rounds

    plan = rounds.plan_match(seed, rounds.SimConfig(players=3, rules="hana-awase"))
    truth = rounds.truth_of(plan, "deck")
    assert truth["players"] == ["A", "B", "C"]
    assert truth["zones"] == default_zones(3).to_dict()
    state = replay([e["event"] for e in truth["events"]])
    assert [r["points"] for r in truth["rounds"]] == [r.points for r in state.rounds]
    (rnd,) = truth["rounds"]
    assert len(rnd["field"]) == 6  # 7 cards each, 6 on the field, 21 in the pile
    taken = [c for cs in rnd["captures"].values() for c in cs]
    assert len(taken) == len(set(taken)) == 48  # Hana-Awase: the pile is drawn to the end
    assert sum(rnd["points"].values()) == 264
    zones, view = default_zones(3), plan.view
    for player, cards in plan.rounds[0].captures.items():
        assert cards
        for code in cards:
            quad = view.to_frame(view.quad(plan.rounds[0].resting[code]))
            centre = quad.mean(axis=0)
            assert zones.zones_of(centre[None], view.w, view.h) == [f"captures_{player}"]
            assert quad[:, 0].min() >= 0 and quad[:, 0].max() <= view.w
            assert quad[:, 1].min() >= 0 and quad[:, 1].max() <= view.h
    # play goes round counter-clockwise: A, then C (top right), then B (top left)
    first = [e["event"]["player"] for e in truth["events"] if e["event"]["type"] == "card_captured"]
    assert set(first) == {"A", "B", "C"}
    assert plans._Planner(plan.config, seed)._order("C") == ("C", "B", "A")


def test_simulate_takes_two_or_three_players(tmp_path):
    deck = _a_deck()
    runner = CliRunner()
    common = ["simulate", "--deck", deck, "--width", "320", "--height", "180", "--quiet"]
    out = tmp_path / "three"
    result = runner.invoke(main, [*common, "--players", "3", "--rules", "hana-awase",
                                  "--max-turns", "2", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    truth = json.loads((out / "truth.json").read_text())
    assert truth["players"] == ["A", "B", "C"] and truth["zones"]["players"] == ["A", "B", "C"]
    assert (out / "table.mp4").stat().st_size > 0
    refused = runner.invoke(main, [*common, "--players", "3", "--out", str(tmp_path / "x")])
    assert refused.exit_code == 2 and "played by 2 players, not 3" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
    assert (
        runner.invoke(main, [*common, "--players", "4", "--out", str(tmp_path / "y")]).exit_code
        == 2
    )


@pytest.mark.slow
def test_a_short_three_player_clip_is_replayed_to_its_exact_score(tmp_path):
    from companion.bench.replay import load_truth, replay_video
    from companion.live.zones import default_zones
    from companion.recognizer import Recognizer
    from companion.simulator import rounds

    config = rounds.SimConfig(players=3, rules="hana-awase", max_turns=4)
    rounds.simulate(_a_deck(), 7, tmp_path, config)
    truth = load_truth(tmp_path / "truth.json")
    detector = Recognizer.load(threads=2)
    report = replay_video(tmp_path / "table.mp4", detector, truth=truth)
    assert report.rounds_total == 1
    for player, codes in truth["rounds"][0]["captures"].items():
        assert codes and sorted(report.rounds[0].captures[player]) == sorted(codes)
    assert report.rounds_exact == 1
    # without the truth file, the three-seat layout alone: Hana-Awase at three seats
    untold = replay_video(tmp_path / "table.mp4", detector, zones=default_zones(3))
    assert untold.rounds[0].captures == report.rounds[0].captures


def test_a_source_whose_first_open_blocks_is_said_absent_on_the_page():
    import time

    clock, lines, opened = Clock(), [], threading.Event()
    release = threading.Event()

    def blocking_opener(target):
        opened.set()
        release.wait(30)  # a stream that does not answer
        return Unplugged({"plugged": False})

    source = LiveSource("rtsp://cam.invalid/live", opener=blocking_opener, clock=clock)
    session = LiveSession(source, NoCards(), MatchStore.open(":memory:"), clock=clock,
                          log=lines.append)  # fmt: skip
    session.start()
    try:
        assert opened.wait(10)
        assert not session.absent()
        clock.now += NO_PICTURE_AFTER
        assert session.absent() and session.status()["message"] == session.absent_sentence()
    finally:
        release.set()
        session.stop()
    deadline = time.monotonic() + 10
    while session.absent_sentence() not in lines and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session.absent_sentence() in lines

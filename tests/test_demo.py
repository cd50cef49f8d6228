"""The built-in demo: its script plays through the engine, and ``run_demo`` serves it."""

from __future__ import annotations

import html
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from companion import CompanionError
from companion.demo import DEMO_SCRIPT, load_script, play_script, run_demo
from companion.store import MatchStore


@pytest.fixture
def played():
    with MatchStore.open(":memory:") as store:
        match_id = play_script(store)  # pace 0: instantly
        yield store, match_id


def test_script_is_plain_json_with_what_the_demo_promises():
    data = json.loads(DEMO_SCRIPT.read_text(encoding="utf-8"))
    types = [e["type"] for e in data["events"]]
    assert data["match"]["rules"] == "livret" and len(data["match"]["players"]) == 2
    for needed in ("capture_corrected", "koi_called", "stop_called", "undo", "cards_ran_out"):
        assert needed in types
    assert types.count("round_started") >= 2
    script = load_script()
    assert len(script.steps) == len(types) and all("say" not in s.event for s in script.steps)


def test_demo_plays_to_the_expected_state(played):
    store, match_id = played
    state = store.state(match_id)
    info = store.get_match(match_id)
    assert info.title == "Demo: Aki vs Ben" and info.last_seq == 1 + len(load_script().steps)

    # The misread card was corrected: the stored log keeps both the mistake and the fix...
    events = [s.event for s in store.events(match_id)]
    fix = next(e for e in events if e.type == "capture_corrected")
    assert (fix.player, fix.card, fix.new_card) == ("Ben", "10-2", "10-1")
    # ...and the fix mattered: the Deer completed Ben's Ino-Shika-Cho, so his Koi was legal.
    first = state.rounds[0]
    assert first.koi == {"Aki": 0, "Ben": 1}
    assert first.winner == "Aki" and first.kind == "stop"
    assert [y.id for y in first.yaku] == ["sanko"]
    assert first.points == {"Aki": 12, "Ben": -12}  # Sankō 6 x (1 + Ben's Koi)

    second, third = state.rounds[1], state.rounds[2]
    assert second.winner == "Ben" and second.points["Ben"] == 3
    assert third.winner is None and third.kind == "draw"
    assert state.round_in_progress and state.round_number == 4 and not state.finished
    assert state.totals == {"Aki": 9, "Ben": -9}
    assert state.captures == {"Aki": [], "Ben": []}


def test_play_script_can_stop_early():
    stop = threading.Event()
    seen = []

    def on_step(step, stored):
        seen.append(stored.seq)
        if len(seen) == 3:
            stop.set()

    with MatchStore.open(":memory:") as store:
        match_id = play_script(store, pace=0.001, stop=stop, on_step=on_step)
        assert store.last_seq(match_id) == 4  # match_started + 3 steps


def test_malformed_scripts(tmp_path):
    missing = tmp_path / "none.json"
    with pytest.raises(CompanionError, match="Cannot read"):
        load_script(missing)
    bad = tmp_path / "bad.json"
    for text in ("{not json", '{"events": []}', '{"match": {"players": ["A", "B"]}, "events": 3}'):
        bad.write_text(text)
        with pytest.raises(CompanionError, match="malformed"):
            load_script(bad)


def test_run_demo_serves_the_match(tmp_path):
    """The whole command minus the terminal: fresh database, server, scripted player."""
    lines, servers = [], []
    started = threading.Event()

    def ready(server):
        servers.append(server)
        started.set()

    db = tmp_path / "demo.db"
    thread = threading.Thread(
        target=run_demo,
        kwargs={"pace": 0.0, "port": 0, "db": db, "echo": lines.append, "ready": ready},
        daemon=True,
    )
    thread.start()
    assert started.wait(20), lines
    try:
        url = next(line.split("open ", 1)[1] for line in lines if "open http://" in line)
        assert url.startswith("http://127.0.0.1:") and url.endswith("/matches/1")
        with urllib.request.urlopen(url, timeout=10) as reply:
            assert reply.status == 200
            assert "Aki" in reply.read().decode("utf-8")
        # The story is told on the page, not only in the terminal; at its end the match
        # can be kept (exported).
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any("match is done" in ln for ln in lines):
            time.sleep(0.1)
        with urllib.request.urlopen(url, timeout=10) as reply:
            page = reply.read().decode("utf-8")
        said = [ln.split("] ", 1)[1] for ln in lines if "] " in ln]
        assert said and html.escape(said[-1], quote=False) in page
        assert 'class="story panel"' in page and "/matches/1/export" in page
    finally:
        servers[0].shutdown()
        thread.join(20)
    assert not thread.is_alive()
    with MatchStore.open(db) as store:  # --db keeps the demo
        assert store.get_match(1).title == "Demo: Aki vs Ben"


@pytest.mark.parametrize("same_process", [False, True])
def test_bench_live_measures_every_follower(same_process):
    from companion.bench.live_tally import percentile, run_live_bench

    result = run_live_bench(
        clients=3, events=6, interval=0.05, timeout=60, same_process=same_process
    )
    assert (result.clients, result.events) == (3, 6)
    assert result.samples == 18 and result.missed == 0
    assert 0 < result.p50_ms <= result.p99_ms <= result.max_ms
    assert result.notify_p50_ms <= result.p50_ms  # the board fetch comes after the message
    assert {"p50_ms", "p99_ms", "clients", "events"} <= set(result.to_dict())
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5 and percentile([], 99) == 0.0


def test_bench_live_after_a_long_match_with_pages_probed():
    """The board comes in each update (no request of its own), after a whole match played by
    hand, while a prober asks for the match page; the way before (each follower asking for the
    board) is still measured with board_in_event=False."""
    from companion.bench.live_tally import run_live_bench

    result = run_live_bench(
        clients=3, events=4, interval=0.3, timeout=60, long_match=True, probe_pages=True
    )
    assert result.board_in_event and result.history > 500
    assert result.samples == 12 and result.missed == 0
    assert result.page_requests >= 1 and result.page_failed == 0
    assert 0 < result.page_p50_ms <= result.page_max_ms
    fetched = run_live_bench(clients=2, events=2, interval=0.05, timeout=60, board_in_event=False)
    assert not fetched.board_in_event and fetched.samples == 4
    assert fetched.notify_p50_ms <= fetched.p50_ms


def test_bench_live_refuses_silly_sizes():
    from companion.bench.live_tally import run_live_bench

    with pytest.raises(CompanionError, match="clients"):
        run_live_bench(clients=0)
    with pytest.raises(CompanionError, match="events"):
        run_live_bench(events=10**6)


def test_demo_command_end_to_end(tmp_path):
    """`companion demo` as a newcomer runs it: prints the URL, serves, stops cleanly on
    SIGTERM and removes its temporary database."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "companion.cli", "demo", "--port", "0", "--pace", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if "open http://" in line or not line:
                break
        url = re.search(r"http://\S+", "".join(lines)).group(0)
        assert re.search(r"companion-demo-\w+", "".join(lines + [proc.stdout.readline()]))
        with urllib.request.urlopen(url, timeout=20) as reply:
            assert reply.status == 200
        assert list(tmp_path.glob("companion-demo-*/demo.db"))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert not list(tmp_path.glob("companion-demo-*"))  # the temporary database is gone


# -- the narration in the page's language; the camera demo's rounds score --------------------


@pytest.mark.parametrize(
    "lang, last",
    [
        ("fr", "Manche 4 : à vous. Ajoutez des prises"),
        ("ja", "第4回：あなたの番です。"),
        ("en", "Round 4: your turn. Add captures"),
    ],
)
def test_the_scripted_demos_story_is_told_in_the_pages_language(lang, last):
    from companion.web import create_app

    with MatchStore.open(":memory:") as store:
        script = load_script()
        match_id = play_script(store, script)
        app = create_app(store, testing=True)
        app.config["NARRATION"] = {
            match_id: {k + 2: step.say for k, step in enumerate(script.steps) if step.say}
        }
        page = app.test_client().get(f"/matches/{match_id}?lang={lang}").get_data(as_text=True)
    assert 'class="story panel"' in page
    assert html.escape(last, quote=False) in page
    if lang != "en":  # no English left in the story
        assert "your turn" not in page and "Undo the last event" not in page


def test_the_camera_demo_tells_what_the_camera_read_in_the_pages_language():
    from companion.demo import CameraDemo
    from companion.web import create_app

    with MatchStore.open(":memory:") as store:
        app = create_app(store, testing=True)
        demo = CameraDemo(app, store)
        match_id = store.create_match(players=["Aki", "Ben"], rules="livret", oya="Aki")
        demo.match_id = match_id  # as start() does, without a camera
        app.config["NARRATION"] = {match_id: demo.narrate}
        app.config["NARRATION_GOES_ON"] = {match_id}
        field = ["01-3", "02-1", "04-2", "06-1", "07-3", "08-2", "10-2", "12-4"]
        for event in (
            {"type": "round_started", "field": field},
            {"type": "card_captured", "player": "Aki", "card": "01-1", "source": "camera"},
            {"type": "card_captured", "player": "Aki", "card": "01-3", "source": "camera"},
            {"type": "card_captured", "player": "Aki", "card": "03-1", "source": "camera"},
            {"type": "card_captured", "player": "Aki", "card": "03-2", "source": "camera"},
            {"type": "card_captured", "player": "Aki", "card": "08-1", "source": "camera"},
            {"type": "card_captured", "player": "Aki", "card": "08-2", "source": "camera"},
        ):
            store.append(match_id, event)
        assert store.state(match_id).pending_decision == "Aki"  # Sanko
        store.append(match_id, {"type": "koi_called", "player": "Aki", "source": "camera"})
        client = app.test_client()
        page = client.get(f"/matches/{match_id}?lang=ja").get_data(as_text=True)
        assert "Akiの役の後も場が続きました：こいこい（卓から読み取り）。" in page
        assert "カメラが見ました：Akiが" in page
        for card in ("12-1", "12-2"):  # the Phoenix: four brights, a better yaku
            store.append(
                match_id,
                {"type": "card_captured", "player": "Aki", "card": card, "source": "camera"},
            )
        store.append(match_id, {"type": "stop_called", "player": "Aki", "source": "camera"})
        page = client.get(f"/matches/{match_id}?lang=fr").get_data(as_text=True)
        assert "Les cartes d’Aki ont été ramassées : Stop, lu sur la table." in page
        assert "Manche 1 : Aki" in page  # the round's end, and why, in French
        assert "The demo is over" not in page and "La démo est finie" not in page


def test_the_camera_demos_first_rounds_make_yaku_read_koi_and_stop_and_score_in_a_minute():
    from companion.demo import CAMERA_ROUNDS, scoring_plan

    plans, oya = [], None
    for seed in CAMERA_ROUNDS:
        plan = scoring_plan(seed, oya, search=False)
        plans.append(plan)
        oya = plan.next_oya
    kinds = [[(e["event"]["type"], e["frame"]) for e in p.events] for p in plans]
    for plan, events in zip(plans, kinds, strict=True):
        types = [t for t, _ in events]
        assert "stop_called" in types and "redeal" not in types and "hand_declared" not in types
        assert any(r.points and max(r.points.values()) > 0 for r in plan.rounds)
    first_stop = next(f for t, f in kinds[0] if t == "stop_called")
    assert first_stop / plans[0].config.fps <= 45  # the totals move within the first minute
    assert any(t == "koi_called" for events in kinds[:2] for t, _ in events)
    # each round is dealt by the one the live match says deals it: the previous winner
    for before, after in zip(plans, plans[1:], strict=False):
        dealt = next(e["event"]["oya"] for e in after.events if e["event"]["type"] == "round_started")
        assert dealt == before.next_oya
    # later rounds: the next seeds that end with a Stop in the first minute
    later = scoring_plan(max(CAMERA_ROUNDS) + 1, oya)
    stop = next(e["frame"] for e in later.events if e["event"]["type"] == "stop_called")
    assert stop / later.config.fps <= 60


def test_make_demo_says_how_to_reach_the_companion_command():
    """After `make demo`, `companion` is in .venv/bin, not on the PATH: the demo says how to
    reach it, and so does the README."""
    import shutil

    root = Path(__file__).resolve().parents[1]
    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    dry = subprocess.run(
        ["make", "-n", "demo"], cwd=root, capture_output=True, text=True, timeout=60
    ).stdout
    said = [line for line in dry.splitlines() if line.startswith("echo")]
    assert said and ". .venv/bin/activate" in said[0] and ".venv/bin/companion" in said[0]
    readme = (root / "README.md").read_text(encoding="utf-8")
    make_demo = readme.index("make demo")
    assert ". .venv/bin/activate" in readme[make_demo : make_demo + 1200]


@pytest.mark.slow
def test_the_camera_demos_first_round_is_scored_from_the_table_within_a_minute(tmp_path):
    """The first round of `demo --camera`, filmed as it is played and read by the real
    pipeline with no tap: a yaku made, the Stop read from the table, the totals moved before
    the first minute of video is over."""
    from companion.demo import CAMERA_PLAYERS, CameraDemo, SimulatedTable, camera_deck_dir
    from companion.web import create_app

    try:
        deck = camera_deck_dir()
    except CompanionError as exc:
        pytest.skip(str(exc))
    store = MatchStore.open(tmp_path / "demo.db")
    app = create_app(store, testing=True)
    source = SimulatedTable(deck, rounds=1)
    moved_at = []
    demo = CameraDemo(app, store, realtime=False, source=source, echo=lambda line: None)
    match_id = demo.start()
    try:
        deadline = time.monotonic() + 1500
        while source.state != "ended" and time.monotonic() < deadline:
            state = store.state(match_id)
            if not moved_at and any(state.totals.values()):
                moved_at.append(demo.session.pipeline.last_frame.time)
            time.sleep(0.2)
        assert source.state == "ended"
    finally:
        demo.stop()
    (plan,) = source.plans
    state = store.state(match_id)
    seats = dict(zip(("A", "B"), CAMERA_PLAYERS, strict=True))
    assert state.rounds and state.rounds[0].kind == "stop"
    assert state.rounds[0].points == {seats[s]: n for s, n in plan.rounds[0].points.items()}
    stops = [s.event for s in store.events(match_id) if s.event.type == "stop_called"]
    assert [e.source for e in stops] == ["camera"]
    assert moved_at and moved_at[0] <= 60.0
    story = demo.narrate()
    assert any(line.id == "demo.camera_stop" for line in story.values())

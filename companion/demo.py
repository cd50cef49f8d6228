"""``companion demo``: the tablet page on a built-in scripted match, no camera, no data needed.

The script (``data/demo-match.json``) is a plain JSON list of engine events with a short
``say`` line each (printed as it is played): a 2-player livret match with a misread card that
gets corrected, a Koi-Koi call, a Stop and rounds won. ``play_script`` appends it to a store at
a readable pace (instantly in tests); ``run_demo`` serves the page while a thread plays it.
"""

from __future__ import annotations

import json
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from companion import CompanionError
from companion.resources import package_path

DEMO_SCRIPT = package_path("data", "demo-match.json")
MAX_PACE = 600.0  # seconds between events: beyond ten minutes nobody is watching


@dataclass(frozen=True)
class DemoStep:
    event: dict  # an engine event as a dict (``Event.from_dict``)
    say: str = ""


@dataclass(frozen=True)
class DemoScript:
    title: str
    players: list[str]
    rules: str
    rounds: int
    options: dict
    oya: str
    steps: list[DemoStep]


def load_script(path: str | Path | None = None) -> DemoScript:
    """Read a demo script; a missing or malformed file is a CompanionError."""
    path = Path(path) if path else DEMO_SCRIPT
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        match = data["match"]
        steps = [
            DemoStep({k: v for k, v in item.items() if k != "say"}, item.get("say", ""))
            for item in data["events"]
        ]
        return DemoScript(
            title=match.get("title") or "Demo match",
            players=list(match["players"]),
            rules=match.get("rules", "livret"),
            rounds=int(match.get("rounds", 6)),
            options=dict(match.get("options", {})),
            oya=match.get("oya") or match["players"][0],
            steps=steps,
        )
    except OSError as exc:
        raise CompanionError(f"Cannot read the demo script {path}: {exc.strerror}.") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CompanionError(f"The demo script {path} is malformed ({exc}).") from None


def start_match(store, script: DemoScript) -> int:
    return store.create_match(
        players=script.players,
        rules=script.rules,
        rounds=script.rounds,
        options=script.options,
        oya=script.oya,
        title=script.title,
    )


def play_script(
    store,
    script: DemoScript | None = None,
    *,
    match_id: int | None = None,
    pace: float = 0.0,
    stop: threading.Event | None = None,
    on_step=None,
) -> int:
    """Append the script's events to ``match_id`` (a new match if None), ``pace`` seconds
    apart; returns the match id. ``stop`` ends it early; ``on_step(step, stored)`` after each."""
    script = script or load_script()
    stop = stop or threading.Event()
    if match_id is None:
        match_id = start_match(store, script)
    for step in script.steps:
        if pace > 0 and stop.wait(pace):
            break
        stored = store.append(match_id, step.event)
        if on_step is not None:
            on_step(step, stored)
    return match_id


def port_is_free(host: str, port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _stop_on_sigterm():
    """Let ``kill PID`` stop the demo like Ctrl+C does, so its temporary database is removed.
    Returns the previous handler (None when not in the main thread, where this is not possible)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


def run_demo(
    *,
    pace: float = 1.5,
    port: int = 5000,
    db: str | Path | None = None,
    host: str = "127.0.0.1",
    echo=print,
    ready=None,
) -> None:
    """Serve the tablet page on a fresh database while the scripted match is played into it.
    Runs until interrupted (or until ``ready``'s caller shuts the server down)."""
    from companion import web
    from companion.store import MatchStore

    if not 0 <= pace <= MAX_PACE:  # also refuses nan; inf would overflow Event.wait
        raise CompanionError(f"The pace must be a number of seconds from 0 to {MAX_PACE:g}.")
    script = load_script()
    tmp = None
    if db is None:
        tmp = tempfile.TemporaryDirectory(prefix="companion-demo-")
        db = Path(tmp.name) / "demo.db"
    if port and not port_is_free(host, port):
        echo(f"Port {port} is busy; using a free one instead.")
        port = 0
    store = MatchStore.open(db)
    match_id = start_match(store, script)
    app = web.create_app(store)
    # The story is told on the page too: each line shows once its event is on the board
    # (step k of the script is event k + 2, after match_started).
    app.config["NARRATION"] = {
        match_id: {k + 2: step.say for k, step in enumerate(script.steps) if step.say}
    }
    stop = threading.Event()

    def say(step, stored):
        if step.say:
            echo(f"  [{stored.seq:>3}] {step.say}")

    def player():
        # Give the newcomer a moment to open the page before the first capture.
        if not stop.wait(min(3.0, max(pace, 0.0) * 2)):
            try:
                play_script(store, script, match_id=match_id, pace=pace, stop=stop, on_step=say)
            except CompanionError as exc:  # pragma: no cover - a script the engine refuses
                echo(f"The demo script stopped: {exc}")
                return
            except Exception:  # pragma: no cover - the store closed under us at Ctrl+C
                if stop.is_set():
                    return
                raise
            if not stop.is_set():
                echo("The scripted match is done; the page stays up. Press Ctrl+C to stop.")

    def on_ready(server):
        url = f"http://{host}:{server.server_port}/matches/{match_id}"
        echo(f"Hanafuda Companion demo: open {url}")
        echo(f"(database {db}; one event every {pace:g} s; Ctrl+C to stop)")
        threading.Thread(target=player, name="demo-player", daemon=True).start()
        if ready is not None:
            ready(server)

    previous = _stop_on_sigterm()
    try:
        web.serve(app, host, port, ready=on_ready)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        stop.set()
        store.close()
        if tmp is not None:
            time.sleep(0.05)  # let the player thread see ``stop`` before its file goes
            tmp.cleanup()

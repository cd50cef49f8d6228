"""``companion demo``: the tablet page on a built-in scripted match, no camera, no data needed.

The script (``data/demo-match.json``) is a plain JSON list of engine events with a short
``say`` line each (printed as it is played): a 2-player livret match with a misread card that
gets corrected, a Koi-Koi call, a Stop and rounds won. ``play_script`` appends it to a store at
a readable pace (instantly in tests); ``run_demo`` serves the page while a thread plays it.

``companion demo --camera`` (and the scripted demo page's "Watch the camera keep score" link)
shows the camera keeping the score instead: simulated rounds where yaku are made and Koi and
Stop are read from the table, filmed as they are played
(``SimulatedTable``, the frames of ``companion simulate`` rendered one by one, no file) and read
by the real pipeline (recognizer, tracker, capture decider, engine) into a match of its own; its
page shows the live view beside the tally. The simulator films card images, which the package
does not ship (their art is not ours to give away): it takes them from ``../shared/decks`` beside
the checkout (or ``$COMPANION_SHARED/decks``); without them the demo says so in one sentence.
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
from companion.live.messages import Message
from companion.live.source_state import SourceState
from companion.resources import package_path

DEMO_SCRIPT = package_path("data", "demo-match.json")
MAX_PACE = 600.0  # seconds between events: beyond ten minutes nobody is watching
# The camera demo: livret rounds between these players, each played until a yaku is made and
# its maker stops, the Koi and the Stop read from the table (nobody taps in a demo). The first
# rounds are these seeds of the simulator, each dealt by the previous one's winner: a Stop at
# 33 s of video (the totals move within the first minute), then a Koi and a Stop, then a Koi
# and a Stop dealt by the other player. Later rounds: the next seeds whose round ends with a
# Stop within ``CAMERA_STOP_BY`` seconds.
CAMERA_PLAYERS = ("Aki", "Ben")
CAMERA_ROUNDS = (37, 84, 20)
CAMERA_STOP_BY = 60.0  # seconds of video
CAMERA_SEED = 1  # the short rounds of ``turns`` (tests), from this seed on
CAMERA_TURNS = 6
CAMERA_DECKS = ("traditional-ngs", "modern-mantia", "hwatu-korean")  # preferred first


@dataclass(frozen=True)
class DemoStep:
    event: dict  # an engine event as a dict (``Event.from_dict``)
    say: str = ""  # a Message (its English as a str) the page says in its language, or text


def narration(text: str) -> str:
    """A script's ``say``: the id of a sentence of the catalogs (``demo.*``, in
    ``companion/live/messages.py``) as that Message, said in the page's language; any other
    text as it is written."""
    from companion.messages import TEMPLATES

    return Message(text) if text in TEMPLATES else text


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
            DemoStep(
                {k: v for k, v in item.items() if k != "say"}, narration(item.get("say", ""))
            )
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
    camera: bool = False,
    detector=None,
) -> None:
    """Serve the tablet page on a fresh database while the scripted match is played into it
    (``camera``: while the camera demo plays simulated rounds through the real pipeline).
    Runs until interrupted (or until ``ready``'s caller shuts the server down)."""
    from companion.store import MatchStore
    from companion.web import create_app, serving

    if not 0 <= pace <= MAX_PACE:  # also refuses nan; inf would overflow Event.wait
        raise CompanionError(f"The pace must be a number of seconds from 0 to {MAX_PACE:g}.")
    if camera:
        camera_deck_dir()  # no card images to film: say so before anything starts
    script = load_script()
    tmp = None
    if db is None:
        tmp = tempfile.TemporaryDirectory(prefix="companion-demo-")
        db = Path(tmp.name) / "demo.db"
    if port and not port_is_free(host, port):
        echo(f"Port {port} is busy; using a free one instead.")
        port = 0
    store = MatchStore.open(db)
    app = create_app(store)
    camera_demo = CameraDemo(app, store, detector=detector, echo=echo)
    app.config["DEMO_CAMERA"] = camera_demo.start
    match_id = camera_demo.start() if camera else start_match(store, script)
    if not camera:
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
        if camera:
            return  # the camera plays its own rounds
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
        if camera:
            echo(f"(database {db}; the camera reads a simulated table; Ctrl+C to stop)")
        else:
            echo(f"(database {db}; one event every {pace:g} s; Ctrl+C to stop)")
        threading.Thread(target=player, name="demo-player", daemon=True).start()
        if ready is not None:
            ready(server)

    previous = _stop_on_sigterm()
    try:
        serving.serve(app, host, port, ready=on_ready)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        stop.set()
        camera_demo.stop()
        store.close()
        if tmp is not None:
            time.sleep(0.05)  # let the player thread see ``stop`` before its file goes
            tmp.cleanup()


# ---------------------------------------------------------------------------------------------
# The camera demo
# ---------------------------------------------------------------------------------------------

NO_DECKS = Message("camera.demo_no_decks")


def camera_deck_dir() -> str:
    """The deck folder the simulated camera films; CompanionError (``NO_DECKS``) without one."""
    from companion.simulator import synth

    try:
        dirs = synth.default_deck_dirs()
    except synth.SynthError:
        raise CompanionError(NO_DECKS) from None
    by_name = {Path(d).name: d for d in dirs}
    return next((by_name[n] for n in CAMERA_DECKS if n in by_name), dirs[0])


def demo_plan(seed: int, turns: int = CAMERA_TURNS, config=None):
    """The plan of a short round from ``seed`` on: the first whose first ``turns`` turns need no
    Koi/Stop answer (a demo has nobody to tap) and capture at least two cards."""
    from companion.simulator import rounds

    config = config or rounds.SimConfig(max_turns=turns, p_distractor=0.1)
    for candidate in range(seed, seed + 200):
        plan = rounds.plan_match(candidate, config)
        captured = sum(len(c) for r in plan.rounds for c in r.captures.values())
        declared = any(e["event"]["type"] == "hand_declared" for e in plan.events)
        redealt = any(e["event"]["type"] == "redeal" for e in plan.events)
        if not plan.decisions and captured >= 2 and not (declared or redealt):
            return plan
    raise CompanionError(f"No quiet demo round among seeds {seed} to {seed + 199}.")


def scoring_plan(seed: int, oya: str | None = None, *, search: bool = True, config=None):
    """The plan of a demo round dealt by ``oya`` (a seat): ``seed``'s, or with ``search`` the
    first from ``seed`` on that ends with a Stop within ``CAMERA_STOP_BY`` seconds of video (a
    yaku made, Koi and Stop read from the table) and needs nothing the camera cannot see (a
    redeal, a dealt-hand declaration)."""
    from dataclasses import replace

    from companion.simulator import rounds

    config = replace(config or rounds.SimConfig(p_distractor=0.1), oya=oya, max_turns=None)
    for candidate in range(seed, seed + (500 if search else 1)):
        plan = rounds.plan_match(candidate, config)
        if not search:
            return plan
        kinds = {e["event"]["type"]: e["frame"] for e in plan.events}
        if "redeal" in kinds or "hand_declared" in kinds or "stop_called" not in kinds:
            continue
        if kinds["stop_called"] <= CAMERA_STOP_BY * config.fps:
            return plan
    raise CompanionError(f"No demo round ending in a Stop among seeds {seed} to {seed + 499}.")


class SimulatedTable:
    """A frame source (``companion.live.sources.FrameSource``'s interface) filming simulated
    rounds as they are played: one plan after another (``rounds`` of them, None: for ever),
    each frame rendered when the pipeline asks for it, ``time`` = index / fps as for a video.
    The rounds are the demo's scoring rounds (``CAMERA_ROUNDS``, then ``scoring_plan``), each
    dealt by the previous one's winner; with ``turns``, short rounds of that many turns that
    need no Koi/Stop answer (``demo_plan``)."""

    finite = True  # played at its own pace, as a recording

    def __init__(self, deck_dir: str, *, seed: int = CAMERA_SEED, rounds: int | None = 1,
                 turns: int | None = None, config=None):  # fmt: skip
        self.deck_dir = deck_dir
        self.turns = turns
        self.config = config
        self.rounds_left = rounds
        self.plans: list = []
        self._seed = seed
        self._scripted = list(CAMERA_ROUNDS)
        self._frames = None
        self._index = 0
        self.fps = 10.0
        self.state = SourceState.LIVE
        self._next_plan()

    def _plan(self):
        if self.turns is not None:
            return demo_plan(self._seed, self.turns, self.config)
        oya = self.plans[-1].next_oya if self.plans else None
        if self._scripted:
            return scoring_plan(self._scripted.pop(0), oya, search=False, config=self.config)
        return scoring_plan(self._seed, oya, config=self.config)

    def _next_plan(self) -> bool:
        from companion.simulator import rounds

        if self.rounds_left is not None:
            if self.rounds_left <= 0:
                return False
            self.rounds_left -= 1
        plan = self._plan()
        self._seed = max(self._seed, plan.seed + 1)
        self.plans.append(plan)
        self.fps = float(plan.config.fps)
        self._frames = rounds.render_frames(plan, self.deck_dir)
        return True

    def read(self):
        from companion.live.sources import Frame

        while self.state != SourceState.ENDED:
            image = next(self._frames, None)
            if image is not None:
                frame = Frame(image, self._index, self._index / self.fps)
                self._index += 1
                return frame
            if not self._next_plan():
                self.state = SourceState.ENDED
        return None

    def __iter__(self):
        while self.state != SourceState.ENDED:
            frame = self.read()
            if frame is not None:
                yield frame

    def describe(self) -> str:
        return Message("source.simulated_table", deck=Path(self.deck_dir).name, fps=f"{self.fps:g}")

    def close(self) -> None:
        self.state = SourceState.ENDED


class CameraDemo:
    """Starts the camera demo in a running app, once: a match of its own, a ``LiveSession``
    over a ``SimulatedTable`` following it, the live view beside its tally. ``start()`` returns
    the match id (CompanionError, one sentence, when there are no card images)."""

    def __init__(self, app, store, *, detector=None, rounds: int | None = None, echo=print,
                 realtime: bool = True, source=None):  # fmt: skip
        self.app = app
        self.store = store
        self.detector = detector
        self.rounds = rounds
        self.echo = echo
        self.realtime = realtime
        self.source = source
        self.session = None
        self.match_id: int | None = None
        self._lock = threading.Lock()
        self.told: dict = {}  # seq -> what the page tells of that event
        self._told_seq = 0
        self._state = None
        self._telling = threading.Lock()

    def start(self) -> int:
        from companion.live.session import LiveSession
        from companion.live.zones import default_zones

        with self._lock:
            if self.match_id is not None:
                return self.match_id
            source = self.source or SimulatedTable(camera_deck_dir(), rounds=self.rounds)
            detector = self.detector
            if detector is None:
                from companion.recognizer import Recognizer

                detector = Recognizer.load(threads=2)
            match_id = self.store.create_match(
                players=list(CAMERA_PLAYERS),
                rules="livret",
                title="Demo: the camera keeps score",
            )
            self.session = LiveSession(
                source,
                detector,
                self.store,
                zones=default_zones(2),
                match_id=match_id,
                realtime=self.realtime,
                log=self.echo,
            )
            self.app.extensions["companion_live"] = self.session
            self.app.config["LIVE_BESIDE"] = match_id
            # what the camera reads is told on the page as it is recorded (asked by the page)
            self.app.config.setdefault("NARRATION", {})[match_id] = self.narrate
            self.app.config.setdefault("NARRATION_GOES_ON", set()).add(match_id)
            self.session.start()
            self.match_id = match_id
            return match_id

    def narrate(self) -> dict:
        """The story so far, seq -> Message, told from the events recorded: a deal read, each
        capture, a Koi or a Stop read from the table, a round's end and why."""
        with self._telling:
            self._tell()
            return dict(self.told)

    def _tell(self) -> None:
        from companion.game.engine import apply
        from companion.messages import CardCode

        for stored in self.store.events(self.match_id, after_seq=self._told_seq):
            self._told_seq = stored.seq
            before = self._state
            self._state = state = apply(before, stored.event)
            event = stored.event
            line = None
            if event.type == "round_started":
                line = Message("demo.camera_round", n=state.round_number)
            elif event.type == "card_captured":
                card = CardCode(event.card)
                line = Message("demo.camera_capture", player=event.player, card=card)
            elif event.type == "koi_called" and getattr(event, "source", None) == "camera":
                line = Message("demo.camera_koi", player=event.player)
            elif event.type == "stop_called" and getattr(event, "source", None) == "camera":
                line = Message("demo.camera_stop", player=event.player)
            if before is not None and len(state.rounds) > len(before.rounds):
                result = state.rounds[-1]
                if line is not None:
                    self.told[stored.seq] = line
                line = Message("demo.camera_round_end", n=result.number, reason=result.reason)
                self.told[stored.seq + 0.5] = line  # after what ended it, on the same event
                continue
            if line is not None:
                self.told[stored.seq] = line

    def stop(self) -> None:
        if self.session is not None:
            self.session.stop()

"""``companion bench-live``: how fast do followers of the live tally see a new event?

Starts the tablet app on a free 127.0.0.1 port (a thread of this process) over a temporary
database, opens N concurrent followers on the live endpoint (``GET /matches/<id>/live``,
Server-Sent Events; see ``companion.web``) in a child process of their own (as tablets, they
do not share the server's interpreter lock; ``same_process`` runs them as threads here), and
has a writer append events one by one through the app's store, as the app's own event
endpoint does (the store wakes the live streams; ``external_writer``: through a second
connection to the same database file, as when the CLI writes from another process). A follower, like the page, follows with ``?board=1``: each
update carries the board fragment, rendered once for all of them (``board_in_event=False``:
the way before, each follower fetching ``/matches/<id>/board`` as htmx asks for it when it
sees a new seq); one sample is the time from just before ``store.append`` to that follower
having the fragment (``fetch_board=False``: the live message alone, without a board).
``long_match``: the match first holds a whole match played by hand (about 600 events, the last
round under way), to show the figures do not grow with a match's length. ``probe_pages``: a
process of its own asks for the match page every ``PROBE_INTERVAL`` while the followers follow
(do the streams keep pages waiting?). Traffic goes to 127.0.0.1 only; everything is bounded in
count and time.
"""

from __future__ import annotations

import http.client
import logging
import math
import os
import queue
import re
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from companion import CompanionError
from companion.game.cards import ALL_CODES

BENCH_PLAYERS = ["Aki", "Ben"]
PROBE_INTERVAL = 0.25  # seconds between two page requests of the page prober
MAX_CLIENTS = 300
_SEQ = re.compile(rb'"seq": (\d+)')
_BOARD = b'<div id=\\"board\\"'  # the fragment's first element, as JSON writes it
HTMX_HEADERS = {"HX-Request": "true", "HX-Target": "board"}


@dataclass(frozen=True)
class LiveBenchResult:
    clients: int
    events: int
    samples: int  # (event, client) pairs seen
    missed: int  # pairs never seen before the deadline
    p50_ms: float
    p99_ms: float
    max_ms: float
    notify_p50_ms: float  # notification only (the SSE message), board fetch excluded
    notify_p99_ms: float
    interval_s: float
    fetch_board: bool
    external_writer: bool
    same_process: bool
    load_avg: float | None = None  # 1-minute load average at the end: figures need context
    board_in_event: bool = True  # the board came in the live message (no request of its own)
    history: int = 0  # events the match held before the first timed one
    page_requests: int = 0  # match pages asked for by the prober while the followers followed
    page_failed: int = 0  # of those, answered with an error or not within 10 s
    page_p50_ms: float | None = None
    page_p99_ms: float | None = None
    page_max_ms: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        what = (
            ("board in the event" if self.board_in_event else "board fetched")
            if self.fetch_board
            else "notified"
        )
        pages = (
            f"\nmatch page meanwhile: p50 {self.page_p50_ms:.1f} ms, p99 {self.page_p99_ms:.1f} ms,"
            f" max {self.page_max_ms:.1f} ms ({self.page_requests} requests,"
            f" {self.page_failed} failed)"
            if self.page_requests
            else ""
        )
        return (
            f"{self.clients} clients x {self.events} events"
            + (f" after {self.history}" if self.history else "")
            + f": append -> {what} "
            f"p50 {self.p50_ms:.1f} ms, p99 {self.p99_ms:.1f} ms, max {self.max_ms:.1f} ms "
            f"(notification alone p50 {self.notify_p50_ms:.1f} ms, p99 {self.notify_p99_ms:.1f} ms;"
            f" {self.samples} samples, {self.missed} missed"
            + (f"; load average {self.load_avg:.1f}" if self.load_avg is not None else "")
            + ")"
            + pages
        )


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def bench_events(count: int, taken=()) -> list[dict]:
    """``count`` events the engine accepts during a round: captures of distinct cards not
    ``taken`` yet, each undone by the next event, so no yaku ever interrupts the run."""
    codes = [code for code in ALL_CODES if code not in set(taken)]
    events = []
    for i in range(count):
        if i % 2 == 0:
            player = BENCH_PLAYERS[(i // 2) % 2]
            card = codes[(i // 2) % len(codes)]
            events.append({"type": "card_captured", "player": player, "card": card})
        else:
            events.append({"type": "undo"})
    return events


class _Follower(threading.Thread):
    """One live-tally follower: reads the SSE stream, fetches the board on each new seq."""

    def __init__(
        self, port, match_id, fetch_board, deadline, ready: threading.Barrier, board_in_event
    ):
        super().__init__(daemon=True)
        self.port, self.match_id, self.fetch_board = port, match_id, fetch_board
        self.board_in_event = fetch_board and board_in_event
        self.deadline, self.ready = deadline, ready
        self.notified: dict[int, float] = {}  # seq -> time the update arrived
        self.seen: dict[int, float] = {}  # seq -> time the board was fetched
        self.error: str | None = None
        self.highest = 0
        self.stopping = False
        self._connections: list[http.client.HTTPConnection] = []

    def stop(self) -> None:
        """Hang up (the server's stream thread then ends at its next write)."""
        self.stopping = True
        for connection in self._connections:
            connection.close()

    def run(self):
        try:
            self._follow()
        except Exception as exc:  # reported in the result, not raised in a thread
            if self.stopping:
                return
            self.error = f"{type(exc).__name__}: {exc}"
            try:
                self.ready.abort()
            except threading.BrokenBarrierError:
                pass

    def _follow(self):
        budget = max(1, int(self.deadline - time.monotonic()) + 1)
        stream = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        board = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        self._connections = [stream, board]
        pushed = "&board=1" if self.board_in_event else ""
        stream.request("GET", f"/matches/{self.match_id}/live?max_seconds={budget}{pushed}")
        response = stream.getresponse()
        if response.status != 200:
            raise CompanionError(f"the live endpoint answered {response.status}")
        first = True
        while time.monotonic() < self.deadline and not self.stopping:
            line = response.readline()
            if not line:
                break
            if not line.startswith(b"data:"):
                continue
            # The seq read off the line, the board only looked for: a tablet parses its own
            # message on its own processor, while these followers share one interpreter.
            found = _SEQ.search(line)
            if found is None:
                raise CompanionError("an update came without its seq")
            seq = int(found.group(1))
            arrived = time.monotonic()
            if first:  # the stream's opening message: now we are following
                first = False
                self.highest = seq
                self.ready.wait(timeout=30)
                continue
            if seq <= self.highest:
                continue
            if self.board_in_event:
                if _BOARD not in line:
                    raise CompanionError("an update came without its board")
            elif self.fetch_board:
                # As htmx asks for it: the fragment, not the full page.
                board.request("GET", f"/matches/{self.match_id}/board", headers=HTMX_HEADERS)
                reply = board.getresponse()
                reply.read()
                if reply.status != 200:
                    raise CompanionError(f"the board fragment answered {reply.status}")
            done = time.monotonic()
            # Several appends may fold into one message: each counts as seen now.
            for s in range(self.highest + 1, seq + 1):
                self.notified[s] = arrived
                self.seen[s] = done
            self.highest = seq
        stream.close()
        board.close()


class _FollowerGroup:
    """N followers in threads; ``ready()`` once all follow, ``finish(last)`` waits (bounded)
    until all have seen seq ``last`` and returns each one's (notified, seen, error)."""

    def __init__(self, port, match_id, clients, fetch_board, seconds, board_in_event=True):
        self.deadline = time.monotonic() + seconds
        self.barrier = threading.Barrier(clients + 1)
        self.followers = [
            _Follower(port, match_id, fetch_board, self.deadline, self.barrier, board_in_event)
            for _ in range(clients)
        ]
        for follower in self.followers:
            follower.start()

    def ready(self) -> str | None:
        """None once every follower is connected, else why not."""
        try:
            self.barrier.wait(timeout=60)
        except threading.BrokenBarrierError:
            errors = [f.error for f in self.followers if f.error]
            return errors[0] if errors else "timeout"
        return None

    def finish(self, last: int) -> list[tuple[dict, dict, str | None]]:
        while time.monotonic() < self.deadline and any(
            f.is_alive() and f.highest < last for f in self.followers
        ):
            time.sleep(0.02)
        results = [(dict(f.notified), dict(f.seen), f.error) for f in self.followers]
        for follower in self.followers:
            follower.stop()
        return results


def _followers_process(
    port, match_id, clients, fetch_board, seconds, to_child, to_parent, board_in_event=True
):
    """The followers' side when they run in their own process (like tablets on the LAN:
    they do not share the server's interpreter lock)."""
    group = _FollowerGroup(port, match_id, clients, fetch_board, seconds, board_in_event)
    problem = group.ready()
    to_parent.put(("error", problem) if problem else ("ready", None))
    if problem:
        return
    last = to_child.get(timeout=seconds)
    to_parent.put(("done", group.finish(last)))


def _page_prober(port, match_id, stop, to_parent, seconds):
    """Ask for the match page every ``PROBE_INTERVAL`` until ``stop`` is set (at most
    ``seconds``); report each request's time in ms, None for an error or no answer in 10 s."""
    timings: list[float | None] = []
    deadline = time.monotonic() + seconds
    while not stop.is_set() and time.monotonic() < deadline:
        started = time.monotonic()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            connection.request("GET", f"/matches/{match_id}")
            reply = connection.getresponse()
            reply.read()
            timings.append((time.monotonic() - started) * 1000 if reply.status == 200 else None)
        except (OSError, http.client.HTTPException):
            timings.append(None)
        finally:
            connection.close()
        stop.wait(max(0.0, PROBE_INTERVAL - (time.monotonic() - started)))
    to_parent.put(timings)


def run_live_bench(
    clients: int = 20,
    events: int = 50,
    *,
    interval: float = 0.5,
    fetch_board: bool = True,
    external_writer: bool = False,
    same_process: bool = False,
    timeout: float = 120.0,
    board_in_event: bool = True,
    long_match: bool = False,
    probe_pages: bool = False,
) -> LiveBenchResult:
    """Run the benchmark (see the module docstring) and return its figures.
    ``external_writer``: append through a store of its own on the same file, as another
    process (the CLI) does: the followers then notice within the live endpoint's check
    interval.
    ``same_process``: run the followers as threads of this process instead of a child
    process (their work then competes with the server's for Python's interpreter lock).
    ``board_in_event``, ``long_match``, ``probe_pages``: see the module docstring."""
    # Imported here, not at the top: the followers and the prober are processes started with
    # this module, and must be following before the first event.
    from companion.store import MatchStore
    from companion.web import create_app, serving

    if not 1 <= clients <= MAX_CLIENTS:
        raise CompanionError(f"The number of clients must be between 1 and {MAX_CLIENTS}.")
    if not 1 <= events <= 2000:
        raise CompanionError("The number of events must be between 1 and 2000.")
    if not (math.isfinite(interval) and 0 <= interval <= 60):
        raise CompanionError("The interval must be a number of seconds from 0 to 60.")
    # One request log line per board fetch would drown the figures.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    with tempfile.TemporaryDirectory(prefix="companion-bench-") as tmp:
        store = MatchStore.open(Path(tmp) / "bench.db")
        if long_match:
            from companion.bench.page import PLAYERS, long_match_events

            match_id = store.create_match(players=PLAYERS, rules="livret", rounds=12, oya="Aki")
            for event in long_match_events(12):
                store.append(match_id, event)
        else:
            match_id = store.create_match(players=BENCH_PLAYERS, rules="livret", oya="Aki")
            store.append(match_id, {"type": "round_started"})
        history = store.last_seq(match_id)
        state = store.state(match_id)
        taken = [card.code for cards in state.captures.values() for card in cards]
        players = list(state.players)
        app = create_app(store)
        writer = MatchStore.open(Path(tmp) / "bench.db") if external_writer else store
        bound = threading.Event()
        servers = []

        def on_ready(server):
            servers.append(server)
            bound.set()

        threading.Thread(
            target=serving.serve, args=(app, "127.0.0.1", 0), kwargs={"ready": on_ready}, daemon=True
        ).start()
        if not bound.wait(10):
            raise CompanionError("The benchmark server did not start within 10 seconds.")
        server = servers[0]
        port = server.server_port
        deadline = time.monotonic() + timeout
        appended: dict[int, float] = {}
        child = to_child = None
        prober = probe_stop = probe_out = None
        told_last = False
        page_timings: list[float | None] = []
        try:
            if same_process:
                group = _FollowerGroup(
                    port, match_id, clients, fetch_board, timeout, board_in_event
                )
                problem = group.ready()
            else:
                import multiprocessing

                # spawn, not fork: this process already runs the server's threads.
                context = multiprocessing.get_context("spawn")
                to_child, to_parent = context.Queue(), context.Queue()
                child = context.Process(
                    target=_followers_process,
                    args=(port, match_id, clients, fetch_board, timeout, to_child, to_parent),
                    kwargs={"board_in_event": board_in_event},
                    daemon=True,
                )
                child.start()
                kind, problem = to_parent.get(timeout=90)
            if problem:
                raise CompanionError(f"The followers could not connect ({problem}).")
            if probe_pages:
                import multiprocessing

                context = multiprocessing.get_context("spawn")
                probe_stop, probe_out = context.Event(), context.Queue()
                prober = context.Process(
                    target=_page_prober,
                    args=(port, match_id, probe_stop, probe_out, timeout),
                    daemon=True,
                )
                prober.start()
            for event in bench_events(events, taken):
                if "player" in event:  # the match's own players (a long match has its own)
                    event = {**event, "player": players[BENCH_PLAYERS.index(event["player"])]}
                if time.monotonic() > deadline:
                    break
                started = time.monotonic()  # system-wide clock: comparable across processes
                stored = writer.append(match_id, event)
                appended[stored.seq] = started
                if interval:
                    time.sleep(interval)
            last = max(appended) if appended else 0
            if prober is not None:
                probe_stop.set()
                page_timings = probe_out.get(timeout=30)
            if same_process:
                results = group.finish(last)
            else:
                to_child.put(last)
                told_last = True
                kind, results = to_parent.get(timeout=max(5.0, deadline - time.monotonic() + 5))
        except queue.Empty:
            raise CompanionError("The followers stopped answering; no figures.") from None
        finally:
            if prober is not None:
                probe_stop.set()
                prober.join(15)
                if prober.is_alive():  # pragma: no cover - bounded even if a request hangs
                    prober.terminate()
            if child is not None:
                if not told_last:
                    to_child.put(0)  # the writer failed: let the followers go at once
                child.join(5)
                if child.is_alive():  # pragma: no cover - bounded even if a follower hangs
                    child.terminate()
            server.shutdown()
            # The store is not closed here: a live stream's server thread may poll it until
            # its next write shows the client has gone; it goes with the last reference.

    seen, notified, missed = [], [], 0
    for notified_at, seen_at, _error in results:
        for seq, start in appended.items():
            if seq in seen_at:
                seen.append((seen_at[seq] - start) * 1000)
                notified.append((notified_at[seq] - start) * 1000)
            else:
                missed += 1
    if not seen:
        errors = [error for _, _, error in results if error]
        raise CompanionError(f"No follower saw any event ({errors[0] if errors else 'timeout'}).")
    pages = [t for t in page_timings if t is not None]
    return LiveBenchResult(
        clients=clients,
        events=len(appended),
        samples=len(seen),
        missed=missed,
        p50_ms=round(percentile(seen, 50), 2),
        p99_ms=round(percentile(seen, 99), 2),
        max_ms=round(max(seen), 2),
        notify_p50_ms=round(percentile(notified, 50), 2),
        notify_p99_ms=round(percentile(notified, 99), 2),
        interval_s=interval,
        fetch_board=fetch_board,
        external_writer=external_writer,
        same_process=same_process,
        load_avg=_load_average(),
        board_in_event=board_in_event and fetch_board,
        history=history,
        page_requests=len(page_timings),
        page_failed=len(page_timings) - len(pages),
        page_p50_ms=round(percentile(pages, 50), 2) if pages else None,
        page_p99_ms=round(percentile(pages, 99), 2) if pages else None,
        page_max_ms=round(max(pages), 2) if pages else None,
    )


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):  # pragma: no cover - not on every platform
        return None

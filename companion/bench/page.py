"""``companion bench-page``: does a long match cost more to serve than a new one?

Builds, in a temporary database, a new match (its first round just dealt) and a finished
12-round match of about 600 events (captures in pairs, Koi calls, misreads taken back), then
times through the app in this process (no network): the full match page, the board fragment
a live follower fetches (htmx), and recording one event. Each figure is the median of
``repeat`` requests; nothing is cached between the timed requests but what the app caches
for every request (the store's replay, the rendered board per seq).
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from companion import CompanionError
from companion.game import engine
from companion.game.cards import ALL_CODES
from companion.store import MatchStore
from companion.web import create_app

PLAYERS = ["Aki", "Ben"]
ENGINE_EVENTS = 3000


@dataclass(frozen=True)
class PageBenchResult:
    short_events: int
    long_events: int
    long_rounds: int
    page_short_ms: float
    page_long_ms: float
    board_short_ms: float
    board_long_ms: float
    event_short_ms: float
    event_long_ms: float
    repeat: int
    # the engine alone: a cold replay of a match of ``engine_events`` events (a long match
    # whose last round goes on with a misread card corrected back and forth), and what the
    # replayed state holds in memory, undo history included
    engine_events: int = 0
    engine_replay_ms: float = 0.0
    engine_state_mb: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        rows = [
            ("match page", self.page_short_ms, self.page_long_ms),
            ("board fragment (htmx)", self.board_short_ms, self.board_long_ms),
            ("record one event", self.event_short_ms, self.event_long_ms),
        ]
        lines = [
            f"{'median of ' + str(self.repeat):<24} {'new match':>12} {'long match':>12}",
            f"{'events in the log':<24} {self.short_events:>12} {self.long_events:>12}",
        ]
        lines += [f"{name:<24} {a:>9.2f} ms {b:>9.2f} ms" for name, a, b in rows]
        lines.append(
            f"engine: a cold replay of {self.engine_events} events takes "
            f"{self.engine_replay_ms:.0f} ms and its state holds {self.engine_state_mb:.1f} MB"
        )
        return "\n".join(lines)


def long_match_events(rounds: int = 12) -> list[dict]:
    """A whole match played by hand, event by event: each round deals, the players capture
    pairs of a month in turn (with now and then a misread card taken back with undo), call
    Koi-Koi on their first two yaku and stop on the third, or let the cards run out. The last round
    is left in progress, a few turns in."""
    state = engine.replay(
        [engine.MatchStarted.new(PLAYERS, "livret", rounds=rounds, oya=PLAYERS[0])]
    )
    events: list[dict] = []

    def play(event: dict) -> None:
        nonlocal state
        state = engine.apply(state, event)
        events.append(event)

    for number in range(rounds):
        play({"type": "round_started"})
        play({"type": "field_brights_set", "count": number % 3})
        codes = list(ALL_CODES[number % 4 * 4 :] + ALL_CODES[: number % 4 * 4])
        for turn, k in enumerate(range(0, 48, 2)):
            if not state.round_in_progress:
                break
            player = PLAYERS[turn % 2]
            if number == rounds - 1 and turn == 4:
                return events  # the last round goes on: the page shows a match being played
            if turn % 4 != 3:  # a misread card, taken back
                play({"type": "card_captured", "player": player, "card": codes[k + 1]})
                play({"type": "undo"})
            for code in codes[k : k + 2]:
                play({"type": "card_captured", "player": player, "card": code})
            pending = state.pending_decision
            if pending:
                calls = state.koi.get(pending, 0)
                play({"type": "stop_called" if calls >= 2 else "koi_called", "player": pending})
        if state.round_in_progress:
            if state.pending_decision:
                play({"type": "stop_called", "player": state.pending_decision})
            else:
                play({"type": "cards_ran_out"})
        if state.outcome is not None:
            break
    return events


def very_long_match_events(count: int = 3000, rounds: int = 12) -> list:
    """``count`` engine events: ``long_match_events`` (its last round going on), then one
    card captured and corrected back and forth: every event an effective one, kept in the log."""
    events = [engine.MatchStarted.new(PLAYERS, "livret", rounds=rounds, oya=PLAYERS[0])]
    events += [engine.Event.from_dict(e) for e in long_match_events(rounds)]
    state = engine.replay(events)
    taken = {c.code for cards in state.captures.values() for c in cards}
    first, second = [code for code in ALL_CODES if code not in taken][:2]
    events.append(engine.Event.from_dict({"type": "card_captured", "player": "Aki", "card": first}))
    while len(events) < count:
        card, new_card = (first, second) if len(events) % 2 else (second, first)
        events.append(
            engine.Event.from_dict(
                {"type": "capture_corrected", "player": "Aki", "card": card, "new_card": new_card}
            )
        )
    return events


def engine_cost(count: int = 3000) -> tuple[float, float]:
    """Milliseconds to replay ``very_long_match_events(count)`` cold, and the megabytes its
    final state keeps reachable (tracemalloc)."""
    import gc
    import tracemalloc


    events = very_long_match_events(count)
    gc.collect()
    started = time.perf_counter()
    engine.replay(events)
    elapsed = (time.perf_counter() - started) * 1000
    gc.collect()
    tracemalloc.start()
    try:
        state = engine.replay(events)
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del state
    return round(elapsed, 1), round(held / 1e6, 2)


def _median_ms(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def run_page_bench(repeat: int = 30, rounds: int = 12) -> PageBenchResult:
    if not 1 <= repeat <= 1000:
        raise CompanionError("--repeat must be between 1 and 1000.")
    with tempfile.TemporaryDirectory(prefix="companion-page-bench-") as tmp:
        store = MatchStore.open(Path(tmp) / "bench.db")
        short = store.create_match(players=PLAYERS, rules="livret", rounds=rounds, oya="Aki")
        store.append(short, {"type": "round_started"})
        long = store.create_match(players=PLAYERS, rules="livret", rounds=rounds, oya="Aki")
        for event in long_match_events(rounds):
            store.append(long, event)
        long_state = store.state(long)
        app = create_app(store, testing=True)
        client = app.test_client()
        page = client.get("/").get_data(as_text=True)
        token = page.split('"X-CSRF-Token": "', 1)[1].split('"', 1)[0]

        def get(url, headers=None):
            def call():
                response = client.get(url, headers=headers or {})
                if response.status_code != 200:
                    raise CompanionError(f"{url} answered {response.status_code}.")
            return call

        def record(match_id):
            # A card captured and taken back: two events, the match as it was (half of it is
            # reported: the cost of one event).
            def post(data):
                response = client.post(
                    f"/matches/{match_id}/events",
                    data={
                        "csrf_token": token,
                        "expected_seq": store.last_seq(match_id),
                        "request_id": uuid.uuid4().hex,
                        **data,
                    },
                    headers={"HX-Request": "true"},
                )
                if response.status_code != 200:
                    raise CompanionError(f"recording answered {response.status_code}.")

            state = store.state(match_id)
            taken = {c.code for cards in state.captures.values() for c in cards}
            free = next(code for code in ALL_CODES if code not in taken)

            def call():
                post({"type": "card_captured", "player": "Aki", "card": free})
                post({"type": "undo"})

            return call

        hx = {"HX-Request": "true"}
        figures = {}
        for name, match_id in (("short", short), ("long", long)):
            get(f"/matches/{match_id}")()  # warm: replay cached, templates compiled
            figures[f"page_{name}_ms"] = _median_ms(get(f"/matches/{match_id}"), repeat)
            # a fresh seq for each fetch would be the live case; the cache makes it moot
            figures[f"board_{name}_ms"] = _median_ms(
                get(f"/matches/{match_id}/board", hx), repeat
            )
        short_events = store.last_seq(short)
        long_events = store.last_seq(long)
        figures["event_short_ms"] = round(_median_ms(record(short), repeat) / 2, 2)
        figures["event_long_ms"] = round(_median_ms(record(long), repeat) / 2, 2)
        store.close()
    engine_replay_ms, engine_state_mb = engine_cost(ENGINE_EVENTS)
    return PageBenchResult(
        engine_events=ENGINE_EVENTS,
        engine_replay_ms=engine_replay_ms,
        engine_state_mb=engine_state_mb,
        short_events=short_events,
        long_events=long_events,
        long_rounds=long_state.round_number,
        repeat=repeat,
        **figures,
    )

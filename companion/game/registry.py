"""The games a match can be, and the only place a game is named. Each game gives the engine
that replays its log, the type of the event that starts a match of it, how a match of it is
started from its set-up and how it is listed; the store, the statistics, the summaries and the
web app look a game up here (the summaries and the web app keep their own maps keyed by the
game) instead of comparing its name. A new game adds its engine to this package and a ``Game``
below, then its summary and its page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from companion import CompanionError
from companion.game import engine as koikoi_engine
from companion.game import hanamikoji as hanamikoji_engine


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: a key of other maps
class Game:
    name: str  # as stored in a match's row and in an export
    title: str
    engine: ModuleType  # apply, replay, Event, IllegalEvent for this game's events
    start_event: str  # the type of the event that starts a match (once, first in its log)
    start: Callable  # start(players, **set_up) -> that event, checked as its engine checks it
    listing: Callable[..., dict]  # listing(started) -> players, rules, rounds, oya, options
    hanafuda: bool  # played with a Hanafuda rule set: counted in the players' statistics

    def __repr__(self) -> str:
        return f"<Game {self.name}>"


def _koikoi_start(players, rules: str = "livret", **set_up):
    # match_started carries the rule file's text, so that a replay never depends on what the
    # preset says later.
    return koikoi_engine.MatchStarted.new(players, rules, **set_up)


def _koikoi_listing(started) -> dict:
    return {
        "players": list(started.players),
        "rules": started.rules_name,
        "rounds": started.rounds_planned,
        "oya": started.next_oya,
        "options": dict(started.options),
    }


def _hanamikoji_start(players, first: str | None = None):
    return hanamikoji_engine.HanamikojiStarted(players=tuple(players), first=first or "A")


def _hanamikoji_listing(started) -> dict:
    return {
        "players": list(started.players),
        "rules": HANAMIKOJI.name,  # one rule set: the game's own
        "rounds": hanamikoji_engine.MAX_ROUNDS,
        "oya": started.names[started.first],
        "options": {},
    }


KOIKOI = Game(
    name="koikoi",
    title="Hanafuda (Koi-Koi, Hana-Awase and every rule set)",
    engine=koikoi_engine,
    start_event=koikoi_engine.MatchStarted.type,
    start=_koikoi_start,
    listing=_koikoi_listing,
    hanafuda=True,
)
HANAMIKOJI = Game(
    name="hanamikoji",
    title="Hanamikoji",
    engine=hanamikoji_engine,
    start_event=hanamikoji_engine.HanamikojiStarted.type,
    start=_hanamikoji_start,
    listing=_hanamikoji_listing,
    hanafuda=False,
)
GAMES: dict[str, Game] = {game.name: game for game in (KOIKOI, HANAMIKOJI)}
START_EVENTS = frozenset(game.start_event for game in GAMES.values())


def game(name: str | None) -> Game:
    """The game called ``name`` (None: a match stored before games had names, Koi-Koi)."""
    if name is None:
        return KOIKOI
    found = GAMES.get(name) if isinstance(name, str) else None
    if found is None:
        raise CompanionError(
            f"Unknown game {name!r}: this program keeps {', '.join(GAMES)} matches."
        )
    return found


def is_start(event_type: str) -> bool:
    """Whether an event of this type starts a match (of any game): recorded once, first."""
    return event_type in START_EVENTS

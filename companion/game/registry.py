"""The games a match can be. Each game names the module that replays its log, the one that
summarises it and its tablet page, so that the store, the statistics, the summaries and the
web app look a game up here instead of comparing its name."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from companion import CompanionError


@dataclass(frozen=True)
class Game:
    name: str  # as stored in a match's row and in an export
    title: str
    engine_module: str  # apply, replay, Event, IllegalEvent for this game's events
    summary_module: str  # build_summary(state, info, events)
    page_endpoint: str  # the tablet page of one match (a Flask endpoint taking match_id)
    hanafuda: bool  # played with a Hanafuda rule set: counted in the players' statistics

    @property
    def engine(self) -> ModuleType:
        return importlib.import_module(self.engine_module)

    @property
    def summary(self) -> ModuleType:
        return importlib.import_module(self.summary_module)


KOIKOI = Game(
    name="koikoi",
    title="Hanafuda (Koi-Koi, Hana-Awase and every rule set)",
    engine_module="companion.game.engine",
    summary_module="companion.summaries.koikoi",
    page_endpoint="match.page",
    hanafuda=True,
)
HANAMIKOJI = Game(
    name="hanamikoji",
    title="Hanamikoji",
    engine_module="companion.game.hanamikoji",
    summary_module="companion.summaries.hanamikoji",
    page_endpoint="hanamikoji.page",
    hanafuda=False,
)
GAMES: dict[str, Game] = {game.name: game for game in (KOIKOI, HANAMIKOJI)}


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

"""Each game's pages on the tablet: the web app's map keyed by the game (``game.registry``).

A game gives the page that shows one of its matches, whether the live stream's ``?board=1``
carries that page's board, and, for a game not started from a Hanafuda rule set, its entry in
the new-match form's list with that form's two handlers. The blueprints and the templates
(``match_url``, ``new_match_games``) look a game up here instead of comparing its name: a new
game adds its page module and its line in ``PAGES``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flask import url_for

from companion.game import registry
from companion.web import hanamikoji
from companion.web.pages import store


@dataclass(frozen=True)
class NewMatchForm:
    label: object  # its entry in the form's list of rules (a lazy translation)
    options: Callable  # options(values): its part of the form, in place of the rule options
    create: Callable  # create(form): start the match and go to its page


@dataclass(frozen=True)
class GamePages:
    page: str  # the Flask endpoint of one match's page (taking match_id)
    live_board: bool  # the live stream can carry its board (``match.shared_board``'s)
    new_match: NewMatchForm | None = None  # None: started from a rule set in the form


PAGES: dict[registry.Game, GamePages] = {
    registry.KOIKOI: GamePages(page="match.page", live_board=True),
    registry.HANAMIKOJI: GamePages(
        page="hanamikoji.page",
        live_board=False,
        new_match=NewMatchForm(
            hanamikoji.NEW_MATCH_LABEL, hanamikoji.new_match_options, hanamikoji.create
        ),
    ),
}


def pages(game_name: str | None) -> GamePages:
    """The pages of a game, by its stored name (``MatchInfo.game``, ``MatchStore.game``)."""
    return PAGES[registry.game(game_name)]


def of_match(match_id: int) -> GamePages:
    """The pages of a stored match's game (UnknownMatchError, a 404, for an unknown match)."""
    return pages(store().game(match_id))


def match_url(info) -> str:
    """The page of a listed match (a ``MatchInfo``)."""
    return url_for(pages(info.game).page, match_id=info.id)


def new_match_form(rules) -> NewMatchForm | None:
    """The own form of the game chosen in the new-match form's list of rules; None for a rule
    set (the form's own)."""
    game = registry.GAMES.get(rules) if isinstance(rules, str) else None
    return None if game is None else PAGES[game].new_match


def new_match_games() -> list[tuple[str, str]]:
    """The games with their own new-match form: (value, label) in the form's list of rules."""
    return [(game.name, str(p.new_match.label)) for game, p in PAGES.items() if p.new_match]

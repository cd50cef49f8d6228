"""Printable match summaries, one module per game (``koikoi``, ``hanamikoji``) and what they
share (``printable``: the HTML environment, the style sheet, the PDF writer). ``BUILDERS``
says which module summarises a game: a new game adds its module and its line there."""

from companion.game import registry
from companion.summaries import hanamikoji, koikoi

# game -> build_summary(state, info, events): the summary of a match of that game
BUILDERS = {
    registry.KOIKOI: koikoi.build_summary,
    registry.HANAMIKOJI: hanamikoji.build_summary,
}


def build_summary(state, info, events):
    """The summary of a match (its ``MatchInfo``), by its game's module."""
    return BUILDERS[registry.game(info.game)](state, info, events)


def summary_from_store(store, match=None):
    """The summary of match ``match`` (the most recent one when None) in a MatchStore, by its
    game's module."""
    info = store.resolve_match(match)
    return build_summary(store.state(info.id), info, store.events(info.id))

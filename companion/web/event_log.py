"""The match's event log in words: the newest lines, newest first, taken-back events marked,
each worded once per language; and a team as the page names it."""

from __future__ import annotations

from dataclasses import dataclass

from companion.game.engine import team_label as engine_team_label
from companion.web.i18n import language, say


def team_label(team: str, members) -> str:
    """A team as the page names it: its name, and its members unless the name says them."""
    return say(engine_team_label(team, members))


@dataclass(frozen=True)
class LogLine:
    seq: int
    time: str
    text: str
    undone: bool
    kind: str


LOG_LINES_SHOWN = 60


def taken_back(stored_events, start: str = "match_started") -> set[int]:
    """The seqs of the events an ``undo`` took back (each undo takes back the last event still
    in effect; the match's ``start`` event cannot be taken back)."""
    undone: set[int] = set()
    live: list[int] = []  # seqs of effective events, in order
    for stored in stored_events:
        kind = stored.event.type
        if kind == "undo":
            if live:
                undone.add(live.pop())
        elif kind != start:
            live.append(stored.seq)
    return undone


def log_lines(
    stored_events, deck=None, teams=None, limit=LOG_LINES_SHOWN, worded=None
) -> list[LogLine]:
    """The newest ``limit`` lines of the log, newest first; events taken back by an ``undo``
    are marked. Only those lines are worded: a long match costs no more to show.
    ``worded``: a dict keeping each event's words by (seq, language) between calls (for one
    match: the same deck and teams)."""
    undone = taken_back(stored_events)
    newest = stored_events[::-1][:limit] if limit is not None else stored_events[::-1]
    lang = language() if worded is not None else None
    return [
        LogLine(
            s.seq,
            (s.created_at or "")[11:19],
            _worded(worded, s, deck, teams, lang),
            s.seq in undone,
            s.event.type,
        )
        for s in newest
    ]


def _worded(worded, stored, deck, teams, lang) -> str:
    if worded is None:
        return say(stored.event.describe(teams), deck)
    key = (stored.seq, lang)
    text = worded.get(key)
    if text is None:
        text = worded[key] = say(stored.event.describe(teams), deck)
        while len(worded) > 4 * LOG_LINES_SHOWN:
            worded.pop(next(iter(worded)))
    return text

"""A Hanamikoji match on the tablet (seed 002): the geishas, + and − for the items on each
side, the favour tokens where they stand, and each round's result with its reason.

    GET  /matches/<id>/hanamikoji          the match page
    GET  /matches/<id>/hanamikoji/board    its live part (fragment; the live endpoint and
                                           app.js refresh it like the Koi-Koi board)
    POST /matches/<id>/hanamikoji/events   record one event:
        type          items_set | round_scored | undo
        player        A | B (items_set)
        geisha        ayane ... ruri (items_set)
        count         the new number of items (items_set; the + and − buttons send it)
        expected_seq  the last seq the page saw (a stale one gets 409)
        request_id    one id per button press (a resent one records nothing)

The new-match form (``games.PAGES``) hands ``rules=hanamikoji`` to ``new_match_options`` and
``create``.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from companion.game import registry
from companion.game.hanamikoji import GEISHAS, ITEMS_PER_PLAYER, MAX_ROUNDS, SIDES, Event, other
from companion.web.errors import WebError
from companion.web.event_log import LogLine, taken_back
from companion.web.forms import event_fields, whole_number_field
from companion.web.pages import go_to, is_htmx, render, store
from companion.web.seq_watcher import notify

bp = Blueprint("hanamikoji", __name__, url_prefix="/matches/<int:match_id>/hanamikoji")

EVENT_TYPES = ("items_set", "round_scored", "undo")
MAX_NAME_LENGTH = 24
PLACEHOLDERS = ("Aki", "Ben")
NEW_MATCH_LABEL = _l("Hanamikoji, another game: 2 players, 7 geishas")  # in the list of rules


# ---------------------------------------------------------------------------------------------
# New match
# ---------------------------------------------------------------------------------------------


def _names(values) -> list[str]:
    return [" ".join((values.get(f"player_{i}") or "").split()) for i in (1, 2)]


def new_match_options(values):
    """The Hanamikoji part of the new-match form (it replaces the rule options)."""
    first = str(values.get("first") or "1")
    return render(
        "_hanamikoji_options.html",
        "_hanamikoji_options.html",
        names=_names(values),
        placeholders=PLACEHOLDERS,
        first_chosen=int(first) if first in ("1", "2") else 1,
    )


def create(form):
    """Start a Hanamikoji match from the new-match form and go to its page."""
    names = _names(form)
    if not all(names):
        raise WebError(_("Hanamikoji is played by 2 players: give both names."), 400)
    if any(len(n) > MAX_NAME_LENGTH for n in names):
        raise WebError(_("A player name can be at most %(n)d characters.", n=MAX_NAME_LENGTH), 400)
    if names[0].casefold() == names[1].casefold():
        raise WebError(_("Two players have the same name; give each a different one."), 400)
    first = (form.get("first") or form.get("oya") or "1").strip()
    if first not in ("1", "2"):
        raise WebError(_("Choose which player starts round 1."), 400)
    title = " ".join((form.get("title") or "").split())[:80] or None
    match_id = store().create_hanamikoji_match(names, first=SIDES[int(first) - 1], title=title)
    return go_to(url_for("hanamikoji.page", match_id=match_id))


# ---------------------------------------------------------------------------------------------
# The board
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One side of one geisha: the items there now and which buttons make sense."""

    side: str
    count: int
    can_add: bool
    can_remove: bool


def _log(stored, names) -> list[LogLine]:
    undone = taken_back(stored, start=registry.HANAMIKOJI.start_event)
    lines = [
        LogLine(
            s.seq,
            (s.created_at or "")[11:19],
            s.event.describe(names),
            s.seq in undone,
            s.event.type,
        )
        for s in stored
    ]
    return lines[::-1]


def board_context(match_id: int) -> dict:
    st = store()
    info = st.get_match(match_id)
    if info.game != registry.HANAMIKOJI.name:
        raise WebError(_("Match %(n)s is not a Hanamikoji match.", n=match_id), 404)
    stored = st.events(match_id)
    state = st.state(match_id)
    names = state.names
    last = state.rounds[-1] if state.rounds else None
    # Once the match is decided the table shows the counts of the round that decided it.
    counts = last.counts if state.finished and last else state.counts
    totals = {s: counts.total(s) for s in SIDES}
    geishas = []
    for i, g in enumerate(GEISHAS):
        both = counts.a[i] + counts.b[i]
        cells = {
            s: Cell(
                s,
                counts.side(s)[i],
                both < g.value and totals[s] < ITEMS_PER_PLAYER,
                counts.side(s)[i] > 0,
            )
            for s in SIDES
        }
        geishas.append({"geisha": g, "cells": cells, "favour": state.favours[i]})
    return {
        "info": info,
        "state": state,
        "seq": stored[-1].seq if stored else 0,
        "names": names,
        "sides": SIDES,
        "geishas": geishas,
        "totals": totals,
        "per_player": ITEMS_PER_PLAYER,
        "ready": all(t == ITEMS_PER_PLAYER for t in totals.values()),
        "started": any(totals.values()),
        "last": last,
        "last_moved": {GEISHAS[i].id for i in last.moved} if last else set(),
        "outcome": state.outcome,
        "outcome_text": state.outcome.text(names) if state.outcome else "",
        "max_rounds": MAX_ROUNDS,
        "log": _log(stored, names),
        "other": other,
    }


@bp.get("")
def page(match_id: int):
    return render_template("hanamikoji.html", **board_context(match_id))


@bp.get("/board")
def board(match_id: int):
    if not is_htmx():
        return redirect(url_for("hanamikoji.page", match_id=match_id), 303)
    return render_template("_hanamikoji_board.html", **board_context(match_id))


def event_from_form(form) -> dict:
    """The Hanamikoji event a change form describes: the fields of its event class, as sent
    (the engine says whether they make sense)."""
    kind = (form.get("type") or "").strip()
    if not kind:
        raise WebError(_("The request does not say what happened (type)."), 400)
    if kind not in EVENT_TYPES:
        raise WebError(_("%(kind)r is not something this page can record.", kind=kind), 400)
    no_side = _("The request does not say which side (player A or B).")
    event = event_fields(
        form,
        Event.registry[kind],
        {"count": _("the number of items")},
        missing={"player": no_side},
    )
    if "player" in event and event["player"] not in SIDES:
        raise WebError(no_side, 400)
    return event


@bp.post("/events")
def record(match_id: int):
    st = store()
    if st.game(match_id) != registry.HANAMIKOJI.name:
        raise WebError(_("Match %(n)s is not a Hanamikoji match.", n=match_id), 404)
    form = request.form
    expected_seq = whole_number_field(form, "expected_seq", _("the last event the page saw"))
    request_id = (form.get("request_id") or "").strip()
    if not request_id:
        raise WebError(_("The request has no request id (request_id); reload the page."), 400)
    event = Event.from_dict(event_from_form(form))
    st.append(match_id, event, expected_seq=expected_seq, request_id=request_id)

    notify()
    if is_htmx():
        return render_template(
            "_hanamikoji_board.html", close_modal=True, **board_context(match_id)
        )
    return redirect(url_for("hanamikoji.page", match_id=match_id), 303)

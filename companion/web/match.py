"""One match: the page, its live board fragment, the card picker and the event endpoint.

``POST /matches/<id>/events`` takes form fields (or htmx ``hx-vals``):

    type          card_captured | capture_checked | capture_corrected | capture_removed
                  | koi_called | stop_called
                  | hand_declared | field_brights_set | cards_ran_out | round_started | redeal
                  | undo
    player        a player of the match (the events that name one)
    card          MM-K (captured / checked / corrected / removed card)
    new_card      MM-K (capture_corrected)
    kind          teshi | kuttsuki | dealt_yaku, as the rules allow (hand_declared)
                  with ``card`` repeated: the dealt hand, picked on the picker
                  (``GET /matches/<id>/picker?player=P&declare=KIND``); the engine checks that
                  it qualifies, and a rule set with ``round.hand_cards = "required"`` needs it
    count         brights in the dealt field (field_brights_set)
    expected_seq  the last seq the page saw (required: a stale one gets 409)
    request_id    one id per button press (required: a resent one records nothing)

This module only reads the form's fields into an event dict; the engine alone decides what is
valid (``Event.from_dict`` and ``apply``, run by the store before it writes): anything wrong
gets a 4xx with the engine's sentence and nothing is written.
"""

from __future__ import annotations

import base64
import hashlib
import threading

from flask import Blueprint, current_app, redirect, render_template, request, url_for
from flask_babel import gettext as _
from markupsafe import Markup

from companion.game import engine
from companion.game.cards import Deck
from companion.game.engine import MatchState
from companion.game.rules import RuleSet
from companion.live.source_state import SourceState
from companion.summaries import summary_from_store
from companion.summaries.koikoi import render_html
from companion.web import chart, event_log, tiles
from companion.web.auth import can_change, csrf_token
from companion.web.errors import WebError
from companion.web.forms import event_fields, new_request_id, whole_number_field
from companion.web.games import of_match
from companion.web.i18n import language
from companion.web.pages import is_htmx, render, store
from companion.web.seq_watcher import notify

bp = Blueprint("match", __name__, url_prefix="/matches/<int:match_id>")

MAX_HAND_CARDS = 10  # a dealt hand: 8 cards at two, 10 at three or more (the engine checks)
MAX_CARDS_AT_ONCE = 8  # a turn captures at most 4 cards from the hand's play and 4 from the draw
# What the page records: every engine event but the match's start (the new-match form does it).
EVENT_TYPES = frozenset(engine.EVENT_TYPES) - {"match_started"}
SUMMARY_INLINE_HANDLERS = ("window.print()",)
SUMMARY_HANDLER_HASHES = " ".join(
    "'sha256-" + base64.b64encode(hashlib.sha256(h.encode()).digest()).decode() + "'"
    for h in SUMMARY_INLINE_HANDLERS
)


def taught_names() -> Deck | None:
    """The names of the deck the camera is taught now (``run --deck``), or None."""
    live = current_app.extensions.get("companion_live")
    namer = getattr(getattr(live, "detector", None), "namer", None)
    return getattr(namer, "names", None)


def camera_names_for_unrecorded() -> Deck | None:
    """The names a match that recorded no deck is shown with: those of the camera's deck
    while it reads with the deck it was started with, the standard ones (None) once the
    tablet has changed it (such a match was not started with the deck it reads with now)."""
    live = current_app.extensions.get("companion_live")
    if getattr(live, "deck_switched", False):
        return None
    return taught_names()


def shown_deck(state: MatchState) -> Deck:
    """The rules' deck under the names of the deck the match was played with (recorded when
    it started: ``run --deck``, or a new match while the camera is taught a deck), else of
    the deck the camera is taught now: the players see their own deck's names, the rules
    score the same slots."""
    if state.deck_names is not None:
        return state.shown_deck
    names = camera_names_for_unrecorded()
    return state.rules.deck if names is None else state.rules.deck.renamed_by(names)


def board_context(match_id: int) -> dict:
    """Everything the board shows, from the store's replay of the match."""
    st = store()
    info = st.get_match(match_id)
    stored = st.events(match_id)
    seq = stored[-1].seq if stored else 0
    state: MatchState = st.state(match_id)
    rules: RuleSet = state.rules
    deck: Deck = shown_deck(state)
    pending = state.pending_decision
    teams = state.teams or {}
    players = []
    for name in state.players:
        captures = state.captures.get(name, [])
        players.append(
            {
                "name": name,
                "members": tuple(teams.get(name, ())),  # empty unless playing in teams
                "is_oya": name == state.oya,
                "pending": name == pending,
                "total": state.totals.get(name, 0),
                "groups": tiles.by_category(captures, deck),
                "count": len(captures),
                "hand": state.hands.get(name),
                "koi": state.koi.get(name, 0),
                "card_value": state.card_values.get(name),
            }
        )
    # Who leads: the one side with the highest match total (nobody on a tie).
    top = max(state.totals.values(), default=0)
    leaders = [p["name"] for p in players if p["total"] == top]
    for p in players:
        p["leads"] = len(leaders) == 1 and p["name"] == leaders[0] and len(players) > 1
    told = (current_app.config.get("NARRATION") or {}).get(match_id) or {}
    if callable(told):  # a story told as it is recorded (the camera demo's)
        told = told()
    # A Koi or Stop the camera read from the table, while it is the latest change: one tap
    # takes it back.
    latest = state.log[-1] if state.log else None
    camera_call = None
    if latest is not None and latest.type in ("koi_called", "stop_called"):
        if getattr(latest, "source", None) == "camera":
            camera_call = {"player": latest.player, "kind": latest.type.split("_")[0]}
    return {
        # A scripted demo's narration up to this event, newest last (empty for a real match).
        "story": [text for at, text in sorted(told.items()) if at <= seq + 0.5][-3:],
        # the scripted story has an end; the camera demo's goes on as long as it plays
        "story_done": bool(told)
        and seq >= max(told)
        and match_id not in current_app.config.get("NARRATION_GOES_ON", ()),
        "camera_call": camera_call,
        "koi_callers": ", ".join(f"{side} ×{n}" for side, n in state.koi.items() if n),
        "info": info,
        "state": state,
        "seq": seq,
        "rules": rules,
        "deck": deck,
        "players": players,
        "pending": pending,
        "round_open": _round_open(state),
        "outcome": state.outcome,
        "rounds": state.rounds,
        "chart": chart.chart(list(state.players), state.rounds),
        "log": event_log.log_lines(stored, deck, teams, worded=_log_words(info)),
        "warnings": _settled_warnings(state, stored),
        "card_values_mode": state.mode == "card_values",
        "next_round": len(state.rounds) + 1,
        "camera_deals": _camera_deals(match_id),
        "next_oya": state.next_oya or state.oya,
        # What the rules make meaningful: only those one-tap buttons are shown.
        "instant_wins": tuple(rules.round.instant_wins),
        "field_redeal": rules.round.field_redeal,
        "field_redeal_pairs": rules.round.field_redeal_pairs,
        "field_brights_scored": rules.multipliers.field_brights,
        # "required": a declared hand (teshi...) is recorded with its cards, picked on the
        # 48-card picker; "optional": the one-tap button, or the picker to have it checked.
        "hand_cards": rules.round.hand_cards,
    }


def _settled_warnings(state: MatchState, stored) -> list[str]:
    """The engine's warnings, less the pair warning of a turn still being entered: a single
    card just captured is usually the first of a pair, and saying so after every first card
    teaches players to ignore the warning. A turn recorded in one change (the picker's
    several cards) is complete, and so is one followed by any other event."""
    last = stored[-1] if stored else None
    if (
        last is None
        or last.event.type != "card_captured"
        or "#" in (last.request_id or "")  # the last card of a turn recorded in one change
    ):
        return list(state.warnings)
    side = state.side_of(last.event.player)
    return [
        w for w in state.warnings if not (w.kind == "unpaired_month" and w.params["player"] == side)
    ]


def side_of(state: MatchState, player: str) -> str:
    """The scoring side a name in a form stands for: the player, or the team he plays in
    (a member's capture is recorded under his own name and pooled by the engine)."""
    return state.side_of(player)  # IllegalEvent (400) for a name not in the match


@bp.before_request
def other_game():
    """Another game's match has its own page (``games.PAGES``); its summary is here."""
    match_id = (request.view_args or {}).get("match_id")
    # HEAD too: it runs the same view as GET, and this view cannot draw another game's board.
    if match_id is None or request.method not in ("GET", "HEAD"):
        return None
    if request.endpoint == "match.summary":
        return None
    page = of_match(match_id).page
    if page != "match.page":
        return redirect(url_for(page, match_id=match_id), 303)
    return None


def _round_open(state: MatchState) -> bool:
    """Whether cards can be captured now (a round is being played)."""
    return bool(state.round_in_progress) and state.outcome is None


@bp.get("")
def page(match_id: int):
    # The page around the board needs only the match's name: the board itself is the one
    # rendered for this seq, so a long match's page costs what a new one's does.
    board_html = _cached_board_fragment(match_id)
    return render_template("match.html", info=store().get_match(match_id), board_html=board_html)


@bp.get("/board")
def board(match_id: int):
    if not is_htmx():
        board_html = _cached_board_fragment(match_id)
        info = store().get_match(match_id)
        return render_template("board_page.html", info=info, board_html=board_html)
    return _cached_board_fragment(match_id)


# Every live follower fetches the same board after each event: render it once per
# (match, seq, may change) with placeholders, then fill in each session's CSRF token and
# fresh request ids (cheap string work instead of a template render per follower).
CSRF_MARK = "\x00csrf\x00"  # app.js fills these in a board pushed to a live page
RID_MARK = "\x00rid\x00"
_BOARD_CACHE_SIZE = 32
_render_lock = threading.Lock()


def _cached_board_fragment(match_id: int) -> str:
    return board_fragment(match_id)[1]


def board_fragment(match_id: int) -> tuple[int, str]:
    """``(seq, html)``: the board as this session sees it at the match's last seq (its
    language, whether it may change, its CSRF token and fresh request ids)."""
    seq, _key, html = shared_board(match_id)
    html = html.replace(CSRF_MARK, csrf_token())
    parts = html.split(RID_MARK)
    return seq, "".join(p + new_request_id() for p in parts[:-1]) + parts[-1]


def shared_board(match_id: int, seq_hint: int | None = None) -> tuple[int, tuple, str]:
    """``(seq, key, html)``: the board at the match's last seq as every session of this
    language and right to change sees it, rendered once for all of them: its CSRF token and
    request ids are left as ``CSRF_MARK`` and ``RID_MARK`` for each to fill in. ``key`` names
    this rendering; ``seq_hint``, the seq a live follower was told of, spares it a query when
    that board is rendered already."""
    cache = current_app.extensions.setdefault("companion_board_cache", {})
    variant = (can_change(), language(), _camera_deals(match_id))
    seq = seq_hint
    html = cache.get((match_id, seq, *variant)) if seq is not None else None
    if html is None:
        seq = store().last_seq(match_id)
        html = cache.get((match_id, seq, *variant))
    if html is None:
        # The followers all ask at once after an event: one renders, the others wait for it.
        with _render_lock:
            html = cache.get((match_id, seq, *variant))
            if html is None:
                ctx = board_context(match_id)
                ctx["ledger_html"] = _ledger_html(match_id, ctx)
                ctx["log_html"] = _log_html(match_id, ctx["log"])
                html = render_template(
                    "_board.html",
                    csrf_token=lambda: CSRF_MARK,
                    new_request_id=lambda: RID_MARK,
                    **ctx,
                )
                seq = ctx["seq"]
                cache[(match_id, seq, *variant)] = html
                while len(cache) > _BOARD_CACHE_SIZE:
                    cache.pop(next(iter(cache)))  # oldest first (dicts keep insertion order)
    return seq, (match_id, seq, *variant), html


def _log_words(info) -> dict:
    """The words of this match's log lines, kept between renderings (seq, language -> text)."""
    words = current_app.extensions.setdefault("companion_log_words", {})
    key = (info.id, info.created_at, tuple(info.players))  # not a deleted match's namesake
    if key not in words and len(words) >= 64:
        words.pop(next(iter(words)))
    return words.setdefault(key, {})


_PARTS_KEPT = 4096  # rendered log lines and ledgers kept per app (oldest dropped first)


def _kept(cache: dict, key, make):
    value = cache.get(key)
    if value is None:
        value = cache[key] = make()
        while len(cache) > _PARTS_KEPT:
            cache.pop(next(iter(cache)))
    return value


def _ledger_html(match_id: int, ctx: dict) -> Markup:
    """The round ledger and chart, rendered once for each set of round results: a board
    rendered after every event then costs the same in the last round as in the first."""
    cache = current_app.extensions.setdefault("companion_ledger_cache", {})
    key = (match_id, language(), repr(ctx["rounds"]), tuple((p["name"], p["total"]) for p in ctx["players"]))
    return Markup(
        _kept(cache, key, lambda: render_template("_ledger.html", **ctx))
    )


def _log_html(match_id: int, lines) -> Markup:
    """The log's newest lines as list items, each worded once (a line changes only when the
    event is undone)."""
    cache = current_app.extensions.setdefault("companion_log_cache", {})
    lang = language()
    undone_note = Markup(" <small>%s</small>") % _("(undone)")

    def item(line):
        return Markup(
            '<li class="ev-{kind}{undone}"><span class="seq">{seq}</span>\n'
            '          <span class="t">{time}</span> {text}{note}</li>\n'
        ).format(
            kind=line.kind,
            undone=" undone" if line.undone else "",
            seq=line.seq,
            time=line.time,
            text=line.text,
            note=undone_note if line.undone else "",
        )

    return Markup("").join(
        _kept(cache, (match_id, line.seq, line.undone, line.text, lang), lambda line=line: item(line))
        for line in lines[: event_log.LOG_LINES_SHOWN]
    )


def _camera_deals(match_id: int) -> bool:
    """Whether a working camera follows this match: it then opens each round from the deal,
    and the board offers dealing by hand only as a fallback."""
    session = current_app.extensions.get("companion_live")
    if session is None:
        return False
    try:
        status = session.status() or {}
    except Exception:  # noqa: BLE001 - a session that cannot say: the players deal by hand
        return False
    return status.get("match_id") == match_id and status.get("camera") in (SourceState.LIVE, SourceState.CONNECTING)


@bp.get("/picker")
def picker(match_id: int):
    ctx = board_context(match_id)
    player = request.args.get("player", "")
    side = side_of(ctx["state"], player)
    card = request.args.get("card") or None
    declare = request.args.get("declare") or None
    if declare is not None and declare not in ctx["instant_wins"]:
        raise WebError(
            _("These rules have no %(kind)r declaration.", kind=declare[:20]), 400
        )
    deck = ctx["deck"]
    owner = {}
    for p in ctx["state"].players:
        for c in ctx["state"].captures.get(p, []):
            owner[c.code] = p
    if card is not None:
        card = tiles.tile(card, deck)  # CardError -> 400
        if owner.get(card.code) != side:
            raise WebError(
                _(
                    "%(player)s has not captured %(card)s (%(code)s).",
                    player=player,
                    card=card.name,
                    code=card.code,
                ),
                400,
            )
    return render(
        "picker_page.html",
        "_picker.html",
        player=player,
        side=side,
        card=card if declare is None else None,
        declare=declare,
        owner=owner,
        months=tiles.months(deck),
        **ctx,
    )


# The fields of a Koi-Koi event that only the camera records: the page never sends them.
CAMERA_FIELDS = frozenset({"source", "confidence", "check", "alternatives"})


def event_from_form(form) -> dict:
    """The engine event a change form describes: the fields its event type takes (the event
    class's own), as sent. Whether they make sense (a player of the match, a card of the deck, a
    declaration the rules allow...) is the engine's to say."""
    kind = (form.get("type") or "").strip()
    if not kind:
        raise WebError(_("The request does not say what happened (type)."), 400)
    if kind not in EVENT_TYPES:
        raise WebError(_("%(kind)r is not something the page can record.", kind=kind), 400)
    event = event_fields(
        form,
        engine.EVENT_TYPES[kind],
        {
            "card": _("the card"),
            "new_card": _("the card"),
            "kind": _("the kind of hand"),
            "count": _("the number of brights"),
        },
        missing={"player": _("The request does not say which player (player).")},
        unsent=CAMERA_FIELDS,
        lists={"cards": "card"},  # a dealt hand's cards, picked on the picker
    )
    if len(event.get("cards", ())) > MAX_HAND_CARDS:
        raise WebError(_("A dealt hand holds at most %(n)d cards.", n=MAX_HAND_CARDS), 400)
    return event


@bp.post("/events")
def record(match_id: int):
    st = store()
    st.get_match(match_id)  # 404 before anything else
    form = request.form
    expected_seq = whole_number_field(form, "expected_seq", _("the last event the page saw"))
    request_id = (form.get("request_id") or "").strip()
    if not request_id:
        raise WebError(_("The request has no request id (request_id); reload the page."), 400)
    fields = event_from_form(form)
    cards = [c.strip() for c in form.getlist("card") if c.strip()]
    if fields["type"] == "card_captured" and len(cards) > 1:
        # A turn's capture in one tap: the cards of a month taken together, one change.
        if len(cards) > MAX_CARDS_AT_ONCE:
            raise WebError(_("At most %(n)d cards are captured at once.", n=MAX_CARDS_AT_ONCE), 400)
        events = [engine.Event.from_dict({**fields, "card": c}) for c in cards]
        st.append_many(match_id, events, expected_seq=expected_seq, request_id=request_id)
    else:
        event = engine.Event.from_dict(fields)  # IllegalEvent: 400
        st.append(match_id, event, expected_seq=expected_seq, request_id=request_id)

    notify()
    if is_htmx():  # the new board (rendered once for its seq), and the picker closed
        return _cached_board_fragment(match_id) + render_template("_close_modal.html")
    return redirect(url_for("match.page", match_id=match_id), 303)


@bp.get("/summary")
def summary(match_id: int):
    info = store().get_match(match_id)  # 404 for an unknown match
    summary_data = summary_from_store(store(), info.id)
    html = render_html(
        summary_data, back_url=url_for("match.page", match_id=match_id), lang=language()
    )
    response = current_app.response_class(html, mimetype="text/html")
    # The standalone summary inlines its CSS and has a Print button (onclick): allow exactly
    # those inline handlers, nothing else.
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
        f"script-src 'unsafe-hashes' {SUMMARY_HANDLER_HASHES}; frame-ancestors 'none'"
    )
    return response

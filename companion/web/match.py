"""One match: the page, its live board fragment, the card picker and the event endpoint.

``POST /matches/<id>/events`` takes form fields (or htmx ``hx-vals``):

    type          card_captured | capture_checked | capture_corrected | capture_removed
                  | koi_called | stop_called
                  | hand_declared | field_brights_set | cards_ran_out | round_started | redeal
                  | undo
    player        a player of the match (the events that name one)
    card          MM-K (captured / checked / corrected / removed card)
    new_card      MM-K (capture_corrected)
    kind          teshi | kuttsuki (hand_declared)
    count         0-5 (field_brights_set)
    expected_seq  the last seq the page saw (required: a stale one gets 409)
    request_id    one id per button press (required: a resent one records nothing)

The engine validates the event before the store writes it; anything wrong gets a 4xx with one
sentence and nothing is written.
"""

from __future__ import annotations

import base64
import hashlib
import threading

from flask import Blueprint, current_app, redirect, render_template, request, url_for

from companion import CompanionError
from companion.web import views
from companion.web.views import WebError, is_htmx, new_request_id, render, store

bp = Blueprint("match", __name__, url_prefix="/matches/<int:match_id>")

PLAYER_EVENTS = {
    "card_captured",
    "capture_checked",
    "capture_corrected",
    "capture_removed",
    "koi_called",
    "stop_called",
    "hand_declared",
}
EVENT_TYPES = PLAYER_EVENTS | {
    "field_brights_set",
    "cards_ran_out",
    "round_started",
    "redeal",
    "undo",
}
HAND_KINDS = ("teshi", "kuttsuki")
SUMMARY_INLINE_HANDLERS = ("window.print()",)
SUMMARY_HANDLER_HASHES = " ".join(
    "'sha256-" + base64.b64encode(hashlib.sha256(h.encode()).digest()).decode() + "'"
    for h in SUMMARY_INLINE_HANDLERS
)


def _rules_for(info, state):
    """The match's own rule set (its deck names the cards)."""
    rules = getattr(state, "rules", None)
    if rules is not None:
        return rules
    from companion.rules import RuleSet

    try:
        return RuleSet.load(info.rules).with_options(info.options)
    except CompanionError:
        return None


def _deck(rules):
    return getattr(rules, "deck", None)


def board_context(match_id: int) -> dict:
    """Everything the board shows, from the store's replay of the match."""
    st = store()
    info = st.get_match(match_id)
    stored = st.events(match_id)
    seq = stored[-1].seq if stored else 0
    state = st.state(match_id)
    rules = _rules_for(info, state)
    deck = _deck(rules)
    players = []
    pending = getattr(state, "pending_decision", None)
    teams = getattr(state, "teams", None) or {}
    for name in state.players:
        captures = list(state.captures.get(name, []))
        hand = state.hands.get(name) if hasattr(state, "hands") else None
        players.append(
            {
                "name": name,
                "members": tuple(teams.get(name, ())),  # empty unless playing in teams
                "is_oya": name == getattr(state, "oya", None),
                "pending": name == pending,
                "total": (getattr(state, "totals", {}) or {}).get(name, 0),
                "groups": views.by_category(captures, deck),
                "count": len(captures),
                "hand": hand,
                "koi": (getattr(state, "koi", {}) or {}).get(name, 0),
                "card_value": (getattr(state, "card_values", {}) or {}).get(name),
            }
        )
    rounds = list(getattr(state, "rounds", []) or [])
    return {
        "info": info,
        "state": state,
        "seq": seq,
        "rules": rules,
        "deck": deck,
        "players": players,
        "pending": pending,
        "round_open": _round_open(state),
        "outcome": getattr(state, "outcome", None),
        "rounds": rounds,
        "chart": views.chart(list(state.players), rounds),
        "log": views.log_lines(stored, deck, teams),
        "warnings": list(getattr(state, "warnings", []) or []),
        "card_values_mode": getattr(state, "mode", "yaku") == "card_values",
        "next_round": len(rounds) + 1,
        "next_oya": getattr(state, "next_oya", None) or state.oya,
        # What the rules make meaningful: only those one-tap buttons are shown.
        "instant_wins": tuple(getattr(getattr(rules, "round", None), "instant_wins", HAND_KINDS)),
        "field_redeal": bool(getattr(getattr(rules, "round", None), "field_redeal", True)),
        "field_redeal_pairs": bool(
            getattr(getattr(rules, "round", None), "field_redeal_pairs", True)
        ),
        "field_brights_scored": bool(
            getattr(getattr(rules, "multipliers", None), "field_brights", False)
        ),
    }


def side_of(state, player: str) -> str:
    """The scoring side a name in a form stands for: the player, or the team he plays in
    (a member's capture is recorded under his own name and pooled by the engine)."""
    if player in state.players:
        return player
    for team, members in (getattr(state, "teams", None) or {}).items():
        if player in members:
            return team
    raise WebError(f"There is no player {player!r} in this match.", 400)


@bp.before_request
def other_game():
    """A Hanamikoji match has its own page (companion.web.hanamikoji); its summary is here."""
    match_id = (request.view_args or {}).get("match_id")
    if match_id is None or request.method != "GET" or request.endpoint == "match.summary":
        return None
    if store().game(match_id) == "hanamikoji":
        return redirect(url_for("hanamikoji.page", match_id=match_id), 303)
    return None


def _round_open(state) -> bool:
    """Whether cards can be captured now (a round is being played)."""
    return bool(state.round_in_progress) and state.outcome is None


@bp.get("")
def page(match_id: int):
    ctx = board_context(match_id)
    return render_template("match.html", **ctx)


@bp.get("/board")
def board(match_id: int):
    if not is_htmx():
        return render_template("board_page.html", **board_context(match_id))
    return _cached_board_fragment(match_id)


# Every live follower fetches the same board after each event: render it once per
# (match, seq, may change) with placeholders, then fill in each session's CSRF token and
# fresh request ids (cheap string work instead of a template render per follower).
_CSRF_MARK = "\x00csrf\x00"
_RID_MARK = "\x00rid\x00"
_BOARD_CACHE_SIZE = 32
_render_lock = threading.Lock()


def _cached_board_fragment(match_id: int) -> str:
    from companion.web.auth import can_change, csrf_token

    cache = current_app.extensions.setdefault("companion_board_cache", {})
    changeable = can_change()
    key = (match_id, store().last_seq(match_id), changeable)
    html = cache.get(key)
    if html is None:
        # The followers all ask at once after an event: one renders, the others wait for it.
        with _render_lock:
            html = cache.get(key)
            if html is None:
                ctx = board_context(match_id)
                html = render_template(
                    "_board.html",
                    csrf_token=lambda: _CSRF_MARK,
                    new_request_id=lambda: _RID_MARK,
                    **ctx,
                )
                cache[(match_id, ctx["seq"], changeable)] = html
                while len(cache) > _BOARD_CACHE_SIZE:
                    cache.pop(next(iter(cache)))  # oldest first (dicts keep insertion order)
    html = html.replace(_CSRF_MARK, csrf_token())
    parts = html.split(_RID_MARK)
    return "".join(p + new_request_id() for p in parts[:-1]) + parts[-1]


@bp.get("/picker")
def picker(match_id: int):
    ctx = board_context(match_id)
    player = request.args.get("player", "")
    side = side_of(ctx["state"], player)
    card = request.args.get("card") or None
    deck = ctx["deck"]
    owner = {}
    for p in ctx["state"].players:
        for c in ctx["state"].captures.get(p, []):
            owner[c.code] = p
    if card is not None:
        card = views.tile(card, deck)  # CardError -> 400
        if owner.get(card.code) != side:
            raise WebError(f"{player} has not captured {card.name} ({card.code}).", 400)
    return render(
        "picker_page.html",
        "_picker.html",
        player=player,
        side=side,
        card=card,
        owner=owner,
        months=views.months(deck),
        **ctx,
    )


def _int_field(form, name: str, what: str) -> int:
    raw = form.get(name)
    if raw is None or str(raw).strip() == "":
        raise WebError(f"The request is missing {what} ({name}).", 400)
    try:
        return int(str(raw).strip())
    except ValueError:
        raise WebError(f"{what.capitalize()} ({name}) must be a whole number.", 400) from None


def _card_field(form, name: str, deck) -> str:
    from companion.cards import STANDARD_DECK

    raw = (form.get(name) or "").strip()
    if not raw:
        raise WebError(f"The request is missing the card ({name}).", 400)
    return (deck or STANDARD_DECK).card(raw).code  # CardError (400) for an unknown code


def event_from_form(form, state, deck) -> dict:
    """The engine event a change form describes, checked field by field."""
    kind = (form.get("type") or "").strip()
    if not kind:
        raise WebError("The request does not say what happened (type).", 400)
    if kind not in EVENT_TYPES:
        raise WebError(f"{kind!r} is not something the page can record.", 400)
    event: dict = {"type": kind}
    if kind in PLAYER_EVENTS:
        player = (form.get("player") or "").strip()
        if not player:
            raise WebError("The request does not say which player (player).", 400)
        side_of(state, player)  # a player, a team, or a team's member
        event["player"] = player
    if kind in ("card_captured", "capture_checked", "capture_corrected", "capture_removed"):
        event["card"] = _card_field(form, "card", deck)
    if kind == "capture_corrected":
        event["new_card"] = _card_field(form, "new_card", deck)
    if kind == "hand_declared":
        hand = (form.get("kind") or "").strip()
        if hand not in HAND_KINDS:
            raise WebError("A hand declaration is teshi or kuttsuki.", 400)
        event["kind"] = hand
    if kind == "field_brights_set":
        count = _int_field(form, "count", "the number of brights")
        if not 0 <= count <= 5:
            raise WebError("The dealt field holds 0 to 5 brights.", 400)
        event["count"] = count
    if kind == "round_started":
        oya = (form.get("oya") or "").strip()
        if oya:  # else the engine picks the one the rules name
            if oya not in state.players:
                raise WebError(f"There is no player {oya!r} in this match.", 400)
            event["oya"] = oya
        if (form.get("field_brights") or "").strip():
            event["field_brights"] = _int_field(form, "field_brights", "the number of brights")
    return event


@bp.post("/events")
def record(match_id: int):
    from companion import engine

    st = store()
    info = st.get_match(match_id)  # 404 before anything else
    form = request.form
    expected_seq = _int_field(form, "expected_seq", "the last event the page saw")
    request_id = (form.get("request_id") or "").strip()
    if not request_id:
        raise WebError("The request has no request id (request_id); reload the page.", 400)
    state = st.state(match_id)
    event = event_from_form(form, state, _deck(_rules_for(info, state)))
    try:
        event_obj = engine.Event.from_dict(event)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, CompanionError):
            raise
        raise WebError(f"The {event['type']} event is incomplete ({exc}).", 400) from None
    st.append(match_id, event_obj, expected_seq=expected_seq, request_id=request_id)
    from companion.web.live import notify

    notify()
    if is_htmx():
        ctx = board_context(match_id)
        return render_template("_board.html", close_modal=True, **ctx)
    return redirect(url_for("match.page", match_id=match_id), 303)


@bp.get("/summary")
def summary(match_id: int):
    from companion import summary as summary_module

    info = store().get_match(match_id)  # 404 for an unknown match
    summary_data = summary_module.summary_from_store(store(), info.id)
    html = summary_module.render_html(
        summary_data, back_url=url_for("match.page", match_id=match_id)
    )
    response = current_app.response_class(html, mimetype="text/html")
    # The standalone summary inlines its CSS and has a Print button (onclick): allow exactly
    # those inline handlers, nothing else.
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
        f"script-src 'unsafe-hashes' {SUMMARY_HANDLER_HASHES}; frame-ancestors 'none'"
    )
    return response

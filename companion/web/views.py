"""What every blueprint shares: the store, fragment-or-page rendering, error pages, card
tiles, the log's wording and the ledger chart."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from flask import current_app, render_template, request
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from werkzeug.exceptions import HTTPException, SecurityError

from companion import CompanionError
from companion.game.cards import MONTH_KANJI, MONTHS, STANDARD_DECK, Card, Category, RibbonKind
from companion.game.engine import team_label as engine_team_label
from companion.web import host_name, is_loopback
from companion.web.i18n import card_name, language, say


class WebError(CompanionError):
    """A request the page cannot honour; ``status`` is the HTTP code sent back."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def store():
    return current_app.extensions["companion_store"]


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def render(template: str, fragment: str | None = None, **context):
    """The full page, or only ``fragment`` (a template of its own) for an htmx request."""
    if fragment and is_htmx():
        return render_template(fragment, **context)
    return render_template(template, **context)


def whole_number(text, digits: int = 9) -> int | None:
    """``text`` as a whole number written in ASCII digits (an optional minus sign, at most
    ``digits`` of them), else None: "²", "٣" or 5000 digits are not numbers a form sends."""
    text = str(text if text is not None else "").strip()
    body = text[1:] if text.startswith("-") else text
    if not (body.isascii() and body.isdigit() and len(body) <= digits):
        return None
    return int(text)


def new_request_id() -> str:
    """A fresh id for one change button: sending the same button twice records one event."""
    return uuid.uuid4().hex


# ---------------------------------------------------------------------------------------------
# Errors: one sentence, 4xx, shown in the page (htmx) or on an error page
# ---------------------------------------------------------------------------------------------


def _status_for(exc: CompanionError) -> int:
    from companion.store import StaleEventError, UnknownMatchError

    if isinstance(exc, WebError):
        return exc.status
    if isinstance(exc, UnknownMatchError):
        return 404
    if isinstance(exc, StaleEventError):
        return 409
    # IllegalEvent (the engine refuses), CardError, RuleError... : the request was wrong.
    return 400


def error_response(message: str, status: int):
    if is_htmx() or request.accept_mimetypes.best == "text/event-stream":
        body = render_template("_error.html", message=message, status=status)
    else:
        body = render_template("error.html", message=message, status=status)
    return body, status


def init_app(app) -> None:
    @app.errorhandler(CompanionError)
    def companion_error(exc):
        # The game's refusals are Messages: said in the page's language (text as it is).
        return error_response(say(exc.sentence), _status_for(exc))

    @app.before_request
    def refuse_other_host_names():
        if app.config.get("LOOPBACK_ONLY") and not is_loopback(host_name(request.host)):
            return untrusted_host(None)

    @app.errorhandler(SecurityError)
    def untrusted_host(exc):
        # Raised before URLs can be built, so no template: plain text.
        return (
            _("This server answers only to its own address (localhost)."),
            400,
            {"Content-Type": "text/plain; charset=utf-8"},
        )

    @app.errorhandler(HTTPException)
    def http_error(exc):
        messages = {
            404: _("There is no such page."),
            405: _("This address does not accept that kind of request."),
            413: _("The request is too large."),
        }
        return error_response(messages.get(exc.code, exc.description), exc.code or 500)

    @app.context_processor
    def globals_for_templates():
        from companion.web.auth import can_change, csrf_token

        return {
            "can_change": can_change(),
            "csrf_token": csrf_token,
            "join_required": bool(app.config.get("JOIN_CODE")),
            "read_only": app.config.get("READ_ONLY"),
            "tile": tile,
            "new_request_id": new_request_id,
        }

    @app.after_request
    def security_headers(response):
        # The page loads nothing from elsewhere: say so, and keep it out of frames.
        response.headers.setdefault(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
            "frame-ancestors 'none'",
        )
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        if is_htmx():
            response.headers.setdefault("Vary", "HX-Request")
        return response


# ---------------------------------------------------------------------------------------------
# Card tiles
# ---------------------------------------------------------------------------------------------

ROLE_LABELS = {
    "crane": _l("Crane"),
    "curtain": _l("Curtain"),
    "moon": _l("Moon"),
    "rain_man": _l("Rain man"),
    "phoenix": _l("Phoenix"),
    "warbler": _l("Warbler"),
    "cuckoo": _l("Cuckoo"),
    "bridge": _l("Bridge"),
    "butterflies": _l("Butterflies"),
    "boar": _l("Boar"),
    "geese": _l("Geese"),
    "sake_cup": _l("Sake cup"),
    "deer": _l("Deer"),
    "swallow": _l("Swallow"),
    "lightning": _l("Lightning"),
}
# The icon drawn on a tile (symbols in companion/web/templates/_icons.html).
ROLE_ICONS = {
    "crane": "bird",
    "curtain": "curtain",
    "moon": "moon",
    "rain_man": "umbrella",
    "phoenix": "phoenix",
    "warbler": "bird",
    "cuckoo": "bird",
    "bridge": "bridge",
    "butterflies": "butterfly",
    "boar": "boar",
    "geese": "geese",
    "sake_cup": "cup",
    "deer": "deer",
    "swallow": "bird",
    "lightning": "bolt",
}
# Month names short enough for a tile.
FLOWERS = {
    1: _l("Pine"),
    2: _l("Plum"),
    3: _l("Cherry"),
    4: _l("Wisteria"),
    5: _l("Iris"),
    6: _l("Peony"),
    7: _l("Clover"),
    8: _l("Susuki"),
    9: _l("Chrysanth."),
    10: _l("Maple"),
    11: _l("Willow"),
    12: _l("Paulownia"),
}
CATEGORY_LABELS = {
    Category.BRIGHT: _l("Bright"),
    Category.ANIMAL: _l("Animal"),
    Category.RIBBON: _l("Ribbon"),
    Category.CHAFF: _l("Chaff"),
}
CATEGORY_ORDER = [Category.BRIGHT, Category.ANIMAL, Category.RIBBON, Category.CHAFF]
RIBBON_LABELS = {
    RibbonKind.POEM: _l("Poem"),
    RibbonKind.BLUE: _l("Blue"),
    RibbonKind.PLAIN: _l("Red"),
}


@dataclass(frozen=True)
class Tile:
    """What a card tile shows: enough to tell the 48 cards apart at a glance."""

    code: str
    month: int
    flower: str
    category: str
    category_label: str
    ribbon: str | None
    label: str
    icon: str | None
    name: str


def tile(card: Card | str, deck=None) -> Tile:
    if isinstance(card, str):
        card = (deck or STANDARD_DECK).card(card)
    elif deck is not None:
        card = deck.card(card.code)
    roles = [r for r in ROLE_LABELS if r in card.roles]
    if card.ribbon is not None:
        label, icon = str(RIBBON_LABELS[card.ribbon]), None
    elif roles:
        label, icon = str(ROLE_LABELS[roles[0]]), ROLE_ICONS[roles[0]]
    else:
        label, icon = _("Chaff"), None
    name = card_name(card)
    # A re-skinned deck renames cards: its own short name says more than the standard role.
    renamed = card.names.get("en", card.code) != STANDARD_DECK.card(card.code).name
    if deck is not None and deck.name != "standard" and renamed:
        label = name if len(name) <= 14 else name.split()[0]
    return Tile(
        code=card.code,
        month=card.month,
        flower=str(FLOWERS[card.month]),
        category=card.category.value,
        category_label=str(CATEGORY_LABELS[card.category]),
        ribbon=card.ribbon.value if card.ribbon else None,
        label=label,
        icon=icon,
        name=name,
    )


# A month's plant, by language: MONTHS gives the English and French names; Japanese in kanji.


def month_name(month: int) -> str:
    lang = language()
    if lang == "ja":
        return MONTH_KANJI[month]
    en, _romaji, fr = MONTHS[month]
    return (fr if lang == "fr" else en).capitalize()


def months(deck=None) -> list[tuple[int, str, list[Tile]]]:
    """The 48 tiles grouped by month, for the picker."""
    deck = deck or STANDARD_DECK
    return [(m, month_name(m), [tile(c, deck) for c in deck if c.month == m]) for m in range(1, 13)]


def by_category(cards, deck=None) -> list[tuple[str, list[Tile]]]:
    """A player's captures grouped bright/animal/ribbon/chaff, each group in card order."""
    groups = []
    for category in CATEGORY_ORDER:
        chosen = sorted(c for c in cards if c.category == category)
        groups.append((str(CATEGORY_LABELS[category]), [tile(c, deck) for c in chosen]))
    return groups


# ---------------------------------------------------------------------------------------------
# The event log in words
# ---------------------------------------------------------------------------------------------


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


def log_lines(
    stored_events, deck=None, teams=None, limit=LOG_LINES_SHOWN, worded=None
) -> list[LogLine]:
    """The newest ``limit`` lines of the log, newest first; events taken back by an ``undo``
    are marked. Only those lines are worded: a long match costs no more to show.
    ``worded``: a dict keeping each event's words by (seq, language) between calls (for one
    match: the same deck and teams)."""
    undone: set[int] = set()
    live: list[int] = []  # seqs of effective events, in order
    for stored in stored_events:
        kind = stored.event.type
        if kind == "undo":
            if live:
                undone.add(live.pop())
        elif kind != "match_started":
            live.append(stored.seq)
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


# ---------------------------------------------------------------------------------------------
# The ledger chart (inline SVG): running totals after each round
# ---------------------------------------------------------------------------------------------

CHART_COLOURS = ["#ffb347", "#6ec6ff", "#b39ddb"]


def chart(players, rounds, width=640, height=220, pad=36) -> dict:
    """Polylines of each player's running total after each round (round 0 = start)."""
    running = {p: [0] for p in players}
    for result in rounds:
        for p in players:
            running[p].append(running[p][-1] + result.points.get(p, 0))
    values = [v for series in running.values() for v in series]
    lo, hi = min(values + [0]), max(values + [1])
    if hi == lo:
        hi = lo + 1
    steps = max(len(rounds), 1)

    def x(i):
        return pad + (width - 2 * pad) * i / steps

    def y(v):
        return height - pad - (height - 2 * pad) * (v - lo) / (hi - lo)

    series = []
    for i, p in enumerate(players):
        pts = [(round(x(k), 1), round(y(v), 1)) for k, v in enumerate(running[p])]
        series.append(
            {
                "player": p,
                "colour": CHART_COLOURS[i % len(CHART_COLOURS)],
                "points": " ".join(f"{a},{b}" for a, b in pts),
                "dots": pts,
                "last": running[p][-1],
            }
        )
    return {
        "width": width,
        "height": height,
        "pad": pad,
        "series": series,
        "zero_y": round(y(0), 1),
        "lo": lo,
        "hi": hi,
        "ticks": [(k, round(x(k), 1)) for k in range(0, len(rounds) + 1)],
        "y": lambda v: round(y(v), 1),
    }

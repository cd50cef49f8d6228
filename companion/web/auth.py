"""Who may change a match: CSRF token on every POST, join code when serving to the LAN,
read-only mode. Checked for every POST before any view runs."""

from __future__ import annotations

import hmac
import secrets
import threading
import time

from flask import Blueprint, current_app, redirect, request, session, url_for
from flask_babel import gettext as _

from companion.web.errors import WebError
from companion.web.pages import go_to, own_page, render

bp = Blueprint("auth", __name__)

MAX_FAILED_JOINS = 8  # per client address, then a pause
JOIN_LOCKOUT_SECONDS = 60
# Join codes judged per second by the whole server, whatever address they come from (a
# stranger can take many addresses): codes from addresses that have not been wrong in the last
# minute (a player joining) and from those that have (a player retrying, or a guesser) draw
# on two separate budgets, so that a guesser who floods the server with wrong codes uses up
# only the second. Higher rates let a player retry sooner; lower ones make guessing slower:
# at 2 + 2 codes a second, finding a 10-digit code takes some 40 years on average.
FIRST_TRIES_PER_SECOND = 2.0
RETRIES_PER_SECOND = 2.0
# A third budget for addresses a player is known by: one that joined in the last hours, or
# one whose only wrong code in the last minute was a typo. A guesser reaches it only with an
# address's first wrong code, which the first tries' budget paces: at twice that rate it
# cannot be spent by a flood, so a player's retry is judged whatever the flood. A guesser
# then gets at most 2 + 2 + 2 codes a second judged: some 26 years for a 10-digit code.
KNOWN_TRIES_PER_SECOND = 2 * FIRST_TRIES_PER_SECOND
KNOWN_FOR_SECONDS = 12 * 3600  # how long an address that joined is known
GUESS_BURST = 5  # codes judged at once before the rate applies (a table of tablets joining)
MAX_ADDRESSES_KEPT = 10_000  # addresses remembered for their last try
_failed_joins: dict[str, list[float]] = {}
_tried_joins: dict[str, float] = {}  # address -> when it last sent a code, oldest first
_joined_from: dict[str, float] = {}  # address -> when a code sent from it was right
_failed_lock = threading.Lock()


class GuessBudget:
    """A token bucket: at most ``rate`` join codes judged per second on average, ``burst``
    at once."""

    def __init__(self, rate: float, burst: int, clock=time.monotonic):
        self.rate, self.burst, self.clock = float(rate), float(burst), clock
        self.tokens = float(burst)
        self.at = clock()
        self.lock = threading.Lock()

    def take(self) -> bool:
        with self.lock:
            now = self.clock()
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
            self.at = now
            if self.tokens < 1:
                return False
            self.tokens -= 1
            return True


def _budgets(app) -> dict[str, GuessBudget]:
    """The app's three budgets of judged codes (one set per app: tests get fresh ones)."""
    with _failed_lock:
        budgets = app.extensions.setdefault("companion_join_budgets", {})
        for lane, rate in (
            ("first", FIRST_TRIES_PER_SECOND),
            ("known", KNOWN_TRIES_PER_SECOND),
            ("retry", RETRIES_PER_SECOND),
        ):
            if lane not in budgets:
                budgets[lane] = GuessBudget(rate, GUESS_BURST)
        return budgets


def same_secret(sent, expected) -> bool:
    """A constant-time comparison of two texts of any characters (``hmac.compare_digest``
    refuses non-ASCII ``str``, so both are compared as UTF-8 bytes)."""
    return hmac.compare_digest(
        str(sent).encode("utf-8", "surrogatepass"), str(expected).encode("utf-8", "surrogatepass")
    )


def csrf_token() -> str:
    token = session.get("csrf")
    if not token:
        token = session["csrf"] = secrets.token_urlsafe(24)
    return token


def joined() -> bool:
    code = current_app.config.get("JOIN_CODE")
    return not code or same_secret(session.get("joined", ""), code)


def can_change() -> bool:
    return not current_app.config.get("READ_ONLY") and joined()


def _check_csrf() -> None:
    sent = request.headers.get("X-CSRF-Token") or request.form.get("csrf_token") or ""
    expected = session.get("csrf") or ""
    if not expected or not same_secret(sent, expected):
        raise WebError(
            _("This form has expired or did not come from this page; reload and try again."), 400
        )


def init_app(app) -> None:
    @app.before_request
    def guard_changes():
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return None
        if app.config.get("READ_ONLY"):
            raise WebError(_("This page is read-only: changes are turned off on this server."), 403)
        is_join = request.endpoint == "auth.join"
        if not is_join and not joined():
            raise WebError(_("Enter the join code first: without it this page is read-only."), 403)
        _check_csrf()
        if not is_join and app.config.get("JOIN_CODE"):
            _trust_this_address()
        return None


def _trust_this_address() -> None:
    """Tell the server (``companion.web.stream_hub``) that this request's address belongs to a
    tablet that entered the join code: its requests go first and it is not budgeted as a
    stranger's."""
    from companion.web.stream_hub import HUB_KEY

    hub = request.environ.get(HUB_KEY)
    if hub is not None:
        hub.trust(request.remote_addr or "")


def _recent_failures(addr: str) -> int:
    now = time.monotonic()
    with _failed_lock:
        recent = [t for t in _failed_joins.get(addr, []) if now - t < JOIN_LOCKOUT_SECONDS]
        if recent:
            _failed_joins[addr] = recent
        else:
            _failed_joins.pop(addr, None)  # the table holds only addresses recently wrong
        return len(recent)


def _tried_lately(addr: str) -> bool:
    with _failed_lock:
        when = _tried_joins.get(addr)
        return when is not None and time.monotonic() - when < JOIN_LOCKOUT_SECONDS


def _record_try(addr: str) -> None:
    now = time.monotonic()
    with _failed_lock:
        if len(_tried_joins) > MAX_ADDRESSES_KEPT:  # forget the oldest: memory stays bounded
            for old in [a for a, t in _tried_joins.items() if now - t >= JOIN_LOCKOUT_SECONDS]:
                del _tried_joins[old]
            while len(_tried_joins) > MAX_ADDRESSES_KEPT:
                del _tried_joins[next(iter(_tried_joins))]
        _tried_joins.pop(addr, None)
        _tried_joins[addr] = now  # newest last


def _known(addr: str, failures: int) -> bool:
    """Whether a player is known at ``addr``: it joined lately, or its one wrong code in the
    last minute was a typo."""
    with _failed_lock:
        when = _joined_from.get(addr)
        if when is not None and time.monotonic() - when < KNOWN_FOR_SECONDS:
            return True
    return failures == 1


def _record_joined(addr: str) -> None:
    now = time.monotonic()
    with _failed_lock:
        if len(_joined_from) > MAX_ADDRESSES_KEPT:  # bounded: the oldest go first
            while len(_joined_from) > MAX_ADDRESSES_KEPT:
                del _joined_from[next(iter(_joined_from))]
        _joined_from.pop(addr, None)
        _joined_from[addr] = now


def _record_failure(addr: str) -> None:
    with _failed_lock:
        _failed_joins.setdefault(addr, []).append(time.monotonic())


@bp.route("/join", methods=["GET", "POST"])
def join():
    code = current_app.config.get("JOIN_CODE")
    next_url = own_page(request.values.get("next")) or url_for("matches.index")
    if request.method != "POST":  # GET and HEAD show the form; only a POST (CSRF checked) joins
        return render(
            "join.html",
            "_join_form.html",
            prefill=request.args.get("code", ""),
            next_url=next_url,
            needed=bool(code),
        )
    if not code:
        return redirect(next_url, 303)
    addr = request.remote_addr or "?"
    failures = _recent_failures(addr)
    if failures >= MAX_FAILED_JOINS:
        raise WebError(_("Too many wrong join codes; wait a minute and try again."), 429)
    # Spaces and dashes are how a long code is read out; they are not part of it.
    sent = "".join((request.form.get("code") or "").replace("-", " ").split())
    if not sent:
        raise WebError(_("Type the join code shown on the server."), 400)
    # An address that has tried in the last minute (wrong, or refused for want of budget)
    # draws on the retries' budget: only a first try draws on the first tries' one, and a
    # player known at the address (joined lately, or one typo) on the known one.
    if _known(addr, failures):
        lane = "known"
    else:
        lane = "retry" if failures or _tried_lately(addr) else "first"
    _record_try(addr)
    if not _budgets(current_app)[lane].take():
        raise WebError(
            _("Many join codes are being tried on this server; wait a few seconds and try again."),
            429,
        )
    if not same_secret(sent, code):
        _record_failure(addr)
        raise WebError(
            _("That join code is wrong; it is the %(n)d digits shown on the server.", n=len(code)),
            403,
        )
    session["joined"] = code
    _trust_this_address()
    _record_joined(addr)
    return go_to(next_url)


def join_qr_svg(url: str) -> str | None:
    """The join URL as an inline SVG QR code (segno), or None if segno is missing."""
    try:
        import segno
    except ImportError:  # pragma: no cover - segno is a dependency
        return None
    return segno.make(url, error="m").svg_inline(scale=6, dark="#000", light="#fff", border=2)


JOIN_CODE_DIGITS = 10  # the QR code carries it; typed by hand it is read in groups of 3-3-4


def new_join_code() -> str:
    """A random code of ``JOIN_CODE_DIGITS`` digits, leading zeros kept: at the server's bound
    on guesses (``companion.web.auth``) finding it takes decades, not minutes."""
    return f"{secrets.randbelow(10**JOIN_CODE_DIGITS):0{JOIN_CODE_DIGITS}d}"


def qr_text(data: str) -> str:
    """``data`` as a QR code drawn with block characters for a terminal."""
    import io

    import segno

    out = io.StringIO()
    segno.make(data, error="m").terminal(out=out, compact=True, border=2)
    return out.getvalue()

"""Who may change a match: CSRF token on every POST, join code when serving to the LAN,
read-only mode. Checked for every POST before any view runs."""

from __future__ import annotations

import hmac
import re
import secrets
import threading
import time

from flask import Blueprint, current_app, redirect, request, session, url_for
from flask_babel import gettext as _

from companion.web.views import WebError, render

bp = Blueprint("auth", __name__)

MAX_FAILED_JOINS = 8  # per client address, then a pause: 6 digits must not be guessable
JOIN_LOCKOUT_SECONDS = 60
IMPORT_MAX_BYTES = 4 * 1024 * 1024  # an exported match: ~150 bytes an event
_failed_joins: dict[str, list[float]] = {}
_failed_lock = threading.Lock()


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
        if request.endpoint == "matches.import_match":
            request.max_content_length = IMPORT_MAX_BYTES  # before the form is read
        is_join = request.endpoint == "auth.join"
        if not is_join and not joined():
            raise WebError(_("Enter the join code first: without it this page is read-only."), 403)
        _check_csrf()
        return None


# A path of this site: one slash, then printable ASCII with no backslash. Browsers drop tabs
# and newlines and read a backslash as a slash, so "/\t/evil" or "/\\evil" would leave the site.
_OWN_PAGE = re.compile(r"/(?![/\\])[!-\[\]-~]*")


def own_page(target: str | None) -> str | None:
    """``target`` if it is a page of this site (a path), else None: never another host."""
    if not target or not _OWN_PAGE.fullmatch(target):
        return None
    return target


def _too_many_failures(addr: str) -> bool:
    now = time.monotonic()
    with _failed_lock:
        recent = [t for t in _failed_joins.get(addr, []) if now - t < JOIN_LOCKOUT_SECONDS]
        _failed_joins[addr] = recent
        return len(recent) >= MAX_FAILED_JOINS


def _record_failure(addr: str) -> None:
    with _failed_lock:
        _failed_joins.setdefault(addr, []).append(time.monotonic())


@bp.route("/join", methods=["GET", "POST"])
def join():
    code = current_app.config.get("JOIN_CODE")
    next_url = own_page(request.values.get("next")) or url_for("matches.index")
    if request.method == "GET":
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
    if _too_many_failures(addr):
        raise WebError(_("Too many wrong join codes; wait a minute and try again."), 429)
    sent = (request.form.get("code") or "").strip()
    if not sent:
        raise WebError(_("Type the join code shown on the server."), 400)
    if not same_secret(sent, code):
        _record_failure(addr)
        raise WebError(_("That join code is wrong; it is the 6 digits shown on the server."), 403)
    session["joined"] = code
    if request.headers.get("HX-Request") == "true":
        resp = current_app.response_class("", 204)
        resp.headers["HX-Redirect"] = next_url
        return resp
    return redirect(next_url, 303)


def join_qr_svg(url: str) -> str | None:
    """The join URL as an inline SVG QR code (segno), or None if segno is missing."""
    try:
        import segno
    except ImportError:  # pragma: no cover - segno is a dependency
        return None
    return segno.make(url, error="m").svg_inline(scale=6, dark="#000", light="#fff", border=2)

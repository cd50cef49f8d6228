"""Errors a user can cause, answered with one sentence and a 4xx: in the page for an htmx
request (or a stream), on an error page otherwise."""

from __future__ import annotations

from flask import render_template, request
from flask_babel import gettext as _
from werkzeug.exceptions import HTTPException

from companion import CompanionError
from companion.web.i18n import say
from companion.web.pages import is_htmx


class WebError(CompanionError):
    """A request the page cannot honour; ``status`` is the HTTP code sent back."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


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

    @app.errorhandler(HTTPException)
    def http_error(exc):
        messages = {
            404: _("There is no such page."),
            405: _("This address does not accept that kind of request."),
            413: _("The request is too large."),
        }
        return error_response(messages.get(exc.code, exc.description), exc.code or 500)

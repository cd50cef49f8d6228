"""What every request and response is checked against, whoever may change a match: on a
loopback address, requests made under another host name are refused (DNS rebinding); every
answer says the page loads nothing from elsewhere and stays out of frames."""

from __future__ import annotations

from flask import request
from flask_babel import gettext as _
from werkzeug.exceptions import BadHost, SecurityError

from companion.web.hosts import host_name, is_loopback
from companion.web.pages import is_htmx


def init_app(app) -> None:
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

    @app.errorhandler(BadHost)
    def bad_host_name(exc):
        # A Host header no URL can be built with (an empty label, one over 63 characters):
        # no page can be drawn for it either, so one plain sentence.
        return (
            _("The address this request was sent to is not a valid host name."),
            400,
            {"Content-Type": "text/plain; charset=utf-8"},
        )

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

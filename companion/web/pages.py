"""What every blueprint's views share: the app's store, and a page rendered whole or as the
htmx fragment it asked for."""

from __future__ import annotations

from flask import current_app, render_template, request


def store():
    return current_app.extensions["companion_store"]


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def render(template: str, fragment: str | None = None, **context):
    """The full page, or only ``fragment`` (a template of its own) for an htmx request."""
    if fragment and is_htmx():
        return render_template(fragment, **context)
    return render_template(template, **context)

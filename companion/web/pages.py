"""What every blueprint's views share: the app's store, a page rendered whole or as the htmx
fragment it asked for, and whether an address is a page of this site."""

from __future__ import annotations

import re

from flask import current_app, redirect, render_template, request


def store():
    return current_app.extensions["companion_store"]


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def render(template: str, fragment: str | None = None, **context):
    """The full page, or only ``fragment`` (a template of its own) for an htmx request."""
    if fragment and is_htmx():
        return render_template(fragment, **context)
    return render_template(template, **context)


def go_to(target: str):
    """Send the browser to ``target`` after a form: htmx follows an ``HX-Redirect`` (204), a
    plain form a 303 (the reload does not post it again)."""
    if is_htmx():
        resp = current_app.response_class("", 204)
        resp.headers["HX-Redirect"] = target
        return resp
    return redirect(target, 303)


# A path of this site: one slash, then printable ASCII with no backslash. Browsers drop tabs
# and newlines and read a backslash as a slash, so "/\t/evil" or "/\\evil" would leave the site.
_OWN_PAGE = re.compile(r"/(?![/\\])[!-\[\]-~]*")


def own_page(target: str | None) -> str | None:
    """``target`` if it is a page of this site (a path), else None: never another host."""
    if not target or not _OWN_PAGE.fullmatch(target):
        return None
    return target

"""What a request's fields and arguments are read as: whole numbers written in ASCII digits,
a number of seconds; and the fresh id each change button carries."""

from __future__ import annotations

import math
import uuid

from flask import request
from flask_babel import gettext as _

from companion.web.errors import WebError


def whole_number(text, digits: int = 9) -> int | None:
    """``text`` as a whole number written in ASCII digits (an optional minus sign, at most
    ``digits`` of them), else None: "²", "٣" or 5000 digits are not numbers a form sends."""
    text = str(text if text is not None else "").strip()
    body = text[1:] if text.startswith("-") else text
    if not (body.isascii() and body.isdigit() and len(body) <= digits):
        return None
    return int(text)


def opening_capital(sentence: str) -> str:
    """``sentence`` with its first letter a capital; unlike ``str.capitalize`` it leaves the
    rest alone (a name's or a card's own capitals)."""
    return sentence[:1].upper() + sentence[1:]


def whole_number_field(form, name: str, what: str) -> int:
    """The form's field ``name`` as a whole number, else a 400 naming it: ``what`` is its name
    for a player ("the number of brights"), translated."""
    raw = (form.get(name) or "").strip()
    if not raw:
        raise WebError(_("The request is missing %(what)s (%(name)s).", what=what, name=name), 400)
    number = whole_number(raw)  # ASCII digits only: "٣" or 5,000 digits are refused
    if number is None:
        said = _("%(what)s (%(name)s) must be a whole number.", what=what, name=name)
        raise WebError(opening_capital(said), 400)
    return number


def new_request_id() -> str:
    """A fresh id for one change button: sending the same button twice records one event."""
    return uuid.uuid4().hex


def seconds_arg(name: str, default: float, most: float) -> float:
    """The query argument ``name`` as a number of seconds from 0 to ``most`` (``default``
    when it is absent or empty); anything else is a 400 with one sentence."""
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        if not raw.isascii():  # float() reads "٣" as 3: a number is ASCII digits here
            raise ValueError(raw)
        value = float(raw)
    except ValueError:
        raise WebError(_("%(name)s must be a number of seconds.", name=name), 400) from None
    if not (math.isfinite(value) and 0 <= value <= most):
        raise WebError(
            _("%(name)s must be between 0 and %(most)s seconds.", name=name, most=f"{most:g}"), 400
        )
    return value

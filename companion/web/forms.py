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

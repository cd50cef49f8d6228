"""What a request's fields and arguments are read as: whole numbers written in ASCII digits,
and the fresh id each change button carries."""

from __future__ import annotations

import uuid


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

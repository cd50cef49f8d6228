"""What a request's fields and arguments are read as: whole numbers written in ASCII digits,
a number of seconds, an engine event's fields; and the fresh id each change button carries."""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Mapping

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


def event_fields(
    form,
    event_class,
    what: Mapping[str, str],
    *,
    missing: Mapping[str, str] | None = None,
    unsent: frozenset[str] = frozenset(),
    lists: Mapping[str, str] | None = None,
) -> dict:
    """The event a change form describes, as a dict for ``event_class.from_dict``: the event
    class's own fields (an engine event is a dataclass), read by their names and types.

    A required field named in ``what`` (its name for a player: "the card") or ``missing`` (the
    whole sentence said when it is absent) is checked here: a 400 when it is absent, a whole
    number where the field is one. Every other field goes to the engine as sent, for it to refuse in its own
    sentence: a required one even when empty, an optional one only when given. A tuple field
    is the form's repeated input (``lists`` renames it: the picker sends a hand's cards as
    ``card`` inputs). The fields in ``unsent`` are never read (what only the camera records).
    """
    event: dict = {"type": event_class.type}
    for f in dataclasses.fields(event_class):
        if f.name in unsent:
            continue
        name = (lists or {}).get(f.name, f.name)
        required = f.metadata.get("required", False)
        kind = str(f.type).split(" |")[0]
        if kind == "tuple":
            items = [v.strip() for v in form.getlist(name) if v.strip()]
            if items:
                event[f.name] = items
            continue
        raw = (form.get(name) or "").strip()
        if required and (f.name in what or f.name in (missing or {})):
            if kind == "int":
                raw = whole_number_field(form, name, what[f.name])
            elif not raw:
                raise WebError(
                    (missing or {}).get(f.name)
                    or _("The request is missing %(what)s (%(name)s).", what=what[f.name], name=name),
                    400,
                )
            event[f.name] = raw
        elif raw or required:
            event[f.name] = raw
    return event

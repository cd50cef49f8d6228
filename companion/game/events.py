"""What every event family shares: a ``type`` string, plain fields, a JSON round-trip.

The Koi-Koi engine (``companion.game.engine``) and the Hanamikoji rules (``companion.game.hanamikoji``)
each keep their own family of events: a base class naming the family's registry of types,
the error its bad input raises and what its events are called in a sentence. A subclass with a
``type`` joins its family's registry, so ``Family.from_dict(data)`` builds the right one.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from companion import CompanionError

# Whole numbers typed as text: ASCII digits only, and few enough of them for any count or
# score. ``str.isdigit`` also takes superscripts ("²", which ``int`` refuses) and other
# scripts' digits, and ``int`` refuses text of over 4,300 digits.
MAX_DIGITS = 18


def whole_number(text) -> int | None:
    """The whole number (0 or more) ``text`` writes in ASCII digits, or None."""
    text = str(text).strip()
    if 0 < len(text) <= MAX_DIGITS and text.isascii() and text.isdigit():
        return int(text)
    return None


def quoted(value, limit: int = 24) -> str:
    """``repr(value)`` for a sentence, cut short when long (a pasted page, 5,000 digits)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 8]}... ({len(text)} characters)"


def required(default=""):
    """A field an event dict must give (the default only keeps dataclass field order happy)."""
    return field(default=default, metadata={"required": True})


@dataclass(frozen=True)
class EventRecord:
    """Base of all events. A family's base sets ``registry``, ``error`` and ``noun``."""

    type: ClassVar[str] = ""
    registry: ClassVar[dict[str, type]] = {}
    error: ClassVar[type[CompanionError]] = CompanionError
    noun: ClassVar[str] = "an event"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.type:
            cls.registry[cls.type] = cls

    def to_dict(self) -> dict:
        data: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, dict):
                value = {k: list(v) if isinstance(v, tuple) else v for k, v in value.items()}
            data[f.name] = value
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, data) -> EventRecord:
        """The event of this family that ``data`` (a dict with a ``type``) describes; the
        family's error, in one sentence, for anything else."""
        if isinstance(data, EventRecord) and data.registry is cls.registry:
            return data
        if not isinstance(data, dict):
            raise cls.error(
                f"{cls.noun[0].upper()}{cls.noun[1:]} must be an object with a 'type', "
                f"not {type(data).__name__}."
            )
        etype = data.get("type")
        kind = cls.registry.get(etype) if isinstance(etype, str) else None
        if kind is None:
            what = cls.noun.split(" ", 1)[1]  # "an event" -> "event"
            raise cls.error(
                f"Unknown {what} type {etype!r}: expected one of {', '.join(cls.registry)}."
            )
        names = [f.name for f in dataclasses.fields(kind)]
        unknown = sorted(set(data) - {"type", *names})
        if unknown:
            raise cls.error(
                f"Unknown field {unknown[0]!r} for {etype}: expected "
                f"{', '.join(names) if names else 'no fields'}."
            )
        needed = [f.name for f in dataclasses.fields(kind) if f.metadata.get("required")]
        missing = [n for n in needed if n not in data]
        if missing:
            raise cls.error(f"A {etype} event needs a {missing[0]!r} field.")
        return kind(**{n: data[n] for n in names if n in data})

    @classmethod
    def from_json(cls, text: str) -> EventRecord:
        try:
            data = json.loads(text)
        except (TypeError, ValueError):
            raise cls.error("The event is not valid JSON.") from None
        return cls.from_dict(data)

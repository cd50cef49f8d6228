"""What every event family shares: a ``type`` string, plain fields, a JSON round-trip.

The Koi-Koi engine (``companion.game.engine``) and the Hanamikoji rules (``companion.game.hanamikoji``)
each keep their own family of events: a base class naming the family's registry of types,
the error its bad input raises and what its events are called in a sentence. A subclass with a
``type`` joins its family's registry, so ``Family.from_dict(data)`` builds the right one.

Both games' states also keep their history the same way: the effective events in one shared,
append-only ``EventLog``, the earlier states for ``undo`` within ``UNDO_SNAPSHOTS``
(``remember``, ``undo``), and ``replay_log`` folding a whole log with the refused event named.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from companion import CompanionError
from companion.game.messages import Listing, Message


def quoted(value, limit: int = 24) -> str:
    """``repr(value)`` for a sentence, cut short when long (a pasted page, 5,000 digits)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 8]}... ({len(text)} characters)"


def required(default=""):
    """A field an event dict must give (the default only keeps dataclass field order happy)."""
    return field(default=default, metadata={"required": True})


def omitted_when_empty(default):
    """An optional field that the event's dict leaves out while it is empty."""
    return field(default=default, metadata={"omitted_when_empty": True})


class UndoEvent:
    """Both games' ``undo``: takes back the latest effective event (a family's ``Undo`` is
    ``UndoEvent`` and its own event base)."""

    type: ClassVar[str] = "undo"

    def describe(self, *context) -> Message:
        return Message("event.undo")


@dataclass(frozen=True)
class EventRecord:
    """Base of all events. A family's base sets ``registry``, ``error`` and the ids of its
    ``noun`` in a sentence, with and without its article ("an event", "event")."""

    type: ClassVar[str] = ""
    registry: ClassVar[dict[str, type]] = {}
    error: ClassVar[type[CompanionError]] = CompanionError
    noun: ClassVar[tuple[str, str]] = ("phrase.an_event", "phrase.event")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.type:
            cls.registry[cls.type] = cls

    def to_dict(self) -> dict:
        data: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None or (not value and f.metadata.get("omitted_when_empty")):
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
                Message(
                    "refusal.not_an_object",
                    noun=Message(cls.noun[0]).with_capital(),
                    type=type(data).__name__,
                )
            )
        etype = data.get("type")
        kind = cls.registry.get(etype) if isinstance(etype, str) else None
        if kind is None:
            raise cls.error(
                Message(
                    "refusal.unknown_type",
                    noun=Message(cls.noun[1]),
                    type=repr(etype),
                    types=Listing(cls.registry),
                )
            )
        names = [f.name for f in dataclasses.fields(kind)]
        unknown = sorted(set(data) - {"type", *names})
        if unknown:
            raise cls.error(
                Message(
                    "refusal.unknown_field",
                    field=repr(unknown[0]),
                    type=etype,
                    fields=Listing(names) if names else Message("phrase.no_fields"),
                )
            )
        needed = [f.name for f in dataclasses.fields(kind) if f.metadata.get("required")]
        missing = [n for n in needed if n not in data]
        if missing:
            raise cls.error(Message("refusal.missing_field", type=etype, field=repr(missing[0])))
        return kind(**{n: data[n] for n in names if n in data})

    @classmethod
    def from_json(cls, text: str) -> EventRecord:
        try:
            data = json.loads(text)
        except (TypeError, ValueError):
            raise cls.error(Message("refusal.not_json")) from None
        return cls.from_dict(data)


# ---------------------------------------------------------------------------------------------
# A state's history: its effective events and, for undo, the states before it
# ---------------------------------------------------------------------------------------------


class Printed:
    """A value that prints as its ``text`` (a state, a round's result, an outcome)."""

    def __str__(self) -> str:
        return self.text


class GameState(Printed):
    """What both games' states share: a state is never changed once built (``apply`` changes
    a ``_copy``), prints as its ``text`` and is finished once it has an ``outcome``. A game
    names in ``COPIED`` the lists and dicts an event may change in place; ``_copy`` copies
    those, and shares every other value."""

    COPIED: ClassVar[tuple[str, ...]] = ()
    outcome = None

    @property
    def finished(self) -> bool:
        return self.outcome is not None

    def _copy(self):
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        for name in self.COPIED:
            setattr(new, name, getattr(self, name).copy())
        return new


class EventLog(Sequence):
    """A match's effective events, shared between the states of one line of play: each state
    sees the first ``len`` events of one append-only list, so recording an event costs the
    same at event 3,000 as at event 3 (no copy of the log). A state that takes another line
    (a new event after an undo) copies the events it shares, once.

    Every ``CHECKPOINT_EVERY`` events the log also keeps the state reached there
    (``keep``), so that an undo past the states a state remembers replays from the nearest
    one (``state_before``) instead of from the start: each undo costs at most
    ``CHECKPOINT_EVERY`` events of replay, however long the log and however many undos."""

    __slots__ = ("_events", "_length", "_kept")

    def __init__(self, events: list | None = None, length: int | None = None, kept=None):
        self._events = [] if events is None else events
        self._length = len(self._events) if length is None else length
        self._kept: dict = {} if kept is None else kept  # length -> the state reached there

    def appended(self, event) -> EventLog:
        if self._length == len(self._events):  # the tip of its line: share the list
            self._events.append(event)
            return EventLog(self._events, self._length + 1, self._kept)
        # another line from here: the states kept up to here are this line's too
        kept = {n: state for n, state in self._kept.items() if n <= self._length}
        return EventLog([*self._events[: self._length], event], kept=kept)

    def keep(self, state) -> None:
        """Keep ``state`` (the state after this log's events) when its length is a checkpoint:
        a copy that remembers no earlier state, so that it holds only itself."""
        if self._length % CHECKPOINT_EVERY == 0 and self._length:
            kept = state._copy()
            kept._previous = None
            self._kept[self._length] = kept

    def state_before(self, apply: Callable, replay: Callable):
        """The state after all but the last of this log's events: the nearest kept state at
        or before there, with the events after it applied (``replay`` of them from the start
        when none is kept)."""
        target = self._length - 1
        start = target - target % CHECKPOINT_EVERY
        state = self._kept.get(start) if start else None
        if state is None or len(state.log) != start:
            return replay(self[:target])
        for event in self._events[start:target]:
            state = apply(state, event)
        return state

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._events[: self._length][index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("event log index out of range")
        return self._events[index]

    def __iter__(self):
        return iter(self._events[: self._length])

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return f"<EventLog of {self._length} events>"


# How many earlier states a state keeps for ``undo``; undoing further back replays from the
# nearest state its log kept, one every CHECKPOINT_EVERY events, so a long match holds a
# bounded number of states in memory (one per CHECKPOINT_EVERY events) and no undo replays
# more than CHECKPOINT_EVERY events.
UNDO_SNAPSHOTS = 64
CHECKPOINT_EVERY = 64


def remember(new, previous, logged) -> None:
    """Give ``new`` (a state just built from ``previous`` by event ``logged``) its history:
    the log with ``logged`` appended, and ``previous`` for undo, forgetting the states more
    than UNDO_SNAPSHOTS back. States have ``log`` and ``_previous``."""
    new.log = previous.log.appended(logged)
    new._previous = previous
    new.log.keep(new)
    state = new
    for _ in range(UNDO_SNAPSHOTS):
        state = state._previous
        if state is None:
            return
    state._previous = None


def undo(state, replay: Callable, error: type[CompanionError], apply: Callable | None = None):
    """The state before ``state``'s latest effective event (never before the first); past
    the states it remembers, replayed from the nearest state its log kept with ``apply``
    (from the start with ``replay`` when no ``apply`` is given)."""
    if len(state.log) <= 1:
        raise error(Message("refusal.nothing_to_undo"))
    if state._previous is not None:
        return state._previous
    if apply is None:
        return replay(state.log[:-1])
    return state.log.state_before(apply, replay)  # past the remembered states


def replay_log(events, apply: Callable, error: type[CompanionError]):
    """Fold a whole log with ``apply``; the error names the first refused event (1-based)."""
    state = None
    for n, event in enumerate(events, 1):
        try:
            state = apply(state, event)
        except error as exc:
            raise error(Message("refusal.event_refused", n=n, reason=exc.sentence)) from None
    return state

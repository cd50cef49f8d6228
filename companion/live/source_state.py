"""A frame source's state, its own light module: the tablet's pages name it without loading
OpenCV (``companion/live/sources.py`` reads the frames)."""

from __future__ import annotations

import enum


class SourceState(enum.StrEnum):
    """What a frame source is doing. The value is what ``/live/status`` says as ``camera`` (a
    ``str``, so it reaches JSON unchanged)."""

    CONNECTING = "connecting"  # no picture yet: a camera opening, a stream dialling
    LIVE = "live"  # sending pictures
    LOST = "lost"  # was live, sends nothing now: reopened with backoff
    ENDED = "ended"  # a recording played to its end, or a source closed
    OFF = "off"  # no source at all: a server started without a camera

    @classmethod
    def of(cls, source) -> SourceState:
        """A source's state; ``OFF`` for no source, or one whose state is none of these."""
        try:
            return cls(getattr(source, "state", cls.OFF))
        except ValueError:
            return cls.OFF

    @property
    def waiting(self) -> bool:
        """Whether pictures should come and do not (yet): connecting or lost."""
        return self in (SourceState.CONNECTING, SourceState.LOST)

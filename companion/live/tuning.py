"""Settings of the live pipeline's parts as frozen dataclasses whose every field is a tuning
choice: its default, what moving it trades in one line, and the range it may take.

    @dataclass(frozen=True)
    class PartSettings:
        wait: float = tuning(0.5, "seconds ...: more ..., less ...")

        def __post_init__(self):
            check_ranges(self, "part")
"""

from __future__ import annotations

import math
from dataclasses import field, fields

from companion import CompanionError

# Frame times are sums of steps (0.1 + 0.1 + ...) and fall short by a hair: a wait compared
# with them is shortened by this much, so that "two looks later" means two looks.
CLOCK_SLACK = 1e-6


def tuning(default, why: str, *, low: float = 0.0, high: float | None = None):
    """A setting: its default, its trade-off in one line, the range it may take (a whole
    number where the default is one)."""
    return field(default=default, metadata={"why": why, "low": low, "high": high})


def check_ranges(settings, owner: str, skip: tuple[str, ...] = ()) -> None:
    """Refuse, in one sentence naming ``owner`` ("tracker"), a setting that is not a number of
    its range (a whole number where its default is one; never a bool, nan or infinity). The
    fields named in ``skip`` are checked by their owner."""
    for f in fields(settings):
        if f.name in skip:
            continue
        value = getattr(settings, f.name)
        whole = isinstance(f.default, int)
        low, high = f.metadata["low"], f.metadata["high"]
        number = isinstance(value, int) if whole else isinstance(value, int | float)
        if (
            isinstance(value, bool)
            or not number
            or not (low <= value and (high is None or value <= high))
            or (not whole and not math.isfinite(value))
        ):
            kind = "a whole number" if whole else "a number"
            bound = f"from {low} to {high}" if high is not None else f"of {low} or more"
            raise CompanionError(f"The {owner}'s {f.name} must be {kind} {bound}, not {value!r}.")


def describe(settings_class) -> dict[str, str]:
    """Each setting's name -> what moving it trades, one line."""
    return {f.name: f.metadata["why"] for f in fields(settings_class)}

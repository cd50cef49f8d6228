"""Hanamikoji (seed 002): the second game at the same table. Pure: no I/O, no clock.

Two players, 7 geishas, 21 item cards, 1 to 3 rounds. The companion does not follow the
actions of a round; it keeps what is left on the table at the round's end (the items each
player has in front of each geisha), moves the favour tokens, and says who wins and why.

Like the Koi-Koi engine, a match is its event log (``hanamikoji_started``, ``items_set``,
``round_scored``, ``undo``) and the state is its replay::

    state = replay([
        {"type": "hanamikoji_started", "players": ["Aki", "Ben"]},
        {"type": "round_scored", "counts": "1,1,1,2,1,1,1:0,0,0,1,2,2,3"},
    ])
    state.outcome.winner, state.outcome.text(state.names)

Decisions, each from the seed (quotes in docs/HANAMIKOJI.md):

- Each player has exactly 8 items in front of the geishas when a round is scored: every
  player plays his 4 actions (1 secret, 2 from his gift, 2 from his exchange, 1 and 2 kept
  from the opponent's gift and exchange). Another count is refused, saying so.
- A tie before a geisha leaves her token where it is, even in the middle; tokens persist.
- Both players meeting a condition: more points wins (it cannot be a tie: 4 geishas leave at
  most 10 points to their owner while the other holds 11 or more). No condition after round 3:
  more points wins, else a tie. There is never a 4th round.
- The first player of round 1 is named at the start; it alternates each round.
- Player labels are "A" and "B" in events and results; names are only for text.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

from companion import CompanionError
from companion.game.events import (
    EventLog,
    EventRecord,
    GameState,
    Printed,
    UndoEvent,
    remember,
    replay_log,
    required,
    undo,
)
from companion.game.messages import Listing, Message

__all__ = [
    "GEISHAS",
    "Geisha",
    "HanamikojiError",
    "RoundCounts",
    "RoundResult",
    "MatchOutcome",
    "HanamikojiState",
    "Event",
    "HanamikojiStarted",
    "ItemsSet",
    "RoundScored",
    "Undo",
    "apply",
    "replay",
    "play",
    "score_round",
    "standing",
]

SIDES = ("A", "B")
ITEMS_PER_PLAYER = 8
MAX_ROUNDS = 3
GEISHAS_TO_WIN = 4
POINTS_TO_WIN = 11
EIGHT_ITEMS = Message("phrase.eight_items")  # how many items a player has at a round's end


class HanamikojiError(CompanionError):
    """Impossible Hanamikoji input (or an event the match cannot accept); one sentence."""


# ---------------------------------------------------------------------------------------------
# Geishas
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Geisha:
    """A geisha: her value is both her victory points and the number of her item cards."""

    id: str
    name: str
    value: int
    item: str

    @property
    def label(self) -> str:
        return f"{self.name} ({self.value}, {self.item})"

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "value": self.value, "item": self.item}


GEISHAS: tuple[Geisha, ...] = (
    Geisha("ayane", "Ayane", 2, "flute"),
    Geisha("iroha", "Iroha", 2, "fan"),
    Geisha("tomoyo", "Tomoyo", 2, "paper"),
    Geisha("yoko", "Yoko", 3, "umbrella"),
    Geisha("chiharu", "Chiharu", 3, "lute"),
    Geisha("anju", "Anju", 4, "tea"),
    Geisha("ruri", "Ruri", 5, "flower"),
)
TOTAL_POINTS = sum(g.value for g in GEISHAS)  # 21, also the number of item cards


def geisha_index(text) -> int:
    """The 0-based index of a geisha given by id, name, item, or 1-based position."""
    if isinstance(text, int) and not isinstance(text, bool) and 1 <= text <= len(GEISHAS):
        return text - 1
    word = str(text).strip().casefold()
    # A position is one or two ASCII digits: "²", "٣" or 5,000 digits name no geisha.
    if word.isascii() and word.isdigit() and len(word) <= 2 and 1 <= int(word) <= len(GEISHAS):
        return int(word) - 1
    for i, g in enumerate(GEISHAS):
        if word in (g.id, g.name.casefold(), g.item):
            return i
    names = Listing(g.name for g in GEISHAS)
    raise HanamikojiError(Message("refusal.no_geisha", value=_shown(text), names=names))


def _shown(value) -> str:
    """``value`` as a refusal quotes it: short, whatever was sent."""
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "..."


def other(side: str) -> str:
    return "B" if side == "A" else "A"


def _upper_first(text: str) -> str:
    """``text`` opening a sentence (``str.capitalize`` would lower the rest of a name); a
    Message opens with a capital in every language."""
    if isinstance(text, Message):
        return text.with_capital()
    return text[:1].upper() + text[1:]


def _who(side: str, names: dict | None) -> str:
    name = (names or {}).get(side)
    return name if name and name != side else Message("hanamikoji.player", side=side)


# ---------------------------------------------------------------------------------------------
# Counts at a round's end
# ---------------------------------------------------------------------------------------------


def _count(value, geisha: Geisha, who: str) -> int:
    if isinstance(value, bool):
        value = str(value)
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 9):
            raise HanamikojiError(
                Message("refusal.count_not_whole", value=_shown(text), geisha=geisha.name, who=who)
            )
        number = int(text)
    if number < 0:
        raise HanamikojiError(
            Message("refusal.count_not_whole", value=number, geisha=geisha.name, who=who)
        )
    return number


@dataclass(frozen=True)
class RoundCounts(Printed):
    """The items each player has in front of each geisha (seed order) at a round's end.

    Text form, as the command takes it: ``A1,...,A7:B1,...,B7``; ``RoundCounts.parse(c.text)
    == c``. Built by ``parse`` or ``of``, whose values are checked one by one; ``check``
    then refuses what cannot be on the table at a round's end."""

    a: tuple = (0,) * len(GEISHAS)
    b: tuple = (0,) * len(GEISHAS)

    @classmethod
    def parse(cls, text: str, names: dict | None = None) -> RoundCounts:
        text = str(text).strip()
        halves = text.split(":")
        if len(halves) != 2:
            raise HanamikojiError(Message("refusal.round_format", value=repr(text)))
        return cls.of(*(h.split(",") for h in halves), names=names)

    @classmethod
    def of(cls, a, b, names: dict | None = None) -> RoundCounts:
        sides = []
        for side, values in zip(SIDES, (a, b), strict=True):
            values = list(values)
            if len(values) != len(GEISHAS):
                raise HanamikojiError(
                    Message(
                        "refusal.side_counts",
                        who=_upper_first(_who(side, names)),
                        n=len(values),
                        geishas=len(GEISHAS),
                        names=Listing(g.name for g in GEISHAS),
                    )
                )
            who = _who(side, names)
            sides.append(tuple(_count(v, g, who) for v, g in zip(values, GEISHAS, strict=True)))
        return cls(*sides)

    @classmethod
    def from_value(cls, value, names: dict | None = None) -> RoundCounts:
        """A RoundCounts, its text, or ``{"A": [...], "B": [...]}``."""
        if isinstance(value, RoundCounts):
            return value
        if isinstance(value, dict) and set(value) == set(SIDES):
            return cls.of(value["A"], value["B"], names=names)
        if isinstance(value, str):
            return cls.parse(value, names=names)
        raise HanamikojiError(Message("refusal.counts_format"))

    def side(self, side: str) -> tuple:
        return self.a if side == "A" else self.b

    def total(self, side: str) -> int:
        return sum(self.side(side))

    def with_count(self, side: str, index: int, count: int) -> RoundCounts:
        values = list(self.side(side))
        values[index] = count
        return dataclasses.replace(self, **{side.lower(): tuple(values)})

    def check_geishas(self, names: dict | None = None) -> None:
        """Refuse more items before a geisha than she has cards (one side, or both)."""
        for i, g in enumerate(GEISHAS):
            for side in SIDES:
                n = self.side(side)[i]
                if n > g.value:
                    raise HanamikojiError(
                        Message(
                            "refusal.too_many_items",
                            who=_upper_first(_who(side, names)),
                            n=n,
                            geisha=g.name,
                            most=g.value,
                        )
                    )
            both = self.a[i] + self.b[i]
            if both > g.value:
                raise HanamikojiError(
                    Message(
                        "refusal.too_many_together",
                        a=_upper_first(_who("A", names)),
                        b=_who("B", names),
                        n=both,
                        geisha=g.name,
                        most=g.value,
                    )
                )

    def check(self, names: dict | None = None) -> None:
        """Refuse what cannot be on the table when a round is scored."""
        self.check_geishas(names)
        wrong = [s for s in SIDES if self.total(s) != ITEMS_PER_PLAYER]
        if wrong:
            told = Listing(
                (Message("phrase.items_of", who=_who(s, names), n=self.total(s)) for s in wrong),
                " and ",
            )
            raise HanamikojiError(Message("refusal.items_total", told=told, rule=EIGHT_ITEMS))

    @property
    def text(self) -> str:
        return ",".join(map(str, self.a)) + ":" + ",".join(map(str, self.b))

    def to_dict(self) -> dict:
        return {"A": list(self.a), "B": list(self.b)}


# ---------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------

NO_FAVOURS: tuple = (None,) * len(GEISHAS)


def score_round(counts: RoundCounts, favours: tuple = NO_FAVOURS) -> tuple:
    """The favour tokens after a round: per geisha, the side with more items takes her token;
    on a tie it stays where it was (``None``: still in the middle)."""
    after = []
    for a, b, before in zip(counts.a, counts.b, favours, strict=True):
        after.append("A" if a > b else "B" if b > a else before)
    return tuple(after)


def standing(favours: tuple) -> tuple[dict, dict]:
    """(points, geishas) of each side for token positions."""
    points = {s: 0 for s in SIDES}
    geishas = {s: 0 for s in SIDES}
    for g, owner in zip(GEISHAS, favours, strict=True):
        if owner is not None:
            points[owner] += g.value
            geishas[owner] += 1
    return points, geishas


def condition(points: int, geishas: int) -> str | None:
    """The victory condition met, in words (a Listing of Messages), or None."""
    met = []
    if geishas >= GEISHAS_TO_WIN:
        met.append(Message("hanamikoji.geishas", n=geishas))
    if points >= POINTS_TO_WIN:
        met.append(Message("hanamikoji.points", n=points))
    return Listing(met, " and ") if met else None


@dataclass(frozen=True)
class MatchOutcome:
    """How the match was decided: ``winner`` "A", "B" or None (a tie), after which round,
    and ``by``: ``condition`` | ``both_conditions`` | ``points_after_last_round`` | ``tie``."""

    winner: str | None
    decided_after_round: int
    by: str
    points: dict = field(hash=False)
    geishas: dict = field(hash=False)
    conditions: dict = field(hash=False)

    def text(self, names: dict | None = None) -> Message:
        """One sentence: "Ben wins with 4 geishas", "both meet a condition: ..."."""
        win = _who(self.winner, names) if self.winner else ""
        if self.by == "condition":
            table = self.conditions[self.winner]
            return Message("hanamikoji.wins", winner=win, table=table).with_capital()
        pts = self.points
        if self.by == "both_conditions":
            each = Listing(
                Message("standing.entry", name=_who(s, names), value=self.conditions[s])
                for s in SIDES
            )
            more, less = pts[self.winner], pts[other(self.winner)]
            return Message(
                "hanamikoji.both_conditions", table=each, winner=win, more=more, less=less
            )
        if self.by == "points_after_last_round":
            more, less = pts[self.winner], pts[other(self.winner)]
            return Message("hanamikoji.more_points", n=MAX_ROUNDS, winner=win, more=more, less=less)
        return Message("hanamikoji.tie", n=MAX_ROUNDS, points=pts["A"])

    def to_dict(self, names: dict | None = None) -> dict:
        return {
            "winner": self.winner,
            "decided_after_round": self.decided_after_round,
            "by": self.by,
            "points": dict(self.points),
            "geishas": dict(self.geishas),
            "conditions": dict(self.conditions),
            "text": self.text(names),
        }


def decide(number: int, points: dict, geishas: dict) -> MatchOutcome | None:
    """The outcome after round ``number``, or None when another round is played."""
    met = {s: condition(points[s], geishas[s]) for s in SIDES}
    common = {"points": dict(points), "geishas": dict(geishas), "conditions": met}
    meeting = [s for s in SIDES if met[s]]
    if len(meeting) == 1:
        return MatchOutcome(meeting[0], number, "condition", **common)
    if len(meeting) == 2:
        # Even in round 3: more points wins, no 4th round.
        best = max(SIDES, key=lambda s: points[s])
        winner = best if points[best] > points[other(best)] else None  # unreachable tie
        return MatchOutcome(winner, number, "both_conditions", **common)
    if number < MAX_ROUNDS:
        return None
    if points["A"] == points["B"]:
        return MatchOutcome(None, number, "tie", **common)
    best = "A" if points["A"] > points["B"] else "B"
    return MatchOutcome(best, number, "points_after_last_round", **common)


@dataclass(frozen=True)
class RoundResult:
    """One scored round: the counts, who started, the tokens before and after, the standing.

    ``to_dict()`` is the command's contract: ``round``, ``favours``, ``points``, ``geishas``;
    ``detail_dict()`` adds the rest."""

    number: int
    first: str
    counts: RoundCounts
    favours_before: tuple
    favours: tuple
    points: dict = field(hash=False)
    geishas: dict = field(hash=False)
    outcome: MatchOutcome | None = None

    @property
    def moved(self) -> tuple:
        """Indices of the geishas whose token changed place this round."""
        return tuple(
            i
            for i, (a, b) in enumerate(zip(self.favours_before, self.favours, strict=True))
            if a != b
        )

    def reason(self, names: dict | None = None) -> Message:
        if self.outcome is not None:
            return self.outcome.text(names)
        nxt = _who(other(self.first), names)
        return Message("hanamikoji.next_round", n=self.number, next=self.number + 1, starts=nxt)

    def to_dict(self) -> dict:
        return {
            "round": self.number,
            "favours": list(self.favours),
            "points": dict(self.points),
            "geishas": dict(self.geishas),
        }

    def detail_dict(self, names: dict | None = None) -> dict:
        return {
            **self.to_dict(),
            "first": self.first,
            "counts": self.counts.to_dict(),
            "favours_before": list(self.favours_before),
            "moved": [GEISHAS[i].id for i in self.moved],
            "reason": self.reason(names),
        }


# ---------------------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------------------

EVENT_TYPES: dict[str, type[Event]] = {}
MAX_NAME_LENGTH = 40


def _name(value, what: str) -> str:
    """A player's name, single-spaced; ``what``: the message id of what it names."""
    if not isinstance(value, str) or not value.strip():
        raise HanamikojiError(Message("refusal.name_empty", what=Message(what), value=repr(value)))
    value = " ".join(value.split())
    if len(value) > MAX_NAME_LENGTH:
        raise HanamikojiError(
            Message("refusal.name_at_most", what=Message(what), most=MAX_NAME_LENGTH)
        )
    return value


@dataclass(frozen=True)
class Event(EventRecord):
    """Base of the Hanamikoji events: a ``type`` and a few plain fields, JSON round-trip
    (``companion.game.events``, as the Koi-Koi events, in a registry of their own)."""

    registry: ClassVar[dict[str, type]] = EVENT_TYPES
    error: ClassVar[type[CompanionError]] = HanamikojiError
    noun: ClassVar[tuple[str, str]] = ("phrase.a_hanamikoji_event", "phrase.hanamikoji_event")

    def describe(self, names: dict | None = None) -> str:
        return self.type.replace("_", " ")

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class HanamikojiStarted(Event):
    """Two players (A then B) and who starts round 1 (``first``: "A", "B" or a name)."""

    type: ClassVar[str] = "hanamikoji_started"
    players: tuple = required(())
    first: str = "A"

    def __post_init__(self):
        players = self.players
        if isinstance(players, str) or not isinstance(players, list | tuple):
            raise HanamikojiError(Message("refusal.two_names"))
        players = tuple(_name(p, "field.player_name") for p in players)
        if len(players) != 2:
            raise HanamikojiError(Message("refusal.two_players", n=len(players)))
        if players[0].casefold() == players[1].casefold():
            raise HanamikojiError(Message("refusal.same_name"))
        first = _name(self.first, "field.first_player")
        if first not in SIDES:
            folded = [p.casefold() for p in players]
            if first.casefold() not in folded:
                raise HanamikojiError(Message("refusal.first_player", name=repr(first)))
            first = SIDES[folded.index(first.casefold())]
        object.__setattr__(self, "players", players)
        object.__setattr__(self, "first", first)

    def describe(self, names: dict | None = None) -> Message:
        a, b = self.players
        starts = self.players[SIDES.index(self.first)]
        return Message("hanamikoji.started", a=a, b=b, starts=starts)


@dataclass(frozen=True)
class ItemsSet(Event):
    """During a round, the items a player has before a geisha (the tablet's + and −)."""

    type: ClassVar[str] = "items_set"
    player: str = required()
    geisha: str = required()
    count: int = required(0)

    def __post_init__(self):
        object.__setattr__(self, "player", _name(self.player, "field.player"))
        object.__setattr__(self, "geisha", GEISHAS[geisha_index(self.geisha)].id)
        object.__setattr__(
            self, "count", _count(self.count, GEISHAS[geisha_index(self.geisha)], self.player)
        )

    def describe(self, names: dict | None = None) -> Message:
        g = GEISHAS[geisha_index(self.geisha)]
        player = (names or {}).get(self.player, self.player)
        said = "hanamikoji.item_set" if self.count == 1 else "hanamikoji.items_set"
        return Message(said, player=player, n=self.count, geisha=g.name)


@dataclass(frozen=True)
class RoundScored(Event):
    """The round ends: score ``counts`` (``A1,...,A7:B1,...,B7``), or when absent the counts
    set with ``items_set`` during the round; the log keeps the counts scored."""

    type: ClassVar[str] = "round_scored"
    counts: str | None = None

    def __post_init__(self):
        if self.counts is not None:
            object.__setattr__(self, "counts", RoundCounts.from_value(self.counts).text)

    def describe(self, names: dict | None = None) -> Message:
        if self.counts:
            return Message("hanamikoji.round_scored_counts", counts=self.counts)
        return Message("hanamikoji.round_scored")


@dataclass(frozen=True)
class Undo(UndoEvent, Event):
    pass


# ---------------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------------


class HanamikojiState(GameState):
    """A match as of its last event. Never mutated: ``apply`` returns a new one."""

    game = "hanamikoji"
    rounds_planned = MAX_ROUNDS
    teams = None

    def __init__(self):
        self.names: dict[str, str] = {}  # "A"/"B" -> name
        self.first = "A"  # who starts round 1
        self.rounds: list[RoundResult] = []
        self.counts = RoundCounts()  # the round being played, as set on the tablet
        self.favours: tuple = NO_FAVOURS
        self.outcome: MatchOutcome | None = None
        self.log: EventLog = EventLog()
        self.warnings: list[str] = []
        self._previous: HanamikojiState | None = None

    # -- reading -----------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return bool(self.names)

    @property
    def phase(self) -> str:
        if not self.started:
            return "not_started"
        return "finished" if self.finished else "in_round"

    @property
    def players(self) -> tuple:
        return tuple(self.names[s] for s in SIDES) if self.names else ()

    @property
    def round_number(self) -> int:
        """The round being played, or the last one once the match is decided."""
        return len(self.rounds) if self.finished else len(self.rounds) + 1

    def first_of(self, number: int) -> str:
        """Who starts round ``number``: the first player alternates each round."""
        return self.first if number % 2 == 1 else other(self.first)

    @property
    def first_player(self) -> str:
        return self.first_of(self.round_number)

    @property
    def points(self) -> dict:
        return standing(self.favours)[0]

    @property
    def geishas(self) -> dict:
        return standing(self.favours)[1]

    @property
    def totals(self) -> dict:
        """Points by player name (what the match list shows)."""
        return {self.names[s]: p for s, p in self.points.items()} if self.names else {}

    def members(self, side: str) -> tuple:
        return (side,)

    @property
    def winner(self) -> str | None:
        return self.outcome.winner if self.outcome else None

    @property
    def decided_after_round(self) -> int | None:
        return self.outcome.decided_after_round if self.outcome else None

    def side_of(self, name: str) -> str:
        """The label "A" or "B" for a label or a player's name (case does not matter)."""
        text = " ".join(str(name).split())
        if text in SIDES:
            return text
        for side, player in self.names.items():
            if player.casefold() == text.casefold():
                return side
        names = Listing(self.players) if self.players else Message("phrase.none_yet")
        raise HanamikojiError(Message("refusal.unknown_player", name=repr(name), names=names))

    def contract_dict(self) -> dict:
        """The command's JSON: ``rounds``, ``winner``, ``decided_after_round``."""
        return {
            "rounds": [r.to_dict() for r in self.rounds],
            "winner": self.winner,
            "decided_after_round": self.decided_after_round,
        }

    def to_dict(self) -> dict:
        return {
            "game": self.game,
            "phase": self.phase,
            "players": dict(self.names),
            "first": self.first,
            "round_number": self.round_number,
            "first_player": self.first_player,
            "counts": self.counts.to_dict(),
            "favours": list(self.favours),
            "points": self.points,
            "geishas": self.geishas,
            "rounds": [r.detail_dict(self.names) for r in self.rounds],
            "winner": self.winner,
            "decided_after_round": self.decided_after_round,
            "outcome": self.outcome.to_dict(self.names) if self.outcome else None,
            "events": len(self.log),
        }

    @property
    def text(self) -> str:
        if not self.started:
            return "No match started."
        lines = [f"Hanamikoji: {self.names['A']} (A) vs {self.names['B']} (B)"]
        for r in self.rounds:
            lines.extend(round_lines(r, self.names))
        if self.outcome:
            k = self.decided_after_round
            if self.winner:
                lines.append(f"{_who(self.winner, self.names)} wins the match after round {k}.")
            else:
                lines.append(f"The match is a tie after round {k}.")
        else:
            lines.append(
                f"Round {self.round_number} of at most {MAX_ROUNDS} is next, "
                f"{_who(self.first_player, self.names)} starts."
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<HanamikojiState round {self.round_number} {self.phase}>"

    COPIED = ("names", "rounds", "warnings")


def round_lines(r: RoundResult, names: dict) -> list[str]:
    """A scored round as a small table (text output)."""
    a, b = names.get("A", "A"), names.get("B", "B")
    w = max(len(a), len(b), 3)
    lines = [
        f"Round {r.number} ({_who(r.first, names)} starts)",
        f"  {'Geisha':<11}{a:>{w}}  {b:>{w}}  favour",
    ]
    for i, g in enumerate(GEISHAS):
        owner = r.favours[i]
        token = names.get(owner, owner) if owner else "-"
        moved = " (moved)" if i in r.moved else ""
        lines.append(
            f"  {g.name + ' ' + str(g.value):<11}{r.counts.a[i]:>{w}}  {r.counts.b[i]:>{w}}"
            f"  {token}{moved}"
        )
    lines.append(
        f"  {a}: {r.geishas['A']} geishas, {r.points['A']} points · "
        f"{b}: {r.geishas['B']} geishas, {r.points['B']} points"
    )
    lines.append(f"  {r.reason(names)}")
    return lines


# ---------------------------------------------------------------------------------------------
# apply / replay
# ---------------------------------------------------------------------------------------------


def apply(state: HanamikojiState | None, event) -> HanamikojiState:
    """The state after ``event``; HanamikojiError (state unchanged) when it is refused."""
    state = state or HanamikojiState()
    event = Event.from_dict(event)
    if isinstance(event, Undo):
        return undo(state, replay, HanamikojiError, apply)
    if not state.started and not isinstance(event, HanamikojiStarted):
        raise HanamikojiError(Message("refusal.no_hanamikoji_match"))
    if state.started and isinstance(event, HanamikojiStarted):
        raise HanamikojiError(Message("refusal.already_started"))
    if state.finished and isinstance(event, ItemsSet | RoundScored):
        number = len(state.rounds) + 1
        if number > MAX_ROUNDS:
            raise HanamikojiError(Message("refusal.max_rounds", most=MAX_ROUNDS, n=number))
        raise HanamikojiError(
            Message(
                "refusal.decided",
                n=state.decided_after_round,
                outcome=state.outcome.text(state.names).without_stop(),
                next=number,
            )
        )
    new = state._copy()
    logged = _HANDLERS[event.type](new, event) or event
    remember(new, state, logged)
    return new


def replay(events) -> HanamikojiState:
    """Fold a whole log; the error names the first refused event (1-based)."""
    return replay_log(events, apply, HanamikojiError) or HanamikojiState()


def play(rounds, players=("A", "B"), first: str = "A") -> HanamikojiState:
    """A whole match from the counts of each round (texts or RoundCounts), as the command
    reads them; the first refused round raises its own sentence."""
    state = apply(None, HanamikojiStarted(players=tuple(players), first=first))
    for counts in rounds:
        state = apply(state, RoundScored(counts=RoundCounts.from_value(counts, state.names).text))
    return state


def _started(s: HanamikojiState, e: HanamikojiStarted):
    s.names = dict(zip(SIDES, e.players, strict=True))
    s.first = e.first


def _items_set(s: HanamikojiState, e: ItemsSet):
    side = s.side_of(e.player)
    i = geisha_index(e.geisha)
    g = GEISHAS[i]
    who = s.names[side]
    if s.counts.side(side)[i] == e.count:
        raise HanamikojiError(Message("refusal.already_has", who=who, n=e.count, geisha=g.name))
    counts = s.counts.with_count(side, i, e.count)
    counts.check_geishas(s.names)
    if counts.total(side) > ITEMS_PER_PLAYER:
        raise HanamikojiError(
            Message("refusal.would_have", who=who, n=counts.total(side), rule=EIGHT_ITEMS)
        )
    s.counts = counts
    return dataclasses.replace(e, player=side)


def _round_scored(s: HanamikojiState, e: RoundScored):
    counts = s.counts if e.counts is None else RoundCounts.parse(e.counts)
    counts.check(s.names)
    number = len(s.rounds) + 1
    favours = score_round(counts, s.favours)
    points, geishas = standing(favours)
    outcome = decide(number, points, geishas)
    s.rounds.append(
        RoundResult(
            number, s.first_of(number), counts, s.favours, favours, points, geishas, outcome
        )
    )
    s.favours = favours
    s.outcome = outcome
    s.counts = RoundCounts()
    return dataclasses.replace(e, counts=counts.text)


_HANDLERS = {
    "hanamikoji_started": _started,
    "items_set": _items_set,
    "round_scored": _round_scored,
}

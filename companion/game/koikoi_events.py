"""The Koi-Koi match's events (every Hanafuda rule set's): what can be recorded. Pure: no
I/O, no clock, no database.

Each event is a frozen dataclass with a ``type`` (``EVENT_TYPES`` holds them by type) that
refuses a malformed field in one sentence (``IllegalEvent``) and says what it did in the log
(``describe``); ``Event.from_dict`` / ``event.to_dict()`` round-trip them through JSON (what
every event family shares is ``companion.game.events``). How an event changes a match is
``companion.game.engine``'s to say.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from companion import CompanionError
from companion.game.cards import CODE_RE, CardError, Deck, normalize_code
from companion.game.events import EventRecord, UndoEvent, omitted_when_empty, required
from companion.game.messages import CardCode, Listing, Message
from companion.game.rules import RuleSet


class IllegalEvent(CompanionError):
    """An event the match cannot accept (or a malformed one); the state is unchanged."""


# ---------------------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------------------

EVENT_TYPES: dict[str, type[Event]] = {}
MAX_NAME_LENGTH = 40


def _field(what: str | Message) -> Message:
    """What a refusal names: a field's message id ("field.player_name") or its Message."""
    return what if isinstance(what, Message) else Message(what)


def _name(value, what: str | Message) -> str:
    if not isinstance(value, str) or not value.strip():
        raise IllegalEvent(Message("refusal.name_empty", what=_field(what), value=repr(value)))
    value = " ".join(value.split())
    if len(value) > MAX_NAME_LENGTH:
        raise IllegalEvent(
            Message(
                "refusal.name_too_long",
                what=_field(what),
                value=repr(value[:20]),
                most=MAX_NAME_LENGTH,
            )
        )
    return value


def _check_source(event) -> None:
    if event.source is not None:
        what = Message("field.event_source", event=event.type)
        object.__setattr__(event, "source", _name(event.source, what))


def _card_text(value, what: str = "field.card") -> str:
    """A card code (normalized, ``8-1`` -> ``08-1``) or a card name resolved later by the deck."""
    if not isinstance(value, str) or not value.strip():
        raise IllegalEvent(Message("refusal.card_code", what=_field(what), value=repr(value)))
    if CODE_RE.match(value):
        try:
            return normalize_code(value)
        except CardError as exc:
            raise IllegalEvent(exc.sentence) from None
    return value.strip()


def _card_list(value, what: str, refusal: str) -> tuple:
    """Cards given as a list, or as one text of codes separated by commas (a form's);
    ``refusal``: the message id for anything else."""
    if isinstance(value, str):
        value = [c for c in value.split(",") if c.strip()]
    if not isinstance(value, list | tuple):
        raise IllegalEvent(Message(refusal))
    return tuple(_card_text(c, what) for c in value)


def _whole(value, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        text = value.strip() if isinstance(value, str) else ""
        # ASCII digits only, and few of them: "²" or "٣" are not numbers an event holds, and
        # int() of 5,000 digits fails.
        if text.isascii() and text.isdigit() and len(text) <= 18:
            value = int(text)
        else:
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:36] + "..."
            raise IllegalEvent(Message("refusal.whole_number", what=_field(what), value=shown))
    if not low <= value <= high:
        digits = len(str(value))
        shown = str(value) if digits <= 20 else Message("phrase.digits", n=digits)
        raise IllegalEvent(
            Message("refusal.between", what=_field(what), low=low, high=high, value=shown)
        )
    return value


def team_label(team: str, members) -> str:
    """A team as the log names it: its name, and its members unless the name says them."""
    together = " & ".join(members)
    return team if team == together else Message("event.team", team=team, members=together)


def hand_kind(kind: str) -> str:
    """A dealt hand's kind (``teshi``) as a message when the engine knows it."""
    return Message(f"hand.{kind}") if kind in HAND_KINDS else kind


def hand_what(kind: str) -> str:
    """What a dealt hand of this kind holds, in words (the kind itself when unknown)."""
    return Message(f"hand.{kind}_what") if kind in HAND_KINDS else kind


HAND_KINDS = ("teshi", "kuttsuki", "dealt_yaku")


@dataclass(frozen=True)
class Event(EventRecord):
    """Base of all Koi-Koi events: a ``type`` string and a few plain fields.

    ``Event.from_dict({"type": "card_captured", "player": "Aiko", "card": "08-1"})`` builds the
    right subclass; ``event.to_dict()`` gives it back, ready for JSON.
    """

    registry: ClassVar[dict[str, type]] = EVENT_TYPES
    error: ClassVar[type[CompanionError]] = IllegalEvent
    noun: ClassVar[tuple[str, str]] = ("phrase.an_event", "phrase.event")

    def describe(self, teams: dict | None = None) -> str:
        """What the event did, one line of the tablet's log: a Message (``teams``: the
        match's, as the engine seated them; only match_started names them)."""
        return self.type.replace("_", " ")

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class MatchStarted(Event):
    """The set-up: players (or team names), rule set with its TOML text, options, rounds, Oya.

    ``rules_text`` makes a replay independent of the preset file; when it is empty (hand-written
    case files) the preset named ``rules`` is loaded. ``teams`` maps a team name (one of
    ``players``) to its members, whose captures are pooled.
    """

    type: ClassVar[str] = "match_started"
    players: tuple = required(())
    rules: str = "livret"
    rules_text: str = omitted_when_empty("")
    options: dict = field(default_factory=dict, hash=False)
    rounds: int | None = None
    oya: str | None = None
    teams: dict | None = field(default=None, hash=False)
    # the names of the deck the camera was taught (``Deck.names_data``): what the pages call
    # the cards; the rules score the same slots
    deck: dict | None = field(default=None, hash=False)

    def __post_init__(self):
        if self.deck is not None:
            try:
                Deck.from_names_data(self.deck)
            except CardError as exc:
                raise IllegalEvent(exc.sentence) from None
        players = self.players
        if isinstance(players, str) or not isinstance(players, list | tuple):
            raise IllegalEvent(Message("refusal.players_list"))
        players = tuple(_name(p, "field.player_name") for p in players)
        if len(set(players)) != len(players):
            raise IllegalEvent(Message("refusal.same_name"))
        object.__setattr__(self, "players", players)
        object.__setattr__(self, "rules", _name(self.rules, "field.rule_set_name"))
        if not isinstance(self.rules_text, str):
            raise IllegalEvent(Message("refusal.rules_text"))
        if not isinstance(self.options, dict) or not all(isinstance(k, str) for k in self.options):
            raise IllegalEvent(Message("refusal.options_map"))
        object.__setattr__(self, "options", dict(sorted(self.options.items())))
        if self.rounds is not None:
            rounds = _whole(self.rounds, "field.number_of_rounds", 1, 48)
            object.__setattr__(self, "rounds", rounds)
        if self.oya is not None:
            object.__setattr__(self, "oya", _name(self.oya, "field.first_oya"))
        if self.teams is not None:
            if not isinstance(self.teams, dict):
                raise IllegalEvent(Message("refusal.teams_map"))
            teams = {}
            for team, members in self.teams.items():
                if isinstance(members, str) or not isinstance(members, list | tuple) or not members:
                    raise IllegalEvent(Message("refusal.team_members", team=repr(team)))
                names = tuple(_name(m, "field.member_name") for m in members)
                teams[_name(team, "field.team_name")] = names
            object.__setattr__(self, "teams", teams)

    @classmethod
    def new(
        cls,
        players,
        rules: str = "livret",
        *,
        rounds=None,
        oya=None,
        options=None,
        teams=None,
        deck=None,
    ):
        """A match_started carrying the preset's current TOML text (what a store should log);
        ``deck``: the taught deck's names (``Deck.names_data``), or None."""

        ruleset = RuleSet.load(rules)
        return cls(
            players=tuple(players),
            rules=ruleset.name,
            rules_text=ruleset.source_text,
            options=dict(options or {}),
            rounds=rounds,
            oya=oya,
            teams=teams,
            deck=deck,
        )

    def describe(self, teams: dict | None = None) -> Message:
        players = list(self.players)
        if self.teams:  # named teams: the players are the team names, in seat order
            teams = {p: self.teams[p] for p in players if p in self.teams}
        fields = {"rules": self.rules, "rounds": self.rounds, "oya": self.oya}
        if teams:
            sides = [team_label(t, members) for t, members in teams.items()]
            return Message("event.match_started_teams", sides=Listing(sides, " vs "), **fields)
        return Message("event.match_started", sides=Listing(players, " vs "), **fields)


@dataclass(frozen=True)
class RoundStarted(Event):
    """A new round is dealt. ``oya`` defaults to the one the rules name; ``field_brights`` to
    the brights among ``field`` (the dealt field cards, optional); ``month`` to the round
    number (round 13 is month 1 again)."""

    type: ClassVar[str] = "round_started"
    oya: str | None = None
    field_brights: int | None = None
    field: tuple = omitted_when_empty(())
    month: int | None = None  # the round's month (tsuki-fuda); default: round n is month n

    def __post_init__(self):
        if self.month is not None:
            object.__setattr__(self, "month", _whole(self.month, "field.month", 1, 12))
        if self.oya is not None:
            object.__setattr__(self, "oya", _name(self.oya, "field.oya"))
        if self.field_brights is not None:
            object.__setattr__(
                self, "field_brights", _whole(self.field_brights, "field.field_brights", 0, 5)
            )
        cards = _card_list(self.field, "field.field_card", "refusal.field_list")
        object.__setattr__(self, "field", cards)

    def describe(self, teams: dict | None = None) -> Message:
        if self.oya is None:  # a hand-written log: the rules name the Oya
            return Message("event.round_started_by_rules")
        if self.field_brights:
            return Message("event.round_started_brights", oya=self.oya, count=self.field_brights)
        return Message("event.round_started", oya=self.oya)


@dataclass(frozen=True)
class _PlayerEvent(Event):
    player: str = required()

    def __post_init__(self):
        object.__setattr__(self, "player", _name(self.player, "field.player"))


@dataclass(frozen=True)
class _CardEvent(_PlayerEvent):
    """An event about one of a player's captures; its log line is the template named after
    its type ("event.capture_checked")."""

    card: str = required()

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "card", _card_text(self.card))

    def describe(self, teams: dict | None = None) -> Message:
        return Message(f"event.{self.type}", player=self.player, card=CardCode(self.card))


@dataclass(frozen=True)
class CardCaptured(_CardEvent):
    """A card taken into a player's captures. The camera adds what scoring ignores: ``source``
    ("camera"), ``confidence`` (0..1), ``check`` (true: the tablet asks "check this card") and
    ``alternatives`` (the next likeliest codes, offered first when correcting)."""

    type: ClassVar[str] = "card_captured"
    source: str | None = None
    confidence: float | None = None
    check: bool | None = None
    alternatives: tuple | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.source is not None:
            object.__setattr__(self, "source", _name(self.source, "field.capture_source"))
        if self.confidence is not None:
            value = self.confidence
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise IllegalEvent(Message("refusal.confidence", value=repr(value)))
            object.__setattr__(self, "confidence", round(float(value), 4))
        if self.check is not None and not isinstance(self.check, bool):
            raise IllegalEvent(Message("refusal.check_flag", value=repr(self.check)))
        if self.alternatives is not None:
            alts = self.alternatives
            if isinstance(alts, str) or not isinstance(alts, list | tuple):
                raise IllegalEvent(Message("refusal.alternatives_list"))
            alts = tuple(_card_text(c, "field.alternative_card") for c in alts)
            object.__setattr__(self, "alternatives", alts or None)


@dataclass(frozen=True)
class CaptureChecked(_CardEvent):
    """A capture flagged for a check was looked at and is right as read."""

    type: ClassVar[str] = "capture_checked"


@dataclass(frozen=True)
class CaptureCorrected(_CardEvent):
    """A misread capture: ``card`` was really ``new_card``."""

    type: ClassVar[str] = "capture_corrected"
    new_card: str = required()

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "new_card", _card_text(self.new_card, "field.new_card"))

    def describe(self, teams: dict | None = None) -> Message:
        return Message(
            "event.capture_corrected",
            player=self.player,
            card=CardCode(self.card),
            new_card=CardCode(self.new_card),
        )


@dataclass(frozen=True)
class CaptureRemoved(_CardEvent):
    """A capture taken back (read by mistake: the card is not the player's)."""

    type: ClassVar[str] = "capture_removed"


@dataclass(frozen=True)
class _CallEvent(_PlayerEvent):
    """A Koi or a Stop; ``source`` ("camera"): read from the table, not tapped. ``logged``:
    its log line's message ids, tapped and read."""

    logged: ClassVar[tuple[str, str]] = ("", "")
    source: str | None = None

    def __post_init__(self):
        super().__post_init__()
        _check_source(self)

    def describe(self, teams: dict | None = None) -> Message:
        tapped, read = self.logged
        return Message(read if self.source == "camera" else tapped, player=self.player)


@dataclass(frozen=True)
class KoiCalled(_CallEvent):
    """A Koi call: play goes on (read from the table: play going on after a new yaku)."""

    type: ClassVar[str] = "koi_called"
    logged: ClassVar[tuple[str, str]] = ("event.koi_called", "event.koi_read")


@dataclass(frozen=True)
class StopCalled(_CallEvent):
    """A Stop: the round ends (read from the table: the cards being gathered)."""

    type: ClassVar[str] = "stop_called"
    logged: ClassVar[tuple[str, str]] = ("event.stop_called", "event.stop_read")


@dataclass(frozen=True)
class HandDeclared(_PlayerEvent):
    """A dealt-hand instant win: ``teshi`` (4 of a month), ``kuttsuki`` (4 pairs) or
    ``dealt_yaku`` (a complete yaku in the dealt hand, ferme-florale). With ``cards`` (the
    dealt hand) the engine checks that the hand qualifies."""

    type: ClassVar[str] = "hand_declared"
    kind: str = required()
    cards: tuple = omitted_when_empty(())  # the dealt hand: when given, it must qualify

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.kind, str) or not self.kind.strip():
            raise IllegalEvent(Message("refusal.hand_kind"))
        object.__setattr__(self, "kind", self.kind.strip().lower())
        cards = _card_list(self.cards, "field.hand_card", "refusal.declared_hand_list")
        object.__setattr__(self, "cards", cards)

    def describe(self, teams: dict | None = None) -> Message:
        return Message("event.hand_declared", player=self.player, kind=hand_kind(self.kind))


@dataclass(frozen=True)
class FieldBrightsSet(Event):
    type: ClassVar[str] = "field_brights_set"
    count: int = required(0)

    def __post_init__(self):
        object.__setattr__(self, "count", _whole(self.count, "field.field_brights", 0, 5))

    def describe(self, teams: dict | None = None) -> Message:
        return Message("event.field_brights_set", count=self.count)


@dataclass(frozen=True)
class CardsRanOut(Event):
    type: ClassVar[str] = "cards_ran_out"

    def describe(self, teams: dict | None = None) -> Message:
        return Message("event.cards_ran_out")


MAX_ENTERED_POINTS = 999  # more than any round scores, short of a typing slip's 10000


@dataclass(frozen=True)
class RoundEntered(Event):
    """A round played away from the tablet, entered by hand: ``winner`` (None: a draw) scored
    ``points``, paid as the rules pay a round. ``oya`` defaults to the one the rules name."""

    type: ClassVar[str] = "round_entered"
    winner: str | None = None
    points: int = 0
    oya: str | None = None

    def __post_init__(self):
        winner = self.winner
        if isinstance(winner, str) and not winner.strip():
            winner = None  # a form's "nobody": a draw
        if winner is not None:
            object.__setattr__(self, "winner", _name(winner, "field.winner"))
        else:
            object.__setattr__(self, "winner", None)
        low = 1 if winner is not None else 0
        if winner is None and self.points not in (0, "0", None):
            raise IllegalEvent(Message("refusal.drawn_round_points"))
        points = _whole(
            0 if self.points is None else self.points,
            "field.round_points",
            low,
            MAX_ENTERED_POINTS,
        )
        object.__setattr__(self, "points", points)
        if self.oya is not None:
            object.__setattr__(self, "oya", _name(self.oya, "field.oya"))

    def to_dict(self) -> dict:
        data = super().to_dict()
        if self.winner is None:
            data.pop("points", None)
        return data

    def describe(self, teams: dict | None = None) -> Message:
        if self.winner is None:
            return Message("event.round_entered_draw")
        return Message("event.round_entered", winner=self.winner, points=self.points)


@dataclass(frozen=True)
class Redeal(Event):
    """The field was dealt with 4 of a month or 4 pairs: the round is dealt again, nothing scored."""

    type: ClassVar[str] = "redeal"

    def describe(self, teams: dict | None = None) -> Message:
        return Message("event.redeal")


@dataclass(frozen=True)
class FieldDealt(Event):
    """The dealt field, read once it lies (by the camera after a redeal, or after a round opened
    without it): before the round's first capture only."""

    type: ClassVar[str] = "field_dealt"
    field: tuple = required()
    field_brights: int | None = None

    def __post_init__(self):
        if isinstance(self.field, str) or not isinstance(self.field, list | tuple):
            raise IllegalEvent(Message("refusal.dealt_field_list"))
        object.__setattr__(self, "field", tuple(_card_text(c) for c in self.field))
        if self.field_brights is not None:
            object.__setattr__(
                self, "field_brights", _whole(self.field_brights, "field.field_brights", 0, 5)
            )

    def describe(self, teams: dict | None = None) -> Message:
        return Message("event.field_dealt", cards=Listing(CardCode(c) for c in self.field))


@dataclass(frozen=True)
class Undo(UndoEvent, Event):
    pass

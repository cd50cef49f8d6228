"""The match engine: events in, match state out. Pure: no I/O, no clock, no database.

A match is its event log. ``apply(state, event)`` returns a new :class:`MatchState` (the old
one is untouched) or raises :class:`IllegalEvent` with one sentence saying why;
``replay(events)`` folds a whole log. Every fix (a misread card, a wrong Koi) is a new event,
so nothing recorded is ever lost, and ``undo`` steps back over the latest effective event.

    state = replay([
        {"type": "match_started", "players": ["Aiko", "Ben"], "rules": "livret", "rounds": 6},
        {"type": "round_started"},
        {"type": "card_captured", "player": "Aiko", "card": "08-1"},
    ])
    state.hands["Aiko"].total, state.pending_decision, state.totals

What the rule set decides (payment, exhausted rounds, next Oya, tie-break...) is read from
``rules.round`` and ``rules.match`` (see ``docs/RULES_FORMAT.md``); yaku and multipliers come
from ``scoring.score_hand``. Where the seeds leave a gap, the engine decides:

- A round is opened by ``round_started`` (Oya by the rules unless named); captures, Koi, Stop
  and corrections outside a round are refused. ``redeal`` restarts the round (same number and
  Oya, nothing scored).
- A Koi/Stop decision is pending for a player whose yaku are worth more than at his last Koi
  (a new yaku or a raised one). Captures may go on while it is pending (a turn is two captures,
  and the camera lags), but ``cards_ran_out`` waits for it; Stop needs it.
- Dealt-hand declarations come before the round's first capture and score
  ``instant_win_points`` flat (no multiplier), paid like any round. With ``cards`` (the
  dealt hand) the hand must qualify; ``round.hand_cards = "required"`` makes them compulsory.
- The round's month (yaku of the month) is the round number (13 is January again) unless
  ``round_started`` names it.
- A Koi call sets the yaku baseline *after* rescoring, so values the call itself raises
  (viewings worth 3 after Koi, the Koi-Koi bonus line) are no new yaku.
- ``match.bank``: totals start at the bank; the match ends after the round that leaves a
  player at 0 or below (or after the planned rounds), the tie-break rule applying as usual.
- ``last_yaku_maker_unless_oya``: since no decision can be left open when the cards run out,
  the last yaku maker is the last player who called Koi. ``oya_scores``: the Oya scores
  ``exhausted_points`` whether or not someone had called Koi.
- ``zero_sum`` with 3 players: each loser pays the winner what he wins (totals add up to 0).
- ``next_oya = "highest_total"``: on a tie at the top the dealer keeps the deal (else the first
  of the tied in seat order). ``draw_oya = "changes"``: the next player in seat order.
- ``card_values`` rounds end with ``cards_ran_out``: everyone writes his card values down, the
  highest wins the round (a tie: no winner, the Oya follows ``draw_oya``); a note is added when
  the values do not add up to the deck's 264.
- ``tie_break = "extra_round"``: extra rounds are played while the match stays tied.
- Teams: with the teams option, 4 players sit 1 & 3 against 2 & 4 unless ``teams`` names
  them; events may name a member or the team, captures are pooled per team.
- ``round_entered`` records a whole round played away from the tablet: its winner (none for
  a draw) and his points, paid as the rules pay a round, between rounds only; the round's
  result says it was entered by hand. Card-values rule sets, which score every player's
  cards, cannot be entered this way.
- ``undo`` returns the state before the latest effective event; ``match_started`` cannot be
  undone. ``state.log`` holds the effective events, with names resolved to card codes.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from companion import CompanionError
from companion.game import scoring
from companion.game.cards import Card, CardError, Category, Deck, spoken_names
from companion.game.events import EventLog, GameState, Printed, remember, replay_log, undo
from companion.game.koikoi_events import (
    EVENT_TYPES,
    CaptureChecked,
    CaptureCorrected,
    CaptureRemoved,
    CardCaptured,
    CardsRanOut,
    Event,
    FieldBrightsSet,
    FieldDealt,
    HandDeclared,
    IllegalEvent,
    KoiCalled,
    MatchStarted,
    Redeal,
    RoundEntered,
    RoundStarted,
    StopCalled,
    Undo,
    hand_kind,
    hand_what,
    team_label,
)
from companion.game.messages import CardCode, Listing, Message, Named
from companion.game.rules import RuleSet

__all__ = [
    "IllegalEvent",
    "Event",
    "MatchStarted",
    "RoundStarted",
    "CardCaptured",
    "CaptureCorrected",
    "CaptureRemoved",
    "CaptureChecked",
    "KoiCalled",
    "StopCalled",
    "HandDeclared",
    "FieldBrightsSet",
    "CardsRanOut",
    "RoundEntered",
    "Redeal",
    "Undo",
    "FieldDealt",
    "Decision",
    "RoundResult",
    "MatchOutcome",
    "MatchState",
    "apply",
    "replay",
    "team_label",
    "EVENT_TYPES",
]

# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


def _yaku_list(hand) -> Listing:
    """The yaku of a hand with their points: "Akatan 6, Tane 1"."""
    return Listing(Message("yaku.points", name=y.name, points=y.points) for y in hand.yaku)


def _with_base(reason: Message, hand) -> Message:
    """A round's reason followed by its base and multiplier, when something multiplied it."""
    if hand.multiplier == 1:
        return reason
    return Message("round.with_base", reason=reason, base=hand.base, mult=hand.multiplier)


def _plain(obj):
    """to_dict() for scoring results, lists and dicts of them."""
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if isinstance(obj, list | tuple):
        return [_plain(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, Card):
        return obj.code
    return obj


def _signed(n: int) -> str:
    return f"+{n}" if n > 0 else str(n)


@dataclass(frozen=True)
class Decision(Printed):
    """A player formed a yaku (or raised one): Koi or Stop? ``hand`` is the score that made it."""

    player: str
    hand: Any  # scoring.HandScore
    koi_calls: int = 0

    @property
    def text(self) -> str:
        names = ", ".join(f"{y.name} {y.points}" for y in self.hand.yaku)
        return f"{self.player} has {names} ({self.hand.total} points now): Koi or Stop?"

    def to_dict(self) -> dict:
        return {
            "player": self.player,
            "hand": _plain(self.hand),
            "koi_calls": self.koi_calls,
            "text": self.text,
        }


@dataclass(frozen=True)
class RoundResult(Printed):
    """How one round ended. ``winner`` is None for a draw; ``points`` is what each player
    writes down for the round (negative for the loser of a zero-sum round)."""

    number: int
    oya: str
    winner: str | None
    kind: str  # "stop" | "instant" | "exhausted" | "draw" | "card_values" | "entered"
    yaku: tuple = ()  # scoring.YakuScore of the winner
    base: int = 0
    multiplier: int = 1
    multipliers: tuple = ()  # scoring.Multiplier(factor, reason)
    points: dict = field(default_factory=dict, hash=False)
    reason: str = ""  # a Message
    koi: dict = field(default_factory=dict, hash=False)
    tie_break: bool = False
    notes: tuple = ()

    @property
    def total(self) -> int:
        """The winner's score for the round (0 for a draw)."""
        return self.points.get(self.winner, 0) if self.winner else 0

    @property
    def text(self) -> str:
        label = f"Round {self.number}" + (" (tie-break)" if self.tie_break else "")
        pts = ", ".join(f"{p} {_signed(n)}" for p, n in self.points.items())
        return f"{label}: {self.reason} [{pts}]"

    def to_dict(self) -> dict:
        return {
            "number": self.number,
            "oya": self.oya,
            "winner": self.winner,
            "kind": self.kind,
            "yaku": _plain(list(self.yaku)),
            "base": self.base,
            "multiplier": self.multiplier,
            "multipliers": _plain(list(self.multipliers)),
            "points": dict(self.points),
            "reason": self.reason,
            "koi": dict(self.koi),
            "tie_break": self.tie_break,
            "notes": list(self.notes),
            "text": self.text,
        }


@dataclass(frozen=True)
class MatchOutcome(Printed):
    """The end of a match: ``winners`` (several only on a tie the rules do not break)."""

    winners: tuple
    by: str  # "points" | "rounds_won"
    totals: dict = field(hash=False)
    rounds_won: dict = field(hash=False)
    rounds_played: int = 0
    tie_break_rounds: int = 0
    ran_out: tuple = ()  # players whose bank of points ran out (the match ended early)

    @property
    def tie(self) -> bool:
        return len(self.winners) > 1

    @property
    def winner(self) -> str | None:
        return self.winners[0] if len(self.winners) == 1 else None

    @property
    def text(self) -> Message:
        def score(p):
            if self.by == "rounds_won":
                points = Message("standing.points", n=self.totals[p])
                return Message("standing.rounds_won", n=self.rounds_won[p], points=points)
            return Message("standing.points", n=self.totals[p])

        ranked = sorted(self.totals, key=lambda p: self._key(p), reverse=True)
        table = Listing(Message("standing.entry", name=p, value=score(p)) for p in ranked)
        if self.ran_out:
            table = Message("outcome.ran_out", table=table, sides=Listing(self.ran_out, " and "))
        if self.tie:
            return Message("outcome.tie", sides=Listing(self.winners, " and "), table=table)
        return Message("outcome.wins", winner=self.winner, table=table)

    def _key(self, player):
        if self.by == "rounds_won":
            return (self.rounds_won[player], self.totals[player])
        return (self.totals[player],)

    def to_dict(self) -> dict:
        return {
            "winners": list(self.winners),
            "winner": self.winner,
            "tie": self.tie,
            "by": self.by,
            "totals": dict(self.totals),
            "rounds_won": dict(self.rounds_won),
            "rounds_played": self.rounds_played,
            "tie_break_rounds": self.tie_break_rounds,
            "ran_out": list(self.ran_out),
            "text": self.text,
        }


# ---------------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------------


class MatchState(GameState):
    """Everything the page and the summary show, as of the last event. Never mutate one:
    ``apply`` builds a new state and keeps the previous one (for ``undo``)."""

    def __init__(self):
        self.rules = None  # RuleSet, options applied
        self.deck_names = None  # the taught deck's names (a cards.Deck), when one was recorded
        self.rules_name = ""
        self.options: dict = {}
        self.players: tuple = ()  # the scoring sides (team names when playing in teams)
        self.teams: dict | None = None
        self.rounds_planned = 0
        self.round_number = 0  # the current (or last finished) round, 0 before the first
        self.round_in_progress = False
        self.oya: str | None = None  # Oya of the current round
        self.next_oya: str | None = None  # who deals the next round
        self.field_brights = 0
        self.field: tuple = ()  # dealt field cards, when given
        self.month: int | None = None  # the month of the current round (tsuki-fuda yaku)
        self.captures: dict[str, list[Card]] = {}
        self.koi: dict[str, int] = {}  # Koi calls this round
        self.hands: dict = {}  # HandScore per player (yaku mode)
        self.card_values: dict[str, int] = {}  # Hana-Awase values per player (card_values mode)
        self.last_koi: str | None = None  # the last to have made a yaku and continued
        self.rounds: list[RoundResult] = []
        self.totals: dict[str, int] = {}
        self.rounds_won: dict[str, int] = {}
        self.outcome: MatchOutcome | None = None
        self.tie_break = False  # the next/current round is a tie-break
        self.redeals = 0
        self.warnings: list = []  # Messages: code tests their kind, never their words
        self.log: EventLog = EventLog()
        self._members: dict[str, str] = {}  # any accepted name -> side
        self._pending: list[str] = []  # sides owing a Koi/Stop decision, oldest first
        self._baseline: dict[str, dict[str, int]] = {}  # yaku points at the last Koi
        self._owner: dict[str, str] = {}  # card code -> side, this round
        self._checks: dict[str, dict] = {}  # card code -> open check, this round
        self._hand_keys: dict = {}
        self._previous: MatchState | None = None  # the state before, for undo (bounded)

    # -- reading ---------------------------------------------------------------------------

    @property
    def shown_deck(self):
        """The rules' deck under the names of the deck the camera was taught, where the match
        recorded one (``MatchStarted.deck``): what the players call the cards; the rules
        score the same slots."""
        if self.rules is None or self.deck_names is None:
            return None if self.rules is None else self.rules.deck
        return self.rules.deck.renamed_by(self.deck_names)

    @property
    def started(self) -> bool:
        return self.rules is not None

    @property
    def phase(self) -> str:
        """``not_started`` | ``in_round`` | ``between_rounds`` | ``finished``."""
        if not self.started:
            return "not_started"
        if self.finished:
            return "finished"
        return "in_round" if self.round_in_progress else "between_rounds"

    @property
    def pending_decision(self) -> str | None:
        """The player who must call Koi or Stop now, or None."""
        return self._pending[0] if self._pending else None

    @property
    def pending_players(self) -> tuple:
        return tuple(self._pending)

    @property
    def decision(self) -> Decision | None:
        player = self.pending_decision
        if player is None:
            return None
        return Decision(player, self.hands[player], self.koi.get(player, 0))

    @property
    def mode(self) -> str:
        return self.rules.mode if self.rules else "yaku"

    @property
    def checks(self) -> list[dict]:
        """Captures the camera read with doubt, to be confirmed or corrected on the tablet:
        ``{"player", "card", "alternatives": [codes]}``, oldest first."""
        return [
            {"player": c["player"], "card": c["card"], "alternatives": list(c["alternatives"])}
            for c in self._checks.values()
        ]

    def members(self, side: str) -> tuple:
        return tuple(self.teams[side]) if self.teams else (side,)

    def side_of(self, name: str) -> str:
        """The scoring side (the player, or his team) a name in an event stands for."""
        return self._members[self.canonical_name(name)]

    def canonical_name(self, name: str) -> str:
        """A player (or member, or team) name as the match spells it; case does not matter."""
        if name in self._members:
            return name
        folded = [n for n in self._members if n.casefold() == str(name).casefold()]
        if len(folded) == 1:
            return folded[0]
        names = Listing(self._members) if self._members else Message("phrase.none_yet")
        raise IllegalEvent(Message("refusal.unknown_player", name=repr(name), names=names))

    def round_points(self, player: str) -> int:
        """What the player would score if he stopped now (yaku mode) or his card values."""
        if self.mode == "card_values":
            return self.card_values.get(player, 0)
        hand = self.hands.get(player)
        return hand.total if hand else 0

    def to_dict(self) -> dict:
        return {
            "phase": self.phase,
            "rules": self.rules_name,
            "options": dict(self.options),
            "mode": self.mode,
            "players": list(self.players),
            "teams": {k: list(v) for k, v in self.teams.items()} if self.teams else None,
            "rounds_planned": self.rounds_planned,
            "round_number": self.round_number,
            "round_in_progress": self.round_in_progress,
            "tie_break": self.tie_break,
            "oya": self.oya,
            "next_oya": self.next_oya,
            "field_brights": self.field_brights,
            "field": [c.code for c in self.field],
            "month": self.month,
            "captures": {p: [c.code for c in cs] for p, cs in self.captures.items()},
            "koi": dict(self.koi),
            "hands": {p: _plain(h) for p, h in self.hands.items()},
            "card_values": dict(self.card_values),
            "pending_decision": self.pending_decision,
            "decision": self.decision.to_dict() if self.decision else None,
            "rounds": [r.to_dict() for r in self.rounds],
            "totals": dict(self.totals),
            "rounds_won": dict(self.rounds_won),
            "outcome": self.outcome.to_dict() if self.outcome else None,
            "redeals": self.redeals,
            "checks": self.checks,
            "warnings": list(self.warnings),
            "events": len(self.log),
        }

    @property
    def text(self) -> str:
        """The running tally as a few lines of text (CLI, logs)."""
        if not self.started:
            return "No match started."
        lines = [
            f"{self.rules_name}: round {self.round_number}/{self.rounds_planned}"
            + (" (tie-break)" if self.tie_break else "")
            + f", {self.phase.replace('_', ' ')}, Oya {self.oya or self.next_oya}"
        ]
        for p in self.players:
            caps = " ".join(c.code for c in self.captures.get(p, []))
            now = self.round_points(p)
            lines.append(f"  {p}: total {self.totals[p]}, this round {now} [{caps}]")
        if self.decision:
            lines.append(f"  {self.decision.text}")
        for r in self.rounds:
            lines.append(f"  {r.text}")
        if self.outcome:
            lines.append(f"  {self.outcome.text}")
        lines.extend(f"  warning: {w}" for w in self.warnings)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<MatchState {self.rules_name or '-'} round {self.round_number} {self.phase}>"

    # -- copying -----------------------------------------------------------------------------

    COPIED = (
        "koi",
        "hands",
        "card_values",
        "totals",
        "rounds_won",
        "_baseline",
        "_owner",
        "_checks",
        "_hand_keys",
        "options",
        "rounds",
        "_pending",
        "warnings",
    )

    def _copy(self) -> MatchState:
        new = super()._copy()
        new.captures = {p: list(cs) for p, cs in self.captures.items()}  # each player's list too
        return new


# ---------------------------------------------------------------------------------------------
# apply / replay
# ---------------------------------------------------------------------------------------------


def new_state() -> MatchState:
    """The state before any event."""
    return MatchState()


def apply(state: MatchState | None, event: Event | dict) -> MatchState:
    """The state after ``event``; raises IllegalEvent (state unchanged) when it is refused."""
    if state is None:
        state = MatchState()
    event = Event.from_dict(event)
    if isinstance(event, Undo):
        return _undo(state)
    if not state.started and not isinstance(event, MatchStarted):
        raise IllegalEvent(Message("refusal.no_match"))
    if state.started and isinstance(event, MatchStarted):
        raise IllegalEvent(Message("refusal.already_started"))
    if state.finished:
        outcome = state.outcome.text.without_stop()
        raise IllegalEvent(Message("refusal.match_over", outcome=outcome))
    new = state._copy()
    logged = _HANDLERS[event.type](new, event) or event
    remember(new, state, logged)
    new.warnings = _warnings(new)
    return new


def replay(events) -> MatchState:
    """Fold a whole event log (Event objects or dicts) into a state.

    Raises IllegalEvent naming the first refused event (1-based) and why.
    """
    return replay_log(events, apply, IllegalEvent) or MatchState()


def _undo(state: MatchState) -> MatchState:
    if not state.started:
        raise IllegalEvent(Message("refusal.nothing_to_undo"))
    return undo(state, replay, IllegalEvent, apply)


# -- handlers (each mutates the fresh copy it is given) -----------------------------------------


def _match_started(s: MatchState, e: MatchStarted):

    try:
        rules = _rules_for(e)
    except CompanionError as exc:
        raise IllegalEvent(exc.sentence) from None
    if e.deck is not None:
        s.deck_names = Deck.from_names_data(e.deck)
    sides = e.players
    if not sides:
        raise IllegalEvent(Message("refusal.needs_players"))
    teams = e.teams
    if rules.match.teams and teams is None and len(sides) == 4:
        # "Les joueurs sont répartis en alternance d'équipe": seats 1 & 3 against 2 & 4.
        teams = {
            f"{sides[0]} & {sides[2]}": (sides[0], sides[2]),
            f"{sides[1]} & {sides[3]}": (sides[1], sides[3]),
        }
        sides = tuple(teams)
    members: dict[str, str] = {p: p for p in sides}
    if teams is not None:
        if not rules.match.teams:
            raise IllegalEvent(Message("refusal.no_teams", rules=repr(rules.name)))
        if set(teams) != set(sides):
            raise IllegalEvent(Message("refusal.teams_are_players"))
        if len(teams) < 2:
            raise IllegalEvent(Message("refusal.two_teams"))
        for team, team_members in teams.items():
            for m in team_members:
                if m in members:
                    raise IllegalEvent(Message("refusal.twice_in_teams", name=repr(m)))
                members[m] = team
    elif rules.match.teams:
        raise IllegalEvent(Message("refusal.teams_option_on", rules=repr(rules.name)))
    people = len(members) - len(sides) if teams else len(sides)
    if people not in rules.players:
        allowed = Listing(rules.players, " or ")
        raise IllegalEvent(
            Message("refusal.player_count", rules=repr(rules.name), allowed=allowed, n=people)
        )
    rounds = e.rounds if e.rounds is not None else rules.default_rounds
    if rounds not in rules.rounds:
        allowed = Listing(rules.rounds, " or ")
        raise IllegalEvent(
            Message("refusal.round_count", rules=repr(rules.name), allowed=allowed, n=rounds)
        )
    oya = sides[0] if e.oya is None else e.oya
    if oya not in members:
        raise IllegalEvent(Message("refusal.first_oya", oya=repr(oya)))
    s.rules = rules
    s.rules_name = rules.name
    s.options = dict(rules.active_options)
    s.players = sides
    s.teams = dict(teams) if teams else None
    s._members = members
    s.rounds_planned = rounds
    s.next_oya = members[oya]
    s.totals = {p: rules.match.bank for p in sides}
    s.rounds_won = {p: 0 for p in sides}
    s.captures = {p: [] for p in sides}
    s.koi = {p: 0 for p in sides}
    return dataclasses.replace(e, players=sides, teams=teams, rounds=rounds, oya=members[oya])


_RULES_CACHE: dict[tuple, object] = {}
_RULES_CACHE_SIZE = 32


def _rules_for(e: MatchStarted):
    """The event's rule set with its options; parsed once per (text, options), since every
    replay of a stored match starts by building the same (immutable) RuleSet."""
    if not e.rules_text:  # hand-written logs: the preset as it is today
        return RuleSet.load(e.rules).with_options(e.options)
    key = (e.rules_text, tuple(sorted(e.options.items())))
    rules = _RULES_CACHE.get(key)
    if rules is None:
        rules = RuleSet.from_text(e.rules_text).with_options(e.options)
        if len(_RULES_CACHE) >= _RULES_CACHE_SIZE:
            _RULES_CACHE.pop(next(iter(_RULES_CACHE)))
        _RULES_CACHE[key] = rules
    return rules


# Changes to a round's captures: after the round, its last event is undone instead.
_CHANGING_CAPTURES = {
    "action.checking_captures",
    "action.correcting_captures",
    "action.removing_captures",
}


def _need_round(s: MatchState, action: str) -> None:
    """Refuse ``action`` (its message id, "action.recording_captures") with no round under way."""
    if not s.round_in_progress:
        if s.rounds and action in _CHANGING_CAPTURES:
            raise IllegalEvent(Message("refusal.round_over", n=s.round_number))
        nxt = len(s.rounds) + 1
        raise IllegalEvent(Message("refusal.no_round", n=nxt, action=Message(action)))


def _resolve_card(s: MatchState, text: str) -> Card:
    try:
        return s.rules.deck.parse(text)
    except CardError as exc:
        raise IllegalEvent(exc.sentence) from None


def _card_label(s: MatchState, card: Card) -> Message:
    """A card as a refusal names it: its code and its name (in the page's language there)."""
    return Message("phrase.card_label", code=card.code, name=Named(card.name, spoken_names(card)))


def _reset_round(s: MatchState) -> None:
    s.captures = {p: [] for p in s.players}
    s.koi = {p: 0 for p in s.players}
    s._owner = {}
    s._checks = {}
    s._pending = []
    s._baseline = {}
    s._hand_keys = {}
    s.hands = {}
    s.card_values = {}
    s.last_koi = None
    s.field = ()
    s.field_brights = 0
    _rescore(s)


def _dealt_field(s: MatchState, e: RoundStarted | FieldDealt) -> tuple:
    """The event's dealt field as cards of the match's deck; refused when a card is twice."""
    cards = tuple(_resolve_card(s, c) for c in e.field)
    if len(set(cards)) != len(cards):
        raise IllegalEvent(Message("refusal.field_twice"))
    return cards


def _lay_field(s: MatchState, cards: tuple, field_brights: int | None) -> None:
    """The dealt field on the table, with its brights (counted unless the event says)."""
    s.field = cards
    if field_brights is None:
        field_brights = sum(1 for c in cards if c.category is Category.BRIGHT)
    s.field_brights = field_brights


def _round_started(s: MatchState, e: RoundStarted):
    if s.round_in_progress:
        raise IllegalEvent(Message("refusal.round_in_progress", n=s.round_number))
    oya = s.next_oya if e.oya is None else s.side_of(e.oya)
    field_cards = _dealt_field(s, e)
    s.round_number = len(s.rounds) + 1
    s.round_in_progress = True
    s.oya = oya
    _reset_round(s)
    s.month = e.month if e.month is not None else (s.round_number - 1) % 12 + 1
    _lay_field(s, field_cards, e.field_brights)
    _rescore(s)
    return dataclasses.replace(e, oya=oya, field=tuple(c.code for c in field_cards))


def _card_captured(s: MatchState, e: CardCaptured):
    _need_round(s, "action.recording_captures")
    side = s.side_of(e.player)
    card = _resolve_card(s, e.card)
    owner = s._owner.get(card.code)
    if owner is not None:
        label = _card_label(s, card)
        if owner == side:
            raise IllegalEvent(Message("refusal.already_holds", side=side, card=label))
        raise IllegalEvent(Message("refusal.held_by_other", side=side, owner=owner, card=label))
    s.captures[side].append(card)
    s._owner[card.code] = side
    alternatives = tuple(_resolve_card(s, c).code for c in e.alternatives or ())
    if e.check:
        s._checks[card.code] = {"player": side, "card": card.code, "alternatives": alternatives}
    _after_capture_change(s, side)
    return dataclasses.replace(
        e,
        player=s.canonical_name(e.player),
        card=card.code,
        alternatives=alternatives or None,
    )


def _capture_checked(s: MatchState, e: CaptureChecked):
    _need_round(s, "action.checking_captures")
    side = s.side_of(e.player)
    card = _held_card(s, side, e.card)
    if card.code not in s._checks:
        raise IllegalEvent(Message("refusal.no_open_check", card=_card_label(s, card)))
    del s._checks[card.code]
    return dataclasses.replace(e, player=s.canonical_name(e.player), card=card.code)


def _held_card(s: MatchState, side: str, text: str) -> Card:
    card = _resolve_card(s, text)
    if s._owner.get(card.code) != side:
        raise IllegalEvent(Message("refusal.does_not_hold", side=side, card=_card_label(s, card)))
    return card


def _capture_corrected(s: MatchState, e: CaptureCorrected):
    _need_round(s, "action.correcting_captures")
    side = s.side_of(e.player)
    card = _held_card(s, side, e.card)
    new_card = _resolve_card(s, e.new_card)
    if new_card == card:
        raise IllegalEvent(Message("refusal.same_correction", card=card.code))
    owner = s._owner.get(new_card.code)
    if owner is not None:
        label = _card_label(s, new_card)
        raise IllegalEvent(Message("refusal.already_holds", side=owner, card=label))
    caps = s.captures[side]
    caps[caps.index(card)] = new_card
    s._checks.pop(card.code, None)  # a correction answers the check
    del s._owner[card.code]
    s._owner[new_card.code] = side
    _after_capture_change(s, side)
    return dataclasses.replace(
        e, player=s.canonical_name(e.player), card=card.code, new_card=new_card.code
    )


def _capture_removed(s: MatchState, e: CaptureRemoved):
    _need_round(s, "action.removing_captures")
    side = s.side_of(e.player)
    card = _held_card(s, side, e.card)
    s.captures[side].remove(card)
    s._checks.pop(card.code, None)
    del s._owner[card.code]
    _after_capture_change(s, side)
    return dataclasses.replace(e, player=s.canonical_name(e.player), card=card.code)


# A Koi or Stop call: what refuses it under rules without yaku, what it is while no round is on.
_CALLS = {
    "koi": ("refusal.no_yaku_no_koi", "action.calling_koi"),
    "stop": ("refusal.no_yaku_no_stop", "action.calling_stop"),
}


def _need_decision(s: MatchState, side: str, call: str) -> None:
    """Refuse a Koi or Stop call (``call``: "koi" or "stop") that no new yaku asks for."""
    no_yaku, action = _CALLS[call]
    if s.mode == "card_values":
        raise IllegalEvent(Message(no_yaku, rules=repr(s.rules_name)))
    _need_round(s, action)
    if side not in s._pending:
        if s._pending:
            pending = s._pending[0]
            raise IllegalEvent(Message("refusal.whose_decision", pending=pending, side=side))
        raise IllegalEvent(Message("refusal.no_new_yaku", side=side))


def _koi_called(s: MatchState, e: KoiCalled):
    side = s.side_of(e.player)
    _need_decision(s, side, "koi")
    s.koi[side] += 1
    s._pending.remove(side)
    s.last_koi = side
    _rescore(s)  # Koi counts change every player's multipliers (and some yaku values)
    # The yaku as they stand after the call: a value the call itself raised (viewings worth
    # 3 after Koi, the Koi-Koi bonus) is no new yaku.
    s._baseline[side] = _yaku_points(s.hands[side])
    return dataclasses.replace(e, player=side)


def _stop_called(s: MatchState, e: StopCalled):
    side = s.side_of(e.player)
    _need_decision(s, side, "stop")
    hand = s.hands[side]
    yaku, points = _yaku_list(hand), hand.total
    if s.koi[side]:
        reason = Message(
            "round.stop_after_koi", side=side, koi=s.koi[side], yaku=yaku, points=points
        )
    else:
        reason = Message("round.stop", side=side, yaku=yaku, points=points)
    _finish_round(s, side, "stop", hand.total, _with_base(reason, hand), hand=hand)
    return dataclasses.replace(e, player=side)


def _hand_declared(s: MatchState, e: HandDeclared):
    _need_round(s, "action.declaring_hand")
    side = s.side_of(e.player)
    allowed = tuple(s.rules.round.instant_wins)
    if e.kind not in allowed:
        names = Listing(map(hand_kind, allowed)) if allowed else Message("phrase.none")
        raise IllegalEvent(
            Message(
                "refusal.no_declaration", rules=repr(s.rules_name), kind=repr(e.kind), names=names
            )
        )
    if s._owner:
        raise IllegalEvent(Message("refusal.hand_after_capture"))
    cards = _declared_hand(s, e)
    points = s.rules.round.instant_win_points
    said = {"side": side, "kind": hand_kind(e.kind), "what": hand_what(e.kind)}
    if cards:
        listed = Listing((CardCode(c.code) for c in cards), " ")  # a page names them
        reason = Message("round.declared_cards", **said, cards=listed, points=points)
    else:
        reason = Message("round.declared", **said, points=points)
    _finish_round(s, side, "instant", points, reason)
    return dataclasses.replace(e, player=side, cards=tuple(c.code for c in cards))


def _declared_hand(s: MatchState, e: HandDeclared) -> tuple:
    """The declared hand's cards, checked: they exist once, fit in a dealt hand, are not on
    the field, and make the declared kind. Without cards, the declaration is taken on trust
    unless the rules require them (``round.hand_cards``)."""
    if not e.cards:
        if s.rules.round.hand_cards == "required":
            raise IllegalEvent(Message("refusal.needs_hand_cards", rules=repr(s.rules_name)))
        return ()
    cards = tuple(_resolve_card(s, c) for c in e.cards)
    if len(set(cards)) != len(cards):
        raise IllegalEvent(Message("refusal.hand_twice"))
    people = sum(len(s.members(p)) for p in s.players)
    size = s.rules.game.deal.get(str(people), (8, 8))[0]
    if len(cards) > size:
        raise IllegalEvent(Message("refusal.hand_size", size=size, n=len(cards)))
    on_field = [c.code for c in cards if c in s.field]
    if on_field:
        raise IllegalEvent(Message("refusal.card_in_field", card=on_field[0]))
    months = Counter(c.month for c in cards)
    listed = " ".join(c.code for c in cards)
    if e.kind == "teshi" and max(months.values()) < 4:
        raise IllegalEvent(Message("refusal.no_teshi", cards=listed))
    if e.kind == "kuttsuki" and sum(n // 2 for n in months.values()) < 4:
        raise IllegalEvent(Message("refusal.no_kuttsuki", cards=listed))
    if e.kind == "dealt_yaku":
        if not scoring.score_yaku(s.rules, cards, month=s.month).base:
            raise IllegalEvent(Message("refusal.no_dealt_yaku", cards=listed))
    return cards


def _field_brights_set(s: MatchState, e: FieldBrightsSet):
    _need_round(s, "action.setting_field_brights")
    s.field_brights = e.count
    _rescore(s)


def _cards_ran_out(s: MatchState, e: CardsRanOut):
    _need_round(s, "action.ending_round")
    if s._pending:
        raise IllegalEvent(Message("refusal.choose_first", side=s._pending[0]))
    rules = s.rules
    if s.mode == "card_values":
        _finish_card_values_round(s)
        return
    how = rules.round.exhausted
    if how == "oya_scores":
        points = rules.round.exhausted_points
        reason = Message("round.oya_scores", oya=s.oya, points=points)
        _finish_round(s, s.oya, "exhausted", points, reason)
    elif (
        how == "last_yaku_maker_unless_oya"
        and s.last_koi not in (None, s.oya)
        and s.hands[s.last_koi].base > 0  # a correction may have taken his yaku away since
    ):
        side = s.last_koi
        hand = s.hands[side]
        reason = Message(
            "round.last_yaku_maker", side=side, yaku=_yaku_list(hand), points=hand.total
        )
        _finish_round(s, side, "exhausted", hand.total, _with_base(reason, hand), hand=hand)
    else:
        if how == "last_yaku_maker_unless_oya" and s.last_koi:
            reason = Message("round.draw_oya_made_last", oya=s.oya)
        elif how == "last_yaku_maker_unless_oya":
            reason = Message("round.draw_no_yaku")
        else:
            reason = Message("round.draw")
        _finish_round(s, None, "draw", 0, reason)


def _round_entered(s: MatchState, e: RoundEntered):
    if s.round_in_progress:
        raise IllegalEvent(Message("refusal.round_under_way", n=s.round_number))
    if s.mode == "card_values":
        raise IllegalEvent(Message("refusal.card_values_entered", rules=repr(s.rules_name)))
    winner = None if e.winner is None else s.side_of(e.winner)
    oya = s.next_oya if e.oya is None else s.side_of(e.oya)
    s.round_number = len(s.rounds) + 1
    s.oya = oya
    _reset_round(s)
    s.month = (s.round_number - 1) % 12 + 1
    if winner is None:
        _finish_round(s, None, "entered", 0, Message("round.entered_draw"))
    else:
        # the winner has a column of his own
        reason = Message("round.entered", points=e.points)
        _finish_round(s, winner, "entered", e.points, reason)
    return dataclasses.replace(e, winner=winner, oya=oya)


def _field_dealt(s: MatchState, e: FieldDealt):
    _need_round(s, "action.reading_field")
    if s._owner:
        raise IllegalEvent(Message("refusal.field_after_capture"))
    field_cards = _dealt_field(s, e)
    _lay_field(s, field_cards, e.field_brights)
    _rescore(s)
    return dataclasses.replace(e, field=tuple(c.code for c in field_cards))


def _redeal(s: MatchState, e: Redeal):
    _need_round(s, "action.dealing_again")
    s.redeals += 1
    _reset_round(s)


_HANDLERS = {
    "match_started": _match_started,
    "round_started": _round_started,
    "card_captured": _card_captured,
    "capture_corrected": _capture_corrected,
    "capture_removed": _capture_removed,
    "capture_checked": _capture_checked,
    "koi_called": _koi_called,
    "stop_called": _stop_called,
    "hand_declared": _hand_declared,
    "field_brights_set": _field_brights_set,
    "cards_ran_out": _cards_ran_out,
    "redeal": _redeal,
    "field_dealt": _field_dealt,
    "round_entered": _round_entered,
}


# -- scoring -----------------------------------------------------------------------------------


def _yaku_points(hand) -> dict[str, int]:
    points: dict[str, int] = {}
    for y in hand.yaku:
        points[y.id] = points.get(y.id, 0) + y.points
    return points


def _rescore(s: MatchState) -> None:
    """Recompute each player's hand (only those whose inputs changed)."""
    all_koi = sum(s.koi.values())
    for p in s.players:
        koi_own = s.koi.get(p, 0)
        codes = tuple(sorted(c.code for c in s.captures[p]))
        key = (codes, koi_own, all_koi - koi_own, s.field_brights, s.month)
        if s._hand_keys.get(p) == key and p in s.hands:
            continue
        s.hands[p] = _score_hand(s.rules, *key)
        s._hand_keys[p] = key
    if s.mode == "card_values":
        s.card_values = {p: s.hands[p].total for p in s.players}


@functools.lru_cache(maxsize=4096)
def _score_hand(
    rules, codes: tuple, koi_own: int, koi_opponent: int, field_brights: int, month: int | None
):
    """score_hand, remembered: a replay of a stored match (same cached RuleSet) scores the same
    hands again, and the order of captures never matters to a score."""
    return scoring.score_hand(
        rules,
        [rules.deck.card(c) for c in codes],
        koi_own=koi_own,
        koi_opponent=koi_opponent,
        field_brights=field_brights,
        month=month,
    )


def _after_capture_change(s: MatchState, side: str) -> None:
    _rescore(s)
    if s.mode == "card_values":
        return
    baseline = s._baseline.get(side, {})
    now = _yaku_points(s.hands[side])
    improved = any(pts > baseline.get(yid, 0) for yid, pts in now.items())
    if improved and side not in s._pending:
        s._pending.append(side)
    elif not improved and side in s._pending:
        s._pending.remove(side)  # a correction took the new yaku away


def _payment(s: MatchState, winner: str, amount: int) -> dict[str, int]:
    how = s.rules.round.payment
    points = {p: 0 for p in s.players}
    if how == "zero_sum":
        # Each other player pays the winner what he wins: the totals always add up to 0.
        for p in s.players:
            if p != winner:
                points[p] = -amount
        points[winner] = amount * (len(s.players) - 1)
    else:
        points[winner] = amount
    return points


def _finish_round(s, winner, kind, amount, reason, hand=None) -> None:
    if winner is None:
        points = {p: 0 for p in s.players}
    else:
        points = _payment(s, winner, amount)
    result = RoundResult(
        number=s.round_number,
        oya=s.oya,
        winner=winner,
        kind=kind,
        yaku=tuple(hand.yaku) if hand else (),
        base=hand.base if hand else amount,
        multiplier=hand.multiplier if hand else 1,
        multipliers=tuple(hand.multipliers) if hand else (),
        points=points,
        reason=reason,
        koi=dict(s.koi),
        tie_break=s.tie_break,
    )
    _record(s, result)


def _finish_card_values_round(s: MatchState) -> None:
    values = dict(s.card_values)
    best = max(values.values())
    leaders = [p for p in s.players if values[p] == best]
    winner = leaders[0] if len(leaders) == 1 else None
    table = Listing(Message("standing.entry", name=p, value=values[p]) for p in s.players)
    if winner:
        reason = Message("round.card_values_winner", table=table, winner=winner)
    else:
        reason = Message("round.card_values_tie", table=table, sides=Listing(leaders, " and "))
    full = sum(scoring.card_value(s.rules, c) for c in s.rules.deck)
    notes = ()
    if sum(values.values()) != full:
        total = sum(values.values())
        notes = (Message("warning.card_values_total", n=s.round_number, total=total, full=full),)
    result = RoundResult(
        number=s.round_number,
        oya=s.oya,
        winner=winner,
        kind="card_values",
        base=best,
        points=values,
        reason=reason,
        koi={},
        tie_break=s.tie_break,
        notes=notes,
    )
    _record(s, result)


def _record(s: MatchState, result: RoundResult) -> None:
    s.rounds.append(result)
    for p, n in result.points.items():
        s.totals[p] += n
    if result.winner:
        s.rounds_won[result.winner] += 1
    s.round_in_progress = False
    s._pending = []
    s.next_oya = _next_oya(s, result)
    _check_match_end(s)


def _seat_after(s: MatchState, side: str) -> str:
    i = s.players.index(side)
    return s.players[(i + 1) % len(s.players)]


def _next_oya(s: MatchState, result: RoundResult) -> str:
    r = s.rules.round
    if r.next_oya == "highest_total":
        best = max(s.totals.values())
        leaders = [p for p in s.players if s.totals[p] == best]
        if s.oya in leaders:  # a tie at the top keeps the dealer
            return s.oya
        return leaders[0]
    if result.winner:
        return result.winner
    return s.oya if r.draw_oya == "stays" else _seat_after(s, s.oya)


def _leaders(s: MatchState) -> tuple:
    if s.rules.match.winner_by == "rounds_won":
        key = s.rounds_won
    else:
        key = s.totals
    best = max(key.values())
    return tuple(p for p in s.players if key[p] == best)


def _check_match_end(s: MatchState) -> None:
    bank = s.rules.match.bank
    ran_out = tuple(p for p in s.players if bank and s.totals[p] <= 0)
    if len(s.rounds) < s.rounds_planned and not ran_out:
        return
    leaders = _leaders(s)
    if len(leaders) > 1 and s.rules.match.tie_break == "extra_round":
        s.tie_break = True  # one more round decides (again, while it stays a tie)
        return
    s.outcome = MatchOutcome(
        winners=leaders,
        by=s.rules.match.winner_by,
        totals=dict(s.totals),
        rounds_won=dict(s.rounds_won),
        rounds_played=len(s.rounds),
        tie_break_rounds=max(0, len(s.rounds) - s.rounds_planned),
        ran_out=ran_out,
    )


@functools.lru_cache(maxsize=64)
def _wild_cards(rules) -> frozenset:
    return frozenset(c for c in rules.deck if rules.is_wild(c))


# -- plausibility hints ------------------------------------------------------------------------


def _warnings(s: MatchState) -> list[Message]:
    """Hints that something was misread or must be done again; each Message's ``kind`` says
    which (``redeal``, ``unpaired_month``, ``card_values_total``)."""
    warnings: list[Message] = []
    rules = s.rules
    if rules is None:
        return warnings
    if s.round_in_progress and s.field and rules.round.field_redeal and not s._owner:
        months = Counter(c.month for c in s.field)
        if 4 in months.values():
            warnings.append(Message("warning.redeal_month"))
        elif rules.round.field_redeal_pairs and sum(1 for n in months.values() if n >= 2) >= 4:
            warnings.append(Message("warning.redeal_pairs"))
    wild = _wild_cards(rules)
    wild_months = {c.month for c in wild}
    for p in s.players:
        caps = s.captures.get(p, [])
        holds_wild = any(c in wild for c in caps)
        months = Counter(c.month for c in caps)
        odd = sorted(m for m, n in months.items() if n % 2 and m not in wild_months)
        if holds_wild and odd:
            odd = odd[1:]  # the card taken with the wild card is alone in its month
        for m in odd:
            cards = Listing((CardCode(c.code) for c in caps if c.month == m), " ")
            warnings.append(
                Message(
                    "warning.unpaired_month", player=p, n=months[m], month=f"{m:02d}", cards=cards
                )
            )
    if not s.round_in_progress and s.rounds:
        warnings.extend(s.rounds[-1].notes)
    return warnings

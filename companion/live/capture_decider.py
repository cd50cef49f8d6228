"""Capture decisions: stable table state in, engine events out, using the game's own structure.

A capture brings two cards of one month into a capture area together (four when the fourth
card of a month takes three). So the steady new cards of a capture area are decided as a
group once the hand has left: among each card's likeliest codes, the group takes the joint
reading that is likeliest while pairing by month (distinct codes, none already captured; a
card that just left the field is likelier). A card whose reading stays doubtful, or a group
whose months cannot pair, is flagged (``check``) for the tablet. Turns order the captures: a
turn lays two cards (the hand's, the pile's), so it makes at most two captures, and one player
plays at a time; a lone card reaching a player's captures just after another player's card, or
a third capture in one turn, is held (a look at a row of captures that settled as the hand
left, not a card laid) until a card of its month pairs with it.

The rest of a round's life, read from the table for players who forget the tablet:
- A dealt field seen on a table that was clear since the last round opens a round
  (``round_started`` with the field read); the cards left lying after a round never do.
- Koi: play going on after a yaku (another player's card settling in his captures, or the
  cards laid reaching the next player's turn). Stop: the captures gathered (out of sight, no
  hand over them) or a new deal lying; the captures lying still are decided first. Recorded
  with ``source: "camera"``, once per decision asked: a tap answers first and wins, and an
  answer the tablet took back is only shown (``notice``), never recorded again.
- The cards gathered (or dealt again) without a decision pending end the round
  (``cards_ran_out``); a deal played out leaves every card captured, so a card never decided
  whose month one player alone holds oddly is credited to him first (flagged for a check). A
  field the rules deal again, gathered before any capture: ``redeal``;
  a round without its field (dealt again, or opened on the tablet): ``field_dealt`` from the
  next deal.

Every wait, threshold and count it decides by is a field of ``DeciderSettings``
(``companion/live/settings.py``).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass

from companion.game.cards import ALL_CODES, twin_group
from companion.game.engine import (
    CardCaptured,
    CardsRanOut,
    Event,
    FieldDealt,
    KoiCalled,
    Redeal,
    RoundStarted,
    StopCalled,
)
from companion.live.messages import Message
from companion.live.settings import CLOCK_SLACK, DeciderSettings
from companion.live.tracker import Arrival, TableState

_FLOOR = 1e-9  # the probability of a code a look did not offer (its log stays finite)


DEFAULT_SETTINGS = DeciderSettings()


@dataclass(frozen=True)
class Reading:
    """One card of a decided group: its code, how sure, and whether to ask."""

    track: int
    seat: str
    code: str
    confidence: float
    check: bool
    alternatives: tuple
    steady_since: int


@dataclass(frozen=True)
class Proposal:
    kind: str  # "redeal" | "next_round" | "reading" | "asked"
    text: Message  # the page says it in its language


@dataclass(frozen=True)
class Seen:
    """What the camera last saw of a round with no hand over the table: the steady field
    cards, the captures recorded by then and how many of them lay in sight."""

    round: int
    field: frozenset
    captured: int
    in_sight: int


@dataclass(frozen=True)
class Away:
    """The camera did not see the table for a while: ``seconds`` of it (None: the pipeline
    started again on a match under way, for as long as nobody knows) and what it had last
    seen (None after a restart)."""

    seconds: float | None = None
    before: Seen | None = None
    # it went between two rounds, the ended round's cards gathered: a round under way when it
    # comes back was dealt meanwhile (opened on the field lying, its captures taken over)
    round_unseen: bool = False


@dataclass(frozen=True)
class Decision:
    """An engine event the table calls for; a capture carries the reading of the card on the
    table it was decided from (``Decision.captured``), so that the card is registered with
    the event the store accepted. The store appends ``event`` as it is."""

    event: Event
    reading: Reading | None = None

    def __post_init__(self):
        if (self.reading is None) == isinstance(self.event, CardCaptured):
            raise ValueError("A capture is decided from a reading, and only a capture.")

    @classmethod
    def captured(cls, player: str, reading: Reading) -> Decision:
        """The camera's capture of ``reading``'s card by ``player``: its confidence, whether
        to check it and what else it may be go with the event."""
        event = CardCaptured(
            player=player,
            card=reading.code,
            source="camera",
            confidence=round(reading.confidence, 3),
            check=True if reading.check else None,
            alternatives=tuple(reading.alternatives) or None,
        )
        return cls(event, reading)


@dataclass
class _CaptureArea:
    """One player's capture area at one look, as deciding its cards needs it. ``owned`` (every
    code captured this round) and ``held`` (the player's captures) grow as the look decides
    cards; ``owned`` is shared by all the areas of the look."""

    seat: str
    player: str
    table: TableState
    owned: set
    held: list
    field_left: frozenset  # codes that just left the field (likelier)


def _month(code: str) -> int:
    return int(code[:2])


def pairs_up(codes) -> bool:
    """Whether a group of captured cards can be whole captures: each month two or four."""
    return all(n in (2, 4) for n in Counter(_month(c) for c in codes).values())


def _odd_months(codes) -> int:
    return sum(1 for n in Counter(_month(c) for c in codes).values() if n % 2)


def resolve_group(
    arrivals,
    *,
    owned=(),
    field_left=(),
    field_now=(),
    fixed=(),
    expected=None,
    settings: DeciderSettings = DEFAULT_SETTINGS,
) -> list[tuple]:
    """The group's reading: [(code, confidence, check, alternatives)] in arrival order.

    ``fixed``: the player's captures still waiting for their partner (an odd month), which the
    arrivals may pair with; ``owned``: codes already captured this round (impossible);
    ``field_left``: codes that just left the field (likelier); ``field_now``: codes lying
    steadily on the field (unlikelier). Each month left odd costs ``odd_month_odds``: the
    joint reading pairs up unless the looks say otherwise strongly. A card's confidence is its
    probability under that prior (chaff of one month counted as one); a card is flagged when
    it is doubtful, when the pair rule chose against its looks, or when it had a card to pair
    with and does not (``expected``: the waiting cards it should pair with, those of the
    turn under way; all of ``fixed`` by default).
    """
    expected = list(fixed if expected is None else expected)
    owned = set(owned) | set(fixed)
    field_left = set(field_left)
    field_now = set(field_now)
    fixed = list(fixed)
    n = len(arrivals)
    k = settings.codes_per_card(n)
    field_bonus = math.log(settings.field_left_odds)
    pair_penalty = math.log(settings.odd_month_odds)

    def prior(code: str) -> float:
        score = 0.0
        if code in field_left:
            score += field_bonus
        if code in field_now:
            score -= field_bonus
        return score

    options = []
    for a in arrivals:
        opts = sorted(
            ((math.log(max(p, _FLOOR)) + prior(c), c) for c, p in a.candidates if c not in owned),
            reverse=True,
        )
        options.append(opts[:k] or [(math.log(_FLOOR), a.candidates[0][0])])
    best = None
    for count, combo in enumerate(itertools.product(*options)):
        if count > settings.max_combos:
            break
        codes = [c for _, c in combo]
        if len(set(codes)) != n:
            continue
        score = sum(sc for sc, _ in combo) - pair_penalty * _odd_months([*fixed, *codes])
        if best is None or score > best[0]:
            best = (score, codes)
    chosen = best[1] if best else [o[0][1] for o in options]
    partners = len(expected) + n > 1
    out = []
    for i, (a, code) in enumerate(zip(arrivals, chosen, strict=True)):
        probs = dict(a.candidates)
        others = [*fixed, *chosen[:i], *chosen[i + 1 :]]
        mates = [*expected, *chosen[:i], *chosen[i + 1 :]]
        weights = {
            c: p * math.exp(prior(c) - pair_penalty * _odd_months([*others, c]))
            for c, p in a.candidates
            if c not in owned and c not in others
        }
        twins = twin_group(code)
        total = sum(weights.values()) or 1.0
        confidence = min(1.0, sum(w for c, w in weights.items() if c in twins) / total)
        also = tuple(c for c, _ in a.candidates if c != code and c not in owned)
        alternatives = also[: settings.alternatives]
        unpaired = partners and Counter(_month(c) for c in [*mates, code])[_month(code)] % 2 == 1
        check = (
            confidence < settings.check_below
            or probs.get(code, 0.0) < settings.unlikely
            or unpaired
        )
        out.append((code, confidence, check, alternatives))
    return out


def waiting_for_partner(held) -> list:
    """The captures still waiting for their partner: those of a month held an odd number of
    times."""
    months = Counter(_month(c) for c in held)
    return [c for c in held if months[_month(c)] % 2]


def surely(arrival: Arrival) -> float:
    """The probability of an arrival's likeliest reading (chaff of one month counted as one)."""
    code = arrival.candidates[0][0]
    twins = twin_group(code)
    return sum(p for c, p in arrival.candidates if c in twins)


class CaptureDecider:
    """``decider.step(table, match, seats=...) -> tuple[Decision, ...]``: the engine events a
    table state calls for, each capture with the reading it was decided from.

    ``seats`` maps the layout's seat labels to the match's players (seat order by default).
    Besides captures, it reads from the table what players say aloud and forget to tap:
    Koi (play going on), Stop (the cards gathered), the end of a round and the next deal.
    What it cannot record (a reading against a tap) is ``notice``, a sentence for the tablet.
    """

    def __init__(self, settings: DeciderSettings = DEFAULT_SETTINGS):
        self.settings = settings
        self._alone_since: dict[str, float] = {}
        self._registered_at: dict[str, float] = {}  # code -> when the camera captured it
        # the round's turns: (steady time, seat, code) of each card decided, and the tracks of
        # lone cards held as out of turn
        self._turn_round: tuple | None = None
        self._turn_cards: list[tuple[float, str, str]] = []
        self._out_of_turn: set[int] = set()
        self._deal_since: float | None = None
        self._deal_codes: tuple = ()
        self._backs_seen = False
        self._no_backs_since: float | None = None
        self.proposal: Proposal | None = None
        self.notice: str | None = None  # what the table shows against a tap: shown, not recorded
        # Koi and Stop read from the table, per decision asked ("episode")
        self._episode: tuple | None = None  # (round, redeals, player, his Koi calls)
        self._episode_frame = 0  # the look at which the decision was first seen asked
        self._episode_laid = 0  # cards laid face up this round when it was asked
        self._episode_sight: dict = {}  # seat -> most captures in sight since it was asked
        self._koi_since: float | None = None
        self._gathered_since: float | None = None
        self._spoken: set = set()  # decisions the camera answered: never recorded twice
        self._began: dict = {}  # decision -> (frame, time, cards laid, captures in sight)
        # the round's life
        self._in_round: bool | None = None  # None: not watched yet (a fresh pipeline)
        self._redeals: int | None = None
        self._redeal_by_table = False
        self._swept_since: float | None = None
        self._closed_on_deal = False  # the camera closed the round on a new deal lying there
        self._clear_seen = True  # a clear table was seen since the last round ended
        self._tapped: tuple | None = None  # (kind, player, cards laid) of a decision tapped
        self._said_stop = False  # the round was closed by a Stop read from the table
        self._closed_sight: int | None = None  # cards in sight when the round closed
        self._laid_since_stop = 0  # looks in a row showing more cards than then
        self._clear_since: float | None = None
        self._episode_time = 0.0
        # the camera away: nothing decided from what it did not see
        self.away: Away | None = None  # came back, the table not yet compared
        self._back_at: float | None = None  # the first look since it came back
        self._away_seconds: float | None = None  # how long, for the question asked
        self._asked: dict = {}  # decision -> the question put to the tablet (never read)
        self.seen: Seen | None = None  # the round's table as last seen, no hand over it
        self.moved_on: int | None = None  # a round whose cards went while the camera was away
        self._taking_over: int | None = None  # captures, at most, made while it was away
        self._round_unseen = False  # a round may have been dealt while it was away
        # questions about cards lying in a player's captures that the camera, back, cannot
        # read: (round, redeals, player) -> answered (a capture added on the tablet)
        self._unread: dict = {}

    def came_back(self, away: Away, memory: CaptureDecider | None = None) -> CaptureDecider:
        """This decider after the camera was away (``away``): a fresh one, as after a
        restart, that keeps what ``memory`` (the decider before) answered, asked and began,
        and compares the table with what was seen before deciding anything but captures."""
        if memory is not None:
            self._spoken = memory._spoken
            self._began = memory._began
            self._asked = memory._asked
            self._registered_at = memory._registered_at
            self._unread = memory._unread
        self.away = away
        self._away_seconds = away.seconds
        self._round_unseen = away.round_unseen
        return self

    def played_again(self) -> None:
        """The deal just read is an earlier round's, played again (a recording from its
        start): no round opens from it, and its play is no sign against a Stop tapped."""
        self._deal_since = None
        self._tapped = None
        self.proposal = None

    @property
    def asking(self) -> Message | None:
        """The question put to the tablet about a decision the camera did not see answered,
        while it is pending; None otherwise."""
        return self._question

    _question: Message | None = None

    def step(self, table: TableState, match, *, seats: dict) -> tuple[Decision, ...]:
        """What this look at the table decides, in the order the store appends it."""
        out: list[Decision] = []
        if match is None or not match.started or match.finished:
            return ()
        self._question = self._open_question(match)
        if self.away is not None and not self._compared(table, match):
            # the table is read afresh first: nothing is decided from it yet
            self._in_round = self._in_round or match.round_in_progress
            return ()
        if match.round_in_progress and self.moved_on == match.round_number:
            self._in_round = True
            return ()  # the round's cards were gathered unseen: the tablet ends it
        if match.round_in_progress and not table.hand_present:
            self.seen = Seen(
                match.round_number,
                frozenset(table.field),
                sum(len(c) for c in match.captures.values()),
                sum(table.captures_in_sight.values()),
            )
        if match.round_in_progress:
            self._round_under_way(table, match, seats, out)
        else:
            if self._in_round:
                self._round_closed(match)
            self._in_round = False
            self._between_rounds(table, match, out)
        return tuple(out)

    def decide_now(self, table: TableState, match, *, seats: dict) -> tuple[Decision, ...]:
        """The captures lying still, decided now: the table settling after a Stop tapped,
        before the round closes. A sure card, or one pairing with a capture waiting for its
        partner, is decided; a lone doubtful card (often a look at part of a row) is not."""
        out: list[Decision] = []
        if match is not None and match.round_in_progress:
            self._captures(table, match, seats, out, settling=True)
        return tuple(out)

    @property
    def shown(self) -> Proposal | None:
        """What the tablet shows from the camera: what the table showed against a tap (kind
        "reading"), else what the camera suggests (a redeal, the next round)."""
        if self._question is not None:
            return Proposal("asked", self._question)
        if self.notice:
            return Proposal("reading", self.notice)
        return self.proposal

    # -- after the camera was away ----------------------------------------------------------

    def _compared(self, table: TableState, match) -> bool:
        """Whether the table seen since the camera came back has been compared with what was
        seen before (once it has settled: no hand, no card waiting, for ``back_settle``; or
        after ``back_settle_most`` whatever it shows). When it changed (or nothing was seen
        before: a restart), the Koi/Stop questions pending now are put to the tablet, never
        read from the table; when the round's captures are gone (or its field's cards, and
        not into the captures), the round is left to the tablet."""
        s = self.settings
        if self._back_at is None:
            self._back_at = table.time
        waited = table.time - self._back_at
        if waited < s.back_settle - CLOCK_SLACK or (
            table.hand_present and waited < s.back_settle_most
        ):
            return False
        before, self.away = self.away.before, None
        if before is not None and before.round != match.round_number:
            before = None
        captured = sum(len(c) for c in match.captures.values())
        in_sight = sum(table.captures_in_sight.values())
        arrived = sum(len(a) for a in table.arrivals.values())  # captures made meanwhile
        if before is None:
            changed = True
        else:
            changed = (
                captured != before.captured
                or arrived > 0
                or len(before.field) != len(table.field)
                or len(before.field ^ frozenset(table.field)) > s.field_changed
                or in_sight < before.in_sight
            )
        if not changed or not match.round_in_progress:
            return True
        for player in match.pending_players:
            self._ask(match, player)
        # a decision the captures made meanwhile call for may have been answered meanwhile
        self._taking_over = captured + arrived
        gone = captured >= s.gathered_least and in_sight <= s.captures_gone_share * captured
        if before is not None and not gone and in_sight == 0:
            # a field card leaves the field only into a capture area: the field's cards gone
            # and not come into the captures, the table was gathered (and maybe dealt again)
            come = {c for group in table.arrivals.values() for a in group for c, _ in a.candidates}
            left = before.field - frozenset(table.field) - come
            gone = len(left) > s.field_changed
        if before is not None and gone:
            self.moved_on = match.round_number
            self._closed_on_deal = True  # what lies next is the next round's
            # asked once the pending decisions are answered
            self._asked[("round", match.round_number)] = Message(
                "camera.away_round_gone", seconds=_seconds(self._away_seconds)
            )
        self._question = self._open_question(match)
        return True

    def _ask(self, match, player: str) -> None:
        key = _episode_key(match, player)
        if key in self._spoken or key in self._asked:
            return
        if self._away_seconds is None:
            question = Message("camera.restart_ask", player=player)
        else:
            question = Message(
                "camera.away_ask", player=player, seconds=_seconds(self._away_seconds)
            )
        self._asked[key] = question

    def _open_question(self, match) -> Message | None:
        """The question put to the tablet that is still open: a pending decision asked
        about, or the round whose cards went while the camera was away."""
        if not match.round_in_progress:
            return None
        for player in match.pending_players:
            asked = self._asked.get(_episode_key(match, player))
            if asked is not None:
                return asked
        if self.moved_on == match.round_number:
            return self._asked.get(("round", match.round_number))
        for player in self.unread_players(match):
            return self._asked[_unread_key(match, player)]
        return None

    def took_over(self, match) -> bool:
        """Whether the table compared since the camera came back had changed and its
        captures are being taken over (the round's cards not gone meanwhile)."""
        return self._taking_over is not None and self.moved_on != match.round_number

    def captures_unread(self, match, players) -> None:
        """Back from away, the captures of ``players`` show cards the camera
        cannot read (``LivePipeline``: more has come there than the cards it reads): what it
        took over is not all, and the players are asked to add the rest on the tablet, never
        left to a score that silently lacks them."""
        for player in players:
            key = _unread_key(match, player)
            if self._unread.get(key) is not False:  # asked again after another gap
                self._unread[key] = False
                self._asked[key] = Message(
                    "camera.away_captures_unread",
                    player=player,
                    seconds=_seconds(self._away_seconds),
                )
        self._question = self._open_question(match)

    def unread_players(self, match) -> list:
        """The players asked for captures the camera could not read, not yet answered."""
        if not match.round_in_progress:
            return []
        return [
            player
            for player in match.players
            if self._unread.get(_unread_key(match, player)) is False
        ]

    def captures_added(self, match, player: str) -> None:
        """A capture of ``player``'s added on the tablet: the question about his captures
        the camera could not read is answered; a Koi/Stop the cards added call for (their
        yaku made unseen) is asked, never read from play seen afterwards."""
        asked = self._unread.get(_unread_key(match, player))
        if asked is None or (asked and self._taking_over is None):
            return  # never asked, or play seen live since the answer
        self._unread[_unread_key(match, player)] = True
        # the cards added one by one: none of them is play seen live
        self._taking_over = sum(len(c) for c in match.captures.values())
        self._question = self._open_question(match)

    @property
    def questions(self) -> int:
        """Questions put to the tablet so far (this decider and those it came back from)."""
        return len(self._asked)

    def asked(self, match, player: str) -> bool:
        """Whether ``player``'s pending decision was put to the tablet (never read)."""
        return _episode_key(match, player) in self._asked

    # -- during a round ----------------------------------------------------------------------

    def _round_under_way(self, table: TableState, match, seats: dict, out) -> None:
        self._round_unseen = False
        if self._in_round is False:
            self.notice = None
            self._tapped = None
        self._in_round = True
        if self._redeals is not None and match.redeals != self._redeals:
            # dealt again: the next field is read once the old one has been gathered
            self._clear_seen = self._redeal_by_table
            self._deal_since = None
        self._redeals = match.redeals
        self._redeal_by_table = False
        self.proposal = self._redeal_proposal(match)
        if not match.field and not _captured(match) and self._read_field(table, match, out):
            return
        player = self._watch(table, match)
        if player is not None and any(self.asked(match, p) for p in match.pending_players):
            player = None  # put to the tablet: play seen now does not answer it
        self._captures(table, match, seats, out)
        if player is not None and self._koi_from_captures(match, player, out):
            player = None  # answered this look: the next look sees the match without it
        if player is not None and self._koi_or_stop(table, match, seats, player, out):
            return
        if self._redeal_from_table(table, match, out):
            return
        self._contradicted_koi(table, match)
        self._ran_out(table, match, seats, out)

    def _captures(
        self, table: TableState, match, seats: dict, out: list, *, settling: bool = False
    ) -> None:
        s = self.settings
        owned = {c.code for cards in match.captures.values() for c in cards}
        recent = frozenset(
            c for c, f in table.field_left.items() if table.frame - f <= s.field_recent_frames
        )
        if self._turn_round != (match.round_number, match.redeals):
            self._turn_round = (match.round_number, match.redeals)
            self._turn_cards, self._out_of_turn = [], set()
        for seat, arrivals in table.arrivals.items():
            player = seats.get(seat)
            if player is None:
                continue
            # the player's arm keeps crossing his own capture area: each card is decided as
            # soon as nothing moves over it, not when the whole area is still
            side = match.side_of(player)
            held = [c.code for c in match.captures.get(side, [])]
            area = _CaptureArea(seat, player, table, owned, held, recent)
            quiet = [
                a
                for a in arrivals
                if self._settled(a, table.time)
                and (not a.overlaps or self._plausible_over(a, held))
                and not self._captured_look(a, held, owned)
            ]
            quiet = self._in_turn(seat, quiet, held, owned)
            if not quiet:
                if not arrivals:
                    self._alone_since.pop(seat, None)
                continue
            decided = set()
            for a in sorted(quiet, key=lambda a: (a.steady_since, a.track)):
                if surely(a) >= s.sure:
                    out += self._decide([a], area)
                    decided.add(a.track)
            doubtful = [a for a in quiet if a.track not in decided]
            if not doubtful:
                self._alone_since.pop(seat, None)
                continue
            waiting = waiting_for_partner(held)
            if len(doubtful) == 1 and not waiting:
                since = self._alone_since.setdefault(seat, table.time)
                if settling or table.time - since < s.partner_wait:
                    continue  # a doubtful lone card: its partner will help read it
            self._alone_since.pop(seat, None)
            ordered = sorted(doubtful, key=lambda a: (a.steady_since, a.track))
            out += self._decide(ordered, area)

    def _in_turn(self, seat: str, quiet: list, held, owned) -> list:
        """The arrivals of ``seat``'s capture area its turn lets be decided now. One pairing
        with a capture of his waiting for its partner, or with another card lying new there,
        is a capture made; a lone one the turns say he cannot be making (``_out_of_turn``) is
        held, until a card of its month comes to pair with it."""
        waiting = {_month(c) for c in waiting_for_partner(held)}
        months = {a.track: self._free_months(a, owned) for a in quiet}
        kept = []
        for a in quiet:
            others = set().union(*(m for track, m in months.items() if track != a.track))
            if months[a.track] & (waiting | others):
                self._out_of_turn.discard(a.track)
                kept.append(a)
            elif a.track in self._out_of_turn or self._out_of_turn_now(a, seat):
                self._out_of_turn.add(a.track)
            else:
                kept.append(a)
        return kept

    def _free_months(self, a: Arrival, owned) -> set:
        """The months an arrival may be of: those of its readings not captured yet, each
        with at least ``over_capture_pairs``."""
        least = self.settings.over_capture_pairs
        return {_month(c) for c, p in a.candidates if c not in owned and p >= least}

    def _out_of_turn_now(self, a: Arrival, seat: str) -> bool:
        """Whether the turns say ``seat`` is making no capture when ``a`` came to lie: the
        last card decided before it reached another player's captures less than
        ``turn_open`` before (his turn goes on: the next player's hand has yet to come), or
        ``seat``'s own turn, its cards each within ``pair_window`` of the next, already made
        two captures (a turn lays two cards)."""
        s, at = self.settings, a.steady_time
        earlier = sorted(c for c in self._turn_cards if c[0] <= at + CLOCK_SLACK)
        if not earlier:
            return False
        last_time, last_seat, _ = earlier[-1]
        if last_seat != seat:
            return at - last_time <= s.turn_open
        turn, previous = [], at
        for time, who, code in reversed(earlier):
            if who != seat or previous - time > s.pair_window:
                break
            turn.append(code)
            previous = time
        return len({_month(c) for c in turn}) >= 2 and pairs_up(turn)

    @property
    def out_of_turn(self) -> frozenset:
        """The tracks of the lone cards held as out of turn this round (never waited for)."""
        return frozenset(self._out_of_turn)

    def _settled(self, a: Arrival, now: float) -> bool:
        """Whether an arrival is decided on this look: a sure one as soon as nothing moves
        over it (the tracker already saw it lie still), a doubtful one ``settle_seconds``
        later (one more look at it)."""
        if a.quiet_time <= now and surely(a) >= self.settings.sure:
            return True
        if a.verifying:
            return False  # a doubtful card its own points will read again
        return now - a.quiet_time >= self.settings.settle_seconds - CLOCK_SLACK

    def _plausible_over(self, a: Arrival, held) -> bool:
        """A card found over one of the player's captures is a new card (not a misread of
        the covered one) only when it pairs with a capture waiting for its partner."""
        months = {_month(c) for c in waiting_for_partner(held)}
        least = self.settings.over_capture_pairs
        return any(_month(c) in months and p >= least for c, p in a.candidates)

    def _captured_look(self, a: Arrival, held, owned) -> bool:
        """Whether an arrival reads surely as cards captured already this round (a chaff
        counted free while a twin of it is): a look at one of them, two cards of a row seen as
        one or a capture seen again, not a new card. Recorded, it would take a free name its
        looks barely give, the name of a card still to come. It is a new card all the same
        when a free reading of it pairs with a capture waiting for its partner."""
        taken = sum(p for c, p in a.candidates if all(t in owned for t in twin_group(c)))
        if taken < self.settings.captured_look:
            return False
        months = {_month(c) for c in waiting_for_partner(held)}
        least = self.settings.over_capture_pairs
        return not any(
            _month(c) in months and p >= least for c, p in a.candidates if c not in owned
        )

    def _decide(self, group: list[Arrival], area: _CaptureArea) -> list[Decision]:
        """The captures of ``group`` (arrivals of ``area``, read together), in its order."""
        table, waiting = area.table, waiting_for_partner(area.held)
        # the partner of a card comes within the same turn: older odd cards (a misread, a
        # capture missed) help reading but are not expected to pair any more
        window = self.settings.pair_window
        expected = [c for c in waiting if table.time - self._registered_at.get(c, -1e9) <= window]
        readings = resolve_group(
            group,
            owned=area.owned,
            field_left=area.field_left,
            field_now=table.field,
            fixed=waiting,
            expected=expected,
            settings=self.settings,
        )
        waiting_months = {_month(c) for c in waiting}
        decided = []
        for a, (code, conf, check, alts) in zip(group, readings, strict=True):
            # over a capture and pairing with nothing: maybe a misread of the covered card
            check = check or (a.overlaps and _month(code) not in waiting_months)
            reading = Reading(a.track, area.seat, code, conf, check, alts, a.steady_since)
            decided.append(Decision.captured(area.player, reading))
            self._turn_cards.append((a.steady_time, area.seat, code))
            area.owned.add(code)
            area.held.append(code)
            self._registered_at[code] = table.time
        return decided

    # -- Koi and Stop, read from the table ---------------------------------------------------

    def _watch(self, table: TableState, match) -> str | None:
        """The player asked Koi or Stop now (None: nobody); notes when the question began."""
        player = match.pending_decision
        if player is None:
            if self._episode is not None and self._episode not in self._spoken:
                self._note_tap(table, match)
            self._episode = None
            if self.notice is not None and self.notice.id.startswith("camera.table_shows"):
                self.notice = None  # answered on the tablet
            return None
        key = _episode_key(match, player)
        if self._taking_over is not None:
            if sum(len(c) for c in match.captures.values()) > self._taking_over:
                self._taking_over = None  # play seen live since
            elif key not in self._began:
                self._ask(match, player)
        if key != self._episode:
            self._episode = key
            # a question asked again (an answer undone on the tablet) keeps where it began
            began = self._began.setdefault(
                key, (table.frame, table.time, _laid(table, match), dict(table.captures_in_sight))
            )
            self._episode_frame, self._episode_time, self._episode_laid, sight = began
            self._episode_sight = dict(sight)
            self._koi_since = self._gathered_since = None
        elif table.time - self._episode_time <= self.settings.episode_settle:
            self._episode_laid = max(self._episode_laid, _laid(table, match))
            frame, time, _, sight = self._began[key]
            self._began[key] = (frame, time, self._episode_laid, sight)
        for seat, n in table.captures_in_sight.items():
            self._episode_sight[seat] = max(self._episode_sight.get(seat, 0), n)
        return player

    def _note_tap(self, table: TableState, match) -> None:
        """The question was answered on the tablet: remember how, to tell a contradiction."""
        _, _, player, calls = self._episode
        if match.round_in_progress and match.koi.get(player, 0) > calls:
            self._tapped = ("koi", player, _laid(table, match))

    def _say(self, out: list, kind: str, player: str, match) -> bool:
        """Record ``kind`` ("koi" | "stop") read from the table for ``player``, once per
        question: an answer the tablet took back is only shown again."""
        key = _episode_key(match, player)
        if key in self._spoken:
            self.notice = Message(f"camera.table_shows_{kind}", player=player)
            return False
        self._spoken.add(key)
        said = KoiCalled if kind == "koi" else StopCalled
        out.append(Decision(said(player=player, source="camera")))
        return True

    def _koi_from_captures(self, match, player: str, out: list) -> bool:
        """Another player's card, settled in his capture area after the question was asked,
        decided now and read surely (not flagged: a look at part of a row is not play):
        play goes on, a Koi, recorded before that capture."""
        for i, decision in enumerate(out):
            reading = decision.reading
            if reading is None:
                continue
            if match.side_of(decision.event.player) == player or reading.check:
                continue
            if reading.steady_since > self._episode_frame:
                said: list[Decision] = []
                if self._say(said, "koi", player, match):
                    out.insert(i, said[0])
                    return True
                return False
        return False

    def _koi_or_stop(self, table: TableState, match, seats: dict, player: str, out) -> bool:
        """Koi: cards laid beyond the player's own turn (the next player's card and draw);
        Stop: the captures gathered (out of sight, no hand over them) or a new deal lying.
        True when the round ended."""
        s = self.settings
        if any(isinstance(d.event, KoiCalled) for d in out):
            return False
        beyond = _next_turn_card(match, player, self._episode_laid) + 1
        if _laid(table, match) >= beyond:
            if self._koi_since is None:
                self._koi_since = table.time
            if table.time - self._koi_since >= s.koi_hold - CLOCK_SLACK:
                self._say(out, "koi", player, match)
            return False
        self._koi_since = None
        # each player sweeps his own captures: every capture area seen holding cards since
        # the question was asked now shows few (a wrist resting on one player's rows, or a
        # hand over them, hides one area, not all)
        seen = {seat: n for seat, n in self._episode_sight.items() if n}
        gathered = sum(seen.values()) >= s.gathered_least and all(
            table.captures_in_sight.get(seat, 0) <= s.gathered_share * n for seat, n in seen.items()
        )
        if not gathered:
            self._gathered_since = None
        elif self._gathered_since is None:
            self._gathered_since = table.time
        long_gathered = gathered and table.time - self._gathered_since >= s.stop_after
        if not (long_gathered or self._gathered(table, match)):
            return False
        new_deal = self._gathered(table, match) and self._new_deal(table, match)
        if any(table.arrivals.values()):
            before = len(out)
            self._captures(table, match, seats, out, settling=True)
            if len(out) > before:
                return False  # the table settles first: the Stop on the next look
        # whoever made a yaku before the last one saw play go on: Koi
        pending = list(match.pending_players)
        for earlier in pending[:-1]:
            self._say(out, "koi", earlier, match)
        if self._say(out, "stop", pending[-1], match):
            self._closed_on_deal = new_deal
            self._said_stop = True
            return True
        return False

    def _contradicted_koi(self, table: TableState, match) -> None:
        """A Koi tapped, then the captures gathered with no card laid since: shown."""
        if self._tapped is None or self._tapped[0] != "koi":
            return
        _, player, laid = self._tapped
        if _laid(table, match) > laid:
            self._tapped = None  # play went on: the table confirms the tap
            return
        if self._gathered(table, match):
            self.notice = Message("camera.gathered_after_koi", player=player)

    # -- the round's end ---------------------------------------------------------------------

    def _ran_out(self, table: TableState, match, seats: dict, out: list) -> None:
        if self._gathered(table, match) and not match.pending_decision:
            # the cards were gathered (or dealt again) without a Stop: the round is over
            self._unclaimed(table, match, seats, out)
            out.append(Decision(CardsRanOut()))
            self._closed_on_deal = self._new_deal(table, match)
            return
        if table.backs > 0:
            self._backs_seen = True
            self._no_backs_since = None
            return
        held = self._out_of_turn
        if table.hand_present or any(
            a.track not in held for group in table.arrivals.values() for a in group
        ):
            self._no_backs_since = None
            return
        if not self._backs_seen:
            return
        if self._no_backs_since is None:
            self._no_backs_since = table.time
        done = table.time - self._no_backs_since >= self.settings.ran_out_after
        if done and not match.pending_decision:
            self._unclaimed(table, match, seats, out)
            out.append(Decision(CardsRanOut()))
            self._closed_on_deal = False
            self._backs_seen = False
            self._no_backs_since = None

    def _unclaimed(self, table: TableState, match, seats: dict, out: list) -> None:
        """The cards ran out: every card was laid, and none is left on the field (a month's
        four come and go in pairs, the fourth taking the three), so every card of the deck
        was captured. A card never decided (laid under the next of a row before it lay
        still) whose month one player, and only he, holds an odd number of (its partner
        waiting) is his: credited, flagged for a check, with the card lying unregistered in
        his capture area that reads likeliest as it when there is one."""
        if table.field or len(match.players) < 2:
            return  # cards on the field: the deal was not played out (a round cut short)
        owned = {c.code for cards in match.captures.values() for c in cards}
        missing = [c for c in ALL_CODES if c not in owned]
        if not missing or len(missing) > self.settings.unclaimed_at_most:
            return
        held = {
            seat: Counter(_month(c.code) for c in match.captures.get(match.side_of(p), []))
            for seat, p in seats.items()
        }
        left = Counter(_month(c) for c in missing)
        for code in missing:
            month = _month(code)
            odd = [seat for seat, months in held.items() if months[month] % 2]
            if left[month] != 1 or len(odd) != 1:
                continue  # two of a month missing, or no one (or several) waiting: unsure
            seat = odd[0]
            arrivals = table.arrivals.get(seat, ())
            odds = {a.track: dict(a.candidates).get(code, 0.0) for a in arrivals}
            track = max(odds, key=odds.get) if any(odds.values()) else -1
            reading = Reading(track, seat, code, odds.get(track, 0.0), True, (), table.frame)
            out.append(Decision.captured(seats[seat], reading))
            held[seat][month] += 1
            self._registered_at[code] = table.time

    def _gathered(self, table: TableState, match) -> bool:
        """The captures have been out of sight a while, with no hand over them, and the pile
        has gone too or a new field lies dealt: the table was gathered."""
        if table.hand_present or table.captures_unseen < self.settings.gathered_after:
            return False
        if table.captures_unseen == float("inf"):
            return False
        return table.backs == 0 or self._new_deal(table, match)

    def _new_deal(self, table: TableState, match) -> bool:
        return table.fresh_field >= _deal_size(match) - self.settings.deal_short

    def _round_closed(self, match) -> None:
        """The round just ended: the next opens on a new deal, never on the cards still
        lying from this one."""
        self._clear_seen = self._closed_on_deal
        self._closed_on_deal = False
        self.proposal = None
        self._closed_sight = None
        self._laid_since_stop = 0
        self._clear_since = None
        self._episode = None
        self._deal_since = None
        self._taking_over = None  # what was taken over was that round's
        last = match.rounds[-1] if match.rounds else None
        tapped_stop = last is not None and last.kind == "stop" and not self._said_stop
        self._tapped = ("stop", last.winner, None) if tapped_stop else None
        self._said_stop = False

    def _redeal_proposal(self, match) -> Proposal | None:
        redeal = [w for w in match.warnings if w.kind == "redeal"]
        return Proposal("redeal", redeal[0]) if redeal else None

    def _redeal_from_table(self, table: TableState, match, out: list) -> bool:
        """A field the rules deal again (the engine warns), gathered before any capture:
        ``redeal``; the new field is read from the next deal."""
        if self.proposal is None or self.proposal.kind != "redeal" or _captured(match):
            self._swept_since = None
            return False
        # the dealer's hand goes on: no hand test
        if table.cards_in_sight > self.settings.clear_at_most:
            self._swept_since = None
            return False
        if self._swept_since is None:
            self._swept_since = table.time
        if table.time - self._swept_since < self.settings.swept_after:
            return False
        out.append(Decision(Redeal()))
        self._redeal_by_table = True
        self._swept_since = None
        return True

    # -- dealing -----------------------------------------------------------------------------

    def _between_rounds(self, table: TableState, match, out: list) -> None:
        if self._closed_sight is None:
            self._closed_sight = table.cards_in_sight
        if not self._table_cleared(table):
            more = table.cards_in_sight > self._closed_sight and not table.hand_present
            self._laid_since_stop = self._laid_since_stop + 1 if more else 0
            laid_after = self._laid_since_stop >= self.settings.laid_after_stop
            if self._tapped and self._tapped[0] == "stop" and laid_after:
                player = self._tapped[1]
                self.notice = Message("camera.laid_after_stop", player=player)
            return
        if match.rounds and self.proposal is None:
            self.proposal = Proposal("next_round", Message("camera.next_round"))
        field_cards = self._dealt_field(table, match)
        if field_cards is None:
            return
        out.append(Decision(RoundStarted(field=field_cards)))
        self.proposal = None
        self._backs_seen = table.backs > 0
        self._no_backs_since = None

    def _read_field(self, table: TableState, match, out: list) -> bool:
        """A round under way without its dealt field (dealt again, or opened on the tablet):
        ``field_dealt`` once the deal lies. True while it waits (no capture is decided before
        the field is known, unless play has begun without a readable deal)."""
        if not self._table_cleared(table):
            return not any(table.arrivals.values())
        field_cards = self._dealt_field(table, match)
        if field_cards is None:
            return not any(table.arrivals.values())
        out.append(Decision(FieldDealt(field=field_cards)))
        self._backs_seen = table.backs > 0
        return True

    def _table_cleared(self, table: TableState) -> bool:
        """Whether the table has been seen clear (at most ``clear_at_most`` face-up cards in
        sight) since the round ended: only then is a field a new deal."""
        if not self._clear_seen:
            # a hand hides some cards, not a whole table: held a while, over two looks or more
            if table.cards_in_sight > self.settings.clear_at_most:
                self._clear_since = None
            elif self._clear_since is None:
                self._clear_since = table.time
            elif table.time - self._clear_since >= self.settings.clear_held:
                self._clear_seen = True
        return self._clear_seen and not table.stale

    def _dealt_field(self, table: TableState, match) -> tuple | None:
        """The dealt field once it lies: ``deal`` steady field cards unchanged for a moment, or
        as soon as a capture shows (play starts at once), or a few fewer after a longer while."""
        s = self.settings
        deal = _deal_size(match)
        field_cards = tuple(sorted(table.field))
        playing = any(table.arrivals.values())
        if self._round_unseen and playing and field_cards:
            # dealt and played while the camera was away: opened on the field lying; the
            # captures lying are taken over, and a decision they call for is asked
            self._round_unseen = False
            self._taking_over = sum(len(a) for a in table.arrivals.values())
            return field_cards
        if len(field_cards) < deal - s.deal_short:
            self._deal_since = None
            return None
        if table.cards_in_sight < deal - s.deal_short:
            return None  # field cards remembered, not seen: a deal lies in sight
        if field_cards != self._deal_codes or self._deal_since is None:
            self._deal_codes, self._deal_since = field_cards, table.time
            if not playing:
                return None
        lain = table.time - self._deal_since
        whole = len(field_cards) >= deal and lain >= s.deal_steady
        if not (playing or whole or lain >= s.deal_short_after):
            return None
        self._deal_since = None
        return field_cards


def _seconds(seconds: float | None) -> int:
    return int(round(seconds or 0))


def _captured(match) -> bool:
    return any(match.captures.values())


def _episode_key(match, player: str) -> tuple:
    return (match.round_number, match.redeals, player, match.koi.get(player, 0))


def _unread_key(match, player: str) -> tuple:
    return ("captures", match.round_number, match.redeals, player)


def _laid(table: TableState, match) -> int:
    """Cards laid face up since the deal: each turn lays two (the hand's card, the pile's),
    whether they take or not, so the count of face-up cards grows by one per card laid.
    Captures count once decided (an undecided arrival may be a look at part of a row)."""
    captured = sum(len(cards) for cards in match.captures.values())
    dealt = len(match.field) or _deal_size(match)
    return len(table.field) + captured - dealt


def _next_turn_card(match, player: str, laid: int) -> int:
    """The first card after the ``laid``-th that another player lays (turns of two cards
    each, the Oya's first). The player's own turn is skipped whole, so a count one short
    (a card on its way to the captures is not counted while it moves) still finds the next
    player's card."""
    order = list(match.players)
    if match.oya in order:
        i = order.index(match.oya)
        order = order[i:] + order[:i]
    m = max(laid, 0) + 1
    while order[((m + 1) // 2 - 1) % len(order)] == player:
        m += 1
    return m


def _deal_size(match) -> int:
    return 6 if len(match.players) >= 3 else 8

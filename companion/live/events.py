"""Capture decisions: stable table state in, engine events out, using the game's own structure.

A capture brings two cards of one month into a capture area together (four when the fourth
card of a month takes three). So the steady new cards of a capture area are decided as a
group once the hand has left: among each card's likeliest codes, the group takes the joint
reading that is likeliest while pairing by month (distinct codes, none already captured; a
card that just left the field is likelier). A card whose reading stays doubtful, or a group
whose months cannot pair, is flagged (``check``) for the tablet.

The rest of a round's life: a dealt field seen on a clear table opens a round
(``round_started`` with the field read; four of a month in it makes the engine propose a
redeal); a table without backs for a while ends it (``cards_ran_out``); a cleared table
after a round proposes the next one. Koi and Stop stay the players' taps.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass, field

from companion.game.cards import Card, Category
from companion.game.messages import Message
from companion.live.tracker import Arrival, TableState

# seconds from the first look with nothing moving over a card to its decision: one more
# look at 10 looks a second, whatever the camera's frame rate
SETTLE_SECONDS = 0.08
PARTNER_WAIT = 2.5  # seconds a doubtful lone card waits for its partner
CHECK_BELOW = 0.6  # a card read with less (scoring-equivalent) probability is flagged
UNLIKELY = 0.03  # a reading the pair rule chose against the looks this strongly is flagged
PAIR_PENALTY = math.log(20.0)  # a month left odd by a reading (captures come in pairs)
PAIR_WINDOW = 8.0  # seconds within which a card's partner is expected (one turn)
SURE = 0.8  # a lone card read this surely is registered before its partner arrives
FIELD_BONUS = math.log(4.0)  # a card that just left the field is this much likelier
FIELD_RECENT = 60  # frames during which a card that left the field counts as just left
DEAL_STEADY = 0.5  # seconds the dealt field lies unchanged before the round is opened
RAN_OUT_AFTER = 2.0  # seconds without backs in view (after some were) before cards ran out
GATHERED_AFTER = 1.5  # seconds without a sight of the captures: they were gathered
MAX_COMBOS = 20000


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


@dataclass
class Proposal:
    kind: str  # "redeal" | "next_round"
    text: str  # a Message: the page says it in its language


@dataclass
class DeciderOutput:
    events: list = field(default_factory=list)  # engine event dicts
    readings: list = field(default_factory=list)  # Reading per card_captured, same order
    cleared: bool = False  # the table was cleared after a finished round: forget it


def _month(code: str) -> int:
    return int(code[:2])


def _equivalent(code: str) -> tuple:
    """Codes scoring never tells apart share a key: the plain chaff of one month (not the
    lightning 11-4 nor the coloured 12-2 chaff, which some rule sets score)."""
    card = Card.from_code(code)
    if card.category is Category.CHAFF and code not in ("11-4", "12-2"):
        return (card.month, "chaff")
    return (code,)


def pairs_up(codes) -> bool:
    """Whether a group of captured cards can be whole captures: each month two or four."""
    return all(n in (2, 4) for n in Counter(_month(c) for c in codes).values())


def _odd_months(codes) -> int:
    return sum(1 for n in Counter(_month(c) for c in codes).values() if n % 2)


def resolve_group(
    arrivals, owned=(), field_left=None, field_now=(), fixed=(), expected=None
) -> list[tuple]:
    """The group's reading: [(code, confidence, check, alternatives)] in arrival order.

    ``fixed``: the player's captures still waiting for their partner (an odd month), which the
    arrivals may pair with; ``owned``: codes already captured this round (impossible);
    ``field_left``: codes that just left the field (likelier); ``field_now``: codes lying
    steadily on the field (unlikelier). Each month left odd costs ``PAIR_PENALTY``: the
    joint reading pairs up unless the looks say otherwise strongly. A card's confidence is its
    probability under that prior (chaff of one month counted as one); a card is flagged when
    it is doubtful, when the pair rule chose against its looks, or when it had a card to pair
    with and does not (``expected``: the waiting cards it should pair with, those of the
    turn under way; all of ``fixed`` by default).
    """
    expected = list(fixed if expected is None else expected)
    owned = set(owned) | set(fixed)
    field_left = set(field_left or ())
    field_now = set(field_now)
    fixed = list(fixed)
    n = len(arrivals)
    k = 5 if n <= 4 else 3 if n <= 6 else 2

    def prior(code: str) -> float:
        score = 0.0
        if code in field_left:
            score += FIELD_BONUS
        if code in field_now:
            score -= FIELD_BONUS
        return score

    options = []
    for a in arrivals:
        opts = sorted(
            ((math.log(max(p, 1e-9)) + prior(c), c) for c, p in a.candidates if c not in owned),
            reverse=True,
        )
        options.append(opts[:k] or [(math.log(1e-9), a.candidates[0][0])])
    best = None
    for count, combo in enumerate(itertools.product(*options)):
        if count > MAX_COMBOS:
            break
        codes = [c for _, c in combo]
        if len(set(codes)) != n:
            continue
        score = sum(sc for sc, _ in combo) - PAIR_PENALTY * _odd_months([*fixed, *codes])
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
            c: p * math.exp(prior(c) - PAIR_PENALTY * _odd_months([*others, c]))
            for c, p in a.candidates
            if c not in owned and c not in others
        }
        key = _equivalent(code)
        total = sum(weights.values()) or 1.0
        confidence = min(1.0, sum(w for c, w in weights.items() if _equivalent(c) == key) / total)
        alternatives = tuple(c for c, _ in a.candidates if c != code and c not in owned)[:3]
        unpaired = partners and Counter(_month(c) for c in [*mates, code])[_month(code)] % 2 == 1
        check = confidence < CHECK_BELOW or probs.get(code, 0.0) < UNLIKELY or unpaired
        out.append((code, confidence, check, alternatives))
    return out


def _waiting(held) -> list:
    """The captures still waiting for their partner: those of a month held an odd number of
    times."""
    months = Counter(_month(c) for c in held)
    return [c for c in held if months[_month(c)] % 2]


def surely(arrival: Arrival) -> float:
    """The probability of an arrival's likeliest reading (chaff of one month counted as one)."""
    code = arrival.candidates[0][0]
    key = _equivalent(code)
    return sum(p for c, p in arrival.candidates if _equivalent(c) == key)


class CaptureDecider:
    """``decider.step(table, match) -> DeciderOutput``: the events a table state calls for.

    ``seats`` maps the layout's seat labels to the match's players (seat order by default).
    """

    def __init__(self, players_per_deal: dict | None = None):
        self._alone_since: dict[str, float] = {}
        self._registered_at: dict[str, float] = {}  # code -> when the camera captured it
        self._deal_since: float | None = None
        self._deal_codes: tuple = ()
        self._backs_seen = False
        self._no_backs_since: float | None = None
        self.proposal: Proposal | None = None
        self._round_seen = False  # the current round's table has been watched

    def step(self, table: TableState, match, seats: dict) -> DeciderOutput:
        out = DeciderOutput()
        if match is None or not match.started or match.finished:
            return out
        if match.round_in_progress:
            self.proposal = self._redeal_proposal(match)
            self._captures(table, match, seats, out)
            self._ran_out(table, match, out)
        else:
            self._between_rounds(table, match, out)
        return out

    # -- during a round ----------------------------------------------------------------------

    def _captures(self, table: TableState, match, seats: dict, out: DeciderOutput) -> None:
        owned = {c.code for cards in match.captures.values() for c in cards}
        recent = {c for c, f in table.field_left.items() if table.frame - f <= FIELD_RECENT}
        for seat, arrivals in table.arrivals.items():
            player = seats.get(seat)
            if player is None:
                continue
            # the player's arm keeps crossing his own capture area: each card is decided as
            # soon as nothing moves over it, not when the whole area is still
            side = match.side_of(player)
            held = [c.code for c in match.captures.get(side, [])]
            quiet = [
                a
                for a in arrivals
                if table.time - a.quiet_time >= SETTLE_SECONDS - 1e-6
                and (not a.overlaps or self._plausible_over(a, held, table))
            ]
            if not quiet:
                if not arrivals:
                    self._alone_since.pop(seat, None)
                continue
            decided = set()
            for a in sorted(quiet, key=lambda a: (a.steady_since, a.track)):
                if surely(a) >= SURE:
                    self._decide(
                        [a], player, seat, owned, recent, table, _waiting(held), out, held
                    )
                    decided.add(a.track)
            doubtful = [a for a in quiet if a.track not in decided]
            if not doubtful:
                self._alone_since.pop(seat, None)
                continue
            waiting = _waiting(held)
            if len(doubtful) == 1 and not waiting:
                since = self._alone_since.setdefault(seat, table.time)
                if table.time - since < PARTNER_WAIT:
                    continue  # a doubtful lone card: its partner will help read it
            self._alone_since.pop(seat, None)
            ordered = sorted(doubtful, key=lambda a: (a.steady_since, a.track))
            self._decide(ordered, player, seat, owned, recent, table, waiting, out, held)

    def _plausible_over(self, a: Arrival, held, table: TableState) -> bool:
        """A card found over one of the player's captures is a new card (not a misread of
        the covered one) only when it pairs with a capture waiting for its partner."""
        months = {_month(c) for c in _waiting(held)}
        return any(_month(c) in months and p >= 0.1 for c, p in a.candidates)

    def _decide(self, group, player, seat, owned, recent, table, waiting, out, held) -> None:
        # the partner of a card comes within the same turn: older odd cards (a misread, a
        # capture missed) help reading but are not expected to pair any more
        expected = [
            c for c in waiting if table.time - self._registered_at.get(c, -1e9) <= PAIR_WINDOW
        ]
        readings = resolve_group(
            group, owned, recent, table.field, fixed=waiting, expected=expected
        )
        waiting_months = {_month(c) for c in waiting}
        for a, (code, conf, check, alts) in zip(group, readings, strict=True):
            # over a capture and pairing with nothing: maybe a misread of the covered card
            check = check or (a.overlaps and _month(code) not in waiting_months)
            event = {
                "type": "card_captured",
                "player": player,
                "card": code,
                "source": "camera",
                "confidence": round(conf, 3),
            }
            if check:
                event["check"] = True
            if alts:
                event["alternatives"] = list(alts)
            out.events.append(event)
            out.readings.append(Reading(a.track, seat, code, conf, check, alts, a.steady_since))
            owned.add(code)
            held.append(code)
            self._registered_at[code] = table.time

    def _ran_out(self, table: TableState, match, out: DeciderOutput) -> None:
        if self._gathered(table, match) and not match.pending_decision:
            # the cards were gathered (or dealt again) without a Stop: the round is over
            out.events.append({"type": "cards_ran_out"})
            return
        if table.backs > 0:
            self._backs_seen = True
            self._no_backs_since = None
            return
        if table.hand_present or any(table.arrivals.values()):
            self._no_backs_since = None
            return
        if not self._backs_seen:
            return
        if self._no_backs_since is None:
            self._no_backs_since = table.time
        done = table.time - self._no_backs_since >= RAN_OUT_AFTER
        if done and not match.pending_decision:
            out.events.append({"type": "cards_ran_out"})
            self._backs_seen = False
            self._no_backs_since = None

    def _gathered(self, table: TableState, match) -> bool:
        """The captures have been out of sight a while, with no hand over them, and the pile
        has gone too or a new field lies dealt: the table was gathered."""
        if table.hand_present or table.captures_unseen < GATHERED_AFTER:
            return False
        if table.captures_unseen == float("inf"):
            return False
        return table.backs == 0 or table.fresh_field >= _deal_size(match) - 2

    def _redeal_proposal(self, match) -> Proposal | None:
        redeal = [w for w in match.warnings if w.kind == "redeal"]
        return Proposal("redeal", redeal[0]) if redeal else None

    # -- between rounds -----------------------------------------------------------------------

    def _between_rounds(self, table: TableState, match, out: DeciderOutput) -> None:
        if table.cleared and match.rounds:
            out.cleared = True
            self.proposal = Proposal("next_round", Message("camera.next_round"))
        if table.stale:
            return  # the finished round's cards still lie there
        deal = _deal_size(match)
        field_cards = tuple(sorted(table.field))
        # play starts as soon as the deal is done (arms over the table at once): the round
        # opens when the dealt field has lain unchanged a moment, or when a capture shows
        playing = any(table.arrivals.values())
        if len(field_cards) < deal - 2:
            self._deal_since = None
            return
        if field_cards != self._deal_codes or self._deal_since is None:
            self._deal_codes, self._deal_since = field_cards, table.time
            if not playing:
                return
        lain = table.time - self._deal_since
        if not (playing or (len(field_cards) >= deal and lain >= DEAL_STEADY) or lain >= 3.0):
            return
        out.events.append({"type": "round_started", "field": list(field_cards)})
        self.proposal = None
        self._backs_seen = table.backs > 0
        self._no_backs_since = None
        self._deal_since = None


def _deal_size(match) -> int:
    return 6 if len(match.players) >= 3 else 8

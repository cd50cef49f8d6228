"""Every knob of the table in one place: the live pipeline's settings, read like a camera
NVR's configuration. Each part's tuning is a frozen dataclass whose every field is a choice: its
default, what moving it trades in one line, and the range it may take (refused, in one sentence,
outside it).

- ``TrackerSettings``: how the stable table follows cards from look to look
  (``companion/live/tracker.py``);
- ``DeciderSettings``: how a capture, a Koi, a Stop and a round's end are read from that table
  (``companion/live/capture_decider.py``);
- ``PipelineSettings``: when the detector looks (the motion gate) and how a restarted pipeline
  finds its place (``companion/live/pipeline.py``).

A part's settings are declared with ``tuning``::

    @dataclass(frozen=True)
    class PartSettings:
        wait: float = tuning(0.5, "seconds ...: more ..., less ...")

        def __post_init__(self):
            check_ranges(self, "part")

``PartSettings.describe()`` lists each setting with its trade-off; docs/LIVE.md gives them with
their defaults.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, fields

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


@dataclass(frozen=True)
class TrackerSettings:
    """The tracker's tuning: every threshold, wait and count it follows cards by, each with what
    moving it trades (``TrackerSettings.describe()`` lists them). Distances are in card heights,
    seconds are the frames' own clock, looks are the detector's looks. A value out of range is
    refused."""

    # -- naming a card ------------------------------------------------------------------------
    window: int = tuning(
        5,
        "looks a track's name is fused over (and steadiness counted in): more outlasts a run of "
        "misreads, less follows a card's true name sooner after one",
        low=1,
    )
    steady_looks: int = tuning(
        3,
        "looks of the last window a card must be seen in to settle (at most window): more holds "
        "back a card glimpsed through glare, fewer settles a card passing by",
        low=1,
    )
    verified_share: float = tuning(
        0.95,
        "share of a card's belief the code its own points found when it settled holds (a "
        "taught deck's second reading, ``TableTracker.verify``), the looks keeping the rest as "
        "the alternatives: more lets no misreading look outvote it, less lets many outvote it",
        high=1.0,
    )
    verify_tries: int = tuning(
        4,
        "times a settled card a taught deck's own points have not found yet is read by them "
        "again (the first as it settles, a hand often still near it): more finds more cards "
        "once the hand has gone, each try costing tens of ms",
        low=1,
    )
    verify_every: float = tuning(
        0.3,
        "seconds between two such readings of one card: less reads it again sooner, more "
        "waits for a look with nothing moving over it",
    )
    look_floor: float = tuning(
        1e-4,
        "the least probability one look gives any code: lower lets one bad look rule a card's "
        "name out, higher lets a track's name turn more slowly on clear looks",
        high=0.02,
    )
    names_tried: int = tuning(
        6,
        "a track's likeliest codes tried, in order, when codes are handed out (one card per "
        "code): more names a card by a far-fetched code rather than leaving it unnamed",
        low=1,
    )
    doubtful_below: float = tuning(
        0.8,
        "a field card named with less probability than this is listed as doubtful: higher "
        "lists more cards, lower hides more misreads",
        high=1.0,
    )
    doubtful_alternatives: int = tuning(
        3, "readings listed for a doubtful field card: more shows unlikelier ones too", low=1
    )
    arrival_candidates: int = tuning(
        5,
        "readings an arrival offers the decider, likeliest first: fewer hides a card's true "
        "name from the pair rule when the looks ranked it low",
        low=1,
    )
    # -- following a card from look to look ---------------------------------------------------
    same_card_iou: float = tuning(
        0.55,
        "a look overlapping a track this much (IoU) is the same card: lower takes the next card"
        " of a fanned row (overlapping about 0.5) for the one below, higher loses cards nudged",
        high=1.0,
    )
    same_name_distance: float = tuning(
        0.45,
        "card heights within which a look with a track's name is that card: more follows a "
        "card moved further, but may take a neighbour's look",
    )
    shifted_reach: float = tuning(
        1.0,
        "card heights within which a registered capture missing from the last look is found "
        "again under its name (shifted as it was let go, nudged under a hand): more risks "
        "taking another card of the same name for it",
    )
    agree: float = tuning(
        0.02,
        "least chance that a look and a track name the same card for the look to join it: "
        "higher splits a card misread once into two tracks, lower lets a card laid on another "
        "join the one below",
        high=1.0,
    )
    agreeing_looks: int = tuning(
        3,
        "looks a track needs before its name can refuse a look: fewer lets a newborn track's "
        "first misread refuse the card's true looks",
        low=1,
    )
    same_name_bonus: float = tuning(
        0.5,
        "what naming a track's card adds to a look's claim on it (against overlap): more "
        "prefers the named look over the overlapping one",
    )
    distance_penalty: float = tuning(
        0.1,
        "what each card height of distance takes off a look's claim on a track: more prefers "
        "the nearest look over the best overlapping one",
    )
    # -- lying still ----------------------------------------------------------------------------
    moved: float = tuning(
        0.2,
        "card heights a track's centre moves from where it came to rest for it to be carried "
        "(in a hand: its looks start again): less restarts cards a detector's jitter moves",
    )
    at_rest: float = tuning(
        0.2,
        "seconds a card lies still before it is steady (besides being seen in most looks): a "
        "card held a moment just above its place, or a faster camera, settles no sooner; "
        "longer delays every capture as much",
    )
    still: float = tuning(
        0.1,
        "card heights (about 5 mm) a card not yet steady may stray from where it came to rest "
        "and still be resting: lower catches a steadier hand, but lets a detector's jitter on "
        "a lying card hold it back",
    )
    disturbed_margin: float = tuning(
        0.1,
        "share of a card's box added around it where motion counts as moving over it: more "
        "holds a card back for a hand moving beside it",
    )
    sure_at_rest: float = tuning(
        0.9,
        "a card in a capture area seen in this look where it has lain still (``at_rest``) and "
        "read at least this surely is not held back by motion over it (the hand that laid it "
        "leaving, an arm reaching past): lower may settle a card a hand still holds still, "
        "higher waits for the hand to be gone (above 1: always)",
        high=1.01,
    )
    still_sure: float = tuning(
        0.9,
        "a capture-area card its last look saw lying still, read at least this surely, "
        "settles on the first frame its ``at_rest`` is up if nothing moved over it since that"
        " look (the motion gate's picture stands for the look, so the capture is recorded "
        "without waiting for the detector): lower records a doubtful card on fewer looks, "
        "higher waits for a look (above 1: always)",
        high=1.01,
    )
    still_step: float = tuning(
        0.05,
        "card heights a capture-area card's centre may have moved between its last two looks "
        "for it to settle without a look (``still_sure``): a card lying there moves only by "
        "the detector's jitter, one held just above its place drifts while the picture may "
        "barely change; more lets a held card settle, less waits for a look more often",
    )
    capture_patience: int = tuning(
        8,
        "looks an unregistered card in a capture area may be missed before it is gone (it "
        "cannot leave the area, only be covered): more keeps a card taken back longer",
        low=1,
    )
    carried_away_looks: int = tuning(
        20,
        "an unregistered card unseen for more looks than this is gone even with a hand over "
        "the table (carried away): fewer drops cards a long-lingering arm covers",
        low=1,
    )
    # -- a hand over the table -----------------------------------------------------------------
    hand_motion: float = tuning(
        0.02,
        "share of the frame moving at once that means a hand or an arm: lower takes a "
        "flicker or a shadow for a hand (freezing the table), higher misses a small hand",
        high=1.0,
    )
    hand_lingers: int = tuning(
        1,
        "looks after the last sign of a hand during which it still counts as present (it is "
        "only just leaving): more freezes the table longer after every turn",
    )
    vanished_at_once: int = tuning(
        3,
        "steady cards missing from one look at once that mean something covers them: fewer "
        "takes two cards picked up together for a hand",
        low=1,
    )
    covered_at_most: float = tuning(
        2.0,
        "seconds after which cards missing together were taken away (a gathered field), not "
        "covered by a hand: more freezes the table longer when cards go",
    )
    # -- captures --------------------------------------------------------------------------------
    on_top_confidence: float = tuning(
        0.3,
        "a capture's look naming another free card at least this surely also feeds a track of "
        "its own over the capture (the next card of a fanned row): lower makes cards of "
        "misreads",
        high=1.0,
    )
    overlap: float = tuning(
        0.6,
        "an arrival overlapping a registered capture this much (IoU) may be a misread of it "
        "(the decider asks more of it): lower suspects more cards laid over captures",
        high=1.0,
    )
    contained: float = tuning(
        0.75,
        "share of a smaller track lying within a capture for it to be a look at part of that "
        "card, not a card (a fanned card lies half outside): lower drops real cards",
        high=1.0,
    )
    smaller: float = tuning(
        0.8,
        "a track this much smaller than a capture (by area) may show only part of it: higher "
        "takes a whole card over a capture for a part of it",
        high=1.0,
    )
    # -- the end of a round ----------------------------------------------------------------------
    in_sight: float = tuning(
        2.0,
        "seconds: a card seen this recently when the round ends is in sight, and tells when "
        "the table is cleared (the others, deep in a fanned row, go with them)",
    )
    cleared_after: float = tuning(
        1.0,
        "seconds without a sight of the ended round's cards in sight before they were cleared "
        "away: less clears a table a hand only covers",
    )
    cleared_share: float = tuning(
        0.2,
        "the ended round's cards are cleared once no more than this share of those in sight is "
        "still seen (a card left lying does not hold the next round up): less waits for the "
        "last cards",
        high=1.0,
    )
    cleared_missed_looks: int = tuning(
        3,
        "looks an ended round's card in sight must be missed to count as taken away when the "
        "table's clearing is judged: fewer clears a table a hand briefly covers",
        low=1,
    )
    left_missed_looks: int = tuning(
        2,
        "looks after which an ended round's card in sight, missed, is taken away and never "
        "followed again (a card dealt at its place is a new one): more takes a new card for "
        "an old one",
        low=1,
    )
    # -- what the table shows ------------------------------------------------------------------
    backs_looks: int = tuning(
        3,
        "looks over which the most backs seen are counted (a hand hides the pile now and "
        "then): more keeps a pile taken away counted longer",
        low=1,
    )
    in_sight_looks: int = tuning(
        2,
        "a card seen in the last this many looks is in sight (a gathered table shows few): "
        "more counts cards just taken away",
        low=1,
    )

    def __post_init__(self):
        check_ranges(self, "tracker")
        if self.steady_looks > self.window:
            raise CompanionError(
                f"The tracker's steady_looks must be at most its window ({self.window}), "
                f"not {self.steady_looks}."
            )

    @property
    def field_patience(self) -> int:
        """Looks a field card may be missed before it is gone: once missed this many of the
        last ``window``, it can no longer be seen in ``steady_looks`` of them."""
        return self.window - self.steady_looks + 1

    @classmethod
    def describe(cls) -> dict[str, str]:
        """Each setting's name -> what moving it trades, one line."""
        return describe(cls)


@dataclass(frozen=True)
class DeciderSettings:
    """The capture decider's tuning: every wait, threshold and count it decides by, each with
    what moving it trades (``DeciderSettings.describe()`` lists them). Seconds are the frames'
    own clock; odds multiply a reading's likelihood. A value out of range is refused."""

    # -- reading a capture ------------------------------------------------------------------
    settle_seconds: float = tuning(
        0.08,
        "seconds from the first look with nothing moving over a card to its decision: less "
        "decides cards still being laid, more delays every capture (0.08: one more look at 10"
        " looks a second)",
    )
    sure: float = tuning(
        0.8,
        "a lone card read at least this surely is registered before its partner arrives: "
        "lower registers more misreads alone, higher makes more cards wait",
        high=1.0,
    )
    partner_wait: float = tuning(
        2.5,
        "seconds a doubtful lone card waits for its partner to help read it: more reads more "
        "cards by their pair, but records a lone capture later",
    )
    pair_window: float = tuning(
        8.0,
        "seconds (about one turn) within which a capture's partner is expected, so a card not"
        " pairing with it is flagged: more flags cards against older odd captures, less "
        "misses a slow partner",
    )
    odd_month_odds: float = tuning(
        20.0,
        "how many times less likely a group's reading is for each month it leaves odd "
        "(captures come in pairs): more overrules the looks more often, less keeps misreads "
        "that break a pair",
        low=1.0,
    )
    field_left_odds: float = tuning(
        4.0,
        "how many times likelier a code is for having just left the field (and less likely "
        "for lying on it): more favours the field's cards over what the looks say",
        low=1.0,
    )
    field_recent_frames: int = tuning(
        60,
        "frames during which a card that left the field counts as just left: more favours "
        "cards taken turns ago",
    )
    check_below: float = tuning(
        0.6,
        "a card read with less probability than this (chaff of a month counted as one) is "
        "flagged for a check: higher asks the players more often, lower lets more misreads "
        "through unasked",
        high=1.0,
    )
    unlikely: float = tuning(
        0.03,
        "a reading the pair rule chose although its looks gave it less than this is flagged: "
        "higher flags more of the pair rule's choices, lower trusts it more",
        high=1.0,
    )
    codes_weighed: tuple = tuning(
        ((4, 5), (6, 3)),
        "(group size up to, likeliest codes weighed per card) in order: more codes find a "
        "reading far down a card's list, at a cost growing as a power of the group's size",
    )
    codes_weighed_beyond: int = tuning(
        2,
        "likeliest codes weighed per card in a group larger than those of codes_weighed: more "
        "finds rarer readings of large groups, at a cost growing fast with the group",
        low=1,
    )
    max_combos: int = tuning(
        20000,
        "joint readings of a group weighed at most: more finds the best reading of a large "
        "group, at a cost per look that grows with it",
        low=1,
    )
    alternatives: int = tuning(
        3,
        "next likeliest codes kept with a capture (offered first when correcting it): more "
        "makes the tablet's list longer",
    )
    over_capture_pairs: float = tuning(
        0.1,
        "a card found over a player's capture is a new card only if it has this probability "
        "of pairing with a capture waiting for its partner: lower records misreads of the "
        "covered card, higher misses cards laid over a row",
        high=1.0,
    )
    captured_look: float = tuning(
        0.8,
        "an arrival read at least this surely as cards already captured this round is a look "
        "at one of them (two cards of a row seen as one, a capture seen again), not a new "
        "card, unless a free reading of it pairs with a capture waiting for its partner: "
        "lower passes over more real cards misread, higher records more such looks under "
        "another name (and the real card's name goes to the next one; above 1: never)",
        high=1.01,
    )
    turn_open: float = tuning(
        2.0,
        "seconds after a card reached a player's captures during which a lone card reaching "
        "another player's is out of turn (the next player's hand has yet to come) and waits "
        "for a partner: more holds a quick next player's first card until its partner lies, "
        "less lets looks at a row that settled as a hand left through as captures",
    )
    stop_tapped_wait: float = tuning(
        2.0,
        "seconds a Stop tapped while a capture settles waits for it to be decided first: more"
        " records a slow last capture, but shows the round's end later",
    )
    # -- Koi and Stop read from the table ---------------------------------------------------
    koi_hold: float = tuning(
        0.2,
        "seconds the cards laid beyond the player's turn stay counted before a Koi is read: "
        "more ignores a brief miscount, but reads the Koi later",
    )
    episode_settle: float = tuning(
        1.0,
        "seconds after a decision is asked during which the player's own turn is still "
        "counted (a card on its way, his draw): more reads a Koi later, never wrongly; less "
        "may take his own card for the next player's",
    )
    gathered_share: float = tuning(
        0.25,
        "captures in sight at most this share of the most seen since the question: the "
        "captures were gathered (a wrist on one player's rows hides fewer; a sweep leaves "
        "none); higher reads a Stop from a hidden row",
        high=1.0,
    )
    gathered_least: int = tuning(
        2,
        "captures seen since the question, at least, for their going to be a sweep: less "
        "reads a Stop from one card hidden",
    )
    stop_after: float = tuning(
        1.0,
        "seconds the captures stay gathered before a Stop is read: more ignores a hand "
        "resting over them longer, but reads the Stop later",
    )
    gathered_after: float = tuning(
        1.5,
        "seconds without a sight of any capture (no hand over them) before the table counts "
        "as gathered: less takes a passing shadow for a sweep, more ends a round later",
    )
    # -- a round's end and the next deal ----------------------------------------------------
    ran_out_after: float = tuning(
        2.0,
        "seconds without the pile's backs in view (after some were) before the cards ran out:"
        " less ends a round when the pile is hidden, more ends it later",
    )
    deal_steady: float = tuning(
        0.5,
        "seconds a whole dealt field lies unchanged before the round is opened: less opens on"
        " a deal still being laid, more opens later",
    )
    deal_short: int = tuning(
        2,
        "field cards a deal may show fewer than the rules deal (covered, misread) and still "
        "count as a deal: more takes a partly cleared table for a deal",
    )
    deal_short_after: float = tuning(
        3.0,
        "seconds a deal short of cards lies unchanged before the round is opened anyway: less"
        " opens on a deal still being laid",
    )
    clear_at_most: int = tuning(
        2,
        "face-up cards in sight at most for the table to be clear (a stray card left lying): "
        "more takes a half-gathered table for a clear one",
    )
    clear_held: float = tuning(
        0.5,
        "seconds the table stays that clear, hand or not, before a new deal may open a round "
        "(a hand hides some cards, never a whole table): less takes a covered table for a "
        "clear one",
    )
    swept_after: float = tuning(
        1.0,
        "seconds a field the rules deal again lies gathered before the redeal is read: less "
        "takes a hand over the field for a sweep",
    )
    unclaimed_at_most: int = tuning(
        4,
        "cards of the deck not captured, at most, when the cards run out with the field bare,"
        " for each to be credited to the one player holding an odd number of its month (his "
        "capture's partner, missed): more credits cards on a round cut short",
    )
    # -- after the camera was away (a dropped stream, a dark or covered lens, a restart) -----
    back_settle: float = tuning(
        1.0,
        "seconds the table is watched after the camera comes back (no hand over it, no card "
        "waiting) before it is compared with what was recorded: less compares a table still "
        "being read, more holds the round's decisions longer",
    )
    back_settle_most: float = tuning(
        5.0,
        "seconds after the camera comes back by which the table is compared with what was "
        "recorded whatever lies or moves there: less compares under a resting arm, more "
        "holds the round's decisions longer",
    )
    field_changed: int = tuning(
        2,
        "field cards that may be named differently before and after the camera was away (as "
        "many in sight: misreads) with the table still counting as unchanged: more lets a "
        "card swapped in the gap pass unnoticed, less asks the players after short gaps",
        low=0,
    )
    captures_gone_share: float = tuning(
        0.5,
        "the round's recorded captures in sight after the camera came back at most this "
        "share of them: the round's cards were gathered while it was away (nothing more is "
        "decided in that round); higher takes a row half hidden for a gathering",
        high=1.0,
    )
    laid_after_stop: int = tuning(
        2,
        "looks in a row showing more cards than when a tapped Stop closed the round before "
        "the tablet says play went on: less shows it for a card merely uncovered",
        low=1,
    )

    def __post_init__(self):
        check_ranges(self, "decider", skip=("codes_weighed",))
        object.__setattr__(self, "codes_weighed", self._check_codes_weighed(self.codes_weighed))

    @staticmethod
    def _check_codes_weighed(value) -> tuple:
        try:
            pairs = [(int(size), int(count)) for size, count in value]
            good = (
                pairs == [tuple(p) for p in value]
                and all(size >= 1 and count >= 1 for size, count in pairs)
                and all(a[0] < b[0] for a, b in itertools.pairwise(pairs))
            )
        except (TypeError, ValueError):
            good = False
        if not good:
            raise CompanionError(
                "The decider's codes_weighed must be (group size, codes per card) pairs of whole "
                f"numbers of 1 or more, by growing size, not {value!r}."
            )
        return tuple(pairs)

    def codes_per_card(self, group_size: int) -> int:
        """How many of each card's likeliest codes a group of this many cards weighs."""
        for size, count in self.codes_weighed:
            if group_size <= size:
                return count
        return self.codes_weighed_beyond

    @classmethod
    def describe(cls) -> dict[str, str]:
        """Each setting's name -> what moving it trades, one line."""
        return describe(cls)


@dataclass(frozen=True)
class PipelineSettings:
    """The pipeline's own tuning: the motion gate that decides when the detector looks, and
    how a restarted pipeline finds its place in the match, each with what moving it trades
    (``PipelineSettings.describe()`` lists them). Seconds are the frames' own clock. A value
    out of range is refused."""

    # -- the motion gate -------------------------------------------------------------------------
    motion_width: int = tuning(
        160,
        "pixels across the small grey copy each frame is compared on: more sees smaller "
        "changes, at a cost per frame (160x90 with motion_height: a 16:9 camera's shape)",
        low=8,
    )
    motion_height: int = tuning(
        90,
        "pixels down the small grey copy each frame is compared on: more sees smaller changes,"
        " at a cost per frame",
        low=8,
    )
    pixel_change: int = tuning(
        14,
        "grey levels (0..255) a small-picture pixel must change by to count as changed: less "
        "takes camera noise and flicker for motion, more misses a dark card laid on a dark mat",
        high=255,
    )
    changed: float = tuning(
        0.0015,
        "share of the small picture's pixels changed (since the previous frame: motion; since"
        " the detector's last look: a change) for the detector to look: less looks at noise, "
        "more misses a card slid in quietly until the next refresh",
        high=1.0,
    )
    settle_after_motion: float = tuning(
        0.6,
        "seconds the detector keeps looking after motion stops, so a card put down is seen "
        "steadily at once: more costs looks at a still table, less settles cards later",
    )
    refresh: float = tuning(
        1.0,
        "seconds between looks at most, whatever the motion: less costs looks at a still "
        "table, more leaves a change the gate missed unseen longer",
    )
    look_every: float = tuning(
        0.08,
        "seconds between looks at least (10 a second at 30 fps: every third frame; every "
        "frame at 10-12 fps): less settles a card sooner, but costs a 30 fps camera its real "
        "time",
    )
    # -- a camera that was away ---------------------------------------------------------------
    gap_after: float = tuning(
        1.5,
        "seconds between two pictures (of the frames' own clock) beyond which the camera was "
        "away (a stream that dropped, a lens dark or covered): the table is then read afresh"
        " and compared with what was recorded, and what it did not see is asked, never "
        "guessed; less takes a slow machine's dropped frames for a gap, more may read a "
        "decision from a table that changed unseen",
    )
    unread_change: int = tuning(
        30,
        "grey levels (0..255) a small-picture pixel of a capture area must change by, between "
        "the last look before the camera went away and the table compared when it is back, to "
        "count as a card come there (light drifting over a minute stays under it): less takes "
        "the light's drift for cards, more misses a dark card on a dark mat",
        high=255,
    )
    unread_card_share: float = tuning(
        0.3,
        "share of a card's area that may have changed in a capture area, outside every card the"
        " camera reads there, before the tablet is asked for the cards it cannot read (back "
        "from away): less asks over a shadow or a card's edge, more leaves a card showing only "
        "a strip of itself unasked",
        high=10.0,
    )
    unread_quiet: float = tuning(
        1.0,
        "seconds nothing must have moved before a look shows a capture area as it lies (one "
        "kept from before the camera went away, one compared with it after): less compares a "
        "hand just leaving, more waits longer for the question",
    )
    unread_within: float = tuning(
        30.0,
        "seconds after the camera came back within which its capture areas are compared with "
        "how they lay before (on quiet looks): more asks about cards unread later in a busy "
        "round, less may find no quiet moment and ask nothing",
    )
    unread_margin: float = tuning(
        0.15,
        "share of a card's size its box is grown by when the changed pixels of a capture area "
        "it explains are set aside (its edges, its shadow): less takes them for a card unread, "
        "more hides a card lying beside it",
        high=1.0,
    )
    blind_contrast: float = tuning(
        4.0,
        "grey levels (0..255) of spread (standard deviation) below which the small picture "
        "shows nothing (a dark room, a lens covered or capped): such a frame is not looked "
        "at, as if none came (unless it is the table's own colour: an emptied table); more "
        "takes a plain, evenly lit table for a covered lens",
        high=255,
    )
    table_colour_within: float = tuning(
        12.0,
        "colour levels (0..255, per channel) within which an even picture's mean lies to the "
        "table's colour (the middle colour of the last picture that showed something) for it "
        "to be the table emptied (a plain mat after the gathering), looked at as ever, not a "
        "covered lens: more takes a sleeve the table's colour for the table, less takes a "
        "plain mat cleared of cards for a covered lens (the next deal never opens a round)",
        high=255,
    )
    # -- captures settling when a Stop is tapped ---------------------------------------------
    settling_seen_within: int = tuning(
        2,
        "looks since an undecided card in a capture area was last seen for it to still be "
        "settling (a tapped Stop waits for it): more waits for a card hidden longer, less "
        "records the Stop before a card the hand half hides",
    )
    # -- a slow capture, explained ----------------------------------------------------------
    unread_after: float = tuning(
        3.0,
        "seconds a card may lie in a player's captures unread (or a capture wait for its "
        "second card) before the tablet says why (a hand over it?): less says it for captures"
        " merely settling, more leaves the players wondering longer",
    )
    # -- starting again on a match under way -------------------------------------------------
    resume_watch: float = tuning(
        1.0,
        "seconds a pipeline started between two rounds watches the table (no hand over it) "
        "before what lies there may be a new deal (until then a table holding captures is the"
        " ended round's, cleared away first): less may take the ended round's cards for a "
        "deal, more opens the next round later",
    )
    same_deal: int = tuning(
        6,
        "cards in common with an earlier round's dealt field that make the first field of "
        "that size seen after a start that round's recording played again (one fewer where "
        "every card of it is that round's, dealt or captured in it: read in mid-play): less "
        "mistakes this round's deal for an old one, more decides an old round's cards into "
        "this one",
        low=1,
    )
    recognised: float = tuning(
        0.25,
        "probability an arrival must give a recorded capture not yet matched to a card (chaff"
        " of a month as one card) for it to be that capture, adopted without an event (its "
        "likeliest reading always is): lower adopts misreads of new cards as old ones, higher"
        " records old cards again",
        high=1.0,
    )

    def __post_init__(self):
        check_ranges(self, "pipeline")

    @property
    def motion_size(self) -> tuple[int, int]:
        """(width, height) of the small grey copy the motion gate compares."""
        return self.motion_width, self.motion_height

    @classmethod
    def describe(cls) -> dict[str, str]:
        """Each setting's name -> what moving it trades, one line."""
        return describe(cls)

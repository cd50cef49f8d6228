"""Stable table state: which card lies where, steadily, from one frame's detections to the next.

Each of the 48 cards exists once, so a card's code ends up as its track; but a single frame can
misname a card, so detections are first followed by position (quad overlap) into physical
tracks, each fusing its class scores over the last ``window`` looks (the mean of
log-probabilities built from the detector's top class and alternatives: a fused score, not a
vote of top-1 guesses), and only then are codes handed out, one physical card per code.

What the game guarantees, the tracker keeps:
- A card counts in a zone once seen there in most of the last ``window`` looks at a still
  position (``steady_looks``).
- A capture area only grows during a round: a registered capture is never dropped when it
  vanishes (the next card of its fanned row covers it); its code is fixed when it is
  registered (fully visible, on top) and only a tablet correction changes it.
- A hand or arm over the table (much motion, or several steady cards vanishing at once)
  freezes the state: nothing is added or removed while it is there.
- Face-down cards (the draw pile, a hand laid on the table) are counted as backs, never
  tracked as cards, so they never become captures.

A track's life is one ``TrackState``, changed only by the track's transition methods, each
refusing a move its phase does not allow (``IllegalTransition``)::

    ARRIVING <-> SETTLED -> RECORDED -> REMOVED
    any of them -> ENDED when the round ends (a removed capture: ENDED_REMOVED)

Registration (which steady arrival becomes which capture) is the ``CaptureDecider``'s call
(``companion/live/capture_decider.py``); the tracker only offers arrivals and remembers decisions.
Every threshold, wait and count it decides by is a field of ``TrackerSettings``
(``companion/live/settings.py``, beside the decider's and the pipeline's).
"""

from __future__ import annotations

import dataclasses
import enum
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from companion.detections import (
    BACK,
    BACK_ID,
    CLASSES,
    Detections,
    iou_matrix,
    polygon_area,
    quad_iou,
)
from companion.game.cards import ALL_CODES, chaff_twins, twin_group
from companion.live.settings import CLOCK_SLACK, TrackerSettings
from companion.live.zones import CAPTURES, FIELD, Zones

N_CODES = len(ALL_CODES)
CODE_IDS = {code: i for i, code in enumerate(ALL_CODES)}


DEFAULT_SETTINGS = TrackerSettings()


class IllegalTransition(RuntimeError):
    """A track asked to move to a phase its own does not lead to (a bug, not a user's doing)."""


class TrackState(enum.Enum):
    """The phases of a track's life."""

    ARRIVING = "arriving"  # seen, not yet lying still: in a hand, or just laid
    SETTLED = "settled"  # lies still: a field card, or an arrival offered to the decider
    RECORDED = "recorded"  # a registered capture: its code fixed (only the tablet renames it)
    REMOVED = "removed"  # a capture removed or undone on the tablet: never followed or offered
    ENDED = "ended"  # lay there when the round ended: waits to be cleared away
    ENDED_REMOVED = "ended_removed"  # a removed capture when the round ended: waits likewise

    @property
    def open(self) -> bool:
        """A card of this round not (yet) a capture."""
        return self in (TrackState.ARRIVING, TrackState.SETTLED)

    @property
    def captured(self) -> bool:
        """Registered as a capture this round (kept or removed since): its code is taken."""
        return self in (TrackState.RECORDED, TrackState.REMOVED)

    @property
    def ended(self) -> bool:
        """A card of the ended round."""
        return self in (TrackState.ENDED, TrackState.ENDED_REMOVED)

    @property
    def removed(self) -> bool:
        """Removed on the tablet: no look is matched to it again."""
        return self in (TrackState.REMOVED, TrackState.ENDED_REMOVED)


@dataclass
class Track:
    """One physical card followed over frames. Its phase is ``state``; the transition methods
    (``settle``, ``unsettle``, ``record``, ``rename``, ``remove``, ``end``) are the only way to
    change it."""

    id: int
    quad: np.ndarray
    zone: str | None
    born: int  # update number
    anchor: np.ndarray  # centre where it came to rest
    looks: deque  # per-look log-probability vectors (N_CODES,), the last ``window``
    hits: deque  # per update since birth: seen or not (bool), the last ``2 * window``
    last_seen: int = 0  # update number
    last_seen_frame: int = 0
    last_seen_time: float = 0.0
    born_time: float = 0.0
    state: TrackState = TrackState.ARRIVING
    # when it last settled (frame index, seconds); kept once recorded or ended (None: it was
    # still arriving)
    steady_since: int | None = None
    steady_time: float = 0.0
    recorded_code: str | None = None  # RECORDED and REMOVED: the code it was registered as
    seat: str | None = None  # RECORDED and REMOVED: whose capture
    in_sight: bool = False  # ENDED and ENDED_REMOVED: seen shortly before the round ended
    over: int | None = None  # the registered capture it was found on (a card on top of it)
    rest: np.ndarray | None = None  # centre where it lies still since ``rest_time``
    rest_time: float = 0.0
    # (time, centre) of a look that saw it away from where it lay (moved or not at rest),
    # the next look to tell whether the card moved or the detector's outline strayed
    stray: tuple[float, np.ndarray] | None = None
    disturbed: int = 0  # the last update something moved over it
    # card heights its centre moved from the look before to the last (inf: one look so far)
    step: float = float("inf")
    quiet_since: int = 0  # frame index since which nothing moved over it
    quiet_time: float = 0.0  # first look with nothing moving over it since (inf: not yet)
    code: str | None = None  # the code handed out this update
    # the code a taught deck's own points found when it settled (``TableTracker.verify``) and
    # the share of the belief it holds: it outweighs the looks until the card is carried away
    verified: str | None = None
    verified_share: float = 0.0
    verify_tries: int = 0  # readings by its points since it came to rest
    verify_time: float = 0.0  # the last one (seconds)

    # -- transitions -------------------------------------------------------------------------

    def _leave(self, *allowed: TrackState, to: TrackState) -> None:
        if self.state not in allowed:
            raise IllegalTransition(
                f"Track {self.id} cannot go from {self.state.value} to {to.value}."
            )
        self.state = to

    def settle(self, frame_index: int, time: float) -> None:
        """ARRIVING -> SETTLED: it lies still, seen in most looks."""
        self._leave(TrackState.ARRIVING, to=TrackState.SETTLED)
        self.steady_since, self.steady_time = frame_index, time

    def unsettle(self) -> None:
        """SETTLED -> ARRIVING: carried, stirred or seen too seldom before it was decided."""
        self._leave(TrackState.SETTLED, to=TrackState.ARRIVING)
        self.steady_since = None

    def record(self, seat: str, code: str) -> None:
        """SETTLED -> RECORDED: registered as ``seat``'s capture of ``code``."""
        self._leave(TrackState.SETTLED, to=TrackState.RECORDED)
        self.recorded_code, self.seat = code, seat

    def rename(self, code: str) -> None:
        """RECORDED -> RECORDED: a tablet correction; the code is the player's from now on."""
        self._leave(TrackState.RECORDED, to=TrackState.RECORDED)
        self.recorded_code = code

    def remove(self) -> None:
        """RECORDED -> REMOVED: removed or undone on the tablet, never offered again."""
        self._leave(TrackState.RECORDED, to=TrackState.REMOVED)

    def end(self, in_sight: bool) -> None:
        """Any phase -> ENDED (a removed capture: ENDED_REMOVED): the round ended with the card
        lying there; ``in_sight``: seen shortly before (it tells when the table is cleared). A
        round may end again while it waits: it stays ended, its sight judged anew."""
        if self.state.removed:
            self._leave(TrackState.REMOVED, TrackState.ENDED_REMOVED, to=TrackState.ENDED_REMOVED)
        else:
            self._leave(*TrackState, to=TrackState.ENDED)
        self.recorded_code = None
        self.in_sight = in_sight

    # -- geometry and name ----------------------------------------------------------------------

    @property
    def center(self) -> np.ndarray:
        return self.quad.mean(axis=0)

    @property
    def height(self) -> float:
        q = self.quad
        return float(max(np.linalg.norm(q[0] - q[3]), np.linalg.norm(q[1] - q[2]), 1.0))

    def posterior(self) -> np.ndarray:
        """Fused probability over the 48 codes (geometric mean of the looks, normalised); a
        card verified by its points (``verified``) holds ``verified_share`` of it."""
        if not self.looks:
            p = np.full(N_CODES, 1.0 / N_CODES)
        else:
            mean = np.mean(np.stack(self.looks), axis=0)
            p = np.exp(mean - mean.max())
            p /= p.sum()
        if self.verified is not None:
            p = (1.0 - self.verified_share) * p
            p[ALL_CODES.index(self.verified)] += self.verified_share
        return p


@dataclass(frozen=True)
class Arrival:
    """A steady, not yet registered card in a capture area, as the decider sees it."""

    track: int
    seat: str
    candidates: tuple[tuple[str, float], ...]  # (code, probability), likeliest first
    steady_since: int  # frame index
    quad: np.ndarray = dataclasses.field(compare=False, repr=False)  # corners in pixels
    quiet_since: int = 0  # frame index since which nothing moved over it
    overlaps: bool = False  # lies largely over a registered capture (or a look of it)
    steady_time: float = 0.0  # seconds
    quiet_time: float = 0.0  # time of the first look with nothing moving over it (seconds)
    # a taught deck's own points have not read it yet and will try again (a doubtful card
    # waits for them rather than being recorded by its looks)
    verifying: bool = False


@dataclass(frozen=True)
class TableState:
    """The table as it stands after a look: a snapshot (see docs/LIVE.md). Sequences are
    tuples (lists given are stored as tuples); a changed table is a new one
    (``dataclasses.replace``). Seats are the layout's labels (A, B, C)."""

    frame: int = 0  # frame index of the look
    time: float = 0.0  # seconds, the frames' clock
    # codes of the steady field cards
    field: tuple[str, ...] = ()
    # seat -> codes of its registered captures, in registration order
    captures: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # code -> frame index it settled at (field cards and arrivals)
    steady_since: Mapping[str, int] = dataclasses.field(default_factory=dict)
    # field code -> its likeliest readings (code, probability), when read doubtfully
    doubtful: Mapping[str, tuple[tuple[str, float], ...]] = dataclasses.field(default_factory=dict)
    backs: int = 0  # face-down cards: the most seen in the last few looks
    hand_present: bool = False  # a hand or an arm over the table: nothing added or removed
    # seat -> steady unregistered cards in its capture area, for the decider
    arrivals: Mapping[str, tuple[Arrival, ...]] = dataclasses.field(default_factory=dict)
    # code -> frame index it left the field (steady there, then gone), this round
    field_left: Mapping[str, int] = dataclasses.field(default_factory=dict)
    cleared: bool = False  # the ended round's cards were cleared away (this look)
    stale: int = 0  # cards of the ended round still on the table
    captures_unseen: float = float("inf")  # seconds since a registered capture was seen
    fresh_field: int = 0  # steady field cards first seen after the captures were last seen
    # code -> quad (4x2, pixels) of the captures and steady field cards
    quads: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    hand_since: int | None = None  # frame index the hand was last seen (None: never)
    # face-up cards in sight (seen in the last looks): all of them (ended ones too), and the
    # registered captures among them, per seat (a gathered table shows few)
    cards_in_sight: int = 0
    captures_in_sight: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "field", tuple(self.field))
        for name in ("captures", "arrivals", "doubtful"):
            value = getattr(self, name)
            object.__setattr__(self, name, {k: tuple(v) for k, v in value.items()})


def look_vector(det: Detections, i: int, floor: float = DEFAULT_SETTINGS.look_floor) -> np.ndarray:
    """One detection's log-probabilities over the 48 codes: its top class and alternatives,
    the rest of the mass spread evenly over the others, floored at ``floor``."""
    p = np.zeros(N_CODES, np.float64)
    mass = 0.0
    cid = int(det.class_ids[i])
    if cid < N_CODES:
        p[cid] = float(det.confidence[i])
        mass += p[cid]
    for a, s in zip(det.alt_ids[i], det.alt_scores[i], strict=False):
        if a < N_CODES and p[a] == 0:
            p[a] = float(s)
            mass += float(s)
    rest = max(1.0 - mass, 0.0)
    empty = p == 0
    if empty.any():
        p[empty] = rest / empty.sum()
    return np.log(np.maximum(p, floor))


class TableTracker:
    """``tracker.update(detections, frame) -> TableState``; see the module docstring.
    ``verify(image, quad) -> (code, confidence) | None``: a second, costlier reading of one
    card, asked once when a card settles (a taught deck's own points,
    ``Recognizer.verify_quad``); its code then outweighs the looks."""

    def __init__(self, zones: Zones, settings: TrackerSettings = DEFAULT_SETTINGS, verify=None):
        self.zones = zones
        self.settings = settings
        self.verify = verify
        self.tracks: dict[int, Track] = {}
        self._next_id = 1
        self._updates = 0
        self._order: list[int] = []  # recorded track ids, in registration order
        self._backs: deque = deque(maxlen=settings.backs_looks)
        self._hand_frame: int | None = None
        self._hand_until = -1  # update number until which the hand counts as present
        self._occluded_since: float | None = None
        self._covered = False  # the last look found several steady cards covered
        self._field_left: dict[str, int] = {}
        self._captures_seen = -1.0  # time a registered capture was last seen
        self.state = TableState()

    @property
    def updates(self) -> int:
        """Looks folded in so far."""
        return self._updates

    # -- the tablet and the decider ----------------------------------------------------------

    def register(self, track_id: int, seat: str, code: str) -> bool:
        """Record the settled card ``track_id`` as ``seat``'s capture of ``code``. False, and
        nothing changed, when the card is no longer a settled one of this round (the round
        ended, or the next began, between the decision and now; or its track is gone): the
        capture already stored stays, and an ended round's card is never recorded into the
        new one."""
        track = self.tracks.get(track_id)
        if track is None or track.state is not TrackState.SETTLED:
            return False
        track.record(seat, code)
        self._order.append(track_id)
        return True

    def registered(self) -> dict[str, Track]:
        """code -> track, of the recorded captures (in registration order)."""
        return {
            self.tracks[t].recorded_code: self.tracks[t]
            for t in self._order
            if t in self.tracks and self.tracks[t].state is TrackState.RECORDED
        }

    def rename(self, code: str, new_code: str) -> bool:
        """A tablet correction: the physical card registered as ``code`` is ``new_code`` for
        the rest of the round. False when no registered card had that code."""
        track = self.registered().get(code)
        if track is None:
            return False
        track.rename(new_code)
        return True

    def forget(self, code: str) -> bool:
        """A capture removed (or undone) on the tablet: its card is never offered again."""
        track = self.registered().get(code)
        if track is None:
            return False
        track.remove()
        return True

    def adopt(self, track_id: int, seat: str, code: str) -> bool:
        """Register a card the tablet already recorded (typed by hand): no event needed. False
        as ``register``."""
        return self.register(track_id, seat, code)

    def reset_round(self) -> None:
        """Everything forgotten (a redeal, another match)."""
        self.tracks.clear()
        self._order.clear()
        self._field_left.clear()
        self._captures_seen = -1.0

    def end_round(self) -> None:
        """The round ended: the cards lying there are the old round's (but those first seen
        after its captures were last seen: a new deal already), to be cleared away before the
        next round counts."""
        none_captured = not any(t.state.captured for t in self.tracks.values())
        now = self.state.time
        for track in self.tracks.values():
            if none_captured or track.state.captured or track.born_time <= self._captures_seen:
                # the cards in sight now tell when the table is cleared; the covered ones
                # (deep in a fanned row) go with them
                track.end(in_sight=now - track.last_seen_time <= self.settings.in_sight)
        self._order.clear()
        self._field_left.clear()
        self._captures_seen = -1.0

    # -- one frame -----------------------------------------------------------------------------

    def update(self, det: Detections, frame, motion: float = 0.0, moving=None) -> TableState:
        """Fold one frame's detections in. ``frame`` has ``index``, ``time`` and ``image`` (or
        ``size``); ``motion``: the fraction of the (downscaled) frame that moved since the
        previous look (a hand or an arm moves much of it); ``moving``: where, as a boolean
        picture of any size covering the frame. A card something moved over does not settle
        (without ``moving``, any big motion counts as moving over every card)."""
        s = self.settings
        self._updates += 1
        u = self._updates
        width, height = _frame_size(frame)
        cards = det[det.class_ids != BACK_ID] if len(det) else det
        backs = int(np.sum(det.class_ids == BACK_ID)) if len(det) else 0
        self._backs.append(backs)
        matched = self._associate(cards, u, frame)
        for track in self.tracks.values():
            if track.born < u:  # one born now already holds its first look
                track.hits.append(track.id in matched)
        occluded = self._occluded(matched)
        # cards covered for long were taken away (a gathered field), not covered by a hand
        if not occluded:
            self._occluded_since = None
        elif self._occluded_since is None:
            self._occluded_since = frame.time
        elif frame.time - self._occluded_since > s.covered_at_most:
            occluded = False
        if motion >= s.hand_motion or occluded:
            # and the next looks too: the hand is only just leaving
            self._hand_until = u + s.hand_lingers
            self._hand_frame = frame.index
        hand = u <= self._hand_until
        for i in range(len(cards)):
            if i not in matched.values():
                self._new_track(cards, i, u, frame)
        for track in self.tracks.values():
            c = track.center
            track.zone = self.zones.zone_of(c[0] / width, c[1] / height)
            if self._disturbed(track, moving, width, height, motion) and not self._lies_sure(
                track, u, frame.time
            ):
                track.disturbed = u
                track.quiet_since = frame.index + 1
                track.quiet_time = float("inf")
            elif track.quiet_time == float("inf"):
                track.quiet_time = frame.time
        self._covered = occluded
        self._settle(u, frame.index, frame.time, hand, occluded)
        self._verify_settled(frame)
        cleared = self._clear_ended(frame.time)
        self.state = self._table_state(frame, hand, cleared)
        return self.state

    def settle_still(self, frame, moving) -> TableState | None:
        """Settle, without a look, the capture-area cards the last look saw lying still and
        read at least ``still_sure`` surely, whose ``at_rest`` is up by ``frame`` and over
        which nothing moved since that look (a hand that left before it does not count) (``moving``: where the frames changed since, as
        ``update`` takes it): the unchanged picture is the look that would have confirmed
        them, so the decider gets them a look's work sooner. The new state, or None where no
        card settles so (the table is left as the last look saw it)."""
        s = self.settings
        u = self._updates
        if moving is None or s.still_sure > 1.0 or self._covered:
            return None
        width, height = _frame_size(frame)
        still = [
            track
            for track in self.tracks.values()
            if track.state is TrackState.ARRIVING
            and track.last_seen == u
            and track.stray is None
            and track.step <= s.still_step
            and bool(track.zone and track.zone.startswith(CAPTURES))
            and frame.time - track.rest_time >= s.at_rest - CLOCK_SLACK
            # this frame counts as a sighting: the card lies where the last look saw it
            and sum(list(track.hits)[-s.window :]) + 1 >= s.steady_looks
            and _named_surely(track.posterior()) >= s.still_sure
            and not _over(moving, track.quad, (width, height), s.disturbed_margin).any()
        ]
        if not still:
            return None
        for track in still:
            if track.quiet_time == float("inf"):  # moved over before the last look, not since
                track.quiet_since, track.quiet_time = frame.index, frame.time
            track.settle(frame.index, frame.time)
        self._verify_settled(frame)
        self.state = self._table_state(frame, u <= self._hand_until, cleared=False)
        return self.state

    def _verify_settled(self, frame) -> None:
        """Ask ``verify`` about each card that settled on this frame and has no verified code
        yet, and again (``verify_tries`` in all, ``verify_every`` apart) while it lies settled
        unfound with nothing moving over it: a few times a card, not every frame (it costs
        tens of ms a card); the hand that laid it often still covers part of it at first."""
        image = getattr(frame, "image", None)
        if self.verify is None or image is None:
            return
        s = self.settings
        for track in self.tracks.values():
            if track.state is not TrackState.SETTLED or track.verified is not None:
                continue
            if track.steady_since == frame.index:
                track.verify_tries = 0
            elif (
                track.verify_tries >= s.verify_tries
                or frame.time - track.verify_time < s.verify_every - CLOCK_SLACK
                or track.quiet_time > frame.time
            ):
                continue
            track.verify_tries += 1
            track.verify_time = frame.time
            found = self.verify(image, track.quad)
            if found is not None and found[0] in ALL_CODES:
                track.verified, track.verified_share = found[0], s.verified_share

    def _verifying(self, track: Track, now: float) -> bool:
        """Whether the card's own points may still read it (``verify``: tries left, within
        the time they take from its first look with nothing moving over it)."""
        s = self.settings
        return (
            self.verify is not None
            and track.verified is None
            and track.verify_tries < s.verify_tries
            and now - max(track.quiet_time, track.steady_time) <= s.verify_tries * s.verify_every
        )

    def _clear_ended(self, now: float) -> bool:
        """Drop the ended round's cards once (nearly) none of those in sight has been seen for
        ``cleared_after`` (a card left lying does not hold the next round up)."""
        s = self.settings
        ended = [t for t in self.tracks.values() if t.state.ended]
        watched = [t for t in ended if t.in_sight]
        seen = sum(
            1
            for t in watched
            if not _gone(t, s.cleared_missed_looks) or now - t.last_seen_time < s.cleared_after
        )
        if not ended or seen > len(watched) * s.cleared_share:
            return False
        for t in ended:
            del self.tracks[t.id]
        return True

    def _associate(self, cards: Detections, u: int, frame) -> dict[int, int]:
        """Match detections to tracks (track id -> detection index), most overlapping first."""
        s = self.settings
        # a card of the ended round, once gone a moment, does not come back: a card dealt
        # at its place is a new one
        ids = [
            t
            for t, tr in self.tracks.items()
            if not tr.state.removed and not _gone(tr, s.left_missed_looks)
        ]
        matched: dict[int, int] = {}
        if not ids or not len(cards):
            return matched
        tquads = np.stack([self.tracks[t].quad for t in ids])
        iou = iou_matrix(cards.quads, tquads)
        centers = cards.quads.mean(axis=1)
        looks = np.exp(np.stack([look_vector(cards, i, s.look_floor) for i in range(len(cards))]))
        pairs = []
        for j, t in enumerate(ids):
            track = self.tracks[t]
            recorded = track.state is TrackState.RECORDED
            name = track.recorded_code if recorded else track.code
            dist = np.linalg.norm(centers - track.center, axis=1) / track.height
            # a card does not take a look that names another card outright: a card laid on
            # it (the next of a fanned row, often found with a quad between the two)
            agree = None
            if recorded:
                # a look naming its chaff twin is the same card misread, not one laid on it;
                # so is a look naming what the card's own looks named before it was recorded
                # (its recorded name may be the pair rule's, or a tablet's): a capture keeps
                # its identity whatever it is called, and no second track is born on it
                agree = looks[:, TWIN_IDS[track.recorded_code]].sum(axis=1)
                if track.looks:
                    agree = np.maximum(agree, looks @ track.posterior())
            elif len(track.looks) >= s.agreeing_looks:
                agree = looks @ track.posterior()
            # a registered card missing since the last look: it shifted as it was let go, or
            # shows again from under a hand, a little away from where it was registered
            missing = recorded and track.last_seen < u - 1
            reach = s.shifted_reach if missing else s.same_name_distance
            for i in range(len(cards)):
                same = name is not None and CLASSES[cards.class_ids[i]] == name
                if agree is not None and agree[i] < s.agree:
                    continue
                if iou[i, j] >= s.same_card_iou or (same and dist[i] < reach):
                    score = (
                        iou[i, j]
                        + (s.same_name_bonus if same else 0.0)
                        - s.distance_penalty * dist[i]
                    )
                    pairs.append((score, i, t))
        used: set[int] = set()
        for _, i, t in sorted(pairs, reverse=True):
            if i in used or t in matched:
                continue
            used.add(i)
            matched[t] = i
            self._observe(self.tracks[t], cards, i, u, frame)
        self._cards_on_top(cards, matched, u, frame)
        return matched

    def _cards_on_top(self, cards: Detections, matched: dict, u: int, frame) -> None:
        """A card laid on a capture, half over it (the next of a fanned row), is often found
        as one detection with the two cards as its top classes. When a recorded capture's
        look names another free card first, that look also goes to a track of its own over
        it, which settles like any card (the decider then asks more of it)."""
        taken = {t.recorded_code for t in self.tracks.values() if t.state.captured}
        for t, i in list(matched.items()):
            below = self.tracks[t]
            top = CLASSES[cards.class_ids[i]]
            if below.state is not TrackState.RECORDED or top == below.recorded_code:
                continue
            if top == BACK or top in taken:
                continue
            if cards.confidence[i] < self.settings.on_top_confidence:
                continue
            if chaff_twins(top, below.recorded_code):
                continue  # the classifier's commonest slip on the card itself
            if below.looks and top in twin_group(ALL_CODES[int(np.argmax(below.posterior()))]):
                continue  # what the card's own looks named: the card, under another name
            over = next(
                (o for o in self.tracks.values() if o.over == below.id and o.state.open),
                None,
            )
            if over is None:
                self._new_track(cards, i, u, frame)
                over = self.tracks[self._next_id - 1]
                over.over = below.id
            else:
                self._observe(over, cards, i, u, frame)
            matched[over.id] = i

    def _observe(self, track: Track, cards: Detections, i: int, u: int, frame):
        s = self.settings
        quad = cards.quads[i].astype(np.float32)
        frame_index = frame.index
        track.last_seen_time = frame.time
        if track.state is TrackState.RECORDED:
            self._captures_seen = frame.time
            if track.last_seen < u - 1 and quad_iou(track.quad, quad) < s.same_card_iou:
                track.quad = quad  # found again away from where it was: it lies here now
        elif track.state.open:
            centre = quad.mean(axis=0)
            # a capture-area card is not counted until it lies: one that stirs, steady or
            # not, is still in a hand (a field card once steady stays so: it is not decided)
            watched = track.state is TrackState.ARRIVING or (
                track.zone is not None and track.zone.startswith(CAPTURES)
            )
            away = track.rest is not None and (
                np.linalg.norm(centre - track.anchor) / track.height > s.moved
                or (watched and np.linalg.norm(centre - track.rest) / track.height > s.still)
            )
            if away and track.stray is None:
                # one look away from where it lay: the card moved, or the detector drew its
                # outline astray (a hand half over it, a neighbour); the next look tells
                track.stray = (frame.time, centre)
            elif track.stray is not None and not away:
                track.stray = None  # back where it lay: the outline strayed, the card did not
            else:
                if track.stray is not None:  # it did move: from the first look away on
                    first_look = track.looks[-1] if track.looks else None
                    if self._moved_to(track, track.stray[1], track.stray[0], watched):
                        track.hits.append(True)
                        if first_look is not None:
                            track.looks.append(first_look)
                    track.stray = None
                self._moved_to(track, centre, frame.time, watched)
            track.looks.append(look_vector(cards, i, s.look_floor))
            track.step = float(np.linalg.norm(centre - track.center)) / track.height
            track.quad = quad
        track.last_seen = u
        track.last_seen_frame = frame_index

    def _moved_to(self, track: Track, centre: np.ndarray, now: float, watched: bool) -> bool:
        """A card seen at ``centre``: carried (its looks start again; True) when that far from
        where it came to rest, and resting anew from ``now`` when it strayed from its rest."""
        s = self.settings
        carried = np.linalg.norm(centre - track.anchor) / track.height > s.moved
        if carried:  # carried: it has not come to rest yet
            track.anchor = centre
            if track.state is TrackState.SETTLED:
                track.unsettle()
            track.hits.clear()
            track.looks.clear()
            track.verified = None  # read again where it comes to rest
            track.verify_tries = 0
        if track.rest is None or (
            watched and np.linalg.norm(centre - track.rest) / track.height > s.still
        ):
            track.rest, track.rest_time = centre, now  # still held: rest anew
        return carried

    def _new_track(self, cards: Detections, i: int, u: int, frame) -> None:
        s = self.settings
        quad = cards.quads[i].astype(np.float32)
        frame_index = frame.index
        track = Track(
            id=self._next_id,
            quad=quad,
            zone=None,
            born=u,
            anchor=quad.mean(axis=0),
            looks=deque([look_vector(cards, i, s.look_floor)], maxlen=s.window),
            # the settling rule counts sightings over twice the window (``_settle``)
            hits=deque([True], maxlen=2 * s.window),
            last_seen=u,
            last_seen_frame=frame_index,
            last_seen_time=frame.time,
            born_time=frame.time,
            rest=quad.mean(axis=0),
            rest_time=frame.time,
            quiet_time=frame.time,
        )
        self.tracks[track.id] = track
        self._next_id += 1

    def _occluded(self, matched: dict[int, int]) -> bool:
        """Several steady cards missing from this look at once: a hand over them. The ended
        round's cards that had settled count too (a hand gathering them covers them)."""
        missing = sum(
            1
            for t in self.tracks.values()
            if (t.state is TrackState.SETTLED or (t.state.ended and t.steady_since is not None))
            and t.id not in matched
        )
        return missing >= self.settings.vanished_at_once

    def _settle(self, u: int, frame_index: int, now: float, hand: bool, covered: bool) -> None:
        """Steadiness (nothing moving over the card, nothing covering several cards), and
        which open tracks are gone (never while a hand is over the table)."""
        s = self.settings
        gone = []
        for track in self.tracks.values():
            if not track.state.open:
                continue
            hits = list(track.hits)
            seen = sum(hits[-s.window :])
            # a card seen now and then only (an edge of the frame, glare) settles over twice
            # the window, as long as nothing moves over it
            often = seen >= s.steady_looks or sum(hits) >= s.window
            quiet = track.disturbed < u and not covered
            in_captures = bool(track.zone and track.zone.startswith(CAPTURES))
            # a card in a capture area cannot leave it: it is only missed for longer
            patience = s.capture_patience if in_captures else s.field_patience
            # not while its last look saw it away from where it lay (moved, or not told yet)
            at_rest = track.stray is None and now - track.rest_time >= s.at_rest - CLOCK_SLACK
            settled = track.state is TrackState.SETTLED
            if often and track.last_seen == u and quiet and at_rest:
                if not settled:
                    track.settle(frame_index, now)
            elif u - track.last_seen >= patience and not hand:
                if settled and track.zone == FIELD and track.code:
                    self._field_left[track.code] = frame_index
                gone.append(track.id)
            elif settled and not often and not in_captures and not hand:
                track.unsettle()
            elif settled and not at_rest:
                track.unsettle()  # stirred before it was decided: still in a hand
            if u - track.last_seen > s.carried_away_looks:
                gone.append(track.id)  # long unseen, hand or not: a card carried away
        for t in set(gone):
            del self.tracks[t]

    def _names(self) -> None:
        """Hand out codes: one physical card per code, most confident first; codes held by
        recorded captures are taken."""
        taken = {t.recorded_code for t in self.tracks.values() if t.state is TrackState.RECORDED}
        open_tracks = [t for t in self.tracks.values() if t.state.open]
        posts = {t.id: t.posterior() for t in open_tracks}
        for t in open_tracks:
            t.code = None
        # steady cards choose first, then the surest
        order = sorted(
            open_tracks,
            key=lambda t: (t.state is not TrackState.SETTLED, -float(posts[t.id].max())),
        )
        for t in order:
            p = posts[t.id]
            for cid in np.argsort(-p)[: self.settings.names_tried]:
                code = ALL_CODES[cid]
                if code not in taken:
                    t.code = code
                    taken.add(code)
                    break

    def _recorded_quads(self) -> list[np.ndarray]:
        return [t.quad for t in self.tracks.values() if t.state is TrackState.RECORDED]

    def _over_capture(self, track: Track) -> bool:
        held = self._recorded_quads()
        if not held:
            return False
        return bool(iou_matrix(track.quad[None], np.stack(held)).max() >= self.settings.overlap)

    def _fragment(self, track: Track) -> bool:
        """Whether the track lies almost wholly within a recorded capture while much
        smaller than it: a look at part of that card (the edge between two cards of a line, a
        hill or a sky read as a chaff), not a card of its own. A card laid over a capture is
        a whole card: fanned, half of it lies outside; stacked, it overlaps it all."""
        s = self.settings
        own = polygon_area(track.quad)
        if own <= 0:
            return False
        for quad in self._recorded_quads():
            area = polygon_area(quad)
            r = quad_iou(track.quad, quad)
            if r <= 0 or own > s.smaller * area:
                continue
            inter = r * (own + area) / (1 + r)
            if inter / own >= s.contained:
                return True
        return False

    def candidates(self, track: Track, k: int | None = None) -> tuple[tuple[str, float], ...]:
        """The track's ``k`` likeliest codes (``arrival_candidates`` by default) with their
        probabilities, likeliest first."""
        p = track.posterior()
        top = np.argsort(-p)[: k or self.settings.arrival_candidates]
        return tuple((ALL_CODES[c], float(p[c])) for c in top)

    def _table_state(self, frame, hand: bool, cleared: bool) -> TableState:
        s = self.settings
        self._names()
        captures: dict[str, list] = {seat: [] for seat in self.zones.players}
        quads: dict[str, np.ndarray] = {}
        for code, track in self.registered().items():
            captures.setdefault(track.seat, []).append(code)
            quads[code] = track.quad
        field_cards: list[str] = []
        steady_since: dict[str, int] = {}
        doubtful: dict[str, tuple] = {}
        arrivals: dict[str, list] = {seat: [] for seat in self.zones.players}
        for track in self.tracks.values():
            if track.state is not TrackState.SETTLED:
                continue
            if track.zone == FIELD and track.code:
                field_cards.append(track.code)
                steady_since[track.code] = track.steady_since
                quads[track.code] = track.quad
                p = track.posterior()
                if p.max() < s.doubtful_below:
                    doubtful[track.code] = self.candidates(track, s.doubtful_alternatives)
            elif track.zone and track.zone.startswith(CAPTURES) and not self._fragment(track):
                seat = self.zones[track.zone].player
                arrivals.setdefault(seat, []).append(
                    Arrival(
                        track.id,
                        seat,
                        self.candidates(track),
                        track.steady_since,
                        track.quad,
                        max(track.quiet_since, track.steady_since),
                        self._over_capture(track),
                        track.steady_time,
                        max(track.quiet_time, track.steady_time),
                        self._verifying(track, frame.time),
                    )
                )
                if track.code:
                    steady_since[track.code] = track.steady_since
        recent = [
            t
            for t in self.tracks.values()
            if not t.state.removed and self._updates - t.last_seen < s.in_sight_looks
        ]
        captures_in_sight = {seat: 0 for seat in self.zones.players}
        for t in recent:
            if t.state is TrackState.RECORDED:
                captures_in_sight[t.seat] = captures_in_sight.get(t.seat, 0) + 1
        captures_unseen, fresh_field = float("inf"), 0
        if self._captures_seen >= 0:
            captures_unseen = frame.time - self._captures_seen
            fresh_field = sum(
                1
                for t in self.tracks.values()
                if t.zone == FIELD
                and t.state is TrackState.SETTLED
                and t.born_time > self._captures_seen
            )
        return TableState(
            frame=frame.index,
            time=frame.time,
            field=field_cards,
            captures=captures,
            steady_since=steady_since,
            doubtful=doubtful,
            backs=max(self._backs) if self._backs else 0,
            hand_present=hand,
            arrivals=arrivals,
            field_left=dict(self._field_left),
            cleared=cleared,
            stale=sum(1 for t in self.tracks.values() if t.state.ended),
            captures_unseen=captures_unseen,
            fresh_field=fresh_field,
            quads=quads,
            hand_since=self._hand_frame,
            cards_in_sight=len(recent),
            captures_in_sight=captures_in_sight,
        )

    def _lies_sure(self, track: Track, u: int, now: float) -> bool:
        """A capture-area card seen now where it has lain still for ``at_rest``, surely named:
        motion over it is a hand leaving or passing, not the card still being laid."""
        s = self.settings
        return (
            track.state.open
            and track.last_seen == u
            and bool(track.zone and track.zone.startswith(CAPTURES))
            and track.stray is None
            and now - track.rest_time >= s.at_rest - CLOCK_SLACK
            and len(track.looks) >= s.steady_looks
            and _named_surely(track.posterior()) >= s.sure_at_rest
        )

    def _disturbed(self, track: Track, moving, width: int, height: int, motion: float) -> bool:
        """Whether something moved over the track's card (its box grown by
        ``disturbed_margin``)."""
        if moving is None:
            return motion >= self.settings.hand_motion
        over = _over(moving, track.quad, (width, height), self.settings.disturbed_margin)
        return over.size > 0 and bool(over.any())


def _over(picture: np.ndarray, quad: np.ndarray, size: tuple[int, int], margin: float):
    """The part of ``picture`` (of any size, covering a frame of ``size``) under ``quad``'s
    box grown by ``margin`` of its size."""
    width, height = size
    ph, pw = picture.shape[:2]
    lo, hi = quad.min(axis=0), quad.max(axis=0)
    pad = (hi - lo) * margin
    x0, y0 = np.floor((lo - pad) * [pw / width, ph / height]).astype(int)
    x1, y1 = np.ceil((hi + pad) * [pw / width, ph / height]).astype(int)
    return picture[max(y0, 0) : min(y1, ph), max(x0, 0) : min(x1, pw)]


def _named_surely(posterior: np.ndarray) -> float:
    """The probability of the likeliest code, the chaff of its month counted as one."""
    twins = twin_group(ALL_CODES[int(np.argmax(posterior))])
    return float(sum(posterior[CODE_IDS[c]] for c in twins))


def _gone(track: Track, looks: int) -> bool:
    """A card of the ended round, in sight when it ended, missed in the last ``looks``
    looks: taken away (a card dealt at its place later is a new one)."""
    if not (track.state.ended and track.in_sight) or len(track.hits) < looks:
        return False
    return not any(list(track.hits)[-looks:])


TWIN_IDS = {a: [CODE_IDS[b] for b in twin_group(a)] for a in ALL_CODES}


def _frame_size(frame) -> tuple[int, int]:
    image = getattr(frame, "image", None)
    if image is not None:
        return image.shape[1], image.shape[0]
    return frame.size

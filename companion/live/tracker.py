"""Stable table state: which card lies where, steadily, from one frame's detections to the next.

Each of the 48 cards exists once, so a card's code ends up as its track; but a single frame can
misname a card, so detections are first followed by position (quad overlap) into physical
tracks, each fusing its class scores over the last ``window`` looks (the mean of
log-probabilities built from the detector's top class and alternatives: a fused score, not a
vote of top-1 guesses), and only then are codes handed out, one physical card per code.

What the game guarantees, the tracker keeps:
- A card counts in a zone once seen there in most of the last ``window`` looks at a still
  position (``steady``).
- A capture area only grows during a round: a registered capture is never dropped when it
  vanishes (the next card of its fanned row covers it); its code is fixed when it is
  registered (fully visible, on top) and only a tablet correction changes it.
- A hand or arm over the table (much motion, or several steady cards vanishing at once)
  freezes the state: nothing is added or removed while it is there.
- Face-down cards (the draw pile, a hand laid on the table) are counted as backs, never
  tracked as cards, so they never become captures.

Registration (which steady arrival becomes which capture) is the ``CaptureDecider``'s call
(``companion/live/capture_decider.py``); the tracker only offers arrivals and remembers decisions.
"""

from __future__ import annotations

import dataclasses
from collections import deque
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
from companion.live.zones import CAPTURES, FIELD, Zones

N_CODES = len(ALL_CODES)
CODE_IDS = {code: i for i, code in enumerate(ALL_CODES)}
FLOOR = 1e-4  # the least probability one look gives a class: one bad look never rules it out
SAME_CARD_IOU = 0.55  # a fanned row's next card overlaps the one below by about 0.5
SAME_NAME_DISTANCE = 0.45  # same top class: same card if the centres are this close (card heights)
MOVED = 0.2  # a track whose centre moves this far (card heights) is in a hand, not lying
HAND_MOTION = 0.02  # fraction of the frame moving at once that means a hand or an arm
VANISHED_AT_ONCE = 3  # steady cards missing from one look at once: something covers them
COVERED_AT_MOST = 2.0  # seconds: cards missing longer than this were taken away
CLEARED_AFTER = 1.0  # seconds without a sight of the ended round's cards: they were cleared
IN_SIGHT = 2.0  # seconds: a card seen this recently when the round ends is in sight
DOUBTFUL_BELOW = 0.8
AGREE = 0.02  # least chance that a look and a track name the same card, to be joined
OVERLAP = 0.6  # an arrival overlapping a registered capture this much may be a misread of it
CONTAINED = 0.75  # share of a smaller look lying within a capture: a part of it (fanned: 0.5)
SMALLER = 0.8  # a look this much smaller than a card (by area) shows only a part of one
ON_TOP_CONFIDENCE = 0.3  # a capture's look naming another card this surely: a card on top?
# seconds a card lies still before it is steady (besides being seen in most looks): a card
# held a moment just above its place, or a camera with more frames a second, settles no
# sooner; longer would delay every capture as much
AT_REST = 0.2
# a card not yet steady whose centre strays this far (card heights, about 5 mm) from
# where it came to rest is still in a hand: its rest starts again. Lower would catch a
# steadier hand but let a detector's jitter on a lying card hold it back
STILL = 0.1
# a registered capture missing from a look is the card found this near (card heights) under
# its own name: a card that shifted as it was let go, or reappears from under a hand
SHIFTED = 1.0


@dataclass
class Track:
    """One physical card followed over frames."""

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
    stale: bool = False  # lay on the table when the round ended: waits to be cleared away
    over: int | None = None  # the registered capture it was found on (a card on top of it)
    in_sight: bool = False  # stale and seen when the round ended
    steady_since: int | None = None  # frame index
    steady_time: float = 0.0
    rest: np.ndarray | None = None  # centre where it lies still since ``rest_time``
    rest_time: float = 0.0
    disturbed: int = 0  # the last update something moved over it
    quiet_since: int = 0  # frame index since which nothing moved over it
    quiet_time: float = 0.0  # first look with nothing moving over it since (inf: not yet)
    registered: str | None = None  # code, once a capture
    seat: str | None = None
    pinned: bool = False  # corrected on the tablet: the code is the player's
    ignored: bool = False  # removed on the tablet: never offered again
    code: str | None = None  # the code handed out this update

    @property
    def center(self) -> np.ndarray:
        return self.quad.mean(axis=0)

    @property
    def height(self) -> float:
        q = self.quad
        return float(max(np.linalg.norm(q[0] - q[3]), np.linalg.norm(q[1] - q[2]), 1.0))

    def posterior(self) -> np.ndarray:
        """Fused probability over the 48 codes (geometric mean of the looks, normalised)."""
        if not self.looks:
            return np.full(N_CODES, 1.0 / N_CODES)
        mean = np.mean(np.stack(self.looks), axis=0)
        p = np.exp(mean - mean.max())
        return p / p.sum()


@dataclass(frozen=True)
class Arrival:
    """A steady, not yet registered card in a capture area, as the decider sees it."""

    track: int
    seat: str
    candidates: tuple  # ((code, probability), ...) likeliest first
    steady_since: int  # frame index
    quad: np.ndarray = dataclasses.field(compare=False, repr=False)
    quiet_since: int = 0  # frame index since which nothing moved over it
    overlaps: bool = False  # lies largely over a registered capture (or a look of it)
    steady_time: float = 0.0  # seconds
    quiet_time: float = 0.0  # time of the first look with nothing moving over it (seconds)


@dataclass
class TableState:
    """The table as it stands after a frame (see docs/LIVE.md)."""

    frame: int = 0
    time: float = 0.0
    field: list = dataclasses.field(default_factory=list)
    # seat -> codes, in the order they settled
    captures: dict = dataclasses.field(default_factory=dict)
    steady_since: dict = dataclasses.field(default_factory=dict)  # code -> frame index
    doubtful: dict = dataclasses.field(default_factory=dict)  # code -> [(code, probability)]
    backs: int = 0
    hand_present: bool = False
    arrivals: dict = dataclasses.field(default_factory=dict)  # seat -> [Arrival]
    field_left: dict = dataclasses.field(default_factory=dict)  # code -> frame it left the field
    cleared: bool = False  # the ended round's cards were cleared away (this look)
    stale: int = 0  # cards of the ended round still on the table
    captures_unseen: float = float("inf")  # seconds since a registered capture was seen
    fresh_field: int = 0  # steady field cards first seen after the captures were last seen
    quads: dict = dataclasses.field(default_factory=dict)  # code -> quad (pixels), cards in view
    hand_since: int | None = None  # frame index the hand was last seen (None: never)
    # face-up cards seen in the last two looks: all of them (stale ones too), and the
    # registered captures among them, per seat (a gathered table shows few)
    cards_in_sight: int = 0
    captures_in_sight: dict = dataclasses.field(default_factory=dict)


def look_vector(det: Detections, i: int) -> np.ndarray:
    """One detection's log-probabilities over the 48 codes: its top class and alternatives,
    the rest of the mass spread evenly over the others, floored at ``FLOOR``."""
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
    return np.log(np.maximum(p, FLOOR))


class TableTracker:
    """``tracker.update(detections, frame) -> TableState``; see the module docstring."""

    def __init__(self, zones: Zones, window: int = 5, steady: int = 3):
        self.zones = zones
        self.window = window
        self.steady_looks = min(steady, window)
        self.tracks: dict[int, Track] = {}
        self._next_id = 1
        self._updates = 0
        self._order: list[int] = []  # registered track ids, in registration order
        self._backs: deque = deque(maxlen=3)
        self._hand_frame: int | None = None
        self._hand_until = -1  # update number until which the hand counts as present
        self._occluded_since: float | None = None
        self._field_left: dict[str, int] = {}
        self._captures_seen = -1.0  # time a registered capture was last seen
        self.state = TableState()

    # -- the tablet and the decider ----------------------------------------------------------

    def register(self, track_id: int, seat: str, code: str) -> None:
        track = self.tracks[track_id]
        track.registered, track.seat = code, seat
        self._order.append(track_id)

    def registered(self) -> dict[str, Track]:
        """code -> track, of the registered captures still counted."""
        return {
            self.tracks[t].registered: self.tracks[t]
            for t in self._order
            if t in self.tracks and not self.tracks[t].ignored
        }

    def rename(self, code: str, new_code: str) -> bool:
        """A tablet correction: the physical card registered as ``code`` is ``new_code`` for
        the rest of the round. False when no registered card had that code."""
        track = self.registered().get(code)
        if track is None:
            return False
        track.registered, track.pinned = new_code, True
        return True

    def forget(self, code: str) -> bool:
        """A capture removed (or undone) on the tablet: its card is never offered again."""
        track = self.registered().get(code)
        if track is None:
            return False
        track.ignored = True
        return True

    def adopt(self, track_id: int, seat: str, code: str) -> None:
        """Register a card the tablet already recorded (typed by hand): no event needed."""
        self.register(track_id, seat, code)

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
        none_captured = not any(t.registered for t in self.tracks.values())
        now = self.state.time
        for track in self.tracks.values():
            if none_captured or track.registered or track.born_time <= self._captures_seen:
                track.stale = True
                track.registered = None
                # the cards in sight now tell when the table is cleared; the covered ones
                # (deep in a fanned row) go with them
                track.in_sight = now - track.last_seen_time <= IN_SIGHT
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
        elif frame.time - self._occluded_since > COVERED_AT_MOST:
            occluded = False
        if motion >= HAND_MOTION or occluded:
            self._hand_until = u + 1  # and the next look too: the hand is only just leaving
            self._hand_frame = frame.index
        hand = u <= self._hand_until
        for i in range(len(cards)):
            if i not in matched.values():
                self._new_track(cards, i, u, frame)
        for track in self.tracks.values():
            c = track.center
            track.zone = self.zones.zone_of(c[0] / width, c[1] / height)
            if _disturbed(track, moving, width, height, motion):
                track.disturbed = u
                track.quiet_since = frame.index + 1
                track.quiet_time = float("inf")
            elif track.quiet_time == float("inf"):
                track.quiet_time = frame.time
        self._settle(u, frame.index, frame.time, hand, occluded)
        cleared = self._clear_stale(frame.time)
        self.state = self._table_state(frame, hand)
        self.state.cleared = cleared
        return self.state

    def _clear_stale(self, now: float) -> bool:
        """Drop the ended round's cards once (nearly) none has been seen for
        ``CLEARED_AFTER`` (a card left lying does not hold the next round up)."""
        stale = [t for t in self.tracks.values() if t.stale]
        watched = [t for t in stale if t.in_sight]
        seen = sum(
            1 for t in watched if not _gone(t, 3) or now - t.last_seen_time < CLEARED_AFTER
        )
        if not stale or seen > len(watched) // 5:
            return False
        for t in stale:
            del self.tracks[t.id]
        return True

    def _associate(self, cards: Detections, u: int, frame) -> dict[int, int]:
        """Match detections to tracks (track id -> detection index), most overlapping first."""
        # a card of the ended round, once gone a moment, does not come back: a card dealt
        # at its place is a new one
        ids = [t for t, tr in self.tracks.items() if not tr.ignored and not _gone(tr, 2)]
        matched: dict[int, int] = {}
        if not ids or not len(cards):
            return matched
        tquads = np.stack([self.tracks[t].quad for t in ids])
        iou = iou_matrix(cards.quads, tquads)
        centers = cards.quads.mean(axis=1)
        looks = np.exp(np.stack([look_vector(cards, i) for i in range(len(cards))]))
        pairs = []
        for j, t in enumerate(ids):
            track = self.tracks[t]
            name = track.registered or track.code
            dist = np.linalg.norm(centers - track.center, axis=1) / track.height
            # a card does not take a look that names another card outright: a card laid on
            # it (the next of a fanned row, often found with a quad between the two)
            agree = None
            if track.registered is not None:
                # a look naming its chaff twin is the same card misread, not one laid on it
                agree = looks[:, TWIN_IDS[track.registered]].sum(axis=1)
            elif len(track.looks) >= 3:
                agree = looks @ track.posterior()
            # a registered card missing since the last look: it shifted as it was let go, or
            # shows again from under a hand, a little away from where it was registered
            reach = SHIFTED if track.registered and track.last_seen < u - 1 else SAME_NAME_DISTANCE
            for i in range(len(cards)):
                same = name is not None and CLASSES[cards.class_ids[i]] == name
                if agree is not None and agree[i] < AGREE:
                    continue
                if iou[i, j] >= SAME_CARD_IOU or (same and dist[i] < reach):
                    pairs.append((iou[i, j] + (0.5 if same else 0.0) - 0.1 * dist[i], i, t))
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
        as one detection with the two cards as its top classes. When a registered capture's
        look names another free card first, that look also goes to a track of its own over
        it, which settles like any card (the decider then asks more of it)."""
        taken = {t.registered for t in self.tracks.values() if t.registered}
        for t, i in list(matched.items()):
            below = self.tracks[t]
            top = CLASSES[cards.class_ids[i]]
            if below.registered is None or top == below.registered or top == BACK:
                continue
            if top in taken or cards.confidence[i] < ON_TOP_CONFIDENCE:
                continue
            if chaff_twins(top, below.registered):
                continue  # the classifier's commonest slip on the card itself
            over = next(
                (
                    o
                    for o in self.tracks.values()
                    if o.over == below.id and o.registered is None and not o.stale
                ),
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
        quad = cards.quads[i].astype(np.float32)
        frame_index = frame.index
        track.last_seen_time = frame.time
        if track.registered is not None:
            self._captures_seen = frame.time
            if track.last_seen < u - 1 and quad_iou(track.quad, quad) < SAME_CARD_IOU:
                track.quad = quad  # found again away from where it was: it lies here now
        elif not track.stale:
            moved = np.linalg.norm(quad.mean(axis=0) - track.anchor) / track.height
            centre = quad.mean(axis=0)
            if moved > MOVED:  # carried: it has not come to rest yet
                track.anchor = centre
                track.steady_since = None
                track.hits.clear()
                track.looks.clear()
            # a capture-area card is not counted until it lies: one that stirs, steady or
            # not, is still in a hand (a field card once steady stays so: it is not decided)
            watched = track.steady_since is None or (
                track.zone is not None and track.zone.startswith(CAPTURES)
            )
            if track.rest is None or (
                watched and np.linalg.norm(centre - track.rest) / track.height > STILL
            ):
                track.rest, track.rest_time = centre, frame.time  # still held: rest anew
            track.looks.append(look_vector(cards, i))
            track.quad = quad
        track.last_seen = u
        track.last_seen_frame = frame_index

    def _new_track(self, cards: Detections, i: int, u: int, frame) -> None:
        quad = cards.quads[i].astype(np.float32)
        frame_index = frame.index
        track = Track(
            id=self._next_id,
            quad=quad,
            zone=None,
            born=u,
            anchor=quad.mean(axis=0),
            looks=deque([look_vector(cards, i)], maxlen=self.window),
            hits=deque([True], maxlen=2 * self.window),
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
        """Several steady cards missing from this look at once: a hand over them."""
        missing = sum(
            1
            for t in self.tracks.values()
            if t.steady_since is not None and t.registered is None and t.id not in matched
        )
        return missing >= VANISHED_AT_ONCE

    def _settle(self, u: int, frame_index: int, now: float, hand: bool, covered: bool) -> None:
        """Steadiness (nothing moving over the card, nothing covering several cards), and
        which unregistered tracks are gone (never while a hand is over the table)."""
        gone = []
        for track in self.tracks.values():
            if track.registered is not None or track.stale:
                continue
            hits = list(track.hits)
            seen = sum(hits[-self.window :])
            # a card seen now and then only (an edge of the frame, glare) settles over twice
            # the window, as long as nothing moves over it
            often = seen >= self.steady_looks or sum(hits) >= self.window
            quiet = track.disturbed < u and not covered
            in_captures = bool(track.zone and track.zone.startswith(CAPTURES))
            # a card in a capture area cannot leave it: it is only missed for longer
            patience = 2 * self.window - 2 if in_captures else self.window - self.steady_looks + 1
            at_rest = now - track.rest_time >= AT_REST - 1e-6
            if often and track.last_seen == u and quiet and at_rest:
                if track.steady_since is None:
                    track.steady_since = frame_index
                    track.steady_time = now
            elif u - track.last_seen >= patience and not hand:
                if track.steady_since is not None and track.zone == FIELD and track.code:
                    self._field_left[track.code] = frame_index
                gone.append(track.id)
            elif track.steady_since is not None and not often and not in_captures and not hand:
                track.steady_since = None
            elif not at_rest and not track.registered:
                track.steady_since = None  # stirred before it was decided: still in a hand
            if u - track.last_seen > 4 * self.window:
                gone.append(track.id)  # long unseen, hand or not: a card carried away
        for t in set(gone):
            del self.tracks[t]

    def _names(self) -> None:
        """Hand out codes: one physical card per code, most confident first; codes held by
        registered captures are taken."""
        taken = {t.registered for t in self.tracks.values() if t.registered and not t.ignored}
        open_tracks = [
            t
            for t in self.tracks.values()
            if t.registered is None and not t.ignored and not t.stale
        ]
        posts = {t.id: t.posterior() for t in open_tracks}
        for t in open_tracks:
            t.code = None
        # steady cards choose first, then the surest
        order = sorted(
            open_tracks, key=lambda t: (t.steady_since is None, -float(posts[t.id].max()))
        )
        for t in order:
            p = posts[t.id]
            for cid in np.argsort(-p)[:6]:
                code = ALL_CODES[cid]
                if code not in taken:
                    t.code = code
                    taken.add(code)
                    break

    def _over_capture(self, track: Track) -> bool:
        held = [t.quad for t in self.tracks.values() if t.registered and not t.ignored]
        if not held:
            return False
        return bool(iou_matrix(track.quad[None], np.stack(held)).max() >= OVERLAP)

    def _fragment(self, track: Track) -> bool:
        """Whether the track lies almost wholly within a registered capture while much
        smaller than it: a look at part of that card (the edge between two cards of a line, a
        hill or a sky read as a chaff), not a card of its own. A card laid over a capture is
        a whole card: fanned, half of it lies outside; stacked, it overlaps it all."""
        own = polygon_area(track.quad)
        if own <= 0:
            return False
        for t in self.tracks.values():
            if not t.registered or t.ignored:
                continue
            area = polygon_area(t.quad)
            r = quad_iou(track.quad, t.quad)
            if r <= 0 or own > SMALLER * area:
                continue
            inter = r * (own + area) / (1 + r)
            if inter / own >= CONTAINED:
                return True
        return False

    def candidates(self, track: Track, k: int = 5) -> tuple:
        p = track.posterior()
        top = np.argsort(-p)[:k]
        return tuple((ALL_CODES[c], float(p[c])) for c in top)

    def _table_state(self, frame, hand: bool) -> TableState:
        self._names()
        st = TableState(frame=frame.index, time=frame.time, hand_present=hand)
        st.backs = max(self._backs) if self._backs else 0
        st.hand_since = self._hand_frame
        st.captures = {seat: [] for seat in self.zones.players}
        for code, track in self.registered().items():
            st.captures.setdefault(track.seat, []).append(code)
            st.quads[code] = track.quad
        st.arrivals = {seat: [] for seat in self.zones.players}
        for track in self.tracks.values():
            if track.stale:
                st.stale += 1
            if track.registered is not None or track.ignored or track.steady_since is None:
                continue
            if track.stale:
                continue
            if track.zone == FIELD and track.code:
                st.field.append(track.code)
                st.steady_since[track.code] = track.steady_since
                st.quads[track.code] = track.quad
                p = track.posterior()
                if p.max() < DOUBTFUL_BELOW:
                    st.doubtful[track.code] = list(self.candidates(track, 3))
            elif track.zone and track.zone.startswith(CAPTURES) and not self._fragment(track):
                seat = self.zones[track.zone].player
                st.arrivals.setdefault(seat, []).append(
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
                    )
                )
                if track.code:
                    st.steady_since[track.code] = track.steady_since
        st.field_left = dict(self._field_left)
        recent = [t for t in self.tracks.values() if not t.ignored and self._updates - t.last_seen <= 1]
        st.cards_in_sight = len(recent)
        st.captures_in_sight = {seat: 0 for seat in self.zones.players}
        for t in recent:
            if t.registered is not None:
                st.captures_in_sight[t.seat] = st.captures_in_sight.get(t.seat, 0) + 1
        if self._captures_seen >= 0:
            st.captures_unseen = frame.time - self._captures_seen
            st.fresh_field = sum(
                1
                for t in self.tracks.values()
                if t.zone == FIELD
                and t.steady_since is not None
                and not t.stale
                and t.registered is None
                and t.born_time > self._captures_seen
            )
        return st


def _gone(track: Track, looks: int) -> bool:
    """A card of the ended round, in sight when it ended, missed in the last ``looks``
    looks: taken away (a card dealt at its place later is a new one)."""
    if not (track.stale and track.in_sight) or len(track.hits) < looks:
        return False
    return not any(list(track.hits)[-looks:])


TWIN_IDS = {a: [CODE_IDS[b] for b in twin_group(a)] for a in ALL_CODES}


def _disturbed(track: Track, moving, width: int, height: int, motion: float) -> bool:
    """Whether something moved over the track's card (its box grown by a tenth)."""
    if moving is None:
        return motion >= HAND_MOTION
    mh, mw = moving.shape[:2]
    lo, hi = track.quad.min(axis=0), track.quad.max(axis=0)
    pad = (hi - lo) * 0.1
    x0, y0 = np.floor((lo - pad) * [mw / width, mh / height]).astype(int)
    x1, y1 = np.ceil((hi + pad) * [mw / width, mh / height]).astype(int)
    x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, mw), min(y1, mh)
    return x1 > x0 and y1 > y0 and bool(moving[y0:y1, x0:x1].any())


def _frame_size(frame) -> tuple[int, int]:
    image = getattr(frame, "image", None)
    if image is not None:
        return image.shape[1], image.shape[0]
    return frame.size

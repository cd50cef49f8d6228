"""The live pipeline: frames in, engine events in the store out.

    pipeline = LivePipeline(Recognizer.load(), default_zones(2), store, match_id)
    for frame in source:
        pipeline.process(frame)      # -> list[StoredEvent] appended for this frame

Motion gating (as Frigate does): each frame is shrunk to a small grey picture and compared
with the previous one and with the last one the detector saw. The detector runs only when
something changed since its last look, for a moment after motion stops (so a card put down
is seen steadily at once), and at least every ``refresh`` seconds; never more often than
``look_every`` (a 30 fps camera is looked at 10 times a second while an arm moves, so the
pipeline keeps up with it on two cores). The gate counts seconds of the frames' own clock,
so a camera's frame rate changes nothing but the work, and a replay gives the same result
however fast the machine is. The rest of the time the table's state stands as it was.

Restarting loses nothing: the captures the store holds that no card on the table has been
matched to yet (a restart, a video played again from its start, a card typed on the tablet)
are recognised where they lie, by their readings, and adopted without an event; only the
other arrivals go to the capture decider.

What the camera did not see, it does not decide: a picture that shows nothing (dark, covered)
is not looked at, and a gap in the pictures (a stream that dropped, a lens uncovered) has the
table read afresh, as after a restart, and compared with what was seen before; a Koi/Stop
whose answer may have fallen in the gap (or before a restart) is asked on the tablet, never
read from the play seen afterwards (``CaptureDecider.came_back``).

The store is the truth: corrections, removals and undos made on the tablet are read back
(by seq) and applied to the tracker, so a corrected card stays corrected for the rest of
the round and a removed one is never brought back.

The motion gate's and the restart's numbers are the fields of ``PipelineSettings``
(``companion/live/settings.py``, with the tracker's and the decider's).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace

import cv2
import numpy as np

from companion.detections import Detections
from companion.game.cards import chaff_twins
from companion.game.engine import IllegalEvent
from companion.live.capture_decider import (
    Away,
    CaptureDecider,
    Decision,
    Proposal,
    waiting_for_partner,
)
from companion.live.messages import Message
from companion.live.settings import CLOCK_SLACK, DeciderSettings, PipelineSettings, TrackerSettings
from companion.live.tracker import TableState, TableTracker, TrackState
from companion.live.zones import CAPTURES, Zones


@dataclass
class CaptureRecord:
    """When a capture was decided, for latency figures and the tablet's crops."""

    player: str
    card: str
    seq: int
    steady_frame: int
    event_frame: int
    event_time: float
    check: bool
    round: int = 0
    crop: np.ndarray | None = field(default=None, repr=False)


class LivePipeline:
    """Ties detector, tracker and decider to one match of a store (see docs/LIVE.md)."""

    def __init__(
        self,
        detector,
        zones: Zones,
        store,
        match_id: int | None,
        seats: dict | None = None,
        *,
        tracker_settings: TrackerSettings | None = None,
        decider_settings: DeciderSettings | None = None,
        pipeline_settings: PipelineSettings | None = None,
    ):
        self.detector = detector
        if hasattr(detector, "verify"):
            # a taught deck's cards are checked by their own points once, as each settles
            # (``_verify_settled``), not in every look: a look stays as fast as a known deck's
            detector.verify = False
        self.zones = zones
        self.store = store
        self.match_id = match_id
        self._seats = seats
        self.tracker_settings = tracker_settings or TrackerSettings()
        self.tracker = TableTracker(zones, self.tracker_settings, verify=self._verifier())
        self.decider_settings = decider_settings or DeciderSettings()
        self.decider = CaptureDecider(self.decider_settings)
        self.pipeline_settings = pipeline_settings or PipelineSettings()
        self.table: TableState = self.tracker.state
        self.detections = Detections.empty()
        self.frames = 0
        self.detected_frames = 0
        self.still_settled = 0  # frames a card settled on without a look (``_settle_still``)
        self._look_next = False  # a card settled without a look: the next frame is looked at
        self.captures: list[CaptureRecord] = []
        self.errors: list[str] = []
        self._lock = threading.RLock()
        self._seen_seq = 0
        self._prev_small: np.ndarray | None = None
        self._detected_small: np.ndarray | None = None
        self._detected_at: float | None = None  # frame time of the last look
        self._motion_at: float | None = None  # frame time of the last motion seen
        self.recognised: list[tuple[str, str]] = []  # (player, card) adopted where they lie
        self._match_state = None
        self._moving: np.ndarray | None = None  # where something moved since the last look
        self._own: set[int] = set()  # seqs this pipeline appended
        self._settling = None  # (stop's seq, its event dict, until time): a Stop tapped
        self._read_as: dict[str, set] = {}  # code -> codes the camera read it as (corrections)
        self._resumed = False  # the first look on the match has been made
        self._dealt: list[set] = []  # the dealt field of each round of the match, in order
        self._taken: list[set] = []  # the cards captured in each round (recorded), in order
        self._earlier_round = False  # a recording of an earlier round is being played again
        self._played_again: float | None = None  # between rounds: an ended round's play seen
        self._round_unseen = False  # back from a gap between rounds, the table was gathered
        self._deal_checked = False  # a field of a deal's size was seen since the start
        self._watch_from: float | None = None  # started between rounds: watching since
        self._last_time: float | None = None  # the last picture that showed something
        self.blind_frames = 0  # frames that showed nothing (dark, covered)
        self._table_colour: np.ndarray | None = None  # the table's colour, last seen (BGR)
        self.gaps: list[tuple[float, float]] = []  # (time back, seconds away) of each gap
        # stage -> seconds each frame spent there ("motion", "detect", "track", "decide",
        # "store"), kept when a dict is given (``companion bench-pipeline``), else not at all
        self.timings: dict[str, list[float]] | None = None
        # why a capture is slow, for the tablet (``_note_unread``); None: none is
        self.unread: Message | None = None
        self._in_captures_since: dict[int, float] = {}  # track id -> time (``_note_unread``)
        # the last quiet look at a round's table (round, small grey picture, the quads of the
        # cards it showed), and that look as it stood when the camera went away: what came
        # into the capture areas meanwhile is told against it
        self._seen_look: tuple | None = None
        self._before_gap: tuple | None = None
        # back from away, captures taken over: (since, (time, players) of the last quiet look
        # at the capture areas) until two quiet looks agree on whose hold cards unread
        self._unread_check: tuple | None = None

    # -- reading the match ---------------------------------------------------------------------

    def set_match(self, match_id: int | None) -> None:
        with self._lock:
            if match_id != self.match_id:
                self.match_id = match_id
                self._seen_seq = 0
                self.tracker.reset_round()
                self.decider = CaptureDecider(self.decider_settings)
                self._read_as.clear()
                self._resumed, self._watch_from = False, None
                self._dealt, self._earlier_round, self._deal_checked = [], False, False
                self._taken = []
                self._played_again = None
                self._seen_look = self._before_gap = None

    def seats(self, state) -> dict:
        """Seat label -> player name: the given mapping, else the layout's seats in order."""
        if self._seats:
            return dict(self._seats)
        return dict(zip(self.zones.players, state.players, strict=False))

    def _sync(self):
        """Read the match back; apply the tablet's corrections to the tracker."""
        if self.match_id is None:
            return None
        events = self.store.events(self.match_id, after_seq=self._seen_seq)
        state = self._match_state
        added: list[str] = []
        if events or state is None:
            state = self.store.state(self.match_id)
            for stored in events:
                self._seen_seq = max(self._seen_seq, stored.seq)
                e = stored.event
                if e.type == "capture_corrected":
                    self.tracker.rename(e.card, e.new_card)
                    # the card still reads as it did: how to recognise it after a restart
                    self._read_as.setdefault(e.new_card, set()).update(
                        {e.card, *self._read_as.get(e.card, ())}
                    )
                    for record in self.captures:
                        if record.card == e.card:
                            record.card = e.new_card
                elif e.type == "redeal":
                    self.tracker.reset_round()
                elif e.type == "round_started":
                    self._dealt.append(set(e.field))
                    self._taken.append(set())
                if e.type in ("card_captured", "capture_corrected") and self._taken:
                    self._taken[-1].add(e.new_card if e.type == "capture_corrected" else e.card)
                if e.type == "card_captured" and stored.seq not in self._own:
                    added.append(e.player)  # on the tablet
            if self._match_state is not None and len(state.rounds) > len(self._match_state.rounds):
                last = events[-1] if events else None
                tapped_stop = (
                    last is not None
                    and last.event.type == "stop_called"
                    and last.seq not in self._own
                    and self._settling is None
                )
                if self.decider.moved_on == self._match_state.round_number:
                    # its cards went while the camera was away: what lies is the next round's,
                    # read afresh (looked at as after motion, to settle at once)
                    self.tracker.reset_round()
                    self._motion_at = self.table.time
                elif tapped_stop and self._still_settling():
                    # the turn's last capture may lie still, not yet decided: decided first
                    until = self.table.time + self.decider_settings.stop_tapped_wait
                    self._settling = (last.seq, last.event.to_dict(), until)
                else:
                    self.tracker.end_round()
            # whatever the tablet removed or undid is never brought back
            held = {c.code for cards in state.captures.values() for c in cards}
            if state.round_in_progress:
                for code in list(self.tracker.registered()):
                    if code not in held:
                        self.tracker.forget(code)
            self._match_state = state
            for player in added:
                self.decider.captures_added(state, player)
        return state

    def _still_settling(self) -> bool:
        """Whether an unregistered card lies (or is coming to rest) in a capture area."""
        return any(
            t.state.open
            and t.zone is not None
            and t.zone.startswith(CAPTURES)
            and self.tracker.updates - t.last_seen <= self.pipeline_settings.settling_seen_within
            for t in self.tracker.tracks.values()
        )

    def _settle_stop(self, frame, seats: dict) -> list:
        """A Stop tapped while captures were settling: once they lie still (or after the
        decider's ``stop_tapped_wait``), those the Stop cut off are recorded before it (the
        Stop is undone and tapped again after them). Returns the StoredEvents appended."""
        seq, stop, until = self._settling
        waiting = any(self.table.arrivals.values()) or self._still_settling()
        if waiting and self.table.time < until and not self._all_quiet():
            return []
        self._settling = None
        appended = []
        latest = self.store.events(self.match_id, after_seq=seq - 1)
        if len(latest) == 1 and latest[0].seq == seq:  # nothing recorded since the Stop
            from companion.game.engine import apply

            before = apply(self._match_state, {"type": "undo"})
            decisions = self.decider.decide_now(self.table, before, seats=seats)
            if decisions:
                appended.append(self._append({"type": "undo"}))
                appended += self._append_decided(decisions, frame, before)
                try:
                    appended.append(self._append(stop))
                except IllegalEvent as exc:
                    self.errors.append(str(exc))
        self.tracker.end_round()
        return [a for a in appended if a is not None]

    def _all_quiet(self) -> bool:
        arrivals = [a for group in self.table.arrivals.values() for a in group]
        return (
            bool(arrivals)
            and all(self.table.frame > a.quiet_since for a in arrivals)
            and (not self._still_settling_unsteady())
        )

    def _still_settling_unsteady(self) -> bool:
        return any(
            t.state is TrackState.ARRIVING
            and t.zone is not None
            and t.zone.startswith(CAPTURES)
            and self.tracker.updates - t.last_seen <= self.pipeline_settings.settling_seen_within
            for t in self.tracker.tracks.values()
        )

    def _append(self, event):
        stored = self.store.append(self.match_id, event)
        self._own.add(stored.seq)
        return stored

    # -- one frame ---------------------------------------------------------------------------

    def small(self, image: np.ndarray) -> np.ndarray:
        """The frame as the small grey copy the motion gate compares (not yet blurred)."""
        grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
        return cv2.resize(grey, self.pipeline_settings.motion_size, interpolation=cv2.INTER_AREA)

    def motion(self, image: np.ndarray, small: np.ndarray | None = None) -> tuple[float, float]:
        """(fraction moved since the previous frame, fraction changed since the detector's
        last look), on a small blurred grey copy (``small``: the frame's, made already)."""
        s = self.pipeline_settings
        small = cv2.GaussianBlur(self.small(image) if small is None else small, (3, 3), 0)
        moved = changed = 1.0
        if self._prev_small is not None:
            mask = cv2.absdiff(small, self._prev_small) > s.pixel_change
            moved = float(np.mean(mask))
            self._moving = mask if self._moving is None else self._moving | mask
        if self._detected_small is not None:
            changed = float(np.mean(cv2.absdiff(small, self._detected_small) > s.pixel_change))
        self._prev_small = small
        self._last_small = small
        return moved, changed

    def _verifier(self):
        """``_verify_settled`` where the detector has a second reading of a settled card (a
        taught deck with points: ``can_verify``), else None: no card waits for one."""
        can = getattr(self.detector, "can_verify", None)
        if can is None:
            can = hasattr(self.detector, "verify_quad")
        return self._verify_settled if can else None

    def _verify_settled(self, image: np.ndarray, quad: np.ndarray):
        """The detector's second reading of a card that has just settled, or None where it has
        none (``Recognizer.verify_quad``: a taught deck's own points)."""
        verify = getattr(self.detector, "verify_quad", None)
        return verify(image, quad) if verify is not None else None

    def should_detect(self, now: float, changed: float) -> bool:
        """Whether the detector looks at the frame of time ``now`` (seconds)."""
        if self._detected_at is None or now < self._detected_at:
            return True  # the first frame, or a source started again
        since = now - self._detected_at
        s = self.pipeline_settings
        if since >= s.refresh:
            return True
        if since < s.look_every - CLOCK_SLACK:
            return False
        settling = self._motion_at is not None and now - self._motion_at <= s.settle_after_motion
        # back from a gap, the table is looked at closely until it has been compared with what
        # was recorded: compared a still moment later, before the next move hides it
        comparing = self.decider.away is not None
        return changed >= s.changed or settling or comparing

    def blind(self, small: np.ndarray, image: np.ndarray | None = None) -> bool:
        """Whether the picture (its small grey copy) shows nothing: a dark room, a lens covered
        or capped (nearly even). An even picture of the table's own colour (``image``: the
        frame, in colour) is the table emptied, a plain mat after the gathering: it shows the
        clear table the next deal is read against."""
        s = self.pipeline_settings
        colour = None
        if image is not None and image.ndim == 3:
            tiny = cv2.resize(image, s.motion_size, interpolation=cv2.INTER_AREA)
            colour = tiny.reshape(-1, 3)
        if float(small.std()) >= s.blind_contrast:
            if colour is not None:  # most of a table is table, whatever lies on it
                self._table_colour = np.median(colour, axis=0)
            return False
        if colour is None or self._table_colour is None:
            return True
        off = np.abs(colour.mean(axis=0) - self._table_colour)
        return float(off.max()) > s.table_colour_within

    def process(self, frame) -> list:
        """Run one frame through; returns the StoredEvents it appended."""
        with self._lock:
            clock = _StageClock(self.timings)
            self.frames += 1
            small = self.small(frame.image)
            if self.blind(small, frame.image):
                self.blind_frames += 1  # not looked at: the camera is away until it shows
                return []
            last, self._last_time = self._last_time, frame.time
            if last is not None and frame.time - last > self.pipeline_settings.gap_after:
                self._came_back(frame.time - last)
            moved, changed = self.motion(frame.image, small)
            if moved >= self.pipeline_settings.changed:
                self._motion_at = frame.time
            self.last_frame = frame
            still = self._settle_still(frame)
            looking = not still and (self._look_next or self.should_detect(frame.time, changed))
            clock.lap("motion")
            if still:
                clock.lap("still")
                return self._decide(frame, clock)
            if not looking:
                self._note_unread(self._match_state, frame.time)
                return []
            self._look_next = False
            self.detections = self.detector.detect(frame.image)
            self.detected_frames += 1
            self._detected_at = frame.time
            self._detected_small = self._last_small
            clock.lap("detect")
            self.table = self.tracker.update(
                self.detections, frame, motion=moved, moving=self._moving
            )
            self._moving = None
            clock.lap("track")
            return self._decide(frame, clock)

    def _settle_still(self, frame) -> bool:
        """Whether a capture-area card settled on this frame without a look
        (``TableTracker.settle_still``: the last look saw it lying still, surely named, and
        nothing has moved over it since): the decider reads it now, the detector's work
        spared; the next frame is looked at (the look this one skipped). Not while the table
        is being compared after the camera was away (looked at every frame then)."""
        if self._detected_at is None or self._look_next or self.decider.away is not None:
            return False
        table = self.tracker.settle_still(frame, self._moving)
        if table is None:
            return False
        self.table = table
        self.still_settled += 1
        self._look_next = True
        return True

    def _decide(self, frame, clock) -> list:
        """After a look (or a card settled still): the tablet's changes read back, then what
        the decider makes of the table appended; returns the StoredEvents appended."""
        state = self._sync()
        if state is None:
            return []
        if self._settling is not None:
            appended = self._settle_stop(frame, self.seats(state))
            if appended:
                self._sync()
            return appended
        self._leftovers(state, frame.time)
        self._set_aside_earlier_play(state, frame.time)
        if self._replaying_earlier_round(state):
            return []
        self._recognise(state)
        comparing = self.decider.away is not None
        decisions = self.decider.step(self.table, state, seats=self.seats(state))
        if comparing and self.decider.away is None and self.decider.took_over(state):
            self._unread_check = (frame.time, None)  # the capture areas looked at next
        self._check_unread(state)
        self._keep_seen_look(state)
        self._note_unread(state, frame.time)
        clock.lap("decide")
        appended = self._append_decided(decisions, frame, state)
        if appended:
            self._sync()
            clock.lap("store")  # only where something was recorded
        return appended

    def _note_unread(self, state, now: float) -> None:
        """Why a capture is slow, said on the tablet rather than left unexplained: a card has
        lain in a player's captures for ``unread_after`` without being read (a hand over it,
        or seen too rarely), or a capture recorded that long ago, within its turn, still
        waits for its second card (hidden, so never seen)."""
        self.unread = None
        if state is None or not state.round_in_progress:
            return
        s = self.pipeline_settings
        u = self.tracker.updates
        seats = self.seats(state)
        # a look lying over a recorded capture, or a lone card out of turn, is left undecided
        # on purpose (most often a look at part of a row): nothing is waited for there
        over = {a.track for group in self.table.arrivals.values() for a in group if a.overlaps}
        over |= self.decider.out_of_turn
        # open track -> when it was first seen in a capture area (a card carried there from
        # the field waits from then, not from when the field first saw it)
        since = {}
        for track in self.tracker.tracks.values():
            zone = track.zone or ""
            seat = zone[len(CAPTURES) :] if zone.startswith(CAPTURES) else None
            if seat not in seats or not track.state.open or track.id in over:
                continue
            since[track.id] = self._in_captures_since.get(track.id, now)
            if (
                now - since[track.id] >= s.unread_after - CLOCK_SLACK
                and u - track.last_seen <= s.settling_seen_within
            ):
                self.unread = Message("camera.capture_unread", player=seats[seat])
        self._in_captures_since = since
        if self.unread is not None:
            return
        for player in seats.values():
            held = [c.code for c in state.captures.get(state.side_of(player), [])]
            odd = set(waiting_for_partner(held))
            for record in self.captures:
                waited = now - record.event_time
                if (
                    record.round == state.round_number
                    and record.player == player
                    and record.card in odd
                    and s.unread_after - CLOCK_SLACK <= waited <= self.decider_settings.pair_window
                ):
                    self.unread = Message("camera.partner_unread", player=player)
                    return

    def _quiet_look(self) -> bool:
        """Whether this frame was looked at with no hand over the table and nothing moving
        for ``unread_quiet``: its picture shows the cards lying, nothing over them."""
        if self.table.hand_present or self._detected_at != self.table.time:
            return False
        quiet = self.pipeline_settings.unread_quiet - CLOCK_SLACK
        return self._motion_at is None or self.table.time - self._motion_at >= quiet

    def _keep_seen_look(self, state) -> None:
        """After a quiet look at a round's table: its picture and the quads of the cards it
        shows, kept for when the camera comes back from away (where a card lay then, a
        change is a card gone, not come)."""
        if self.decider.away is not None or not state.round_in_progress:
            return
        if not self._quiet_look():
            return
        quads = [t.quad for t in self.tracker.tracks.values() if not t.state.removed]
        self._seen_look = (state.round_number, self._last_small, quads)

    def _check_unread(self, state) -> None:
        """Back from away, captures taken over: the capture areas are looked at on quiet
        looks (``_quiet_look``) within ``unread_within`` of the comparison; once two of them,
        ``unread_quiet`` apart or more, agree on the players whose areas hold cards the
        camera cannot read (``_unread_players``), those are asked for on the tablet."""
        if self._unread_check is None:
            return
        since, last = self._unread_check
        now = self.table.time
        s = self.pipeline_settings
        if not state.round_in_progress or now - since > s.unread_within:
            self._unread_check = None
            return
        if not self._quiet_look():
            return
        players = self._unread_players(state)
        if players is None:
            self._unread_check = None
            return
        if last is None or players != last[1]:
            self._unread_check = (since, (now, players))
            return
        if now - last[0] < s.unread_quiet - CLOCK_SLACK:
            return
        self._unread_check = None
        if players:
            self.decider.captures_unread(state, players)

    def _unread_players(self, state) -> list | None:
        """The players whose capture area (grown by a card's height) has changed since the
        last quiet look before the camera went away by more than the cards it reads there
        (``unread_card_share`` of a card, outside the boxes of the cards it reads now and of
        those it saw then): cards lie there it cannot read (the first of a row, half under
        the next). None: nothing to compare with."""
        if self._before_gap is None or self._before_gap[0] != state.round_number:
            return None
        _, before, before_quads = self._before_gap
        now = self._last_small
        if now is None or before is None or now.shape != before.shape:
            return None
        s = self.pipeline_settings
        image = self.last_frame.image if self.last_frame is not None else None
        if image is None:
            return None
        height, width = image.shape[:2]
        h, w = now.shape[:2]
        scale = np.array([w / width, h / height], np.float32)
        tracks = [t for t in self.tracker.tracks.values() if not t.state.removed]
        areas = [float(cv2.contourArea(t.quad * scale)) for t in tracks]
        if not areas:
            return None
        card = float(np.median(areas))
        explained = np.zeros((h, w), np.uint8)
        for quad in [t.quad for t in tracks] + list(before_quads):
            centre = quad.mean(axis=0)
            grown = centre + (quad - centre) * (1 + 2 * s.unread_margin)
            cv2.fillConvexPoly(explained, np.round(grown * scale).astype(np.int32), 1)
        come = (cv2.absdiff(now, before) > s.unread_change) & (explained == 0)
        # a row's first cards lie towards the field, often across the area's edge: the area
        # is grown by a card's height
        reach = max(1, int(round(float(np.median([t.height for t in tracks])) * h / height)))
        grow = np.ones((2 * reach + 1, 2 * reach + 1), np.uint8)
        unread = []
        for seat, player in self.seats(state).items():
            zone = np.zeros((h, w), np.uint8)
            polygon = self.zones.captures(seat).pixels(w, h)
            cv2.fillPoly(zone, [np.round(polygon).astype(np.int32)], 1)
            zone = cv2.dilate(zone, grow)
            if float(np.count_nonzero(come & (zone > 0))) >= s.unread_card_share * card:
                unread.append(player)
        return unread

    def _came_back(self, seconds: float) -> None:
        """The camera saw nothing for ``seconds``: the table is read afresh, as after a
        restart (the captures recorded meanwhile recognised where they lie, those made
        meanwhile taken over), and the decider compares it with what it saw before deciding
        anything else; what it cannot tell is asked on the tablet."""
        self.gaps.append((self._last_time, seconds))
        state = self._match_state
        # between two rounds, the ended round's cards gone: what lies when it comes back,
        # captures included, is the next round's (not the ended round's left lying)
        self._round_unseen = (
            state is not None
            and bool(state.rounds)
            and not state.round_in_progress
            and not state.finished
            and not any((t.zone or "").startswith(CAPTURES) for t in self.tracker.tracks.values())
        )
        away = Away(seconds, self.decider.seen, round_unseen=self._round_unseen)
        self._before_gap = self._seen_look or self._before_gap
        self._seen_look = self._unread_check = None
        self.tracker = TableTracker(self.zones, self.tracker_settings, verify=self._verifier())
        self.table = self.tracker.state
        self._in_captures_since = {}  # the new tracker numbers its tracks from 1 again
        fresh = CaptureDecider(self.decider_settings)
        self.decider = fresh.came_back(away, memory=self.decider)
        self._settling = None
        self._prev_small = self._detected_small = self._moving = None
        self._detected_at = self._motion_at = None
        self._resumed, self._watch_from = False, None
        self._deal_checked, self._earlier_round = False, False

    def _append_decided(self, decisions: tuple[Decision, ...], frame, state) -> list:
        """Append the decider's events; register each capture with its physical card."""
        appended = []
        for decision in decisions:
            if decision.event.type == "round_started" and self._an_earlier_deal(
                decision.event.field
            ):
                # a recording played again: that round was played already, and what it
                # shows until the table is gathered again is its play, never a new deal
                self._played_again = frame.time
                self.decider.played_again()
                self._set_aside_earlier_play(state, frame.time)
                continue
            try:
                stored = self._append(decision.event)
            except IllegalEvent as exc:  # the tablet got there first, or the round ended
                self.errors.append(str(exc))
                continue
            appended.append(stored)
            reading = decision.reading
            if reading is not None:
                # False when its card is no longer this round's: the event stays stored
                self.tracker.register(reading.track, reading.seat, reading.code)
                track = self.tracker.tracks.get(reading.track)
                self.captures.append(
                    CaptureRecord(
                        player=decision.event.player,
                        card=reading.code,
                        seq=stored.seq,
                        steady_frame=reading.steady_since,
                        event_frame=frame.index,
                        event_time=frame.time,
                        check=reading.check,
                        round=state.round_number,
                        crop=None if track is None else _crop(frame.image, track.quad),
                    )
                )
        return appended

    def _an_earlier_deal(self, field) -> bool:
        """Whether ``field`` is a round already recorded, seen again (``_played_before``): a
        recording played again, never a new deal."""
        return any(self._played_before(field, r) for r in range(len(self._dealt)))

    def _played_before(self, field, round_index: int) -> bool:
        """Whether ``field`` is the recorded round ``round_index`` seen again: ``same_deal``
        cards of its dealt field, or (read in mid-play, some dealt cards already taken and
        cards laid from a hand lying there) ``same_deal`` cards or more every one of which that
        round recorded (dealt there or captured in it), ``same_deal - 1`` of them dealt there.
        A new deal after a shuffle passes that by chance with odds of at most 0.15 % per
        earlier round (8 cards from 48 holding 5 of its 8 dealt, every other card recorded);
        about 0.04 % with the 26 other cards a long round captures, as all of them must be."""
        cards = set(field or ())
        same_deal = self.pipeline_settings.same_deal
        dealt = self._dealt[round_index]
        common = len(cards & dealt)
        if common >= same_deal:
            return True
        taken = self._taken[round_index] if round_index < len(self._taken) else set()
        return len(cards) >= same_deal and common >= same_deal - 1 and cards <= dealt | taken

    def _leftovers(self, state, now: float) -> None:
        """Started between two rounds (killed after a Stop, before the cards were gathered):
        while the table is first watched, a table holding captures is the ended round's, its
        cards marked as such (stale, as when a round ends), so that they are cleared away
        before a deal opens the next round; a table showing only a field is a new deal."""
        if not self._resumed:
            self._resumed = True
            if state.round_in_progress and self.decider.away is None and not self.gaps:
                # started again on a round under way: its pending answers were not seen
                self.decider.came_back(Away())
            between = bool(state.rounds) and not state.round_in_progress and not state.finished
            self._watch_from = now if between and not self._round_unseen else None
        if self._watch_from is None:
            return
        if state.round_in_progress:
            self._watch_from = None
            return
        tracks = self.tracker.tracks.values()
        if any(t.state.ended or (t.zone or "").startswith(CAPTURES) for t in tracks):
            self._table_as_ended_round()
        if self.table.hand_present:
            self._watch_from = now
        elif now - self._watch_from >= self.pipeline_settings.resume_watch:
            self._watch_from = None

    def _set_aside_earlier_play(self, state, now: float) -> None:
        """Between rounds, an earlier round's deal seen again (a recording played from its
        start): its cards, and those laid after them, are that round's, marked as such (as when
        a round ends) so that no field read from them opens a round; once the table has been
        seen clear (the decider's ``clear_at_most`` for ``clear_held``) what is dealt next
        is a new deal."""
        if self._played_again is None:
            return
        if state.round_in_progress:  # opened on the tablet
            self._played_again = None
            return
        s = self.decider_settings
        if self.table.cards_in_sight > s.clear_at_most or self.table.hand_present:
            self._played_again = now
        elif now - self._played_again >= s.clear_held:
            self._played_again = None
            return
        self._table_as_ended_round()

    def _table_as_ended_round(self) -> None:
        """The cards lying there marked as an ended round's (``TableTracker.end_round``), and
        the table read so: no field, no arrivals, its ended cards stale until cleared away."""
        self.tracker.end_round()
        self.table = replace(
            self.table,
            stale=sum(1 for t in self.tracker.tracks.values() if t.state.ended),
            field=(),
            arrivals={s: () for s in self.table.arrivals},
        )

    def _replaying_earlier_round(self, state) -> bool:
        """A recording played again from its start while the match is in a later round: the
        first field of ``same_deal`` cards or more the table shows after the start is an
        earlier round's dealt field, not this round's. Nothing is decided until this round's deal shows again (its
        captures are then recognised as they are laid again)."""
        if self._deal_checked and not self._earlier_round:
            return False
        field = set(self.table.field)
        same_deal = self.pipeline_settings.same_deal
        if not state.round_in_progress or len(self._dealt) < 2 or len(field) < same_deal:
            return self._earlier_round
        self._deal_checked = True  # the first field of a deal's size the table shows
        if self._played_before(field, len(self._dealt) - 1):
            self._earlier_round = False  # this round's deal: it goes on from here
        elif any(self._played_before(field, r) for r in range(len(self._dealt) - 1)):
            self._earlier_round = True
        return self._earlier_round

    def _recognise(self, state) -> None:
        """Adopt the arrivals that are captures the store already holds but no card on the
        table was matched to (after a restart, a video played again from its start, a card
        typed on the tablet): no event, and the decider never sees them. An arrival is such
        a capture when that code (or its chaff twin, or what the camera read it as before a
        correction) is its likeliest reading or has ``recognised`` of its probability; the
        likeliest pairs first, each capture adopted once."""
        if not state.round_in_progress or not any(self.table.arrivals.values()):
            return
        placed = set(self.tracker.registered())
        seats = self.seats(state)
        for seat, arrivals in self.table.arrivals.items():
            player = seats.get(seat)
            if player is None or not arrivals:
                continue
            held = state.captures.get(state.side_of(player), [])
            unplaced = [c.code for c in held if c.code not in placed]
            if not unplaced:
                continue
            pairs = []
            for a in arrivals:
                for code in unplaced:
                    looks_like = {code, *self._read_as.get(code, ())}

                    def same(c, looks_like=looks_like):
                        return any(c == k or chaff_twins(c, k) for k in looks_like)

                    p = sum(q for c, q in a.candidates if same(c))
                    if same(a.candidates[0][0]) or p >= self.pipeline_settings.recognised:
                        pairs.append((p, a.steady_since, a.track, code))
            adopted: set[int] = set()
            for _, _, track, code in sorted(pairs, key=lambda x: (-x[0], x[1], x[2])):
                if track in adopted or code in placed:
                    continue
                self.tracker.adopt(track, seat, code)
                self.recognised.append((player, code))
                adopted.add(track)
                placed.add(code)
            if adopted:
                left = tuple(a for a in arrivals if a.track not in adopted)
                self.table = replace(self.table, arrivals={**self.table.arrivals, seat: left})

    @property
    def asked(self) -> int:
        """Questions put to the tablet about what the camera did not see (a gap, a restart)."""
        return self.decider.questions

    @property
    def proposal(self):
        """What the table showed against a tap (kind "reading"), else what the camera suggests
        (a redeal, the next round), else why a capture is slow (kind "unread"): a sentence the
        players act on."""
        shown = self.decider.shown
        if shown is None and self.unread is not None:
            return Proposal("unread", self.unread)
        return shown

    def crop(self, player: str, card: str) -> np.ndarray | None:
        """The camera's picture of a capture (the latest record of that player and card)."""
        for record in reversed(self.captures):
            if record.card == card and record.player.casefold() == player.casefold():
                return record.crop
        return None


class _StageClock:
    """Seconds from one lap to the next, appended per stage to ``timings`` (None: nothing is
    timed)."""

    def __init__(self, timings: dict | None):
        self.timings = timings
        self.last = time.perf_counter() if timings is not None else 0.0

    def lap(self, stage: str) -> None:
        if self.timings is None:
            return
        now = time.perf_counter()
        self.timings.setdefault(stage, []).append(now - self.last)
        self.last = now


def _crop(image: np.ndarray, quad: np.ndarray, margin: float = 0.15) -> np.ndarray:
    """The card's bounding box with a margin, as pixels (a copy)."""
    h, w = image.shape[:2]
    lo, hi = quad.min(axis=0), quad.max(axis=0)
    pad = (hi - lo) * margin
    x0, y0 = np.maximum((lo - pad).astype(int), 0)
    x1, y1 = np.minimum((hi + pad).astype(int) + 1, [w, h])
    return image[y0:y1, x0:x1].copy()

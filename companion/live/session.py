"""The live session: a frame source and the pipeline in a background thread, as the web page
sees them (``app.extensions["companion_live"]``; the contract is in docs/LIVE.md).

    session = LiveSession(open_source("camera:0"), Recognizer.load(), store, zones_path=...)
    session.start()
    session.status()          # camera state, fps, frames, match id, a message
    session.latest_jpeg()     # the last frame, cards outlined and named, zones drawn
    session.crop_jpeg("Aki", "08-3")
    session.use_deck(UserDeck.load("ferme"))  # read the next frames with a taught deck
    session.stop()

The session follows ``match_id`` when given, else the most recent unfinished match of the
store (looked up again every second, so a match started on the tablet is picked up). While
the camera is lost the tally goes on by hand; frames resume within 5 s of it coming back.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import cv2
import numpy as np

from companion.live.messages import Message
from companion.live.pipeline import LivePipeline
from companion.live.source_state import SourceState
from companion.live.zones import Zones, default_zones

JPEG_QUALITY = 80
MATCH_LOOKUP_EVERY = 1.0  # seconds
BEHIND_AT_MOST = 0.25  # seconds a recording played in real time may lag before frames drop
# A camera or stream that sends no picture this long is said to be absent (on the page and in
# the terminal): long enough for a webcam to start or a stream to connect, short enough that
# the players are not left wondering. The source keeps retrying all the same.
NO_PICTURE_AFTER = 5.0  # seconds
# A live camera's sensor never gives the same picture twice for long: a stream sending one
# picture over and over this long (a stalled encoder, a phone's camera app in the background)
# is frozen, and its pictures are not looked at until one differs (the pipeline then sees a
# gap, and compares the table with what it saw: a still table was merely still).
FROZEN_AFTER = 3.0  # seconds
# What to check when a source sends nothing, by kind of source ("camera", "stream").
ADVICE = {
    "camera": "check that it is plugged in and that no other program is using it",
    "stream": "check the address and that the camera is switched on and on this network",
    "phone": "check that the phone's camera page is open, sending, and its screen on",
}


def encode_jpeg(image: np.ndarray | None, quality: int = JPEG_QUALITY) -> bytes | None:
    if image is None or image.size == 0:
        return None
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return data.tobytes() if ok else None


def draw_zones(image: np.ndarray, zones: Zones, names: bool = True) -> np.ndarray:
    """Zone outlines (and their codes, unless ``names=False``) over a copy of the image."""
    out = image.copy()
    h, w = out.shape[:2]
    for zone in zones:
        pts = zone.pixels(w, h).round().astype(np.int32)
        colour = (255, 200, 0) if zone.kind == "captures" else (200, 200, 200)
        cv2.polylines(out, [pts], True, colour, 2, cv2.LINE_AA)
        if not names:
            continue
        x, y = pts.min(axis=0)
        cv2.putText(
            out, zone.name, (int(x) + 6, int(y) + 22), cv2.FONT_HERSHEY_SIMPLEX, 0.6, colour, 2
        )
    return out


class LiveSession:
    """Owns a frame source and a ``LivePipeline``; thread-safe readers for the web page."""

    def __init__(
        self,
        source,
        detector,
        store,
        *,
        zones: Zones | None = None,
        zones_path: str | Path | None = None,
        match_id: int | None = None,
        realtime: bool = True,
        clock=time.monotonic,
        log=None,
    ):
        self.source = source
        self.detector = detector
        self.store = store
        self.zones_path = Path(zones_path) if zones_path else None
        if zones is None:
            if self.zones_path and self.zones_path.is_file():
                zones = Zones.load(self.zones_path)
            else:
                zones = default_zones(2)
        self._fixed_match = match_id
        self.pipeline = LivePipeline(detector, zones, store, match_id)
        self.realtime = realtime  # a recording plays at its own pace (as a camera would)
        self._lock = threading.Lock()
        # Held while the pipeline reads a frame: a change of deck waits for the frame in hand,
        # so that no frame is named half by one deck and half by another.
        self._reading = threading.Lock()
        # Whether the tablet has changed the deck the camera reads with since the start: from
        # then on, a match that recorded no deck is shown with the standard names, not the
        # camera's (it was not started with the camera's present deck).
        self.deck_switched = False
        self._frame = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._times: list[float] = []
        self._looked_up = -MATCH_LOOKUP_EVERY
        self.message = Message("camera.starting")
        self.skipped = 0  # frames of a recording dropped to keep up with real time
        self._clock = clock
        # One line per change of the source's state (connecting, live, lost, absent, ended).
        self._log = log or logging.getLogger("companion.live").info
        self._down_since: float | None = None  # since when no picture has come
        self._same: tuple | None = None  # (a sample of the last picture, since when the same)
        self.frozen = False  # a live source sending one picture over and over
        self._said: str | None = None  # the last state put in the log

    # -- the web page's side ------------------------------------------------------------------

    @property
    def zones(self) -> Zones:
        return self.pipeline.zones

    def set_zones(self, zones: Zones) -> None:
        """Use a new layout now and keep it in the session's zone file (when it has one)."""
        if self.zones_path:
            zones.save(self.zones_path)
        with self._lock:
            self.pipeline.zones = zones
            self.pipeline.tracker.zones = zones

    @property
    def deck_name(self) -> str | None:
        """The name of the taught deck the camera reads with (``run --deck``, or chosen on the
        tablet since), None for the standard names."""
        namer = getattr(self.detector, "namer", None)
        return None if namer is None else namer.deck.name

    def use_deck(self, deck) -> None:
        """Read the camera with a taught deck (a ``recognizer.decks.UserDeck``), or with the
        standard names (None), from the next frame on. The deck's namer is built first, while
        frames go on; it replaces the one in use between two frames. The tracker and the
        matches keep the ``MM-K`` codes, so nothing already seen is read again; a new match
        records this deck's names."""
        namer = self.detector.namer_for(deck)
        with self._reading:
            self.detector.namer = namer
            self.deck_switched = True

    def absent(self) -> bool:
        """Whether the source has sent no picture for ``NO_PICTURE_AFTER`` seconds while it
        should (connecting or lost; a recording that ended is not absent)."""
        if not SourceState.of(self.source).waiting:
            return False
        return self._down_since is not None and (
            self._clock() - self._down_since >= NO_PICTURE_AFTER
        )

    def source_kind(self) -> str:
        return getattr(self.source, "kind", "source")

    def absent_sentence(self) -> str:
        """Which source sends nothing and what to check, in one sentence (English, for the
        terminal; the page says the same in its language)."""
        advice = ADVICE.get(self.source_kind(), "check the camera")
        return (
            f"No picture from {self.source.describe()} for {NO_PICTURE_AFTER:g} s: {advice}; "
            "still trying."
        )

    def status(self) -> dict:
        state = SourceState.of(self.source)
        times = self._times[-30:]
        fps = 0.0
        if len(times) >= 2 and times[-1] > times[0]:
            fps = (len(times) - 1) / (times[-1] - times[0])
        proposal = self.pipeline.proposal
        if self.frozen and state is SourceState.LIVE:
            state = SourceState.LOST  # a frozen picture is no picture: the page says why
        return {
            "camera": state.value,
            "source": self.source.describe() if self.source else "none",
            "fps": round(fps, 1),
            "frames": self.pipeline.frames,
            "match_id": self.pipeline.match_id,
            "message": self._message(state),
            "absent": self.source_kind() if self.absent() else None,
            "proposal": None
            if proposal is None
            else {"kind": proposal.kind, "text": proposal.text},
        }

    def _message(self, state: SourceState) -> str:
        if self.absent():
            return self.absent_sentence()
        if self.frozen:
            return Message("camera.frozen")
        if state is SourceState.LOST:
            return Message("camera.lost")
        if state is SourceState.CONNECTING:
            return Message("camera.connecting")
        if state is SourceState.ENDED:
            return Message("camera.recording_ended")
        if self.pipeline.match_id is None:
            return Message("camera.no_match")
        return self.message

    def latest_jpeg(self, annotated: bool = True) -> bytes | None:
        with self._lock:
            frame, det = self._frame, self.pipeline.detections
        if frame is None:
            return None
        image = frame.image
        if annotated:
            from companion.recognizer import annotate

            # Outlines only: the page writes the cards' and zones' names over the picture, in
            # its own language and where they do not cover each other (``cards_in_view``).
            outlined = annotate(image, det, labels=False) if len(det) else image
            image = draw_zones(outlined, self.zones, names=False)
        return encode_jpeg(image)

    def cards_in_view(self) -> dict:
        """The last look's cards for the live view to name: ``{"frame": n, "cards": [{"code":
        MM-K or "back", "quad": [[x, y] x 4] normalised, "confidence"}]}``."""
        from companion.detections import CLASSES

        with self._lock:
            frame, det = self._frame, self.pipeline.detections
        if frame is None or not len(det):
            return {"frame": self.pipeline.frames, "cards": []}
        h, w = frame.image.shape[:2]
        quads = det.quads / np.float32([w, h])
        return {
            "frame": self.pipeline.frames,
            "cards": [
                {
                    "code": CLASSES[int(class_id)],
                    "quad": [[round(float(x), 4), round(float(y), 4)] for x, y in quad],
                    "confidence": round(float(confidence), 3),
                }
                for class_id, quad, confidence in zip(
                    det.class_ids, quads, det.confidence, strict=True
                )
            ],
        }

    def snapshot_jpeg(self) -> bytes | None:
        return self.latest_jpeg(annotated=False)

    def field_boxes(self) -> list[tuple[float, float, float, float]]:
        """The normalised boxes (x0, y0, x1, y1) of the face-up cards in the last look (for
        the calibration page's "propose from the dealt field")."""
        from companion.detections import BACK_ID

        with self._lock:
            frame, det = self._frame, self.pipeline.detections
        if frame is None or not len(det):
            return []
        h, w = frame.image.shape[:2]
        quads = det.quads[det.class_ids != BACK_ID] / np.float32([w, h])
        return [
            (float(q[:, 0].min()), float(q[:, 1].min()), float(q[:, 0].max()), float(q[:, 1].max()))
            for q in quads
        ]

    def crop_jpeg(self, player: str, card: str) -> bytes | None:
        return encode_jpeg(self.pipeline.crop(player, card))

    # -- the loop ----------------------------------------------------------------------------

    def start(self) -> LiveSession:
        self._thread = threading.Thread(target=self.run, name="companion-live", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.source.close()

    def _follow_latest_match(self) -> None:
        now = self._clock()
        if self._fixed_match is not None or now - self._looked_up < MATCH_LOOKUP_EVERY:
            return
        self._looked_up = now
        match_id = None
        for info in self.store.matches():
            if not info.finished:
                match_id = info.id
                break
        self.pipeline.set_match(match_id)

    def _watch_source(self, got_picture: bool) -> None:
        """Keep when the pictures stopped, and put each change of state in the log once."""
        state = SourceState.of(self.source)
        if got_picture or not state.waiting:
            self._down_since = None
        elif self._down_since is None:
            self._down_since = self._clock()
        said = "absent" if self.absent() else state.value
        if said == self._said:
            return
        self._said = said
        name = self.source.describe()
        name = name[:1].upper() + name[1:]
        line = {
            "absent": self.absent_sentence(),
            SourceState.CONNECTING: f"{name}: connecting.",
            SourceState.LIVE: f"{name}: live.",
            SourceState.LOST: f"{name}: lost; keep score by hand, it reconnects by itself.",
            SourceState.ENDED: f"{name}: the recording has ended.",
        }.get(said, f"{name}: {said}.")
        try:
            self._log(line)
        except Exception:  # noqa: BLE001 - a closed terminal must not stop the tally
            pass

    def step(self) -> bool:
        """Read and process one frame; False when there was none."""
        self._follow_latest_match()
        frame = self.source.read()
        self._watch_source(frame is not None)
        if frame is None:
            self._same = None  # the same picture again after none is not a frozen stream
            return False
        if self._stuck(frame):
            return False
        with self._reading:
            self.pipeline.process(frame)
        with self._lock:
            self._frame = frame
        self._times.append(self._clock())
        del self._times[:-60]
        self.message = Message("camera.following", n=self.pipeline.match_id)
        return True

    def _stuck(self, frame) -> bool:
        """Whether a live source has sent this very picture for ``FROZEN_AFTER`` seconds (a
        recording may hold still frames; a camera's noise never does)."""
        if getattr(self.source, "finite", False):
            return False
        sample = np.ascontiguousarray(frame.image[::8, ::8])
        if self._same is None or not np.array_equal(sample, self._same[0]):
            self._same = (sample, frame.time)
            self.frozen = False
            return False
        self.frozen = frame.time - self._same[1] >= FROZEN_AFTER
        return self.frozen

    def _catch_up(self, behind: float) -> None:
        """A recording played at its pace drops the frames the pipeline is too late for, as
        a camera does: never more than ``BEHIND_AT_MOST`` behind real time."""
        skip = getattr(self.source, "skip", None)
        fps = getattr(self.source, "fps", 0.0)
        if skip is None or not fps:
            return
        while behind > BEHIND_AT_MOST and skip():
            behind -= 1.0 / fps
            self.skipped += 1

    def run(self) -> None:
        start = time.monotonic()  # the pace of a recording is real time, whatever the clock
        # No picture yet: counted from now, so that a source whose first open blocks (a stream
        # that does not answer) is said to be absent on the page all the same.
        self._down_since = self._clock()
        while not self._stopping.is_set():
            if self.source.state == SourceState.ENDED:
                self._watch_source(False)
                self.message = Message("camera.recording_ended")
                self._stopping.wait(0.5)
                continue
            try:
                got = self.step()
            except Exception as exc:  # keep the tally alive: a frame that breaks is skipped
                self.message = Message("camera.frame_failed", error=type(exc).__name__)
                got = False
            if not got:
                self._stopping.wait(0.05)
                continue
            if self.realtime and getattr(self.source, "finite", False):
                due = start + self._frame.time
                delay = due - time.monotonic()
                if delay > 0:
                    self._stopping.wait(delay)
                else:
                    self._catch_up(-delay)

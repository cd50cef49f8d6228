"""Frame sources: a webcam, a video file, a folder of images, a network stream or the pictures a
phone's browser posts, one interface.

    source = open_source("camera:0")     # or "table.mp4", "frames/", "rtsp://..."
    source = PushedFrameSource()         # pictures posted by a phone's browser (run --phone)
    frame = source.read()                # Frame(image, index, time) or None (nothing right now)
    source.state                         # a SourceState: connecting | live | lost | ended

A camera or stream that fails (unplugged, stalled) is reopened with backoff, 0.5 s doubling up
to 5 s, so recognition resumes within 5 s of it coming back; meanwhile ``read`` returns None
and the tally goes on by hand. Files are ``ended`` after their last frame, and their ``time``
is ``index / fps``, so a replay gives the same result however fast the machine is.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from companion import CompanionError
from companion.live.messages import Message
from companion.live.source_state import SourceState

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
FOLDER_FPS = 10.0
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 5.0


def quiet_video_logs() -> None:
    """Keep OpenCV's and FFmpeg's own warnings off the terminal: a camera that is absent or a
    stream that refuses would print a few lines at every retry. The source's state says what
    happened, once per change. Setting ``OPENCV_FFMPEG_LOGLEVEL`` yourself (for debugging)
    wins; FFmpeg reads it when OpenCV first uses it, so call this before opening anything."""
    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # AV_LOG_QUIET
    if "OPENCV_LOG_LEVEL" not in os.environ:
        try:
            cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)
        except AttributeError:  # pragma: no cover - an OpenCV build without utils.logging
            pass


class SourceError(CompanionError):
    """A frame source that cannot be used at all (no such file, empty folder...)."""


@dataclass(frozen=True)
class Frame:
    """One picture: BGR pixels, its number from the source's start, and its time in seconds."""

    image: np.ndarray
    index: int
    time: float

    @property
    def size(self) -> tuple[int, int]:
        """(width, height)"""
        return self.image.shape[1], self.image.shape[0]


class FrameSource:
    """Base of all sources: ``read()``, ``state``, ``describe()``, ``close()``."""

    state = SourceState.CONNECTING
    fps: float = 0.0

    def read(self) -> Frame | None:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def close(self) -> None:
        pass

    @property
    def finite(self) -> bool:
        """Whether the source is a recording (replayed at its own pace) rather than live."""
        return False

    def __iter__(self):
        """The frames of a recording, in order (None-free); ends when the source ends."""
        while self.state != SourceState.ENDED:
            frame = self.read()
            if frame is not None:
                yield frame

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class VideoFileSource(FrameSource):
    """A video file OpenCV can decode; ``time`` is ``index / fps`` of the file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise SourceError(f"No video file at {self.path}.")
        self._cap = cv2.VideoCapture(str(self.path))
        if not self._cap.isOpened():
            raise SourceError(f"{self.path} is not a video OpenCV can read.")
        self.fps = float(self._cap.get(cv2.CAP_PROP_FPS) or 0) or 10.0
        self._index = 0
        self.state = SourceState.LIVE

    @property
    def finite(self) -> bool:
        return True

    def read(self) -> Frame | None:
        if self.state == SourceState.ENDED:
            return None
        ok, image = self._cap.read()
        if not ok or image is None:
            self.state = SourceState.ENDED
            self._cap.release()
            return None
        frame = Frame(image, self._index, self._index / self.fps)
        self._index += 1
        return frame

    def skip(self) -> bool:
        """Pass over the next frame without decoding it (a camera's dropped frame); False
        once the video has ended."""
        if self.state == SourceState.ENDED:
            return False
        if not self._cap.grab():
            self.state = SourceState.ENDED
            self._cap.release()
            return False
        self._index += 1
        return True

    def describe(self) -> str:
        return Message("source.video", name=self.path.name, fps=f"{self.fps:g}")

    def close(self) -> None:
        self._cap.release()
        self.state = SourceState.ENDED


class ImageFolderSource(FrameSource):
    """The images of a folder, sorted by name, at ``fps`` frames per second (10 by default)."""

    def __init__(self, path: str | Path, fps: float = FOLDER_FPS):
        self.path = Path(path)
        if not self.path.is_dir():
            raise SourceError(f"No folder at {self.path}.")
        self.files = sorted(p for p in self.path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not self.files:
            raise SourceError(f"The folder {self.path} holds no images.")
        self.fps = float(fps)
        self._index = 0
        self.state = SourceState.LIVE

    @property
    def finite(self) -> bool:
        return True

    def read(self) -> Frame | None:
        while self._index < len(self.files):
            index = self._index
            self._index += 1
            image = cv2.imread(str(self.files[index]), cv2.IMREAD_COLOR)
            if image is not None:  # an unreadable file is skipped, its number kept
                return Frame(image, index, index / self.fps)
        self.state = SourceState.ENDED
        return None

    def skip(self) -> bool:
        """Pass over the next image without reading it; False once there is none left."""
        if self._index >= len(self.files):
            self.state = SourceState.ENDED
            return False
        self._index += 1
        return True

    def describe(self) -> str:
        return Message("source.images", path=self.path, n=len(self.files), fps=f"{self.fps:g}")


class LiveSource(FrameSource):
    """A webcam (an index) or a network stream (a URL), reopened with backoff when it fails.

    ``opener`` builds the capture object (``cv2.VideoCapture`` by default; tests pass fakes);
    ``clock`` gives seconds (``time.monotonic``). ``read`` never blocks longer than one
    ``capture.read()``; while the source is lost it returns None at once.
    """

    def __init__(self, target: int | str, opener=None, clock=time.monotonic, newest=False):
        if opener is None:
            quiet_video_logs()
        self.target = target
        self._opener = opener or _open_capture
        self._clock = clock
        self._cap = None
        self._delay = BACKOFF_FIRST
        self._retry_at = 0.0
        self._index = 0
        self._start: float | None = None
        self.state = SourceState.CONNECTING
        self.failures = 0
        self._was_live = False
        # ``newest``: a thread of its own reads the camera as fast as it sends, and ``read``
        # hands out the newest picture, the older ones dropped, as the phone's pictures are:
        # a pipeline slower than the camera for a while (a look, a loaded machine) never works
        # through a queue of stale pictures (a stream's buffer, which BUFFERSIZE does not
        # bound), so what reaches the tablet is at most one look old
        self.newest = newest
        self._latest: Frame | None = None
        self._handed = -1  # the index of the last picture handed out
        self.dropped = 0  # pictures never handed out: a newer one came first
        self._arrived = threading.Condition()
        self._reader: threading.Thread | None = None
        self._closing = threading.Event()

    def _open(self) -> bool:
        now = self._clock()
        if now < self._retry_at:
            return False
        try:
            cap = self._opener(self.target)
            ok = cap is not None and cap.isOpened()
        except Exception:  # a driver or backend error is one more failed try
            cap, ok = None, False
        if ok:
            self._cap = cap
            return True
        if cap is not None:
            cap.release()
        self._fail(now)
        return False

    def _fail(self, now: float) -> None:
        self.failures += 1
        if self._cap is not None:
            try:
                self._cap.release()
            except Exception:
                pass
            self._cap = None
        self.state = SourceState.LOST if self._was_live else SourceState.CONNECTING
        self._retry_at = now + self._delay
        self._delay = min(self._delay * 2, BACKOFF_MAX)

    def read(self, wait: float = 0.1) -> Frame | None:
        """The next picture (``newest``: the newest one not handed out yet, waiting up to
        ``wait`` seconds for it), or None."""
        if not self.newest:
            return self._read_one()
        if self.state == SourceState.ENDED:
            return None
        if self._reader is None:
            self._reader = threading.Thread(
                target=self._keep_reading, name="companion-camera", daemon=True
            )
            self._reader.start()
        with self._arrived:
            self._arrived.wait_for(
                lambda: self._latest is not None and self._latest.index > self._handed, wait
            )
            frame = self._latest
            if frame is None or frame.index <= self._handed or self.state != SourceState.LIVE:
                return None  # nothing newer; or lost since: no picture until it is back
            self.dropped += frame.index - self._handed - 1
            self._handed = frame.index
            return frame

    def _keep_reading(self) -> None:
        while not self._closing.is_set():
            frame = self._read_one()
            if frame is None:
                self._closing.wait(0.05)  # lost: ``_read_one`` reopens with backoff
                continue
            with self._arrived:
                self._latest = frame
                self._arrived.notify_all()

    def _read_one(self) -> Frame | None:
        if self.state == SourceState.ENDED:
            return None
        if self._cap is None and not self._open():
            return None
        try:
            ok, image = self._cap.read()
        except Exception:
            ok, image = False, None
        now = self._clock()
        if not ok or image is None:
            self._fail(now)  # unplugged, or the stream dropped: reopen with backoff
            return None
        if self._start is None:
            self._start = now
        self.state = SourceState.LIVE
        self._was_live = True
        self._delay = BACKOFF_FIRST
        frame = Frame(image, self._index, now - self._start)
        self._index += 1
        return frame

    def describe(self) -> str:
        if isinstance(self.target, int):
            return Message("source.camera", target=self.target)
        return Message("source.stream", url=redact_url(self.target))

    @property
    def kind(self) -> str:
        """ "camera" (a webcam index) or "stream" (a URL): what to check differs."""
        return "camera" if isinstance(self.target, int) else "stream"

    def close(self) -> None:
        self._closing.set()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(2.0)  # it may be inside a read that blocks: not for long
        if self._cap is not None:
            self._cap.release()
            self._cap = None
        self.state = SourceState.ENDED


# Query parameters that carry a secret in camera URLs (``?user=...&password=...``, tokens).
SECRET_PARAMETERS = re.compile(
    r"(?i)^(user(name)?|login|pass(word|wd)?|pwd|token|access_token|key|api_?key|auth|secret"
    r"|sig(nature)?|session)$"
)
_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")


def redact_url(text) -> str:
    """``text`` with the credentials of any URL in it hidden: ``rtsp://user:pass@cam/x`` is
    ``rtsp://***@cam/x``, and a secret query parameter's value is ``***``. A camera's URL is
    shown on the page, in ``/live/status`` and in the terminal: never its password.

    A password may hold any character (a space, ``#``, ``/``, ``@``), so everything from the
    scheme up to the last ``@`` on the URL's line (before any next URL) is hidden: at worst
    more than the password, never part of it."""
    text = str(text)
    found = _SCHEME.search(text)
    if found is None:
        return text
    start = found.end()
    following = _SCHEME.search(text, start)
    end = following.start() if following else len(text)
    newline = text.find("\n", start, end)
    end = newline if newline >= 0 else end
    rest = text[start:end]
    at = rest.rfind("@")
    if at >= 0:
        rest = "***" + rest[at:]
    blank = re.search(r"\s", rest)  # the URL ends at a blank; its query is read up to there
    url, after = (rest[: blank.start()], rest[blank.start() :]) if blank else (rest, "")
    if "?" in url:
        head, _, query = url.partition("?")
        query, hash_mark, fragment = query.partition("#")
        parts = []
        for part in query.split("&"):
            name, equals, _value = part.partition("=")
            parts.append(f"{name}=***" if equals and SECRET_PARAMETERS.match(name) else part)
        url = head + "?" + "&".join(parts) + hash_mark + fragment
    return text[:start] + url + after + redact_url(text[end:])


def _open_capture(target):
    cap = cv2.VideoCapture(target)
    try:
        cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)  # the newest frame, not a queue of old ones
    except cv2.error:
        pass
    return cap


def open_source(spec: str | int | Path) -> FrameSource:
    """``camera:N`` (or a bare integer), a video file, a folder of images, or a URL (an http
    address that answers with a web page or an error instead of a video is one sentence)."""
    quiet_video_logs()
    if isinstance(spec, int):
        return LiveSource(spec, newest=True)
    text = str(spec).strip()
    if text.startswith("camera:"):
        index = text[len("camera:") :]
        if not index.isdigit():
            raise SourceError(f"A camera is named camera:N with N a number, not {text!r}.")
        return LiveSource(int(index), newest=True)
    if text.isdigit():
        return LiveSource(int(text), newest=True)
    if "://" in text:
        problem = not_a_video_sentence(text)  # an address that answers, but not with a video
        if problem:
            raise SourceError(problem)
        return LiveSource(text, newest=True)
    path = Path(text).expanduser()
    if path.is_dir():
        return ImageFolderSource(path)
    if path.is_file():
        return VideoFileSource(path)
    raise SourceError(f"No camera, video, image folder or stream at {text!r}.")


# A picture pushed by a phone's browser (``companion.web.phone``): JPEG, as its canvas makes
# it, or PNG.
PUSHED_MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n")
PUSH_QUEUE = 3  # pictures kept waiting for the pipeline; a full queue drops its oldest
# No picture for this long and a phone that was sending is lost (its screen went off, the page
# was closed, it left the Wi-Fi): a phone sends about 10 a second.
PUSH_LOST_AFTER = 3.0  # seconds


class PushedFrameSource(FrameSource):
    """Pictures posted to the server (a phone's browser used as the camera: ``run --phone``).

    ``push(data)`` keeps a posted picture (from a web request's thread); ``read()`` (the
    pipeline's thread) decodes the newest one and drops any older still waiting, as a camera
    drops the frames a slow reader misses, so that the pipeline never falls behind the table.
    A frame's ``time`` is when it arrived, from the first one. ``state``: connecting until
    the first picture, lost when none has come for ``lost_after`` seconds, live otherwise.
    """

    kind = "phone"

    def __init__(
        self, queue: int = PUSH_QUEUE, lost_after: float = PUSH_LOST_AFTER, clock=time.monotonic
    ):
        self._waiting: deque = deque(maxlen=queue)
        self._arrived = threading.Condition()
        self._clock = clock
        self.lost_after = float(lost_after)
        self._last_at: float | None = None
        self._start: float | None = None
        self._index = 0
        self._closed = False
        self.received = 0  # pictures posted
        self.dropped = 0  # posted but never read: a newer one came first
        self.unreadable = 0  # posted but not a picture OpenCV could decode

    @property
    def state(self) -> str:
        if self._closed:
            return "ended"
        if self._last_at is None:
            return "connecting"
        return "live" if self._clock() - self._last_at < self.lost_after else "lost"

    def push(self, data: bytes) -> None:
        """Keep one posted picture as the newest; a body that is not a JPEG or PNG is one
        sentence (SourceError) and nothing is kept."""
        if not data.startswith(PUSHED_MAGIC):
            raise SourceError("A camera picture is sent as a JPEG or PNG image.")
        with self._arrived:
            if len(self._waiting) == self._waiting.maxlen:
                self.dropped += 1
            self._last_at = now = self._clock()
            self._waiting.append((bytes(data), now))
            self.received += 1
            self._arrived.notify_all()

    def read(self, wait: float = 0.05) -> Frame | None:
        """The newest picture posted since the last read (waiting up to ``wait`` seconds for
        one), or None."""
        with self._arrived:
            if not self._waiting and not self._closed and wait > 0:
                self._arrived.wait(wait)
            if not self._waiting:
                return None
            data, at = self._waiting.pop()
            self.dropped += len(self._waiting)
            self._waiting.clear()
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        if image is None:
            self.unreadable += 1
            return None
        if self._start is None:
            self._start = at
        frame = Frame(image, self._index, at - self._start)
        self._index += 1
        return frame

    def describe(self) -> str:
        return "the phone's camera"

    def close(self) -> None:
        with self._arrived:
            self._closed = True
            self._waiting.clear()
            self._arrived.notify_all()


# What a web address that is not a video stream answers with, said in one sentence: the page
# of a phone camera app (its address without /video), an error, some JSON.
STREAM_TYPES = ("multipart/", "video/", "image/", "application/octet-stream", "application/x-")
PROBE_SECONDS = 3.0


def not_a_video_sentence(url: str, timeout: float = PROBE_SECONDS) -> str | None:
    """For an http(s) address: one sentence when it answers with something that is not a
    video (an error status, a web page, JSON); None when it looks like a stream, or does not
    answer at all (a camera not yet switched on: ``run`` keeps trying)."""
    import urllib.error
    import urllib.request

    if not url.lower().startswith(("http://", "https://")):
        return None
    shown = redact_url(url)
    request = urllib.request.Request(url, headers={"User-Agent": "hanafuda-companion"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 - the player's own camera
            kind = (answer.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    except urllib.error.HTTPError as exc:
        return (
            f"{shown} answers {exc.code} {exc.reason}, not a video: check the address the "
            "camera app shows (for IP Webcam it ends in /video)."
        )
    except (urllib.error.URLError, OSError, ValueError):
        return None
    if not kind or kind.startswith(STREAM_TYPES):
        return None
    what = {"text/html": "a web page", "application/json": "JSON"}.get(kind, kind)
    return (
        f"{shown} answers with {what}, not a video: give the address of the video stream "
        "itself (for IP Webcam it ends in /video)."
    )


class CameraOrPhone(FrameSource):
    """A webcam, or a phone's browser once one sends pictures (``run`` given no source: the
    camera page offers the phone). From a phone's first picture on, the phone is the camera
    (the players chose it) and the webcam is let go; until then the webcam is read."""

    def __init__(self, camera: FrameSource, phone: PushedFrameSource | None = None):
        self.camera = camera
        self.phone = phone or PushedFrameSource()
        self._camera_open = True

    @property
    def active(self) -> FrameSource:
        return self.phone if self.phone.received else self.camera

    @property
    def state(self) -> str:
        return self.active.state

    @property
    def kind(self) -> str:
        return getattr(self.active, "kind", "camera")

    def push(self, data: bytes) -> None:
        self.phone.push(data)

    def read(self) -> Frame | None:
        if not self.phone.received:
            return self.camera.read()
        if self._camera_open:  # on the reading thread, where the webcam is read
            self._camera_open = False
            self.camera.close()
        return self.phone.read()

    def describe(self) -> str:
        return self.active.describe()

    def close(self) -> None:
        self.camera.close()
        self.phone.close()

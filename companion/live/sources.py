"""Frame sources: a webcam, a video file, a folder of images or a network stream, one interface.

    source = open_source("camera:0")     # or "table.mp4", "frames/", "rtsp://..."
    frame = source.read()                # Frame(image, index, time) or None (nothing right now)
    source.state                         # connecting | live | lost | ended

A camera or stream that fails (unplugged, stalled) is reopened with backoff, 0.5 s doubling up
to 5 s, so recognition resumes within 5 s of it coming back; meanwhile ``read`` returns None
and the tally goes on by hand. Files are ``ended`` after their last frame, and their ``time``
is ``index / fps``, so a replay gives the same result however fast the machine is.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from companion import CompanionError

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

    state = "connecting"
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
        while self.state != "ended":
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
        self.state = "live"

    @property
    def finite(self) -> bool:
        return True

    def read(self) -> Frame | None:
        if self.state == "ended":
            return None
        ok, image = self._cap.read()
        if not ok or image is None:
            self.state = "ended"
            self._cap.release()
            return None
        frame = Frame(image, self._index, self._index / self.fps)
        self._index += 1
        return frame

    def skip(self) -> bool:
        """Pass over the next frame without decoding it (a camera's dropped frame); False
        once the video has ended."""
        if self.state == "ended":
            return False
        if not self._cap.grab():
            self.state = "ended"
            self._cap.release()
            return False
        self._index += 1
        return True

    def describe(self) -> str:
        return f"video {self.path.name} ({self.fps:g} fps)"

    def close(self) -> None:
        self._cap.release()
        self.state = "ended"


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
        self.state = "live"

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
        self.state = "ended"
        return None

    def skip(self) -> bool:
        """Pass over the next image without reading it; False once there is none left."""
        if self._index >= len(self.files):
            self.state = "ended"
            return False
        self._index += 1
        return True

    def describe(self) -> str:
        return f"images in {self.path} ({len(self.files)}, {self.fps:g} fps)"


class LiveSource(FrameSource):
    """A webcam (an index) or a network stream (a URL), reopened with backoff when it fails.

    ``opener`` builds the capture object (``cv2.VideoCapture`` by default; tests pass fakes);
    ``clock`` gives seconds (``time.monotonic``). ``read`` never blocks longer than one
    ``capture.read()``; while the source is lost it returns None at once.
    """

    def __init__(self, target: int | str, opener=None, clock=time.monotonic):
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
        self.state = "connecting"
        self.failures = 0
        self._was_live = False

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
        self.state = "lost" if self._was_live else "connecting"
        self._retry_at = now + self._delay
        self._delay = min(self._delay * 2, BACKOFF_MAX)

    def read(self) -> Frame | None:
        if self.state == "ended":
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
        self.state = "live"
        self._was_live = True
        self._delay = BACKOFF_FIRST
        frame = Frame(image, self._index, now - self._start)
        self._index += 1
        return frame

    def describe(self) -> str:
        if isinstance(self.target, int):
            return f"camera {self.target}"
        return f"stream {redact_url(self.target)}"

    @property
    def kind(self) -> str:
        """ "camera" (a webcam index) or "stream" (a URL): what to check differs."""
        return "camera" if isinstance(self.target, int) else "stream"

    def close(self) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None
        self.state = "ended"


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
    """``camera:N`` (or a bare integer), a video file, a folder of images, or a URL."""
    quiet_video_logs()
    if isinstance(spec, int):
        return LiveSource(spec)
    text = str(spec).strip()
    if text.startswith("camera:"):
        index = text[len("camera:") :]
        if not index.isdigit():
            raise SourceError(f"A camera is named camera:N with N a number, not {text!r}.")
        return LiveSource(int(index))
    if text.isdigit():
        return LiveSource(int(text))
    if "://" in text:
        return LiveSource(text)
    path = Path(text).expanduser()
    if path.is_dir():
        return ImageFolderSource(path)
    if path.is_file():
        return VideoFileSource(path)
    raise SourceError(f"No camera, video, image folder or stream at {text!r}.")

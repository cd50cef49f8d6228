"""A photo file read at the size it is needed at: its size from its header (JPEG, PNG), then
decoded already shrunk where the format allows (JPEG's DCT scaling: a quarter of the pixels
costs a quarter of the memory), and the memory given back to the system afterwards.

    decoded(data, long_side=2000)   # BGR, its long side at most 2000 px (None: no image)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import struct
import threading

import cv2
import numpy as np

# OpenCV's flags decoding at 1/2, 1/4 and 1/8 of each side
_REDUCED = {2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4, 8: cv2.IMREAD_REDUCED_COLOR_8}
# Decodes of more pixels than this are made one at a time: a 50-megapixel PNG is 150 MB
# decoded, and PNG cannot be decoded shrunk
LARGE_PIXELS = 16_000_000
_large = threading.Lock()


def image_kind_and_size(data: bytes) -> tuple[str, int, int] | None:
    """("jpg" | "png", width, height) read from a photo's header, without decoding it; None
    for anything else (or a header that says no size)."""
    data = bytes(data[:65536]) if not isinstance(data, bytes) else data
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return "png", width, height
    if not data.startswith(b"\xff\xd8"):
        return None
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD9)):  # markers without a length
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a frame's header
            if at + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return "jpg", width, height
        at += 2 + length
    return None


def reduction(width: int, height: int, long_side: int) -> int:
    """The largest of 1, 2, 4, 8 that keeps the long side at least ``long_side``."""
    longest = max(width, height)
    return max([1] + [f for f in _REDUCED if longest // f >= long_side])


def decoded(data, long_side: int) -> np.ndarray | None:
    """The photo in ``data`` (bytes or a uint8 array) as BGR pixels, its long side at most
    ``long_side`` (smaller photos as they are); None where it cannot be decoded."""
    buffer = np.frombuffer(data, np.uint8) if isinstance(data, bytes) else data
    if not buffer.size:
        return None
    found = image_kind_and_size(buffer[:65536].tobytes())
    factor = reduction(found[1], found[2], long_side) if found else 1
    large = found is not None and found[1] * found[2] > LARGE_PIXELS
    with _large if large else _nothing():
        try:
            image = cv2.imdecode(buffer, _REDUCED.get(factor, cv2.IMREAD_COLOR))
        except cv2.error:  # a header OpenCV believes, then data it cannot decode
            image = None
        if image is not None and max(image.shape[:2]) > long_side:
            scale = long_side / max(image.shape[:2])
            image = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    if large:
        give_memory_back()
    return image


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_libc = None


def give_memory_back() -> None:
    """Return the freed heap to the system (glibc keeps it otherwise: a server that decoded a
    large photo would stay hundreds of MB larger); nothing elsewhere."""
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        try:
            _libc = ctypes.CDLL(name) if name else False
            _libc = _libc if _libc and hasattr(_libc, "malloc_trim") else False
        except OSError:
            _libc = False
    if _libc:
        _libc.malloc_trim(0)

"""Photos read at the size teaching needs (issue 83): a phone's photo is decoded shrunk, not
whole, and kept at that size."""

from __future__ import annotations

from io import BytesIO

import cv2
import numpy as np
from web_support import csrf

from companion.recognizer.image_files import decoded, image_kind_and_size, reduction
from companion.recognizer.photos import TEACH_LONG_SIDE, _read_image
from companion.web import create_app


def photo(width: int, height: int, ext: str = ".jpg") -> bytes:
    rng = np.random.default_rng(7)
    small = rng.integers(0, 255, (height // 50, width // 50, 3), np.uint8)
    image = cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR)
    ok, data = cv2.imencode(ext, image)
    assert ok
    return data.tobytes()


def test_a_phone_photo_is_read_at_the_size_teaching_needs(tmp_path):
    path = tmp_path / "01.jpg"
    path.write_bytes(photo(4000, 3000))
    image = _read_image(path)
    assert image.shape == (1500, 2000, 3)
    small = tmp_path / "02.jpg"
    small.write_bytes(photo(1600, 1200))
    assert _read_image(small).shape == (1200, 1600, 3)  # as it is: the size teaching is measured at


def test_the_decoding_is_shrunk_by_the_header_size():
    assert reduction(4000, 3000, TEACH_LONG_SIDE) == 2
    assert reduction(8800, 5900, TEACH_LONG_SIDE) == 4
    assert reduction(1600, 1200, TEACH_LONG_SIDE) == 1
    data = photo(8800, 5900, ".png")
    assert image_kind_and_size(data) == ("png", 8800, 5900)
    assert max(decoded(data, TEACH_LONG_SIDE).shape[:2]) == TEACH_LONG_SIDE
    assert decoded(b"not a photo", TEACH_LONG_SIDE) is None


def test_the_tablet_keeps_a_large_photo_at_the_size_teaching_reads(store, tmp_path):
    app = create_app(store, testing=True)
    app.config["DECKS_DIR"] = str(tmp_path / "decks")
    client = app.test_client()
    answer = client.post(
        "/decks/teach/photo",
        data={
            "csrf_token": csrf(client),
            "month": "1",
            "photo": (BytesIO(photo(4000, 3000)), "a.jpg"),
        },
        headers={"HX-Request": "true"},
        content_type="multipart/form-data",
    )
    assert answer.status_code == 200
    kept = [p for p in (tmp_path / "teaching").rglob("01.*") if p.parent.name != "seen"]
    assert len(kept) == 1
    image = cv2.imread(str(kept[0]))
    assert max(image.shape[:2]) == TEACH_LONG_SIDE

"""Phone photos for teaching a deck: one month's four cards lying face up on a table, left to
right in slot order, seen from above with a little tilt, in the room's light, the cards a
little askew and apart (``companion deck add NAME --photos DIR`` reads twelve of them).
Rendered from a deck folder at run time, for tests and measurements; written nowhere unless a
caller does."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np

from companion.recognizer.decks import back_image
from companion.simulator import synth
from companion.simulator.rounds import check_output_dir, write_image


def render_month_photo(
    seed: int,
    deck: str,
    month: int,
    width: int = 1600,
    height: int = 1200,
    cards: int = 4,
    blur_sigma: float = 0.0,
    max_tilt_deg: float = 15.0,
    card_share: tuple[float, float] = (0.26, 0.34),
    shift: float = 0.0,
    back: bool = False,
) -> synth.Scene:
    """The photo of ``month``'s first ``cards`` cards of ``deck`` (a folder, or a name in
    ../shared/decks): each card's long side ``card_share`` of the photo's short side, 6-16 mm
    apart, turned up to 3 degrees, the camera tilted up to ``max_tilt_deg``; ``blur_sigma``
    (pixels) an out-of-focus photo; ``shift`` moves the row right by that share of the
    photo's width (0.3 cuts the last card by the edge); ``back``: the photo of the deck's own
    back instead (``cards`` cards face down, the deck folder's ``back.png``)."""
    rng = np.random.default_rng(seed)
    folder = synth.resolve_deck_dir(deck)
    _, files = synth.load_deck(folder)
    if back:
        back_path = back_image(folder)
        if back_path is None:
            raise synth.SynthError(f"The deck {deck} has no back.png to photograph.")
        files = {f"{month:02d}-{k + 1}": back_path for k in range(cards)}
    img = synth.tiled_table(rng, width, height)
    card_px = rng.uniform(*card_share) * min(width, height)
    tilt = rng.uniform(0, max_tilt_deg)
    hom, _ = synth._camera(rng, synth.SceneConfig(width=width, height=height), card_px, tilt)
    yaw = rng.normal(0, 0.05)
    c, s = math.cos(yaw), math.sin(yaw)
    step = synth.CARD_W_MM + rng.uniform(6, 16)
    labels = []
    for k in range(cards):
        code = f"{month:02d}-{k + 1}"
        x = (k - (cards - 1) / 2) * step + rng.uniform(-1, 1)
        y = rng.normal(0, 3)
        corners = synth._card_corners(c * x - s * y, s * x + c * y, yaw + rng.uniform(-0.05, 0.05))
        quad = synth._project(hom, corners) + np.float32([shift * width, 0])
        face = synth._face(files[code], synth._face_level(synth._card_height(quad)))
        box = synth._bbox(quad, width, height, 2)
        if box[2] <= box[0] or box[3] <= box[1]:
            continue
        synth._draw_shadow(img, quad, np.array([3.0, 4.0]), 4.0, 0.35)
        warped = synth._warp_into(face, quad, box)
        x0, y0, x1, y1 = box
        synth._composite(img[y0:y1, x0:x1], warped[..., :3].copy(), warped[..., 3].copy())
        labels.append(synth.CardLabel("back" if back else code, quad, 1.0, Path(deck).name))
    # the room's light from one side, a colour cast, focus, sensor noise, JPEG
    turn = rng.uniform(0, 2 * math.pi)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    slope = (xx / width - 0.5) * math.cos(turn) + (yy / height - 0.5) * math.sin(turn)
    light = (1 + rng.uniform(0.1, 0.3) * slope) * rng.uniform(0.75, 1.1)
    cast = rng.uniform(0.88, 1.12, 3).astype(np.float32)
    img = np.clip(img * light[..., None] * cast, 0, 255).astype(np.uint8)
    if blur_sigma > 0:
        img = cv2.GaussianBlur(img, (0, 0), blur_sigma)
    noise = rng.normal(0, rng.uniform(1, 4), img.shape).astype(np.float32)
    img = np.clip(img + noise, 0, 255).astype(np.uint8)
    _, data = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(75, 95))])
    return synth.Scene(cv2.imdecode(data, cv2.IMREAD_COLOR), labels, {"tilt_deg": round(tilt, 1)})


def write_month_photos(out_dir, deck: str, seed: int = 0, **options) -> Path:
    """Twelve photos ``01.jpg`` .. ``12.jpg`` of ``deck`` in ``out_dir``, and ``back.jpg`` (one
    card face down) when the deck folder has a back of its own; ``options`` go to
    ``render_month_photo``."""
    out = check_output_dir(out_dir)
    for month in range(1, 13):
        scene = render_month_photo(seed * 100 + month, deck, month, **options)
        write_image(str(out / f"{month:02d}.jpg"), scene.image, [cv2.IMWRITE_JPEG_QUALITY, 92])
    if back_image(synth.resolve_deck_dir(deck)) is not None:
        one_back = {**options, "cards": 1, "back": True}
        scene = render_month_photo(seed * 100 + 13, deck, 1, **one_back)
        write_image(str(out / "back.jpg"), scene.image, [cv2.IMWRITE_JPEG_QUALITY, 92])
    return out

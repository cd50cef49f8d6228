"""Close-up test frames: a few cards of one deck seen near, large in the frame, at any rotation
and oblique angle, on a table texture, with ground truth. ``synth.render_scene`` draws whole
tables; a phone held close or a webcam low over the table sees one or a few cards filling much
of the frame, which is what these frames show (for tests and ``companion eval``-style checks;
written nowhere unless a caller does)."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np

from companion.simulator import synth


def _visible_share(quad: np.ndarray, width: int, height: int) -> float:
    """The share of a quad's area inside a width x height frame."""
    frame = np.float32([[0, 0], [width, 0], [width, height], [0, height]])
    area = abs(cv2.contourArea(quad.astype(np.float32)))
    if area <= 0:
        return 0.0
    inside, _ = cv2.intersectConvexConvex(quad.astype(np.float32), frame)
    return float(inside / area)


def _tilted_quad(rng, centre, length: float, turn: float, tilt: float) -> np.ndarray:
    """A card's corners (TL, TR, BR, BL of the face) seen with its long side ``length`` px,
    turned by ``turn`` and its plane tilted ``tilt`` radians from facing the camera (a pinhole
    camera two card lengths away: near edges look larger)."""
    w, h = length / synth.CARD_H_MM * synth.CARD_W_MM, length
    pts = np.array([[-w / 2, -h / 2], [w / 2, -h / 2], [w / 2, h / 2], [-w / 2, h / 2]])
    axis = rng.uniform(0, math.pi)  # the tilt's hinge, in the card's plane
    c, s = math.cos(axis), math.sin(axis)
    along = pts @ np.array([[c, -s], [s, c]])  # hinge along x
    depth = along[:, 1] * math.sin(tilt)
    along[:, 1] *= math.cos(tilt)
    distance = 2.0 * length
    along *= (distance / (distance + depth))[:, None]
    back = along @ np.array([[c, s], [-s, c]])
    ct, st = math.cos(turn), math.sin(turn)
    return (back @ np.array([[ct, st], [-st, ct]]) + centre).astype(np.float32)


def render_closeup(
    seed: int,
    deck: str,
    width: int = 1280,
    height: int = 720,
    length: tuple[float, float] = (0.3, 0.8),
    cards: tuple[int, int] = (1, 3),
    max_tilt_deg: float = 60.0,
) -> synth.Scene:
    """A close-up frame of ``deck`` (folder or name in ../shared/decks): 1 to 3 cards (``cards``)
    whose long side is ``length`` times the frame's shorter side, turned any way and tilted up
    to ``max_tilt_deg``, on a table texture, with light, blur, noise and JPEG. The first card
    lies near the centre; the others beside it, maybe cut by the frame's edge."""
    rng = np.random.default_rng(seed)
    _, files = synth.load_deck(synth.resolve_deck_dir(deck))
    img = synth.tiled_table(rng, width, height)
    short = min(width, height)
    card_len = rng.uniform(*length) * short
    turn = rng.uniform(0, 2 * math.pi)
    codes = rng.choice(sorted(files), size=int(rng.integers(cards[0], cards[1] + 1)), replace=False)
    labels, quads = [], []
    idmap = np.full((height, width), -1, np.int16)  # which card shows at each pixel
    centre = np.array([width / 2, height / 2]) + rng.uniform(-0.1, 0.1, 2) * short
    direction = np.array([math.cos(turn), math.sin(turn)])
    for k, code in enumerate(codes):
        # the others beside the first, a card width and a gap apart, across its long axis
        step = (k + 1) // 2 * (1 if k % 2 else -1) * card_len * 0.8
        here = centre + step * np.array([direction[1], -direction[0]])
        tilt = math.radians(rng.uniform(0, max_tilt_deg))
        quad = _tilted_quad(rng, here, card_len, turn + rng.normal(0, 0.05), tilt)
        face = synth._face_master(files[str(code)])
        fh, fw = face.shape[:2]
        src = np.float32([[0, 0], [fw, 0], [fw, fh], [0, fh]])
        hom = cv2.getPerspectiveTransform(src, quad)
        warped = cv2.warpPerspective(face, hom, (width, height), flags=cv2.INTER_LINEAR)
        alpha = warped[..., 3:4].astype(np.float32) / 255
        img = np.clip(warped[..., :3] + img * (1 - alpha), 0, 255).astype(np.uint8)
        idmap[alpha[..., 0] > 0.5] = k
        quads.append(quad)
    for k, (code, quad) in enumerate(zip(codes, quads, strict=True)):
        area = max(abs(cv2.contourArea(quad)), 1.0)
        shown = min(1.0, float((idmap == k).sum()) / area)
        visible = min(shown, _visible_share(quad, width, height))
        labels.append(synth.CardLabel(str(code), quad, visible, Path(deck).name))
    # light from one side, a colour cast, focus blur, sensor noise, JPEG
    ramp = np.linspace(rng.uniform(0.6, 1.0), rng.uniform(0.9, 1.2), width, dtype=np.float32)
    cast = rng.uniform(0.85, 1.15, 3).astype(np.float32)
    img = np.clip(img * ramp[None, :, None] * cast, 0, 255).astype(np.uint8)
    sigma = rng.uniform(0, 1.5) * short / 720
    if sigma > 0.3:
        img = cv2.GaussianBlur(img, (0, 0), sigma)
    noise = rng.normal(0, rng.uniform(1, 5), img.shape).astype(np.float32)
    img = np.clip(img + noise, 0, 255).astype(np.uint8)
    ok, data = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(60, 95))])
    img = cv2.imdecode(data, cv2.IMREAD_COLOR)
    return synth.Scene(img, labels, {"closeup": True, "card_px": round(card_len, 1)})

"""Decks of designs no net was trained on, made at run time for measuring (never committed):
``procedural_deck`` draws 48 faces from scratch (flat red or gold grounds inside dark frames,
each month its own shapes and colours, each card of the month its own emblem), and
``recoloured_deck`` repaints a deck's scans (hues turned, tones inverted or posterized, a new
frame). Both write ``MM-K.png`` files that ``synth`` renders like any deck folder, and the
deck's own back (``back.png``: a lattice on a dark ground, not a plain black or red back), which
``synth`` lays face down in its scenes."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np

from companion.simulator import synth
from companion.simulator.rounds import check_output_dir, write_image

FACE_W, FACE_H = 610, 1000
GROUNDS = ((40, 40, 200), (40, 170, 220))  # flat red, flat gold (BGR)
FRAME = (25, 20, 30)  # a dark frame


def _polygon(rng, centre, radius, corners) -> np.ndarray:
    angles = np.sort(rng.uniform(0, 2 * math.pi, corners))
    radii = radius * rng.uniform(0.5, 1.0, corners)
    pts = np.stack([np.cos(angles) * radii, np.sin(angles) * radii], axis=1) + centre
    return np.round(pts).astype(np.int32)


def procedural_face(month: int, index: int, seed: int = 0) -> np.ndarray:
    """One face of the procedural deck: BGR, FACE_W x FACE_H."""
    month_rng = np.random.default_rng([seed, month])
    rng = np.random.default_rng([seed, month, index])
    ground = GROUNDS[(month + index) % 2]
    face = np.empty((FACE_H, FACE_W, 3), np.uint8)
    face[:] = FRAME
    margin = 34
    cv2.rectangle(face, (margin, margin), (FACE_W - margin, FACE_H - margin), ground, -1)
    cv2.rectangle(face, (margin + 14, margin + 14), (FACE_W - margin - 14, FACE_H - margin - 14),
                  FRAME, 5)  # fmt: skip
    # the month's plant: its own colour and shape, repeated down the card
    colour = tuple(int(c) for c in month_rng.integers(0, 255, 3))
    leaf = tuple(int(c) for c in month_rng.integers(0, 160, 3))
    corners = int(month_rng.integers(3, 8))
    for k in range(int(month_rng.integers(3, 7))):
        centre = np.array([rng.uniform(110, FACE_W - 110), rng.uniform(520, FACE_H - 110)])
        poly = _polygon(month_rng if k == 0 else rng, centre, rng.uniform(50, 95), corners)
        cv2.fillPoly(face, [poly], colour)
        cv2.polylines(face, [poly], True, FRAME, 6)
        stem_end = (int(centre[0] + rng.uniform(-60, 60)), FACE_H - margin - 20)
        cv2.line(face, tuple(int(v) for v in centre), stem_end, leaf, 10)
    # the month's mark in the top corners, as on real decks' plants: seen in a fanned row too
    mark = _polygon(month_rng, np.zeros(2), 60, corners)
    for x in (115, FACE_W - 115):
        placed = mark + np.array([x, 120], np.int32)
        cv2.fillPoly(face, [placed], colour)
        cv2.polylines(face, [placed], True, FRAME, 5)
    # the card of the month: a sun (bright), a beast (animal), a band (ribbon), dots (chaff)
    top = (FACE_W // 2, 300)
    if index == 1:
        cv2.circle(face, top, 150, (245, 245, 240), -1)
        cv2.circle(face, top, 150, FRAME, 8)
        for k in range(int(rng.integers(5, 12))):
            a = 2 * math.pi * k / 12 + rng.uniform(0, 0.3)
            end = (int(top[0] + 210 * math.cos(a)), int(top[1] + 210 * math.sin(a)))
            cv2.line(face, top, end, FRAME, 7)
    elif index == 2:
        body = (int(rng.uniform(120, 170)), int(rng.uniform(60, 100)))
        cv2.ellipse(face, top, body, rng.uniform(-30, 30), 0, 360, (30, 90, 140), -1)
        cv2.ellipse(face, top, body, 0, 0, 360, FRAME, 6)
        head = (int(top[0] + body[0] * 0.9), int(top[1] - body[1] * 0.8))
        cv2.circle(face, head, 55, (30, 90, 140), -1)
        cv2.circle(face, (head[0] + 15, head[1] - 10), 10, FRAME, -1)
    elif index == 3:
        band = np.array([[200, 80], [360, 80], [420, 460], [260, 460]], np.int32)
        band[:, 0] += int(rng.uniform(-80, 80))
        cv2.fillPoly(face, [band], (200, 60, 60) if month % 3 else (30, 30, 210))
        cv2.polylines(face, [band], True, FRAME, 6)
        for k in range(int(rng.integers(2, 6))):
            y = 140 + 70 * k
            cv2.line(face, (210 + k * 10, y), (380 + k * 10, y), (240, 240, 240), 8)
    else:
        for _ in range(int(rng.integers(6, 14))):
            c = (int(rng.uniform(80, FACE_W - 80)), int(rng.uniform(200, 460)))
            cv2.circle(face, c, int(rng.uniform(12, 40)), FRAME, -1)
    return face


BACK_GROUNDS = ((90, 50, 20), (40, 70, 20), (60, 20, 70))  # dark blue, green, plum (BGR)


def procedural_back(seed: int = 0) -> np.ndarray:
    """A deck's own back: BGR, FACE_W x FACE_H, a light lattice and a medallion on a dark
    ground inside a frame (the same for every card of the deck)."""
    rng = np.random.default_rng([seed, 99])
    ground = BACK_GROUNDS[seed % len(BACK_GROUNDS)]
    ink = tuple(int(c) for c in rng.integers(150, 240, 3))
    back = np.empty((FACE_H, FACE_W, 3), np.uint8)
    back[:] = FRAME
    margin = 30
    cv2.rectangle(back, (margin, margin), (FACE_W - margin, FACE_H - margin), ground, -1)
    step = int(rng.integers(70, 110))
    for k in range(-FACE_H // step, FACE_W // step + FACE_H // step + 1):
        x = k * step
        cv2.line(back, (x, margin), (x + FACE_H, FACE_H + margin), ink, 4)
        cv2.line(back, (x, margin), (x - FACE_H, FACE_H + margin), ink, 4)
    back[:margin], back[-margin:], back[:, :margin], back[:, -margin:] = FRAME, FRAME, FRAME, FRAME
    centre = (FACE_W // 2, FACE_H // 2)
    cv2.circle(back, centre, 150, ground, -1)
    cv2.circle(back, centre, 150, ink, 10)
    cv2.fillPoly(back, [_polygon(rng, np.array(centre), 110, 6)], ink)
    return back


def procedural_deck(out_dir, seed: int = 0) -> Path:
    """Write the 48 faces of the procedural deck ``seed`` into ``out_dir`` (MM-K.png), and its
    back (back.png)."""
    out = check_output_dir(out_dir)
    for month in range(1, 13):
        for index in range(1, 5):
            write_image(str(out / f"{month:02d}-{index}.png"), procedural_face(month, index, seed))
    write_image(str(out / "back.png"), procedural_back(seed))
    return out


def recoloured_deck(source: str, out_dir, seed: int = 0) -> Path:
    """Write ``source``'s faces (a deck folder or a name in ../shared/decks) repainted: hues
    turned by a third of the circle, tones inverted (odd seeds) or posterized to 4 levels
    (even seeds), inside a new dark frame; and a back of its own (back.png)."""
    _, files = synth.load_deck(synth.resolve_deck_dir(source))
    out = check_output_dir(out_dir)
    for code, path in files.items():
        image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if image is None or image.ndim != 3:
            raise synth.SynthError(f"Cannot read the card image {path} as a colour picture.")
        alpha = image[..., 3] if image.shape[2] == 4 else None
        bgr = image[..., :3]
        hsv = cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV)
        hsv[..., 0] = (hsv[..., 0].astype(np.int32) + 60) % 180
        bgr = cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)
        bgr = 255 - bgr if seed % 2 else (bgr // 64) * 64 + 32
        h, w = bgr.shape[:2]
        border = max(6, w // 25)
        cv2.rectangle(bgr, (0, 0), (w - 1, h - 1), FRAME, border)
        if alpha is not None:
            bgr = np.dstack([bgr, alpha])
        write_image(str(out / f"{code}.png"), bgr)
    write_image(str(out / "back.png"), procedural_back(seed + 1))
    return out

"""An embedding that tells apart the 48 cards of a deck of any design, learned by metric learning
on many made-up decks (``companion-lab train-design-embedder``), committed as
``companion/models/design_embedder.onnx`` for ``companion deck add`` to name a taught deck's
cards by.

The classifier's own hidden layer (``embedder.py``) knows the art of the three training decks:
on a design of its own it tells cards apart little better than a thumbnail does. This one starts
from the same weights and is trained on episodes that each hold one made-up deck: every card's
reference crops, cut as ``deck add`` cuts them (``companion.recognizer.decks.card_views``), and
crops of the same cards lying on a table as a camera sees them (small, tilted, under other light,
partly covered by the next card of a fanned row). The loss asks each table crop to lie nearer its
own card's references than any other card's of that deck, which is what ``DeckNamer`` asks.

The decks are drawn here ("motley" decks: grounds, frames, a motif per month and an emblem per
card, each of many styles) and repainted from the three training decks; never from
``companion.simulator.redesign``'s procedural deck nor from ``traditional-scan``, which are kept
for measuring."""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import cv2
import numpy as np

from companion.game.cards import ALL_CODES
from companion.recognizer.decks import model_settings
from companion.recognizer.geometry import crop_cards, crop_matrices, quads_to_rboxes
from companion.recognizer.settings import Settings

FACE_W, FACE_H = 244, 400  # faces are drawn at this size: the crops are 48 x 80
REPAINTED_FROM = ("traditional-ngs", "modern-mantia", "hwatu-korean")
FEATURES = 128
SHARED = Path(__file__).resolve().parents[2].parent / "shared"


def _colour(rng, low=0, high=256) -> tuple[int, int, int]:
    return tuple(int(c) for c in rng.integers(low, high, 3))


def _background_tiles() -> list[np.ndarray]:
    """The shared table textures, read at run time (never committed), as grounds for cards."""
    tiles = []
    for path in sorted((SHARED / "backgrounds").glob("*/*.png")):
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is not None:
            tiles.append(image)
    return tiles


def _ground(rng, tiles) -> np.ndarray:
    """A card's ground: flat, a gradient, paper with grain, or a tinted texture."""
    kind = rng.integers(0, 4)
    face = np.empty((FACE_H, FACE_W, 3), np.float32)
    first = np.float32(_colour(rng))
    if kind == 0:
        face[:] = first
    elif kind == 1:
        second = np.float32(_colour(rng))
        t = np.linspace(0, 1, FACE_H, dtype=np.float32)[:, None, None]
        face[:] = first * (1 - t) + second * t
    elif kind == 2 or not tiles:
        face[:] = np.float32(_colour(rng, 200, 256))
        face += rng.normal(0, 6, (FACE_H, FACE_W, 1)).astype(np.float32)
    else:
        tile = tiles[int(rng.integers(len(tiles)))]
        reps = (FACE_H // tile.shape[0] + 2, FACE_W // tile.shape[1] + 2, 1)
        big = np.tile(tile, reps)
        y, x = rng.integers(0, big.shape[0] - FACE_H), rng.integers(0, big.shape[1] - FACE_W)
        patch = big[y : y + FACE_H, x : x + FACE_W].astype(np.float32)
        face[:] = patch / 255 * first * rng.uniform(1.0, 1.6)
    return np.clip(face, 0, 255).astype(np.uint8)


def _shape(face, rng, kind, centre, size, colour, outline, thickness):
    cx, cy = int(centre[0]), int(centre[1])
    if kind == 0:  # a polygon
        n = int(rng.integers(3, 9))
        a = np.sort(rng.uniform(0, 2 * math.pi, n))
        r = size * rng.uniform(0.5, 1.0, n)
        pts = np.stack([cx + r * np.cos(a), cy + r * np.sin(a)], 1).round().astype(np.int32)
        cv2.fillPoly(face, [pts], colour)
        if outline is not None:
            cv2.polylines(face, [pts], True, outline, thickness)
    elif kind == 1:  # a disc or ring
        cv2.circle(face, (cx, cy), int(size), colour, -1)
        if outline is not None:
            cv2.circle(face, (cx, cy), int(size), outline, thickness)
    elif kind == 2:  # an ellipse
        axes = (int(size), int(size * rng.uniform(0.3, 0.8)))
        angle = float(rng.uniform(0, 180))
        cv2.ellipse(face, (cx, cy), axes, angle, 0, 360, colour, -1)
        if outline is not None:
            cv2.ellipse(face, (cx, cy), axes, angle, 0, 360, outline, thickness)
    elif kind == 3:  # strokes
        for _ in range(int(rng.integers(2, 6))):
            a = rng.uniform(0, math.pi)
            dx, dy = size * math.cos(a), size * math.sin(a)
            cv2.line(face, (int(cx - dx), int(cy - dy)), (int(cx + dx), int(cy + dy)), colour,
                     int(rng.integers(2, 9)))  # fmt: skip
    elif kind == 4:  # a glyph
        text = chr(int(rng.integers(65, 91))) if rng.random() < 0.6 else str(rng.integers(0, 10))
        font = int(rng.choice([0, 1, 2, 3, 4, 6, 7]))
        scale = size / 14
        (w, h), _ = cv2.getTextSize(text, font, scale, max(1, int(scale * 2)))
        cv2.putText(face, text, (cx - w // 2, cy + h // 2), font, scale, colour,
                    max(1, int(scale * 2)), cv2.LINE_AA)  # fmt: skip
    else:  # a star
        n = int(rng.integers(4, 9))
        a = np.arange(2 * n) * math.pi / n + rng.uniform(0, math.pi)
        r = np.where(np.arange(2 * n) % 2 == 0, size, size * rng.uniform(0.3, 0.6))
        pts = np.stack([cx + r * np.cos(a), cy + r * np.sin(a)], 1).round().astype(np.int32)
        cv2.fillPoly(face, [pts], colour)
        if outline is not None:
            cv2.polylines(face, [pts], True, outline, thickness)


def motley_deck(seed: int, tiles=()) -> list[np.ndarray]:
    """The 48 faces (BGR, FACE_W x FACE_H, in ``ALL_CODES`` order) of made-up deck ``seed``: one
    ground and frame style for the deck; each month a motif (shape kind, colours, layout) its
    four cards share, as a plant is shared on real decks; each card an emblem of its own, and
    the month's ranks told apart as real decks tell them (a large emblem, a band, few marks)."""
    deck_rng = np.random.default_rng([seed, 7001])
    frame_width = int(deck_rng.choice([0, 4, 8, 14, 22]))
    frame_colour = _colour(deck_rng, 0, 90) if deck_rng.random() < 0.7 else _colour(deck_rng)
    inner_line = deck_rng.random() < 0.5
    outline = _colour(deck_rng, 0, 70) if deck_rng.random() < 0.6 else None
    same_ground = deck_rng.random() < 0.5
    deck_ground = _ground(deck_rng, tiles)
    faces = []
    for code in ALL_CODES:
        month, index = int(code[:2]), int(code[3:])
        month_rng = np.random.default_rng([seed, 7002, month])
        rng = np.random.default_rng([seed, 7003, month, index])
        face = deck_ground.copy() if same_ground else _ground(month_rng, tiles)
        motif_kind = int(month_rng.integers(0, 6))
        motif_colour = _colour(month_rng)
        motif_second = _colour(month_rng)
        spots = int(month_rng.integers(2, 7))
        band = month_rng.uniform(0.35, 0.95, 2)
        for k in range(spots):
            centre = (rng.uniform(0.15, 0.85) * FACE_W, rng.uniform(*np.sort(band)) * FACE_H)
            colour = motif_colour if k % 2 == 0 else motif_second
            size = month_rng.uniform(18, 50) * rng.uniform(0.8, 1.2)
            _shape(face, rng, motif_kind, centre, size, colour, outline, 3)
        if month_rng.random() < 0.6:  # the month's mark in a corner, seen in a fanned row too
            for x in (0.22, 0.78) if month_rng.random() < 0.5 else (0.25,):
                _shape(face, np.random.default_rng([seed, month, 9]), motif_kind,
                       (x * FACE_W, 0.14 * FACE_H), 26, motif_colour, outline, 2)  # fmt: skip
        top = (FACE_W / 2 + rng.uniform(-40, 40), FACE_H * rng.uniform(0.25, 0.4))
        if index == 1:  # the bright: one large emblem
            _shape(face, rng, int(rng.integers(0, 6)), top, rng.uniform(55, 85),
                   _colour(rng), outline, 4)  # fmt: skip
        elif index == 2:  # an animal-like shape
            _shape(face, rng, 2, top, rng.uniform(45, 70), _colour(rng), outline, 3)
            _shape(face, rng, 1, (top[0] + 40, top[1] - 30), 18, _colour(rng), outline, 2)
        elif index == 3:  # a band
            x0 = int(rng.uniform(40, FACE_W - 110))
            pts = np.int32([[x0, 30], [x0 + 60, 30], [x0 + 80, 220], [x0 + 20, 220]])
            cv2.fillPoly(face, [pts], _colour(rng))
            if rng.random() < 0.5:
                cv2.putText(face, chr(int(rng.integers(65, 91))), (x0 + 22, 130),
                            cv2.FONT_HERSHEY_SIMPLEX, 1.2, _colour(rng), 3)  # fmt: skip
        else:  # few marks
            for _ in range(int(rng.integers(2, 8))):
                c = (rng.uniform(30, FACE_W - 30), rng.uniform(40, FACE_H * 0.5))
                _shape(face, rng, int(rng.integers(0, 6)), c, rng.uniform(6, 20),
                       _colour(rng), None, 1)  # fmt: skip
        if frame_width:
            cv2.rectangle(face, (0, 0), (FACE_W - 1, FACE_H - 1), frame_colour, frame_width)
            if inner_line:
                m = frame_width + 6
                cv2.rectangle(face, (m, m), (FACE_W - 1 - m, FACE_H - 1 - m), frame_colour, 2)
        faces.append(face)
    return faces


def _read_faces(deck: str) -> list[np.ndarray]:
    from companion.recognizer.decks import _face, deck_images

    files = deck_images(SHARED / "decks" / deck)
    return [cv2.resize(_face(files[c]), (FACE_W, FACE_H), interpolation=cv2.INTER_AREA)
            for c in ALL_CODES]  # fmt: skip


def repainted_deck(faces: list[np.ndarray], seed: int) -> list[np.ndarray]:
    """A training deck's faces repainted one way for the whole deck: hues turned, tones
    inverted, posterized, mapped through a colour map, channels swapped or saturation changed,
    often inside a new frame."""
    rng = np.random.default_rng([seed, 7004])
    ops = rng.choice(6, size=int(rng.integers(1, 3)), replace=False)
    turn = int(rng.integers(20, 160))
    levels = int(rng.integers(2, 6))
    cmap = int(rng.integers(0, 12))
    order = rng.permutation(3)
    sat = rng.uniform(0.2, 1.8)
    frame = int(rng.choice([0, 6, 12, 20]))
    frame_colour = _colour(rng)
    out = []
    for face in faces:
        bgr = face.copy()
        for op in ops:
            if op == 0:
                hsv = cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV)
                hsv[..., 0] = (hsv[..., 0].astype(np.int32) + turn) % 180
                bgr = cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)
            elif op == 1:
                bgr = 255 - bgr
            elif op == 2:
                step = 256 // levels
                bgr = ((bgr // step) * step + step // 2).astype(np.uint8)
            elif op == 3:
                bgr = cv2.applyColorMap(cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY), cmap)
            elif op == 4:
                bgr = np.ascontiguousarray(bgr[..., order])
            else:
                hsv = cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV).astype(np.float32)
                hsv[..., 1] = np.clip(hsv[..., 1] * sat, 0, 255)
                bgr = cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2BGR)
        if frame:
            cv2.rectangle(bgr, (0, 0), (FACE_W - 1, FACE_H - 1), frame_colour, frame)
        out.append(bgr)
    return out


def reference_views(face: np.ndarray, rng, settings: Settings, views: int) -> np.ndarray:
    """``card_views`` drawn small: the same crops (off centre, a little large or small, the
    lower part hidden as in a fanned row, under other light, blurred, both ways up) cut from a
    table only as large as the crop needs, in float32 (``card_views`` itself is too slow to
    feed training): (2 * views, crop h, crop w, 3)."""
    crops = []
    for k in range(views):
        height = 160 * rng.uniform(0.35, 1.0)
        width = height * face.shape[1] / face.shape[0]
        card = cv2.resize(face, (max(8, round(width)), max(8, round(height))),
                          interpolation=cv2.INTER_AREA).astype(np.float32)  # fmt: skip
        ch, cw = card.shape[:2]
        pad = int(0.35 * ch) + 4
        table = np.empty((ch + 2 * pad, cw + 2 * pad, 3), np.float32)
        table[:] = rng.integers(20, 235, 3)
        table += rng.normal(0, 8, table.shape[:2] + (1,)).astype(np.float32)
        table[pad : pad + ch, pad : pad + cw] = card
        if k % 3 == 2:
            cover = int(ch * rng.uniform(0.3, 0.6))
            table[pad + ch - cover :, max(0, pad - 4) : pad + cw + 4] = rng.integers(60, 250, 3)
        table = table * np.float32(rng.uniform(0.7, 1.25)) * rng.uniform(0.9, 1.1, 3).astype(
            np.float32
        ) + np.float32(rng.uniform(-25, 25))
        table = np.clip(table, 0, 255).astype(np.uint8)
        sigma = rng.uniform(0, 1.5) * height / 160
        if sigma > 0.3:
            table = cv2.GaussianBlur(table, (0, 0), sigma)
        cx = pad + cw / 2 + rng.normal(0, 0.04) * cw
        cy = pad + ch / 2 + rng.normal(0, 0.04) * ch
        grow = np.exp(rng.normal(0, 0.06))
        theta = np.pi / 2 + rng.normal(0, 0.05)
        boxes = np.array([[cx, cy, cw * grow, ch * grow, theta]] * 2)
        boxes[1, 4] = theta + np.pi
        crops.append(crop_cards(table, crop_matrices(boxes, settings), settings))
    return np.concatenate(crops)


def _card_quad(centre, turn: float, scale: float, squash: float) -> np.ndarray:
    """The corners (4, 2) of a face of ``FACE_W`` x ``FACE_H`` shown ``scale`` times as large,
    its long side shortened to ``squash``, turned by ``turn``, centred on ``centre``."""
    corners = np.array([[-FACE_W, -FACE_H], [FACE_W, -FACE_H], [FACE_W, FACE_H],
                        [-FACE_W, FACE_H]], np.float64) / 2 * scale  # fmt: skip
    corners[:, 1] *= squash
    rot = np.array([[math.cos(turn), -math.sin(turn)], [math.sin(turn), math.cos(turn)]])
    return corners @ rot.T + centre


def _lay(table: np.ndarray, face: np.ndarray, quad: np.ndarray) -> None:
    """Draw ``face`` onto ``table`` (in place) with its corners at ``quad``."""
    h, w = face.shape[:2]
    src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    m = cv2.getPerspectiveTransform(src, np.float32(quad))
    size = (table.shape[1], table.shape[0])
    warped = cv2.warpPerspective(face, m, size, flags=cv2.INTER_LINEAR)
    mask = cv2.warpPerspective(np.full((h, w), 255, np.uint8), m, size)
    cv2.copyTo(warped, mask, table)


def _degraded(table: np.ndarray, rng, long: float) -> np.ndarray:
    """What a webcam does to a small card across the table: out of focus, smeared by a hand's
    or the camera's motion, washed out by a lamp or a window, compressed."""
    if rng.random() < 0.4:
        table = cv2.GaussianBlur(table, (0, 0), rng.uniform(0.5, 2.5) * long / 100)
    if rng.random() < 0.2:
        length = max(3, int(rng.uniform(0.03, 0.12) * long))
        kernel = np.zeros((length, length), np.float32)
        kernel[length // 2] = 1.0 / length
        turn = cv2.getRotationMatrix2D((length / 2 - 0.5, length / 2 - 0.5), rng.uniform(0, 180), 1)
        kernel = cv2.warpAffine(kernel, turn, (length, length))
        table = cv2.filter2D(table, -1, kernel / max(kernel.sum(), 1e-6))
    if rng.random() < 0.15:  # washed out: the dark tones lifted toward white
        lift = rng.uniform(0.3, 0.7)
        table = (255 - (255 - table.astype(np.float32)) * (1 - lift)).astype(np.uint8)
    if rng.random() < 0.3:
        ok, data = cv2.imencode(
            ".jpg", table, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(30, 80))]
        )
        table = cv2.imdecode(data, cv2.IMREAD_COLOR) if ok else table
    return table


def _card_on_a_table(rng):
    """Where a card lies in a crop's scene: its long side (40-150 px) and scale from a face,
    a square of table room enough for a few (``_bare_table``), its turn, its centre near the
    table's middle, and how much a table seen at a slant shortens it."""
    long = math.exp(rng.uniform(math.log(36), math.log(150)))
    table, size = _bare_table(rng, long)
    angle = rng.uniform(0, 2 * math.pi)
    centre = np.array([size / 2, size / 2]) + rng.normal(0, 2, 2)
    squash = rng.uniform(0.75, 1.0)
    return long, long / FACE_H, table, angle, centre, squash


def table_views(faces, rng, settings: Settings, per_card: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Crops of the deck's cards lying on a table as a camera sees them: ``per_card`` of each
    card, (48 * per_card, crop h, crop w, 3) and their card indices. The card is small (a long
    side of 40-150 pixels), tilted in depth, turned any way, on a flat or textured table; half
    the time it lies in a fanned row, another card of the deck over part of it or under it; the
    box around it is the detector's, a little off."""
    crops, ids = [], []
    for card in range(len(faces)):
        for _ in range(per_card):
            long, scale, table, angle, centre, squash = _card_on_a_table(rng)

            def quad_at(c, angle=angle, scale=scale, squash=squash):
                return _card_quad(c, angle, scale, squash)

            def lay(face, quad, table=table):
                _lay(table, face, quad)

            quad = quad_at(centre)
            fanned = rng.random() < 0.55
            others = [k for k in range(len(faces)) if k != card]
            width_way = np.array([math.cos(angle), math.sin(angle)])
            long_way = np.array([-math.sin(angle), math.cos(angle)])
            if fanned and rng.random() < 0.8:
                # a capture row: cards side by side along their width, each laid over the one
                # before it, a strip of 38-72 % of a card's width showing of each covered one
                n = int(rng.integers(2, 7))
                place = int(rng.integers(n))
                step = rng.uniform(0.38, 0.72) * FACE_W * scale * rng.choice([-1.0, 1.0])
                for j in range(n):
                    face = (
                        faces[card] if j == place else faces[others[int(rng.integers(len(others)))]]
                    )
                    wobble = rng.normal(0, 0.01 * long, 2)
                    lay(face, quad if j == place else quad_at(
                        centre + (j - place) * step * width_way + wobble))  # fmt: skip
            elif fanned:  # another card over its lower or upper part (a second row)
                lay(faces[card], quad)
                over = others[int(rng.integers(len(others)))]
                offset = rng.uniform(0.35, 0.75) * FACE_H * scale * rng.choice([-1.0, 1.0])
                lay(faces[over], quad_at(centre + offset * long_way))
            else:
                lay(faces[card], quad)
            crops.append(_lit_and_cut(table, quad, rng, long, settings))
            ids.append(card)
    return np.stack(crops), np.array(ids)


def _bare_table(rng, long: float) -> tuple[np.ndarray, int]:
    """A square of table (flat colour and grain) room enough for a few cards of long side
    ``long``, and its side."""
    size = int(long * 2.6)
    grain = rng.normal(0, rng.uniform(2, 12), (size // 2 + 1, size // 2 + 1))
    grain = cv2.resize(grain.astype(np.float32), (size, size))[..., None]
    return np.clip(np.float32(_colour(rng, 20, 235)) + grain, 0, 255).astype(np.uint8), size


def _lit_and_cut(table: np.ndarray, quad: np.ndarray, rng, long: float, settings: Settings):
    """The table under other light (tint, a shadow), through a webcam (``_degraded``), cut as
    the detector cuts the box ``quad``, a little off."""
    size = table.shape[0]
    gain, bias = rng.uniform(0.6, 1.3), rng.uniform(-30, 30)
    tint = gain * rng.uniform(0.88, 1.12, 3)
    table = cv2.transform(table, np.column_stack([np.diag(tint), np.full(3, bias)]))
    if rng.random() < 0.3:  # a shadow across part of it
        mask = np.zeros((size, size), np.float32)
        pts = rng.uniform(0, size, (4, 2)).astype(np.int32)
        cv2.fillPoly(mask, [pts], 1.0)
        mask = cv2.GaussianBlur(mask, (0, 0), size / 20)[..., None]
        table = (table * (1 - rng.uniform(0.3, 0.6) * mask)).astype(np.uint8)
    table = _degraded(table, rng, long)
    rbox = quads_to_rboxes(quad[None])[0]
    rbox[:2] += rng.normal(0, 0.04, 2) * rbox[2:4]
    rbox[2:4] *= np.exp(rng.normal(0, 0.06))
    rbox[4] += rng.normal(0, 0.04)
    if rng.random() < 0.5:
        rbox[4] += math.pi  # the detector's quad may start at either end
    return crop_cards(table, crop_matrices(rbox[None], settings), settings)[0]


NOT_ONE_CARD = ("table", "two cards", "half off", "loose")


def not_one_card_views(faces, rng, settings: Settings, n: int) -> np.ndarray:
    """Crops the detector may cut where no single whole card lies: the bare table (with a
    sheet of paper or a box's side on it now and then), two cards of the table at once (the box
    on the gap between two cards laid end to end), a box half off its card, and a box far
    larger than its card. (n, crop h, crop w, 3): the embedder learns to keep them away from
    every card's references, so that a deck's references can say "this is one of my cards"."""
    crops = []
    for k in range(n):
        long, scale, table, angle, centre, squash = _card_on_a_table(rng)
        long_way = np.array([-math.sin(angle), math.cos(angle)])
        width_way = np.array([math.cos(angle), math.sin(angle)])
        box = _card_quad(centre, angle, scale, squash)
        kind = NOT_ONE_CARD[k % len(NOT_ONE_CARD)]

        def card():
            return faces[int(rng.integers(len(faces)))]

        if kind == "table":
            if rng.random() < 0.5:  # paper, a phone, a box: flat and not of a card's shape
                w, h = rng.uniform(0.5, 2.5) * FACE_W * scale, rng.uniform(0.3, 1.2) * long
                corners = np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) / 2
                turn = rng.uniform(0, math.pi)
                rot = np.array([[math.cos(turn), -math.sin(turn)], [math.sin(turn), math.cos(turn)]])
                shift = rng.normal(0, 0.2 * long, 2)
                cv2.fillPoly(table, [np.int32(corners @ rot.T + centre + shift)], _colour(rng))
        elif kind == "two cards":  # laid end to end (a field) or side by side, box on the gap
            gap = rng.uniform(0.02, 0.15)
            if rng.random() < 0.5:
                step = (FACE_H * squash * (1 + gap)) * scale * long_way
            else:
                step = (FACE_W * (1 + gap)) * scale * width_way
            for sign in (-0.5, 0.5):
                _lay(table, card(), _card_quad(centre + sign * step, angle, scale, squash))
        elif kind == "half off":  # half the box on the card, half on the table or a neighbour
            shift = rng.uniform(0.45, 0.7) * rng.choice([-1.0, 1.0])
            way = long_way * FACE_H * squash if rng.random() < 0.6 else width_way * FACE_W
            _lay(table, card(), _card_quad(centre + shift * way * scale, angle, scale, squash))
            if rng.random() < 0.4:
                _lay(table, card(), _card_quad(centre - shift * way * scale, angle, scale, squash))
        else:  # loose: the card a half or less of the box
            grow = rng.uniform(1.6, 2.2)
            _lay(table, card(), _card_quad(centre + rng.normal(0, 0.1 * long, 2), angle, scale,
                                           squash))  # fmt: skip
            box = _card_quad(centre, angle, scale * grow, squash)
        crops.append(_lit_and_cut(table, box, rng, long, settings))
    return np.stack(crops)


@dataclass
class EmbedderConfig:
    minutes: float = 60.0  # stop after this long (the checkpoint is written as it goes)
    seed: int = 0
    threads: int = 1
    decks_in_pool: int = 24  # decks drawn at the start; each episode takes one
    new_decks_every: int = 4  # ... and one more is drawn every this many episodes
    references_per_card: int = 3  # reference views a card (each two crops: both ways up)
    table_per_card: int = 2
    scale: float = 16.0  # the cosine similarities' temperature in the loss
    lr: float = 1e-3
    weight_decay: float = 1e-4
    repainted_share: float = 0.35
    # crops of no single card an episode (``not_one_card_views``), as a share of its table
    # crops; 0 trains without the "no card" class. Off: on the tuning tables it told cards
    # from such crops a little better and named fanned cards worse (the journal)
    negatives_share: float = 0.0
    bar: float = 0.6  # the "no card" class's similarity, where training starts it


def build_embedder_net(classifier_state: dict | None = None):
    """The classifier's trunk (its convolutions and hidden layer, from ``classifier_state``
    where given) and a projection to ``FEATURES`` unit-length features."""
    import torch
    from torch import nn

    from companion_lab.training import build_nets

    _, classifier = build_nets()
    if classifier_state is not None:
        classifier.load_state_dict(classifier_state)

    class DesignEmbedder(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = classifier.features
            self.fc = nn.Sequential(*list(classifier.fc.children())[:-1])  # no dropout
            self.head = nn.Linear(self.fc[1].out_features, FEATURES)

        def forward(self, x):
            f = self.head(self.fc(self.features(x)))
            return nn.functional.normalize(f, dim=1)

    torch.manual_seed(0)
    return DesignEmbedder()


class _UintInput:
    """Wraps the net for export: uint8 BGR NHWC crops in, as the product's sessions feed."""

    def __new__(cls, net):
        from torch import nn

        class Wrapped(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = net

            def forward(self, crop):
                x = crop.flip(-1).permute(0, 3, 1, 2).float() / 255.0
                return self.net(x)

        return Wrapped()


def export_design_embedder(net, out: str | Path, settings: Settings) -> Path:
    import torch

    wrapped = _UintInput(net).eval()
    sample = torch.zeros((2, settings.inputs.crop_height, settings.inputs.crop_width, 3),
                         dtype=torch.uint8)  # fmt: skip
    out = Path(out)
    torch.onnx.export(
        wrapped, (sample,), str(out), input_names=["crop"], output_names=["embedding"],
        dynamic_axes={"crop": {0: "n"}, "embedding": {0: "n"}}, opset_version=17,
        dynamo=False,
    )  # fmt: skip
    return out


def _episode_loss(net, refs, ref_ids, queries, query_ids, scale, negatives=None, bar=None):
    """Each query's similarity to each card: the soft maximum over that card's references;
    cross-entropy of the query's own card among the deck's 48. With ``negatives`` (crops of no
    single card) and ``bar`` (a learned similarity), "no card" is one more class whose score is
    the bar: a card's crop must lie nearer its card than the bar, a negative farther from every
    card. Returns the loss, the share of queries named right and of negatives refused (None
    without them)."""
    import torch

    r = net(refs)
    q = net(queries if negatives is None else torch.cat([queries, negatives]))
    sims = q @ r.T  # (Q, R)
    n_cards = int(ref_ids.max()) + 1
    per_card = sims.view(len(q), n_cards, -1)  # references grouped by card, in order
    logits = scale * torch.logsumexp(per_card * 8.0, dim=2) / 8.0
    if negatives is None:
        loss = torch.nn.functional.cross_entropy(logits, query_ids)
        return loss, (logits.argmax(1) == query_ids).float().mean(), None
    logits = torch.cat([logits, (scale * bar).expand(len(q), 1)], dim=1)
    targets = torch.cat([query_ids, torch.full((len(negatives),), n_cards, dtype=query_ids.dtype)])
    loss = torch.nn.functional.cross_entropy(logits, targets)
    guess = logits.argmax(1)
    right = (guess[: len(queries)] == query_ids).float().mean()
    refused = (guess[len(queries) :] == n_cards).float().mean()
    return loss, right, refused


def train_design_embedder(out_dir: str | Path, config: EmbedderConfig | None = None,
                          checkpoint: str | Path | None = None, log=print) -> dict:  # fmt: skip
    """Train for ``config.minutes``; write ``design_embedder.pt`` (weights) and
    ``design_embedder.onnx`` into ``out_dir`` every few minutes and at the end, and return the
    training record (episodes, crops seen, the loss and share of table crops named right over the
    last episodes)."""
    import torch

    from companion_lab.training import _as_input, augment

    config = config or EmbedderConfig()
    torch.set_num_threads(config.threads)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    settings = Settings.from_dict(model_settings())
    rng = np.random.default_rng(config.seed)
    tiles = _background_tiles()
    sources = {name: _read_faces(name) for name in REPAINTED_FROM}

    def new_deck(k):
        """A deck's faces and its reference crops (cut once: they cost more than a step)."""
        if rng.random() < config.repainted_share:
            name = REPAINTED_FROM[int(rng.integers(len(REPAINTED_FROM)))]
            faces = repainted_deck(sources[name], seed=config.seed * 100003 + k)
        else:
            faces = motley_deck(config.seed * 100003 + k, tiles)
        views = config.references_per_card
        return faces, np.concatenate([reference_views(f, rng, settings, views) for f in faces])

    pool = [new_deck(k) for k in range(config.decks_in_pool)]
    drawn = len(pool)
    bar = torch.nn.Parameter(torch.tensor(float(config.bar)))
    if checkpoint and Path(checkpoint).exists():
        net = build_embedder_net()
        state = torch.load(checkpoint, map_location="cpu")
        if BAR_KEY in state:  # the bar is kept beside the net's weights
            bar.data.fill_(float(state.pop(BAR_KEY)))
        net.load_state_dict(state)
    else:
        start = Path(__file__).resolve().parents[2] / "companion/models/checkpoints/classifier.pt"
        state = torch.load(start, map_location="cpu")
        net = build_embedder_net(state.get("model", state) if isinstance(state, dict) else state)
    optimiser = torch.optim.AdamW(net.parameters(), lr=config.lr,
                                  weight_decay=config.weight_decay)  # fmt: skip
    optimiser.add_param_group({"params": [bar], "weight_decay": 0.0})
    began = time.monotonic()
    deadline = began + config.minutes * 60
    history, episode, seen, last_save = [], 0, 0, began
    net.train()
    while time.monotonic() < deadline:
        faces, refs = pool[int(rng.integers(len(pool)))]
        ref_ids = np.repeat(np.arange(len(faces)), 2 * config.references_per_card)
        queries, query_ids = table_views(faces, rng, settings, config.table_per_card)
        r = _as_input(refs)
        q = augment(_as_input(queries), rng)
        n_negatives = round(config.negatives_share * len(queries))
        negatives = None
        if n_negatives:
            negatives = augment(_as_input(not_one_card_views(faces, rng, settings, n_negatives)),
                                rng)  # fmt: skip
        frac = (time.monotonic() - began) / (deadline - began)
        for group in optimiser.param_groups:  # cosine decay to a tenth
            group["lr"] = config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        loss, right, refused = _episode_loss(net, r, torch.from_numpy(ref_ids), q,
                                             torch.from_numpy(query_ids), config.scale,
                                             negatives, bar if n_negatives else None)  # fmt: skip
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        history.append((float(loss.detach()), float(right),
                        float("nan") if refused is None else float(refused)))  # fmt: skip
        episode += 1
        seen += len(refs) + len(queries)
        if episode % config.new_decks_every == 0:
            pool[int(rng.integers(len(pool)))] = new_deck(drawn)
            drawn += 1
        if episode % 10 == 0:
            recent = np.array(history[-10:])
            log(f"episode {episode} ({(time.monotonic() - began) / 60:.1f} min): loss "
                f"{recent[:, 0].mean():.3f}, table crops named right {recent[:, 1].mean():.3f}, "
                f"crops of no card refused {recent[:, 2].mean():.3f}, bar {float(bar.detach()):.3f}")  # fmt: skip
        if time.monotonic() - last_save > 300:
            _save(net, out_dir, settings, float(bar.detach()))
            last_save = time.monotonic()
    _save(net, out_dir, settings, float(bar.detach()))
    recent = np.array(history[-50:]) if history else np.zeros((1, 3))
    record = {
        "config": asdict(config),
        "episodes": episode,
        "crops": seen,
        "decks_drawn": drawn,
        "minutes": round((time.monotonic() - began) / 60, 1),
        "last_loss": round(float(recent[:, 0].mean()), 4),
        "last_named_right": round(float(recent[:, 1].mean()), 4),
        "last_no_card_refused": None if np.isnan(recent[:, 2]).all()
        else round(float(np.nanmean(recent[:, 2])), 4),
        "bar": round(float(bar.detach()), 4),
    }
    (out_dir / "design_embedder.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


BAR_KEY = "no_card_bar"  # the learned "no card" similarity, saved among the weights


def _save(net, out_dir: Path, settings: Settings, bar: float) -> None:
    import torch

    net.eval()
    state = dict(net.state_dict())
    state[BAR_KEY] = torch.tensor(bar)
    torch.save(state, out_dir / "design_embedder.pt.part")
    Path(out_dir / "design_embedder.pt.part").replace(out_dir / "design_embedder.pt")
    export_design_embedder(net, out_dir / "design_embedder.onnx.part", settings)
    Path(out_dir / "design_embedder.onnx.part").replace(out_dir / "design_embedder.onnx")
    net.train()

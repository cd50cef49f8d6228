"""Geometry shared by the decoder and training: letterboxing, rotated boxes and quads, the
affine crops the classifier sees, and where more cards of a row or the field would lie."""

from __future__ import annotations

import cv2
import numpy as np

from companion.detections import distances2
from companion.recognizer.settings import Settings

INPUT_MULTIPLE = 32  # the localizer's input sides are multiples of its deepest stride


def view_size(shape: tuple, settings: Settings, zoom: float = 1.0) -> tuple[int, int, float]:
    """The localizer input (width, height) and scale (input pixels per frame pixel) for a frame
    of this shape seen at ``zoom`` times the scale that fits it into the model's input: a
    portrait frame gets the input turned on its side (as many pixels, the frame seen larger);
    at another zoom the input is sized to the frame, rounded up to ``INPUT_MULTIPLE`` (zoom 0.5
    costs about a quarter of the localizer's time, zoom 2 four times)."""
    h, w = shape[:2]
    width, height = settings.inputs.input_width, settings.inputs.input_height
    if h > w:
        width, height = height, width
    scale = min(width / w, height / h) * zoom
    if zoom != 1.0:
        m = INPUT_MULTIPLE
        width = max(m, -(-round(w * scale) // m) * m)
        height = max(m, -(-round(h * scale) // m) * m)
    return width, height, scale


def letterbox(
    bgr: np.ndarray, settings: Settings, view: tuple[int, int, float] | None = None
) -> tuple[np.ndarray, float]:
    """Resize keeping the aspect ratio into the localizer input (top-left aligned, padded).
    ``view``: (input width, input height, scale) to use instead (``view_size``).

    Returns the image and the scale (input pixels per original pixel).
    """
    h, w = bgr.shape[:2]
    if view is None:
        width, height = settings.inputs.input_width, settings.inputs.input_height
        scale = min(width / w, height / h)
    else:
        width, height, scale = view
    nw, nh = max(1, min(width, round(w * scale))), max(1, min(height, round(h * scale)))
    out = np.empty((height, width, 3), np.uint8)
    out[nh:] = settings.inputs.pad_value
    out[:nh, nw:] = settings.inputs.pad_value
    if scale < 0.5:
        # INTER_AREA is slow at odd ratios (13 ms for 1280x720 -> 384x216) but fast at exactly
        # 1/2: go bilinear to twice the target, then average 2x2 blocks (~1 ms, no aliasing)
        source, interpolation = (
            cv2.resize(bgr, (2 * nw, 2 * nh), interpolation=cv2.INTER_LINEAR),
            cv2.INTER_AREA,
        )
    else:
        source, interpolation = bgr, cv2.INTER_LINEAR
    if nw == width:  # full rows: a contiguous block OpenCV can write in place
        cv2.resize(source, (nw, nh), dst=out[:nh], interpolation=interpolation)
    else:
        out[:nh, :nw] = cv2.resize(source, (nw, nh), interpolation=interpolation)
    return out, scale


def quad_to_rbox(quad: np.ndarray) -> tuple[float, float, float, float, float]:
    """A card quad (TL,TR,BR,BL) -> rotated box (cx, cy, width, height, theta).

    ``theta`` is the direction of the long axis (top edge -> bottom edge), in radians; the
    localizer only learns it modulo 180 degrees.
    """
    return tuple(float(v) for v in quads_to_rboxes(quad)[0])


def rbox_quad(cx, cy, w, h, theta) -> np.ndarray:
    """The four corners (TL,TR,BR,BL) of a rotated box; ``theta`` is its long axis, as in
    ``quad_to_rbox``."""
    down = np.array([np.cos(theta), np.sin(theta)]) * h / 2
    right = np.array([np.sin(theta), -np.cos(theta)]) * w / 2  # as crop_matrix
    c = np.array([cx, cy])
    return np.array([c - right - down, c + right - down, c + right + down, c - right + down])


def crop_matrix(cx, cy, width, height, theta, settings: Settings) -> np.ndarray:
    """2x3 affine matrix mapping image pixels into the crop (long axis pointing down)."""
    return crop_matrices(np.array([[cx, cy, width, height, theta]]), settings)[0]


def quads_to_rboxes(quads: np.ndarray) -> np.ndarray:
    """``quad_to_rbox`` for many quads (N,4,2) at once: rows (cx, cy, width, height, theta)."""
    q = np.asarray(quads, np.float64).reshape(-1, 4, 2)
    centre = q.mean(axis=1)
    edges = q[:, [1, 2, 3, 0]] - q  # top, right, bottom, left
    lengths = np.hypot(edges[..., 0], edges[..., 1])
    down = (q[:, 3] + q[:, 2] - q[:, 0] - q[:, 1]) / 2
    theta = np.arctan2(down[:, 1], down[:, 0])
    width = (lengths[:, 0] + lengths[:, 2]) / 2
    height = (lengths[:, 1] + lengths[:, 3]) / 2
    return np.column_stack([centre, width, height, theta])


def crop_matrices(rboxes: np.ndarray, settings: Settings) -> np.ndarray:
    """``crop_matrix`` for many rotated boxes (rows cx, cy, width, height, theta): (N,2,3)."""
    cx, cy, width, height, theta = np.asarray(rboxes, np.float64)[:, :5].T
    ux, uy = np.cos(theta), np.sin(theta)
    xx, xy = uy, -ux
    ew = np.maximum(width, 1e-3) * settings.inputs.crop_enlarge / 2
    eh = np.maximum(height, 1e-3) * settings.inputs.crop_enlarge / 2
    sx, sy = settings.inputs.crop_width / (2 * ew), settings.inputs.crop_height / (2 * eh)
    return np.stack(
        [
            np.stack([xx * sx, xy * sx, sx * (ew - (cx * xx + cy * xy))], axis=1),
            np.stack([ux * sy, uy * sy, sy * (eh - (cx * ux + cy * uy))], axis=1),
        ],
        axis=1,
    )


def crop_points_to_image(matrices: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Map points (N,K,2) given in each crop's pixels back to image pixels through the
    inverse of each crop's 2x3 ``matrices`` (N,2,3), all at once."""
    # the 2x2 inverse written out: np.linalg.inv costs more than the arithmetic on few crops
    a, b, tx = (matrices[:, 0, k, None] for k in range(3))
    c, d, ty = (matrices[:, 1, k, None] for k in range(3))
    px, py = points[..., 0] - tx, points[..., 1] - ty
    det = a * d - b * c
    return np.stack([(d * px - b * py) / det, (a * py - c * px) / det], axis=-1).astype(np.float32)


def crop_card(
    bgr: np.ndarray, matrix: np.ndarray, settings: Settings, out: np.ndarray | None = None
) -> np.ndarray:
    """The crop ``matrix`` cuts from the frame; ``out``: a C-contiguous uint8 array of the
    crop's shape to cut it into."""
    cut = cv2.warpAffine(
        bgr,
        matrix,
        (settings.inputs.crop_width, settings.inputs.crop_height),
        dst=out,
        flags=cv2.INTER_AREA,
        borderMode=cv2.BORDER_REPLICATE,
    )
    if out is not None and cut is not out:  # OpenCV could not write into it: copy, or raise
        out[...] = cut
    return cut


def crop_cards(bgr: np.ndarray, matrices: np.ndarray, settings: Settings) -> np.ndarray:
    """The crops (N,H,W,3) that ``matrices`` (N,2,3) cut from the frame, cut straight into one
    batch: stacking a list of crops would copy every crop again."""
    crops = np.empty(
        (len(matrices), settings.inputs.crop_height, settings.inputs.crop_width, 3), np.uint8
    )
    for crop, matrix in zip(crops, matrices, strict=True):
        crop_card(bgr, matrix, settings, out=crop)
    return crops


def crop_targets(
    quad: np.ndarray, matrix: np.ndarray, settings: Settings
) -> tuple[int, np.ndarray]:
    """Training targets of a crop: (upside_down 0/1, corners (8,) in crop units 0..1).

    Corners come in the crop's own order (crop top-left first), which does not depend on
    which way the card faces; inference rolls them by two when the card is upside down.
    """
    q = cv2.transform(np.asarray(quad, np.float32).reshape(1, 4, 2), matrix).reshape(4, 2)
    down = (q[2] + q[3]) / 2 - (q[0] + q[1]) / 2
    upside_down = int(down[1] < 0)
    if upside_down:
        q = np.roll(q, 2, axis=0)
    q = q / np.float32([settings.inputs.crop_width, settings.inputs.crop_height])
    return upside_down, q.reshape(8).astype(np.float32)


def neighbour_boxes(cards: np.ndarray, across=(), along=()) -> np.ndarray:
    """Rotated boxes the size and angle of each card (rows cx, cy, w, h, theta), moved both
    ways by each of ``across`` card widths and ``along`` card heights."""
    cards = np.asarray(cards, np.float64).reshape(-1, 5)
    steps = np.array([*across, *(-k for k in across), *along, *(-k for k in along)])
    if len(cards) == 0 or len(steps) == 0:
        return np.zeros((0, 5))
    cx, cy, width, height, theta = cards.T
    down = np.stack([np.cos(theta), np.sin(theta)], axis=1)  # the long axis
    side = np.stack([down[:, 1], -down[:, 0]], axis=1)
    n_across = 2 * len(across)
    # (steps, cards, 2): each step along its own axis, in that card's own width or height
    moves = np.concatenate(
        [
            side[None] * (steps[:n_across, None] * width)[..., None],
            down[None] * (steps[n_across:, None] * height)[..., None],
        ]
    )
    out = np.repeat(cards[None], len(steps), axis=0)
    out[..., :2] += moves
    return out.reshape(-1, 5)


ROW_TURN = 0.15  # radians: cards of one row lie this parallel (modulo a half turn) or closer
ROW_SIZE_RATIO = 1.25  # ... and their widths differ by at most this factor
ROW_ALONG = 0.2  # ... and one lies at most this many card heights up or down the other's long axis
ROW_STEP = (0.3, 0.8)  # card widths across: a pair this far apart is a step of a fanned row
ROW_GAP = (0.7, 1.5)  # ... and a pair this far apart may have missed the card between them


def row_boxes(cards: np.ndarray) -> np.ndarray:
    """Where more cards of a fanned row would lie (rows cx, cy, w, h, theta), given the cards
    found (same rows). Each card's nearest row neighbour on either side (``ROW_*``) makes a
    pair: a pair one row step apart (``ROW_STEP``) says the row goes on one step past the
    neighbour, and a pair about two steps apart (``ROW_GAP``) that a card lies halfway between.
    Each box has the first card's angle and the pair's mean size."""
    cards = np.asarray(cards, np.float64).reshape(-1, 5)
    n = len(cards)
    if n < 2:
        return np.zeros((0, 5))
    # a degenerate quad (corners on one point) has no size: it pairs with nothing
    width, height = np.maximum(cards[:, 2], 1e-6), np.maximum(cards[:, 3], 1e-6)
    theta = cards[:, 4]
    down = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    side = np.stack([down[:, 1], -down[:, 0]], axis=1)
    delta = cards[None, :, :2] - cards[:, None, :2]  # delta[i, j]: from card i to card j
    across = np.einsum("ijk,ik->ij", delta, side) / width[:, None]
    along = np.einsum("ijk,ik->ij", delta, down) / height[:, None]
    turn = np.abs((theta[:, None] - theta[None] + np.pi / 2) % np.pi - np.pi / 2)
    ratio = width[:, None] / width[None]
    in_row = (
        (turn < ROW_TURN)
        & (ratio < ROW_SIZE_RATIO)
        & (ratio > 1 / ROW_SIZE_RATIO)
        & (np.abs(along) < ROW_ALONG)
        & (np.abs(across) > min(ROW_STEP[0], ROW_GAP[0]))
        & (np.abs(across) < max(ROW_STEP[1], ROW_GAP[1]))
    )
    out = []
    for sign in (1, -1):
        reach = np.where(in_row & (sign * across > 0), np.abs(across), np.inf)
        nearest = reach.argmin(axis=1)
        apart = reach[np.arange(n), nearest]
        paired = np.flatnonzero(np.isfinite(apart))
        a, b, apart = cards[paired], cards[nearest[paired]], apart[paired]
        mean = np.concatenate([(a[:, :4] + b[:, :4]) / 2, a[:, 4:5]], axis=1)
        beyond = np.concatenate([2 * b[:, :2] - a[:, :2], mean[:, 2:]], axis=1)
        # per card: the box one step past its neighbour, then the one between them
        boxes = np.stack([beyond, mean], axis=1)
        wanted = np.stack(
            [
                (ROW_STEP[0] < apart) & (apart < ROW_STEP[1]),
                (ROW_GAP[0] < apart) & (apart < ROW_GAP[1]),
            ],
            axis=1,
        )
        out.append(boxes[wanted])
    return np.concatenate(out).reshape(-1, 5)


def in_frame(boxes: np.ndarray, shape: tuple) -> np.ndarray:
    """Mask of the boxes (rows cx, cy, ...) whose centre lies inside a frame of this shape."""
    h, w = shape[:2]
    return (boxes[:, 0] >= 0) & (boxes[:, 0] < w) & (boxes[:, 1] >= 0) & (boxes[:, 1] < h)


def far_from(boxes: np.ndarray, cards: np.ndarray, spacing: float) -> np.ndarray:
    """Mask of the boxes whose centre lies farther than ``spacing`` of each card's short side
    from every card's centre (rows cx, cy, w, h, ...)."""
    if len(cards) == 0 or len(boxes) == 0:
        return np.ones(len(boxes), bool)
    short = np.minimum(cards[:, 2], cards[:, 3])
    d2 = (boxes[:, None, 0] - cards[None, :, 0]) ** 2 + (boxes[:, None, 1] - cards[None, :, 1]) ** 2
    return (d2 > (spacing * short[None]) ** 2).all(axis=1)


def spaced(boxes: np.ndarray, spacing: float) -> np.ndarray:
    """Indices of the rotated boxes (rows cx, cy, w, h, ..., best first) kept by a greedy pass
    that drops a box whose centre lies within ``spacing`` of the smaller short side from a
    kept one."""
    short = np.minimum(boxes[:, 2], boxes[:, 3])
    dist2 = distances2(boxes[:, 0], boxes[:, 1])
    near = dist2 < (spacing * np.minimum(short[:, None], short[None])) ** 2
    np.fill_diagonal(near, False)
    hotter = np.tril(near, -1)  # hotter[i, j]: j is a hotter neighbour of i
    keep = np.zeros(len(boxes), bool)
    open_ = np.ones(len(boxes), bool)
    # the greedy pass, a few rounds at a time: a box with no open hotter neighbour is kept
    # (none of its hotter neighbours can be kept any more), and its neighbours are closed
    while open_.any():
        chosen = open_ & ~(hotter & open_).any(axis=1)
        keep |= chosen
        open_ &= ~chosen & ~near[:, chosen].any(axis=1)
    return np.flatnonzero(keep)

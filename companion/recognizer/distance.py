"""Any distance: more looks at a frame at other scales, where the first look says the cards lie
outside the sizes the localizer was trained on, and how the looks' cards are merged.

The localizer learned cards about 24 to 160 px long in its input. A phone held close or a
webcam low over the table shows cards larger than that, and a whole table seen from far (or a
compact camera's large frame) smaller. The first look (``zoom`` 1: the frame fitted into the
model's input, a portrait frame into a portrait input) says which: few cards, or a card near
the top of the range, and coarser looks follow (the frame shrunk into a smaller input, which
costs a fraction of the first look); small cards, or none, and a finer one (the frame seen
twice as large, an input four times the first look's). A card found in several looks keeps
the look that saw it nearest the size the localizer sees best; a smaller card whose centre
lies on a larger one is a part of it (a close-up's corner, a plain patch read as a back).
"""

from __future__ import annotations

import numpy as np

from companion.detections import BACK_ID, Detections, iou_matrix, polygon_areas, unique_cards

COARSE_ZOOMS = (0.5, 0.25, 0.125)  # the coarser looks, when the first one calls for them
FINE_ZOOM = 2.0  # the finer look
MAX_FINE_SCALE = 1.5  # ... unless the frame would be seen larger than this (input per frame px)
FEW_CARDS = 4  # a first look finding fewer cards may be a close-up: look coarser
BIG_IN_INPUT = 130.0  # px, a card's long side in the input: near the trained range's top
SMALL_IN_INPUT = 30.0  # px: the median card this small, look finer
BEST_IN_INPUT = 70.0  # px: the size the localizer sees best, to choose between looks
KEEP_ABOVE = 130.0  # px in the first look's input: what a coarser look may add
KEEP_BELOW = 36.0  # ... and a finer one
SAME_CARD_IOU = 0.5  # two looks' detections overlapping this much are one card
PART_AREA = 0.45  # a detection this much smaller than one its centre lies on is a part of it


def long_sides(quads: np.ndarray) -> np.ndarray:
    """Each quad's long side (the mean of its two longer opposite sides), in its pixels."""
    q = np.asarray(quads, np.float64).reshape(-1, 4, 2)
    sides = np.linalg.norm(q - q[:, [1, 2, 3, 0]], axis=2)
    return np.maximum(sides[:, 0] + sides[:, 2], sides[:, 1] + sides[:, 3]) / 2


def more_zooms(first: Detections, scale: float) -> tuple[float, ...]:
    """The zooms of the looks that should follow a first look which found ``first`` at
    ``scale`` (input pixels per frame pixel): coarser where it found few cards or a big one,
    finer where its cards are small or it found none."""
    sizes = long_sides(first.quads) * scale
    zooms = []
    if len(first) < FEW_CARDS or (sizes > BIG_IN_INPUT).any():
        zooms += COARSE_ZOOMS
    if (len(first) == 0 or np.median(sizes) < SMALL_IN_INPUT) and (
        scale * FINE_ZOOM <= MAX_FINE_SCALE
    ):
        zooms.append(FINE_ZOOM)
    return tuple(zooms)


def in_band(det: Detections, scale: float, zoom: float) -> np.ndarray:
    """Mask of a coarser or finer look's detections that the first look (at ``scale``) could
    not see well: a coarser look keeps the cards the first saw larger than ``KEEP_ABOVE``, a
    finer one those it saw smaller than ``KEEP_BELOW``. Among cards of the size the first look
    sees best, another look adds only doubt (outlines of half-hidden cards, loose quads)."""
    sizes = long_sides(det.quads) * scale
    return sizes > KEEP_ABOVE if zoom < 1 else sizes < KEEP_BELOW


BAND_MARGIN = 0.7  # a look crops boxes down to (up to) this (its inverse) times its band's edge


def band_lengths(scale: float, zoom: float) -> tuple[float, float]:
    """(shortest, longest) long side in frame pixels of the localizer's boxes a coarser or finer
    look cuts crops for: about the sizes it may add (``in_band``), with a margin for the box's
    error. The others would be classified only to be dropped."""
    if zoom < 1:
        return BAND_MARGIN * KEEP_ABOVE / scale, np.inf
    return 0.0, KEEP_BELOW / BAND_MARGIN / scale


def merge_looks(
    looks: list[tuple[Detections, float]], same_card_iou: float = 1.0, first_wins: bool = True
) -> Detections:
    """One frame's cards from several looks (each: its Detections, its scale in input pixels
    per frame pixel). Each look's detections already passed NMS and one card once; across
    looks, a card found twice keeps the first look's detection where that look saw it at most
    ``KEEP_ABOVE`` long (``first_wins``: its quads are the surer there), else the look that saw
    it nearest ``BEST_IN_INPUT``; a smaller
    detection whose centre lies on a larger one (``PART_AREA``) is a part of it and goes, and a
    card's name goes to one detection only (``unique_cards``, ``same_card_iou`` as the
    model's settings say)."""
    numbered = [(i, det, scale) for i, (det, scale) in enumerate(looks) if len(det)]
    if not numbered:
        return Detections.empty()
    if len(numbered) == 1:
        return drop_parts(numbered[0][1])
    looks = [(det, scale) for _, det, scale in numbered]
    det = Detections(*(np.concatenate([getattr(d, k) for d, _ in looks]) for k in DETECTION_FIELDS))
    look = np.concatenate([np.full(len(d), i) for i, d, _ in numbered])
    scale = np.concatenate([np.full(len(d), s) for d, s in looks])
    seen = long_sides(det.quads) * scale
    misfit = np.abs(np.log(np.maximum(seen, 1e-3) / BEST_IN_INPUT))
    if first_wins:  # the first look's cards of sizes it sees well first, then by misfit
        misfit = np.where((look == 0) & (seen <= KEEP_ABOVE), -1.0, misfit)
    order = np.lexsort((-det.confidence, misfit))
    det, look = det[order], look[order]
    ious = iou_matrix(det.quads, det.quads)
    keep = np.ones(len(det), bool)
    for i in range(len(det)):
        if not keep[i]:
            continue
        # the same card in another look, less well seen there
        later = np.arange(len(det)) > i
        keep &= ~(later & (look != look[i]) & (ious[i] > SAME_CARD_IOU))
    det = drop_parts(det[keep])
    return unique_cards(det, same_card_iou=same_card_iou)


DETECTION_FIELDS = ("quads", "class_ids", "confidence", "alt_ids", "alt_scores")


def drop_parts(det: Detections) -> Detections:
    """Detections without the parts of other cards: those whose centre lies on a detection at
    least 1 / ``PART_AREA`` times larger (one deck's cards are one size: a corner of a
    close-up), and backs whose centre lies on a face-up card (a plain patch of its art read as
    a back: a face-down card lying on a face-up one hides it, and one under it is hidden)."""
    if len(det) < 2:
        return det
    import cv2

    areas = polygon_areas(det.quads)
    centres = det.quads.mean(axis=1)
    back = det.class_ids == BACK_ID
    part = np.zeros(len(det), bool)
    for j in np.flatnonzero(areas > 0):
        suspects = np.flatnonzero((areas < PART_AREA * areas[j]) | (back & ~back[j]))
        for i in suspects[suspects != j]:
            inside = cv2.pointPolygonTest(
                det.quads[j].astype(np.float32), tuple(float(v) for v in centres[i]), False
            )
            part[i] |= inside >= 0
    return det[~part]

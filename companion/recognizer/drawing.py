"""Drawing detections on a frame: outlines and non-overlapping labels (``annotate``)."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from companion.detections import CLASSES, Detections


@dataclass(frozen=True)
class LabelBox:
    """Where ``annotate`` writes one detection's label: ``rect`` (x0, y0, x1, y1) in image pixels,
    and ``anchor``, the point inside the detection's quad that a leader line joins to the label
    when the label had to move off the card."""

    text: str
    rect: tuple[int, int, int, int]
    anchor: tuple[int, int]

    @property
    def moved(self) -> bool:
        x0, y0, x1, y1 = self.rect
        return not (x0 <= self.anchor[0] <= x1 and y0 <= self.anchor[1] <= y1)


LABEL_FONT = cv2.FONT_HERSHEY_SIMPLEX
_LABEL_STEPS = 8  # a label may move this many of its heights up or down (and 2 widths sideways)


def label_scale(image_shape) -> tuple[float, int]:
    """The labels' font scale and line thickness for an image of this shape."""
    size = max(image_shape[:2])
    return 0.5 * max(1.0, size / 1280), max(1, round(size / 1600))


def label_boxes(det: Detections, image_shape) -> list[LabelBox]:
    """Non-overlapping places for the detections' labels, surest card first.

    Each label goes to the place, near its card, that covers the fewest card pixels: on the card
    where it is large, off to a free patch of table in a tight fanned row, whose cards' visible
    strips are narrower than a label (``annotate`` then draws a leader line back to the card).
    Labels never cover each other while a free place is left within reach; places lie inside the
    image.
    """
    h, w = image_shape[:2]
    scale, thick = label_scale(image_shape)
    cards = np.concatenate([det.quads.min(axis=1), det.quads.max(axis=1)], axis=1)  # (N, 4)
    card_areas = np.maximum(np.prod(cards[:, 2:] - cards[:, :2], axis=1), 1.0)
    steps = [(dx, dy) for dy in range(-_LABEL_STEPS, _LABEL_STEPS + 1) for dx in (-2, -1, 0, 1, 2)]
    step_cost = np.array([abs(dx) + abs(dy) for dx, dy in steps], np.float64)
    placed = np.zeros((0, 4), np.float64)
    boxes: dict[int, LabelBox] = {}
    for i in np.argsort(-det.confidence, kind="stable"):
        text = f"{CLASSES[det.class_ids[i]]} {det.confidence[i]:.2f}"
        (tw, th), base = cv2.getTextSize(text, LABEL_FONT, scale, thick)
        bw, bh = tw + 4 * thick, th + base + 2 * thick
        anchor = det.quads[i].astype(np.float64).mean(axis=0)
        x0 = anchor[0] - bw / 2 + np.array([dx for dx, _ in steps]) * bw * 0.55
        y0 = anchor[1] - bh / 2 + np.array([dy for _, dy in steps]) * bh * 1.15
        x0 = np.clip(np.round(x0), 0, max(w - bw, 0))
        y0 = np.clip(np.round(y0), 0, max(h - bh, 0))
        rects = np.stack([x0, y0, x0 + bw, y0 + bh], axis=1)
        # Covering another label is what must not happen; hiding a share of a card costs that
        # share of a label's area (so big cards keep their labels on them), and every step
        # away from the card a little.
        cost = (
            100.0 * _overlaps(rects, placed).sum(axis=1)
            + bw * bh * (_overlaps(rects, cards) / card_areas).sum(axis=1)
            + 0.15 * bw * bh * step_cost
        )
        rect = rects[int(np.argmin(cost))]
        placed = np.vstack([placed, rect])
        boxes[int(i)] = LabelBox(
            text, tuple(int(v) for v in rect), (int(round(anchor[0])), int(round(anchor[1])))
        )
    return [boxes[i] for i in range(len(det))]


def _overlaps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(len(a), len(b)) overlapping areas of (x0, y0, x1, y1) rectangles."""
    wx = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    wy = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    return np.clip(wx, 0, None) * np.clip(wy, 0, None)


def annotate(bgr: np.ndarray, det: Detections, labels: bool = True) -> np.ndarray:
    """A copy of the image with each quad outlined, its top edge marked and its class written
    on a dark tag (``label_boxes``: tags never cover each other; one moved off its card is
    joined to it by a line). ``labels=False``: the outlines alone (the tablet's live view
    names the cards itself, in its own language)."""
    out = bgr.copy()
    scale, thick = label_scale(out.shape)
    colours = [(0, 200, 0) if conf >= 0.8 else (0, 200, 255) for conf in det.confidence]
    for quad, color in zip(det.quads, colours, strict=True):
        pts = quad.round().astype(np.int32)
        cv2.polylines(out, [pts], True, color, thick, cv2.LINE_AA)
        cv2.line(out, tuple(pts[0]), tuple(pts[1]), (255, 0, 255), thick + 1, cv2.LINE_AA)
    if not labels:
        return out
    labels = label_boxes(det, out.shape)
    for box, color in zip(labels, colours, strict=True):
        if box.moved:
            x0, y0, x1, y1 = box.rect
            near = (min(max(box.anchor[0], x0), x1), min(max(box.anchor[1], y0), y1))
            cv2.line(out, box.anchor, near, color, thick, cv2.LINE_AA)
            cv2.circle(out, box.anchor, 2 * thick, color, -1, cv2.LINE_AA)
    for box, color in zip(labels, colours, strict=True):
        x0, y0, x1, y1 = box.rect
        cv2.rectangle(out, (x0, y0), (x1 - 1, y1 - 1), (20, 20, 20), -1)
        cv2.rectangle(out, (x0, y0), (x1 - 1, y1 - 1), color, 1)
        (_, th), _ = cv2.getTextSize(box.text, LABEL_FONT, scale, thick)
        org = (x0 + 2 * thick, y0 + thick + th)
        cv2.putText(out, box.text, org, LABEL_FONT, scale, (255, 255, 255), thick, cv2.LINE_AA)
    return out


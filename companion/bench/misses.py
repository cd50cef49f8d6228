"""What ``companion eval --misses`` draws on a scene: ``annotate``'s detections, with each
missed card and each false detection marked and tagged with why."""

from __future__ import annotations

import cv2
import numpy as np

from companion.detections import Detections
from companion.recognizer.drawing import LABEL_FONT, annotate, label_scale

MISSED_COLOUR = (0, 0, 255)  # red: a card that had to be found
FALSE_COLOUR = (0, 140, 255)  # orange: a detection matched to no card


def annotate_misses(
    bgr: np.ndarray,
    det: Detections,
    false_kinds: dict[int, str],
    missed: list[tuple[np.ndarray, str, str]],
) -> np.ndarray:
    """``annotate`` plus what eval holds against the detections: each missed card (quad, code,
    where it was lost) outlined in red, each false detection (index -> kind) in orange, with a
    tag saying why, so that a difficult scene can be checked by eye."""
    out = annotate(bgr, det)
    scale, thick = label_scale(out.shape)
    marks = [(det.quads[d], f"false: {kind}", FALSE_COLOUR) for d, kind in false_kinds.items()]
    marks += [(quad, f"missed {code}: {why}", MISSED_COLOUR) for quad, code, why in missed]
    for quad, text, colour in marks:
        pts = np.asarray(quad).round().astype(np.int32)
        cv2.polylines(out, [pts], True, colour, 2 * thick + 1, cv2.LINE_AA)
        (tw, th), base = cv2.getTextSize(text, LABEL_FONT, scale, thick)
        x = int(np.clip(pts[:, 0].min(), 0, max(0, out.shape[1] - tw - 4)))
        y = int(np.clip(pts[:, 1].max() + th + 4, th + 2, out.shape[0] - base - 2))
        cv2.rectangle(out, (x, y - th - 2), (x + tw + 4, y + base), (20, 20, 20), -1)
        cv2.putText(out, text, (x + 2, y), LABEL_FONT, scale, colour, thick, cv2.LINE_AA)
    return out

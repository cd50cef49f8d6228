"""A camera lens's radial distortion, one number ``k``: renders are bent by it
(``synth.SceneConfig.lens_k``, ``companion eval --lens-k``) to measure what a webcam's lens costs
the recognizer.

The model: a frame pixel at radius ``r`` from the centre (in half-diagonals of the frame) shows
what a perfect lens shows at ``r * (1 + k r^2)``, divided by ``1 + k`` when k > 0 so that no frame
pixel comes from outside the view. k > 0 is barrel distortion, as in wide-angle webcams: straight
card edges bow outwards and cards near the centre look larger; k < 0 is pincushion. Both views
have the frame's size; points map exactly both ways (``to_frame``, ``to_straight``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import cv2
import numpy as np

from companion import CompanionError

MAX_K = 0.5
MIN_K = -0.2  # stronger pincushion folds the frame's corners over (no one-to-one map)


class LensError(CompanionError):
    """A distortion outside what the model maps one-to-one."""


@dataclass(frozen=True)
class Lens:
    k: float

    def __post_init__(self):
        if not MIN_K <= self.k <= MAX_K:
            raise LensError(f"Lens distortion {self.k:g} is outside {MIN_K:g}..{MAX_K:g}.")

    # -- points ---------------------------------------------------------------------------------

    def scale(self, r2: np.ndarray) -> np.ndarray:
        """Straight-view radius over frame radius, at squared frame radius ``r2`` (never above 1:
        every frame pixel has a straight-view pixel)."""
        return (1 + self.k * r2) / max(1.0, 1 + self.k)

    def to_straight(self, points: np.ndarray, w: int, h: int) -> np.ndarray:
        """Frame points -> where a perfect lens would show them (the frame's sampling map)."""
        centre, half_diag = _frame(w, h)
        v = (np.asarray(points, np.float64).reshape(-1, 2) - centre) / half_diag
        out = centre + v * self.scale((v**2).sum(1, keepdims=True)) * half_diag
        return out.reshape(np.shape(points))

    def to_frame(self, points: np.ndarray, w: int, h: int) -> np.ndarray:
        """Points of the straight view -> where this lens puts them in the frame."""
        points = np.asarray(points, np.float64)
        centre, half_diag = _frame(w, h)
        v = (points.reshape(-1, 2) - centre) / half_diag
        r_straight = np.linalg.norm(v, axis=1)
        # Solve r * scale(r^2) = r_straight for the frame radius r (Newton; monotonic below
        # r_fold, where a pincushion's map turns back).
        b = 1 / max(1.0, 1 + self.k)
        a = self.k * b
        r_fold = math.sqrt(-b / (3 * a)) if a < 0 else np.inf
        r = np.minimum(r_straight, r_fold)
        # At the fold the slope is zero: a step from there is infinite and clipped back to the
        # fold (0/0 when the point sits exactly on it), which is where the point belongs.
        with np.errstate(divide="ignore", invalid="ignore"):
            for _ in range(12):
                step = (r * (b + a * r * r) - r_straight) / (b + 3 * a * r * r)
                r = np.clip(np.nan_to_num(r - step, nan=r_fold), 0, r_fold)
            ratio = np.where(r_straight > 0, r / r_straight, 1.0)
        return (v * ratio[:, None] * half_diag + centre).reshape(points.shape)

    # -- images ---------------------------------------------------------------------------------

    def bend(self, straight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The frame this lens makes of a straight view, and which straight-view pixels it shows
        (a boolean mask over the straight view)."""
        h, w = straight.shape[:2]
        map_x, map_y = _bend_maps(self.k, w, h)
        frame = cv2.remap(straight, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        # The frame's border, traced back into the straight view, outlines what it shows.
        t = np.linspace(0, 1, 200, endpoint=False)
        zero, one = np.zeros_like(t), np.ones_like(t)
        border = np.concatenate(
            [
                np.stack([t * (w - 1), zero], 1),
                np.stack([one * (w - 1), t * (h - 1)], 1),
                np.stack([(1 - t) * (w - 1), one * (h - 1)], 1),
                np.stack([zero, (1 - t) * (h - 1)], 1),
            ]
        )
        shown = np.zeros((h, w), np.uint8)
        cv2.fillPoly(shown, [np.round(self.to_straight(border, w, h)).astype(np.int32)], 1)
        return frame, shown.astype(bool)


def _frame(w: int, h: int) -> tuple[np.ndarray, float]:
    return np.array([(w - 1) / 2, (h - 1) / 2]), float(math.hypot(w / 2, h / 2))


@functools.lru_cache(maxsize=4)
def _bend_maps(k: float, w: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    ys, xs = np.mgrid[0:h, 0:w]
    straight = Lens(k).to_straight(np.stack([xs, ys], -1).astype(np.float64), w, h)
    return straight[..., 0].astype(np.float32), straight[..., 1].astype(np.float32)

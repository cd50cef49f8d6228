"""The camera lens model (companion/simulator/lens.py): points both ways, and frames bent by it."""

from __future__ import annotations

import numpy as np
import pytest

from companion.simulator.lens import MAX_K, MIN_K, Lens, LensError


def frame_grid(w, h):
    xs, ys = np.meshgrid(np.linspace(0, w - 1, 17), np.linspace(0, h - 1, 9))
    return np.stack([xs, ys], -1).reshape(-1, 2)


@pytest.mark.parametrize("k", [MIN_K, -0.1, 0.15, MAX_K])
def test_points_map_both_ways_and_every_frame_pixel_has_a_straight_one(k):
    lens, (w, h) = Lens(k), (640, 360)
    points = frame_grid(w, h)
    straight = lens.to_straight(points, w, h)
    assert (straight >= -0.5).all() and (straight[:, 0] <= w).all() and (straight[:, 1] <= h).all()
    assert np.allclose(lens.to_frame(straight, w, h), points, atol=1e-3)
    # Never zoomed out (no frame pixel without a straight one); a barrel magnifies most at the
    # centre, a pincushion towards the corners.
    centre = np.array([(w - 1) / 2, (h - 1) / 2])
    r_frame, r_straight = (np.linalg.norm(p - centre, axis=1) for p in (points, straight))
    away = r_frame > 20
    zoom = r_frame[away] / r_straight[away]
    assert (zoom >= 1 - 1e-9).all()
    order = np.argsort(r_frame[away])
    trend = np.polyfit(r_frame[away][order], zoom[order], 1)[0]
    assert trend < 0 if k > 0 else trend > 0


@pytest.mark.parametrize("k", [0.6, -0.3])
def test_a_lens_the_model_cannot_map_is_refused(k):
    with pytest.raises(LensError, match="outside"):
        Lens(k)


def test_bend_shows_each_frame_pixel_where_the_straight_view_had_it():
    w, h = 480, 270
    ys, xs = np.mgrid[0:h, 0:w]
    # a smooth picture, so that sampling between pixels changes nothing that matters
    straight = np.stack([xs * 255 // w, ys * 255 // h, (xs + ys) * 127 // (w + h)], -1)
    straight = straight.astype(np.uint8)
    for k in (0.3, -0.15):
        lens = Lens(k)
        bent, shown = lens.bend(straight)
        assert bent.shape == straight.shape
        points = frame_grid(w, h)[1:-1]
        source = np.round(lens.to_straight(points, w, h)).astype(int)
        frame_values = bent[points[:, 1].astype(int), points[:, 0].astype(int)].astype(int)
        assert np.abs(frame_values - straight[source[:, 1], source[:, 0]]).max() <= 2
        assert np.abs(bent.astype(int) - straight).mean() > 2  # and it did bend the picture
        # "shown": the straight-view pixels whose place in the frame lies inside it
        back = lens.to_frame(np.stack([xs, ys], -1).reshape(-1, 2), w, h).reshape(h, w, 2)
        inside = (back[..., 0] > -0.5) & (back[..., 0] < w - 0.5)
        inside &= (back[..., 1] > -0.5) & (back[..., 1] < h - 0.5)
        assert (shown == inside).mean() > 0.99 and 0.8 < shown.mean() < 1.0


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("k", [MIN_K, -0.1])  # at -0.1 the slope at the fold is exactly zero
def test_a_point_beyond_a_pincushions_fold_lands_on_the_fold_quietly(k):
    # A card corner far off the frame: the pincushion's map turns back before it, so the nearest
    # place the lens can put it is the fold, on the same ray from the centre.
    lens, (w, h) = Lens(k), (640, 360)
    centre, half_diag = np.array([(w - 1) / 2, (h - 1) / 2]), np.hypot(w, h) / 2
    far = centre + np.array([[-4.0, -3.0], [5.0, 0.0]]) * half_diag
    mapped = lens.to_frame(far, w, h)
    assert np.isfinite(mapped).all()
    r_fold = np.sqrt(-1 / (3 * k))
    r = np.linalg.norm(mapped - centre, axis=1) / half_diag
    assert np.allclose(r, r_fold, rtol=1e-6)
    rays = (far - centre) / np.linalg.norm(far - centre, axis=1, keepdims=True)
    assert np.allclose((mapped - centre) / (r[:, None] * half_diag), rays)

"""The camera lens model (companion/lens.py): points both ways, frames bent and straightened,
and the recognizer told about a lens (detect --lens-k, eval --straighten)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from companion import synth
from companion.cli import main
from companion.detections import Detections, iou_matrix
from companion.lens import MAX_K, MIN_K, Lens, LensError
from companion.recognizer import DEFAULT_MODEL

HELD_OUT = Path(__file__).resolve().parents[2] / "shared" / "decks" / "traditional-scan"
needs_model_and_deck = pytest.mark.skipif(
    not (DEFAULT_MODEL.is_file() and HELD_OUT.is_dir()), reason="no committed model or deck"
)


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


def test_straighten_undoes_bend():
    w, h = 480, 270
    straight = np.zeros((h, w, 3), np.uint8)
    for x in range(0, w, 24):  # a grid of straight lines, as card edges are
        cv2.line(straight, (x, 0), (x, h), (255, 255, 255), 3)
    for y in range(0, h, 24):
        cv2.line(straight, (0, y), (w, y), (255, 255, 255), 3)
    lens = Lens(0.3)
    bent, shown = lens.bend(straight)
    again = lens.straighten(bent)
    inner = cv2.erode(shown.astype(np.uint8), np.ones((9, 9), np.uint8)).astype(bool)
    before = np.abs(bent.astype(int) - straight.astype(int))[inner].mean()
    after = np.abs(again.astype(int) - straight.astype(int))[inner].mean()
    assert before > 30 and after < 0.25 * before
    assert 0.8 < shown.mean() < 1.0  # the frame shows most, not all, of the straight view


def test_detections_found_in_the_straight_view_are_put_back_in_the_frame():
    lens, (w, h) = Lens(0.25), (1280, 720)
    straight_quad = np.array([[100, 80], [160, 80], [160, 180], [100, 180]], np.float32)
    det = Detections.from_cards(["03-1"], [straight_quad])
    moved = lens.detections_to_frame(det, w, h)
    assert np.allclose(moved.quads[0], lens.to_frame(straight_quad, w, h), atol=1e-3)
    assert moved.class_ids.tolist() == det.class_ids.tolist()
    assert np.abs(moved.quads - det.quads).max() > 5  # near a corner a barrel moves points a lot
    assert len(lens.detections_to_frame(Detections.empty(), w, h)) == 0


@needs_model_and_deck
def test_detect_with_the_lens_finds_the_cards_where_the_frame_shows_them(tmp_path):
    """Through a strong wide-angle lens, the cards found with --lens-k overlap their labels in
    the bent frame (the quads come back in the frame's pixels)."""
    config = synth.SceneConfig(decks=(str(HELD_OUT),), lens_k=0.3)
    found = wanted = 0
    paths, scenes = [], []
    for seed in (3, 8):
        scene = synth.render_scene(seed, config)
        path = tmp_path / f"bent{seed}.png"
        cv2.imwrite(str(path), scene.image)
        paths.append(str(path))
        scenes.append(scene)
    result = CliRunner().invoke(main, ["detect", "--json", "--lens-k", "0.3", *paths])
    assert result.exit_code == 0, result.output
    for entry, scene in zip(json.loads(result.stdout), scenes, strict=True):
        clear = [lab for lab in scene.labels if lab.visible > 0.9]
        quads = np.array([d["quad"] for d in entry["detections"]], np.float32).reshape(-1, 4, 2)
        labels = np.array([lab.quad for lab in clear], np.float32).reshape(-1, 4, 2)
        ious = iou_matrix(quads, labels)
        found += int((ious.max(axis=0, initial=0) >= 0.5).sum())
        wanted += len(clear)
    assert wanted >= 10 and found >= 0.85 * wanted


@needs_model_and_deck
def test_cli_eval_straighten_needs_a_lens_and_says_it_straightened():
    refused = CliRunner().invoke(main, ["eval", "--deck", str(HELD_OUT), "--straighten"])
    assert refused.exit_code == 2 and "--lens-k" in refused.output
    args = ["eval", "--deck", str(HELD_OUT), "--seed", "5", "--n", "2", "--json", "--lens-k", "0.2"]
    plain = json.loads(CliRunner().invoke(main, args).stdout)
    told = json.loads(CliRunner().invoke(main, [*args, "--straighten"]).stdout)
    assert plain["lens_k"] == told["lens_k"] == 0.2
    assert plain["lens_straightened"] is False and told["lens_straightened"] is True
    assert plain["labels"] == told["labels"]  # the same scenes, only the recognizer differs

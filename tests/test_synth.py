"""Synthetic scenes: determinism, labels on the right pixels, visibility, backs, user decks."""

from __future__ import annotations

import json
from dataclasses import replace

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from companion import CompanionError
from companion.cli import main
from companion.detections import polygon_area
from companion.simulator import synth
from companion.simulator.lens import Lens
from companion.simulator.synth import (
    SceneConfig,
    SynthError,
    read_dataset,
    render_scene,
    write_dataset,
)

SHARED = synth.find_shared_dir()
needs_shared = pytest.mark.skipif(
    not (SHARED / "decks").is_dir(), reason="reference decks (../shared/decks) not available"
)

# Small frames, no camera effects that would hide what a test looks at.
PLAIN = SceneConfig(
    width=320,
    height=192,
    card_px=(44.0, 60.0),
    max_tilt_deg=30.0,
    p_hands=0.0,
    p_distractors=0.0,
    p_glare=0.0,
    p_color_cast=0.0,
    p_blur=0.0,
    p_motion_blur=0.0,
    p_sheen=0.0,
    max_noise=1.0,
    jpeg_quality=(95, 95),
)

COLOURS = {  # BGR, top half / bottom half of each test card
    "01-1": ((0, 0, 230), (230, 0, 0)),
    "05-2": ((230, 0, 0), (0, 230, 0)),
    "12-4": ((0, 230, 0), (0, 0, 230)),
}


@pytest.fixture
def user_deck(tmp_path):
    """A user's own deck folder: three cards, each with a distinct top and bottom colour."""
    folder = tmp_path / "my-deck"
    folder.mkdir()
    for code, (top, bottom) in COLOURS.items():
        img = np.zeros((200, 124, 3), np.uint8)
        img[:100] = top
        img[100:] = bottom
        cv2.imwrite(str(folder / f"{code}.png"), img)
    (folder / "notes.txt").write_text("not a card")
    return folder


@pytest.fixture
def grey_table(tmp_path):
    path = tmp_path / "grey.png"
    cv2.imwrite(str(path), np.full((64, 64, 3), 128, np.uint8))
    return path


def _mean_in(image, quad, shrink=0.6):
    """Mean colour inside the quad shrunk towards its centre (away from edges and blur)."""
    centre = quad.mean(axis=0)
    inner = centre + (quad - centre) * shrink
    mask = np.zeros(image.shape[:2], np.uint8)
    cv2.fillConvexPoly(mask, np.round(inner).astype(np.int32), 255)
    return np.array(cv2.mean(image, mask=mask)[:3])


def _point_colour(image, point):
    x, y = (int(round(v)) for v in point)
    patch = image[max(y - 1, 0) : y + 2, max(x - 1, 0) : x + 2].reshape(-1, 3)
    return patch.mean(axis=0)


@needs_shared
def test_same_seed_same_scene_and_different_seed_different_scene():
    cfg = SceneConfig(width=320, height=180)
    a, b, c = render_scene(11, cfg), render_scene(11, cfg), render_scene(12, cfg)
    assert a.image.shape == (180, 320, 3) and a.image.dtype == np.uint8
    assert np.array_equal(a.image, b.image)
    assert [lab.to_dict() for lab in a.labels] == [lab.to_dict() for lab in b.labels]
    assert a.conditions == b.conditions
    assert not np.array_equal(a.image, c.image)


def test_a_scene_does_not_depend_on_where_its_deck_folder_lives(tmp_path, user_deck, grey_table):
    # the same deck reached through another path (another checkout, CI's copy of ../shared)
    elsewhere = tmp_path / "other-checkout" / "shared"
    elsewhere.mkdir(parents=True)
    (elsewhere / user_deck.name).symlink_to(user_deck, target_is_directory=True)
    renders = [
        render_scene(5, replace(PLAIN, decks=(str(folder),), backgrounds=(str(grey_table),)))
        for folder in (user_deck, elsewhere / user_deck.name)
    ]
    assert renders[0].labels and np.array_equal(renders[0].image, renders[1].image)


@needs_shared
def test_many_scenes_have_sane_labels():
    codes = set(synth.ALL_CODES) | {"back"}
    cfg = SceneConfig(width=320, height=180)
    n_labels = 0
    for seed in range(12):
        scene = render_scene(seed, cfg)
        for lab in scene.labels:
            n_labels += 1
            assert lab.card in codes
            assert lab.quad.shape == (4, 2) and lab.quad.dtype == np.float32
            assert cfg.min_visible <= lab.visible <= 1.0
            if lab.card != "back":
                assert (SHARED / "decks" / lab.deck / f"{lab.card}.png").is_file()
        json.dumps(scene.conditions)  # conditions must be plain JSON
        assert {"tilt_deg", "card_px", "light", "glare", "blur", "overlap"} <= set(scene.conditions)
    assert n_labels > 12


def test_labels_land_on_the_card_in_the_right_orientation(user_deck, grey_table):
    cfg = PLAIN.with_(decks=(str(user_deck),), backgrounds=(str(grey_table),), p_draw_pile=0.0)
    checked = 0
    for seed in range(8):
        scene = render_scene(seed, cfg)
        for lab in scene.labels:
            if lab.visible < 0.999:
                continue
            # Fully visible: all corners inside the frame.
            assert (lab.quad >= -0.5).all()
            assert (lab.quad[:, 0] <= cfg.width).all() and (lab.quad[:, 1] <= cfg.height).all()
            top, bottom = COLOURS[lab.card]
            q = lab.quad
            centre = q.mean(axis=0)
            top_point = centre + ((q[0] + q[1]) / 2 - centre) * 0.5
            bottom_point = centre + ((q[2] + q[3]) / 2 - centre) * 0.5
            # The strongest channel tells which colour the pixel is; grey table has none.
            assert np.argmax(_point_colour(scene.image, top_point)) == np.argmax(top), (seed, lab)
            assert np.argmax(_point_colour(scene.image, bottom_point)) == np.argmax(bottom), (
                seed,
                lab,
            )
            checked += 1
    assert checked >= 5


def test_user_deck_folder_works_and_labels_name_it(user_deck):
    scene = render_scene(3, PLAIN.with_(decks=(str(user_deck),), p_draw_pile=0.0))
    faces = [lab for lab in scene.labels if lab.card != "back"]
    assert faces
    assert {lab.card for lab in faces} <= set(COLOURS)
    assert {lab.deck for lab in faces} == {"my-deck"}


def _coverage(labels, index, shape, scale=4):
    """Visible fraction of label ``index`` recomputed from the quads drawn after it
    (on a mask ``scale`` times finer than the image, so edge pixels hardly matter)."""

    def fill(mask, quad, value):
        pts = np.round((quad + 0.5) * scale * 16).astype(np.int32)  # 4 fractional bits
        cv2.fillConvexPoly(mask, pts, value, shift=4)

    own = np.zeros((shape[0] * scale, shape[1] * scale), np.uint8)
    fill(own, labels[index].quad, 1)
    for later in labels[index + 1 :]:
        fill(own, later.quad, 0)
    return own.sum() / (polygon_area(labels[index].quad) * scale * scale)


def test_visible_fraction_falls_when_a_card_is_covered(user_deck):
    # Capture rows only: overlapping like a fanned hand, nothing else on the table.
    cfg = PLAIN.with_(
        decks=(str(user_deck),),
        p_random_layout=0.0,
        p_draw_pile=0.0,
        field_cards=(0, 0),
        capture_cards=(6, 6),
        card_px=(40.0, 46.0),
        max_tilt_deg=0.0,
    )
    for seed in (2, 5, 8):
        _check_capture_rows(render_scene(seed, cfg).labels, cfg)


def _check_capture_rows(labels, cfg):
    inside = [
        i
        for i, lab in enumerate(labels)
        if (lab.quad[:, 0] > 0).all()
        and (lab.quad[:, 0] < cfg.width - 1).all()
        and (lab.quad[:, 1] > 0).all()
        and (lab.quad[:, 1] < cfg.height - 1).all()
    ]
    assert len(inside) >= 4
    covered = [i for i in inside if labels[i].visible < 0.9]
    assert covered, "capture rows overlap, some card must be partly covered"
    for i in inside:
        expected = _coverage(labels, i, (cfg.height, cfg.width))
        assert labels[i].visible == pytest.approx(expected, abs=0.05), (i, labels[i])
    for i in covered:
        assert 0.25 < labels[i].visible < 0.85


def test_hands_cover_cards_and_lower_their_visible_fraction(user_deck):
    base = PLAIN.with_(decks=(str(user_deck),), p_draw_pile=0.0)
    with_hands = base.with_(p_hands=1.0)
    lowered = 0
    for seed in range(6):
        a = {tuple(lab.quad.ravel()): lab.visible for lab in render_scene(seed, base).labels}
        b = render_scene(seed, with_hands)
        assert b.conditions["hands"] >= 1
        for lab in b.labels:
            before = a.get(tuple(lab.quad.ravel()))
            if before is not None and lab.visible < before - 0.05:
                lowered += 1
    assert lowered >= 1


def test_face_down_cards_are_labelled_back(user_deck):
    cfg = PLAIN.with_(decks=(str(user_deck),), p_random_layout=0.0, p_draw_pile=1.0)
    backs = []
    for seed in range(4):
        scene = render_scene(seed, cfg)
        for lab in scene.labels:
            if lab.card == "back":
                backs.append((scene, lab))
    assert backs
    for scene, lab in backs:
        assert lab.deck == ""
        if lab.visible > 0.9:
            # Plain black or red back: dark blue and green channels, unlike any test face.
            b, g, _r = _mean_in(scene.image, lab.quad)
            assert b < 90 and g < 90


def test_missing_deck_folder_is_a_clear_error(tmp_path):
    with pytest.raises(SynthError, match="does not exist"):
        render_scene(0, PLAIN.with_(decks=(str(tmp_path / "nope"),)))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CompanionError, match="no card images"):
        render_scene(0, PLAIN.with_(decks=(str(empty),)))


def test_write_and_read_dataset_round_trip(tmp_path, user_deck):
    cfg = PLAIN.with_(decks=(str(user_deck),))
    out = write_dataset(tmp_path / "ds", 3, seed=4, config=cfg, progress=False)
    lines = (out / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 3
    assert sorted(p.name for p in (out / "images").iterdir()) == [
        "000000.jpg",
        "000001.jpg",
        "000002.jpg",
    ]
    scenes = list(read_dataset(out))
    assert len(scenes) == 3
    direct = render_scene(synth.scene_seed(4, 1), cfg)
    assert [lab.to_dict() for lab in scenes[1].labels] == [lab.to_dict() for lab in direct.labels]
    assert scenes[1].image.shape == direct.image.shape
    # JPEG re-encoding only: pixels stay close to the rendered scene.
    assert np.abs(scenes[1].image.astype(int) - direct.image.astype(int)).mean() < 6
    # Another dataset seed gives other scenes.
    assert synth.scene_seed(5, 1) != synth.scene_seed(4, 1)


def test_read_dataset_rejects_a_folder_without_labels(tmp_path):
    with pytest.raises(SynthError, match="labels.jsonl"):
        list(read_dataset(tmp_path))


def test_cli_render_writes_a_dataset_and_rejects_a_missing_deck(tmp_path, user_deck):
    runner = CliRunner()
    out = tmp_path / "cli-ds"
    result = runner.invoke(
        main,
        [
            "render",
            "--out",
            str(out),
            "--n",
            "2",
            "--seed",
            "1",
            "--deck",
            str(user_deck),
            "--width",
            "160",
            "--height",
            "96",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert len((out / "labels.jsonl").read_text().splitlines()) == 2
    # the same scenes through a wide-angle lens: other pixels, the lens in their conditions
    bent = tmp_path / "bent-ds"
    args = ["render", "--n", "2", "--seed", "1", "--deck", str(user_deck), "--quiet"]
    args += ["--width", "160", "--height", "96"]
    result = runner.invoke(main, [*args, "--out", str(bent), "--lens-k", "0.3"])
    assert result.exit_code == 0, result.output
    flat_scenes, bent_scenes = list(read_dataset(out)), list(read_dataset(bent))
    assert [sc.conditions["lens_k"] for sc in bent_scenes] == [0.3, 0.3]
    assert [sc.conditions["lens_k"] for sc in flat_scenes] == [0.0, 0.0]
    assert not np.array_equal(flat_scenes[0].image, bent_scenes[0].image)
    refused = runner.invoke(main, [*args, "--out", str(tmp_path / "y"), "--lens-k", "1"])
    assert refused.exit_code == 2 and "--lens-k" in refused.output
    # ...and printed in inks of their own: same labels, other faces, the style recorded
    styled = tmp_path / "styled-ds"
    result = runner.invoke(main, [*args, "--out", str(styled), "--restyle", "1"])
    assert result.exit_code == 0, result.output
    styled_scenes = list(read_dataset(styled))
    assert all("deck_style" in sc.conditions for sc in styled_scenes)
    assert not any("deck_style" in sc.conditions for sc in flat_scenes)
    assert [[lab.to_dict() for lab in sc.labels] for sc in styled_scenes] == [
        [lab.to_dict() for lab in sc.labels] for sc in flat_scenes
    ]
    assert not np.array_equal(flat_scenes[0].image, styled_scenes[0].image)
    refused = runner.invoke(main, [*args, "--out", str(tmp_path / "z"), "--restyle", "2"])
    assert refused.exit_code == 2 and "--restyle" in refused.output

    bad = runner.invoke(
        main, ["render", "--out", str(tmp_path / "x"), "--n", "1", "--deck", str(tmp_path / "nope")]
    )
    assert bad.exit_code == 2
    assert "does not exist" in bad.output
    assert "Traceback" not in bad.output
    assert not (tmp_path / "x").exists()


def test_conditions_stay_within_the_configured_ranges(user_deck):
    cfg = PLAIN.with_(decks=(str(user_deck),), card_px=(50.0, 70.0), max_tilt_deg=20.0)
    for seed in range(6):
        c = render_scene(seed, cfg).conditions
        assert 0.0 <= c["tilt_deg"] <= 20.0
        assert 50.0 <= c["card_px"] <= 70.0
        assert c["light"] == "neutral" and c["blur"] == 0.0 and c["hands"] == 0
        assert c["jpeg_quality"] == 95


def test_a_third_player_adds_a_capture_area(user_deck):
    base = PLAIN.with_(decks=(str(user_deck),), p_random_layout=0.0)
    assert render_scene(1, base.with_(p_third_player=1.0)).conditions["players"] == 3
    assert render_scene(1, base.with_(p_third_player=0.0)).conditions["players"] == 2


def test_worker_processes_write_the_same_dataset(tmp_path, user_deck):
    cfg = PLAIN.with_(decks=(str(user_deck),), width=160, height=96)
    one = write_dataset(tmp_path / "one", 4, seed=9, config=cfg, progress=False)
    two = write_dataset(tmp_path / "two", 4, seed=9, config=cfg, progress=False, workers=2)
    assert (one / "labels.jsonl").read_text() == (two / "labels.jsonl").read_text()
    for i in range(4):
        name = f"images/{i:06d}.jpg"
        assert (one / name).read_bytes() == (two / name).read_bytes()


def _match(image, lab, code):
    """Correlation between the image inside a label's quad and the deck's face ``code``."""
    ref = cv2.imread(str(SHARED / "decks" / lab.deck / f"{code}.png"))
    h, w = ref.shape[:2]
    to_face = cv2.getPerspectiveTransform(
        lab.quad.astype(np.float32), np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    )
    patch = cv2.warpPerspective(image, to_face, (w, h))

    def grey(img):
        small = cv2.resize(img, (40, 64), interpolation=cv2.INTER_AREA)
        return cv2.cvtColor(small, cv2.COLOR_BGR2GRAY).astype(float)[6:-6, 6:-6].ravel()

    return np.corrcoef(grey(patch), grey(ref))[0, 1]


@needs_shared
def test_reference_decks_labels_name_the_face_drawn_there():
    """With every effect on, the pixels under a label look like that card, not another."""
    cfg = SceneConfig(width=480, height=270)
    right, wrong = [], []
    for seed in range(8):
        scene = render_scene(seed, cfg)
        for lab in scene.labels:
            if lab.card == "back" or lab.visible < 0.999:
                continue
            other = synth.ALL_CODES[(synth.ALL_CODES.index(lab.card) + 5) % 48]
            right.append(_match(scene.image, lab, lab.card))
            wrong.append(_match(scene.image, lab, other))
    assert len(right) >= 10
    assert np.median(right) > 0.5
    assert np.median(right) - np.median(wrong) > 0.4
    assert np.mean(np.array(right) > np.array(wrong)) > 0.8


@pytest.mark.parametrize("k", [0.4, -0.2])
def test_through_a_lens_the_labels_follow_the_bent_cards(user_deck, grey_table, k):
    base = PLAIN.with_(decks=(str(user_deck),), backgrounds=(str(grey_table),), p_draw_pile=0.0)
    checked = moved = cut = 0
    for seed in range(8):
        flat, bent = render_scene(seed, base), render_scene(seed, base.with_(lens_k=k))
        assert bent.conditions["lens_k"] == k and flat.conditions["lens_k"] == 0.0
        # the same scene (what is measured on the labels aside), only seen through the lens
        measured = ("lens_k", "card_px_median", "overlap")
        rest = {key: v for key, v in bent.conditions.items() if key not in measured}
        assert rest == {key: v for key, v in flat.conditions.items() if key in rest}
        for lab in bent.labels:  # the same card, moved; the lens hides part of the render
            (was,) = [
                f
                for f in flat.labels
                if np.abs(Lens(k).to_frame(f.quad, base.width, base.height) - lab.quad).max() < 0.01
            ]
            assert lab.card == was.card and lab.visible <= was.visible + 1e-6
            cut += lab.visible < was.visible - 0.01
            moved += np.abs(was.quad - lab.quad).max() > 2
        for lab in bent.labels:
            if lab.visible < 0.999 or lab.card == "back":
                continue
            q = lab.quad
            centre = q.mean(axis=0)
            top, bottom = COLOURS[lab.card]
            # Close to each corner (which a lens moves exactly; its edges it bends).
            for corner, colour in zip(q, (top, top, bottom, bottom), strict=True):
                point = centre + (corner - centre) * 0.8
                assert np.argmax(_point_colour(bent.image, point)) == np.argmax(colour), (seed, k)
            checked += 1
    assert checked >= 5 and moved >= 3  # the lens did move the cards, and the labels with them
    assert cut >= 1


def test_sheen_and_motion_blur_change_only_the_pixels(user_deck, grey_table):
    """The two effects draw from their own stream: the layout, labels and every other
    condition of a seed stay as they were, so recorded seeds keep their scenes."""
    base = PLAIN.with_(decks=(str(user_deck),), backgrounds=(str(grey_table),))
    for seed in range(4):
        plain = render_scene(seed, base)
        both = render_scene(seed, base.with_(p_motion_blur=1.0, p_sheen=1.0))
        assert [lab.to_dict() for lab in plain.labels] == [lab.to_dict() for lab in both.labels]
        assert plain.conditions["motion_blur"] == 0.0 and plain.conditions["sheen"] is False
        assert 3.0 <= both.conditions["motion_blur"] <= base.max_motion_px * base.height / 720 + 3
        assert both.conditions["sheen"] is True
        rest = {k: v for k, v in both.conditions.items() if k not in ("motion_blur", "sheen")}
        assert rest == {k: v for k, v in plain.conditions.items() if k in rest}
        assert not np.array_equal(plain.image, both.image)
    clean = render_scene(0, base.with_(realism=False, p_motion_blur=1.0, p_sheen=1.0))
    assert clean.conditions["motion_blur"] == 0.0 and clean.conditions["sheen"] is False


def test_a_lens_drawn_per_scene(user_deck, grey_table):
    """Training scenes may each get a lens of their own (``p_lens``), from the seed's own
    stream: the scenes drawn without one are the very scenes of a config without lenses, and
    those drawn with one are that seed seen through that lens."""
    base = PLAIN.with_(decks=(str(user_deck),), backgrounds=(str(grey_table),))
    some = base.with_(p_lens=0.5, lens_k_range=(0.1, 0.3))
    drawn = []
    for seed in range(8):
        flat, scene = render_scene(seed, base), render_scene(seed, some)
        k = scene.conditions["lens_k"]
        drawn.append(k)
        if k == 0.0:
            assert np.array_equal(scene.image, flat.image)
            assert [lab.to_dict() for lab in scene.labels] == [lab.to_dict() for lab in flat.labels]
        else:
            assert 0.1 <= k <= 0.3
            fixed = render_scene(seed, base.with_(lens_k=k))
            assert np.array_equal(scene.image, fixed.image)
            assert [lab.to_dict() for lab in scene.labels] == [
                lab.to_dict() for lab in fixed.labels
            ]
    assert 0 < sum(k != 0.0 for k in drawn) < len(drawn)  # some scenes drew a lens, some not
    assert drawn == [render_scene(s, some).conditions["lens_k"] for s in range(8)]  # repeatable
    # a lens fixed for the whole set wins over one drawn per scene
    assert render_scene(0, some.with_(lens_k=-0.1)).conditions["lens_k"] == -0.1


def test_a_deck_style_turns_hues_and_keeps_greys():
    """The colour matrix of a drawn deck style: a third of a turn about the grey axis moves
    each primary onto the next, saturation 0 leaves the grey of each colour, and no style
    touches white paper, black ink or the transparency."""

    def apply(style, bgr, alpha=255):
        pixel = np.array([[[*bgr, alpha]]], np.uint8)
        return cv2.transform(pixel, synth.style_matrix(style))[0, 0].astype(int)

    turn = {"hue_deg": 120.0, "saturation": 1.0, "contrast": 1.0}
    # blue -> green -> red -> blue: each primary onto the next, a turn and not a swap
    assert list(apply(turn, (200, 0, 0))) == [0, 200, 0]
    assert list(apply(turn, (0, 200, 0))) == [0, 0, 200]
    assert list(apply(turn, (0, 0, 200))) == [200, 0, 0]
    grey = {"hue_deg": 0.0, "saturation": 0.0, "contrast": 1.0}
    assert abs(apply(grey, (0, 0, 210)) - 70).max() <= 1
    for style in (turn, grey, {"hue_deg": -30.0, "saturation": 1.4, "contrast": 1.0}):
        for paper in ((255, 255, 255), (0, 0, 0), (128, 128, 128)):
            assert abs(apply(style, paper) - paper).max() <= 1
    # contrast about mid-grey, in premultiplied colour: a transparent pixel stays black
    more = {"hue_deg": 0.0, "saturation": 1.0, "contrast": 1.2}
    assert (apply(more, (200, 200, 200)) > 200).all() and (apply(more, (50, 50, 50)) < 50).all()
    assert (apply(more, (0, 0, 0), alpha=0) == 0).all()


def test_a_deck_style_drawn_per_scene(user_deck, grey_table):
    """Training scenes may print their faces in inks of their own (``p_restyle``), from the
    seed's own stream: a scene drawn without a style is the very scene of a config without
    styles; one drawn with a style has the same cards in the same places, in other colours,
    on the same table."""
    base = PLAIN.with_(decks=(str(user_deck),), backgrounds=(str(grey_table),))
    some = base.with_(p_restyle=0.5)
    styles = []
    for seed in range(8):
        plain, scene = render_scene(seed, base), render_scene(seed, some)
        style = scene.conditions.get("deck_style")
        styles.append(style)
        assert [lab.to_dict() for lab in scene.labels] == [lab.to_dict() for lab in plain.labels]
        if style is None:
            assert np.array_equal(scene.image, plain.image)
            continue
        assert abs(style["hue_deg"]) <= synth.RESTYLE_HUE_DEG
        assert synth.RESTYLE_SATURATION[0] <= style["saturation"] <= synth.RESTYLE_SATURATION[1]
        # the faces changed colour; the grey table around them did not
        card_pixels = np.zeros(plain.image.shape[:2], bool)
        for lab in plain.labels:
            mask = np.zeros(plain.image.shape[:2], np.uint8)
            cv2.fillConvexPoly(mask, np.round(lab.quad).astype(np.int32), 1)
            card_pixels |= mask.astype(bool)
        if card_pixels.any():
            diff = np.abs(scene.image.astype(int) - plain.image.astype(int)).max(axis=2)
            assert diff[card_pixels].mean() > 2 * max(1.0, diff[~card_pixels].mean())
    assert any(s is None for s in styles) and any(s is not None for s in styles)
    assert styles == [render_scene(s, some).conditions.get("deck_style") for s in range(8)]


def test_motion_blur_smears_the_frame(user_deck, grey_table):
    base = PLAIN.with_(decks=(str(user_deck),), backgrounds=(str(grey_table),), max_noise=0.5)
    for seed in range(3):
        sharp = render_scene(seed, base).image
        moved = render_scene(seed, base.with_(p_motion_blur=1.0, max_motion_px=40.0)).image
        # the cards' sharp colour edges lose most of their second derivative
        assert cv2.Laplacian(moved, cv2.CV_32F).var() < 0.5 * cv2.Laplacian(sharp, cv2.CV_32F).var()


def test_sheen_washes_out_cards_but_not_the_table(user_deck, grey_table):
    base = PLAIN.with_(decks=(str(user_deck),), backgrounds=(str(grey_table),), max_noise=0.5)
    lifts = []
    for seed in range(6):
        plain = render_scene(seed, base)
        shiny = render_scene(seed, base.with_(p_sheen=1.0))
        on_cards = np.zeros(plain.image.shape[:2], np.uint8)
        for lab in plain.labels:
            cv2.fillConvexPoly(on_cards, np.round(lab.quad).astype(np.int32), 255)
        table = cv2.erode(255 - on_cards, np.ones((9, 9), np.uint8)) > 0  # off cards and shadows
        diff = shiny.image.astype(np.int16) - plain.image.astype(np.int16)
        assert np.abs(diff[table]).mean() < 1.0  # JPEG ripples only
        for lab in plain.labels:  # light is only ever added (JPEG may ripple at the edges)
            lift = (_mean_in(shiny.image, lab.quad) - _mean_in(plain.image, lab.quad)).mean()
            assert lift > -1.0
            lifts.append(lift)
    assert max(lifts) > 10  # a band over some scene's cards brightens them clearly


def test_clean_scenes_keep_the_layout_and_drop_the_photo_effects(user_deck):
    """realism=False (the augmentation ablation's baseline): the same cards on the same spots,
    without grain, stock colour, glare, light, casts, blur, noise or JPEG."""
    base = PLAIN.with_(decks=(str(user_deck),), max_noise=20.0, p_glare=1.0, p_blur=1.0)
    for seed in range(3):
        real = render_scene(seed, base)
        clean = render_scene(seed, base.with_(realism=False))
        assert [lab.card for lab in clean.labels] == [lab.card for lab in real.labels]
        for a, b in zip(clean.labels, real.labels, strict=True):
            np.testing.assert_array_equal(a.quad, b.quad)
            assert a.visible == b.visible
        assert clean.conditions["blur"] == 0.0 and clean.conditions["jpeg_quality"] is None
        assert real.conditions["blur"] > 0 and real.conditions["jpeg_quality"] is not None
        assert not np.array_equal(clean.image, real.image)
        # the camera settings no longer reach the pixels
        quiet = render_scene(seed, base.with_(realism=False, max_noise=0.5, p_blur=0.0))
        np.testing.assert_array_equal(clean.image, quiet.image)
    # no print grain either: a plain-coloured face stays one colour
    face = synth._face(user_deck / "01-1.png", 200, grain=False)
    assert face[20:80, 20:100, :3].std(axis=(0, 1)).max() == 0
    assert synth._face(user_deck / "01-1.png", 200)[20:80, 20:100, :3].std(axis=(0, 1)).max() > 1

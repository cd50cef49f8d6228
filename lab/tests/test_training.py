"""The lab: training targets and samples, the render -> train -> export -> detect path (slow),
quantizing and folding the exported nets, training jobs, the acceptance rule's fit, and the
lab's commands."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from companion.bench.recognizer_speed import bench_scene
from companion.cli import main
from companion.detections import (
    CLASSES,
    Detections,
    class_id,
)
from companion.recognizer import (
    DEFAULT_MODEL,
    NONE_ID,
    Recognizer,
    RecognizerError,
    Settings,
    crop_card,
    crop_cards,
    crop_matrices,
    decode_heatmap,
    letterbox,
    quad_to_rbox,
    quads_to_rboxes,
)

SHARED_DECKS = Path(__file__).resolve().parents[3] / "shared" / "decks"
HELD_OUT = SHARED_DECKS / "traditional-scan"


def box(x, y, w=30, h=50):
    return [[x, y], [x + w, y], [x + w, y + h], [x, y + h]]


def int8_initializers(model) -> list[np.ndarray]:
    """The int8 tensors stored in an ONNX model: quantized weights and their zero points."""
    import onnx
    from onnx import numpy_helper

    return [
        numpy_helper.to_array(i)
        for i in model.graph.initializer
        if i.data_type == onnx.TensorProto.INT8
    ]


def test_the_committed_avx2_classifier_has_7_bit_weights_and_reads_as_the_float_one():
    # 8-bit weights overflow onnxruntime's 16-bit sums on CPUs without int8 dot products
    # (a loss of recall): 7-bit ones cannot, and the classifier's ends stay float
    pytest.importorskip("onnx")
    import onnx
    from companion_lab.training import float_ends

    meta = json.loads(DEFAULT_MODEL.read_text())
    nets = meta["avx2_nets"]
    assert nets["localizer"] == meta["float_nets"]["localizer"]
    model = onnx.load(str(DEFAULT_MODEL.parent / nets["classifier"]))
    weights = [w for w in int8_initializers(model) if w.size > 64]
    assert len(weights) >= 6  # the quantized convolutions and the first dense layer
    # two products of a uint8 pixel and a weight: 2 x 255 x 64 = 32,640 fits in 16 bits
    assert all(-64 <= w.min() and w.max() <= 64 for w in weights)
    # the first convolution reads the float pixels and float weights, no DequantizeLinear
    made_by = {o: n.op_type for n in model.graph.node for o in n.output}
    first = next(n for n in model.graph.node if n.op_type == "Conv")
    assert made_by[first.input[0]] == "Cast" and first.input[1] not in made_by
    float_net = onnx.load(str(DEFAULT_MODEL.parent / meta["float_nets"]["classifier"]))
    assert set(float_ends(float_net)) <= {n.name for n in model.graph.node if n.op_type in (
        "Conv", "Gemm", "Softmax", "Sigmoid")}  # fmt: skip
    # on the crops of a scene, it names the cards as the float classifier does
    frame, _ = bench_scene()
    rec = {k: Recognizer.load(DEFAULT_MODEL, nets=k) for k in ("float", "avx2")}
    st = rec["float"].settings
    det = rec["float"].detect(frame)
    matrices = crop_matrices(quads_to_rboxes(det.quads), st)
    crops = crop_cards(frame, matrices, st)
    assert np.array_equal(crops, np.stack([crop_card(frame, m, st) for m in matrices]))
    (p_float, _, c_float), (p_avx2, _, c_avx2) = (
        r.classifier.run(None, {"crop": crops}) for r in rec.values()
    )
    assert (p_float.argmax(axis=1) == p_avx2.argmax(axis=1)).all()
    assert np.abs(p_float - p_avx2).max() < 0.1 and np.abs(c_float - c_avx2).max() < 0.05


def test_fit_trees_learns_what_a_line_cannot():
    from companion_lab.acceptance import fit_logistic, fit_trees

    # a crop is a card where exactly one of two features is high: no straight line splits that
    rng = np.random.default_rng(0)
    a, b = rng.random(4000), rng.random(4000)
    x = np.column_stack([np.ones(4000), a, b])
    y = ((a > 0.5) ^ (b > 0.5)).astype(float)
    w = fit_logistic(x, y)
    line = ((x @ w > 0) == (y == 1)).mean()
    assert line < 0.7
    trees = fit_trees(x, y, x @ w, rounds=30, depth=3)
    assert ((x @ w + trees.logit(x) > 0) == (y == 1)).mean() > 0.97
    assert trees.features.shape == (30, 7) and trees.leaves.shape == (30, 8)
    # the bias column never splits anything: its nodes (the default) do not split at all
    assert np.isinf(trees.thresholds[trees.features == 0]).all()
    assert not np.isinf(trees.thresholds[:, 0]).any()  # every root splits
    again = fit_trees(x, y, x @ w, rounds=30, depth=3)
    assert again == trees  # deterministic
    # what the trees already explain is not fitted again: starting from the answer, nothing
    # is left to learn (each leaf's step is tiny)
    sure = np.where(y == 1, 12.0, -12.0)
    assert np.abs(fit_trees(x, y, sure, rounds=5).leaves).max() < 1e-3


def test_fit_logistic_recovers_the_weights_that_made_the_labels():
    from companion_lab.acceptance import fit_logistic

    rng = np.random.default_rng(7)
    x = np.column_stack([np.ones(20000), rng.normal(size=(20000, 2))])
    truth = np.array([-1.0, 2.0, -0.5])
    y = (rng.random(20000) < 1 / (1 + np.exp(-x @ truth))).astype(float)
    np.testing.assert_allclose(fit_logistic(x, y), truth, atol=0.1)


# the committed decode's last steps (detections.final_cards)
FINAL_STEPS = dict(
    nms_iou=0.6,
    same_card_iou=0.3,
    size_tolerance=0.25,
    size_keep_above=0.97,
    size_grow_below=0.08,
)


def test_localizer_targets_decode_back_to_the_boxes():
    from companion_lab.training import _loc_targets

    st = Settings()
    quads = np.array(
        [
            np.array(box(40.3, 30.7, 20, 33)),
            np.array(box(200.2, 100.1, 33, 20))[[1, 2, 3, 0]],  # lying sideways
        ],
        np.float32,
    )
    heat, reg, mask, weight = _loc_targets(quads, np.array([1.0, 0.8]), st)
    boxes = decode_heatmap(heat[None, None], reg[None], st)
    assert len(boxes) == 2
    for q in quads:
        cx, cy, w, h, theta = quad_to_rbox(q)
        b = boxes[np.argmin(np.hypot(boxes[:, 0] - cx, boxes[:, 1] - cy))]
        assert b[0] == pytest.approx(cx, abs=0.01) and b[1] == pytest.approx(cy, abs=0.01)
        assert b[2] == pytest.approx(w, rel=1e-3) and b[3] == pytest.approx(h, rel=1e-3)
        assert math.sin(b[4] - theta) == pytest.approx(0, abs=1e-3)  # same axis, modulo 180


def test_localizer_targets_weigh_face_down_centres_more():
    from companion_lab.training import BACK_HEAT_WEIGHT, _loc_targets

    st = Settings()
    quads = np.array([box(40.3, 30.7, 20, 33), box(200.2, 100.1, 20, 33)], np.float32)
    backs = np.array([False, True])
    heat, _, mask, weight = _loc_targets(quads, np.ones(2), st, backs, BACK_HEAT_WEIGHT)
    face, back = [
        (int(q[:, 1].mean() // st.inputs.stride), int(q[:, 0].mean() // st.inputs.stride))
        for q in quads
    ]
    assert heat[face] == heat[back] == 1.0 and mask[face] == mask[back] == 1.0
    assert weight[face] == 1.0 and weight[back] == BACK_HEAT_WEIGHT > 1
    assert np.count_nonzero(weight != 1.0) == 1
    # without flags, or by default (plain training), every centre weighs the same
    for args in ((), (backs,)):
        _, _, _, plain = _loc_targets(quads, np.ones(2), st, *args)
        assert np.all(plain == 1.0)


def test_localizer_targets_do_not_teach_a_card_past_the_frame_as_table():
    from companion_lab.training import _loc_targets

    st = Settings().with_(input_width=128, input_height=64, stride=4)
    # centres past the right edge (x 140) and the top (y -8): 40 % and 38 % of them in frame;
    # a third, mostly hidden, need not be found at all
    inside = np.array([box(20, 10, 20, 32)], np.float32)
    right = np.array([box(124, 10, 32, 20)], np.float32)
    top = np.array([box(60, -20, 20, 32)], np.float32)
    hidden = np.array([box(110, 40, 40, 20)], np.float32)  # x 110..150: centre past the edge
    quads = np.concatenate([inside, right, top, hidden])
    heat, _, mask, weight = _loc_targets(quads, np.array([1.0, 0.4, 0.38, 0.1]), st)
    assert mask.sum() == 1  # one centre on the grid: the card inside
    # the parts that show of the two cards past the frame: no answer is wrong there
    assert (weight[3:7, 31] == 0).all() and (weight[0:2, 15:20] == 0).all()
    assert (heat[3:7, 31] == 0).all()
    # the table, the card inside (its centre) and the hidden card's part keep their weight
    assert weight[15, 5] == 1 and weight[6, 7] == 1 and weight[12, 29] == 1
    rows, cols = np.nonzero(weight == 0)  # and nothing but those two parts goes unweighed
    assert ((cols == 31) | ((rows <= 3) & (cols >= 15) & (cols <= 20))).all()


def test_focal_loss_applies_a_centre_weight():
    torch = pytest.importorskip("torch")
    from companion_lab.training import focal_loss

    target = torch.zeros(1, 1, 4, 4)
    target[0, 0, 1, 1] = 1.0
    logits = torch.full((1, 1, 4, 4), -12.0)  # negatives all but certain: their loss is ~0
    logits[0, 0, 1, 1] = 0.0
    weight = torch.ones(1, 1, 4, 4)
    plain = focal_loss(logits, target, weight).item()
    weight[0, 0, 1, 1] = 3.0
    assert focal_loss(logits, target, weight).item() == pytest.approx(3 * plain, rel=1e-4)
    weight[0, 0, 1, 1] = 0.0  # a hidden card's don't-care patch does not erase a centre
    assert focal_loss(logits, target, weight).item() == pytest.approx(plain, rel=1e-4)


def test_scene_variant_renders_and_caches_apart(tmp_path):
    if not SHARED_DECKS.is_dir():
        pytest.skip("../shared/decks missing")
    from companion_lab import training

    from companion.simulator import synth

    decks = [str(SHARED_DECKS / "traditional-ngs")]
    seed = synth.scene_seed(11, 0)
    plain = training._render_cached(seed, decks, 320, 180, tmp_path)
    backs = training._render_cached(seed, decks, 320, 180, tmp_path, "backs")
    names = sorted(p.name for p in tmp_path.iterdir())
    v = synth.RENDER_VERSION
    assert names == [
        f"r{v}_traditional-ngs_320x180_{seed}.jpg",
        f"r{v}_traditional-ngs_320x180_{seed}.json",
        f"r{v}_traditional-ngs_320x180_{seed}_backs.jpg",
        f"r{v}_traditional-ngs_320x180_{seed}_backs.json",
    ]
    config = synth.SceneConfig(width=320, height=180, decks=tuple(decks))
    expected = synth.render_scene(seed, config.with_(**training.SCENE_VARIANTS["backs"]))
    assert backs.codes == [lab.card for lab in expected.labels]
    assert plain.codes == [lab.card for lab in synth.render_scene(seed, config).labels]
    again = training._render_cached(seed, decks, 320, 180, tmp_path, "backs")  # from the cache
    assert again.codes == backs.codes and np.array_equal(again.quads, backs.quads)


def test_scene_cache_is_not_read_across_render_versions(tmp_path, monkeypatch):
    if not SHARED_DECKS.is_dir():
        pytest.skip("../shared/decks missing")
    from companion_lab import training

    from companion.simulator import synth

    decks = [str(SHARED_DECKS / "traditional-ngs")]
    seed = synth.scene_seed(11, 1)
    monkeypatch.setattr(synth, "RENDER_VERSION", 1)
    old = training._render_cached(seed, decks, 320, 180, tmp_path)
    old_file = tmp_path / f"r1_traditional-ngs_320x180_{seed}.json"
    stale = json.loads(old_file.read_text())
    stale["codes"] = ["12-4"] * len(stale["codes"])  # what an older synth might have drawn
    old_file.write_text(json.dumps(stale))
    monkeypatch.setattr(synth, "RENDER_VERSION", 2)
    fresh = training._render_cached(seed, decks, 320, 180, tmp_path)
    assert fresh.codes == old.codes  # rendered again, not the stale entry
    assert (tmp_path / f"r2_traditional-ngs_320x180_{seed}.json").is_file()


def test_cascade_samples_label_proposed_boxes_by_the_card_they_cover():
    from companion_lab.training import SceneData, cascade_samples

    from companion.recognizer import rbox_quad

    st = Settings()
    quads = np.array([box(100, 100, 30, 50), box(300, 100, 30, 50)], np.float32)
    scene = SceneData(
        image=np.full((240, 400, 3), 90, np.uint8),
        codes=["08-1", "back"],
        quads=quads,
        visible=np.array([1.0, 1.0], np.float32),
        conditions={},
    )
    on_card = quad_to_rbox(quads[0])
    boxes = np.array(
        [
            on_card,
            (200, 200, 30, 50, math.pi / 2),  # bare table: a "none" crop
            (135, 125, 30, 50, math.pi / 2),  # a third on the card: no right answer, left out
            quad_to_rbox(quads[1]),
        ],
        np.float32,
    )
    crops, labels, flips, corners = cascade_samples(scene, boxes, st, np.random.default_rng(0))
    assert labels == [class_id("08-1"), NONE_ID, class_id("back")]
    assert all(c.shape == (st.inputs.crop_height, st.inputs.crop_width, 3) for c in crops)
    # a box exactly on the card: its corners sit at the crop's unenlarged frame
    margin = (1 - 1 / st.inputs.crop_enlarge) / 2
    assert sorted(np.round(corners[0].reshape(4, 2)[:, 0], 3)) == pytest.approx(
        [margin, margin, 1 - margin, 1 - margin], abs=1e-3
    )
    assert np.allclose(quad_to_rbox(rbox_quad(*on_card)), on_card, atol=1e-4)


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


needs_model = pytest.mark.skipif(not DEFAULT_MODEL.is_file(), reason="no committed model")


@pytest.fixture(scope="module")
def recognizer():
    return Recognizer.load(DEFAULT_MODEL)


def committed_model_copy(folder, float_nets: bool = True):
    """A copy of the committed model in ``folder`` (its int8 nets, and its float and avx2 sets
    unless ``float_nets`` is false: then its metadata names the int8 nets alone), to change or
    record into: the folder."""
    import shutil

    folder.mkdir()
    meta = json.loads(DEFAULT_MODEL.read_text())
    names = ["recognizer.json", "localizer.onnx", "classifier.onnx"]
    if float_nets:
        for key in ("float_nets", "avx2_nets"):
            names += meta.get(key, {}).values()
    for name in set(names):
        shutil.copy(DEFAULT_MODEL.parent / name, folder / name)
    if not float_nets:
        for key in ("float_nets", "avx2_nets"):
            meta.pop(key, None)
        (folder / "recognizer.json").write_text(json.dumps(meta, indent=2) + "\n")
    return folder


@needs_model
@pytest.mark.skipif(not HELD_OUT.is_dir(), reason="../shared/decks missing")
def test_cli_fit_acceptance_writes_the_rule_into_the_named_model(tmp_path):
    from companion.recognizer import ACCEPT_FEATURES

    model = committed_model_copy(tmp_path / "model", float_nets=False)
    meta = json.loads((model / "recognizer.json").read_text())
    meta["settings"].pop("accept_weights", None)  # a model fitted before the rule existed
    meta["settings"].pop("accept_trees", None)
    (model / "recognizer.json").write_text(json.dumps(meta))
    before = DEFAULT_MODEL.read_text()
    args = ["fit-acceptance", "--model", str(model), "--decks", "modern-mantia"]
    # three scenes where the committed nets make not one false find (seed 3):
    # nothing to tell cards from, a clear error
    result = CliRunner().invoke(main, [*args, "--n", "3", "--seed", "3", "--workers", "1"])
    assert result.exit_code != 0 and "needs both real cards and false finds" in result.output
    assert json.loads((model / "recognizer.json").read_text()) == meta  # nothing written
    result = CliRunner().invoke(main, [*args, "--n", "3", "--seed", "4", "--workers", "1"])
    assert result.exit_code == 0, result.output
    written = json.loads((model / "recognizer.json").read_text())
    weights = written["settings"]["accept_weights"]
    assert len(weights) == len(ACCEPT_FEATURES) and written["settings"]["accept_above"] == 0.7
    fit = written["training"]["acceptance"]
    assert fit["scenes"] == 3 and fit["decks"] == ["modern-mantia"] and fit["nets"] == "int8"
    assert fit["cards"] > 20 and fit["crops"] > fit["cards"] + fit["ignored"] and fit["seed"] == 4
    assert fit["trees"] == 100 and fit["tree_depth"] == 3
    assert fit["command"] == " ".join(
        ["companion", *args, "--seed", "4", "--n", "3", "--trees", "100", "--above", "0.7"]
    )
    assert "heat" in result.output and "100 trees of depth 3" in result.output
    # the model now decodes with the rule; a card still counts once it is likely enough
    rec = Recognizer.load(model / "recognizer.json")
    assert rec.settings.acceptance.accept_weights == tuple(weights)
    assert rec.settings.acceptance.accept_trees.leaves.shape == (100, 8)
    frame, labels = bench_scene()
    assert len(rec.detect(frame)) >= labels * 0.8
    assert DEFAULT_MODEL.read_text() == before  # the committed model is left alone
    # --trees 0: the weights alone, and their own default bar. From the model as it was before
    # the first fit: the rule in force decides which crops reach the decision (the first of two
    # looks at a card, second chances near found cards), so the same model fits the same line
    (model / "recognizer.json").write_text(json.dumps(meta))
    result = CliRunner().invoke(main, [*args, "--n", "3", "--seed", "4", "--trees", "0"])
    assert result.exit_code == 0, result.output
    written = json.loads((model / "recognizer.json").read_text())
    assert written["settings"]["accept_trees"] is None
    assert written["settings"]["accept_above"] == 0.75
    assert written["settings"]["accept_weights"] == weights  # the same crops, the same line
    assert Recognizer.load(model / "recognizer.json").settings.acceptance.accept_trees is None
    # a model that names no training decks needs --decks
    meta["training"].pop("decks")
    (model / "recognizer.json").write_text(json.dumps(meta))
    result = CliRunner().invoke(main, ["fit-acceptance", "--model", str(model), "--n", "1"])
    assert result.exit_code != 0 and "--decks" in result.output


@pytest.mark.parametrize("size", ["700x400", "768", "0x448", "wide"])
def test_cli_train_refuses_a_bad_input_size(size):
    result = CliRunner().invoke(main, ["train", "--input-size", size])
    assert result.exit_code == 2
    assert "--input-size" in result.output and "Traceback" not in result.output


def test_cli_train_localizer_only_needs_resume(tmp_path):
    pytest.importorskip("torch")
    for flags in (
        ["--localizer-only"],
        ["--classifier-only"],
        ["--back-scenes", "10"],
        ["--lens-scenes", "10"],
        ["--restyle-scenes", "10"],
        ["--lr-scale", "0.3"],
    ):
        result = CliRunner().invoke(main, ["train", "--out", str(tmp_path), *flags])
        assert result.exit_code == 2
        assert "--resume" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(
        main,
        ["train", "--out", str(tmp_path), "--resume", str(tmp_path)]
        + ["--localizer-only", "--classifier-only"],
    )
    assert result.exit_code == 2 and "exclude each other" in result.output
    assert not any(tmp_path.iterdir())


def test_cli_train_resume_needs_checkpoints(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "recognizer.json").write_text("{}")
    result = CliRunner().invoke(main, ["train", "--resume", str(tmp_path), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "checkpoints" in result.output and "Traceback" not in result.output


# --------------------------------------------------------------------------------------------
# render -> train -> export -> detect
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_tiny_training_run_end_to_end(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    if not SHARED_DECKS.is_dir():
        pytest.skip("../shared/decks missing")
    from companion_lab.training import TrainConfig, train

    meta = train(
        tmp_path,
        TrainConfig(
            decks=(str(SHARED_DECKS / "traditional-ngs"),),
            scenes=16,
            epochs=8,
            seed=3,
            tiny=True,
            scene_size=(640, 360),
            workers=2,
            command="pytest",
        ),
    )
    assert meta["classes"] == list(CLASSES)
    from companion_lab.training import CHOSEN_DECODE

    assert {k: meta["settings"][k] for k in CHOSEN_DECODE} == CHOSEN_DECODE
    losses = meta["training"]["losses"]
    assert losses["localizer_heat"][-1] < losses["localizer_heat"][0]
    assert losses["classifier_ce"][-1] < losses["classifier_ce"][0]
    rec = Recognizer.load(tmp_path / "recognizer.json")
    from companion.simulator import synth

    scene = synth.render_scene(
        5, synth.SceneConfig(width=640, height=360, decks=(str(SHARED_DECKS / "traditional-ngs"),))
    )
    det = rec.detect(scene.image)
    assert isinstance(det, Detections)
    assert det.quads.shape == (len(det), 4, 2)
    assert np.all((det.confidence >= 0) & (det.confidence <= 1))
    # the float nets stay beside the int8 ones: faster on CPUs without int8 dot products
    import onnx

    assert meta["float_nets"] == {
        "localizer": "localizer.float.onnx",
        "classifier": "classifier.float.onnx",
    }
    as_float = Recognizer.load(tmp_path / "recognizer.json", nets="float")
    assert as_float.nets == "float" and rec.nets in ("int8", "float", "avx2")
    float_det = as_float.detect(scene.image)
    assert float_det.quads.shape == (len(float_det), 4, 2)
    float_ops = {n.op_type for n in onnx.load(str(tmp_path / "localizer.float.onnx")).graph.node}
    assert "QuantizeLinear" not in float_ops
    # the float nets' input conversion is folded too: no Gather (BGR to RGB), no Mul (1/255)
    from companion_lab.training import fold_float_input_conversion

    assert meta["quantization"]["float_input_folded"] == ["localizer", "classifier"]
    for name in meta["float_nets"].values():
        ops = [n.op_type for n in onnx.load(str(tmp_path / name)).graph.node]
        assert ops[:3] == ["Transpose", "Cast", "Conv"], ops[:4]
        assert not fold_float_input_conversion(tmp_path / name)

    # the avx2 set: the float localizer, a classifier with 7-bit weights whose ends stay float

    from companion_lab.training import float_ends

    assert meta["avx2_nets"] == {
        "localizer": "localizer.float.onnx",
        "classifier": "classifier.avx2.onnx",
    }
    avx2_model = onnx.load(str(tmp_path / "classifier.avx2.onnx"))
    avx2_nodes = {n.name: n.op_type for n in avx2_model.graph.node}
    assert "QLinearConv" in avx2_nodes.values() or "QuantizeLinear" in avx2_nodes.values()
    kept = float_ends(onnx.load(str(tmp_path / "classifier.float.onnx")))
    assert len(kept) == 6 and all(avx2_nodes.get(name) for name in kept)
    assert [avx2_nodes[name] for name in kept] == ["Conv", "Gemm", "Gemm", "Gemm", "Softmax",
                                                    "Sigmoid"]  # fmt: skip
    int8_weights = int8_initializers(avx2_model)
    assert int8_weights and all(-64 <= w.min() and w.max() <= 64 for w in int8_weights)
    as_avx2 = Recognizer.load(tmp_path / "recognizer.json", nets="avx2")
    avx2_det = as_avx2.detect(scene.image)
    assert avx2_det.quads.shape == (len(avx2_det), 4, 2)
    assert "avx2" in meta["quantization"]

    # int8 export: the first convolution reads the uint8 pixels, its conversion chain is gone
    # (fold_input_conversion only rewrites a file whose outputs stay bit-identical)
    import onnx
    from companion_lab.training import fold_input_conversion

    assert meta["quantization"]["input_folded"] == ["localizer", "classifier"]
    for name in ("localizer.onnx", "classifier.onnx"):
        ops = {n.op_type for n in onnx.load(str(tmp_path / name)).graph.node}
        assert "QuantizeLinear" in ops and not ops & {"Cast", "Gather", "Mul"}
        assert not fold_input_conversion(tmp_path / name)  # nothing left to fold

    # a second stage resumes from the kept checkpoints at another input size
    from companion_lab import training
    from companion_lab.training import TrainConfig, resume

    peaks = []  # the peak learning rates the classifier's schedule (run here) was given
    schedule = training._Schedule

    class RecordedSchedule(schedule):
        def __init__(self, base, *args, **kwargs):
            peaks.append(base)
            super().__init__(base, *args, **kwargs)

    monkeypatch.setattr(training, "_Schedule", RecordedSchedule)
    resumed = resume(
        tmp_path / "resumed",
        tmp_path,
        TrainConfig(
            decks=(str(SHARED_DECKS / "traditional-ngs"),),
            scenes=8,
            seed=4,
            minutes=0.1,
            input_size=(320, 192),
            scene_size=(640, 360),
            command="pytest",
            workers=2,  # the samples are cut in a pool of processes
        ),
        lr_scale=0.5,
    )
    assert peaks == [training.RESUME_LR["classifier"] * 0.5]
    assert (resumed["settings"]["input_width"], resumed["settings"]["input_height"]) == (320, 192)
    stage = resumed["training"]["stages"][-1]
    assert stage["device"] == "cpu" and stage["batches"] == training.CPU_BATCHES
    assert stage["learning_rates"] == {k: v * 0.5 for k, v in training.RESUME_LR.items()}
    assert stage["crops"] > 0
    assert stage["losses"]["localizer_heat"] and stage["losses"]["classifier_ce"]
    assert (tmp_path / "resumed" / "checkpoints" / "localizer.pt").is_file()
    assert not (tmp_path / "resumed" / "resume-work").exists()
    det = Recognizer.load(tmp_path / "resumed").detect(scene.image)
    assert det.quads.shape == (len(det), 4, 2)

    # the checkpoints export again elsewhere (nets trained on another machine), history kept
    runner = CliRunner()
    args = ["train", "--export-from", str(tmp_path / "resumed"), "--out", str(tmp_path / "again")]
    result = runner.invoke(main, [*args, "--decks", str(SHARED_DECKS / "traditional-ngs")])
    assert result.exit_code == 0, result.output
    again = json.loads((tmp_path / "again" / "recognizer.json").read_text())
    kept_meta = json.loads((tmp_path / "resumed" / "recognizer.json").read_text())
    assert again["training"] == kept_meta["training"]
    assert again["settings"] == kept_meta["settings"]
    assert again["quantization"]["input_folded"] == ["localizer", "classifier"]
    assert again["quantization"]["float_input_folded"] == ["localizer", "classifier"]
    assert again["export"]["from"] == str(tmp_path / "resumed") and again["metrics"] == {}
    assert again["float_nets"] == meta["float_nets"] == resumed["float_nets"]
    assert again["avx2_nets"] == meta["avx2_nets"] == resumed["avx2_nets"]
    assert (tmp_path / "again" / "classifier.avx2.onnx").is_file()

    # two models of one shape export as the average of their weights: the first model and the
    # stage trained on from it, half and half
    import torch

    args = ["train", "--export-from", str(tmp_path), "--out", str(tmp_path / "mean")]
    decks = ["--decks", str(SHARED_DECKS / "traditional-ngs")]
    result = runner.invoke(main, [*args, *decks, "--average-with", str(tmp_path / "resumed")])
    assert result.exit_code == 0, result.output
    mean = json.loads((tmp_path / "mean" / "recognizer.json").read_text())
    first = json.loads((tmp_path / "recognizer.json").read_text())
    assert mean["settings"] == first["settings"]
    stages = mean["training"]["stages"]
    assert stages[:-1] == [*first["training"].get("stages", []), resumed["training"]["stages"][-1]]
    assert stages[-1]["averaged"] == {
        "with": str(tmp_path / "resumed"),
        "share": 0.5,
        "from": str(tmp_path),
    }
    assert mean["export"]["averaged_with"] == str(tmp_path / "resumed")
    assert not (tmp_path / "mean" / "averaged").exists()
    for net in ("localizer", "classifier"):
        a, b, m = (
            torch.load(folder / "checkpoints" / f"{net}.pt")
            for folder in (tmp_path, tmp_path / "resumed", tmp_path / "mean")
        )
        assert any(not torch.equal(a[k], b[k]) for k in a)
        for k in a:
            if a[k].is_floating_point():
                assert torch.allclose(m[k], (a[k] + b[k]) / 2), k
    det = Recognizer.load(tmp_path / "mean").detect(scene.image)
    assert det.quads.shape == (len(det), 4, 2)
    result = runner.invoke(main, ["train", "--average-with", str(tmp_path / "resumed")])
    assert result.exit_code == 2 and "add --export-from" in result.output
    result = runner.invoke(main, [*args, "--average-with", str(tmp_path), "--average-share", "1"])
    assert result.exit_code == 2
    assert (tmp_path / "again" / "classifier.float.onnx").is_file()
    assert (tmp_path / "again" / "checkpoints" / "classifier.pt").is_file()
    redo = Recognizer.load(tmp_path / "again").detect(scene.image)
    assert redo.quads.shape == (len(redo), 4, 2)
    result = runner.invoke(
        main, ["train", "--export-from", str(tmp_path / "again" / "checkpoints")]
    )
    assert result.exit_code == 2 and "no recognizer.json" in result.output
    (tmp_path / "again" / "recognizer.json").write_text("{not json")
    result = runner.invoke(main, ["train", "--export-from", str(tmp_path / "again")])
    assert result.exit_code == 2 and "unreadable" in result.output

    def one_net_stage(scenes, seed, localizer_only=False, classifier_only=False, **options):
        """A short stage of one net in place, also on as many scenes rich in face-down cards."""
        config = TrainConfig(
            decks=(str(SHARED_DECKS / "traditional-ngs"),),
            scenes=scenes,
            seed=seed,
            minutes=0.1,
            scene_size=(640, 360),
            command="pytest",
            back_scenes=scenes,
            **options,
        )
        return resume(
            tmp_path / "resumed",
            tmp_path / "resumed",
            config,
            localizer_only=localizer_only,
            classifier_only=classifier_only,
        )

    # a third stage trains the localizer alone, also on scenes rich in face-down cards, after
    # growing its low-resolution layers half as wide again
    kept = (tmp_path / "resumed" / "checkpoints" / "classifier.pt").read_bytes()
    third = one_net_stage(4, 4, localizer_only=True, deep_widths={"localizer": 1.5})
    stage = third["training"]["stages"][-1]
    assert stage["nets"] == "localizer" and stage["crops"] == 0
    assert stage["grown_to"] == {"localizer": 1.5}
    assert third["training"]["deep_widths"] == {"localizer": 1.5, "classifier": 1.0}
    assert "deep_widths" not in resumed["training"]
    assert stage["learning_rates"] == {
        "localizer": training.RESUME_LR["localizer"],
        "classifier": None,
    }
    assert stage["losses"]["localizer_heat"] and stage["losses"]["classifier_ce"] is None
    assert (
        stage["back_scenes"]["scenes"] == 4
        and "scene_seed(14," in stage["back_scenes"]["scene_seeds"]
    )
    assert (tmp_path / "resumed" / "checkpoints" / "classifier.pt").read_bytes() == kept
    assert len(third["training"]["stages"]) == len(resumed["training"]["stages"]) + 1
    det = Recognizer.load(tmp_path / "resumed").detect(scene.image)
    assert det.quads.shape == (len(det), 4, 2)
    # grown, the localizer of the avx2 set has 7-bit weights in its low-resolution layers
    assert third["avx2_nets"] == {
        "localizer": "localizer.avx2.onnx",
        "classifier": "classifier.avx2.onnx",
    }
    assert "7 convolutions of s16, s32, lat16, merge16" in third["quantization"]["avx2"]
    det = Recognizer.load(tmp_path / "resumed", nets="avx2").detect(scene.image)
    assert det.quads.shape == (len(det), 4, 2)

    # a fourth trains the classifier alone, on crops of both kinds of scenes
    kept = (tmp_path / "resumed" / "checkpoints" / "localizer.pt").read_bytes()
    old_classifier = (tmp_path / "resumed" / "checkpoints" / "classifier.pt").read_bytes()
    fourth = one_net_stage(
        3, 5, classifier_only=True, lens_scenes=2, restyle_scenes=1, deep_widths={"classifier": 2}
    )
    stage = fourth["training"]["stages"][-1]
    assert stage["nets"] == "classifier" and stage["grown_to"] == {"classifier": 2}
    # the localizer keeps the width it grew to in the stage before
    assert fourth["training"]["deep_widths"] == {"localizer": 1.5, "classifier": 2}
    assert stage["lens_scenes"]["scenes"] == 2
    assert "scene_seed(25," in stage["lens_scenes"]["scene_seeds"]
    assert stage["lens_scenes"]["config"]["p_lens"] == 1.0
    assert stage["restyle_scenes"]["scenes"] == 1
    assert "scene_seed(35," in stage["restyle_scenes"]["scene_seeds"]
    assert stage["restyle_scenes"]["config"]["p_restyle"] == 1.0
    assert "lens_scenes" not in third["training"]["stages"][-1]
    assert "restyle_scenes" not in third["training"]["stages"][-1]
    assert stage["learning_rates"] == {
        "localizer": None,
        "classifier": training.RESUME_LR["classifier"],
    }
    assert stage["losses"]["classifier_ce"] and stage["losses"]["localizer_heat"] is None
    assert (tmp_path / "resumed" / "checkpoints" / "localizer.pt").read_bytes() == kept
    assert (tmp_path / "resumed" / "checkpoints" / "classifier.pt").read_bytes() != old_classifier
    wide = Recognizer.load(tmp_path / "resumed")
    assert wide.detect(scene.image).quads.ndim == 3
    # the grown nets export again from their checkpoints at their own widths; none shrinks
    training.reexport(
        tmp_path / "resumed", tmp_path / "wide", [str(SHARED_DECKS / "traditional-ngs")]
    )
    assert Recognizer.load(tmp_path / "wide").detect(scene.image).quads.ndim == 3
    with pytest.raises(RecognizerError, match="grow but not shrink"):
        one_net_stage(3, 6, deep_widths={"localizer": 1.25})
    # the crops of the face-down scenes are in the stage: more than the 3 scenes alone give
    recipe = training.SampleRecipe(
        decks=(str(SHARED_DECKS / "traditional-ngs"),),
        scene_size=(640, 360),
        classifier=Settings().with_(input_width=768, input_height=448),
        key=(5, 4),
    )
    stage = TrainConfig(scenes=3, seed=5)
    plain = training.stage_data(recipe, stage)[1]
    with_backs = training.stage_data(recipe, replace(stage, back_scenes=3))[1]
    assert len(with_backs[0]) > len(plain[0])
    assert (with_backs[1] == class_id("back")).sum() > (plain[1] == class_id("back")).sum()
    # ...and of scenes seen through a lens: the plain crops first, then the lens scenes' own
    with_lens = training.stage_data(recipe, replace(stage, lens_scenes=2))[1]
    assert len(with_lens[0]) > len(plain[0])
    assert np.array_equal(with_lens[0][: len(plain[0])], plain[0])
    lens_seed = 5 + training.LENS_SCENES_SEED_OFFSET
    bent = training.render(synth.scene_seed(lens_seed, 0), recipe.decks, 640, 360, "lens")
    assert bent.conditions["lens_k"] != 0.0
    # ...and of scenes printed in inks of their own, after the plain crops too
    with_style = training.stage_data(recipe, replace(stage, restyle_scenes=2))[1]
    assert len(with_style[0]) > len(plain[0])
    assert np.array_equal(with_style[0][: len(plain[0])], plain[0])
    styled_seed = 5 + training.RESTYLE_SCENES_SEED_OFFSET
    styled = training.render(synth.scene_seed(styled_seed, 0), recipe.decks, 640, 360, "restyle")
    assert styled.conditions["deck_style"]["saturation"] > 0
    with pytest.raises(ValueError):
        resume(tmp_path / "resumed", tmp_path / "x", localizer_only=True, classifier_only=True)


def _device_style_quantized_net(path, constants_as_nodes: bool):
    """A quantized net's input chain as onnxruntime writes it (uint8 NHWC BGR -> Transpose ->
    Gather -> Cast -> Q/DQ -> Mul 1/255 -> Q/DQ -> Conv), with its constants stored as
    initializers, or as Constant nodes (quantized by a node of their own) as some torch
    versions export them."""
    import onnx
    from onnx import TensorProto, helper
    from onnx import numpy_helper as nh

    rng = np.random.default_rng(3)
    inits = [
        nh.from_array(np.float32(1.0), "s1"),
        nh.from_array(np.uint8(0), "z"),
        nh.from_array(np.float32(1 / 255), "s2"),
        nh.from_array(np.float32(1 / 255 / 127), "sf"),
        nh.from_array(rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8), "w_q"),
        nh.from_array(np.full(4, 0.01, np.float32), "w_s"),
        nh.from_array(np.zeros(4, np.int8), "w_z"),
        nh.from_array(np.float32(0.05), "s_out"),
    ]
    order = nh.from_array(np.int64([2, 1, 0]), "order")
    factor = nh.from_array(np.float32(1 / 255), "factor")
    nodes = [
        helper.make_node("Transpose", ["image"], ["t"], perm=[0, 3, 1, 2]),
        helper.make_node("Gather", ["t", "order"], ["g"], axis=1),
        helper.make_node("Cast", ["g"], ["c"], to=TensorProto.FLOAT),
        helper.make_node("QuantizeLinear", ["c", "s1", "z"], ["q1"]),
        helper.make_node("DequantizeLinear", ["q1", "s1", "z"], ["d1"]),
        helper.make_node("DequantizeLinear", ["factor_q", "sf", "z"], ["f"]),
        helper.make_node("Mul", ["d1", "f"], ["m"]),
        helper.make_node("QuantizeLinear", ["m", "s2", "z"], ["q2"]),
        helper.make_node("DequantizeLinear", ["q2", "s2", "z"], ["d2"]),
        helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["w"], axis=0),
        helper.make_node("Conv", ["d2", "w"], ["y"], pads=[1, 1, 1, 1]),
        # quantized output too, so that onnxruntime runs an integer convolution (as in the nets)
        helper.make_node("QuantizeLinear", ["y", "s_out", "z"], ["y_q"]),
        helper.make_node("DequantizeLinear", ["y_q", "s_out", "z"], ["out"]),
    ]
    if constants_as_nodes:
        nodes[:0] = [
            helper.make_node("Constant", [], ["order"], value=order),
            helper.make_node("Constant", [], ["factor_value"], value=factor),
            helper.make_node("QuantizeLinear", ["factor_value", "sf", "z"], ["factor_q"]),
        ]
    else:
        inits += [order, nh.from_array(np.uint8(127), "factor_q")]
    graph = helper.make_graph(
        nodes,
        "net",
        [helper.make_tensor_value_info("image", TensorProto.UINT8, [1, 16, 16, 3])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 16, 16])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(path))


@pytest.mark.parametrize("constants_as_nodes", [False, True])
def test_input_conversion_folds_whichever_way_the_constants_were_exported(
    tmp_path, constants_as_nodes
):
    pytest.importorskip("onnx")
    import onnx
    import onnxruntime as ort
    from companion_lab.training import fold_input_conversion

    path = tmp_path / "net.onnx"
    _device_style_quantized_net(path, constants_as_nodes)
    image = np.random.default_rng(4).integers(0, 256, (1, 16, 16, 3), dtype=np.uint8)

    def run():
        # basic optimizations run the nodes as written: fully optimized, onnxruntime's int8
        # convolutions saturate on CPUs without VNNI, differently for the two graphs
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return session.run(None, {"image": image})[0]

    before = run()
    assert fold_input_conversion(path, image)
    ops = [n.op_type for n in onnx.load(str(path)).graph.node]
    # the input dequantized once, straight into the convolution; the constants pruned
    assert ops == [
        "Transpose",
        *["DequantizeLinear"] * 2,
        "Conv",
        "QuantizeLinear",
        "DequantizeLinear",
    ]
    assert np.array_equal(run(), before)
    assert not fold_input_conversion(path)  # nothing left to fold


def _exported_float_net(path, bias: bool = True):
    """A float net's input chain as torch exports it (uint8 NHWC BGR -> Transpose -> Gather
    BGR to RGB -> Cast -> Mul 1/255 -> Conv), its constants as Constant nodes."""
    import onnx
    from onnx import TensorProto, helper
    from onnx import numpy_helper as nh

    rng = np.random.default_rng(5)
    inits = [nh.from_array(rng.normal(size=(4, 3, 3, 3)).astype(np.float32), "w")]
    conv_inputs = ["m", "w"]
    if bias:
        inits.append(nh.from_array(rng.normal(size=4).astype(np.float32), "b"))
        conv_inputs.append("b")
    nodes = [
        helper.make_node("Transpose", ["image"], ["t"], perm=[0, 3, 1, 2]),
        helper.make_node("Constant", [], ["order"], value=nh.from_array(np.int64([2, 1, 0]))),
        helper.make_node("Gather", ["t", "order"], ["g"], axis=1),
        helper.make_node("Cast", ["g"], ["c"], to=TensorProto.FLOAT),
        helper.make_node("Constant", [], ["f"], value=nh.from_array(np.float32(1 / 255))),
        helper.make_node("Mul", ["c", "f"], ["m"]),
        helper.make_node("Conv", conv_inputs, ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["y"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "net",
        [helper.make_tensor_value_info("image", TensorProto.UINT8, ["n", 16, 16, 3])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["n", 4, 16, 16])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(path))


@pytest.mark.parametrize("bias", [True, False])
def test_float_input_conversion_folds_into_the_first_convolution(tmp_path, bias):
    pytest.importorskip("onnx")
    import onnx
    import onnxruntime as ort
    from companion_lab.training import fold_float_input_conversion

    path = tmp_path / "net.onnx"
    _exported_float_net(path, bias)
    image = np.random.default_rng(6).integers(0, 256, (2, 16, 16, 3), dtype=np.uint8)

    def run():
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return session.run(None, {"image": image})[0]

    before = run()
    assert fold_float_input_conversion(path, image)
    # the channel order and the 1/255 now live in the convolution's weights
    assert [n.op_type for n in onnx.load(str(path)).graph.node] == [
        "Transpose",
        "Cast",
        "Conv",
        "Relu",
    ]
    np.testing.assert_allclose(run(), before, rtol=1e-5, atol=1e-5)
    assert not fold_float_input_conversion(path)  # nothing left to fold


def test_a_fold_that_would_change_the_outputs_leaves_the_file_alone(tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    from companion_lab import training

    path = tmp_path / "net.onnx"
    _exported_float_net(path)
    kept = path.read_bytes()
    # no change at all is allowed: even the float rounding of the rewrite is too much
    monkeypatch.setattr(training, "FOLD_TOLERANCE", -1.0)
    assert not training.fold_float_input_conversion(path)
    assert path.read_bytes() == kept


def _collect_and_report(queue):
    import gc

    gc.collect()  # in a forked child: frees what it inherited as garbage
    queue.put("done")


def test_a_forked_training_job_survives_an_onnxruntime_session_left_as_garbage():
    # A Recognizer in a reference cycle outlives its last use until the cycle collector runs.
    # Forked as it was, the child's collector freed it there and its thread pool's destructor
    # waited forever for threads that were not forked: training hung (once in a full test run,
    # after the earlier tests had left such sessions behind).
    import gc

    from companion_lab.training import start_forked

    gc.disable()
    try:
        rec = Recognizer.load(DEFAULT_MODEL, threads=2)
        rec.detect(bench_scene()[0])  # the thread pool's threads have waited for work
        rec.itself = rec
        del rec
        job, queue = start_forked(_collect_and_report)
    finally:
        gc.enable()
    job.join(60)
    if job.exitcode is None:
        job.kill()
    assert job.exitcode == 0
    assert queue.get(timeout=5) == "done"


@pytest.mark.slow
def test_stage_samples_do_not_depend_on_the_number_of_workers(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    if not SHARED_DECKS.is_dir():
        pytest.skip("../shared/decks missing")
    import tempfile

    from companion_lab.training import (
        SampleRecipe,
        TrainConfig,
        build_nets,
        stage_data,
        train_localizer,
    )

    # the workers hand their samples over in files of a temporary folder: none may be left
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    recipe = SampleRecipe(
        decks=(str(SHARED_DECKS / "traditional-ngs"),),
        scene_size=(480, 270),
        localizer=Settings().with_(input_width=320, input_height=192),
        classifier=Settings().with_(input_width=320, input_height=192),
        proposer=str(DEFAULT_MODEL.parent / "localizer.onnx"),
        propose=Settings().with_(input_width=320, input_height=192, heat_threshold=0.15),
        key=(7, 1),
    )
    config = TrainConfig(scenes=6, seed=5, back_scenes=2)
    one = stage_data(recipe, replace(config, workers=1))
    two = stage_data(recipe, replace(config, workers=2))
    assert len(one[0]) == len(two[0]) == 8  # 6 scenes and 2 of the "backs" variant
    for a, b in zip(one[0], two[0], strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert one[2] == two[2] > 0  # crops at the proposed boxes
    for x, y in zip(one[1], two[1], strict=True):
        assert np.array_equal(x, y)
    # another key, other random streams: other crops from the same scenes
    other = stage_data(
        SampleRecipe(**{**recipe.__dict__, "key": (7, 2)}), TrainConfig(scenes=6, seed=5)
    )
    assert not np.array_equal(other[1][0], one[1][0])
    assert list(tmp_path.glob("companion-samples-*")) == []

    # training moves the samples out of the list (so that they are not held twice)
    history = train_localizer(build_nets(tiny=True)[0], two[0], 1, np.random.default_rng(0))
    assert len(history) == 1 and np.isfinite(history[0])
    assert two[0] == [None] * 8


def test_grown_nets_compute_what_the_narrow_ones_did_and_can_still_learn():
    torch = pytest.importorskip("torch")
    from companion_lab.training import build_nets, grown_state

    narrow = build_nets(tiny=True)
    for net in narrow:  # batch-norm statistics of their own, not the fresh ones
        net.train()
        net(torch.rand(4, 3, 64, 96) if net is narrow[0] else torch.rand(4, 3, 80, 48))
    wide = build_nets(tiny=True, deep_widths={"localizer": 2.0, "classifier": 1.5})
    image, crops = torch.rand(2, 3, 64, 96), torch.rand(3, 3, 80, 48)
    for old, new, x in zip(narrow, wide, (image, crops), strict=True):
        assert sum(p.numel() for p in new.parameters()) > sum(p.numel() for p in old.parameters())
        new.load_state_dict(grown_state(old.state_dict(), new))
        old.eval(), new.eval()
        with torch.no_grad():
            for a, b in zip(old(x), new(x), strict=True):
                assert torch.allclose(a, b, atol=1e-5), (a - b).abs().max()
    # the new channels are not dead: one step of training reaches the weights reading them
    loc = wide[0]
    before = loc.merge16[0].weight.detach().clone()
    assert before[:, 32:].abs().sum() == 0  # 32 channels in the tiny net, 64 once grown
    loc.train()
    heat, reg = loc(image)
    (heat.mean() + reg.pow(2).mean()).backward()
    torch.optim.SGD(loc.parameters(), lr=0.1).step()
    assert loc.merge16[0].weight[:, 32:].abs().sum() > 0
    # a net cannot shrink, nor take another net's weights
    with pytest.raises(ValueError, match="cannot grow"):
        grown_state(wide[0].state_dict(), narrow[0])
    with pytest.raises(ValueError, match="not this net's"):
        grown_state(wide[1].state_dict(), narrow[0])


def test_a_grown_localizer_on_avx2_cpus_has_7_bit_deep_layers_and_finds_the_same_cards(tmp_path):
    # grown 2 wide, the committed localizer computes what it did (grown_state); its avx2
    # version quantizes only the stride-16 and -32 layers, which takes back half of what
    # growing them costs on CPUs without int8 dot products
    torch = pytest.importorskip("torch")
    import onnx
    from companion_lab import training

    from companion.bench.recognizer_speed import bench_scene

    meta = json.loads(DEFAULT_MODEL.read_text())
    settings = Settings.from_dict(meta["settings"])
    localizer, classifier = training.build_nets(deep_widths={"localizer": 2.0})
    checkpoints = DEFAULT_MODEL.parent / "checkpoints"
    old = torch.load(checkpoints / "localizer.pt", map_location="cpu")
    localizer.load_state_dict(training.grown_state(old, localizer))
    classifier.load_state_dict(torch.load(checkpoints / "classifier.pt", map_location="cpu"))
    training.export_onnx(localizer, classifier, tmp_path, settings)
    frame, _ = bench_scene()
    boxed, _ = letterbox(frame, settings)
    assert training.fold_float_input_conversion(tmp_path / "localizer.onnx", boxed[None])

    float_model = onnx.load(str(tmp_path / "localizer.onnx"))
    deep = training.deep_convs(float_model)
    assert len(deep) == 7
    assert {name.split("/")[2] for name in deep} == {"s16", "s32", "lat16", "merge16"}
    assert not training.deep_convs(onnx.load(str(tmp_path / "classifier.onnx")))
    quantized = tmp_path / "localizer.avx2.onnx"
    images = [boxed[None], letterbox(np.ascontiguousarray(frame[:, ::-1]), settings)[0][None]]
    assert training.quantize_deep_localizer(tmp_path / "localizer.onnx", quantized, images) == 7
    model = onnx.load(str(quantized))
    weights = [w for w in int8_initializers(model) if w.ndim == 4]  # not the zero points
    assert len(weights) == 7 and all(-64 <= w.min() and w.max() <= 64 for w in weights)
    made_by = {o: n.op_type for n in model.graph.node for o in n.output}
    first = next(n for n in model.graph.node if n.op_type == "Conv")
    assert made_by[first.input[0]] == "Cast" and first.input[1] not in made_by  # float there

    # the committed nets with this localizer find the committed avx2 nets' cards
    folder = tmp_path / "model"
    folder.mkdir()
    for name in {*meta["avx2_nets"].values(), meta["localizer"], meta["classifier"]}:
        (folder / name).write_bytes((DEFAULT_MODEL.parent / name).read_bytes())
    quantized.replace(folder / "localizer.avx2.onnx")
    grown = {**meta, "avx2_nets": {**meta["avx2_nets"], "localizer": "localizer.avx2.onnx"}}
    (folder / "recognizer.json").write_text(json.dumps(grown))
    ours = Recognizer.load(folder, nets="avx2").detect(frame)
    theirs = Recognizer.load(DEFAULT_MODEL, nets="avx2").detect(frame)
    assert len(theirs) >= 20
    assert sorted(ours.class_ids.tolist()) == sorted(theirs.class_ids.tolist())
    # a net without those layers' names is left alone: nothing written
    assert (
        training.quantize_deep_localizer(
            tmp_path / "classifier.onnx", tmp_path / "none.onnx", images
        )
        == 0
    )
    assert not (tmp_path / "none.onnx").exists()


def test_average_weights_takes_its_share_of_each_tensor_and_refuses_other_shapes(tmp_path):
    torch = pytest.importorskip("torch")
    from companion_lab.training import average_weights, build_nets, reexport

    narrow, wide = build_nets(tiny=True)[0], build_nets(tiny=True, deep_widths={"localizer": 2})[0]
    a = narrow.state_dict()
    b = {k: v + 1 if v.is_floating_point() else v + 7 for k, v in a.items()}
    mean = average_weights(a, b, 0.25)
    for k, v in a.items():
        if v.is_floating_point():
            assert torch.allclose(mean[k], v + 0.25), k
        else:  # batch counters are the later model's
            assert torch.equal(mean[k], b[k])
    with pytest.raises(ValueError, match="differ in shape"):
        average_weights(a, wide.state_dict(), 0.5)
    # models of two shapes are refused before anything is written
    for name, width in (("one", 1.0), ("two", 2.0)):
        (tmp_path / name / "checkpoints").mkdir(parents=True)
        (tmp_path / name / "checkpoints" / "localizer.pt").write_bytes(b"")
        training = {"deep_widths": {"localizer": width}} if width != 1.0 else {}
        (tmp_path / name / "recognizer.json").write_text(json.dumps({"training": training}))
    with pytest.raises(RecognizerError, match="not .* shape"):
        reexport(tmp_path / "one", tmp_path / "out", average_with=tmp_path / "two")
    with pytest.raises(RecognizerError, match="between 0 and 1"):
        reexport(tmp_path / "one", tmp_path / "out", average_with=tmp_path / "one", share=1.5)
    assert not (tmp_path / "out").exists()


def test_resume_grows_only_a_net_it_trains(tmp_path):
    pytest.importorskip("torch")
    from companion_lab.training import TrainConfig, resume

    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "localizer.pt").write_bytes(b"")
    meta = {"training": {"deep_widths": {"localizer": 2.0}}}
    (tmp_path / "recognizer.json").write_text(json.dumps(meta))
    with pytest.raises(RecognizerError, match="is 2 wide; a net can grow but not shrink"):
        resume(tmp_path / "out", tmp_path, TrainConfig(deep_widths={"localizer": 1.5}))
    with pytest.raises(RecognizerError, match="Only a net that trains"):
        resume(
            tmp_path / "out",
            tmp_path,
            TrainConfig(deep_widths={"localizer": 3}),
            classifier_only=True,
        )
    with pytest.raises(RecognizerError, match="Only a net that trains"):
        resume(
            tmp_path / "out",
            tmp_path,
            TrainConfig(deep_widths={"classifier": 2}),
            localizer_only=True,
        )
    assert not (tmp_path / "out").exists()
    result = CliRunner().invoke(
        main,
        ["train", "--resume", str(tmp_path), "--out", str(tmp_path / "o")]
        + ["--localizer-width", "0.5"],
    )
    assert result.exit_code == 2 and "0.5" in result.output and "Traceback" not in result.output


def test_train_device_is_checked():
    pytest.importorskip("torch")
    import torch
    from companion_lab.training import resolve_device

    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(RecognizerError, match="cpu, cuda or auto"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        result = CliRunner().invoke(main, ["train", "--device", "cuda", "--tiny", "--out", "x"])
        assert result.exit_code == 2 and "no CUDA GPU" in result.output


def test_classifier_training_can_leave_out_the_photometric_augmentation(monkeypatch):
    pytest.importorskip("torch")
    from companion_lab import training

    rng = np.random.default_rng(0)
    n = 8
    data = (
        rng.integers(0, 255, (n, 80, 48, 3), dtype=np.uint8),
        rng.integers(0, len(CLASSES), n),
        np.zeros(n, np.float32),
        np.zeros((n, 8), np.float32),
    )
    calls = []
    real_augment = training.augment
    monkeypatch.setattr(
        training, "augment", lambda x, r: calls.append(len(x)) or real_augment(x, r)
    )
    net = training.build_nets(tiny=True)[1]
    training.train_classifier(net, data, 1, rng, photometric=False)
    assert calls == []
    training.train_classifier(net, data, 1, rng)
    assert sum(calls) == n


def test_cli_augmentation_ablation_refuses_a_reference_without_checkpoints(tmp_path):
    pytest.importorskip("torch")
    result = CliRunner().invoke(main, ["ablate-augmentation", "--reference", str(tmp_path)])
    assert result.exit_code == 2
    assert "checkpoints/classifier.pt" in result.output


@pytest.mark.slow
def test_cli_augmentation_ablation_trains_three_arms_on_the_same_layouts():
    pytest.importorskip("torch")
    if not SHARED_DECKS.is_dir():
        pytest.skip("../shared/decks missing")
    result = CliRunner().invoke(
        main,
        ["ablate-augmentation", "--epochs", "1", "--scenes", "6", "--test-scenes", "3", "--tiny"],
    )
    assert result.exit_code == 0, result.output
    assert "renders+augment" in result.output and "reference" not in result.output
    report = json.loads(
        CliRunner()
        .invoke(
            main,
            ["ablate-augmentation", "--epochs", "1", "--scenes", "6", "--test-scenes", "3"]
            + [
                "--tiny",
                "--json",
                "--reference",
                str(Path(__file__).resolve().parents[2] / "companion" / "models"),
            ],
        )
        .stdout
    )
    arms = report["arms"]
    assert list(arms) == ["clean", "renders", "renders+augment"]
    assert [(a["realistic_renders"], a["photometric_augmentation"]) for a in arms.values()] == [
        (False, False),
        (True, False),
        (True, True),
    ]
    # the same scene layouts in every arm: as many cards to crop
    assert len({a["train_crops"] for a in arms.values()}) == 1
    for scored in [a["test"] for a in arms.values()] + [report["reference"]["test"]]:
        assert scored["realistic"]["card_crops"] == scored["clean"]["card_crops"] > 0
        for figures in scored.values():
            assert 0 <= figures["exact_accuracy"] <= figures["chaff_accuracy"] <= 1
    # the committed classifier names held-out cards (one tiny epoch cannot)
    assert report["reference"]["test"]["realistic"]["chaff_accuracy"] > 0.8


def _sleep_then_report(seconds, queue):
    time.sleep(seconds)
    queue.put("done")


def test_a_training_job_killed_for_memory_is_reported_not_waited_for():
    # The kernel's OOM killer ends a job without a word on its queue: the parent used to wait
    # for that word forever.
    import signal

    from companion_lab.training import start_forked, wait_for_report

    job, queue = start_forked(_sleep_then_report, 60)
    os.kill(job.pid, signal.SIGKILL)
    with pytest.raises(RuntimeError, match="exit code -9.*out of memory"):
        wait_for_report(job, queue, "localizer", poll=0.2)
    job, queue = start_forked(_sleep_then_report, 0.3)
    assert wait_for_report(job, queue, "localizer", poll=0.1) == "done"
    assert job.exitcode == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_training_job_ends_with_the_process_that_started_it(tmp_path):
    # A parent killed while training (out of memory, on 5,100 scenes) left its forked localizer
    # training on for nobody, holding half the machine's memory.
    pid_file = tmp_path / "child.pid"
    script = (
        "import os, sys, time\n"
        "from companion_lab.training import start_forked\n"
        "def job(path, queue):\n"
        "    open(path, 'w').write(str(os.getpid()))\n"
        "    time.sleep(120)\n"
        "start_forked(job, sys.argv[1])\n"
        "while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read():\n"
        "    time.sleep(0.05)\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(pid_file)], check=True, timeout=60)
    child = int(pid_file.read_text())

    def gone() -> bool:
        try:
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        return state in ("Z", "X")  # dead, not yet reaped

    deadline = time.monotonic() + 10
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone()


@pytest.mark.skipif(not HELD_OUT.is_dir(), reason="../shared/decks missing")
def test_fit_acceptance_takes_scenes_without_cards_where_the_localizer_still_finds_some(
    monkeypatch,
):
    # A stray outline on a bare table is a false find like any other: an empty scene must not
    # stop the fit (it once did, on a localizer that proposes something there).
    from types import SimpleNamespace

    from companion_lab import acceptance
    from companion_lab.acceptance import fit_acceptance

    from companion.recognizer import ACCEPT_FEATURES, DecodeTrace

    square = np.array([[0, 0], [60, 0], [60, 100], [0, 100]], np.float32)
    card = SimpleNamespace(quad=square, visible=1.0)
    scenes = [
        SimpleNamespace(image=np.zeros((8, 8, 3), np.uint8), labels=[card]),
        SimpleNamespace(image=np.zeros((8, 8, 3), np.uint8), labels=[]),
    ]
    monkeypatch.setattr(acceptance, "rendered_scenes", lambda config, seed, n, workers: iter(scenes))

    class Proposer:  # outlines the card where there is one, and a stray quad in every scene
        calls = 0

        def detect_traced(self, image):
            if self.calls == 0:
                quads, card_logits = np.stack([square, square + 300]), [3.0, -3.0]
            else:
                quads, card_logits = (square + 300)[None], [-3.0]
            self.calls += 1
            features = np.ones((len(quads), len(ACCEPT_FEATURES)))
            features[:, ACCEPT_FEATURES.index("card_logit")] = card_logits
            return Detections.empty(), DecodeTrace(candidates=[(quads, features)])

    fit = fit_acceptance(Proposer(), [HELD_OUT], n=2)
    assert fit.scenes == 2 and fit.crops == 3 and fit.cards == 1 and fit.ignored == 0
    assert fit.weights[ACCEPT_FEATURES.index("card_logit")] > 0

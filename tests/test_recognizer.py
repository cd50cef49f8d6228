"""Card recognizer: Detections stages, geometry shared by training and runtime, decoding, the
committed model's accuracy on held-out synthetic scenes, evaluation, drawing and bad input.
Training and fitting are tested with the lab (lab/tests)."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from companion.bench.evaluation import (
    false_positive_kinds,
    match_detections,
    missed_card_kinds,
)
from companion.bench.recognizer_speed import bench_scene
from companion.cli import main
from companion.detections import (
    BACK_ID,
    CLASSES,
    Detections,
    chaff_group,
    class_id,
    distances2,
    nms,
    nms_indices,
    polygon_area,
    polygon_areas,
    quad_iou,
    unique_cards,
)
from companion.game.cards import ALL_CODES, CardError
from companion.recognizer import (
    DEFAULT_MODEL,
    NONE_ID,
    Recognizer,
    RecognizerError,
    Settings,
    annotate,
    cool_peaks,
    crop_matrix,
    crop_targets,
    decode_heatmap,
    label_boxes,
    letterbox,
    neighbour_boxes,
    quad_to_rbox,
    read_image,
    row_boxes,
    spaced,
)

SHARED_DECKS = Path(__file__).resolve().parents[2] / "shared" / "decks"
HELD_OUT = SHARED_DECKS / "traditional-scan"


def box(x, y, w=30, h=50):
    return [[x, y], [x + w, y], [x + w, y + h], [x, y + h]]


def make_det(codes, xs, conf, alts=None):
    ids = [class_id(c) for c in codes]
    alt_ids = [[class_id(a) for a, _ in row] for row in alts] if alts else [[] for _ in codes]
    alt_scores = [[s for _, s in row] for row in alts] if alts else [[] for _ in codes]
    return Detections(
        quads=np.array([box(x, 0) for x in xs], np.float32),
        class_ids=np.array(ids),
        confidence=np.array(conf, np.float32),
        alt_ids=np.array(alt_ids).reshape(len(codes), -1),
        alt_scores=np.array(alt_scores, np.float32).reshape(len(codes), -1),
    )


# --------------------------------------------------------------------------------------------
# Detections
# --------------------------------------------------------------------------------------------


def test_classes_are_48_codes_then_back():
    assert CLASSES[:48] == tuple(ALL_CODES)
    assert CLASSES[BACK_ID] == "back" and len(CLASSES) == 49
    with pytest.raises(CardError):
        class_id("13-1")


def test_filter_by_mask_index_and_slice():
    det = make_det(["01-1", "02-1", "03-1"], [0, 100, 200], [0.9, 0.4, 0.7])
    strong = det[det.confidence > 0.5]
    assert strong.card_codes == ["01-1", "03-1"]
    assert strong.quads.shape == (2, 4, 2)
    assert det[1].card_codes == ["02-1"]
    assert len(det[np.array([2, 0])]) == 2 and det[np.array([2, 0])].card_codes == ["03-1", "01-1"]
    assert len(det[det.confidence > 2]) == 0
    assert det[det.confidence > 2].quads.shape == (0, 4, 2)
    assert det.sorted().card_codes == ["01-1", "03-1", "02-1"]


def test_json_round_trip():
    det = make_det(
        ["08-1", "back"],
        [0, 50],
        [0.91, 0.5],
        alts=[[("08-2", 0.05), ("back", 0.01)], [("01-1", 0.3), ("02-1", 0.1)]],
    )
    data = det.to_json()
    assert data[0]["card"] == "08-1" and data[0]["alternatives"][0] == {
        "card": "08-2",
        "confidence": 0.05,
    }
    assert data[1]["quad"] == [[50.0, 0.0], [80.0, 0.0], [80.0, 50.0], [50.0, 50.0]]
    back = Detections.from_json(json.loads(json.dumps(data)))
    assert back.card_codes == det.card_codes
    np.testing.assert_allclose(back.quads, det.quads)
    np.testing.assert_array_equal(back.alt_ids, det.alt_ids)


def test_quad_iou():
    a = np.array(box(0, 0, 10, 10), np.float32)
    assert quad_iou(a, a) == pytest.approx(1.0)
    assert quad_iou(a, np.array(box(20, 0, 10, 10), np.float32)) == 0.0
    # half overlap: 50 / 150; corner order and winding do not matter
    assert quad_iou(a, np.array(box(5, 0, 10, 10), np.float32)[::-1]) == pytest.approx(
        1 / 3, abs=1e-4
    )


def test_polygon_areas_match_polygon_area_one_by_one():
    from companion.recognizer import rbox_quad

    rng = np.random.default_rng(2)
    quads = np.array(
        [rbox_quad(*rng.uniform([0, 0, 8, 8, 0], [120, 80, 40, 70, np.pi])) for _ in range(12)],
        np.float32,
    )
    quads[1] = quads[1][::-1]  # either winding
    expected = [polygon_area(q) for q in quads]
    np.testing.assert_allclose(polygon_areas(quads), expected, rtol=1e-5)
    assert polygon_areas(np.array([box(0, 0, 10, 20)], np.float32))[0] == pytest.approx(200)


def test_size_check_median_equals_numpys_to_the_last_bit():
    from companion.detections import _median

    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 6, 7, 29, 30):
        values = rng.lognormal(size=n)
        assert _median(values) == float(np.median(values))
    assert _median(np.array([3.0, 1.0, 2.0, 10.0])) == 2.5


def test_nms_keeps_the_most_confident_of_overlapping_quads():
    det = make_det(["01-1", "01-2", "05-1"], [0, 2, 100], [0.6, 0.9, 0.8])
    out = nms(det, 0.5)
    assert sorted(out.card_codes) == ["01-2", "05-1"]


def test_nms_indices_name_the_kept_quads_best_first():
    quads = np.array([box(0, 0), box(2, 0), box(100, 0), box(200, 0)], np.float32)
    kept = nms_indices(quads, np.array([0.6, 0.9, 0.5, 0.8]), 0.5)
    assert kept.tolist() == [1, 3, 2]  # quad 0 lies under quad 1 (IoU 0.88)
    assert nms_indices(quads[:1], np.array([0.3]), 0.5).tolist() == [0]
    assert nms_indices(quads[:0], np.zeros(0), 0.5).tolist() == []


@pytest.mark.parametrize("seed", range(5))
def test_nms_indices_match_a_brute_force_pass(seed):
    # crowded, rotated, odd-sized quads; the bounding-box bound must never skip a real overlap
    from companion.recognizer import rbox_quad

    rng = np.random.default_rng(seed)
    n = 40
    quads = np.array(
        [rbox_quad(*rng.uniform([0, 0, 8, 8, 0], [120, 80, 40, 70, np.pi])) for _ in range(n)],
        np.float32,
    )
    scores = rng.uniform(size=n)
    for threshold in (0.3, 0.5, 0.6):
        order = np.argsort(-scores, kind="stable")
        kept = []
        for i in order:
            if all(quad_iou(quads[i], quads[k]) <= threshold for k in kept):
                kept.append(i)
        assert nms_indices(quads, scores, threshold).tolist() == kept


def test_distances2_is_the_squared_distance_matrix():
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(7, 2)) * 50
    expected = ((pts[:, None] - pts[None]) ** 2).sum(axis=2)
    assert np.allclose(distances2(pts[:, 0], pts[:, 1]), expected)


def _greedy_reference(boxes, spacing):
    """The plain one-box-at-a-time greedy pass that ``spaced`` must reproduce."""
    kept = []
    for i, b in enumerate(boxes):
        if all(
            np.hypot(*(b[:2] - boxes[k, :2])) >= spacing * min(b[2:4].min(), boxes[k, 2:4].min())
            for k in kept
        ):
            kept.append(i)
    return kept


@pytest.mark.parametrize("seed", range(6))
def test_spaced_is_the_greedy_pass_by_score(seed):
    rng = np.random.default_rng(seed)
    n = 60
    boxes = np.column_stack(
        [
            rng.uniform(0, 80, n),  # crowded: chains of neighbours take several rounds
            rng.uniform(0, 40, n),
            rng.uniform(10, 40, n),
            rng.uniform(10, 40, n),
            np.zeros(n),
            np.sort(rng.uniform(0.3, 1, n))[::-1],
        ]
    ).astype(np.float32)
    assert spaced(boxes, 0.4).tolist() == _greedy_reference(boxes, 0.4)


def test_spaced_decoding_finds_the_centres_a_ridge_hides():
    # two cards of a tight capture row, 1.5 cells apart: the heatmap shows one peak and a
    # shoulder; 3x3 maxima find one centre, a ridge-aware decode finds both
    st = Settings().with_(input_width=64, input_height=32, stride=4, heat_threshold=0.25)
    gh, gw = 8, 16
    yy, xx = np.mgrid[0:gh, 0:gw].astype(np.float32)
    heat = np.maximum(
        0.9 * np.exp(-((xx - 6) ** 2 + (yy - 4) ** 2) / 2.0),
        0.6 * np.exp(-((xx - 7.5) ** 2 + (yy - 4) ** 2) / 2.0),
    )
    reg = np.zeros((6, gh, gw), np.float32)
    reg[2] = np.log(24 / st.inputs.size_unit)  # 24 x 40 px cards: short side 6 cells
    reg[3] = np.log(40 / st.inputs.size_unit)
    reg[4] = 1.0
    peaks = decode_heatmap(heat[None, None], reg[None], st)
    assert len(peaks) == 1
    ridge = decode_heatmap(heat[None, None], reg[None], st.with_(peak_spacing=0.2))
    assert len(ridge) > 1
    assert tuple(ridge[0, :2]) == tuple(peaks[0, :2])  # the hottest cell comes first
    # no two candidates closer than 0.2 of the short side (4.8 px)
    gaps = np.sqrt(distances2(ridge[:, 0], ridge[:, 1]))[np.triu_indices(len(ridge), 1)]
    assert gaps.min() >= 4.8
    # a cell 2 cells away (8 px) on the shoulder is among them: the second card's centre
    assert any(abs(x - 8 * 4) < 0.01 and abs(y - 4 * 4) < 0.01 for x, y in ridge[:, :2])


def test_cool_peaks_are_the_maxima_under_the_heat_threshold():
    st = Settings().with_(
        input_width=64, input_height=32, stride=4, heat_threshold=0.25, extra_heat=0.1
    )
    heat = np.zeros((8, 16), np.float32)
    heat[2, 3], heat[5, 12], heat[4, 7], heat[6, 1] = 0.9, 0.4, 0.15, 0.05
    heat[4, 8] = 0.12  # beside the 0.15 peak: not a maximum
    reg = np.zeros((6, 8, 16), np.float32)
    warm = cv2.dilate(heat, np.ones((3, 3), np.uint8))
    cool = cool_peaks(heat[None, None], warm, reg[None], st)
    assert cool[:, 5].tolist() == pytest.approx([0.15])  # not the hot ones, not under 0.1
    assert tuple(cool[0, :2]) == (7 * 4, 4 * 4)
    assert decode_heatmap(heat[None, None], reg[None], st)[:, 5].tolist() == pytest.approx(
        [0.9, 0.4]
    )


def test_neighbour_boxes_step_across_and_along_the_card():
    # a 30x50 card whose long axis points down the image: across is x, along is y
    card = np.array([[100.0, 200.0, 30.0, 50.0, math.pi / 2]])
    boxes = neighbour_boxes(card, across=(1.0, 0.5), along=(1.0,))
    centres = {(round(x, 6), round(y, 6)) for x, y in boxes[:, :2]}
    assert centres == {(130, 200), (70, 200), (115, 200), (85, 200), (100, 250), (100, 150)}
    assert (boxes[:, 2:] == card[0, 2:]).all()  # same size and angle
    # turned by 90 degrees, across becomes y
    turned = neighbour_boxes(np.array([[100.0, 200.0, 30.0, 50.0, 0.0]]), across=(1.0,))
    assert {(round(x, 6), round(y, 6)) for x, y in turned[:, :2]} == {(100, 170), (100, 230)}
    assert neighbour_boxes(card).shape == (0, 5)
    assert neighbour_boxes(np.zeros((0, 5)), across=(1.0,)).shape == (0, 5)


def test_row_boxes_continue_a_fanned_row_and_fill_its_gaps():
    # 30x50 cards, long axis down the image: a row runs along x. Steps of half a card, then a
    # card missing between the second and the third
    row = [[100.0, 200.0, 30.0, 50.0, math.pi / 2], [115, 200, 30, 50, math.pi / 2]]
    row.append([145, 200, 30, 50, -math.pi / 2])  # upside down is the same row
    boxes = row_boxes(np.array(row))
    centres = sorted((round(x), round(y)) for x, y in boxes[:, :2])
    # one step on past the first card's neighbour, and back past the second's; halfway across
    # the gap from either side
    assert centres == [(85, 200), (130, 200), (130, 200), (130, 200)]
    assert (boxes[:, 2:4] == [30, 50]).all()
    # not a row: a card turned a quarter, of another size, or too far along its long axis
    for other in (
        [115, 200, 30, 50, 0.0],
        [115, 200, 45, 75, math.pi / 2],
        [115, 230, 30, 50, 1.57],
    ):
        assert row_boxes(np.array([row[0], other])).shape == (0, 5)
    # a field grid, cards a width and a half apart or more, makes no row
    assert row_boxes(np.array([row[0], [150, 200, 30, 50, math.pi / 2]])).shape == (0, 5)
    assert row_boxes(np.array(row[:1])).shape == (0, 5)
    # a degenerate quad found beside them pairs with nothing, and warns of nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flat = row_boxes(np.array([*row, [130, 200, 0.0, 0.0, 0.0]]))
    assert sorted((round(x), round(y)) for x, y in flat[:, :2]) == centres


class _Input:
    type = "tensor(uint8)"


class _FakeLocalizer:
    """A localizer whose heatmap is given: one cell per card centre."""

    def __init__(self, cells: dict, shape=(32, 64), card=(24, 40)):
        self.heat = np.zeros((1, 1, *shape), np.float32)
        for (cx, cy), value in cells.items():
            self.heat[0, 0, cy // 4, cx // 4] = value
        self.reg = np.zeros((1, 6, *shape), np.float32)
        self.reg[0, 2] = np.log(card[0] / 16.0)
        self.reg[0, 3] = np.log(card[1] / 16.0)
        self.reg[0, 4] = -1.0  # long axis down the image: 2 theta = 180 degrees

    def get_inputs(self):
        return [_Input()]

    def run(self, _outputs, _feeds):
        return self.heat, self.reg


class _FakeClassifier:
    """Names a crop by the colour at its centre: green 255 = a card (red = 5 x class id),
    sure; green 128 = that card, 70 % sure; black = no card. Corners: the whole crop but for
    the enlargement, i.e. the crop's box itself, moved (blue - 128) / 100 crop widths
    sideways where blue is not 0 (a card the crop saw off its centre)."""

    def get_inputs(self):
        return [_Input()]

    def run(self, _outputs, feeds):
        crops = feeds["crop"]
        n = len(crops)
        centre = crops[:, crops.shape[1] // 2, crops.shape[2] // 2].astype(int)  # BGR
        probs = np.full((n, len(CLASSES) + 1), 0.001, np.float32)
        for i, (_b, g, r) in enumerate(centre):
            if g > 200:
                probs[i, r // 5] = 0.97
            elif g > 100:
                probs[i, r // 5] = 0.7
            else:
                probs[i, -1] = 0.99
        e = (1 - 1 / 1.2) / 2
        corners = np.tile(np.float32([e, e, 1 - e, e, 1 - e, 1 - e, e, 1 - e]), (n, 1))
        shift = np.where(centre[:, 0] > 0, (centre[:, 0] - 128) / 100, 0.0)
        corners[:, 0::2] += shift[:, None].astype(np.float32)
        return probs, np.zeros((n, 1), np.float32), corners


def _paint(image, centre, cid, green=255):
    x, y = centre
    image[y - 20 : y + 20, x - 12 : x + 12] = (0, green, 5 * cid)


def test_second_chances_find_the_cards_the_localizer_barely_saw():
    a, beside, cool, unsure, empty = (60, 60), (84, 60), (180, 60), (220, 60), (36, 60)
    image = np.zeros((128, 256, 3), np.uint8)
    _paint(image, a, 5)
    _paint(image, beside, 9)  # the next card of a row: the localizer saw it only faintly
    _paint(image, cool, 20)  # a card under the heat threshold
    _paint(image, unsure, 30, green=128)  # under the threshold, and the classifier unsure
    heat = {a: 0.9, beside: 0.06, cool: 0.15, unsure: 0.15, empty: 0.2}
    st = Settings().with_(input_width=256, input_height=128, min_confidence=0.6, refine_steps=1)
    recognizer = Recognizer(_FakeLocalizer(heat), _FakeClassifier(), st)

    def found(settings):
        recognizer.settings = settings
        det = recognizer.detect(image)
        return sorted(CLASSES[c] for c in det.class_ids), det

    assert found(st)[0] == ["02-2"]  # the hot peak only
    chances = st.with_(
        extra_heat=0.1, neighbour_across=(1.0,), neighbour_along=(1.0,), neighbour_heat=0.05
    )
    names, det = found(chances)
    assert names == ["02-2", "03-2", "06-1"]
    np.testing.assert_allclose(
        det.quads[det.class_ids == class_id("03-2")][0], box(72, 40, 24, 40), atol=1e-3
    )
    # the neighbour is looked for only where the heatmap is warm enough
    assert found(chances.with_(neighbour_heat=0.1))[0] == ["02-2", "06-1"]
    # ... and only beside a card at least extra_confidence sure
    assert found(chances.with_(extra_confidence=0.98))[0] == ["02-2"]
    # settings as stored in a model's JSON metadata
    assert Settings.from_dict(json.loads(json.dumps(chances.to_dict()))) == chances


def test_row_steps_find_the_covered_card_between_two_found_ones():
    # a fanned row: 02-2 and 04-1 found, 03-2 between them barely seen by the localizer and
    # nearer either than the neighbour boxes are looked at (half a short side)
    a, between, c = (60, 60), (74, 60), (88, 60)
    image = np.zeros((128, 256, 3), np.uint8)
    _paint(image, a, 5)
    _paint(image, c, 12)
    _paint(image, between, 9)  # on top here; the fake classifier reads the crop's centre
    heat = {a: 0.9, c: 0.9, between: 0.15}
    st = Settings().with_(
        input_width=256,
        input_height=128,
        min_confidence=0.6,
        refine_steps=1,
        neighbour_across=(1.0,),
        neighbour_heat=0.1,
    )
    recognizer = Recognizer(_FakeLocalizer(heat), _FakeClassifier(), st)

    def found(settings):
        recognizer.settings = settings
        return sorted(CLASSES[c] for c in recognizer.detect(image).class_ids)

    assert found(st) == ["02-2", "04-1"]
    rows = st.with_(row_steps=True)
    assert found(rows) == ["02-2", "03-2", "04-1"]
    # only where the heatmap is warm enough, as for the neighbours
    assert found(rows.with_(neighbour_heat=0.2)) == ["02-2", "04-1"]
    assert Settings.from_dict(json.loads(json.dumps(rows.to_dict()))) == rows


def test_int8_nets_are_taken_where_the_cpu_has_int8_dot_products():
    from companion.recognizer import int8_is_fast

    avx2 = "flags\t\t: fpu sse2 avx avx2 fma"
    assert not int8_is_fast(avx2, "x86_64")
    assert int8_is_fast(avx2 + " avx512f avx512_vnni", "x86_64")
    assert int8_is_fast(avx2 + " avx_vnni", "x86_64")
    assert int8_is_fast("Features\t: fp asimd asimddp", "aarch64")
    assert not int8_is_fast("Features\t: fp asimd", "aarch64")
    assert not int8_is_fast("", "x86_64")  # no /proc/cpuinfo: float


def test_auto_takes_the_set_of_nets_made_for_the_cpu():
    from companion.recognizer import auto_nets

    avx2, vnni = "flags\t\t: fpu sse2 avx avx2 fma", "flags\t\t: avx2 avx512_vnni"
    every = ("int8", "float", "avx2")
    assert auto_nets(every, vnni, "x86_64") == "int8"
    assert auto_nets(every, avx2, "x86_64") == "avx2"
    assert auto_nets(every, "Features\t: fp asimd", "aarch64") == "float"  # 7-bit: x86 only
    assert auto_nets(every, "Features\t: fp asimd asimddp", "aarch64") == "int8"
    # older models: what they have
    assert auto_nets(("int8", "float"), avx2, "x86_64") == "float"
    assert auto_nets(("int8",), avx2, "x86_64") == "int8"
    assert auto_nets(("int8",), "Features\t: fp asimd", "aarch64") == "int8"


def test_the_nets_option_offers_every_set():
    from companion.cli.vision import nets_option
    from companion.recognizer import NETS

    @nets_option
    def command(nets):
        return nets

    assert list(command.__click_params__[0].type.choices) == list(NETS)


def test_load_picks_the_nets_asked_for(tmp_path):
    int8_only = committed_model_copy(tmp_path / "model", float_nets=False) / "recognizer.json"
    # a model with int8 nets only runs them whatever the CPU
    assert Recognizer.load(int8_only).nets == "int8"
    for nets in ("float", "avx2"):  # said as it is, not as unreadable metadata
        with pytest.raises(RecognizerError, match=f"^The model .* has no {nets} nets\\.$"):
            Recognizer.load(int8_only, nets=nets)
    with pytest.raises(RecognizerError, match="nets is one of"):
        Recognizer.load(int8_only, nets="fp16")
    # the committed model has all three sets, and each finds the cards of a scene
    frame, labels = bench_scene()
    found = {}
    for nets in ("int8", "float", "avx2"):
        rec = Recognizer.load(DEFAULT_MODEL, nets=nets)
        assert rec.nets == nets
        found[nets] = len(rec.detect(frame))
    assert all(n >= labels * 0.8 for n in found.values()), (found, labels)


def test_the_committed_nets_read_the_pixels_with_no_conversion_chain():
    # the speed figures of the model card rely on it: a re-export that leaves the input
    # conversion unfolded (as onnxruntime elsewhere may) costs time at every frame
    pytest.importorskip("onnx")
    import onnx

    meta = json.loads(DEFAULT_MODEL.read_text())
    assert meta["quantization"]["input_folded"] == ["localizer", "classifier"]
    assert meta["quantization"]["float_input_folded"] == ["localizer", "classifier"]
    for key in ("localizer", "classifier"):
        for name in (meta[key], meta["float_nets"][key], meta["avx2_nets"][key]):
            ops = {n.op_type for n in onnx.load(str(DEFAULT_MODEL.parent / name)).graph.node}
            # BGR to RGB was a Gather, the 1/255 a Mul: neither is used anywhere else
            assert not ops & {"Gather", "Mul"}, (name, ops)


def _hot_and_lukewarm(min_confidence: float):
    """Two cards the classifier names 70 % sure: 02-2 where the localizer is sure of a card,
    06-1 where it barely is (the unsure name there is more often a false card). Returns the
    settings and found(settings) -> (sorted codes, detections)."""
    hot, lukewarm = (60, 60), (180, 60)
    image = np.zeros((128, 256, 3), np.uint8)
    _paint(image, hot, 5, green=128)
    _paint(image, lukewarm, 20, green=128)
    st = Settings().with_(input_width=256, input_height=128, min_confidence=min_confidence)
    recognizer = Recognizer(_FakeLocalizer({hot: 0.9, lukewarm: 0.3}), _FakeClassifier(), st)

    def found(settings):
        recognizer.settings = settings
        det = recognizer.detect(image)
        return sorted(CLASSES[c] for c in det.class_ids), det

    return st, found


def test_a_card_at_a_hot_place_needs_less_confidence():
    st, found_with_det = _hot_and_lukewarm(min_confidence=0.8)

    def found(settings):
        return found_with_det(settings)[0]

    assert found(st) == []  # both under min_confidence
    rule = st.with_(hot_heat=0.6, hot_confidence=0.5)
    assert found(rule) == ["02-2"]
    assert found(rule.with_(hot_heat=0.2)) == ["02-2", "06-1"]  # both places hot enough
    assert found(rule.with_(hot_confidence=0.75)) == []  # 70 % is still too unsure
    assert found(rule.with_(hot_heat=0.0)) == []  # off
    assert Settings.from_dict(json.loads(json.dumps(rule.to_dict()))) == rule


def _weights(**named):
    from companion.recognizer import ACCEPT_FEATURES

    return tuple(float(named.get(name, 0.0)) for name in ACCEPT_FEATURES)


def test_a_learned_acceptance_rule_replaces_the_thresholds():
    # the same two 70 %-sure cards: a rule that trusts the localizer's heat keeps the card at
    # the hot place and drops the other, whatever min_confidence says
    st, found = _hot_and_lukewarm(min_confidence=0.9)
    assert found(st)[0] == []  # the thresholds: both too unsure
    rule = st.with_(accept_weights=_weights(bias=-3.0, heat=5.0), accept_above=0.5)
    names, det = found(rule)
    assert names == ["02-2"]  # 1 / (1 + e^-1.5) = 0.82 at the hot place, 0.18 at the other
    assert det.confidence[0] == pytest.approx(0.7)  # the card's confidence stays the classifier's
    assert found(rule.with_(accept_above=0.9))[0] == []
    # the classifier's sureness counts too: a logit of 0.85 (70 %) times 4 lifts both
    assert found(rule.with_(accept_weights=_weights(bias=-3.0, heat=5.0, card_logit=4.0)))[0] == [
        "02-2",
        "06-1",
    ]
    assert Settings.from_dict(json.loads(json.dumps(rule.to_dict()))) == rule
    with pytest.raises(RecognizerError, match="accept_weights has 2 weights"):
        Settings().with_(accept_weights=(1.0, 2.0))


def _stump(feature: str, above: float, left: float, right: float):
    """One tree of depth 1: ``right`` added to the logit where ``feature`` > ``above``."""
    from companion.recognizer import ACCEPT_FEATURES, AcceptTrees

    return AcceptTrees(
        features=np.array([[ACCEPT_FEATURES.index(feature)]]),
        thresholds=np.array([[above]]),
        leaves=np.array([[left, right]]),
    )


def test_boosted_trees_bend_the_learned_rule():
    from companion.recognizer import AcceptTrees, accept_probability

    st, found = _hot_and_lukewarm(min_confidence=0.9)
    rule = st.with_(accept_weights=_weights(bias=-3.0, heat=5.0), accept_above=0.5)
    assert found(rule)[0] == ["02-2"]  # the line alone: 0.82 at the hot place, 0.18 elsewhere
    # a tree that turns it round: -5 to the logit where the heat is over 0.5, +5 elsewhere
    bent = rule.with_(accept_trees=_stump("heat", 0.5, 5.0, -5.0))
    assert found(bent)[0] == ["06-1"]
    # trees add up: a second one that lifts every crop keeps both
    lift = _stump("bias", 2.0, 6.0, 0.0)  # the bias is 1, never over 2: always the left leaf
    both = AcceptTrees(
        features=np.vstack([bent.acceptance.accept_trees.features, lift.features]),
        thresholds=np.vstack([bent.acceptance.accept_trees.thresholds, lift.thresholds]),
        leaves=np.vstack([bent.acceptance.accept_trees.leaves, lift.leaves]),
    )
    assert found(rule.with_(accept_trees=both))[0] == ["02-2", "06-1"]
    # written into the metadata and read back, equal, infinite thresholds (a node that does not
    # split) included
    unsplit = bent.with_(accept_trees=_stump("heat", np.inf, 5.0, -5.0))
    for settings in (bent, unsplit):
        text = json.dumps(settings.to_dict(), allow_nan=False)
        assert Settings.from_dict(json.loads(text)) == settings
    assert json.loads(json.dumps(unsplit.to_dict()))["accept_trees"]["thresholds"] == [[None]]
    assert found(unsplit)[0] == ["02-2", "06-1"]  # every crop takes the left leaf: +5
    # a frame where no crop reaches the rule
    assert bent.acceptance.accept_trees.logit(np.zeros((0, 10))).shape == (0,)
    assert accept_probability(np.zeros((0, 10)), bent).shape == (0,)
    with pytest.raises(RecognizerError, match="need the weights"):
        Settings().with_(accept_trees=bent.acceptance.accept_trees)
    with pytest.raises(RecognizerError, match="2\\*\\*depth leaves"):
        AcceptTrees(np.zeros((1, 1), int), np.zeros((1, 1)), np.zeros((1, 3)))
    with pytest.raises(RecognizerError, match="outside the 10 features"):
        AcceptTrees(np.full((1, 1), 10), np.zeros((1, 1)), np.zeros((1, 2)))
    with pytest.raises(RecognizerError, match="accept_trees is unreadable"):
        Settings.from_dict({**rule.to_dict(), "accept_trees": {"features": [[0]]}})


def test_settings_are_grouped_but_stored_flat_as_models_always_wrote_them():
    flat = json.loads(DEFAULT_MODEL.read_text())["settings"]
    settings = Settings.from_dict(flat)
    # each constant lies in the group that says what it is for
    assert settings.inputs.input_width == flat["input_width"]
    assert settings.candidates.peak_spacing == flat["peak_spacing"]
    assert settings.second_chances.neighbour_across == tuple(flat["neighbour_across"])
    assert settings.acceptance.accept_above == flat["accept_above"]
    assert settings.final_steps.same_card_iou == flat["same_card_iou"]
    # written back flat, with the same names in the same order: the same JSON text
    assert json.dumps(settings.to_dict()) == json.dumps(flat)
    assert Settings.from_dict({}) == Settings()
    assert Settings.from_dict({"retired_constant": 1}) == Settings()  # older models still load
    # with_ routes flat names to their groups and leaves the rest alone
    changed = settings.with_(heat_threshold=0.15, input_width=320, row_steps=False)
    assert (changed.candidates.heat_threshold, changed.inputs.input_width) == (0.15, 320)
    assert changed.second_chances.row_steps is False
    assert changed.inputs.input_height == settings.inputs.input_height
    assert changed.acceptance == settings.acceptance and changed.final_steps == settings.final_steps
    assert settings.candidates.heat_threshold == flat["heat_threshold"]  # frozen: a new object
    with pytest.raises(TypeError, match="no constant named 'heat'"):
        settings.with_(heat=0.1)


def test_the_learned_rule_also_says_which_claimant_of_a_card_keeps_it():
    # one card's name found twice: 70 % sure where the localizer is sure of a card, 97 % sure
    # where it barely is (a card box's art looks like that); one card exists once
    hot, lukewarm = (60, 60), (180, 60)
    image = np.zeros((128, 256, 3), np.uint8)
    _paint(image, hot, 5, green=128)
    _paint(image, lukewarm, 5)
    st = Settings().with_(input_width=256, input_height=128, min_confidence=0.6)
    recognizer = Recognizer(_FakeLocalizer({hot: 0.9, lukewarm: 0.3}), _FakeClassifier(), st)

    def holder(settings):
        recognizer.settings = settings
        det = recognizer.detect(image)
        assert det.card_codes == ["02-2"]
        return tuple(det.quads[0].mean(axis=0).round())

    assert holder(st) == lukewarm  # the thresholds: the surer name wins
    # a rule that trusts the heat more: both count as cards, and the likelier one keeps the name
    rule = st.with_(accept_weights=_weights(bias=-3.0, heat=8.0, card_logit=1.0))
    assert holder(rule) == hot
    assert recognizer.detect(image).confidence[0] == pytest.approx(0.7)  # still the name's


def _names_and_x(recognizer, image, settings):
    """The cards ``recognizer`` finds in ``image`` with ``settings``: (code, centre x), sorted."""
    recognizer.settings = settings
    det = recognizer.detect(image)
    return sorted(
        (code, round(float(x))) for code, (x, _y) in zip(det.card_codes, det.centers, strict=True)
    )


def test_of_two_crops_of_one_card_the_likelier_by_the_rule_gets_looked_at_again():
    # two candidates 4 px apart see one card: the one at x=60 reads it 70 % sure, the one at
    # x=64 97 % sure; only one of them goes on (the other saw the same card again)
    image = np.zeros((128, 256, 3), np.uint8)
    image[40:80, 48:62] = (0, 128, 25)
    image[40:80, 62:76] = (0, 255, 25)
    localizer = _FakeLocalizer({(60, 60): 0.9, (64, 60): 0.8})
    st = Settings().with_(input_width=256, input_height=128, min_confidence=0.6, peak_spacing=0.1)
    recognizer = Recognizer(localizer, _FakeClassifier(), st)

    def found(settings):
        return _names_and_x(recognizer, image, settings)

    assert found(st) == [("02-2", 64)]  # no rule: the surer name goes on
    # a rule (contrived) that trusts a 70 % name more than a 97 % one keeps the other crop,
    # which it then accepts; were the surer crop kept, the rule would reject it
    rule = st.with_(accept_weights=_weights(bias=3.0, card_logit=-1.0))
    assert found(rule) == [("02-2", 60)]


def test_with_a_learned_rule_a_second_chance_near_a_found_card_is_kept():
    # a tight capture row: a card found at x=60, the next card's centre 8 px on (under half
    # its 24 px short side), seen only by a second chance at a cool peak 28 px on (its heat
    # cell), whose crop outlines the card off its own centre. The fake classifier reads one
    # pixel.
    image = np.zeros((128, 256, 3), np.uint8)
    image[58:62, 58:62] = (0, 255, 25)  # 02-2, found
    image[58:62, 88:92] = (59, 255, 45)  # 03-2 seen 20 px left of the second chance's centre
    image[58:62, 68:72] = (0, 255, 45)  # ...and there, when it is cut again around it
    localizer = _FakeLocalizer({(60, 60): 0.9, (90, 60): 0.15})
    st = Settings().with_(input_width=256, input_height=128, min_confidence=0.6, extra_heat=0.1)
    recognizer = Recognizer(localizer, _FakeClassifier(), st)

    def found(settings):
        return _names_and_x(recognizer, image, settings)

    # no rule: a second chance that near a found card is taken for that card again
    assert found(st) == [("02-2", 60)]
    # a rule (here one that accepts any card) ranks the claimants and settles duplicates in
    # NMS and one card once, so the second chance is kept: the quads overlap by IoU 0.4
    rule = st.with_(accept_weights=_weights(bias=3.0))
    assert found(rule) == [("02-2", 60), ("03-2", 68)]


def test_frame_position_says_whether_a_card_reaches_past_the_frame():
    from companion.bench.evaluation import frame_position

    assert frame_position(box(10, 10), 100, 80) == "inside"
    assert frame_position(box(70, 10), 100, 80) == "inside"  # its right side on the edge
    assert frame_position(box(80, 10), 100, 80) == "cut by the edge"  # x 80..110, centre 95
    assert frame_position(box(-10, 10), 100, 80) == "cut by the edge"  # x -10..20, centre 5
    assert frame_position(box(-20, 10), 100, 80) == "centre outside"  # centre at x -5
    assert frame_position(box(90, 10), 100, 80) == "centre outside"  # centre at x 105
    assert frame_position(box(10, 50), 100, 80) == "cut by the edge"  # y 50..100, centre 75


def test_acceptance_features_say_what_a_crop_looks_like_among_the_others():
    from companion.recognizer import ACCEPT_FEATURES, NONE_ID, acceptance_features

    quads = _cards_in_perspective(n=8, odd_scale=1.5).quads
    square = np.float32(box(900, 100, 60, 60))[None]  # no card's shape
    quads = np.concatenate([quads, square]).astype(np.float32)
    n = len(quads)
    probs = np.full((n, NONE_ID + 1), 0.0, np.float32)
    cards = [class_id(c) for c in ("01-1", "02-1", "03-1", "04-1", "05-1", "06-1", "07-1")]
    for i, c in enumerate(cards):
        probs[i, c] = 0.95
    probs[7, BACK_ID] = 0.9  # the odd-sized one is a back
    probs[8, class_id("01-1")] = 0.6  # the square names the first card again, less surely
    probs[:, NONE_ID] = 1 - probs[:, :NONE_ID].sum(axis=1)
    flip = np.full((n, 1), 0.5, np.float32)
    flip[:7] = 0.02
    features = acceptance_features(probs, flip, quads, np.linspace(0.1, 0.9, n))
    f = {name: features[:, i] for i, name in enumerate(ACCEPT_FEATURES)}
    assert features.shape == (n, len(ACCEPT_FEATURES))
    assert (f["bias"] == 1).all() and f["heat"][-1] == pytest.approx(0.9)
    assert f["card_logit"][0] == pytest.approx(np.log(0.95 / 0.05), abs=1e-3)
    assert (f["size_known"] == 1).all()
    assert np.abs(f["size_off"][:7]).max() < 0.05  # the cards in perspective fit one plane
    assert f["size_off"][7] == pytest.approx(np.log(1.5), abs=0.05)  # 50 % too large
    assert f["smaller"][7] == 0  # larger, not smaller
    assert np.abs(f["shape_off"][:7]).max() < 1e-3  # 40 x 64: a card's shape
    assert f["shape_off"][8] == pytest.approx(np.log(1.6), abs=1e-3)  # a square
    # sure of which end is up: the cards; a back has no up, and is not in doubt for it
    np.testing.assert_allclose(f["turn_sure"][:7], 0.48, atol=1e-6)
    assert f["turn_sure"][7] == 0.5
    assert f["turn_sure"][8] == 0  # a card in doubt about its own top
    assert f["named_by_surer"].tolist() == [0] * 8 + [1]
    # with too few sure crops nothing says what size a card is there
    few = acceptance_features(probs[:4], flip[:4], quads[:4], np.zeros(4))
    assert (few[:, ACCEPT_FEATURES.index("size_known")] == 0).all()
    assert (few[:, ACCEPT_FEATURES.index("size_off")] == 0).all()


def _cards_in_perspective(n=8, odd_scale=1.0, odd_conf=0.8):
    """n card quads along a row whose size grows with y (a tilted table), the last one scaled by
    ``odd_scale`` about its centre."""
    quads, conf = [], []
    for i in range(n):
        cx, cy = 100 + 90 * i, 100 + 40 * i
        size = 1.0 + cy / 1000  # farther up the image, smaller
        w, h = 40 * size, 64 * size
        if i == n - 1:
            w, h = w * odd_scale, h * odd_scale
        quads.append(
            [
                [cx - w / 2, cy - h / 2],
                [cx + w / 2, cy - h / 2],
                [cx + w / 2, cy + h / 2],
                [cx - w / 2, cy + h / 2],
            ]
        )
        conf.append(odd_conf if i == n - 1 else 0.9)
    n = len(quads)
    return Detections(
        quads=np.array(quads, np.float32),
        class_ids=np.arange(n),
        confidence=np.array(conf, np.float32),
        alt_ids=np.zeros((n, 0), int),
        alt_scores=np.zeros((n, 0), np.float32),
    )


@pytest.mark.parametrize("odd_scale", [1.5, 0.6])
def test_consistent_sizes_drops_what_is_not_card_sized_here(odd_scale):
    from companion.detections import consistent_sizes

    # the perspective alone (sizes 1.1 to 1.38) is no reason to drop anything
    even = _cards_in_perspective()
    assert len(consistent_sizes(even, 0.2)) == len(even)
    odd = _cards_in_perspective(odd_scale=odd_scale)  # a phone, or a covered card's corner
    kept = consistent_sizes(odd, 0.25)
    assert kept.class_ids.tolist() == list(range(7))
    assert len(consistent_sizes(odd, 0.25, keep_above=0.8)) == 8  # sure enough to stay
    assert len(consistent_sizes(odd, 0.0)) == 8  # off
    assert len(consistent_sizes(odd, 0.6)) == 8  # within a loose tolerance
    # too few cards to know what size a card should be
    few = _cards_in_perspective(n=5, odd_scale=odd_scale)
    assert len(consistent_sizes(few, 0.25)) == 5


def test_grow_to_size_outlines_a_small_quad_at_the_size_its_place_says():
    from companion.detections import grow_to_size

    even = _cards_in_perspective()
    small = _cards_in_perspective(odd_scale=0.8)
    grown = grow_to_size(small, 0.08)
    # the small one now has (nearly) the size it would have had, about the same centre
    np.testing.assert_allclose(grown.quads[-1], even.quads[-1], atol=1.0)
    np.testing.assert_array_equal(grown.quads[:-1], small.quads[:-1])  # the others stay
    assert grown.card_codes == small.card_codes
    np.testing.assert_array_equal(grown.confidence, small.confidence)
    # within the margin, off, or a larger quad: nothing moves
    for det, below in ((_cards_in_perspective(odd_scale=0.95), 0.08), (small, 0.0)):
        np.testing.assert_array_equal(grow_to_size(det, below).quads, det.quads)
    big = _cards_in_perspective(odd_scale=1.3)
    np.testing.assert_array_equal(grow_to_size(big, 0.08).quads, big.quads)
    few = _cards_in_perspective(n=5, odd_scale=0.8)
    np.testing.assert_array_equal(grow_to_size(few, 0.08).quads, few.quads)


# the committed decode's last steps (detections.final_cards)
FINAL_STEPS = dict(
    nms_iou=0.6,
    same_card_iou=0.3,
    size_tolerance=0.25,
    size_keep_above=0.97,
    size_grow_below=0.08,
)


def test_final_cards_check_sizes_before_a_wrong_sized_thing_claims_a_name():
    from companion.detections import consistent_sizes, final_cards, nms, unique_cards

    steps = FINAL_STEPS
    # a card box showing card 0's art, larger than any card here and surer than card 0
    det = _cards_in_perspective(odd_scale=1.6)
    det.class_ids[-1], det.confidence[-1] = 0, 0.96
    kept = final_cards(det, **steps)
    assert sorted(kept.class_ids.tolist()) == list(range(7))  # card 0 kept, the box dropped
    np.testing.assert_array_equal(kept.quads[kept.class_ids == 0][0], det.quads[0])
    # one card once before the size check lost card 0 to the box, then dropped the box too
    earlier = consistent_sizes(unique_cards(nms(det, 0.6), same_card_iou=0.3), 0.25, 0.97)
    assert len(earlier) == 6 and 0 not in earlier.class_ids
    # a small quad is still grown, and a sure enough odd one still stays
    small = final_cards(_cards_in_perspective(odd_scale=0.8), **steps)
    np.testing.assert_allclose(small.quads[-1], _cards_in_perspective().quads[-1], atol=1.0)
    sure = _cards_in_perspective(odd_scale=1.6, odd_conf=0.98)
    assert len(final_cards(sure, **steps)) == 8


def test_final_cards_rank_says_who_survives_nms_and_keeps_a_name():
    from companion.detections import final_cards

    steps = {**FINAL_STEPS, "size_grow_below": 0.0}
    # a thing a little larger than a card (within the size check) named card 0 surer than the
    # real card 0: by confidence it takes the name, by a rank that knows better it does not
    det = _cards_in_perspective(odd_scale=1.15)
    det.class_ids[-1], det.confidence[-1] = 0, 0.96
    by_confidence = final_cards(det, **steps)
    assert sorted(by_confidence.class_ids.tolist()) == [0, 1, 2, 3, 4, 5, 6]
    assert by_confidence.quads[by_confidence.class_ids == 0][0].mean() == det.quads[-1].mean()
    rank = np.where(np.arange(len(det)) == len(det) - 1, 0.5, 0.9)
    by_rank = final_cards(det, rank=rank, **steps)
    assert sorted(by_rank.class_ids.tolist()) == list(range(7))
    np.testing.assert_array_equal(by_rank.quads[by_rank.class_ids == 0][0], det.quads[0])
    # and of two overlapping quads NMS keeps the higher ranked, whatever their confidence
    pair = make_det(["01-1", "05-1"], [0, 2], [0.9, 0.6])
    assert final_cards(pair, **steps).card_codes == ["01-1"]
    assert final_cards(pair, rank=np.array([0.2, 0.8]), **steps).card_codes == ["05-1"]
    assert unique_cards(pair, rank=np.array([0.2, 0.8])).card_codes == ["05-1", "01-1"]


def test_unique_cards_demotes_the_less_confident_duplicate():
    det = make_det(
        ["08-1", "08-1", "08-1"],
        [0, 100, 200],
        [0.95, 0.7, 0.6],
        alts=[
            [("08-2", 0.03), ("08-3", 0.01)],
            [("08-2", 0.2), ("08-3", 0.05)],
            [("08-2", 0.01), ("01-1", 0.005)],
        ],
    )
    out = unique_cards(det)
    # the strongest keeps 08-1, the second takes its next-best class, the third has nothing left
    assert out.card_codes == ["08-1", "08-2"]
    assert out.confidence[1] == pytest.approx(0.2)
    assert class_id("08-1") in out.alt_ids[1]  # the original guess stays visible as an alternative


def test_unique_cards_drops_a_duplicate_lying_on_its_holder():
    # x=0 and x=10 overlap (IoU 0.5): the same card seen twice; x=100 is another card
    det = make_det(
        ["08-1", "08-1", "08-1"],
        [0, 10, 100],
        [0.95, 0.7, 0.6],
        alts=[[("08-2", 0.03)], [("08-2", 0.2)], [("08-3", 0.3)]],
    )
    out = unique_cards(det, same_card_iou=0.3)
    assert out.card_codes == ["08-1", "08-3"]
    assert unique_cards(det).card_codes == ["08-1", "08-2", "08-3"]  # default: demote all


def test_unique_cards_lets_backs_repeat():
    det = make_det(["back", "back", "01-1"], [0, 100, 200], [0.9, 0.8, 0.7])
    assert sorted(unique_cards(det).card_codes) == ["01-1", "back", "back"]
    assert sorted(unique_cards(det, same_card_iou=0.3).card_codes) == ["01-1", "back", "back"]


def test_unique_cards_drops_a_back_lying_on_a_likelier_back():
    # x=0 and x=10 overlap (IoU 0.5): one face-down card outlined twice; x=100 is another
    det = make_det(["back", "back", "back"], [10, 0, 100], [0.8, 0.9, 0.7])
    out = unique_cards(det, same_card_iou=0.3)
    assert out.card_codes == ["back", "back"]
    assert sorted(out.confidence.tolist()) == pytest.approx([0.7, 0.9])
    assert len(unique_cards(det)) == 3  # default (1.0): backs repeat whatever their overlap
    # a face card whose name a likelier one holds does not fall back to "back" on a back
    lost = make_det(
        ["back", "08-1", "08-1"],
        [0, 200, 10],
        [0.9, 0.8, 0.7],
        alts=[[("01-1", 0.05)], [("08-2", 0.1)], [("back", 0.3)]],
    )
    assert unique_cards(lost, same_card_iou=0.3).card_codes == ["back", "08-1"]


def test_chaff_groups():
    groups = chaff_group([class_id(c) for c in ["08-3", "08-4", "08-1", "12-2", "12-4", "11-4"]])
    assert groups[0] == groups[1]  # two susuki chaff are the same for scoring
    assert groups[0] != groups[2]
    assert groups[3] != groups[4]  # the banded paulownia chaff 12-2 is told apart
    assert chaff_group([class_id("12-3")])[0] == groups[4]  # the two plain ones are not
    assert groups[5] == class_id("11-4")  # the lightning card is alone in its group


# --------------------------------------------------------------------------------------------
# Geometry shared by training and runtime
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("angle", [0, 30, 90, 170, 200, 300])
def test_crop_corners_map_back_to_the_card_quad(angle):
    st = Settings()
    t = math.radians(angle)
    c, s = math.cos(t), math.sin(t)
    base = np.array(
        [[-20, -33], [20, -33], [22, 31], [-21, 33]], np.float32
    )  # a little perspective
    quad = base @ np.array([[c, s], [-s, c]], np.float32) + np.float32([300, 200])
    cx, cy, w, h, theta = quad_to_rbox(quad)
    # the localizer only knows theta modulo 180 degrees: either crop must work
    for th in (theta, theta + math.pi):
        m = crop_matrix(cx, cy, w, h, th, st)
        upside_down, corners = crop_targets(quad, m, st)
        assert 0 <= corners.min() and corners.max() <= 1
        inv = cv2.invertAffineTransform(m)
        q = cv2.transform(
            (corners.reshape(1, 4, 2) * [st.inputs.crop_width, st.inputs.crop_height]).astype(
                np.float32
            ),
            inv,
        )[0]
        if upside_down:
            q = np.roll(q, 2, axis=0)
        np.testing.assert_allclose(q, quad, atol=1e-3)
    assert {
        crop_targets(quad, crop_matrix(cx, cy, w, h, th, st), st)[0]
        for th in (theta, theta + math.pi)
    } == {0, 1}


@pytest.mark.parametrize("shape", [(720, 1280), (768, 1024), (300, 2000), (1500, 500)])
def test_letterbox_keeps_the_aspect_and_pads_bottom_right(shape):
    st = Settings().with_(input_width=768, input_height=448)
    image = np.random.default_rng(1).integers(0, 255, (*shape, 3), dtype=np.uint8)
    boxed, scale = letterbox(image, st)
    assert boxed.shape == (448, 768, 3)
    nw, nh = round(shape[1] * scale), round(shape[0] * scale)
    assert nw <= 768 and nh <= 448 and (nw == 768 or nh == 448)
    assert (boxed[nh:] == st.inputs.pad_value).all() and (
        boxed[:, nw:] == st.inputs.pad_value
    ).all()
    if scale >= 0.5:
        expected = cv2.resize(image, (nw, nh), interpolation=cv2.INTER_LINEAR)
        assert np.array_equal(boxed[:nh, :nw], expected)
    else:  # bilinear to twice the size, then 2x2 averages: close to a plain area resize
        expected = cv2.resize(image, (nw, nh), interpolation=cv2.INTER_AREA)
        assert np.abs(boxed[:nh, :nw].astype(int) - expected).mean() < 20


def test_net_input_follows_the_model_input_type():
    from companion.bench.recognizer_speed import YARDSTICK
    from companion.recognizer import net_input, open_session

    images = np.zeros((1, 8, 8, 3), np.uint8)
    images[..., 0] = 255  # blue in BGR
    if DEFAULT_MODEL.is_file():  # the committed nets take uint8 BGR NHWC as they are
        rec = Recognizer.load()
        assert net_input(rec.localizer, images).dtype == np.uint8
    # a float NCHW model (older exports, the yardstick) gets RGB floats in 0..1
    x = net_input(open_session(YARDSTICK, 1), images)
    assert x.shape == (1, 3, 8, 8) and x.dtype == np.float32
    assert x[0, 2].max() == 1.0 and x[0, 0].max() == 0.0


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


needs_model = pytest.mark.skipif(not DEFAULT_MODEL.is_file(), reason="no committed model")


@pytest.fixture(scope="module")
def recognizer():
    return Recognizer.load(DEFAULT_MODEL)


def test_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(RecognizerError, match="No recognizer model"):
        Recognizer.load(tmp_path / "nothing.json")
    bad = tmp_path / "recognizer.json"
    bad.write_text("{not json")
    with pytest.raises(RecognizerError, match="unreadable"):
        Recognizer.load(bad)


def test_read_image_errors(tmp_path):
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"\x89PNG not really")
    for path, words in [
        (empty, "empty"),
        (junk, "decode"),
        (tmp_path / "nope.jpg", "no such file"),
    ]:
        with pytest.raises(RecognizerError, match=words):
            read_image(path)


@needs_model
def test_grey_frames_with_or_without_alpha_read_alike(recognizer):
    grey = cv2.cvtColor(bench_scene()[0], cv2.COLOR_BGR2GRAY)
    plain = recognizer.detect(grey)
    assert len(plain) >= 10  # the cards still read in grey
    for frame in (grey[..., None], np.dstack([grey, np.full_like(grey, 255)])):
        det = recognizer.detect(frame)
        assert np.array_equal(det.class_ids, plain.class_ids)
        assert np.array_equal(det.quads, plain.quads)


@needs_model
def test_blank_and_degenerate_frames_give_no_cards(recognizer):
    assert len(recognizer.detect(np.full((720, 1280, 3), 128, np.uint8))) == 0
    assert len(recognizer.detect(np.zeros((0, 0, 3), np.uint8))) == 0
    assert len(recognizer.detect(None)) == 0
    assert len(recognizer.detect(np.full((4, 4), 200, np.uint8))) == 0
    assert len(recognizer.detect(np.full((360, 640, 2), 128, np.uint8))) == 0
    huge = np.full((6000, 9000, 3), 90, np.uint8)  # downscaled inside, quads stay in its pixels
    assert len(recognizer.detect(huge)) == 0


@needs_model
def test_cli_detect_bad_files(tmp_path):
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.jpg"
    junk.write_bytes(b"hello")
    grey = tmp_path / "grey.png"
    cv2.imwrite(str(grey), np.full((360, 640, 3), 128, np.uint8))
    runner = CliRunner()
    result = runner.invoke(main, ["detect", str(empty), str(junk)])
    assert result.exit_code == 2
    assert "empty" in result.stderr and "decode" in result.stderr
    assert "Traceback" not in result.output
    result = runner.invoke(main, ["detect", "--json", str(junk), str(grey)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"image": str(grey), "detections": []}]
    assert "junk.jpg" in result.stderr


@needs_model
def test_cli_bench_keeps_its_json_contract_and_names_the_cpu():
    # issue 3's contract (scripts read these keys), and the CPU kind the figures belong to
    result = CliRunner().invoke(main, ["bench", "--json", "--runs", "5", "--nets", "float"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert {"ms_median", "ms_p95", "yolo11n_ms_median"} <= out.keys()
    assert 0 < out["ms_median"] <= out["ms_p95"]
    assert out["yolo11n_ms_median"] > 0
    assert out["speedup_vs_yolo11n"] == round(out["yolo11n_ms_median"] / out["ms_median"], 2)
    assert (out["threads"], out["frame"], out["nets"]) == (2, "1280x720", "float")
    assert out["cards_detected"] >= 20
    assert isinstance(out["cpu"], str) and out["cpu"]
    assert isinstance(out["int8_dot_products"], bool)
    text = CliRunner().invoke(main, ["bench", "--runs", "5"])
    assert text.exit_code == 0, text.output
    assert f"CPU: {out['cpu']} (with" in text.output  # "with" or "without" int8 dot products
    bad = CliRunner().invoke(main, ["bench", "--runs", "5", "--nets", "fp16"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_cpu_name_reads_the_model_name():
    from companion.recognizer import cpu_name

    x86 = (
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: avx2\n"
    )
    assert cpu_name(x86) == "AMD EPYC 7B13"
    assert cpu_name("processor\t: 0\nBogoMIPS\t: 50.00\nModel\t\t: Raspberry Pi 5\n") == (
        "Raspberry Pi 5"
    )
    assert cpu_name("")  # no /proc/cpuinfo: what the platform says, never empty


# --------------------------------------------------------------------------------------------
# The committed model on held-out scenes
# --------------------------------------------------------------------------------------------


@needs_model
@pytest.mark.skipif(not HELD_OUT.is_dir(), reason="../shared/decks/traditional-scan missing")
def test_committed_model_on_held_out_deck(recognizer, tmp_path):
    from companion.bench.evaluation import evaluate

    # measured with the committed model on these 12 scenes (render version 2, one of them
    # motion-blurred, two with sheen): recall 0.984 (241 of 245 cards), chaff-equivalent
    # accuracy 0.996, precision 1.0, no false positive (see models/recognizer.json for the
    # 500-scene figures); the thresholds sit well under (above for false positives), as these
    # few scenes are kinder than the 500
    report = evaluate(recognizer, str(HELD_OUT), seed=4242, n=12)
    metrics = report.to_dict()  # companion eval --json
    # the typed report and its JSON say the same
    assert (report.labels, report.recall, report.precision) == (
        metrics["labels"], metrics["recall"], metrics["precision"]
    )
    assert report.by_condition["card:face up"].labels == metrics["by_condition"]["card:face up"]["labels"]
    assert metrics["labels"] > 200
    assert metrics["recall"] >= 0.92, metrics
    assert metrics["chaff_accuracy"] >= 0.98, metrics
    assert metrics["precision"] >= 0.97, metrics
    assert metrics["false_positives_per_image"] <= 0.35, metrics
    spans = metrics["intervals"]  # resampled by scene, around the figures themselves
    # four misses in a few scenes: some resamples miss none, so the top may reach 1
    assert spans["recall"][0] < metrics["recall"] <= spans["recall"][1] <= 1
    fp = spans["false_positives_per_image"]
    assert fp[0] <= metrics["false_positives_per_image"] <= fp[1]
    # every false card has a kind, and every scene a row per condition
    assert sum(metrics["false_positive_kinds"].values()) == metrics["false_positives"]
    # every missed card has a kind too, and the visible bands add up to all cards
    found = round(metrics["recall"] * metrics["labels"])
    assert sum(metrics["missed_card_kinds"].values()) == metrics["labels"] - found
    assert not hasattr(recognizer, "looks")  # eval records on a trace, not on the recognizer
    by_scene = metrics["false_positives_by_scene"]
    sides = metrics["by_condition"]
    assert (
        sides["card:face up"]["labels"] + sides.get("card:face down", {"labels": 0})["labels"]
        == metrics["labels"]
    )
    bands = [v["labels"] for k, v in sides.items() if k.startswith("visible:")]
    assert sum(bands) == metrics["labels"] and len(bands) >= 3
    assert sides["visible:95-100%"]["labels"] == sides["overlap:clear"]["labels"]
    frames = [v["labels"] for k, v in sides.items() if k.startswith("frame:")]
    assert sum(frames) == metrics["labels"] and sides["frame:inside"]["labels"] > 0
    months = {k: v["labels"] for k, v in sides.items() if k.startswith("month:")}
    assert sum(months.values()) == sides["card:face up"]["labels"]
    assert set(months) <= {f"month:{m:02d}" for m in range(1, 13)} and len(months) > 1
    hands = [v for k, v in by_scene.items() if k.startswith("hands:")]
    assert sum(v["images"] for v in hands) == 12
    assert sum(v["false_positives"] for v in hands) == metrics["false_positives"]


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
def test_cli_eval_record_stores_the_metrics_in_the_named_model(tmp_path):
    model = committed_model_copy(tmp_path / "model")
    before = DEFAULT_MODEL.read_text()
    args = ["eval", "--deck", str(HELD_OUT), "--seed", "4243", "--n", "2"]
    for nets in ("int8", "float"):
        result = CliRunner().invoke(
            main, [*args, "--json", "--record", "--model", str(model), "--nets", nets]
        )
        assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    recorded = json.loads((model / "recognizer.json").read_text())["metrics"]
    entry = recorded["traditional-scan seed=4243 n=2 nets=float"]
    assert entry["recall"] == printed["recall"] and entry["labels"] == printed["labels"]
    assert entry["nets"] == "float"
    from companion.simulator import synth

    assert entry["render_version"] == synth.RENDER_VERSION  # which renderer made the scenes
    assert entry["command"] == " ".join(
        ["companion", *args, "--model", str(model), "--nets", "float"]
    )
    assert recorded["traditional-scan seed=4243 n=2"]["nets"] == "int8"
    assert "by_condition" not in entry  # the long breakdowns stay out of the metadata
    assert entry["lens_k"] == 0.0
    assert entry["intervals"] == printed["intervals"]
    # Through a wide-angle lens: its own entry, and a command that measures it again.
    lens = [*args, "--record", "--model", str(model), "--nets", "float", "--lens-k", "0.25"]
    result = CliRunner().invoke(main, lens)
    assert result.exit_code == 0, result.output
    assert "lens distortion k=+0.25" in result.output
    assert "95 % interval, scenes resampled: " in result.output  # how far the recall could move
    recorded = json.loads((model / "recognizer.json").read_text())["metrics"]
    bent = recorded["traditional-scan seed=4243 n=2 nets=float lens_k=0.25"]
    assert bent["lens_k"] == 0.25 and bent["command"] == " ".join(["companion", *args, *lens[8:]])
    assert recorded["traditional-scan seed=4243 n=2 nets=float"] == entry  # left as it was
    assert DEFAULT_MODEL.read_text() == before  # the committed model is left alone


def test_scene_intervals_resample_whole_scenes():
    from companion.bench.evaluation import scene_intervals

    # scenes all alike: nothing to move, the interval is the figure itself
    same = scene_intervals([9] * 20, [10] * 20, [1] * 20)
    assert same == {"level": 0.95, "recall": [0.9, 0.9], "false_positives_per_image": [1.0, 1.0]}
    # scenes that differ: an interval around the figure, the same one every time
    found, to_find, false = [10, 4, 8, 10, 7, 9], [10, 10, 10, 10, 10, 10], [0, 2, 0, 1, 0, 0]
    spans = scene_intervals(found, to_find, false)
    assert spans == scene_intervals(found, to_find, false)
    low, high = spans["recall"]
    assert low < sum(found) / sum(to_find) < high
    low_fp, high_fp = spans["false_positives_per_image"]
    assert low_fp < 0.5 < high_fp and low_fp >= 0
    # four times the scenes, alike: a narrower interval about the same figure
    more = scene_intervals(found * 4, to_find * 4, false * 4)["recall"]
    assert low < more[0] < sum(found) / sum(to_find) < more[1] < high
    # whole scenes are resampled: a scene's cards go together (one scene of 100 cards, all
    # missed, against ten of 10 all found can move recall a lot, not a little)
    lumpy = scene_intervals([0] + [10] * 10, [100] + [10] * 10, [0] * 11)["recall"]
    assert lumpy[0] < 0.3 and lumpy[1] == 1.0
    # two models on the same scenes: the interval is of the difference, resampled in pairs
    counts = np.column_stack([found, to_find, false])
    assert scene_intervals(found, to_find, false, against=counts) == {
        "level": 0.95,
        "recall": [0.0, 0.0],
        "false_positives_per_image": [0.0, 0.0],
    }
    fewer = counts - [[1, 0, 0]] * 6  # one card fewer found in every scene
    ahead = scene_intervals(found, to_find, false, against=fewer)
    assert ahead["recall"] == [0.1, 0.1]  # 6 of 60 more, whichever scenes are drawn
    assert ahead["false_positives_per_image"] == [0.0, 0.0]
    with pytest.raises(ValueError):  # counts of other scenes
        scene_intervals(found, to_find, false, against=counts[:5])
    # nothing to measure
    assert scene_intervals([], [], [])["recall"] is None
    empty = scene_intervals([0, 0], [0, 0], [1, 0])
    assert empty["recall"] is None and empty["false_positives_per_image"] == [0.0, 1.0]


@pytest.mark.skipif(not HELD_OUT.is_dir(), reason="../shared/decks missing")
def test_eval_draws_the_scenes_with_missed_cards(tmp_path):
    from companion.bench.evaluation import evaluate

    class Blind:  # finds nothing: every card of every scene is missed
        settings = Settings().with_(min_confidence=0.6)

        def detect(self, image):
            return Detections.empty()

    out = tmp_path / "misses"
    metrics = evaluate(Blind(), str(HELD_OUT), seed=4242, n=2, misses_dir=out).to_dict()
    assert metrics["recall"] == 0.0
    assert metrics["missed_card_kinds"] == {"never outlined": metrics["labels"]}
    assert metrics["scenes_drawn"] == 2
    assert sorted(f.name for f in out.iterdir()) == ["0000.jpg", "0001.jpg"]
    image = cv2.imread(str(out / "0000.jpg"))
    assert image.shape == (720, 1280, 3)
    b, g, r = (image[..., k].astype(int) for k in range(3))
    assert ((r > 180) & (g < 90) & (b < 90)).sum() > 500  # the missed cards, outlined in red


@needs_model
@pytest.mark.skipif(not HELD_OUT.is_dir(), reason="../shared/decks missing")
def test_eval_against_a_second_model_on_the_same_scenes(recognizer):
    from companion.bench.evaluation import evaluate

    class Blind:  # finds nothing
        settings = recognizer.settings

        def detect(self, image):
            return Detections.empty()

    report = evaluate(Blind(), str(HELD_OUT), seed=4242, n=3, against=recognizer)
    metrics, other = report.to_dict(), report.against
    assert metrics["recall"] == 0.0 and other["recall"] > 0.9
    assert other["difference"]["recall"] == -other["recall"]
    assert other["difference"]["false_positives_per_image"] == round(
        -other["false_positives"] / 3, 4
    )
    low, high = other["intervals"]["recall"]
    assert low <= -other["recall"] <= high < -0.8
    # the same model on both sides: no difference, and nothing for it to move by
    same = evaluate(recognizer, str(HELD_OUT), seed=4242, n=2, against=recognizer).against
    assert same["difference"] == {"recall": 0.0, "false_positives_per_image": 0.0}
    assert same["intervals"]["recall"] == [0.0, 0.0]


@needs_model
@pytest.mark.skipif(not HELD_OUT.is_dir(), reason="../shared/decks missing")
def test_cli_eval_against_prints_the_difference_and_keeps_it_out_of_the_record(tmp_path):
    model = committed_model_copy(tmp_path / "model", float_nets=False)
    args = ["eval", "--deck", str(HELD_OUT), "--seed", "4243", "--n", "2", "--nets", "int8"]
    result = CliRunner().invoke(
        main, [*args, "--model", str(model), "--against", str(DEFAULT_MODEL), "--record"]
    )
    assert result.exit_code == 0, result.output
    assert f"against {DEFAULT_MODEL} (this model minus it):" in result.output
    assert "+0.00 points" in result.output  # the same nets: no difference
    recorded = json.loads((model / "recognizer.json").read_text())["metrics"]
    assert "against" not in recorded["traditional-scan seed=4243 n=2"]
    missing = CliRunner().invoke(main, [*args, "--against", str(tmp_path / "nowhere")])
    assert missing.exit_code != 0 and "No recognizer model" in missing.output


@needs_model
@pytest.mark.skipif(not HELD_OUT.is_dir(), reason="../shared/decks missing")
def test_cli_eval_misses_writes_into_the_named_folder(tmp_path):
    out = tmp_path / "misses"
    args = ["eval", "--deck", str(HELD_OUT), "--seed", "4242", "--n", "3", "--misses", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    drawn = sorted(out.glob("*.jpg"))
    assert f"{len(drawn)} scenes with a missed or false card drawn in {out}" in result.output
    assert {f.name for f in drawn} <= {"0000.jpg", "0001.jpg", "0002.jpg"}
    # a file where the folder should be: a clear refusal
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = CliRunner().invoke(main, [*args[:-1], str(blocker)])
    assert result.exit_code == 2 and "Traceback" not in result.output


@pytest.mark.parametrize("k", ["0.8", "-0.5", "wide"])
def test_cli_eval_refuses_a_lens_it_cannot_render(k):
    result = CliRunner().invoke(main, ["eval", "--deck", "x", "--lens-k", k])
    assert result.exit_code == 2
    assert "--lens-k" in result.output and "Traceback" not in result.output


def test_matching_serves_the_cards_that_must_be_found_first():
    # a visible card lying on a mostly hidden one, a few pixels off it: the detection outlines
    # both by IoU >= 0.5, the hidden one a little better
    labels = np.array([box(0, 0), box(3, 0)], np.float32)
    det = make_det(["01-1"], [2], [0.9])
    visible = np.array([1.0, 0.2], np.float32)
    det_to_label, label_to_det = match_detections(det, labels, visible)
    assert det_to_label.tolist() == [0] and label_to_det.tolist() == [0, -1]
    # both must be found: the better overlap wins, as before
    det_to_label, label_to_det = match_detections(det, labels, np.array([1.0, 0.5]))
    assert det_to_label.tolist() == [1] and label_to_det.tolist() == [-1, 0]


def test_false_positive_kinds_say_why_a_detection_is_false():
    labels = np.array([box(0, 0), box(100, 0), box(200, 0)], np.float32)
    visible = np.array([1.0, 0.3, 1.0], np.float32)
    det = make_det(["01-1", "01-1", "02-1", "03-1", "04-1"], [0, 2, 220, 120, 400], [0.9] * 5)
    det_to_label, _ = match_detections(det, labels, visible)
    assert det_to_label.tolist() == [0, -1, -1, -1, -1]
    assert false_positive_kinds(det, labels, visible, det_to_label) == [
        "second look",  # a second detection of the matched card 0
        "loose quad",  # 20 px off card 2: IoU 0.2
        "hidden card",  # 20 px off card 1, which is only 30 % visible
        "no card",
    ]
    assert false_positive_kinds(det, labels[:0], visible[:0], np.full(5, -1)) == ["no card"] * 5


def test_missed_card_kinds_say_where_a_card_was_lost():
    settings = Settings().with_(min_confidence=0.6, max_none=0.5)
    labels = np.array([box(0, 0), box(100, 0), box(200, 0), box(300, 0)], np.float32)

    def probs(card, none=0.0):
        p = np.zeros(NONE_ID + 1, np.float32)
        p[class_id("01-1")], p[NONE_ID] = card, none
        return p

    looks = [
        # first run: card 0 outlined but named unsure, card 1 outlined and named surely
        (np.array([box(1, 0), box(100, 1)], np.float32), np.stack([probs(0.4), probs(0.9)])),
        # second run: card 2 outlined as "none", card 3 only loosely (IoU 0.2) though surely
        (
            np.array([box(200, 0), box(320, 0)], np.float32),
            np.stack([probs(0.3, 0.7), probs(0.95)]),
        ),
    ]
    missed = np.array([0, 1, 2, 3])
    assert missed_card_kinds(looks, labels, missed, settings) == [
        "named unsure",
        "outlined surely, then lost",
        "named unsure",
        "never outlined",
    ]
    assert missed_card_kinds([], labels, missed[:2], settings) == ["never outlined"] * 2
    assert missed_card_kinds(looks, labels, missed[:0], settings) == []


@needs_model
@pytest.mark.skipif(not HELD_OUT.is_dir(), reason="../shared/decks missing")
def test_cli_detect_json_and_annotate(tmp_path):
    from companion.simulator import synth

    scene = synth.render_scene(7, synth.SceneConfig(decks=(str(HELD_OUT),)))
    path = tmp_path / "scene.png"
    cv2.imwrite(str(path), scene.image)
    result = CliRunner().invoke(
        main, ["detect", "--json", "--annotate", str(tmp_path / "ann"), str(path)]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc[0]["image"] == str(path)
    dets = doc[0]["detections"]
    assert {"card", "confidence", "quad", "alternatives"} <= set(dets[0])
    found = {d["card"] for d in dets}
    wanted = {lab.card for lab in scene.labels if lab.visible > 0.9 and lab.card != "back"}
    assert len(found & wanted) >= 0.8 * len(wanted)
    assert (tmp_path / "ann" / "scene.annotated.png").is_file()


def fanned_row(n=10, x=300, y=300, step=9, w=34, h=56):
    """A tight capture row of small cards, each 9 px right of the one under it."""
    codes = ALL_CODES[:n]
    quads = [box(x + k * step, y, w, h) for k in range(n)]
    return Detections.from_cards(codes, quads, np.linspace(0.99, 0.8, n).astype(np.float32))


def test_annotate_labels_of_a_tight_fanned_row_do_not_cover_each_other():
    det = fanned_row()
    boxes = label_boxes(det, (720, 1280, 3))
    rects = np.array([b.rect for b in boxes])
    assert len(boxes) == len(det)
    for a in range(len(rects)):
        for b in range(a + 1, len(rects)):
            overlap_w = min(rects[a, 2], rects[b, 2]) - max(rects[a, 0], rects[b, 0])
            overlap_h = min(rects[a, 3], rects[b, 3]) - max(rects[a, 1], rects[b, 1])
            assert overlap_w <= 0 or overlap_h <= 0, (boxes[a], boxes[b])
    assert (rects[:, :2] >= 0).all() and (rects[:, 2] <= 1280).all() and (rects[:, 3] <= 720).all()
    # Each label names its own card, and the leader starts on that card.
    for b, quad, cid in zip(boxes, det.quads, det.class_ids, strict=True):
        assert b.text.startswith(CLASSES[cid])
        assert cv2.pointPolygonTest(quad, b.anchor, False) >= 0
    assert any(b.moved for b in boxes)  # 9 px strips: most labels must move off their cards


def test_annotate_keeps_a_big_cards_label_on_it_and_labels_stay_in_the_image():
    big = Detections.from_cards(["08-1"], [box(500, 200, 160, 260)])
    (label,) = label_boxes(big, (720, 1280, 3))
    assert not label.moved
    x0, y0, x1, y1 = label.rect
    assert 500 <= x0 and x1 <= 660 and 200 <= y0 and y1 <= 460
    corner = Detections.from_cards(["01-1"], [box(0, 0, 20, 30)])
    (label,) = label_boxes(corner, (100, 120, 3))
    assert label.rect[0] >= 0 and label.rect[1] >= 0 and label.rect[2] <= 120
    image = np.full((720, 1280, 3), 90, np.uint8)
    drawn = annotate(image, fanned_row())
    assert drawn.shape == image.shape and (image == 90).all()  # a copy, the input untouched
    x0, y0, x1, y1 = label_boxes(fanned_row(), image.shape)[0].rect
    assert (drawn[y0:y1, x0:x1] != 90).any()

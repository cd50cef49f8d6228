"""Finding the cards of a taught deck of a design no net has seen (issue 77, section 2): the
crops the decode outlined but named unsure, and the rectangles found by shape, become cards
where the taught deck's own references know them. Decks and scenes are made at test time
(``companion.simulator.redesign``, ``synth``), never committed."""

from __future__ import annotations

import numpy as np
import pytest
from deck_support import needs_model

from companion.detections import iou_matrix
from companion.simulator import synth


@pytest.fixture(scope="module")
def taught(tmp_path_factory):
    """A procedurally drawn deck (flat grounds, dark frames), taught from its card images,
    and a recognizer naming by it."""
    from companion.recognizer import Recognizer
    from companion.recognizer.decks import add_deck
    from companion.simulator.redesign import procedural_deck

    folder = procedural_deck(tmp_path_factory.mktemp("procedural"), seed=0)
    deck = add_deck("own", folder, folder.parent / "decks", views=12)
    assert deck.sureness < 0.6  # a design of its own: the rescue is on
    return folder, Recognizer.load().with_deck(deck)


def _laid(table: np.ndarray, face_path, x: int, y: int, size=(66, 108)) -> np.ndarray:
    """``table`` with the card image at ``face_path`` lying upright, its top-left at (x, y);
    returns the card's quad (TL, TR, BR, BL)."""
    import cv2

    face = cv2.resize(cv2.imread(str(face_path))[..., :3], size, interpolation=cv2.INTER_AREA)
    table[y : y + size[1], x : x + size[0]] = face
    w, h = size
    return np.float32([[x, y], [x + w, y], [x + w, y + h], [x, y + h]])


@needs_model
def test_a_card_lying_on_a_found_card_is_found_too(taught):
    """The cards of a capture row overlap their neighbours (IoU up to about 0.4): a crop the
    classifier outlined but named unsure, that the deck's references know and whose edges
    show, is a card even where it overlaps a card already found by more than 0.3."""
    from companion.detections import Detections
    from companion.recognizer.decks import rescue_cards

    folder, recognizer = taught
    table = synth.tiled_table(np.random.default_rng(1), 1280, 720)
    under = _laid(table, folder / "01-1.png", 500, 300)
    # the next card of the row lies on it, 32 px on: the two overlap by IoU 0.35
    over = _laid(table, folder / "05-3.png", 532, 300)
    assert 0.3 < iou_matrix(under[None], over[None])[0, 0] < 0.4
    found = Detections(
        under[None], np.array([8]), np.ones(1, np.float32), np.zeros((1, 3), np.int64),
        np.zeros((1, 3), np.float32),
    )  # fmt: skip
    recognizer.rescue = True
    det = rescue_cards(
        table, found, over[None], recognizer.classifier, recognizer.namer, recognizer.settings
    )
    assert len(det) == 2
    assert iou_matrix(det.quads[1:], over[None])[0, 0] > 0.9


@needs_model
def test_no_card_is_found_on_an_empty_table(taught):
    """Neither the rescue nor the shape source makes a card of a table's texture: every
    candidate must also lie near one of the deck's references."""
    from companion.recognizer.decks import rescue_cards

    _, recognizer = taught
    recognizer.rescue, recognizer.shape_proposals = True, True
    empty = 0
    for seed in range(6):
        table = synth.tiled_table(np.random.default_rng(seed), 1280, 720)
        assert len(recognizer.detect(table)) == 0
        # every card-sized place on the table offered as a candidate: none becomes a card
        centres = np.stack(np.meshgrid(np.arange(100, 1200, 60), np.arange(90, 650, 60)), -1)
        centres = centres.reshape(-1, 1, 2).astype(np.float32)
        corners = np.float32([[-33, -54], [33, -54], [33, 54], [-33, 54]])  # a card, 66x108
        det = recognizer.detect(table)
        found = rescue_cards(
            table, det, centres + corners, recognizer.classifier, recognizer.namer,
            recognizer.settings,
        )  # fmt: skip
        empty += len(found) == 0
    assert empty == 6


@needs_model
def test_the_design_references_find_cards_that_the_first_ones_leave(taught):
    """On tables of a made-up deck, the rescue finds more of its cards where the design
    references may say "one of mine" (``RESCUE_MIN_DESIGN_SIMILARITY``) than with the
    classifier's features and "none" alone, and makes no more false cards."""
    from companion.bench.evaluation import match_detections
    from companion.recognizer import design_references

    if not design_references.available():
        pytest.skip("no design embedder")
    folder, recognizer = taught
    namer = recognizer.namer
    assert namer.design is not None
    recognizer.rescue, recognizer.verify = True, False
    config = synth.SceneConfig(width=1280, height=720, decks=(str(folder),))
    counts = {}
    design = namer.design
    for name in ("first only", "with design"):
        namer.design = None if name == "first only" else design
        found = false = 0
        for i in range(4):
            scene = synth.render_scene(synth.scene_seed(47, i), config)
            det = recognizer.detect(scene.image)
            quads = np.array([lab.quad for lab in scene.labels], np.float32).reshape(-1, 4, 2)
            visible = np.array([lab.visible for lab in scene.labels])
            to_label, to_det = match_detections(det, quads, visible)
            found += int(((to_det >= 0) & (visible >= 0.4)).sum())
            false += int((to_label < 0).sum())
        counts[name] = (found, false)
    namer.design = design
    (found_first, false_first), (found_design, false_design) = counts.values()
    assert found_design >= found_first + 4, counts
    assert false_design <= false_first + 1, counts


@needs_model
def test_a_taught_deck_names_each_card_once(taught):
    """Each card lies on the table once: where the deck's names give two detections one card
    (a second look at it, or a misnamed card), the less likely takes its next name or goes.
    Two prints of one card, far apart, are two detections of two names."""
    folder, recognizer = taught
    table = synth.tiled_table(np.random.default_rng(2), 1280, 720)
    for x in (200, 700):
        _laid(table, folder / "03-1.png", x, 300, size=(88, 144))
    det = recognizer.detect(table)
    faces = det.class_ids[det.class_ids != 48]
    assert len(faces) >= 2
    assert len(set(faces.tolist())) == len(faces)


def test_eval_json_holds_plain_numbers_when_backs_are_named():
    """``eval --json`` of a recognizer that names face-down cards ``back`` and misses one (its
    figures feed scripts): every figure is a plain JSON number."""
    import json

    from companion.bench.evaluation import evaluate
    from companion.detections import CLASSES, Detections
    from companion.recognizer.settings import Settings

    deck = synth.resolve_deck_dir("traditional-scan")
    config = synth.SceneConfig(decks=(str(deck),))
    truth = {}
    for index in range(4):
        scene = synth.render_scene(synth.scene_seed(4242, index), config)
        truth[scene.image.tobytes()] = scene.labels

    class Truthful:  # outlines and names every card as it lies, but for one back
        settings = Settings()
        missed = False

        def detect(self, image):
            labels = truth[image.tobytes()]
            backs = [k for k, label in enumerate(labels) if label.card == "back"]
            if backs and not self.missed:
                labels = [label for k, label in enumerate(labels) if k != backs[0]]
                self.missed = True
            n = len(labels)
            return Detections(
                np.array([label.quad for label in labels], np.float32).reshape(-1, 4, 2),
                np.array([CLASSES.index(label.card) for label in labels], np.int64),
                np.ones(n, np.float32),
                np.zeros((n, 0), np.int64),
                np.zeros((n, 0), np.float32),
            )

    metrics = evaluate(Truthful(), str(deck), seed=4242, n=4).to_dict()
    assert metrics["backs_named"] >= 1
    assert json.loads(json.dumps(metrics))["backs_named"] == metrics["backs_named"]


def test_the_small_picture_of_a_card_stays_under_other_light():
    """A taught deck compares the small picture of each crop with each channel's contrast
    evened: the same card with washed-out colours under a colour cast gives nearly the same
    picture, where the picture less its mean colour alone moves away."""
    import cv2

    from companion.recognizer.decks import pixels

    rng = np.random.default_rng(3)
    card = np.zeros((80, 48, 3), np.uint8)
    card[:] = (40, 60, 200)  # a red ground
    for _ in range(12):  # and the art's strokes
        x, y = rng.integers(6, 42), rng.integers(6, 74)
        cv2.circle(
            card, (int(x), int(y)), int(rng.integers(2, 6)), rng.integers(0, 255, 3).tolist(), -1
        )
    lab = cv2.cvtColor(card, cv2.COLOR_BGR2Lab).astype(np.float32)
    lab[..., 1] = 0.5 * (lab[..., 1] - 128) + 128 + 6  # washed-out colours, a cast
    lab[..., 2] = 0.5 * (lab[..., 2] - 128) + 128 - 8
    other = cv2.cvtColor(np.clip(lab, 0, 255).astype(np.uint8), cv2.COLOR_Lab2BGR)
    crops = np.stack([card, other])
    evened = pixels(crops, even=True)
    plain = pixels(crops)
    assert float(evened[0] @ evened[1]) > 0.98
    assert float(evened[0] @ evened[1]) > float(plain[0] @ plain[1]) + 0.04


def test_a_deck_taught_before_the_evened_picture_still_names_its_cards(tmp_path):
    """Decks kept with the earlier descriptor (the picture less its mean colour) load and are
    compared the way they were taught."""
    from companion.recognizer import Recognizer
    from companion.recognizer.decks import EMBEDDER, UserDeck, describe, embed
    from companion.recognizer.nets import open_session

    rng = np.random.default_rng(0)
    crops = rng.integers(0, 255, (4, 80, 48, 3), dtype=np.uint8)
    session = open_session(EMBEDDER, 1)
    old = describe(session, crops, "embedding+pixels")
    assert old.shape[1] == embed(session, crops[:1]).shape[1] + 12 * 20 * 3
    deck = UserDeck(
        "before", "standard", old, np.array([0, 1, 2, 3]), descriptor="embedding+pixels"
    )
    deck.save(tmp_path)
    loaded = UserDeck.load("before", tmp_path)
    assert loaded.descriptor == "embedding+pixels"
    namer = Recognizer.load().with_deck(loaded).namer
    assert np.allclose(namer.similarity(crops), 1.0, atol=2e-3)  # each crop is its own reference

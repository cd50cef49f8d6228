"""Finding the cards of a taught deck of a design no net has seen (issue 77, section 2): the
crops the decode outlined but named unsure, and the rectangles found by shape, become cards
where the taught deck's own references know them. Decks and scenes are made at test time
(``companion.simulator.redesign``, ``synth``), never committed."""

from __future__ import annotations

import numpy as np
import pytest

from companion.detections import iou_matrix
from companion.recognizer import DEFAULT_MODEL
from companion.simulator import synth

needs_model = pytest.mark.skipif(not DEFAULT_MODEL.is_file(), reason="no committed model")


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


@needs_model
def test_a_card_of_a_fanned_row_is_found_beside_the_card_that_overlaps_it(taught):
    """The cards of a capture row overlap their neighbours (IoU up to about 0.4); a crop the
    classifier outlined but named unsure, and that the deck's references know, is a card even
    where it overlaps a card already found by more than 0.3."""
    from companion.recognizer.evaluation import MUST_FIND_VISIBLE, match_detections

    folder, recognizer = taught
    overlapping_found = 0
    for index in range(8):
        scene = synth.render_scene(
            synth.scene_seed(77, index), synth.SceneConfig(decks=(str(folder),))
        )
        quads = np.array([label.quad for label in scene.labels])
        visible = np.array([label.visible for label in scene.labels])
        recognizer.rescue = False
        before = recognizer.detect(scene.image)
        recognizer.rescue = True
        after = recognizer.detect(scene.image)
        det_to_label, _ = match_detections(after, quads, visible)
        ious = iou_matrix(after.quads, after.quads)
        np.fill_diagonal(ious, 0.0)
        new = iou_matrix(after.quads, before.quads).max(axis=1, initial=0.0) < 0.5
        for i in np.flatnonzero(new & (det_to_label >= 0)):
            if visible[det_to_label[i]] >= MUST_FIND_VISIBLE and ious[i].max() >= 0.3:
                overlapping_found += 1
    assert overlapping_found >= 1, overlapping_found


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


def test_eval_json_holds_plain_numbers_when_backs_are_named():
    """``eval --json`` of a recognizer that names face-down cards ``back`` and misses one (its
    figures feed scripts): every figure is a plain JSON number."""
    import json

    from companion.detections import CLASSES, Detections
    from companion.recognizer.evaluation import evaluate
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

"""A taught deck's cards confirmed by their own points (issue 85, section 2, route (a)):
``companion.recognizer.keypoints``. Decks and tables are made at test time
(``companion.simulator.redesign``, ``synth``), never committed."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from deck_support import needs_model

from companion.detections import BACK_ID, CLASSES, Detections, iou_matrix
from companion.game.cards import ALL_CODES
from companion.recognizer.keypoints import (
    KEYPOINTS_FILE,
    DeckKeypoints,
    Verified,
    Verifier,
    apply,
    card_shaped,
)
from companion.simulator import synth

CARD = (72, 118)  # a card's width and height on the made-up tables, pixels


@pytest.fixture(scope="module")
def procedural(tmp_path_factory):
    """A procedurally drawn deck (flat red or gold grounds, dark frames) no net has seen."""
    from companion.simulator.redesign import procedural_deck

    return procedural_deck(tmp_path_factory.mktemp("procedural"), seed=0)


@pytest.fixture(scope="module")
def verifier(procedural):
    faces = {code: cv2.imread(str(procedural / f"{code}.png")) for code in ALL_CODES}
    return Verifier(DeckKeypoints.from_faces(faces))


def _table(folder, seed: int, size=CARD) -> tuple[np.ndarray, list[str], np.ndarray]:
    """A table with eight of the deck's cards in a row, upright: (image, codes, quads)."""
    table = synth.tiled_table(np.random.default_rng(seed), 1280, 720)
    codes = [ALL_CODES[i] for i in np.random.default_rng(seed).choice(48, 8, replace=False)]
    w, h = size
    quads = []
    for k, code in enumerate(codes):
        x, y = 120 + 140 * k, 250
        face = cv2.imread(str(folder / f"{code}.png"))
        table[y : y + h, x : x + w] = cv2.resize(face, size, interpolation=cv2.INTER_AREA)
        quads.append([[x, y], [x + w, y], [x + w, y + h], [x, y + h]])
    return table, codes, np.array(quads, np.float32)


def _named(quads: np.ndarray, code: str, k: int = 3) -> Detections:
    n = len(quads)
    return Detections(
        quads.astype(np.float32),
        np.full(n, CLASSES.index(code), np.int64),
        np.full(n, 0.3, np.float32),
        np.zeros((n, k), np.int64),
        np.zeros((n, k), np.float32),
    )


def test_flat_cards_misnamed_by_the_nets_are_named_by_their_own_points(procedural, verifier):
    """Every card of the row named wrong (as a taught deck of a design of its own often is):
    its own points name it right, none wrong."""
    renamed = 0
    for seed in range(3):
        table, codes, quads = _table(procedural, seed)
        det = verifier.frame(table, _named(quads, "11-4"), np.zeros((0, 4, 2)))
        assert len(det) == len(codes)
        order = np.argsort(det.quads[:, 0, 0])
        for code, class_id in zip(codes, det.class_ids[order], strict=True):
            if CLASSES[class_id] != "11-4":
                assert CLASSES[class_id] == code
                renamed += 1
    assert renamed >= 20  # of 24


def test_a_card_the_nets_missed_is_added_from_a_place_they_looked_at(procedural, verifier):
    """A place the decode looked at but kept no card of (a proposal) is checked too: the card
    its points find there is added, with its own outline."""
    table, codes, quads = _table(procedural, 1)
    det = verifier.frame(table, _named(quads[:4], "11-4"), quads[4:] + 3.0)
    found = {CLASSES[c] for c in det.class_ids}
    assert len(found & set(codes[4:])) >= 3
    added = det.quads[4:]
    assert (iou_matrix(added, quads[4:]).max(axis=1) > 0.8).all()


def test_no_card_is_verified_on_an_empty_table(verifier):
    corners = np.float32([[-36, -59], [36, -59], [36, 59], [-36, 59]])
    centres = np.stack(np.meshgrid(np.arange(100, 1200, 90), np.arange(90, 650, 90)), -1)
    places = centres.reshape(-1, 1, 2).astype(np.float32) + corners
    for seed in range(3):
        table = synth.tiled_table(np.random.default_rng(seed), 1280, 720)
        grey = cv2.cvtColor(table, cv2.COLOR_BGR2GRAY)
        assert verifier.places(grey, places) == []


def test_a_card_too_small_to_show_its_points_is_left_to_the_nets(procedural, verifier):
    table, _, quads = _table(procedural, 0, size=(30, 49))
    assert all(verifier.quad(table, q) is None for q in quads)


def test_a_bad_outline_of_a_verified_card_is_dropped_and_the_card_kept():
    """Detections overlapping a verified card: by 0.5 or more, renamed (the nets' name becomes
    an alternative); by 0.4 to 0.5, a loose quad, dropped (the verified card then lies there,
    with its own outline); a verified card no detection overlaps is added; a back stays."""
    card = np.float32([[100, 100], [172, 100], [172, 218], [100, 218]])
    loose = card + [0, 40]  # the same card outlined 40 px low: IoU about 0.49
    elsewhere = card + [400, 0]
    back = card + [800, 0]
    assert 0.4 < iou_matrix(card[None], loose[None])[0, 0] < 0.5
    det = Detections(
        np.stack([card + 2, loose, back]),
        np.array([CLASSES.index("03-1"), CLASSES.index("03-1"), BACK_ID]),
        np.array([0.4, 0.4, 0.9], np.float32),
        np.array([[5, 6], [5, 6], [0, 0]], np.int64),
        np.full((3, 2), 0.1, np.float32),
    )
    verified = [
        Verified(CLASSES.index("08-1"), card, 12),
        Verified(CLASSES.index("12-1"), elsewhere, 9),
    ]
    checked = apply(det, verified)
    names = [CLASSES[c] for c in checked.class_ids]
    assert names == ["08-1", "back", "12-1"]
    assert checked.alt_ids[0, 0] == CLASSES.index("03-1") and checked.confidence[0] >= 0.99
    assert iou_matrix(checked.quads[2:], elsewhere[None])[0, 0] > 0.99


def test_a_card_shape_is_convex_of_a_card_aspect_with_alike_opposite_sides():
    card = np.float32([[0, 0], [66, 0], [66, 108], [0, 108]])
    assert card_shaped(card)
    assert card_shaped(np.float32([[8, 0], [58, 0], [66, 100], [0, 100]]))  # seen aslant
    assert not card_shaped(np.float32([[0, 0], [100, 0], [100, 100], [0, 100]]))  # a square
    assert not card_shaped(card[[0, 2, 1, 3]])  # crossed
    # the skewed outline a few stray matches once carried a face to
    assert not card_shaped(np.float32([[545, 24], [802, 53], [749, 364], [686, 363]]))


@pytest.fixture(scope="module")
def taught(procedural, tmp_path_factory):
    """The procedural deck taught from its card images, and a recognizer naming by it."""
    from companion.recognizer import Recognizer
    from companion.recognizer.decks import add_deck

    deck = add_deck("own", procedural, tmp_path_factory.mktemp("decks"), views=12)
    return deck, Recognizer.load().with_deck(deck)


@needs_model
def test_detect_names_every_flat_card_right_with_their_points(procedural, taught):
    """On tables of the made-up deck, with the deck's own points, every card is found and
    named right and no card is added that is not there (the nets and references alone now
    name these loose rows right too: that the points rename what they misname is
    ``test_flat_cards_misnamed_by_the_nets_are_named_by_their_own_points``)."""
    _, recognizer = taught
    recognizer.verify = True
    for seed in range(4):
        table, codes, _ = _table(procedural, seed)
        det = recognizer.detect(table)
        assert [CLASSES[c] for c in det.class_ids[np.argsort(det.quads[:, 0, 0])]] == codes, seed


@needs_model
def test_a_settled_card_is_named_by_verify_quad(procedural, taught):
    _, recognizer = taught
    table, codes, quads = _table(procedural, 2)
    found = [recognizer.verify_quad(table, q) for q in quads]
    right = [f is not None and f[0] == code for f, code in zip(found, codes, strict=True)]
    assert sum(right) >= 6
    assert all(f is None or f[0] == code for f, code in zip(found, codes, strict=True))


@needs_model
def test_a_deck_taught_before_its_points_were_kept_finds_them_again(taught, tmp_path):
    """The points are kept beside the references when a deck is taught; a deck taught before
    (no keypoints file) has them found again from the scans it was taught from, and kept; a
    deck whose scans are gone is named by its references alone, as before."""
    import dataclasses
    from pathlib import Path

    from companion.recognizer.decks import deck_keypoints, verifier_for

    deck, _ = taught
    deck_folder = Path(deck.folder)
    assert (deck_folder / KEYPOINTS_FILE).is_file()
    (deck_folder / KEYPOINTS_FILE).unlink()
    found = deck_keypoints(deck)
    assert found is not None and len(set(found.class_ids.tolist())) == 48
    assert (deck_folder / KEYPOINTS_FILE).is_file()
    (deck_folder / KEYPOINTS_FILE).write_bytes(b"not a zip")  # damaged: found again
    assert deck_keypoints(deck) is not None
    gone = dataclasses.replace(deck, source=str(tmp_path / "gone"), folder=str(tmp_path))
    assert deck_keypoints(gone) is None and verifier_for(gone) is None


def test_eval_counts_loose_and_fanned_cards_apart(procedural):
    """``eval --json``'s ``by_lie``: the cards fully in sight and the partly covered ones, each
    found, named right and false, adding up to the whole; ``named_right`` the share found and
    named right."""
    from companion.bench.evaluation import evaluate
    from companion.recognizer.settings import Settings

    config = synth.SceneConfig(decks=(str(procedural),))
    truth = {}
    for index in range(3):
        scene = synth.render_scene(synth.scene_seed(85, index), config)
        truth[scene.image.tobytes()] = scene.labels

    class Truthful:  # every card as it lies, named right, and one false card a frame
        settings = Settings()

        def detect(self, image):
            labels = truth[image.tobytes()]
            quads = [label.quad for label in labels] + [[[0, 0], [20, 0], [20, 33], [0, 33]]]
            ids = [CLASSES.index(label.card) for label in labels] + [0]
            return Detections(
                np.array(quads, np.float32).reshape(-1, 4, 2),
                np.array(ids, np.int64),
                np.ones(len(ids), np.float32),
            )

    report = evaluate(Truthful(), str(procedural), seed=85, n=3).to_dict()
    lies = report["by_lie"]
    assert report["named_right"] == 1.0
    assert lies["loose"]["labels"] + lies["fanned"]["labels"] == report["labels"]
    assert lies["fanned"]["labels"] > 0 and lies["fanned"]["named_right_share"] == 1.0
    assert lies["loose"]["false_positives"] + lies["fanned"]["false_positives"] == 3

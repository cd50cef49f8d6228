"""Naming the strip a card of a fanned row shows (``companion.recognizer.strips``): a taught
deck of a design no net has seen names the cards of capture rows by the part of them in sight.
Decks and tables are made at test time (``companion.simulator.redesign``, ``synth``), never
committed."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from deck_support import needs_model

from companion.detections import CLASSES, Detections
from companion.simulator import synth

CARD = (66, 108)  # a card's size on the made-up table, pixels


@pytest.fixture(scope="module")
def taught(tmp_path_factory):
    """A procedurally drawn deck (flat grounds, dark frames), taught from its card images,
    and a recognizer naming by it."""
    from companion.recognizer import Recognizer
    from companion.recognizer.decks import add_deck
    from companion.simulator.redesign import procedural_deck

    folder = procedural_deck(tmp_path_factory.mktemp("procedural"), seed=3)
    deck = add_deck("own", folder, folder.parent / "decks", views=12)
    return folder, Recognizer.load().with_deck(deck)


def _fanned_rows(folder, seed: int, rows: int = 4, per_row: int = 6):
    """A table with ``rows`` capture rows of ``per_row`` cards each, every card lying on the one
    before it and leaving 35-55 % of its width in sight; the cards' quads (drawing order) and
    codes, and which are covered."""
    rng = np.random.default_rng(seed)
    table = synth.tiled_table(rng, 1280, 720)
    codes = rng.choice(sorted(p.stem for p in folder.glob("??-?.png")), rows * per_row, False)
    quads, covered = [], []
    for r in range(rows):
        x, y = 60 + int(rng.integers(0, 200)), 40 + r * (CARD[1] + 60)
        step = int(rng.uniform(0.35, 0.55) * CARD[0])
        for k in range(per_row):
            face = cv2.imread(str(folder / f"{codes[len(quads)]}.png"))[..., :3]
            table[y : y + CARD[1], x : x + CARD[0]] = cv2.resize(
                face, CARD, interpolation=cv2.INTER_AREA
            )
            w, h = CARD
            quads.append([[x, y], [x + w, y], [x + w, y + h], [x, y + h]])
            covered.append(k < per_row - 1)
            x += step
    table = cv2.GaussianBlur(table, (0, 0), 0.8)
    return table, np.float32(quads), list(codes), np.array(covered)


def _named_right(recognizer, table, quads, codes) -> np.ndarray:
    det = Detections(
        quads,
        np.full(len(quads), CLASSES.index("01-1")),
        np.full(len(quads), 0.3, np.float32),
        np.zeros((len(quads), 3), np.int64),
        np.zeros((len(quads), 3), np.float32),
    )
    named = recognizer.namer(table, det)
    return np.array([CLASSES[c] == code for c, code in zip(named.class_ids, codes, strict=True)])


@needs_model
def test_the_cards_of_fanned_rows_are_named_by_the_strip_in_sight(taught):
    """Each covered card's crop holds its strip and most of the card over it: named by the
    same strip of the deck's faces, nearly all are named right (by their whole crops, about
    half), and the cards lying whole stay named right."""
    folder, recognizer = taught
    right, covered = [], []
    for seed in range(3):
        table, quads, codes, under = _fanned_rows(folder, seed)
        right.append(_named_right(recognizer, table, quads, codes))
        covered.append(under)
    right, covered = np.concatenate(right), np.concatenate(covered)
    assert right[covered].mean() >= 0.8, right[covered].mean()
    assert right[~covered].all()

"""Face down means the deck's own back (issue 77, section 2): ``deck add --back PHOTO`` (or a
back.png among the scans) keeps the back's references with the deck; a detection is then called
``back`` only when it lies near that back, and a face-up card of the deck never is. The decks
and photos are rendered at test time (never committed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner
from deck_support import needs_model

from companion.cli import main
from companion.detections import BACK_ID, CLASSES, Detections
from companion.simulator import synth
from companion.simulator.teaching import render_month_photo


@pytest.fixture(scope="module")
def procedural(tmp_path_factory):
    """A deck of a design no net has seen, with a back of its own (back.png)."""
    from companion.simulator.redesign import procedural_deck

    return procedural_deck(tmp_path_factory.mktemp("procedural"), seed=0)


@pytest.fixture(scope="module")
def taught(procedural, tmp_path_factory):
    """The procedural deck added from its scans (back.png among them: its back)."""
    from companion.recognizer.decks import add_deck

    return add_deck("own", procedural, tmp_path_factory.mktemp("decks"), views=6)


def _as_detected(scene, class_id: int) -> Detections:
    """The scene's cards as the classifier might have named them all: ``class_id``."""
    quads = np.array([label.quad for label in scene.labels], np.float32)
    n = len(quads)
    return Detections(
        quads,
        np.full(n, class_id, np.int64),
        np.full(n, 0.9, np.float32),
        np.zeros((n, 2), np.int64),
        np.zeros((n, 2), np.float32),
    )


@needs_model
def test_a_back_among_the_scans_is_stored_with_the_deck(taught):
    from companion.recognizer.decks import UserDeck

    assert taught.back_embeddings is not None and len(taught.back_embeddings)
    folder = Path(taught.folder)
    assert json.loads((folder / "deck.json").read_text())["back"] is True
    again = UserDeck.load("own", folder.parent)
    assert again.back_embeddings is not None
    assert again.back_embeddings.shape[1] == again.embeddings.shape[1]


@needs_model
def test_only_the_decks_own_back_is_called_back(taught, procedural):
    from companion.recognizer.decks import DeckNamer, model_settings
    from companion.recognizer.settings import Settings

    namer = DeckNamer(taught, Settings.from_dict(model_settings()))
    # its back, lying face down, read by the classifier as a card: the deck calls it back
    back = render_month_photo(3, str(procedural), 1, cards=2, back=True)
    named = namer(back.image, _as_detected(back, CLASSES.index("05-2")))
    assert (named.class_ids == BACK_ID).all(), named.class_ids
    # its face-up cards, read by the classifier as backs (flat grounds look plain to it): the
    # deck names them as its cards, none is a back
    faces = render_month_photo(4, str(procedural), 7)
    named = namer(faces.image, _as_detected(faces, BACK_ID))
    assert (named.class_ids != BACK_ID).all(), named.class_ids


@needs_model
def test_a_back_photo_is_taken_with_the_photos_and_a_bad_one_stores_nothing(procedural, tmp_path):
    from companion.simulator.teaching import write_month_photos

    photos = write_month_photos(tmp_path / "photos", str(procedural), seed=3)
    assert (photos / "back.jpg").is_file()
    decks = tmp_path / "decks"
    runner = CliRunner()
    bad = tmp_path / "three-cards.jpg"
    cv2.imwrite(str(bad), render_month_photo(40, str(procedural), 5, cards=3).image)
    result = runner.invoke(
        main,
        ["deck", "add", "x", "--photos", str(photos), "--back", str(bad),
         "--decks-dir", str(decks)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "three-cards.jpg (the back) shows 3 cards, not one" in errors[0]
    assert "Traceback" not in result.output
    assert not decks.exists() or not any(p.name == "deck.json" for p in decks.rglob("*"))
    good = runner.invoke(
        main,
        ["deck", "add", "x", "--photos", str(photos), "--decks-dir", str(decks), "--json"],
    )  # the photos folder's back.jpg
    assert good.exit_code == 0, good.output
    assert json.loads(good.stdout)["back"] is True
    listed = runner.invoke(main, ["deck", "list", "--decks-dir", str(decks), "--json"])
    assert json.loads(listed.stdout)[0]["back"] is True


@needs_model
def test_a_face_given_as_the_back_is_one_sentence_and_nothing_is_stored(procedural, tmp_path):
    from companion.recognizer.decks import DeckError, add_deck, list_decks

    scans = tmp_path / "scans"
    shutil.copytree(procedural, scans)
    (scans / "back.png").unlink()
    face = tmp_path / "face.jpg"
    cv2.imwrite(str(face), render_month_photo(5, str(procedural), 3, cards=1).image)
    with pytest.raises(DeckError) as raised:
        add_deck("x", scans, tmp_path / "decks", views=6, back_photo=face)
    message = str(raised.value)
    assert message.startswith("face.jpg shows the face of 03-1, not the deck's back")
    assert message.endswith(".") and ". " not in message  # one sentence
    assert list_decks(tmp_path / "decks") == []
    empty = tmp_path / "empty.jpg"
    table = synth.tiled_table(np.random.default_rng(1), 800, 600)  # a bare table
    cv2.imwrite(str(empty), table)
    with pytest.raises(DeckError, match=r"^empty.jpg \(the back\) shows no card: "):
        add_deck("x", scans, tmp_path / "decks", views=6, back_photo=empty)
    assert list_decks(tmp_path / "decks") == []

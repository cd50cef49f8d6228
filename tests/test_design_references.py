"""A taught deck of a design of its own is named by the design embedder's references too
(``companion.recognizer.design_references``): teaching keeps them beside the deck with the
embedder's fingerprint; a deck taught before them, or by another embedder, has them made again
from its faces and kept; a deck of known art is named as before; and on crops of a made-up deck's
cards lying on tables, the blend names more of them right than the first references alone.
Decks and scenes are made at test time, never committed."""

from __future__ import annotations

import numpy as np
import pytest
from deck_support import needs_model

from companion.recognizer import design_references as dr

needs_embedder = pytest.mark.skipif(not dr.available(), reason="no design embedder")


@pytest.fixture(scope="module")
def made_up(tmp_path_factory):
    """A procedurally drawn deck (flat grounds, dark frames) taught from its card images."""
    from companion.recognizer.decks import add_deck
    from companion.simulator.redesign import procedural_deck

    folder = procedural_deck(tmp_path_factory.mktemp("procedural"), seed=3)
    decks = folder.parent / "decks"
    deck = add_deck("own", folder, decks, views=6)
    return folder, decks, deck


@needs_model
@needs_embedder
def test_teaching_keeps_design_references_made_by_this_embedder(made_up):
    from companion.recognizer.decks import UserDeck

    _, decks, deck = made_up
    assert dr.wanted(deck)
    kept = dr.DesignReferences.load(decks / "own")
    assert kept is not None and kept.model == dr.fingerprint()
    assert len(kept.class_ids) == len(deck.class_ids)
    assert np.allclose(np.linalg.norm(kept.embeddings, axis=1), 1.0, atol=1e-2)
    assert dr.wanted(UserDeck.load("own", decks))


@needs_model
@needs_embedder
def test_a_deck_without_them_or_with_another_embedders_has_them_made_again(made_up, tmp_path):
    import shutil

    from companion.recognizer.decks import DeckNamer, UserDeck, model_settings
    from companion.recognizer.settings import Settings

    _, decks, _ = made_up
    copy = tmp_path / "decks"
    shutil.copytree(decks, copy)
    (copy / "own" / dr.FILE).unlink()
    deck = UserDeck.load("own", copy)
    namer = DeckNamer(deck, Settings.from_dict(model_settings()))
    assert namer.design is not None  # made again from the scans the deck was taught from
    again = dr.DesignReferences.load(copy / "own")
    assert again is not None and set(again.class_ids.tolist()) == set(deck.class_ids.tolist())
    # references another embedder made are not used, and are made again
    stale = dr.DesignReferences(again.embeddings, again.class_ids, "0" * 16)
    stale.save(copy / "own")
    assert dr.DesignReferences.load(copy / "own") is None
    assert DeckNamer(deck, Settings.from_dict(model_settings())).design is not None
    assert dr.DesignReferences.load(copy / "own") is not None


@needs_model
@needs_embedder
def test_a_deck_whose_faces_are_gone_is_named_by_its_first_references(made_up, tmp_path):
    import shutil
    from dataclasses import replace

    from companion.recognizer.decks import DeckNamer, UserDeck, model_settings
    from companion.recognizer.settings import Settings

    _, decks, _ = made_up
    copy = tmp_path / "decks"
    shutil.copytree(decks, copy)
    (copy / "own" / dr.FILE).write_bytes(b"not a zip")
    deck = replace(UserDeck.load("own", copy), source=str(tmp_path / "gone"))
    assert DeckNamer(deck, Settings.from_dict(model_settings())).design is None


@needs_model
@needs_embedder
def test_the_blend_names_cards_on_tables_better_than_the_first_references(made_up):
    from companion.detections import CLASSES
    from companion.recognizer.decks import DeckNamer, describe, model_settings
    from companion.recognizer.geometry import crop_cards, crop_matrices, quads_to_rboxes
    from companion.recognizer.settings import Settings
    from companion.simulator import synth

    folder, _, deck = made_up
    settings = Settings.from_dict(model_settings())
    namer = DeckNamer(deck, settings)
    config = synth.SceneConfig(width=1280, height=720, decks=(str(folder),))
    crops, ids = [], []
    for i in range(6):
        scene = synth.render_scene(synth.scene_seed(31, i), config)
        labels = [lab for lab in scene.labels if lab.visible >= 0.4 and lab.card != "back"]
        quads = np.array([lab.quad for lab in labels], np.float32).reshape(-1, 4, 2)
        crops.append(crop_cards(scene.image, crop_matrices(quads_to_rboxes(quads), settings),
                                settings))  # fmt: skip
        ids += [CLASSES.index(lab.card) for lab in labels]
    crops, ids = np.concatenate(crops), np.array(ids)
    first = namer._nearest_by_card(describe(namer.session, crops, deck.descriptor))
    blended = namer._named_by_design(crops, first)
    right_first = (namer.card_ids[first.argmax(1)] == ids).mean()
    right_blended = (namer.card_ids[blended.argmax(1)] == ids).mean()
    assert len(ids) > 60, len(ids)
    assert right_blended > right_first + 0.05, (right_first, right_blended)

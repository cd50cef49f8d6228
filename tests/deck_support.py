"""What the deck-teaching tests need and skip without: the reference deck the teaching photos
are rendered from (in ../shared/decks) and the committed model."""

from __future__ import annotations

import pytest

from companion.recognizer import DEFAULT_MODEL
from companion.simulator import synth

SOURCE_DECK = "traditional-ngs"


def have_deck(name: str = SOURCE_DECK) -> bool:
    try:
        synth.resolve_deck_dir(name)
    except synth.SynthError:
        return False
    return True


needs_decks = pytest.mark.skipif(not have_deck(), reason="no ../shared/decks")
needs_model = pytest.mark.skipif(not DEFAULT_MODEL.is_file(), reason="no committed model")

"""A taught deck's second set of references, for a design of its own: its cards' crops described
by the design embedder (``models/design_embedder.onnx``, learned in the lab by metric learning on
many made-up decks: ``companion-lab train-design-embedder``). The classifier's features
(``decks.EMBEDDER``) know the art of the three decks the nets were trained on; on a design none
of them saw, they tell its cards apart little better than a thumbnail. ``decks.DeckNamer`` names
such a deck's cards by both sets (``DESIGN_WEIGHT``), and keeps the classifier's features for
what they do well: telling a card of the deck from the table or a back.

They are kept beside the deck (``design.npz``) with the fingerprint of the embedder that made
them; a deck taught before (or before the embedder was trained again) has them made again, once,
from the faces it was taught from."""

from __future__ import annotations

import functools
import hashlib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from companion.recognizer.nets import MODELS_DIR, open_session

DESIGN_EMBEDDER = MODELS_DIR / "design_embedder.onnx"
FILE = "design.npz"
REBUILD_VIEWS = 8  # views a card when made again from its face (teaching cuts more)
# the design embedder's nearest-reference similarity against the classifier features' in a
# card's naming score (``DeckNamer``): measured on GT crops of tables of made-up decks
DESIGN_WEIGHT = 1.0


@functools.cache
def fingerprint(path: Path = DESIGN_EMBEDDER) -> str:
    """Which embedder made a deck's design references: its file's SHA-256 (first 16 hex)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def available() -> bool:
    return DESIGN_EMBEDDER.is_file()


def design_session():
    return open_session(DESIGN_EMBEDDER, 2)


@dataclass(frozen=True)
class DesignReferences:
    embeddings: np.ndarray  # (M, F) float32, unit length
    class_ids: np.ndarray  # (M,) int64, indices into CLASSES
    model: str  # ``fingerprint`` of the embedder that made them

    @classmethod
    def of_crops(cls, session, crops: np.ndarray, class_ids) -> DesignReferences:
        from companion.recognizer.decks import embed

        return cls(
            embed(session, crops).astype(np.float32),
            np.asarray(class_ids, np.int64),
            fingerprint(),
        )

    def save(self, folder: str | Path) -> None:
        np.savez_compressed(
            Path(folder) / FILE,
            embeddings=self.embeddings.astype(np.float16),
            class_ids=self.class_ids,
            model=np.array(self.model),
        )

    @classmethod
    def load(cls, folder: str | Path) -> DesignReferences | None:
        """The references kept in ``folder``; None where there are none, they cannot be read,
        or another embedder made them."""
        try:
            with np.load(Path(folder) / FILE, allow_pickle=False) as kept:
                refs = cls(
                    kept["embeddings"].astype(np.float32),
                    kept["class_ids"].astype(np.int64),
                    str(kept["model"]),
                )
        except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile):
            return None
        if refs.model != fingerprint() or len(refs.embeddings) != len(refs.class_ids):
            return None
        if not len(refs.class_ids) or not np.isfinite(refs.embeddings).all():
            return None
        return refs


def wanted(deck) -> bool:
    """Whether a deck is named by design references too: a whole deck of a design of its own
    (its references hold the evened picture), while the embedder is installed."""
    return deck.descriptor == "embedding+even-pixels" and available()


def for_deck(deck, session, settings) -> DesignReferences | None:
    """A taught deck's design references: those kept in its folder, else made again from the
    faces it was taught from and kept for next time (``decks.kept_or_made``); None where
    those are gone too (the deck is then named by its first references alone)."""
    from companion.detections import CLASSES
    from companion.recognizer.decks import card_views, kept_or_made

    def made(faces: dict) -> DesignReferences:
        rng = np.random.default_rng(0)
        crops, ids = [], []
        for code, face in sorted(faces.items()):
            views = card_views(face, settings, rng, REBUILD_VIEWS)
            crops.append(views)
            ids += [CLASSES.index(code)] * len(views)
        return DesignReferences.of_crops(session, np.concatenate(crops), ids)

    return kept_or_made(deck, DesignReferences.load, made)

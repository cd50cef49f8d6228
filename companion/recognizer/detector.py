"""The detector: ``Recognizer.load(path).detect(bgr) -> Detections`` (Frigate style), and reading
images."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from companion.detections import BACK_ID, CLASSES, Detections, unique_cards
from companion.game.cards import ALL_CODES
from companion.recognizer.decks import RESCUE_BELOW
from companion.recognizer.decoding import Decoder, DecodeTrace
from companion.recognizer.distance import (
    band_lengths,
    drop_parts,
    in_band,
    merge_looks,
    more_zooms,
)
from companion.recognizer.geometry import view_size
from companion.recognizer.keypoints import VERIFIED_CONFIDENCE
from companion.recognizer.nets import NET_SETS, NETS, auto_nets, metadata_path, open_session
from companion.recognizer.settings import RecognizerError, Settings

SURE_BACK = 0.5  # how sure a back must be in a frame that needed more looks
MAX_SIDE = 4096  # larger frames are downscaled first: crops never need more detail


class Recognizer:
    """Loads the two ONNX nets named in a metadata JSON file and turns frames into Detections."""

    def __init__(
        self,
        localizer,
        classifier,
        settings: Settings,
        metadata: dict | None = None,
        nets: str = "int8",
    ):
        self.localizer = localizer
        self.classifier = classifier
        self.settings = settings
        self.metadata = metadata or {}
        self.nets = nets  # which of the model's sets of nets run (NETS)
        # coarser and finer looks where the first says cards lie outside the trained sizes
        self.any_distance = True
        self.namer = None  # names the cards of the player's own deck (``with_deck``)
        # for a taught deck the classifier does not know: add the cards it outlined but named
        # unsure (``decks.rescue_cards``), and those found by their shape alone
        self.rescue = True
        self.shape_proposals = False  # measured: no more cards found on tables, more false ones
        # a taught deck's cards confirmed by their own points (``keypoints``) in every look;
        # the live pipeline turns it off and checks a card once, when it settles
        # (``verify_quad``): it costs tens of ms a card
        self.verify = True

    @classmethod
    def load(
        cls, path: str | Path | None = None, threads: int = 2, nets: str = "auto"
    ) -> Recognizer:
        """The model of a metadata JSON file; ``nets``: "int8", "float" (the model's
        ``float_nets``), "avx2" (its ``avx2_nets``) or "auto" (``auto_nets``: the set made for
        this CPU among those the model has)."""
        if nets not in NETS:
            raise RecognizerError(f"nets is one of {', '.join(NETS)}, not {nets!r}.")
        path = metadata_path(path)
        if not path.is_file():
            raise RecognizerError(
                f"No recognizer model at {path}: train one with 'companion train'."
            )
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(meta, dict):
                raise TypeError("not a JSON object")
            settings = Settings.from_dict(meta.get("settings", {}))
            sets = {"int8": meta} | {k: meta[key] for k, key in NET_SETS.items() if meta.get(key)}
            if nets == "auto":
                nets = auto_nets(sets)
            if nets not in sets:
                raise RecognizerError(f"The model {path} has no {nets} nets.")
            loc_path = path.parent / sets[nets]["localizer"]
            cls_path = path.parent / sets[nets]["classifier"]
        except RecognizerError:  # already one sentence: a set the model lacks, bad settings
            raise
        except OSError as exc:
            raise RecognizerError(
                f"Cannot read the model metadata {path}: {exc.strerror}."
            ) from None
        except RecursionError:
            raise RecognizerError(f"The model metadata {path} is nested too deeply.") from None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RecognizerError(f"The model metadata {path} is unreadable ({exc}).") from None
        localizer, classifier = open_session(loc_path, threads), open_session(cls_path, threads)
        return cls(localizer, classifier, settings, meta, nets)

    def with_deck(self, deck) -> Recognizer:
        """This recognizer naming the cards of a deck the player added (a ``decks.UserDeck``,
        or None for the classifier's own names): each face-up card is named after the deck's
        card whose images its crop lies nearest (``decks.DeckNamer``)."""
        self.namer = self.namer_for(deck)
        return self

    def namer_for(self, deck):
        """The naming stage ``with_deck(deck)`` would use (None for the classifier's names),
        built without touching this recognizer: a running camera builds the next deck's
        namer beside the frames it reads, then swaps it in between two frames. The embedder's
        session is shared with the namer in use, when there is one."""
        from companion.recognizer.decks import DeckNamer

        if deck is None:
            return None
        embedder = getattr(self.namer, "session", None)
        return DeckNamer(deck, self.settings, embedder=embedder)

    def detect(self, bgr: np.ndarray) -> Detections:
        """All face-up cards and backs in a BGR frame (any size); empty for a blank frame."""
        return self._detect(bgr, None)

    def detect_traced(self, bgr: np.ndarray) -> tuple[Detections, DecodeTrace]:
        """``detect``, and what the decode looked at on the way (for evaluation and fitting)."""
        trace = DecodeTrace()
        return self._detect(bgr, trace), trace

    def _detect(self, bgr: np.ndarray, trace: DecodeTrace | None) -> Detections:
        image = as_bgr(bgr)
        if image is None:
            return Detections.empty()
        factor = 1.0
        if max(image.shape[:2]) > MAX_SIDE:
            factor = MAX_SIDE / max(image.shape[:2])
            image = cv2.resize(image, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA)
        rescue = self.namer is not None and self.rescue and self.namer.deck.sureness < RESCUE_BELOW
        verifier = self._verifier() if self.verify else None
        if (rescue or verifier is not None) and trace is None:
            trace = DecodeTrace()
        det = self._looks(image, trace)
        if rescue:
            det = self._rescued(image, det, trace)
        if self.namer is not None and len(det):
            det = self.namer(image, det)
        if verifier is not None:
            proposals = [q for q, _ in trace.looks if len(q)]
            proposals = np.concatenate(proposals) if proposals else np.zeros((0, 4, 2))
            det = verifier.frame(image, det, proposals)
        if self.namer is not None and len(det) and len(self.namer.card_ids) == len(ALL_CODES):
            # a whole deck's names may give one card twice: a second look at it, or a misnamed
            # card that its next likeliest name fits (each card lies on the table once). A
            # partial deck's names mix with the classifier's, which it may stand in for
            det = unique_cards(det, same_card_iou=self.settings.final_steps.same_card_iou)
        if factor != 1.0 and len(det):
            det = Detections(
                det.quads / factor, det.class_ids, det.confidence, det.alt_ids, det.alt_scores
            )
        return det

    def _verifier(self):
        """The taught deck's ``keypoints.Verifier`` (None: no deck, or one with no points)."""
        return getattr(self.namer, "verifier", None)

    @property
    def can_verify(self) -> bool:
        """Whether ``verify_quad`` can name a card (a taught deck with points)."""
        return self._verifier() is not None

    def verify_quad(self, bgr: np.ndarray, quad: np.ndarray) -> tuple[str, float] | None:
        """The card of the taught deck that its own points find at ``quad`` (4, 2; frame
        pixels) in a frame, as (code, how sure), or None: no deck with points, a card too small
        to show them, or too few matching. For a card that has just settled: a few tens of ms."""
        verifier = self._verifier()
        image = as_bgr(bgr)
        if verifier is None or image is None:
            return None
        quad = np.asarray(quad, np.float32).reshape(4, 2)
        if max(image.shape[:2]) > MAX_SIDE:
            factor = MAX_SIDE / max(image.shape[:2])
            image = cv2.resize(image, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA)
            quad = quad * factor
        found = verifier.quad(image, quad)
        if found is None:
            return None
        return CLASSES[found.class_id], VERIFIED_CONFIDENCE

    def _rescued(self, image: np.ndarray, det: Detections, trace: DecodeTrace) -> Detections:
        """``det`` and the cards of a taught deck of a design of its own that the decode
        outlined but named unsure, or that only their shape shows (``decks.rescue_cards``)."""
        from companion.recognizer.decks import rescue_cards

        candidates = [q for q, _ in trace.looks if len(q)]
        if self.shape_proposals:
            from companion.recognizer.rectangles import find_cards

            candidates.append(find_cards(image).quads)
        if not candidates:
            return det
        quads = np.concatenate(candidates)
        return rescue_cards(image, det, quads, self.classifier, self.namer, self.settings)

    def _looks(self, image: np.ndarray, trace: DecodeTrace | None) -> Detections:
        """The first look at the frame, and the coarser or finer looks it calls for
        (``distance``), merged."""
        first = Decoder(self.localizer, self.classifier, self.settings, trace).run(image)
        if not self.any_distance:
            return first
        scale = view_size(image.shape, self.settings)[2]
        looks = [(first, scale)]
        for zoom in more_zooms(first, scale):
            # the trace is the first look's: the acceptance rule is fitted to one decode a frame
            # a look crops only the boxes of the sizes it may add (``in_band``, with a margin)
            lengths = band_lengths(scale, zoom)
            det = Decoder(self.localizer, self.classifier, self.settings, None, zoom, lengths).run(
                image
            )
            looks.append((det[in_band(det, scale, zoom)], scale * zoom))
        if len(looks) == 1:
            return drop_parts(first)
        # where more looks were needed, cards larger than the localizer learned may show plain
        # patches (a sky, a field of colour) that look like a back from near: backs must be sure
        looks = [(d[(d.class_ids != BACK_ID) | (d.confidence >= SURE_BACK)], s) for d, s in looks]
        return merge_looks(looks, self.settings.final_steps.same_card_iou)


def as_bgr(image) -> np.ndarray | None:
    """Accept BGR, BGRA, grey or grey-and-alpha uint8 arrays; None/empty -> None."""
    if image is None:
        return None
    image = np.asarray(image)
    if image.size == 0 or image.ndim not in (2, 3) or min(image.shape[:2]) < 8:
        return None
    if image.dtype != np.uint8:
        image = np.clip(image, 0, 255).astype(np.uint8)
    if image.ndim == 3 and image.shape[2] <= 2:  # grey, or grey and alpha: the grey
        image = image[..., 0]
    if image.ndim == 2:
        return cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_GRAY2BGR)
    if image.shape[2] == 4:
        return cv2.cvtColor(image, cv2.COLOR_BGRA2BGR)
    return image[..., :3]


def read_image(path: str | Path) -> np.ndarray:
    """Read an image file as BGR; RecognizerError (one sentence) if it cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise RecognizerError(f"Cannot read {path}: no such file.")
    if path.stat().st_size == 0:
        raise RecognizerError(f"Cannot read {path}: the file is empty.")
    data = np.fromfile(str(path), np.uint8)
    try:
        image = cv2.imdecode(data, cv2.IMREAD_COLOR)
    except cv2.error:
        image = None
    if image is None:
        raise RecognizerError(f"Cannot read {path}: not an image OpenCV can decode (or too large).")
    return image

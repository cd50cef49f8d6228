"""Naming the strip a card of a fanned row shows. In a capture row each card but the last lies
under its neighbour, and only a strip along one long side of it shows; its crop holds that strip
and a part of the neighbour, so it lies near no whole reference. Here the covered part of a
crop is told from the other detections of the same frame (``strips``: each one overlapping it
may lie over it; the strip nearest one of the deck's cards says which does), and the strip is
compared by the design embedder with the same strip of each of the deck's faces, the rest of
both hidden alike (``StripNamer``). The faces' strips are described once per strip width
and kept while the deck is in use (``StripNamer.references``).

A deck keeps its faces small beside it (``FILE``); one taught before has them found again,
once, from the scans or photos it was taught from."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from companion.recognizer.geometry import crop_cards, crop_matrices, quads_to_rboxes

FILE = "strip_faces.npz"
REFERENCES_FILE = "strip_references.npz"  # their strips described (``StripNamer.made``)
# a covered crop's naming score: the whole crop's and its strip's (``StripNamer``) blended, the
# strip weighing this much (tuning scenes' ground-truth crops of a procedural deck: fanned
# cards named right 67.6 % by the whole crop, 79.0 % blended, loose cards 93.4 -> 92.7 %)
STRIP_WEIGHT = 1.0
# ... where the whole crop's best card leads the next by less than this (similarity): a surer
# lead is seldom wrong, and a strip cut where an outline puts it (off across by some 7 % of a
# width) is then the likelier to mislead. Tuning scenes (5151, n 20), named right, always ->
# 0.05 -> 0.02: procedural 70.1 -> 70.4 -> 70.4 %, recoloured hwatu 78.6 -> 78.6 -> 78.0 %,
# recoloured traditional 88.6 -> 90.0 -> 91.5 %
UNSURE_LEAD = 0.05
FILL = 128  # what stands for the hidden part of a crop and of a reference alike
# a strip's two edges (the covered card's side in sight, the side of the card over it) are
# looked for this share of a card's width either way of where the outlines put them
EDGE_SEARCH = 0.2
EDGE_POINTS = 24  # points along a card's length where an edge is looked at
EDGE_GAP = 1.5  # pixels either side of a line whose colours are compared
# each face is described where the crop shows it and this many times as the outline of a
# fanned card puts it: off across by JITTER_SHIFT of its width, as wide times e^JITTER_WIDTH,
# turned by JITTER_TURN degrees (standard deviations; the localizer's outlines of fanned cards
# on tuning scenes: 7 % of a width off, 10 % too wide or narrow, 2 degrees turned)
JITTERS = 6
JITTER_SHIFT = 0.07
JITTER_WIDTH = 0.1
JITTER_TURN = 2.0
# a strip's width is rounded to this share of the card's width: the references are
# described once per width (and side) and kept
STEP = 0.1
# a card this much covered or more is named by its strip too (less: its crop is the card)
MIN_COVERED = 0.15
# ... and this much of it shows at least (less: too little to tell a card by)
MIN_SHOWN = 0.15


@dataclass(frozen=True)
class Strip:
    """What a crop shows of its card: the ``width`` share of the card's width on one side
    (``left`` in the crop as it is cut), the rest covered."""

    left: bool
    width: float


@dataclass(frozen=True)
class StripFaces:
    faces: np.ndarray  # (K, H, W, 3) uint8 BGR: each card's face at the size a crop shows it
    class_ids: np.ndarray  # (K,) int64, indices into CLASSES

    def save(self, folder: str | Path) -> None:
        np.savez_compressed(Path(folder) / FILE, faces=self.faces, class_ids=self.class_ids)

    @classmethod
    def load(cls, folder: str | Path, size: tuple[int, int]) -> StripFaces | None:
        """The faces kept in ``folder`` at ``size`` (width, height); None where there are
        none, they cannot be read or are of another size."""
        try:
            with np.load(Path(folder) / FILE, allow_pickle=False) as kept:
                faces = kept["faces"].astype(np.uint8)
                ids = kept["class_ids"].astype(np.int64)
        except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile):
            return None
        if faces.ndim != 4 or faces.shape[1:] != (size[1], size[0], 3):
            return None
        if len(faces) != len(ids) or not len(ids):
            return None
        return cls(faces, ids)

    @classmethod
    def of_faces(cls, faces: dict[str, np.ndarray], size: tuple[int, int]) -> StripFaces:
        from companion.detections import CLASSES

        codes = sorted(faces)
        small = [cv2.resize(faces[c], size, interpolation=cv2.INTER_AREA) for c in codes]
        return cls(np.array(small, np.uint8), np.array([CLASSES.index(c) for c in codes]))


def face_size(settings) -> tuple[int, int]:
    """(width, height) a card fills in a crop (the crop is the card enlarged)."""
    enlarge = settings.inputs.crop_enlarge
    return (
        round(settings.inputs.crop_width / enlarge),
        round(settings.inputs.crop_height / enlarge),
    )


def for_deck(deck, settings) -> StripFaces | None:
    """A taught deck's faces for naming strips: kept in its folder, else found again in the
    scans or photos it was taught from and kept (``decks.kept_or_made``); None where those are
    gone too."""
    from companion.recognizer.decks import kept_or_made

    size = face_size(settings)
    return kept_or_made(
        deck,
        lambda folder: StripFaces.load(folder, size),
        lambda faces: StripFaces.of_faces(faces, size),
    )


def strips(quads: np.ndarray, settings, rows: np.ndarray) -> list:
    """What each of the detections ``rows`` may show of its card: for each detection of the
    frame whose outline (``quads``, N x 4 x 2) overlaps it, the ``Strip`` it would leave in
    sight lying over it, and that detection (a list of (strip, index into ``quads``), empty
    where none would leave one: a card alone, one covered too little, or across). Which of
    two cards lies over the other is left open: the strip that lies nearest one of the
    deck's cards tells (``StripNamer.similarity``)."""
    quads = np.asarray(quads, np.float32).reshape(-1, 4, 2)
    out: list = [[] for _ in rows]
    if len(quads) < 2 or not len(rows):
        return out
    matrices = crop_matrices(quads_to_rboxes(quads[rows]), settings)
    lo, hi = quads.min(axis=1), quads.max(axis=1)
    for k, (i, matrix) in enumerate(zip(rows, matrices, strict=True)):
        near = (lo[:, 0] < hi[i, 0]) & (hi[:, 0] > lo[i, 0])
        near &= (lo[:, 1] < hi[i, 1]) & (hi[:, 1] > lo[i, 1])
        near[i] = False
        for j in np.flatnonzero(near):
            strip = _strip(_covered(quads[j], matrix, settings), settings)
            if strip is not None and strip not in [s for s, _ in out[k]]:
                out[k].append((strip, int(j)))
    return out


def _covered(over: np.ndarray, matrix: np.ndarray, settings) -> np.ndarray:
    """Where the outline ``over`` (4, 2) covers the crop cut by ``matrix``: 1, else 0."""
    covered = np.zeros((settings.inputs.crop_height, settings.inputs.crop_width), np.uint8)
    inside = cv2.transform(np.asarray(over, np.float32)[None], matrix)[0]
    cv2.fillConvexPoly(covered, np.round(inside).astype(np.int32), 1)
    return covered


def _strip(covered: np.ndarray, settings) -> Strip | None:
    """The ``Strip`` a crop's card shows where ``covered`` (crop-sized, 1 where covered)."""
    cw, ch = settings.inputs.crop_width, settings.inputs.crop_height
    fw, fh = face_size(settings)
    x0, y0 = (cw - fw) // 2, (ch - fh) // 2
    shown = 1.0 - covered[y0 : y0 + fh, x0 : x0 + fw].mean(axis=0)  # per column of the card
    if 1.0 - shown.mean() < MIN_COVERED:
        return None
    seen = shown > 0.5
    count = int(seen.sum())
    if count < MIN_SHOWN * fw:
        return None
    if seen[:count].all():
        left = True
    elif seen[fw - count :].all():
        left = False
    else:
        return None  # covered on both sides, or across: no strip along one side
    return Strip(left, round(max(STEP, round(count / fw / STEP) * STEP), 2))


class StripNamer:
    """Each crop's similarity to each card's strip of the same side and width (the design
    embedder's features of both with the rest hidden, ``FILL``), the faces' strips described
    once per width and side and kept."""

    def __init__(self, faces: StripFaces, card_ids: np.ndarray, session, settings):
        known = np.isin(faces.class_ids, card_ids)
        self.faces, self.class_ids = faces.faces[known], faces.class_ids[known]
        self.card_ids = card_ids
        self.session = session
        self.settings = settings
        self._kept: dict[float, object] = {}  # strip width -> its references (``made``)
        cw, ch = settings.inputs.crop_width, settings.inputs.crop_height
        fw, fh = face_size(settings)
        self._origin = ((cw - fw) // 2, (ch - fh) // 2)
        rng = np.random.default_rng(0)
        placed = []
        for k in range(JITTERS + 1):
            # the face where the crop of a fanned card shows it: its outline is off by a
            # few pixels across, a little too wide or narrow, turned a degree or two
            shift = rng.normal(0, JITTER_SHIFT) * fw if k else 0.0
            wide = np.exp(rng.normal(0, JITTER_WIDTH)) if k else 1.0
            turn = np.radians(rng.normal(0, JITTER_TURN)) if k else 0.0
            cos, sin = np.cos(turn), np.sin(turn)
            matrix = np.zeros((2, 3))
            matrix[:, :2] = [[cos * wide, -sin], [sin * wide, cos]]
            matrix[:, 2] = np.array([cw / 2 + shift, ch / 2]) - matrix[:, :2] @ [fw / 2, fh / 2]
            for face in self.faces:
                placed.append(
                    cv2.warpAffine(
                        face,
                        matrix,
                        (cw, ch),
                        flags=cv2.INTER_LINEAR,
                        borderMode=cv2.BORDER_CONSTANT,
                        borderValue=(FILL, FILL, FILL),
                    )
                )
        self._whole = np.array(placed, np.uint8)
        # the same faces a half turn round: a crop shows a card either way up
        self._whole = np.concatenate([self._whole, self._whole[:, ::-1, ::-1]])
        self._whole_ids = np.tile(self.class_ids, 2 * (JITTERS + 1))

    @property
    def cards(self) -> np.ndarray:
        """The columns of ``card_ids`` it has faces of."""
        return np.unique(np.searchsorted(self.card_ids, self.class_ids))

    def _hidden(self, crops: np.ndarray, strip: Strip) -> np.ndarray:
        """``crops`` with all but the strip hidden (a copy)."""
        fw = face_size(self.settings)[0]
        x0, _ = self._origin
        shown = round(strip.width * fw)
        out = np.full_like(crops, FILL)
        if strip.left:
            out[:, :, x0 : x0 + shown] = crops[:, :, x0 : x0 + shown]
        else:
            out[:, :, x0 + fw - shown : x0 + fw] = crops[:, :, x0 + fw - shown : x0 + fw]
        out[:, : self._origin[1]] = FILL
        out[:, crops.shape[1] - self._origin[1] :] = FILL
        return out

    def references(self, strip: Strip):
        """The faces' left strips of one width, described (all made at once, ``made``)."""
        return self._kept[strip.width]

    def made(self, folder=None) -> StripNamer:
        """This namer with the faces' left strips of every width described (a right strip is
        named turned a half turn: the faces are described both ways up): those kept in
        ``folder`` by the same design embedder, else made (a few seconds) and kept there."""
        from companion.recognizer.decks import _ByCard, embed
        from companion.recognizer.design_references import fingerprint

        widths = np.round(np.arange(2, 9) * STEP, 2)
        model = f"{fingerprint()}:{JITTERS}:{len(self._whole)}"
        feats = None
        if folder:
            try:
                with np.load(Path(folder) / REFERENCES_FILE, allow_pickle=False) as kept:
                    if str(kept["model"]) == model and np.array_equal(kept["widths"], widths):
                        feats = kept["embeddings"].astype(np.float32)
            except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile):
                feats = None
        if feats is None or feats.shape[:2] != (len(widths), len(self._whole)):
            feats = np.stack(
                [embed(self.session, self._hidden(self._whole, Strip(True, w))) for w in widths]
            )
            if folder:
                try:
                    np.savez_compressed(
                        Path(folder) / REFERENCES_FILE,
                        embeddings=feats.astype(np.float16),
                        widths=widths,
                        model=np.array(model),
                    )
                except OSError:
                    pass  # a read-only folder: made again next time
        for width, some in zip(widths, feats, strict=True):
            self._kept[float(width)] = _ByCard(some, self._whole_ids, self.card_ids)
        return self

    def similarity(
        self, bgr: np.ndarray, quads: np.ndarray, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The detections ``rows``' similarity to each card of ``cards`` (rows, cards), by
        the one of its strips (``strips``, among all the frame's outlines ``quads``) that
        lies nearest a card: a strip left by a card that lies under it, not over it, shows
        part of that card too and lies farther from all. Each strip is cut where the edges
        in the frame put it (``placed``). And which rows had a strip (the others' are 0)."""
        from companion.recognizer.decks import embed

        quads = np.asarray(quads, np.float32).reshape(-1, 4, 2)
        out = np.zeros((len(rows), len(self.cards)), np.float32)
        nearest = np.full(len(rows), -np.inf, np.float32)
        shown = strips(quads, self.settings, rows)
        rboxes = quads_to_rboxes(quads)
        picture = None
        views: dict = {}  # strip -> (rows, crops)
        for k, some in enumerate(shown):
            for first, j in some:
                if picture is None:
                    picture = bgr.astype(np.float32)
                found = placed(picture, rboxes[rows[k]], first.left, rboxes[j], self.settings)
                if found is None:
                    continue
                box, strip = found
                crop = crop_cards(bgr, crop_matrices(box[None], self.settings), self.settings)
                views.setdefault(strip, ([], []))
                views[strip][0].append(k)
                views[strip][1].append(crop[0])
        for strip, (at, crops) in views.items():
            crops = np.array(crops)
            if not strip.left:  # turned a half turn, its strip lies on the left
                crops, strip = crops[:, ::-1, ::-1], Strip(True, strip.width)
            sims = self.references(strip).nearest(
                embed(self.session, self._hidden(np.ascontiguousarray(crops), strip))
            )
            for k, row in zip(at, sims, strict=True):
                if row.max() > nearest[k]:
                    out[k], nearest[k] = row, row.max()
        return out, np.isfinite(nearest)


def placed(picture: np.ndarray, rbox: np.ndarray, left: bool, over: np.ndarray, settings):
    """Where a card that the card ``over`` (a box: cx, cy, width, height, theta) covers shows a
    strip on one side (``left`` in its crop), as its box made as wide as a card of its height
    is (``face_size``) and the ``Strip``; None where it shows too little or too much. The
    localizer guesses a covered card's hidden side, so its outline of a fanned card is often
    off across by a tenth of its width: the box is set by two edges the frame shows, the
    card's own side in sight and the side of the card over it, each looked for near where
    the outlines put them (``EDGE_SEARCH``; ``picture``: the frame as float32)."""
    cx, cy, width, height, theta = (float(v) for v in rbox[:5])
    across = np.array([np.sin(theta), -np.cos(theta)])  # the crop's x axis in the frame
    down = np.array([np.cos(theta), np.sin(theta)])
    centre = np.array([cx, cy])
    side = -1.0 if left else 1.0
    reach = EDGE_SEARCH * width
    own = _edge(picture, centre, side * width / 2, across, down, height, reach)
    # the side of the card over it that lies over it: of its two long sides, the nearer
    ocx, ocy, owidth, _, otheta = (float(v) for v in over[:5])
    oacross = np.array([np.sin(otheta), -np.cos(otheta)])
    ends = [np.array([ocx, ocy]) + k * owidth / 2 * oacross for k in (-1.0, 1.0)]
    nearer = min((float((e - centre) @ across) for e in ends), key=abs)
    cover = _edge(picture, centre, nearer, across, down, height, reach)
    fw, fh = face_size(settings)
    wide = height * fw / fh
    shown = -side * (cover - own)
    if shown < MIN_SHOWN * wide or shown > (1.0 - MIN_COVERED) * wide:
        return None
    middle = centre + (own - side * wide / 2) * across
    strip = Strip(left, round(max(STEP, round(shown / wide / STEP) * STEP), 2))
    return np.array([middle[0], middle[1], wide, height, theta]), strip


def _edge(picture, centre, offset, across, down, height, reach) -> float:
    """Where, across a card (``offset`` from its ``centre`` along ``across``, give or take
    ``reach``), a straight edge along its length runs: the line where the colours on its two
    sides differ most the same way all along (a card's cut edge; the card's art differs
    along it). Returns the offset found."""
    steps = np.arange(-np.ceil(reach), np.ceil(reach) + 1)
    along = np.linspace(-0.4, 0.4, EDGE_POINTS)[:, None] * height * down
    base = centre + offset * across + along  # (P, 2)
    lines = base[None] + steps[:, None, None] * across  # (S, P, 2)
    before, after = lines - EDGE_GAP * across, lines + EDGE_GAP * across
    sample = np.concatenate([before, after]).astype(np.float32)
    seen = cv2.remap(
        picture, sample[..., 0], sample[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )  # (2S, P, 3)
    diff = (seen[len(steps) :] - seen[: len(steps)]).mean(axis=1)  # (S, 3)
    return offset + float(steps[int(np.argmax(np.linalg.norm(diff, axis=1)))])


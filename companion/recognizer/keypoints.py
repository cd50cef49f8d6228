"""A taught deck's cards confirmed by their own local features: ``Verifier``.

The nets and the deck's references (``decks.DeckNamer``) name a card by how its whole crop
looks, which tells apart the art of the decks the nets learned far better than a design of its
own. Here each card of a taught deck is found again by the points of its own picture: RootSIFT
descriptors of each card's straightened face (``DeckKeypoints``, computed when the deck is
taught and kept in its folder as ``keypoints.npz``), matched to the points of the frame around
a card the nets outlined (cut at the frame's own resolution there, never the whole frame), each
match kept only where its nearest card is clearly nearer than any other card (Lowe's ratio;
the plain chaff of one month count as one card, as scoring does), a homography from the face to
the frame per card (MAGSAC), and the face's outline carried through it checked for a card's
shape. Such a card is verified: its name overrides the nets' (``apply``), it is added where the
nets missed it, and a detection that only half overlaps it (a loose quad, a second look at the
same card) is dropped. A card a few dozen pixels long shows too few points and is left to the
nets (``MIN_VERIFY_PX``).

Costly (some tens of ms a card on 2 cores): ``detect`` on a photo verifies every card; the
live pipeline verifies a card once, when it settles (``Recognizer.verify_quad``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from companion.detections import BACK_ID, CLASSES, Detections, iou_matrix
from companion.game.cards import ALL_CODES, twin_group

KEYPOINTS_FILE = "keypoints.npz"
KEYPOINTS_FORMAT = 1
REFERENCE_HEIGHT = 256  # a face's long side (px) its points are found at (a teaching photo's)
# measured on the tuning tables (procedural and recoloured designs, 20 scenes each): a card
# under 60 px long was verified 5 times in 70, one of 90 px or more nearly always
MIN_VERIFY_PX = 60
UPSCALE = 1.5  # the region around a card is enlarged this much first: more points on small cards
REGION_MARGIN = 0.25  # the region: the card's box grown by this share of its size each way
RATIO = 0.8  # Lowe's ratio: nearest card's descriptor distance over the next card's
MIN_INLIERS = 6  # matches a card's homography must explain
REPROJECTION_PX = 4.0  # MAGSAC's threshold (region pixels)
CARD_ASPECT = (1.15, 2.4)  # long over short side of the outline carried to the frame
MIN_CORNER_DEGREES = 55.0  # ... and its corners' angles (a table seen from 45 degrees)
MAX_SIDE_RATIO = 1.4  # ... and each side over its opposite one (a card's near and far edges)
# ... and its long side over that of the card it was found around (cards of one deck are of
# one size; a few matches can carry a face to a skewed, far larger outline)
SIZE_RANGE = (0.67, 1.5)
SAME_IOU = 0.5  # a detection this overlapped by a verified card is that card
NEW_IOU = 0.3  # a verified card overlapping every detection less is one the nets missed
# a detection overlapping a verified card by this much but less than SAME_IOU outlines it
# badly (a loose quad, a second look): dropped. Tuning tables: false cards 0.40 -> 0.35 and
# 0.55 -> 0.40 a scene, none found lost
REJECT_IOU = 0.4
VERIFIED_CONFIDENCE = 0.99  # a verified card's confidence: 322 of 323 were right in a prototype
_GROUPS = sorted({twin_group(code)[0] for code in ALL_CODES})
_GROUP_OF_CLASS = np.array([_GROUPS.index(twin_group(code)[0]) for code in ALL_CODES])


def root_sift(descriptors: np.ndarray | None) -> np.ndarray:
    """SIFT descriptors made RootSIFT (L1-normalised, square-rooted: unit length, so that a
    dot product is the Hellinger kernel)."""
    if descriptors is None or len(descriptors) == 0:
        return np.zeros((0, 128), np.float32)
    d = descriptors / np.maximum(descriptors.sum(axis=1, keepdims=True), 1e-7)
    return np.sqrt(d).astype(np.float32)


def _sift():
    return cv2.SIFT_create()


def face_points(face: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """(points (N, 2), RootSIFT descriptors (N, 128), (width, height)) of a card's straightened
    face (BGR), shrunk to ``REFERENCE_HEIGHT`` where it is taller."""
    grey = cv2.cvtColor(face, cv2.COLOR_BGR2GRAY) if face.ndim == 3 else face
    if grey.shape[0] > REFERENCE_HEIGHT:
        scale = REFERENCE_HEIGHT / grey.shape[0]
        grey = cv2.resize(grey, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    keypoints, descriptors = _sift().detectAndCompute(grey, None)
    points = np.array([k.pt for k in keypoints], np.float32).reshape(-1, 2)
    return points, root_sift(descriptors), (grey.shape[1], grey.shape[0])


@dataclass(frozen=True)
class DeckKeypoints:
    """The points of a taught deck's faces: ``points`` (N, 2) in face pixels, ``descriptors``
    (N, 128) RootSIFT, ``class_ids`` (N,) the card each belongs to, ``sizes`` (len(CLASSES), 2)
    each card's face width and height (0 where the deck has no face of it)."""

    points: np.ndarray
    descriptors: np.ndarray
    class_ids: np.ndarray
    sizes: np.ndarray

    @classmethod
    def from_faces(cls, faces: dict[str, np.ndarray]) -> DeckKeypoints:
        """From straightened faces by card code (``MM-K``)."""
        points, descriptors, ids = [], [], []
        sizes = np.zeros((len(CLASSES), 2), np.float32)
        for code, face in sorted(faces.items()):
            p, d, size = face_points(face)
            cid = CLASSES.index(code)
            points.append(p)
            descriptors.append(d)
            ids.append(np.full(len(d), cid, np.int64))
            sizes[cid] = size
        if not points:
            return cls(np.zeros((0, 2), np.float32), np.zeros((0, 128), np.float32),
                       np.zeros(0, np.int64), sizes)  # fmt: skip
        return cls(np.concatenate(points), np.concatenate(descriptors), np.concatenate(ids), sizes)

    def save(self, folder: str | Path) -> None:
        np.savez_compressed(
            Path(folder) / KEYPOINTS_FILE,
            format=np.int64(KEYPOINTS_FORMAT),
            points=self.points.astype(np.float32),
            descriptors=self.descriptors.astype(np.float16),
            class_ids=self.class_ids.astype(np.int64),
            sizes=self.sizes.astype(np.float32),
        )

    @classmethod
    def load(cls, folder: str | Path) -> DeckKeypoints | None:
        """The points kept in a deck's folder, or None where there are none (or they cannot
        be read: the deck is then read without them, as before they existed)."""
        path = Path(folder) / KEYPOINTS_FILE
        try:
            with np.load(path, allow_pickle=False) as kept:
                if int(kept["format"]) != KEYPOINTS_FORMAT:
                    return None
                found = cls(
                    kept["points"].astype(np.float32),
                    kept["descriptors"].astype(np.float32),
                    kept["class_ids"].astype(np.int64),
                    kept["sizes"].astype(np.float32),
                )
        except (OSError, EOFError, ValueError, KeyError, TypeError):
            return None
        n = len(found.class_ids)
        if (
            found.points.shape != (n, 2) or found.descriptors.shape != (n, 128)
            or found.sizes.shape != (len(CLASSES), 2)
            or (n and (found.class_ids.min() < 0 or found.class_ids.max() >= len(ALL_CODES)))
        ):  # fmt: skip
            return None
        return found


@dataclass(frozen=True)
class Verified:
    """A card found by its own points: its class id, its outline in the frame (4, 2: the
    face's corners carried by the homography) and how many matches the homography explains."""

    class_id: int
    quad: np.ndarray
    inliers: int


def card_shaped(quad: np.ndarray) -> bool:
    """Whether an outline is a card seen from above or aslant: convex, no corner sharper
    than ``MIN_CORNER_DEGREES``, opposite sides alike (``MAX_SIDE_RATIO``), long over short
    side within ``CARD_ASPECT``."""
    q = np.asarray(quad, np.float64).reshape(4, 2)
    if not np.isfinite(q).all():
        return False
    edges = np.roll(q, -1, axis=0) - q
    turns = (
        edges[:, 0] * np.roll(edges, -1, axis=0)[:, 1]
        - edges[:, 1] * np.roll(edges, -1, axis=0)[:, 0]
    )
    if not ((turns > 0).all() or (turns < 0).all()):
        return False
    for i in range(4):
        u, v = q[i - 1] - q[i], q[(i + 1) % 4] - q[i]
        cos = u @ v / max(float(np.linalg.norm(u) * np.linalg.norm(v)), 1e-9)
        if np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))) < MIN_CORNER_DEGREES:
            return False
    sides = np.linalg.norm(np.roll(q, -1, axis=0) - q, axis=1)
    opposite = np.maximum(sides, np.roll(sides, 2)) / np.maximum(
        np.minimum(sides, np.roll(sides, 2)), 1e-9
    )
    if opposite.max() > MAX_SIDE_RATIO:
        return False
    width = (np.linalg.norm(q[1] - q[0]) + np.linalg.norm(q[2] - q[3])) / 2
    height = (np.linalg.norm(q[3] - q[0]) + np.linalg.norm(q[2] - q[1])) / 2
    aspect = max(width, height) / max(min(width, height), 1e-9)
    return CARD_ASPECT[0] <= aspect <= CARD_ASPECT[1]


def long_side(quad: np.ndarray) -> float:
    q = np.asarray(quad, np.float64).reshape(4, 2)
    return float(np.linalg.norm(np.roll(q, -1, axis=0) - q, axis=1).max())


def region_box(quad: np.ndarray, shape) -> tuple[int, int, int, int]:
    """The frame's box around a card (x0, y0, x1, y1): its bounds grown by ``REGION_MARGIN``."""
    q = np.asarray(quad, np.float64).reshape(4, 2)
    lo, hi = q.min(axis=0), q.max(axis=0)
    pad = (hi - lo) * REGION_MARGIN
    x0, y0 = np.floor(lo - pad).astype(int)
    x1, y1 = np.ceil(hi + pad).astype(int)
    h, w = shape[:2]
    return max(0, x0), max(0, y0), min(w, x1), min(h, y1)


class Verifier:
    """Finds a taught deck's cards by their points (``DeckKeypoints``) around given places."""

    def __init__(self, keypoints: DeckKeypoints):
        self.keypoints = keypoints
        groups = _GROUP_OF_CLASS[keypoints.class_ids]
        order = np.argsort(groups, kind="stable")  # the references grouped by twin group
        self._points = keypoints.points[order]
        self._descriptors = np.ascontiguousarray(keypoints.descriptors[order])
        self._ids = keypoints.class_ids[order]
        self._groups = groups[order]
        self._starts = np.flatnonzero(np.diff(self._groups, prepend=-1))
        self._ends = np.append(self._starts[1:], len(self._groups))
        self._sift = _sift()

    def region(self, grey: np.ndarray, quad: np.ndarray) -> list[Verified]:
        """The cards verified in the region around ``quad`` (frame pixels) of a grey frame."""
        x0, y0, x1, y1 = region_box(quad, grey.shape)
        if x1 - x0 < 8 or y1 - y0 < 8 or len(self._groups) == 0:
            return []
        crop = cv2.resize(
            grey[y0:y1, x0:x1], None, fx=UPSCALE, fy=UPSCALE, interpolation=cv2.INTER_CUBIC
        )
        keypoints, descriptors = self._sift.detectAndCompute(crop, None)
        descriptors = root_sift(descriptors)
        if len(descriptors) < MIN_INLIERS or len(self._starts) < 2:
            return []
        points = np.array([k.pt for k in keypoints], np.float32) / UPSCALE + [x0, y0]
        sims = descriptors @ self._descriptors.T
        by_group = np.maximum.reduceat(sims, self._starts, axis=1)
        top = np.argsort(-by_group, axis=1)[:, :2]
        rows = np.arange(len(descriptors))
        near = np.sqrt(np.maximum(2 - 2 * by_group[rows, top[:, 0]], 0))
        next_ = np.sqrt(np.maximum(2 - 2 * by_group[rows, top[:, 1]], 0))
        good = np.flatnonzero(near < RATIO * next_)
        found = []
        for group in np.unique(top[good, 0]):
            matched = good[top[good, 0] == group]
            if len(matched) < MIN_INLIERS:
                continue
            columns = np.arange(self._starts[group], self._ends[group])
            for class_id in np.unique(self._ids[columns]):  # each twin on its own
                own = columns[self._ids[columns] == class_id]
                nearest = own[np.argmax(sims[np.ix_(matched, own)], axis=1)]
                card = self._card(int(class_id), self._points[nearest], points[matched])
                if card is None:
                    continue
                size = long_side(card.quad) / max(long_side(quad), 1e-9)
                if SIZE_RANGE[0] <= size <= SIZE_RANGE[1]:
                    found.append(card)
        return found

    def _card(self, class_id: int, face_xy: np.ndarray, frame_xy: np.ndarray) -> Verified | None:
        homography, inliers = cv2.findHomography(
            face_xy, frame_xy, cv2.USAC_MAGSAC, REPROJECTION_PX / UPSCALE
        )
        if homography is None or int(inliers.sum()) < MIN_INLIERS:
            return None
        w, h = self.keypoints.sizes[class_id]
        corners = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32).reshape(-1, 1, 2)
        quad = cv2.perspectiveTransform(corners, homography).reshape(4, 2)
        if not card_shaped(quad):
            return None
        return Verified(class_id, quad.astype(np.float32), int(inliers.sum()))

    def places(self, grey: np.ndarray, quads: np.ndarray) -> list[Verified]:
        """The cards verified around each of ``quads`` (those at least ``MIN_VERIFY_PX`` long),
        one per place: the one its homography explains most matches of."""
        found = []
        for quad in quads:
            if long_side(quad) >= MIN_VERIFY_PX:
                found += self.region(grey, quad)
        found.sort(key=lambda v: -v.inliers)
        kept: list[Verified] = []
        for card in found:
            if (
                not kept
                or iou_matrix(card.quad[None], np.stack([k.quad for k in kept])).max() < SAME_IOU
            ):
                kept.append(card)
        return kept

    def frame(self, bgr: np.ndarray, det: Detections, proposals: np.ndarray) -> Detections:
        """``det`` checked by the deck's points around each face-up detection and each other
        place the decode looked at (``proposals``, (N, 4, 2)), as ``apply`` says."""
        grey = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
        faces = det.quads[det.class_ids != BACK_ID] if len(det) else np.zeros((0, 4, 2), np.float32)
        places = list(faces)
        proposals = np.asarray(proposals, np.float32).reshape(-1, 4, 2)
        for quad in proposals:  # one look per place the decode looked at
            if not places or iou_matrix(quad[None], np.stack(places)).max() < SAME_IOU:
                places.append(quad)
        if not places:
            return det
        return apply(det, self.places(grey, np.stack(places)))

    def quad(self, bgr: np.ndarray, quad: np.ndarray) -> Verified | None:
        """The card verified at ``quad`` (overlapping it by ``SAME_IOU``), or None."""
        grey = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY) if bgr.ndim == 3 else bgr
        quad = np.asarray(quad, np.float32).reshape(4, 2)
        if long_side(quad) < MIN_VERIFY_PX:
            return None
        found = [v for v in self.region(grey, quad)
                 if iou_matrix(v.quad[None], quad[None])[0, 0] >= SAME_IOU]  # fmt: skip
        return max(found, key=lambda v: v.inliers, default=None)


def apply(det: Detections, verified: list[Verified]) -> Detections:
    """``det`` with the verified cards' names: a detection a verified card overlaps by
    ``SAME_IOU`` takes its name (surely, its alternatives the nets' name and theirs); a
    detection it overlaps by ``REJECT_IOU`` to ``SAME_IOU`` is a bad outline of it, dropped;
    a verified card no detection left overlaps by ``NEW_IOU`` is added, with its own outline."""
    if not verified:
        return det
    quads = np.stack([v.quad for v in verified]).astype(np.float32)
    ids = np.array([v.class_id for v in verified], np.int64)
    k = det.alt_ids.shape[1] if det.alt_ids.ndim == 2 else 0
    class_ids, confidence = det.class_ids.copy(), det.confidence.copy()
    alt_ids, alt_scores = det.alt_ids.copy(), det.alt_scores.copy()
    keep = np.ones(len(det), bool)
    overlap = iou_matrix(det.quads, quads) if len(det) else np.zeros((0, len(verified)))
    for i in range(len(det)):
        if class_ids[i] == BACK_ID:
            continue
        j = int(overlap[i].argmax())
        if overlap[i, j] >= SAME_IOU:
            if class_ids[i] != ids[j] and k:
                previous = [class_ids[i], *[a for a in alt_ids[i] if a != ids[j]]][:k]
                alt_ids[i] = previous
                alt_scores[i] = np.minimum(alt_scores[i], 0.01)
            class_ids[i], confidence[i] = ids[j], max(float(confidence[i]), VERIFIED_CONFIDENCE)
        elif overlap[i, j] >= REJECT_IOU:
            keep[i] = False
    # a bad outline dropped gives way to the verified card's own
    new = (
        np.flatnonzero(overlap[keep].max(axis=0) < NEW_IOU)
        if keep.any()
        else np.arange(len(verified))
    )
    checked = Detections(det.quads, class_ids, confidence, alt_ids, alt_scores)[keep]
    if len(new) == 0:
        return checked
    added = Detections(
        quads[new],
        ids[new],
        np.full(len(new), VERIFIED_CONFIDENCE, np.float32),
        np.zeros((len(new), k), np.int64),
        np.zeros((len(new), k), np.float32),
    )
    if len(checked) == 0:
        return added
    return Detections(
        *(np.concatenate([getattr(checked, f), getattr(added, f)]) for f in
          ("quads", "class_ids", "confidence", "alt_ids", "alt_scores"))
    )  # fmt: skip

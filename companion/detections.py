"""Card detections: one small dataclass of parallel numpy arrays (supervision style).

Every stage of the vision pipeline takes a ``Detections`` and returns a new one, so stages
compose (``unique_cards(nms(det))``) and filtering is plain numpy: ``det[det.confidence > 0.5]``.
Class ids index ``CLASSES``: the 48 card codes in ``ALL_CODES`` order, then ``back``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from companion.game.cards import ALL_CODES, CardError, twin_group
from companion.messages import N_, Message, catalog

# the one sentence of this module, in the message catalogs beside the code that says it
catalog(__name__)(
    "refusal.card_class",
    N_("Unknown card class %(value)s: expected MM-K (01-1 to 12-4) or 'back'."),
    "refusal",
)

BACK = "back"
CLASSES: tuple[str, ...] = (*ALL_CODES, BACK)
BACK_ID = len(CLASSES) - 1
_CLASS_IDS = {code: i for i, code in enumerate(CLASSES)}
_TWIN_GROUP_IDS = np.array(
    [*(_CLASS_IDS[twin_group(code)[0]] for code in ALL_CODES), BACK_ID], dtype=np.int64
)


def class_id(code: str) -> int:
    """The class id of a card code (``"08-1"``) or ``"back"``; CardError if unknown."""
    try:
        return _CLASS_IDS[code]
    except KeyError:
        raise CardError(Message("refusal.card_class", value=repr(code))) from None


def chaff_group(class_ids: np.ndarray) -> np.ndarray:
    """Map each class id to its twin group's first id (``companion.game.cards.twin_group``):
    the plain chaff of one month share a group, every other class is its own.

    Scoring never needs to know which twin a card is, so the evaluation's "chaff-equivalent"
    accuracy compares these groups instead of exact ids.
    """
    return _TWIN_GROUP_IDS[np.asarray(class_ids, dtype=int)]


@dataclass(frozen=True)
class Detections:
    """N detected cards as parallel arrays.

    ``quads`` (N,4,2) float32 corners in image pixels, in the card's own order (top-left,
    top-right, bottom-right, bottom-left of the upright face); ``class_ids`` (N,) int;
    ``confidence`` (N,) float32; ``alt_ids``/``alt_scores`` (N,K) the next-best classes.
    """

    quads: np.ndarray = field(default_factory=lambda: np.zeros((0, 4, 2), np.float32))
    class_ids: np.ndarray = field(default_factory=lambda: np.zeros((0,), np.int64))
    confidence: np.ndarray = field(default_factory=lambda: np.zeros((0,), np.float32))
    alt_ids: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    alt_scores: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))

    def __post_init__(self):
        n = len(self.class_ids)
        quads = np.asarray(self.quads, np.float32).reshape(n, 4, 2)
        k = np.asarray(self.alt_ids).shape[1] if np.asarray(self.alt_ids).ndim == 2 else 0
        object.__setattr__(self, "quads", quads)
        object.__setattr__(self, "class_ids", np.asarray(self.class_ids, np.int64).reshape(n))
        object.__setattr__(self, "confidence", np.asarray(self.confidence, np.float32).reshape(n))
        object.__setattr__(self, "alt_ids", np.asarray(self.alt_ids, np.int64).reshape(n, k))
        object.__setattr__(
            self, "alt_scores", np.asarray(self.alt_scores, np.float32).reshape(n, k)
        )

    @classmethod
    def empty(cls) -> Detections:
        return cls()

    @classmethod
    def from_cards(cls, codes, quads, confidence=None) -> Detections:
        """Build detections from card codes (handy for tests and ground truth)."""
        ids = np.array([class_id(c) for c in codes], np.int64)
        conf = np.ones(len(ids), np.float32) if confidence is None else confidence
        return cls(
            quads=np.asarray(quads, np.float32).reshape(len(ids), 4, 2),
            class_ids=ids,
            confidence=conf,
        )

    def __len__(self) -> int:
        return len(self.class_ids)

    def __getitem__(self, index) -> Detections:
        """Filter by boolean mask, integer index array or slice; always returns Detections."""
        if isinstance(index, (int, np.integer)):
            index = [int(index)]
        return Detections(
            quads=self.quads[index],
            class_ids=self.class_ids[index],
            confidence=self.confidence[index],
            alt_ids=self.alt_ids[index],
            alt_scores=self.alt_scores[index],
        )

    @property
    def card_codes(self) -> list[str]:
        return [CLASSES[i] for i in self.class_ids]

    @property
    def centers(self) -> np.ndarray:
        return self.quads.mean(axis=1)

    def sorted(self) -> Detections:
        """Most confident first."""
        return self[np.argsort(-self.confidence, kind="stable")]

    def to_json(self) -> list[dict]:
        """One dict per card: ``card``, ``confidence``, ``quad``, ``alternatives``."""
        out = []
        for i in range(len(self)):
            out.append(
                {
                    "card": CLASSES[self.class_ids[i]],
                    "confidence": round(float(self.confidence[i]), 4),
                    "quad": [[round(float(x), 1), round(float(y), 1)] for x, y in self.quads[i]],
                    "alternatives": [
                        {"card": CLASSES[a], "confidence": round(float(s), 4)}
                        for a, s in zip(self.alt_ids[i], self.alt_scores[i], strict=False)
                    ],
                }
            )
        return out

    @classmethod
    def from_json(cls, items: list[dict]) -> Detections:
        """Inverse of ``to_json`` (alternatives padded to the longest list)."""
        k = max((len(d.get("alternatives", [])) for d in items), default=0)
        alt_ids = np.zeros((len(items), k), np.int64)
        alt_scores = np.zeros((len(items), k), np.float32)
        for i, d in enumerate(items):
            for j, a in enumerate(d.get("alternatives", [])):
                alt_ids[i, j] = class_id(a["card"])
                alt_scores[i, j] = a["confidence"]
        return cls(
            quads=np.array([d["quad"] for d in items], np.float32).reshape(len(items), 4, 2),
            class_ids=np.array([class_id(d["card"]) for d in items], np.int64),
            confidence=np.array([d["confidence"] for d in items], np.float32),
            alt_ids=alt_ids,
            alt_scores=alt_scores,
        )


# --------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------


def polygon_area(quad: np.ndarray) -> float:
    import cv2

    # OpenCV's shoelace: np.roll on 4 points costs more than the arithmetic (NMS runs it a lot)
    return float(abs(cv2.contourArea(np.asarray(quad, np.float32).reshape(-1, 2))))


def polygon_areas(polygons: np.ndarray) -> np.ndarray:
    """``polygon_area`` of many polygons (N,K,2) at once: the shoelace formula, vectorised."""
    x, y = polygons[..., 0], polygons[..., 1]
    # each corner's next one; slicing costs half what np.roll does on a few dozen quads
    next_x = np.concatenate([x[:, 1:], x[:, :1]], axis=1)
    next_y = np.concatenate([y[:, 1:], y[:, :1]], axis=1)
    return 0.5 * np.abs((x * next_y - next_x * y).sum(axis=1))


def quad_iou(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union of two convex quads (any corner order, either winding)."""
    import cv2

    a = _ccw(np.asarray(a, np.float32))
    b = _ccw(np.asarray(b, np.float32))
    area_a, area_b = polygon_area(a), polygon_area(b)
    if area_a <= 0 or area_b <= 0:
        return 0.0
    inter, _ = cv2.intersectConvexConvex(a, b)
    inter = max(float(inter), 0.0)
    return inter / (area_a + area_b - inter + 1e-9)


def _ccw(quad: np.ndarray) -> np.ndarray:
    # cv2.intersectConvexConvex wants a consistent winding; reorder as a convex hull
    import cv2

    return cv2.convexHull(quad.reshape(-1, 1, 2)).reshape(-1, 2).astype(np.float32)


def distances2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pairwise squared distances between points (x[i], y[i]).

    Written out per axis: numpy's sum over a trailing axis of length 2 is about 20 times
    slower, and the recognizer's candidate spacing runs this twice a frame."""
    dx = x[:, None] - x[None]
    dy = y[:, None] - y[None]
    return dx * dx + dy * dy


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise quad IoU (len(a), len(b)); a cheap bounding-box test skips far pairs."""
    out = np.zeros((len(a), len(b)), np.float32)
    if len(a) == 0 or len(b) == 0:
        return out
    amin, amax = a.min(axis=1), a.max(axis=1)
    bmin, bmax = b.min(axis=1), b.max(axis=1)
    for i in range(len(a)):
        overlap = np.all((np.minimum(amax[i], bmax) - np.maximum(amin[i], bmin)) > 0, axis=1)
        for j in np.flatnonzero(overlap):
            out[i, j] = quad_iou(a[i], b[j])
    return out


# --------------------------------------------------------------------------------------------
# Stages: Detections -> Detections
# --------------------------------------------------------------------------------------------


def nms(det: Detections, iou_threshold: float = 0.5) -> Detections:
    """Class-agnostic non-maximum suppression on quads: one physical card, one detection."""
    return det[nms_indices(det.quads, det.confidence, iou_threshold)]


def nms_indices(quads: np.ndarray, scores: np.ndarray, iou_threshold: float = 0.5) -> np.ndarray:
    """Indices of the quads NMS keeps, best score first."""
    order = np.argsort(-np.asarray(scores), kind="stable")
    if len(order) <= 1:
        return order
    quads = np.asarray(quads, np.float32)[order]
    # the polygons lie inside their bounding boxes, so IoU <= (box intersection) / (larger
    # area): only pairs where that bound passes the threshold need the exact (slower) test
    areas = polygon_areas(quads)
    lo, hi = quads.min(axis=1), quads.max(axis=1)
    overlap = np.clip(
        np.minimum(hi[:, None], hi[None]) - np.maximum(lo[:, None], lo[None]), 0, None
    ).prod(axis=2)
    bound = overlap / np.maximum(np.maximum(areas[:, None], areas[None]), 1e-9)
    near = np.triu(bound > iou_threshold, k=1)
    keep = np.ones(len(quads), bool)
    for i, j in zip(*np.nonzero(near), strict=True):  # row by row: i is always decided first
        if keep[i] and keep[j] and quad_iou(quads[i], quads[j]) > iou_threshold:
            keep[j] = False
    return order[keep]


def unique_cards(
    det: Detections,
    min_confidence: float = 0.05,
    same_card_iou: float = 1.0,
    rank: np.ndarray | None = None,
) -> Detections:
    """Each physical card exists once in a deck: resolve duplicate face classes.

    The most confident detection (or the highest ``rank``, one number per detection, where
    given) keeps its class; a less confident (lower ranked) detection of an already
    claimed card falls back to its best unclaimed alternative (its confidence becomes that
    alternative's score), or is dropped when no alternative reaches ``min_confidence``, or
    when it overlaps the claiming detection by more than ``same_card_iou`` (then it is that
    same card seen a second time, e.g. a box straddling two cards of a capture row, and any
    other name for it would be a false card). Backs may repeat, but a back overlapping a
    likelier back by more than ``same_card_iou`` is that back seen twice, and is dropped. Chaff
    of one month are interchangeable for scoring, but each detection still reports its own
    best guess.
    """
    if len(det) == 0:
        return det
    det = det[np.argsort(-(det.confidence if rank is None else np.asarray(rank)), kind="stable")]
    class_ids = det.class_ids.copy()
    confidence = det.confidence.copy()
    alt_ids = det.alt_ids.copy()
    alt_scores = det.alt_scores.copy()
    claimed: dict[int, int] = {}  # class id -> index of the detection holding it
    backs: list[int] = []  # the backs kept so far

    def back_seen_twice(i: int) -> bool:
        return same_card_iou < 1.0 and any(
            quad_iou(det.quads[i], det.quads[b]) > same_card_iou for b in backs
        )

    keep = np.ones(len(det), bool)
    for i in range(len(det)):
        cid = int(class_ids[i])
        if cid == BACK_ID:
            if back_seen_twice(i):
                keep[i] = False
            else:
                backs.append(i)
            continue
        if cid not in claimed:
            claimed[cid] = i
            continue
        keep[i] = False
        if same_card_iou < 1.0 and quad_iou(det.quads[i], det.quads[claimed[cid]]) > same_card_iou:
            continue
        for j, (alt, score) in enumerate(zip(alt_ids[i], alt_scores[i], strict=False)):
            alt = int(alt)
            if score < min_confidence:
                break
            if alt == BACK_ID and back_seen_twice(i):
                break
            if alt == BACK_ID or alt not in claimed:
                # the original guess moves into the alternatives, in place of the new class
                alt_ids[i, j], alt_scores[i, j] = cid, confidence[i]
                class_ids[i], confidence[i] = alt, score
                if alt == BACK_ID:
                    backs.append(i)
                else:
                    claimed[alt] = i
                keep[i] = True
                break
    out = Detections(det.quads, class_ids, confidence, alt_ids, alt_scores)
    return out[keep]


SIZE_MIN_SUPPORT = 5  # detections needed to say what size a card should be here


def size_offsets(det: Detections) -> np.ndarray | None:
    """How far each detection's log size lies from what the others say for its place
    (``quad_size_offsets`` over all of them)."""
    return quad_size_offsets(det.quads)


def quad_size_offsets(quads: np.ndarray, support: np.ndarray | None = None) -> np.ndarray | None:
    """How far each quad's log size lies from what the ``support`` quads (a mask; all when
    None) say for its place.

    All cards of a deck have one size and lie on one table, so their apparent size (the square
    root of the quad's area) follows the perspective smoothly: log size is close to a plane over
    the image position. The plane is fitted to the support, then up to twice more without those
    far from the last fit. Returns log size minus the plane for every quad (0.3: 35 % larger;
    -0.3: 26 % smaller), or None with ``SIZE_MIN_SUPPORT`` supporting quads or fewer, or fewer
    than that fitting.
    """
    support = np.ones(len(quads), bool) if support is None else np.asarray(support, bool)
    if support.sum() <= SIZE_MIN_SUPPORT:
        return None
    centres = quads.mean(axis=1).astype(np.float64) / 1000.0
    size = np.log(np.sqrt(np.maximum(polygon_areas(quads), 1e-6)))
    plane = np.column_stack([np.ones(len(quads)), centres])
    fit = support
    for _ in range(3):
        # least squares by the 3x3 normal equations: an SVD costs ten times more here
        a = plane[fit]
        coef = np.linalg.solve(a.T @ a + 1e-9 * np.eye(3), a.T @ size[fit])
        off = size - plane @ coef
        far = np.abs(off)
        refit = support & (far < max(0.1, 3.0 * float(_median(far[support]))))
        if refit.sum() < SIZE_MIN_SUPPORT:
            return None
        if (refit == fit).all():
            break
        fit = refit
    return off


def _median(values: np.ndarray) -> float:
    """``np.median`` of a 1-d array, equal to the last bit, at a seventh of its cost on the few
    dozen sizes of a frame (the size check runs four times a frame)."""
    n = len(values)
    half = n // 2
    if n % 2:
        return float(np.partition(values, half)[half])
    low, high = np.partition(values, [half - 1, half])[half - 1 : half + 1]
    return float((low + high) / 2)


def consistent_sizes(det: Detections, tolerance: float, keep_above: float = 1.0) -> Detections:
    """Drop the detections whose size does not fit the others' (``size_offsets``): more than
    ``tolerance`` off in log size, unless at least ``keep_above`` sure. Phones, card boxes,
    quads straddling two cards and outlines of a covered card's visible corner often are that
    far off; real cards rarely are. Too few detections: nothing is dropped.
    """
    keep = sizes_fit(det, tolerance, keep_above)
    return det if keep.all() else det[keep]


def sizes_fit(det: Detections, tolerance: float, keep_above: float = 1.0) -> np.ndarray:
    """Which detections ``consistent_sizes`` keeps, as a mask."""
    off = size_offsets(det) if tolerance > 0 else None
    if off is None:
        return np.ones(len(det), bool)
    return (np.abs(off) <= tolerance) | (det.confidence >= keep_above)


def grow_to_size(det: Detections, below: float) -> Detections:
    """Outline each card more than ``below`` smaller (in log size) than its place says at the
    size the others say, about its own centre. Such quads mostly outline only the visible part
    of a covered card, or draw a card a little small, and miss it by IoU; grown, they cover it.
    """
    if below <= 0:
        return det
    off = size_offsets(det)
    if off is None or not (off < -below).any():
        return det
    scale = np.where(off < -below, np.exp(-np.minimum(off, 0.0)), 1.0).astype(np.float32)
    centres = det.quads.mean(axis=1, keepdims=True)
    quads = centres + (det.quads - centres) * scale[:, None, None]
    return Detections(quads, det.class_ids, det.confidence, det.alt_ids, det.alt_scores)


def final_cards(
    det: Detections,
    *,
    nms_iou: float,
    same_card_iou: float,
    size_tolerance: float,
    size_keep_above: float,
    size_grow_below: float,
    rank: np.ndarray | None = None,
) -> Detections:
    """The decode's last steps, in this order: the size check (``consistent_sizes``), NMS, one
    card once (``unique_cards``), then small quads grown (``grow_to_size``). The size check
    comes first so that a thing of the wrong size (a card box showing a card's art, a quad
    straddling two cards) neither suppresses a real card in NMS nor claims its name before it
    is dropped itself; both would lose the real card.

    ``rank`` (one number per detection; default: confidence) says which of two overlapping
    detections NMS keeps and which of two claimants of one card keeps its name: the learned
    acceptance rule's probability knows the size and shape as well as the name's sureness."""
    rank = det.confidence if rank is None else np.asarray(rank)
    fits = sizes_fit(det, size_tolerance, size_keep_above)
    det, rank = det[fits], rank[fits]
    first = nms_indices(det.quads, rank, nms_iou)
    det = unique_cards(det[first], same_card_iou=same_card_iou, rank=rank[first])
    return grow_to_size(det, size_grow_below)

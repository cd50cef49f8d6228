"""Frame -> Detections: a tiny two-stage card recognizer on onnxruntime + OpenCV + numpy.

Stage 1, the *localizer*, looks at a letterboxed, downscaled frame (768x448 for the committed
model) and predicts, at stride 4, a card-centre heatmap plus each card's size and long-axis angle
(as cos 2θ, sin 2θ, which does not care which end is up). Hot cells become rotated boxes: the
3x3 maxima, or (``peak_spacing``) every hot cell not too close to a hotter one, which also finds
the cards of a tight capture row whose centres the heatmap blurs into one ridge.

Stage 2, the *classifier*, gets one rectified crop per box, cut from the full-resolution frame
with the long axis vertical (slightly enlarged, e.g. 48x80). It outputs 48 cards + ``back`` +
``none`` (not a card: localizer false alarms die here), whether the card is upside down in the
crop, and the card's four corners in the crop, so the final quad follows perspective and comes
in the card's own corner order (top-left, top-right, bottom-right, bottom-left of the face).
Crops that found the same card as a surer crop are dropped; the doubtful rest get a second look,
cut around the corners found by the first. Then *second chances* (``Settings.extra_heat``,
``neighbour_*``): extra crops at the heatmap's cooler peaks and beside each sure card (where the
next card of a capture row or of the field lies, and one step on along each fanned row of found
cards, ``Settings.row_steps``), looked at only where no card was found yet and kept only when
the classifier is very sure, for the cards the localizer barely saw. Last
(``detections.final_cards``), a card whose size does not fit the others' (one deck, one table)
is dropped unless it is very sure, before NMS and one card once, and one a little too small is
outlined at the size they say. A card at a place the localizer is sure of needs less confidence
in its name (``Settings.hot_heat``); or, where the model has one (the committed model does), a
learned rule decides which crops count as cards (``Settings.accept_weights``: a logistic model
over how sure the name is, the heat there, the size and shape against the other cards', and
whether a surer crop names the same card, bent by boosted trees where a straight line does not
fit, ``Settings.accept_trees``; both fitted by ``companion fit-acceptance``), and the same
rule's probability, not the name's sureness, says which of two first looks at one card goes on,
which of two overlapping crops NMS keeps and which claimant of a card's name keeps it.

The nets come in three sets (``Recognizer.load``'s ``precision``, ``--nets``): ``int8``, both
nets quantized, for CPUs with int8 dot products (x86 VNNI or AMX, Arm dotprod; ``int8_is_fast``);
``float`` (``float_nets`` in the metadata); and ``avx2`` (``avx2_nets``), the float localizer
with a classifier quantized to 7-bit weights, for x86 CPUs without int8 dot products. There
8-bit weights saturate onnxruntime's int8 sums (a loss of recall) and the int8 localizer is no
faster than the float one, while the 7-bit classifier cannot saturate and runs a quarter faster
than the float one (models/README.md, "Speed"). ``auto`` picks the set made for this CPU.

No torch here: training (``companion/training.py``) shares only the geometry helpers below.
Detector interface (Frigate style): ``Recognizer.load(path).detect(bgr) -> Detections``.
"""

from __future__ import annotations

import json
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from companion import CompanionError
from companion.detections import (
    BACK,
    BACK_ID,
    CLASSES,
    Detections,
    distances2,
    final_cards,
)
from companion.resources import package_path

MODELS_DIR = package_path("models")  # the runtime nets ship inside the package
DEFAULT_MODEL = MODELS_DIR / "recognizer.json"
NONE_ID = len(CLASSES)  # the classifier's extra "not a card" output
MAX_SIDE = 4096  # larger frames are downscaled first: crops never need more detail
MAX_HOT_CELLS = 384  # with peak_spacing, the hottest cells looked at
DISTINCT_SPACING = 0.25  # two crops whose cards' centres are this close saw the same card
SPOT_FLOOR = 0.3  # a second-chance crop less sure than this at first gets no second look
FREE_SPACING = 0.5  # second chances look only this far (in short sides) from found cards
PRECISIONS = ("auto", "int8", "float", "avx2")
NET_SETS = {"float": "float_nets", "avx2": "avx2_nets"}  # metadata keys of the other sets
INT8_DOT_FLAGS = {"avx512_vnni", "avx_vnni", "amx_int8"}  # x86 flags in /proc/cpuinfo


def _cpuinfo() -> str:
    """The text of /proc/cpuinfo; empty where there is none."""
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def int8_is_fast(cpu_flags: str | None = None, machine: str | None = None) -> bool:
    """Whether this CPU multiplies int8 vectors natively (x86 VNNI or AMX, Arm dotprod), where
    the int8 nets run faster than the float ones. Without (plain AVX2) onnxruntime's int8
    kernels are slower than its float ones (models/README.md, "Speed"). ``cpu_flags``: the
    text of /proc/cpuinfo (read when None; empty where there is none)."""
    machine = (machine or platform.machine()).lower()
    if cpu_flags is None:
        cpu_flags = _cpuinfo()
    flags = set(re.findall(r"[a-z0-9_]+", cpu_flags.lower()))
    if machine in ("arm64", "aarch64"):
        return "asimddp" in flags or sys.platform == "darwin"  # every Apple chip has dotprod
    return bool(flags & INT8_DOT_FLAGS)


def cpu_name(cpuinfo: str | None = None) -> str:
    """What CPU this is, for speed figures: /proc/cpuinfo's model name (``cpuinfo``: that
    file's text, read when None), else what the platform says."""
    if cpuinfo is None:
        cpuinfo = _cpuinfo()
    found = re.search(r"^(?:model name|Model|Hardware)\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    if found:
        return found.group(1).strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def auto_nets(available, cpu_flags: str | None = None, machine: str | None = None) -> str:
    """Which of a model's sets of nets (``available``: names among PRECISIONS) suits this CPU:
    int8 where it has int8 dot products; else the avx2 set on x86 (float localizer, 7-bit
    classifier), else float; int8 where the model has nothing else. ``cpu_flags`` and
    ``machine`` as for ``int8_is_fast``."""
    machine = (machine or platform.machine()).lower()
    if int8_is_fast(cpu_flags, machine):
        order = ("int8", "avx2", "float")
    elif machine in ("x86_64", "amd64", "i686", "x86"):
        order = ("avx2", "float", "int8")
    else:  # the 7-bit classifier is made for x86's int8 kernels
        order = ("float", "int8", "avx2")
    return next(name for name in order if name in available)


class RecognizerError(CompanionError):
    """A missing or unusable model, or an image that cannot be processed."""


# What the learned acceptance rule (``Settings.accept_weights``) looks at, per crop:
ACCEPT_FEATURES = (
    "bias",
    "card_logit",  # the classifier's best card or back, as a logit
    "none_logit",  # its "not a card", as a logit
    "heat",  # the localizer's heat at the quad's centre (3x3 maximum)
    "size_off",  # |log size - what the sure crops' sizes say for its place| (0 if unknown)
    "size_known",  # 1 where enough sure crops said what size a card is there
    "smaller",  # min(0, log size - that): outlines of a covered card's visible part
    "shape_off",  # |log(long side / short side) - log(CARD_ASPECT)|: straddling quads
    "turn_sure",  # |P(upside down) - 0.5| (0.5 for a back): a card's print says which end is up
    "named_by_surer",  # 1 where a surer crop names the same card (a box's art, a second look)
)
CARD_ASPECT = 1.6  # long side over short side of a card seen from above (54 x 33 mm: 1.64)
ACCEPT_PLANE_CONFIDENCE = 0.6  # crops this sure (and not "none") say what size a card is where


def acceptance_features(
    probs: np.ndarray, flip: np.ndarray, quads: np.ndarray, heat: np.ndarray
) -> np.ndarray:
    """(N, len(ACCEPT_FEATURES)) features of N crops for the learned acceptance rule:
    classifier outputs ``probs`` (N, classes + none), ``flip`` (N, 1), the quads found (N,4,2,
    image pixels) and the localizer's heat at their centres (N)."""
    from companion.detections import quad_size_offsets

    n = len(probs)
    card_probs = probs[:, :NONE_ID]
    best = card_probs.argmax(axis=1)
    sure = card_probs[np.arange(n), best]
    none = probs[:, NONE_ID]
    off = quad_size_offsets(quads, (sure >= ACCEPT_PLANE_CONFIDENCE) & (none < 0.5))
    known = off is not None
    off = off if known else np.zeros(n)
    sides = np.linalg.norm(quads - quads[:, [1, 2, 3, 0]], axis=2)  # each side, top first
    along, across = (sides[:, 0] + sides[:, 2]) / 2, (sides[:, 1] + sides[:, 3]) / 2
    aspect = np.maximum(along, across) / np.maximum(np.minimum(along, across), 1e-3)
    surer = (sure[None, :] > sure[:, None]) & (none < 0.5)[None, :]
    named_by_surer = (surer & (best[None, :] == best[:, None])).any(axis=1)
    return np.column_stack(
        [
            np.ones(n),
            _logit(sure),
            _logit(none),
            heat,
            np.abs(off),
            np.full(n, float(known)),
            np.minimum(off, 0.0),
            np.abs(np.log(aspect) - np.log(CARD_ASPECT)),
            # a back looks the same either way up: it is not doubt there
            np.where(best == BACK_ID, 0.5, np.abs(flip[:, 0] - 0.5)),
            named_by_surer,
        ]
    ).astype(np.float64)


def accept_probability(features: np.ndarray, settings: Settings) -> np.ndarray:
    """How likely the learned acceptance rule (``settings.accept_weights``, corrected by
    ``settings.accept_trees`` where the model has them) finds each crop of
    ``acceptance_features`` to be a card."""
    logit = features @ np.asarray(settings.accept_weights)
    if settings.accept_trees is not None:
        logit = logit + settings.accept_trees.logit(features)
    return 1 / (1 + np.exp(-np.clip(logit, -30, 30)))


@dataclass(frozen=True, eq=False)
class AcceptTrees:
    """Boosted decision trees that correct the logistic acceptance rule's logit: the rule is a
    straight line through ``ACCEPT_FEATURES``, and some crops need a bend (a hot place with a
    doubtful name, a sure name at the wrong size). All trees have one depth and are stored
    complete, inner nodes first in heap order (node i's children are 2i+1 and 2i+2); a crop
    goes right where its feature exceeds the node's threshold (+inf: the node does not split).
    """

    features: np.ndarray  # (trees, 2**depth - 1) indices into ACCEPT_FEATURES
    thresholds: np.ndarray  # (trees, 2**depth - 1)
    leaves: np.ndarray  # (trees, 2**depth) logit added where a crop ends

    def __post_init__(self):
        trees, inner = np.shape(self.features)
        if (
            np.shape(self.thresholds) != (trees, inner)
            or np.shape(self.leaves) != (trees, inner + 1)
            or inner + 1 not in {2**d for d in range(1, 9)}
        ):
            raise RecognizerError(
                "accept_trees: each tree needs 2**depth - 1 features and thresholds and "
                "2**depth leaves."
            )
        if trees and not (
            0 <= np.min(self.features) <= np.max(self.features) < len(ACCEPT_FEATURES)
        ):
            raise RecognizerError(
                f"accept_trees: a feature index lies outside the {len(ACCEPT_FEATURES)} features."
            )

    def __eq__(self, other) -> bool:
        return isinstance(other, AcceptTrees) and all(
            np.array_equal(a, b)
            for a, b in zip(
                (self.features, self.thresholds, self.leaves),
                (other.features, other.thresholds, other.leaves),
                strict=True,
            )
        )

    __hash__ = None  # arrays: equal by value, not hashable

    @property
    def depth(self) -> int:
        return int(np.log2(self.leaves.shape[1]))

    def logit(self, features: np.ndarray) -> np.ndarray:
        """The trees' summed correction for each row of ``acceptance_features`` (N, K)."""
        x = np.ascontiguousarray(features, np.float64)
        if len(x) == 0:  # a frame where no crop reached the rule
            return np.zeros(0)
        trees, inner = self.features.shape
        # every crop through every tree at once, a level a step, by flat indices (twice as fast
        # as take_along_axis on the few dozen crops of a frame)
        first = np.arange(trees) * inner
        split_feature, split_at = self.features.ravel(), self.thresholds.ravel()
        rows = (np.arange(len(x)) * x.shape[1])[:, None]
        node = np.zeros((len(x), trees), np.int64)
        for _ in range(self.depth):
            at = first + node
            node = 2 * node + 1 + (x.ravel()[rows + split_feature[at]] > split_at[at])
        return self.leaves.ravel()[np.arange(trees) * (inner + 1) + node - inner].sum(axis=1)

    def to_dict(self) -> dict:
        return {
            "depth": self.depth,
            "features": self.features.tolist(),
            # JSON has no infinity: a node that does not split is written as null
            "thresholds": [
                [None if np.isinf(t) else float(t) for t in row] for row in self.thresholds
            ],
            "leaves": np.round(self.leaves, 6).tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict) -> AcceptTrees:
        try:
            thresholds = [
                [np.inf if t is None else float(t) for t in row] for row in data["thresholds"]
            ]
            return cls(
                features=np.asarray(data["features"], np.int64).reshape(len(thresholds), -1),
                thresholds=np.asarray(thresholds, np.float64).reshape(len(thresholds), -1),
                leaves=np.asarray(data["leaves"], np.float64).reshape(len(thresholds), -1),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RecognizerError(f"accept_trees is unreadable ({exc}).") from None


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, np.float64), 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


@dataclass(frozen=True)
class Settings:
    """Preprocessing and decoding constants; stored in the model's JSON metadata."""

    input_width: int = 512
    input_height: int = 288
    stride: int = 4
    crop_width: int = 48
    crop_height: int = 80
    crop_enlarge: float = 1.2
    size_unit: float = 16.0  # box sizes are predicted as log(pixels / size_unit)
    heat_threshold: float = 0.25
    max_candidates: int = 64
    # 0: candidates are 3x3 heat maxima. >0: any cell above the threshold is a candidate unless
    # a hotter one lies within this fraction of their short side (finds the ridge cards of a
    # tight capture row, whose centres the heatmap blurs into one peak)
    peak_spacing: float = 0.0
    min_confidence: float = 0.2  # below this a crop is not reported at all
    max_none: float = 0.5  # crops the classifier finds this likely "not a card" are dropped
    nms_iou: float = 0.6
    same_card_iou: float = 1.0  # a duplicate class overlapping its holder this much is dropped
    refine_steps: int = 0  # classifier passes re-cut around the previous pass's corners
    refine_below: float = 1.0  # ... for the crops whose best card is less likely than this
    alternatives: int = 3
    pad_value: int = 114
    # Second chances for the cards the localizer barely saw (0 and () switch them off): extra
    # crops are cut only where no card was found yet, and what they find is kept only if the
    # classifier is at least ``extra_confidence`` sure, after a second look.
    extra_heat: float = 0.0  # ... at the peaks between this and heat_threshold
    neighbour_across: tuple[float, ...] = ()  # ... beside each sure card, these widths away
    neighbour_along: tuple[float, ...] = ()  # ... above and below it, these heights away
    neighbour_heat: float = 0.0  # ... where the heatmap is at least this warm (one cell around)
    extra_confidence: float = 0.9  # also how sure a card must be to have neighbours looked for
    # ... and one row step on from each pair of neighbouring sure cards of a fanned row, and
    # between two a double step apart (``row_boxes``; also where ``neighbour_heat`` is warm):
    # the strip of a covered card lies nearer a found card than the places above are looked at
    row_steps: bool = False
    # A card whose size is this far (in log size) from what the others' sizes say for its place
    # is dropped unless at least size_keep_above sure (detections.consistent_sizes; 0 = off)
    size_tolerance: float = 0.0
    size_keep_above: float = 1.0
    # A card this much smaller (log size) than its place says is outlined at the size the others
    # say, about its centre (detections.grow_to_size; 0 = off)
    size_grow_below: float = 0.0
    # Where the localizer's heat at a card's centre (3x3 maximum) is at least ``hot_heat``, the
    # card needs only ``hot_confidence`` instead of ``min_confidence``: a half-covered card of a
    # capture row is often placed right while its name stays in doubt (0 = off)
    hot_heat: float = 0.0
    hot_confidence: float = 0.2
    # A learned acceptance rule instead of the two thresholds above: a crop counts as a card
    # where a logistic model over ``ACCEPT_FEATURES`` (these weights, in that order) says it is
    # at least ``accept_above`` likely to be one (``acceptance_features``; () = off)
    accept_weights: tuple[float, ...] = ()
    accept_above: float = 0.5
    # ... and boosted trees that bend that line where the crops need it (None = the line alone)
    accept_trees: AcceptTrees | None = None

    def __post_init__(self):
        if self.accept_weights and len(self.accept_weights) != len(ACCEPT_FEATURES):
            raise RecognizerError(
                f"accept_weights has {len(self.accept_weights)} weights; the features are "
                f"{', '.join(ACCEPT_FEATURES)} ({len(ACCEPT_FEATURES)})."
            )
        if self.accept_trees is not None and not self.accept_weights:
            raise RecognizerError("accept_trees correct accept_weights: they need the weights.")

    @classmethod
    def from_dict(cls, data: dict) -> Settings:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for key in ("neighbour_across", "neighbour_along", "accept_weights"):
            if key in known:
                known[key] = tuple(float(v) for v in known[key])
        if known.get("accept_trees") is not None:
            known["accept_trees"] = AcceptTrees.from_dict(known["accept_trees"])
        return cls(**known)

    @property
    def second_chances(self) -> bool:
        return (
            self.extra_heat > 0
            or bool(self.neighbour_across or self.neighbour_along)
            or self.row_steps
        )

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["accept_trees"] = self.accept_trees.to_dict() if self.accept_trees else None
        return out


# --------------------------------------------------------------------------------------------
# Geometry shared with training
# --------------------------------------------------------------------------------------------


def letterbox(bgr: np.ndarray, settings: Settings) -> tuple[np.ndarray, float]:
    """Resize keeping the aspect ratio into the localizer input (top-left aligned, padded).

    Returns the image and the scale (input pixels per original pixel).
    """
    h, w = bgr.shape[:2]
    scale = min(settings.input_width / w, settings.input_height / h)
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    out = np.empty((settings.input_height, settings.input_width, 3), np.uint8)
    out[nh:] = settings.pad_value
    out[:nh, nw:] = settings.pad_value
    if scale < 0.5:
        # INTER_AREA is slow at odd ratios (13 ms for 1280x720 -> 384x216) but fast at exactly
        # 1/2: go bilinear to twice the target, then average 2x2 blocks (~1 ms, no aliasing)
        source, interpolation = (
            cv2.resize(bgr, (2 * nw, 2 * nh), interpolation=cv2.INTER_LINEAR),
            cv2.INTER_AREA,
        )
    else:
        source, interpolation = bgr, cv2.INTER_LINEAR
    if nw == settings.input_width:  # full rows: a contiguous block OpenCV can write in place
        cv2.resize(source, (nw, nh), dst=out[:nh], interpolation=interpolation)
    else:
        out[:nh, :nw] = cv2.resize(source, (nw, nh), interpolation=interpolation)
    return out, scale


def quad_to_rbox(quad: np.ndarray) -> tuple[float, float, float, float, float]:
    """A card quad (TL,TR,BR,BL) -> rotated box (cx, cy, width, height, theta).

    ``theta`` is the direction of the long axis (top edge -> bottom edge), in radians; the
    localizer only learns it modulo 180 degrees.
    """
    return tuple(float(v) for v in quads_to_rboxes(quad)[0])


def crop_matrix(cx, cy, width, height, theta, settings: Settings) -> np.ndarray:
    """2x3 affine matrix mapping image pixels into the crop (long axis pointing down)."""
    return crop_matrices(np.array([[cx, cy, width, height, theta]]), settings)[0]


def quads_to_rboxes(quads: np.ndarray) -> np.ndarray:
    """``quad_to_rbox`` for many quads (N,4,2) at once: rows (cx, cy, width, height, theta)."""
    q = np.asarray(quads, np.float64).reshape(-1, 4, 2)
    centre = q.mean(axis=1)
    edges = q[:, [1, 2, 3, 0]] - q  # top, right, bottom, left
    lengths = np.hypot(edges[..., 0], edges[..., 1])
    down = (q[:, 3] + q[:, 2] - q[:, 0] - q[:, 1]) / 2
    theta = np.arctan2(down[:, 1], down[:, 0])
    width = (lengths[:, 0] + lengths[:, 2]) / 2
    height = (lengths[:, 1] + lengths[:, 3]) / 2
    return np.column_stack([centre, width, height, theta])


def crop_matrices(rboxes: np.ndarray, settings: Settings) -> np.ndarray:
    """``crop_matrix`` for many rotated boxes (rows cx, cy, width, height, theta): (N,2,3)."""
    cx, cy, width, height, theta = np.asarray(rboxes, np.float64)[:, :5].T
    ux, uy = np.cos(theta), np.sin(theta)
    xx, xy = uy, -ux
    ew = np.maximum(width, 1e-3) * settings.crop_enlarge / 2
    eh = np.maximum(height, 1e-3) * settings.crop_enlarge / 2
    sx, sy = settings.crop_width / (2 * ew), settings.crop_height / (2 * eh)
    return np.stack(
        [
            np.stack([xx * sx, xy * sx, sx * (ew - (cx * xx + cy * xy))], axis=1),
            np.stack([ux * sy, uy * sy, sy * (eh - (cx * ux + cy * uy))], axis=1),
        ],
        axis=1,
    )


def crop_points_to_image(matrices: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Map points (N,K,2) given in each crop's pixels back to image pixels through the
    inverse of each crop's 2x3 ``matrices`` (N,2,3), all at once."""
    # the 2x2 inverse written out: np.linalg.inv costs more than the arithmetic on few crops
    a, b, tx = (matrices[:, 0, k, None] for k in range(3))
    c, d, ty = (matrices[:, 1, k, None] for k in range(3))
    px, py = points[..., 0] - tx, points[..., 1] - ty
    det = a * d - b * c
    return np.stack([(d * px - b * py) / det, (a * py - c * px) / det], axis=-1).astype(np.float32)


def crop_card(
    bgr: np.ndarray, matrix: np.ndarray, settings: Settings, out: np.ndarray | None = None
) -> np.ndarray:
    """The crop ``matrix`` cuts from the frame; ``out``: a C-contiguous uint8 array of the
    crop's shape to cut it into."""
    cut = cv2.warpAffine(
        bgr,
        matrix,
        (settings.crop_width, settings.crop_height),
        dst=out,
        flags=cv2.INTER_AREA,
        borderMode=cv2.BORDER_REPLICATE,
    )
    if out is not None and cut is not out:  # OpenCV could not write into it: copy, or raise
        out[...] = cut
    return cut


def crop_cards(bgr: np.ndarray, matrices: np.ndarray, settings: Settings) -> np.ndarray:
    """The crops (N,H,W,3) that ``matrices`` (N,2,3) cut from the frame, cut straight into one
    batch: stacking a list of crops would copy every crop again."""
    crops = np.empty((len(matrices), settings.crop_height, settings.crop_width, 3), np.uint8)
    for crop, matrix in zip(crops, matrices, strict=True):
        crop_card(bgr, matrix, settings, out=crop)
    return crops


def crop_targets(
    quad: np.ndarray, matrix: np.ndarray, settings: Settings
) -> tuple[int, np.ndarray]:
    """Training targets of a crop: (upside_down 0/1, corners (8,) in crop units 0..1).

    Corners come in the crop's own order (crop top-left first), which does not depend on
    which way the card faces; inference rolls them by two when the card is upside down.
    """
    q = cv2.transform(np.asarray(quad, np.float32).reshape(1, 4, 2), matrix).reshape(4, 2)
    down = (q[2] + q[3]) / 2 - (q[0] + q[1]) / 2
    upside_down = int(down[1] < 0)
    if upside_down:
        q = np.roll(q, 2, axis=0)
    q = q / np.float32([settings.crop_width, settings.crop_height])
    return upside_down, q.reshape(8).astype(np.float32)


def to_chw_float(images: np.ndarray) -> np.ndarray:
    """uint8 BGR (N,H,W,3) -> float32 RGB (N,3,H,W) in 0..1, the nets' input layout."""
    return np.ascontiguousarray(images[..., ::-1].transpose(0, 3, 1, 2), np.float32) / 255.0


def net_input(session, images: np.ndarray) -> np.ndarray:
    """uint8 BGR images (N,H,W,3) as ``session``'s input wants them: as they are for models
    exported with the conversion inside the graph, else float RGB NCHW (older models)."""
    if session.get_inputs()[0].type == "tensor(uint8)":
        return np.ascontiguousarray(images)
    return to_chw_float(images)


def decode_heatmap(heat: np.ndarray, reg: np.ndarray, settings: Settings) -> np.ndarray:
    """Heatmap peaks -> rotated boxes in input pixels, rows (cx, cy, w, h, theta, score)."""
    heat = heat.reshape(heat.shape[-2:]).astype(np.float32)
    hot = heat >= settings.heat_threshold
    if settings.peak_spacing <= 0:
        hot &= heat == cv2.dilate(heat, np.ones((3, 3), np.uint8))
    ys, xs = np.nonzero(hot)
    limit = settings.max_candidates if settings.peak_spacing <= 0 else MAX_HOT_CELLS
    boxes = _boxes_at(ys, xs, heat, reg, settings, limit)
    if settings.peak_spacing > 0:
        boxes = boxes[spaced(boxes, settings.peak_spacing)]
    return boxes[: settings.max_candidates]


def cool_peaks(
    heat: np.ndarray, warm: np.ndarray, reg: np.ndarray, settings: Settings
) -> np.ndarray:
    """The heatmap's 3x3 maxima from ``extra_heat`` up to (not including) ``heat_threshold``,
    as ``decode_heatmap`` rows; ``warm`` is the heatmap dilated by 3x3."""
    heat = heat.reshape(heat.shape[-2:])
    cool = (heat >= settings.extra_heat) & (heat < settings.heat_threshold) & (heat == warm)
    ys, xs = np.nonzero(cool)
    return _boxes_at(ys, xs, heat, reg, settings, settings.max_candidates)


def _boxes_at(ys, xs, heat, reg, settings: Settings, limit: int) -> np.ndarray:
    """The rotated boxes predicted at heatmap cells (ys, xs), at most ``limit``, hottest first."""
    if len(ys) == 0:
        return np.zeros((0, 6), np.float32)
    scores = heat[ys, xs]
    order = np.argsort(-scores, kind="stable")[:limit]
    ys, xs, scores = ys[order], xs[order], scores[order]
    r = reg.reshape(6, *heat.shape)[:, ys, xs]
    s = settings.stride
    cx = (xs + r[0]) * s
    cy = (ys + r[1]) * s
    w = np.exp(np.clip(r[2], -4, 4)) * settings.size_unit
    h = np.exp(np.clip(r[3], -4, 4)) * settings.size_unit
    theta = 0.5 * np.arctan2(r[5], r[4])
    return np.stack([cx, cy, w, h, theta, scores], axis=1).astype(np.float32)


def heat_at(points: np.ndarray, warm: np.ndarray, scale: float, stride: int) -> np.ndarray:
    """The heatmap's 3x3 maximum at each image point (N,2, original pixels); ``warm`` is the
    heatmap dilated by 3x3, ``scale`` the letterbox scale."""
    cells = np.floor(np.asarray(points, np.float64) * scale / stride).astype(int)
    xs = cells[:, 0].clip(0, warm.shape[1] - 1)
    ys = cells[:, 1].clip(0, warm.shape[0] - 1)
    return warm[ys, xs]


def neighbour_boxes(cards: np.ndarray, across=(), along=()) -> np.ndarray:
    """Rotated boxes the size and angle of each card (rows cx, cy, w, h, theta), moved both
    ways by each of ``across`` card widths and ``along`` card heights."""
    cards = np.asarray(cards, np.float64).reshape(-1, 5)
    steps = np.array([*across, *(-k for k in across), *along, *(-k for k in along)])
    if len(cards) == 0 or len(steps) == 0:
        return np.zeros((0, 5))
    cx, cy, width, height, theta = cards.T
    down = np.stack([np.cos(theta), np.sin(theta)], axis=1)  # the long axis
    side = np.stack([down[:, 1], -down[:, 0]], axis=1)
    n_across = 2 * len(across)
    # (steps, cards, 2): each step along its own axis, in that card's own width or height
    moves = np.concatenate(
        [
            side[None] * (steps[:n_across, None] * width)[..., None],
            down[None] * (steps[n_across:, None] * height)[..., None],
        ]
    )
    out = np.repeat(cards[None], len(steps), axis=0)
    out[..., :2] += moves
    return out.reshape(-1, 5)


ROW_TURN = 0.15  # radians: cards of one row lie this parallel (modulo a half turn) or closer
ROW_SIZE_RATIO = 1.25  # ... and their widths differ by at most this factor
ROW_ALONG = 0.2  # ... and one lies at most this many card heights up or down the other's long axis
ROW_STEP = (0.3, 0.8)  # card widths across: a pair this far apart is a step of a fanned row
ROW_GAP = (0.7, 1.5)  # ... and a pair this far apart may have missed the card between them


def row_boxes(cards: np.ndarray) -> np.ndarray:
    """Where more cards of a fanned row would lie (rows cx, cy, w, h, theta), given the cards
    found (same rows). Each card's nearest row neighbour on either side (``ROW_*``) makes a
    pair: a pair one row step apart (``ROW_STEP``) says the row goes on one step past the
    neighbour, and a pair about two steps apart (``ROW_GAP``) that a card lies halfway between.
    Each box has the first card's angle and the pair's mean size."""
    cards = np.asarray(cards, np.float64).reshape(-1, 5)
    n = len(cards)
    if n < 2:
        return np.zeros((0, 5))
    # a degenerate quad (corners on one point) has no size: it pairs with nothing
    width, height = np.maximum(cards[:, 2], 1e-6), np.maximum(cards[:, 3], 1e-6)
    theta = cards[:, 4]
    down = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    side = np.stack([down[:, 1], -down[:, 0]], axis=1)
    delta = cards[None, :, :2] - cards[:, None, :2]  # delta[i, j]: from card i to card j
    across = np.einsum("ijk,ik->ij", delta, side) / width[:, None]
    along = np.einsum("ijk,ik->ij", delta, down) / height[:, None]
    turn = np.abs((theta[:, None] - theta[None] + np.pi / 2) % np.pi - np.pi / 2)
    ratio = width[:, None] / width[None]
    in_row = (
        (turn < ROW_TURN)
        & (ratio < ROW_SIZE_RATIO)
        & (ratio > 1 / ROW_SIZE_RATIO)
        & (np.abs(along) < ROW_ALONG)
        & (np.abs(across) > min(ROW_STEP[0], ROW_GAP[0]))
        & (np.abs(across) < max(ROW_STEP[1], ROW_GAP[1]))
    )
    out = []
    for sign in (1, -1):
        reach = np.where(in_row & (sign * across > 0), np.abs(across), np.inf)
        nearest = reach.argmin(axis=1)
        apart = reach[np.arange(n), nearest]
        paired = np.flatnonzero(np.isfinite(apart))
        a, b, apart = cards[paired], cards[nearest[paired]], apart[paired]
        mean = np.concatenate([(a[:, :4] + b[:, :4]) / 2, a[:, 4:5]], axis=1)
        beyond = np.concatenate([2 * b[:, :2] - a[:, :2], mean[:, 2:]], axis=1)
        # per card: the box one step past its neighbour, then the one between them
        boxes = np.stack([beyond, mean], axis=1)
        wanted = np.stack(
            [
                (ROW_STEP[0] < apart) & (apart < ROW_STEP[1]),
                (ROW_GAP[0] < apart) & (apart < ROW_GAP[1]),
            ],
            axis=1,
        )
        out.append(boxes[wanted])
    return np.concatenate(out).reshape(-1, 5)


def _in_frame(boxes: np.ndarray, shape: tuple) -> np.ndarray:
    """Mask of the boxes (rows cx, cy, ...) whose centre lies inside a frame of this shape."""
    h, w = shape[:2]
    return (boxes[:, 0] >= 0) & (boxes[:, 0] < w) & (boxes[:, 1] >= 0) & (boxes[:, 1] < h)


def _far_from(boxes: np.ndarray, cards: np.ndarray, spacing: float) -> np.ndarray:
    """Mask of the boxes whose centre lies farther than ``spacing`` of each card's short side
    from every card's centre (rows cx, cy, w, h, ...)."""
    if len(cards) == 0 or len(boxes) == 0:
        return np.ones(len(boxes), bool)
    short = np.minimum(cards[:, 2], cards[:, 3])
    d2 = (boxes[:, None, 0] - cards[None, :, 0]) ** 2 + (boxes[:, None, 1] - cards[None, :, 1]) ** 2
    return (d2 > (spacing * short[None]) ** 2).all(axis=1)


def spaced(boxes: np.ndarray, spacing: float) -> np.ndarray:
    """Indices of the rotated boxes (rows cx, cy, w, h, ..., best first) kept by a greedy pass
    that drops a box whose centre lies within ``spacing`` of the smaller short side from a
    kept one."""
    short = np.minimum(boxes[:, 2], boxes[:, 3])
    dist2 = distances2(boxes[:, 0], boxes[:, 1])
    near = dist2 < (spacing * np.minimum(short[:, None], short[None])) ** 2
    np.fill_diagonal(near, False)
    hotter = np.tril(near, -1)  # hotter[i, j]: j is a hotter neighbour of i
    keep = np.zeros(len(boxes), bool)
    open_ = np.ones(len(boxes), bool)
    # the greedy pass, a few rounds at a time: a box with no open hotter neighbour is kept
    # (none of its hotter neighbours can be kept any more), and its neighbours are closed
    while open_.any():
        chosen = open_ & ~(hotter & open_).any(axis=1)
        keep |= chosen
        open_ &= ~chosen & ~near[:, chosen].any(axis=1)
    return np.flatnonzero(keep)


# --------------------------------------------------------------------------------------------
# The detector
# --------------------------------------------------------------------------------------------


def metadata_path(path: str | Path | None = None) -> Path:
    """The metadata JSON a ``--model`` value names: a JSON file, a folder holding
    recognizer.json, or None for the committed model."""
    path = Path(path) if path else DEFAULT_MODEL
    return path / "recognizer.json" if path.is_dir() else path


class Recognizer:
    """Loads the two ONNX nets named in a metadata JSON file and turns frames into Detections."""

    def __init__(
        self,
        localizer,
        classifier,
        settings: Settings,
        metadata: dict | None = None,
        precision: str = "int8",
    ):
        self.localizer = localizer
        self.classifier = classifier
        self.settings = settings
        self.metadata = metadata or {}
        self.precision = precision  # which of the model's sets of nets run (PRECISIONS)
        # a list while eval wants every crop looked at: (quads, probs) per classifier run,
        # for ``missed_card_kinds``
        self.looks: list | None = None
        # a list while the acceptance rule is fitted: (quads, acceptance_features) of every
        # crop that reached the final decision, per frame (``fit_acceptance``)
        self.candidates: list | None = None

    @classmethod
    def load(
        cls, path: str | Path | None = None, threads: int = 2, precision: str = "auto"
    ) -> Recognizer:
        """The model of a metadata JSON file; ``precision``: "int8", "float" (the model's
        ``float_nets``), "avx2" (its ``avx2_nets``) or "auto" (``auto_nets``: the set made for
        this CPU among those the model has)."""
        if precision not in PRECISIONS:
            raise RecognizerError(
                f"precision is one of {', '.join(PRECISIONS)}, not {precision!r}."
            )
        path = metadata_path(path)
        if not path.is_file():
            raise RecognizerError(
                f"No recognizer model at {path}: train one with 'companion train'."
            )
        try:
            meta = json.loads(path.read_text())
            settings = Settings.from_dict(meta.get("settings", {}))
            nets = {"int8": meta} | {k: meta[key] for k, key in NET_SETS.items() if meta.get(key)}
            if precision == "auto":
                precision = auto_nets(nets)
            if precision not in nets:
                raise RecognizerError(f"The model {path} has no {precision} nets.")
            loc_path = path.parent / nets[precision]["localizer"]
            cls_path = path.parent / nets[precision]["classifier"]
        except RecognizerError:  # already one sentence: a set the model lacks, bad settings
            raise
        except (ValueError, KeyError, TypeError) as exc:
            raise RecognizerError(f"The model metadata {path} is unreadable ({exc}).") from None
        localizer, classifier = _session(loc_path, threads), _session(cls_path, threads)
        return cls(localizer, classifier, settings, meta, precision)

    def detect(self, bgr: np.ndarray) -> Detections:
        """All face-up cards and backs in a BGR frame (any size); empty for a blank frame."""
        image = _as_bgr(bgr)
        if image is None:
            return Detections.empty()
        factor = 1.0
        if max(image.shape[:2]) > MAX_SIDE:
            factor = MAX_SIDE / max(image.shape[:2])
            image = cv2.resize(image, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA)
        det = self._detect(image)
        if factor != 1.0 and len(det):
            det = Detections(
                det.quads / factor, det.class_ids, det.confidence, det.alt_ids, det.alt_scores
            )
        return det

    def _detect(self, image: np.ndarray) -> Detections:
        st = self.settings
        boxed, scale = letterbox(image, st)
        heat, reg = self.localizer.run(None, {"image": net_input(self.localizer, boxed[None])})
        boxes = decode_heatmap(heat, reg, st)
        if len(boxes) == 0:
            return Detections.empty()
        boxes[:, :4] /= scale  # into original pixels
        matrices = crop_matrices(boxes, st)
        probs, flip, corners = self._classify(image, matrices)
        heat = heat.reshape(heat.shape[-2:])
        warm = cv2.dilate(heat, np.ones((3, 3), np.uint8))  # each cell's 3x3 maximum
        # one look per card from here on: spaced candidates often name the same card twice
        live = self._distinct(matrices, probs, flip, corners, (warm, scale))
        matrices, probs, flip, corners = matrices[live], probs[live], flip[live], corners[live]
        # second chances are looked at in the same classifier run as the first second look
        spots = self._spots(image, heat, warm, reg, scale, matrices, probs, corners)
        spot_looks = None
        for step in range(st.refine_steps):
            # re-cut each card around the quad the classifier found: the second look is
            # better centred and aligned than the localizer's coarse box
            # (only crops still in doubt: a card already named surely keeps its first look)
            live = np.flatnonzero(
                (probs[:, NONE_ID] < st.max_none)
                & (probs[:, :NONE_ID].max(axis=1) < st.refine_below)
            )
            live, recut = self._recut(matrices, corners, live)
            if len(live) == 0:
                break
            matrices[live] = recut
            shared = step == 0 and len(spots) > 0
            looks = self._classify(
                image, np.concatenate([matrices[live], spots]) if shared else matrices[live]
            )
            if shared:
                spot_looks = tuple(a[len(live) :] for a in looks)
                looks = tuple(a[: len(live)] for a in looks)
            probs[live], flip[live], corners[live] = looks
        if len(spots):
            spot_looks = spot_looks or self._classify(image, spots)
            extra = self._kept_spots(image, spots, *spot_looks, matrices, probs, corners)
            if extra is not None:
                matrices, probs, flip, corners = (
                    np.concatenate([a, b])
                    for a, b in zip((matrices, probs, flip, corners), extra, strict=True)
                )
        return self._assemble(matrices, probs, flip, corners, (warm, scale))

    def _recut(self, matrices, corners, live) -> tuple[np.ndarray, np.ndarray]:
        """Crops ``live`` cut again around the corners found in them: (those of them whose
        corners make a quad of some size, their new crop matrices)."""
        found = quads_to_rboxes(self._corner_quads(matrices[live], corners[live]))
        sized = (found[:, 2] > 2) & (found[:, 3] > 2)
        return live[sized], crop_matrices(found[sized], self.settings)

    def _found(self, matrices, probs, corners) -> tuple[np.ndarray, np.ndarray]:
        """Rotated boxes of the crops that name a card, and how sure each is."""
        cards = names_a_card(probs, self.settings)
        boxes = quads_to_rboxes(self._corner_quads(matrices[cards], corners[cards]))
        return boxes, probs[cards, :NONE_ID].max(axis=1, initial=0.0)

    def _spots(self, image, heat, warm, reg, scale, matrices, probs, corners) -> np.ndarray:
        """Crop matrices (N,2,3) of the second chances, for the cards the localizer barely saw:
        its cooler peaks, and the places beside each sure card where the next card of a
        capture row or of the field lies. Only places no card was found near yet: there a
        crop would only find that card again. With ``row_steps``, also one step on along each
        fanned row (``row_boxes``), wherever no card was found at that very place."""
        st = self.settings
        if not st.second_chances:
            return np.zeros((0, 2, 3))
        found, sure = self._found(matrices, probs, corners)
        sure_cards = found[sure >= st.extra_confidence]  # the cards whose places say where more lie

        def warm_enough(boxes):  # a neighbour's place is looked at only where the heat says so
            if st.neighbour_heat <= 0 or len(boxes) == 0:
                return boxes
            return boxes[heat_at(boxes[:, :2], warm, scale, st.stride) >= st.neighbour_heat]

        cool = cool_peaks(heat, warm, reg, st)[:, :5] if st.extra_heat > 0 else np.zeros((0, 5))
        cool[:, :4] /= scale
        near = neighbour_boxes(sure_cards, st.neighbour_across, st.neighbour_along)
        spots = np.concatenate([cool, warm_enough(near)])
        spots = spots[_in_frame(spots, image.shape)]
        spots = spots[_far_from(spots, found, FREE_SPACING)]
        spots = spots[spaced(spots, FREE_SPACING)]
        if st.row_steps:
            # a row's next strip lies nearer its found neighbour than FREE_SPACING
            rows = row_boxes(sure_cards)
            rows = rows[_in_frame(rows, image.shape) & _far_from(rows, found, DISTINCT_SPACING)]
            rows = warm_enough(rows)
            if len(rows):
                spots = np.concatenate([spots, rows[spaced(rows, DISTINCT_SPACING)]])
        return crop_matrices(spots, st) if len(spots) else np.zeros((0, 2, 3))

    def _kept_spots(self, image, m, p, f, c, matrices, probs, corners):
        """The second chances worth keeping, as crops (matrices, probs, flip, corners), or None:
        the sure finds (``extra_confidence``, after a second look for the doubtful ones), and
        without a learned acceptance rule only those of cards not found yet. Being that sure,
        they add few false cards."""
        st = self.settings
        sure = p[:, :NONE_ID].max(axis=1)
        maybe = p[:, NONE_ID] < st.max_none
        if not (maybe & (sure >= min(SPOT_FLOOR, st.extra_confidence))).any():
            return None  # the usual case: nothing there
        m, p, f, c = m.copy(), p.copy(), f.copy(), c.copy()
        # a second look, re-cut around the corners found, for what may be a card: even a sure
        # first look was cut around a guessed place, and its corners are less exact
        again, recut = self._recut(m, c, np.flatnonzero(maybe & (sure >= SPOT_FLOOR)))
        if len(again):
            m[again] = recut
            p[again], f[again], c[again] = self._classify(image, m[again])
        sure = p[:, :NONE_ID].max(axis=1)
        live = np.flatnonzero((p[:, NONE_ID] < st.max_none) & (sure >= st.extra_confidence))
        live = live[np.argsort(-sure[live], kind="stable")]
        cards = quads_to_rboxes(self._corner_quads(m[live], c[live]))
        if not st.accept_weights:
            # without a learned rule, the surer claimant wins NMS and one card once, so a
            # second chance near a found card is kept out. With one, the rule ranks them: in a
            # tight capture row a found crop often lies that near the next card, which the
            # second chance alone outlines (models/JOURNAL.md, "Second chances near found cards")
            new = _far_from(cards, self._found(matrices, probs, corners)[0], FREE_SPACING)
            live, cards = live[new], cards[new]
        if len(live) == 0:
            return None
        live = live[spaced(cards, DISTINCT_SPACING)]
        return m[live], p[live], f[live], c[live]

    def _distinct(self, matrices, probs, flip, corners, heatmap) -> np.ndarray:
        """Indices of the crops that show a card and are not a likelier crop's card again
        (their cards' centres closer than a quarter of the short side). Likelier: by the
        learned acceptance rule where the model has one, else by the name's sureness."""
        st = self.settings
        cards = np.flatnonzero(probs[:, NONE_ID] < st.max_none)
        quads = self._corner_quads(matrices[cards], corners[cards])
        if st.accept_weights:
            rank = self._likely(probs[cards], flip[cards], quads, heatmap)
        else:
            rank = probs[cards, :NONE_ID].max(axis=1)
        order = np.argsort(-rank, kind="stable")
        return cards[order][spaced(quads_to_rboxes(quads[order]), DISTINCT_SPACING)]

    def _likely(self, probs, flip, quads, heatmap) -> np.ndarray:
        """How likely the learned acceptance rule finds each crop to be a card."""
        warm, scale = heatmap
        heat = heat_at(quads.mean(axis=1), warm, scale, self.settings.stride)
        return accept_probability(acceptance_features(probs, flip, quads, heat), self.settings)

    def _classify(self, image, matrices):
        crops = crop_cards(image, matrices, self.settings)
        out = self.classifier.run(None, {"crop": net_input(self.classifier, crops)})
        if self.looks is not None:
            self.looks.append((self._corner_quads(matrices, out[2]), out[0]))
        return out

    def _corner_quads(self, matrices: np.ndarray, corners: np.ndarray) -> np.ndarray:
        """The classifier's corners (N,8, crop units 0..1) as image quads (N,4,2)."""
        size = np.float32([self.settings.crop_width, self.settings.crop_height])
        return crop_points_to_image(matrices, corners.reshape(-1, 4, 2) * size)

    def _assemble(self, matrices, probs, flip, corners, heatmap=None) -> Detections:
        """The crops that name a card, as Detections; ``heatmap``: (the localizer's heat
        dilated by 3x3, the letterbox scale), for ``hot_heat``."""
        st = self.settings
        n = len(matrices)
        card_probs = probs[:, :NONE_ID]
        best = card_probs.argmax(axis=1)
        conf = card_probs[np.arange(n), best]
        quads = self._corner_quads(matrices, corners)
        learned = bool(st.accept_weights) or self.candidates is not None
        heat = np.zeros(n, np.float32)
        if heatmap is not None and (st.hot_heat > 0 or learned):  # only where a rule reads it
            warm, scale = heatmap
            heat = heat_at(quads.mean(axis=1), warm, scale, st.stride)
        if learned:
            features = acceptance_features(probs, flip, quads, heat)
            if self.candidates is not None:
                self.candidates.append((quads.copy(), features))
        rank = None
        if st.accept_weights:
            likely = accept_probability(features, st)
            keep = likely >= st.accept_above
            rank = likely  # also which of two overlapping crops or claimants of a name wins
        else:
            needed = np.full(n, st.min_confidence, np.float32)
            if st.hot_heat > 0:
                needed[heat >= st.hot_heat] = st.hot_confidence
            keep = conf >= needed
        keep &= probs[:, NONE_ID] < st.max_none
        # upside down: the card's own top-left is the crop's bottom-right
        turned = (flip[:, 0] > 0.5) & (best != BACK_ID)
        quads[turned] = np.roll(quads[turned], 2, axis=1)
        k = st.alternatives
        order = np.argsort(-card_probs, axis=1)[:, 1 : k + 1]
        det = Detections(
            quads=quads,
            class_ids=best,
            confidence=conf,
            alt_ids=order,
            alt_scores=np.take_along_axis(card_probs, order, axis=1),
        )
        return final_cards(
            det[keep],
            rank=None if rank is None else rank[keep],
            nms_iou=st.nms_iou,
            same_card_iou=st.same_card_iou,
            size_tolerance=st.size_tolerance,
            size_keep_above=st.size_keep_above,
            size_grow_below=st.size_grow_below,
        )


def _session(path: Path, threads: int):
    import onnxruntime as ort

    if not Path(path).is_file():
        raise RecognizerError(f"The model file {path} is missing.")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    # Between runs the worker threads sleep instead of spinning: on a small CPU their spinning
    # starves the OpenCV work between the two nets (66 -> 44 ms per frame on 2 cores).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # tiny activations flushed to zero: denormal arithmetic is slow on x86
    opts.add_session_config_entry("session.set_denormal_as_zero", "1")
    try:
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise RecognizerError(
            f"The model file {path} cannot be loaded ({type(exc).__name__})."
        ) from None


def _as_bgr(image) -> np.ndarray | None:
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


@dataclass(frozen=True)
class LabelBox:
    """Where ``annotate`` writes one detection's label: ``rect`` (x0, y0, x1, y1) in image pixels,
    and ``anchor``, the point inside the detection's quad that a leader line joins to the label
    when the label had to move off the card."""

    text: str
    rect: tuple[int, int, int, int]
    anchor: tuple[int, int]

    @property
    def moved(self) -> bool:
        x0, y0, x1, y1 = self.rect
        return not (x0 <= self.anchor[0] <= x1 and y0 <= self.anchor[1] <= y1)


_LABEL_FONT = cv2.FONT_HERSHEY_SIMPLEX
_LABEL_STEPS = 8  # a label may move this many of its heights up or down (and 2 widths sideways)


def _label_scale(image_shape) -> tuple[float, int]:
    size = max(image_shape[:2])
    return 0.5 * max(1.0, size / 1280), max(1, round(size / 1600))


def label_boxes(det: Detections, image_shape) -> list[LabelBox]:
    """Non-overlapping places for the detections' labels, surest card first.

    Each label goes to the place, near its card, that covers the fewest card pixels: on the card
    where it is large, off to a free patch of table in a tight fanned row, whose cards' visible
    strips are narrower than a label (``annotate`` then draws a leader line back to the card).
    Labels never cover each other while a free place is left within reach; places lie inside the
    image.
    """
    h, w = image_shape[:2]
    scale, thick = _label_scale(image_shape)
    cards = np.concatenate([det.quads.min(axis=1), det.quads.max(axis=1)], axis=1)  # (N, 4)
    card_areas = np.maximum(np.prod(cards[:, 2:] - cards[:, :2], axis=1), 1.0)
    steps = [(dx, dy) for dy in range(-_LABEL_STEPS, _LABEL_STEPS + 1) for dx in (-2, -1, 0, 1, 2)]
    step_cost = np.array([abs(dx) + abs(dy) for dx, dy in steps], np.float64)
    placed = np.zeros((0, 4), np.float64)
    boxes: dict[int, LabelBox] = {}
    for i in np.argsort(-det.confidence, kind="stable"):
        text = f"{CLASSES[det.class_ids[i]]} {det.confidence[i]:.2f}"
        (tw, th), base = cv2.getTextSize(text, _LABEL_FONT, scale, thick)
        bw, bh = tw + 4 * thick, th + base + 2 * thick
        anchor = det.quads[i].astype(np.float64).mean(axis=0)
        x0 = anchor[0] - bw / 2 + np.array([dx for dx, _ in steps]) * bw * 0.55
        y0 = anchor[1] - bh / 2 + np.array([dy for _, dy in steps]) * bh * 1.15
        x0 = np.clip(np.round(x0), 0, max(w - bw, 0))
        y0 = np.clip(np.round(y0), 0, max(h - bh, 0))
        rects = np.stack([x0, y0, x0 + bw, y0 + bh], axis=1)
        # Covering another label is what must not happen; hiding a share of a card costs that
        # share of a label's area (so big cards keep their labels on them), and every step
        # away from the card a little.
        cost = (
            100.0 * _overlaps(rects, placed).sum(axis=1)
            + bw * bh * (_overlaps(rects, cards) / card_areas).sum(axis=1)
            + 0.15 * bw * bh * step_cost
        )
        rect = rects[int(np.argmin(cost))]
        placed = np.vstack([placed, rect])
        boxes[int(i)] = LabelBox(
            text, tuple(int(v) for v in rect), (int(round(anchor[0])), int(round(anchor[1])))
        )
    return [boxes[i] for i in range(len(det))]


def _overlaps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(len(a), len(b)) overlapping areas of (x0, y0, x1, y1) rectangles."""
    wx = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    wy = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    return np.clip(wx, 0, None) * np.clip(wy, 0, None)


def annotate(bgr: np.ndarray, det: Detections) -> np.ndarray:
    """A copy of the image with each quad outlined, its top edge marked and its class written
    on a dark tag (``label_boxes``: tags never cover each other; one moved off its card is
    joined to it by a line)."""
    out = bgr.copy()
    scale, thick = _label_scale(out.shape)
    colours = [(0, 200, 0) if conf >= 0.8 else (0, 200, 255) for conf in det.confidence]
    for quad, color in zip(det.quads, colours, strict=True):
        pts = quad.round().astype(np.int32)
        cv2.polylines(out, [pts], True, color, thick, cv2.LINE_AA)
        cv2.line(out, tuple(pts[0]), tuple(pts[1]), (255, 0, 255), thick + 1, cv2.LINE_AA)
    labels = label_boxes(det, out.shape)
    for box, color in zip(labels, colours, strict=True):
        if box.moved:
            x0, y0, x1, y1 = box.rect
            near = (min(max(box.anchor[0], x0), x1), min(max(box.anchor[1], y0), y1))
            cv2.line(out, box.anchor, near, color, thick, cv2.LINE_AA)
            cv2.circle(out, box.anchor, 2 * thick, color, -1, cv2.LINE_AA)
    for box, color in zip(labels, colours, strict=True):
        x0, y0, x1, y1 = box.rect
        cv2.rectangle(out, (x0, y0), (x1 - 1, y1 - 1), (20, 20, 20), -1)
        cv2.rectangle(out, (x0, y0), (x1 - 1, y1 - 1), color, 1)
        (_, th), _ = cv2.getTextSize(box.text, _LABEL_FONT, scale, thick)
        org = (x0 + 2 * thick, y0 + thick + th)
        cv2.putText(out, box.text, org, _LABEL_FONT, scale, (255, 255, 255), thick, cv2.LINE_AA)
    return out


MISSED_COLOUR = (0, 0, 255)  # red: a card that had to be found
FALSE_COLOUR = (0, 140, 255)  # orange: a detection matched to no card


def annotate_misses(
    bgr: np.ndarray,
    det: Detections,
    false_kinds: dict[int, str],
    missed: list[tuple[np.ndarray, str, str]],
) -> np.ndarray:
    """``annotate`` plus what eval holds against the detections: each missed card (quad, code,
    where it was lost) outlined in red, each false detection (index -> kind) in orange, with a
    tag saying why, so that a difficult scene can be checked by eye."""
    out = annotate(bgr, det)
    scale, thick = _label_scale(out.shape)
    marks = [(det.quads[d], f"false: {kind}", FALSE_COLOUR) for d, kind in false_kinds.items()]
    marks += [(quad, f"missed {code}: {why}", MISSED_COLOUR) for quad, code, why in missed]
    for quad, text, colour in marks:
        pts = np.asarray(quad).round().astype(np.int32)
        cv2.polylines(out, [pts], True, colour, 2 * thick + 1, cv2.LINE_AA)
        (tw, th), base = cv2.getTextSize(text, _LABEL_FONT, scale, thick)
        x = int(np.clip(pts[:, 0].min(), 0, max(0, out.shape[1] - tw - 4)))
        y = int(np.clip(pts[:, 1].max() + th + 4, th + 2, out.shape[0] - base - 2))
        cv2.rectangle(out, (x, y - th - 2), (x + tw + 4, y + base), (20, 20, 20), -1)
        cv2.putText(out, text, (x + 2, y), _LABEL_FONT, scale, colour, thick, cv2.LINE_AA)
    return out


# --------------------------------------------------------------------------------------------
# Evaluation on synthetic scenes, and the speed benchmark
# --------------------------------------------------------------------------------------------

EVAL_IOU = 0.5
MUST_FIND_VISIBLE = 0.4  # less visible labels are "don't care": neither missed nor false


@dataclass
class _Tally:
    labels: int = 0
    found: int = 0
    exact: int = 0
    chaff_equal: int = 0

    def add(self, found: bool, exact: bool, chaff_equal: bool) -> None:
        self.labels += 1
        self.found += int(found)
        self.exact += int(exact)
        self.chaff_equal += int(chaff_equal)

    def to_dict(self) -> dict:
        return {
            "labels": self.labels,
            "recall": round(self.found / self.labels, 4) if self.labels else None,
            "exact_accuracy": round(self.exact / self.found, 4) if self.found else None,
            "chaff_accuracy": round(self.chaff_equal / self.found, 4) if self.found else None,
        }


INTERVAL_RESAMPLES = 2000


def _resampled_figures(counts: np.ndarray, picks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Recall and false cards per image of each resampled scene set: ``counts`` (scenes, 3)
    holds each scene's cards found, cards to find and false cards, ``picks`` (resamples,
    scenes) the scenes of each set. Recall is NaN for a set with no card to find."""
    found, need, false_pos = (counts[:, k][picks].sum(axis=1) for k in range(3))
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(need > 0, found / need, np.nan)
    return recall, false_pos / picks.shape[1]


def scene_intervals(
    found: np.ndarray,
    to_find: np.ndarray,
    false_pos: np.ndarray,
    against: np.ndarray | None = None,
    resamples: int = INTERVAL_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
) -> dict:
    """How far recall and false cards per image could move on another set of scenes like
    these: percentile bootstrap intervals, resampling whole scenes (their cards are not
    independent: a blurred or crowded scene loses several), from per-scene counts of cards
    found, cards to find and false cards. ``against``: another model's per-scene counts
    (scenes, 3) on the same scenes; the intervals are then of the difference, this model's
    figure minus that one's, on the same resampled sets (paired: a hard scene is hard for
    both, so a difference is measured far more tightly than either figure). Deterministic for
    a ``seed``; None where the scenes give no figure."""
    counts = np.column_stack([found, to_find, false_pos]).astype(np.float64).reshape(-1, 3)
    n = len(counts)
    if n == 0:
        return {"level": level, "recall": None, "false_positives_per_image": None}
    picks = np.random.default_rng(seed).integers(0, n, (resamples, n))
    recall, false_rate = _resampled_figures(counts, picks)
    if against is not None:
        other = np.asarray(against, np.float64).reshape(-1, 3)
        if len(other) != n or (other[:, 1] != counts[:, 1]).any():
            raise ValueError("Both models' counts must come from the same scenes.")
        other_recall, other_false_rate = _resampled_figures(other, picks)
        recall, false_rate = recall - other_recall, false_rate - other_false_rate
    tails = [100 * (1 - level) / 2, 100 * (1 + level) / 2]

    def bounds(values):
        values = values[~np.isnan(values)]  # a set of only empty scenes has no recall
        return [round(float(v), 4) for v in np.percentile(values, tails)] if len(values) else None

    return {
        "level": level,
        "recall": bounds(recall) if counts[:, 1].sum() > 0 else None,
        "false_positives_per_image": bounds(false_rate),
    }


def _scene_counts(det_to_label, label_to_det, visible) -> tuple[int, int, int]:
    """One scene's cards found, cards to find and false cards, from ``match_detections``."""
    must = np.asarray(visible) >= MUST_FIND_VISIBLE
    found = int((must & (label_to_det >= 0)).sum())
    return found, int(must.sum()), int((det_to_label < 0).sum())


def match_detections(
    det: Detections, quads: np.ndarray, visible: np.ndarray, iou: float = EVAL_IOU
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy one-to-one matching by quad IoU >= ``iou``, best pairs first, the cards that must
    be found (``visible`` >= ``MUST_FIND_VISIBLE``) served before the "don't care" ones: a card
    mostly hidden under a visible one must not take the detection that outlines the visible
    one (as COCO's ignored regions: matched last, neither found nor false).

    Returns (label index per detection or -1, detection index per label or -1).
    """
    from companion.detections import iou_matrix

    ious = iou_matrix(det.quads, np.asarray(quads, np.float32).reshape(-1, 4, 2))
    must = np.asarray(visible, np.float32).reshape(-1) >= MUST_FIND_VISIBLE
    det_to_label = np.full(len(det), -1)
    label_to_det = np.full(len(quads), -1)
    pairs = np.argwhere(ious >= iou).tolist()
    for d, lab in sorted(pairs, key=lambda p: (not must[p[1]], -ious[p[0], p[1]])):
        if det_to_label[d] < 0 and label_to_det[lab] < 0:
            det_to_label[d], label_to_det[lab] = lab, d
    return det_to_label, label_to_det


def false_positive_kinds(
    det: Detections, quads: np.ndarray, visible: np.ndarray, det_to_label: np.ndarray
) -> list[str]:
    """Why each unmatched detection is false, so that eval says where false cards come from:

    - "second look": it covers a card (IoU >= 0.5) that another detection already matched;
    - "loose quad": it overlaps a card at least 40 % visible, but by less than 0.5;
    - "hidden card": it overlaps a card less than 40 % visible (which need not be found) by
      less than 0.5, usually outlining the visible part only;
    - "no card": it overlaps no card (IoU < 0.1): the table, a hand, a box, paper or a phone.
    """
    from companion.detections import iou_matrix

    unmatched = np.flatnonzero(det_to_label < 0)
    if len(unmatched) == 0:
        return []
    quads = np.asarray(quads, np.float32).reshape(-1, 4, 2)
    if len(quads) == 0:
        return ["no card"] * len(unmatched)
    ious = iou_matrix(det.quads[unmatched], quads)
    kinds = []
    for row in ious:
        j = int(row.argmax())
        if row[j] >= EVAL_IOU:
            kinds.append("second look")
        elif row[j] < 0.1:
            kinds.append("no card")
        elif visible[j] < MUST_FIND_VISIBLE:
            kinds.append("hidden card")
        else:
            kinds.append("loose quad")
    return kinds


def names_a_card(probs: np.ndarray, settings: Settings) -> np.ndarray:
    """Which classifier outputs (N, classes) name a card surely enough to count as one: not
    "none" (under ``max_none``) and at least ``min_confidence`` sure of some card or back."""
    sure = probs[:, :NONE_ID].max(axis=1, initial=0.0)
    return (probs[:, NONE_ID] < settings.max_none) & (sure >= settings.min_confidence)


def missed_card_kinds(
    looks: list, quads: np.ndarray, missed: np.ndarray, settings: Settings
) -> list[str]:
    """Where each missed card (label indices ``missed`` into ``quads``) was lost, judged from
    every crop the classifier looked at (``looks``: (quads, probs) per run, ``Recognizer.looks``):

    - "never outlined": no crop outlined it (IoU >= 0.5): the localizer proposed no box close
      enough, and no second chance found it;
    - "named unsure": crops outlined it, but none named a card at least ``min_confidence`` sure
      (or they said "none"); with a learned acceptance rule, ``min_confidence`` still draws
      this line, so the kinds stay comparable across models;
    - "outlined surely, then lost": a crop outlined it and named a card that surely, yet no
      detection is matched to it: the decode dropped that crop (a surer crop's card again, a
      doubtful second look, second chances' higher bar, NMS, one card once, the size check),
      or its detection was matched to a card it overlaps more (two cards of a tight row).
    """
    from companion.detections import iou_matrix

    if len(missed) == 0:
        return []
    if looks:
        crop_quads = np.concatenate([q for q, _ in looks]).astype(np.float32)
        probs = np.concatenate([p for _, p in looks])
    else:
        crop_quads, probs = np.zeros((0, 4, 2), np.float32), np.zeros((0, NONE_ID + 1))
    sure = names_a_card(probs, settings)
    outlined = iou_matrix(np.asarray(quads, np.float32)[missed].reshape(-1, 4, 2), crop_quads)
    outlined = outlined >= EVAL_IOU
    return [
        "outlined surely, then lost"
        if (row & sure).any()
        else "named unsure"
        if row.any()
        else "never outlined"
        for row in outlined
    ]


def _scene_keys(cond: dict) -> list[str]:
    """Conditions of a whole scene, for false positives per image."""
    kinds = sorted(set(cond.get("distractors") or ())) or ["none"]
    keys = [f"distractor:{k}" for k in kinds]
    if "hands" in cond:
        keys.append(f"hands:{'yes' if cond['hands'] else 'no'}")
    return keys


def frame_position(quad: np.ndarray, width: int, height: int) -> str:
    """Where a card lies against the frame: "inside", "cut by the edge" (its centre on the
    frame) or "centre outside". The localizer learns no centre for the last kind."""
    quad = np.asarray(quad, np.float64).reshape(4, 2)
    cx, cy = quad.mean(axis=0)
    if not (0 <= cx < width and 0 <= cy < height):
        return "centre outside"
    inside = (quad[:, 0] >= 0) & (quad[:, 0] <= width) & (quad[:, 1] >= 0) & (quad[:, 1] <= height)
    return "inside" if inside.all() else "cut by the edge"


def _condition_keys(cond: dict, visible: float, card: str, frame: str) -> list[str]:
    keys = [
        "overlap:" + ("overlapped" if visible < 0.95 else "clear"),
        "card:" + ("face down" if card == BACK else "face up"),
        # most misses are half-covered cards: where along the way to "clear" they lie
        "visible:"
        + (
            "40-60%"
            if visible < 0.6
            else "60-80%"
            if visible < 0.8
            else "80-95%"
            if visible < 0.95
            else "95-100%"
        ),
    ]
    tilt = cond.get("tilt_deg")
    if tilt is not None:
        keys.append("tilt:" + ("<15" if tilt < 15 else "15-30" if tilt < 30 else ">=30"))
    if "light" in cond:
        keys.append(f"light:{cond['light']}")
    px = cond.get("card_px")
    if px is not None:
        keys.append(
            "size:"
            + ("small <80px" if px < 80 else "medium 80-150px" if px < 150 else "large >=150px")
        )
    for flag in ("glare", "hands", "sheen"):
        if flag in cond:
            keys.append(f"{flag}:{'yes' if cond[flag] else 'no'}")
    if "motion_blur" in cond:
        keys.append(f"motion blur:{'yes' if cond['motion_blur'] else 'no'}")
    keys.append(f"frame:{frame}")
    if card != BACK:  # which month's art is hardest to name (face-down cards: "card:face down")
        keys.append(f"month:{card[:2]}")
    return keys


def _render_for_eval(args):
    from companion import synth

    seed, config = args
    return synth.render_scene(seed, config)


def _rendered(config, seed: int, n: int, workers: int):
    """Scenes ``synth.scene_seed(seed, i)`` for i < n, rendered by ``workers`` processes."""
    from companion import synth

    jobs = [(synth.scene_seed(seed, i), config) for i in range(n)]
    if workers <= 1:
        yield from map(_render_for_eval, jobs)
        return
    pool = synth.render_pool(workers)
    try:
        yield from pool.imap(_render_for_eval, jobs, chunksize=4)
    finally:
        pool.terminate()


def evaluate(
    recognizer: Recognizer,
    deck: str,
    seed: int = 0,
    n: int = 500,
    width: int = 1280,
    height: int = 720,
    workers: int = 1,
    progress=None,
    lens_k: float = 0.0,
    misses_dir: str | Path | None = None,
    against: Recognizer | None = None,
) -> dict:
    """Render ``n`` scenes of one deck with synth and score the recognizer on them
    (``lens_k``: every scene seen through a lens with that radial distortion,
    ``synth.SceneConfig.lens_k``). ``misses_dir``: a folder to write each scene with a missed
    or false card into (``annotate_misses``; named by its index in the set: ``0042.jpg``).
    ``against``: a second recognizer run on the same scenes, for the difference between the
    two and how far it could move (key "against")."""
    from collections import Counter

    from companion import synth
    from companion.detections import chaff_group

    config = synth.SceneConfig(width=width, height=height, decks=(str(deck),), lens_k=lens_k)
    synth.load_deck(str(deck))  # a clear error before rendering anything
    scenes = _rendered(config, seed, n, workers)
    total, by_cond = _Tally(), {}
    false_pos, detections, confused = 0, 0, Counter()
    fp_kinds, fp_by_scene = Counter(), {}  # scene key -> [images, false positives]
    miss_kinds, scenes_drawn = Counter(), 0
    per_scene = []  # (cards found, cards to find, false cards) of each scene
    other_per_scene = []  # ... for the ``against`` recognizer
    if misses_dir is not None:
        try:
            Path(misses_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RecognizerError(
                f"Cannot make the folder {misses_dir} ({exc.strerror})."
            ) from None
    try:
        for i, scene in enumerate(scenes):
            recognizer.looks = []
            det = recognizer.detect(scene.image)
            detections += len(det)
            quads = np.array([lab.quad for lab in scene.labels], np.float32).reshape(-1, 4, 2)
            vis = np.array([lab.visible for lab in scene.labels], np.float32)
            det_to_label, label_to_det = match_detections(det, quads, vis)
            false_pos += int((det_to_label < 0).sum())
            kinds = false_positive_kinds(det, quads, vis, det_to_label)
            fp_kinds.update(kinds)
            missed = np.flatnonzero((vis >= MUST_FIND_VISIBLE) & (label_to_det < 0))
            why = missed_card_kinds(recognizer.looks, quads, missed, recognizer.settings)
            miss_kinds.update(why)
            per_scene.append(_scene_counts(det_to_label, label_to_det, vis))
            if against is not None:
                other = match_detections(against.detect(scene.image), quads, vis)
                other_per_scene.append(_scene_counts(*other, vis))
            if misses_dir is not None and (len(missed) or kinds):
                falses = dict(zip(np.flatnonzero(det_to_label < 0).tolist(), kinds, strict=True))
                lost = [
                    (quads[j], scene.labels[j].card, w) for j, w in zip(missed, why, strict=True)
                ]
                drawn = annotate_misses(scene.image, det, falses, lost)
                target = Path(misses_dir) / f"{i:04d}.jpg"
                if not cv2.imwrite(str(target), drawn):
                    raise RecognizerError(f"Cannot write {target}.")
                scenes_drawn += 1
            for key in _scene_keys(scene.conditions):
                tally = fp_by_scene.setdefault(key, [0, 0])
                tally[0] += 1
                tally[1] += len(kinds)
            for j, lab in enumerate(scene.labels):
                if lab.visible < MUST_FIND_VISIBLE:
                    continue
                d = label_to_det[j]
                true_id = CLASSES.index(lab.card)
                found = d >= 0
                pred = int(det.class_ids[d]) if found else -1
                exact = found and pred == true_id
                chaff_eq = found and chaff_group([pred])[0] == chaff_group([true_id])[0]
                if found and not exact:
                    confused[(lab.card, CLASSES[pred])] += 1
                total.add(found, exact, chaff_eq)
                frame = frame_position(lab.quad, scene.image.shape[1], scene.image.shape[0])
                for key in _condition_keys(scene.conditions, lab.visible, lab.card, frame):
                    by_cond.setdefault(key, _Tally()).add(found, exact, chaff_eq)
            if progress:
                progress(i + 1)
    finally:
        recognizer.looks = None
        scenes.close()  # stops the render processes
    true_pos = detections - false_pos
    counts = np.array(per_scene, np.int64).reshape(-1, 3)
    compared = {}
    if against is not None:
        other = np.array(other_per_scene, np.int64).reshape(-1, 3)
        found, need, false_other = (int(v) for v in other.sum(axis=0))
        compared = {
            "against": {
                "recall": round(found / need, 4) if need else None,
                "false_positives": false_other,
                "false_positives_per_image": round(false_other / n, 4) if n else None,
                # this model's figure minus the other's, and how far it could move
                "difference": {
                    "recall": round((int(counts[:, 0].sum()) - found) / need, 4) if need else None,
                    "false_positives_per_image": (
                        round((false_pos - false_other) / n, 4) if n else None
                    ),
                },
                "intervals": scene_intervals(*counts.T, against=other),
            }
        }
    return {
        "deck": Path(deck).name,
        "render_version": synth.RENDER_VERSION,  # the scenes change when the renderer does
        "seed": seed,
        "lens_k": float(lens_k),
        "images": n,
        "labels": total.labels,
        "detections": detections,
        "precision": round(true_pos / detections, 4) if detections else None,
        "recall": total.to_dict()["recall"],
        "exact_accuracy": total.to_dict()["exact_accuracy"],
        "chaff_accuracy": total.to_dict()["chaff_accuracy"],
        "false_positives": false_pos,
        "false_positives_per_image": round(false_pos / n, 4) if n else None,
        "intervals": scene_intervals(*counts.T),
        **compared,
        "confused_pairs": [
            {"true": t, "predicted": p, "count": c} for (t, p), c in confused.most_common(10)
        ],
        "false_positive_kinds": dict(fp_kinds.most_common()),
        "missed_card_kinds": dict(miss_kinds.most_common()),
        **({"scenes_drawn": scenes_drawn} if misses_dir is not None else {}),
        "by_condition": {k: by_cond[k].to_dict() for k in sorted(by_cond)},
        "false_positives_by_scene": {
            k: {"images": i, "false_positives": f, "per_image": round(f / i, 4)}
            for k, (i, f) in sorted(fp_by_scene.items())
        },
    }


@dataclass(frozen=True)
class AcceptanceFit:
    """The learned acceptance rule fitted on rendered scenes (``fit_acceptance``)."""

    weights: tuple[float, ...]  # in ``ACCEPT_FEATURES`` order
    scenes: int
    crops: int  # crops that reached the final decision
    cards: int  # ... of them outlining a card to find (IoU >= EVAL_IOU): the positives
    ignored: int  # ... outlining only a mostly hidden card: left out of the fit
    trees: AcceptTrees | None = None  # the boosted trees fitted on top of the weights

    def to_dict(self) -> dict:
        return {
            "features": list(ACCEPT_FEATURES),
            "weights": [round(w, 4) for w in self.weights],
            "trees": len(self.trees.features) if self.trees else 0,
            "tree_depth": self.trees.depth if self.trees else None,
            "scenes": self.scenes,
            "crops": self.crops,
            "cards": self.cards,
            "ignored": self.ignored,
        }


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 0.01, steps: int = 50) -> np.ndarray:
    """Weights of a logistic regression of ``y`` (0/1) on ``x`` (N, K; a bias column included),
    by Newton's method with a small L2 penalty (a few thousand rows: exact and instant)."""
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -30, 30)))
        hessian = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.eye(len(w))
        step = np.linalg.solve(hessian, x.T @ (p - y) + l2 * w)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def fit_trees(
    x: np.ndarray,
    y: np.ndarray,
    start: np.ndarray,
    rounds: int = 100,
    depth: int = 3,
    rate: float = 0.1,
    l2: float = 1.0,
    bins: int = 64,
    min_hessian: float = 1.0,
) -> AcceptTrees:
    """Gradient-boosted trees for the logistic loss of ``y`` (0/1) on ``x`` (N, K), starting
    from the logit ``start`` (N): each round fits a complete tree of ``depth`` to the loss's
    gradient, splitting where the second-order gain is largest among ``bins`` quantiles of
    each feature, and adds its leaves' Newton steps shrunk by ``rate`` (as XGBoost and
    LightGBM do). Deterministic; a few seconds for some 40,000 rows."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    n, k = x.shape
    inner = 2**depth - 1
    quantiles = np.linspace(0, 1, bins + 1)[1:-1]
    cuts = [np.unique(np.quantile(x[:, j], quantiles)) for j in range(k)]
    # bin b of feature j holds the values up to cuts[j][b]: "x > cuts[j][b]" sends bins > b right
    binned = np.stack([np.searchsorted(cuts[j], x[:, j]) for j in range(k)], axis=1)
    features = np.zeros((rounds, inner), np.int64)
    thresholds = np.full((rounds, inner), np.inf)
    leaves = np.zeros((rounds, inner + 1))
    logit = np.asarray(start, np.float64).copy()
    for t in range(rounds):
        p = 1 / (1 + np.exp(-np.clip(logit, -30, 30)))
        grad, hess = p - y, np.maximum(p * (1 - p), 1e-12)
        node = np.zeros(n, np.int64)
        for level in range(depth):
            for i in range(2**level - 1, 2 ** (level + 1) - 1):
                rows = np.flatnonzero(node == i)
                g_all, h_all = grad[rows].sum(), hess[rows].sum()
                best_gain, best = 0.0, None
                for j in range(k):
                    size = len(cuts[j]) + 1
                    g = np.cumsum(np.bincount(binned[rows, j], grad[rows], size))[:-1]
                    h = np.cumsum(np.bincount(binned[rows, j], hess[rows], size))[:-1]
                    gain = g**2 / (h + l2) + (g_all - g) ** 2 / (h_all - h + l2)
                    gain = np.where(
                        (h >= min_hessian) & (h_all - h >= min_hessian),
                        gain - g_all**2 / (h_all + l2),
                        0.0,
                    )
                    b = int(gain.argmax()) if len(gain) else 0
                    if len(gain) and gain[b] > best_gain:
                        best_gain, best = float(gain[b]), (j, cuts[j][b])
                if best is not None:
                    features[t, i], thresholds[t, i] = best
            value = x[np.arange(n), features[t, node]]
            node = 2 * node + 1 + (value > thresholds[t, node])
        leaf = node - inner
        g, h = np.bincount(leaf, grad, inner + 1), np.bincount(leaf, hess, inner + 1)
        leaves[t] = -rate * g / (h + l2)
        logit += leaves[t, leaf]
    return AcceptTrees(features=features, thresholds=thresholds, leaves=leaves)


def fit_acceptance(
    recognizer: Recognizer,
    decks,
    seed: int = 300,
    n: int = 750,
    width: int = 1280,
    height: int = 720,
    workers: int = 1,
    progress=None,
    trees: int = 100,
) -> AcceptanceFit:
    """Fit the acceptance rule's weights (``Settings.accept_weights``) to the crops this
    recognizer's nets reach the final decision with, on ``n`` rendered scenes of each deck
    (deck k: dataset seed ``seed + k``), then ``trees`` boosted trees of depth 3 on top of them
    (``Settings.accept_trees``; 0: none). A crop outlining a card to find is a positive, one
    outlining nothing to find a negative. The rule in force matters through which of two looks
    at one card reaches the decision (``Recognizer._distinct``) and whether second chances near
    a found card, such as row steps, go on to it (``Recognizer._kept_spots``)."""
    from companion import synth
    from companion.detections import iou_matrix

    rows, labels, scenes = [], [], 0
    try:
        recognizer.candidates = []
        for k, deck in enumerate(decks):
            synth.load_deck(str(deck))
            config = synth.SceneConfig(width=width, height=height, decks=(str(deck),))
            for scene in _rendered(config, seed + k, n, workers):
                recognizer.candidates.clear()
                recognizer.detect(scene.image)
                scenes += 1
                if progress:
                    progress(scenes)
                if not recognizer.candidates:
                    continue  # nothing the localizer found
                ((quads, features),) = recognizer.candidates
                truth = np.array([lab.quad for lab in scene.labels], np.float32).reshape(-1, 4, 2)
                must = np.array([lab.visible >= MUST_FIND_VISIBLE for lab in scene.labels], bool)
                ious = iou_matrix(quads.astype(np.float32), truth)
                to_find = np.where(must[None, :], ious, 0).max(axis=1, initial=0.0)
                hidden = np.where(~must[None, :], ious, 0).max(axis=1, initial=0.0)
                rows.append(features)
                labels.append(np.where(to_find >= EVAL_IOU, 1, np.where(hidden >= EVAL_IOU, -1, 0)))
    finally:
        recognizer.candidates = None
    if not rows:
        raise RecognizerError("No crops to fit the acceptance rule to: the scenes had no cards.")
    x, y = np.concatenate(rows), np.concatenate(labels)
    used = y >= 0
    if len(np.unique(y[used])) < 2:
        raise RecognizerError("The acceptance rule needs both real cards and false finds to fit.")
    fit_x, card = x[used], (y[used] == 1).astype(np.float64)
    # the trees start from the weights as written into the metadata, so that they correct the
    # rule the recognizer will run
    weights = np.round(fit_logistic(fit_x, card), 4)
    return AcceptanceFit(
        weights=tuple(float(w) for w in weights),
        trees=fit_trees(fit_x, card, fit_x @ weights, rounds=trees) if trees else None,
        scenes=scenes,
        crops=len(y),
        cards=int((y == 1).sum()),
        ignored=int((y < 0).sum()),
    )


YARDSTICK = MODELS_DIR / "yolo11n_yardstick.onnx"


def bench_scene(width: int = 1280, height: int = 720) -> tuple[np.ndarray, int]:
    """A realistic table frame: the first synth scene (seed 1, 2, ...) with 20+ labelled cards."""
    from companion import synth

    config = synth.SceneConfig(width=width, height=height)
    for seed in range(1, 200):
        scene = synth.render_scene(seed, config)
        if len(scene.labels) >= 20:
            return scene.image, len(scene.labels)
    return scene.image, len(scene.labels)


def benchmark(
    recognizer: Recognizer,
    frame: np.ndarray,
    runs: int = 50,
    yardstick: str | Path | None = YARDSTICK,
    threads: int = 2,
) -> dict:
    """Median/p95 ms of ``detect`` on ``frame``, and the YOLO11n-shaped yardstick's median.

    The two are timed alternately (one detect, then one yardstick run, ...), so a load change
    on a shared machine hits both alike and their ratio stays meaningful.
    """
    import os
    import time

    sess, x, name = None, None, None
    if yardstick and Path(yardstick).is_file():
        sess = _session(Path(yardstick), threads)
        x = np.random.default_rng(0).random((1, 3, 640, 640), dtype=np.float32)
        name = sess.get_inputs()[0].name
    for _ in range(5):
        det = recognizer.detect(frame)
        if sess:
            sess.run(None, {name: x})
    times, ytimes = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        det = recognizer.detect(frame)
        times.append((time.perf_counter() - t0) * 1000)
        if sess:
            t0 = time.perf_counter()
            sess.run(None, {name: x})
            ytimes.append((time.perf_counter() - t0) * 1000)
    cpuinfo = _cpuinfo()
    result = {
        "ms_median": round(float(np.median(times)), 2),
        "ms_p95": round(float(np.percentile(times, 95)), 2),
        "runs": runs,
        "threads": threads,
        "frame": f"{frame.shape[1]}x{frame.shape[0]}",
        "cards_detected": len(det),
        "nets": recognizer.precision,  # int8, float or avx2
        # the ratio to the yardstick depends on the CPU kind far more than on the run
        # (models/README.md, "Speed"): say which kind this was
        "cpu": cpu_name(cpuinfo),
        "int8_dot_products": int8_is_fast(cpuinfo),
        "yolo11n_ms_median": round(float(np.median(ytimes)), 2) if ytimes else None,
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    if ytimes:
        result["speedup_vs_yolo11n"] = round(result["yolo11n_ms_median"] / result["ms_median"], 2)
    return result

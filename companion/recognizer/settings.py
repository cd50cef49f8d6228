"""How a model decodes: ``Settings``, stored in the model's metadata (recognizer.json), and the
learned acceptance rule's trees. Plain data; no OpenCV, no onnxruntime."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from companion import CompanionError
from companion.detections import CLASSES

NONE_ID = len(CLASSES)  # the classifier's extra "not a card" output


class RecognizerError(CompanionError):
    """A missing or unusable model, or an image that cannot be processed."""


# What the learned acceptance rule (``Acceptance.accept_weights``) looks at, per crop:
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


@dataclass(frozen=True)
class Inputs:
    """What the two nets see and how the localizer's outputs are scaled."""

    input_width: int = 512  # the localizer's letterboxed frame
    input_height: int = 288
    stride: int = 4  # frame pixels per heatmap cell
    size_unit: float = 16.0  # box sizes are predicted as log(pixels / size_unit)
    pad_value: int = 114  # the letterbox's border
    crop_width: int = 48  # the classifier's crop
    crop_height: int = 80
    crop_enlarge: float = 1.2  # a crop shows this much more than its box


@dataclass(frozen=True)
class Candidates:
    """Which heatmap cells become crops, and which crops are cut again for a second look."""

    heat_threshold: float = 0.25
    max_candidates: int = 64
    # 0: candidates are 3x3 heat maxima. >0: any cell above the threshold is a candidate unless
    # a hotter one lies within this fraction of their short side (finds the ridge cards of a
    # tight capture row, whose centres the heatmap blurs into one peak)
    peak_spacing: float = 0.0
    refine_steps: int = 0  # classifier passes re-cut around the previous pass's corners
    refine_below: float = 1.0  # ... for the crops whose best card is less likely than this


@dataclass(frozen=True)
class SecondChances:
    """Second chances for the cards the localizer barely saw (0 and () switch them off): extra
    crops are cut only where no card was found yet, and what they find is kept only if the
    classifier is at least ``extra_confidence`` sure, after a second look."""

    extra_heat: float = 0.0  # ... at the peaks between this and heat_threshold
    neighbour_across: tuple[float, ...] = ()  # ... beside each sure card, these widths away
    neighbour_along: tuple[float, ...] = ()  # ... above and below it, these heights away
    neighbour_heat: float = 0.0  # ... where the heatmap is at least this warm (one cell around)
    extra_confidence: float = 0.9  # also how sure a card must be to have neighbours looked for
    # ... and one row step on from each pair of neighbouring sure cards of a fanned row, and
    # between two a double step apart (``row_boxes``; also where ``neighbour_heat`` is warm):
    # the strip of a covered card lies nearer a found card than the places above are looked at
    row_steps: bool = False

    @property
    def enabled(self) -> bool:
        return (
            self.extra_heat > 0
            or bool(self.neighbour_across or self.neighbour_along)
            or (self.row_steps)
        )


@dataclass(frozen=True)
class Acceptance:
    """Which crops count as cards."""

    min_confidence: float = 0.2  # below this a crop is not reported at all
    max_none: float = 0.5  # crops the classifier finds this likely "not a card" are dropped
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


@dataclass(frozen=True)
class FinalSteps:
    """What happens to the accepted cards last (``detections.final_cards``), and how many
    alternative names each keeps."""

    nms_iou: float = 0.6
    same_card_iou: float = 1.0  # a duplicate class overlapping its holder this much is dropped
    # A card whose size is this far (in log size) from what the others' sizes say for its place
    # is dropped unless at least size_keep_above sure (detections.consistent_sizes; 0 = off)
    size_tolerance: float = 0.0
    size_keep_above: float = 1.0
    # A card this much smaller (log size) than its place says is outlined at the size the others
    # say, about its centre (detections.grow_to_size; 0 = off)
    size_grow_below: float = 0.0
    alternatives: int = 3


# Settings' groups, by attribute, in the order their fields are written to recognizer.json
GROUPS = {
    "inputs": Inputs,
    "candidates": Candidates,
    "second_chances": SecondChances,
    "acceptance": Acceptance,
    "final_steps": FinalSteps,
}
# each flat name of recognizer.json's "settings" -> the group attribute that holds it, in the
# order models have always written them
GROUP_OF = {
    name: next(group for group, cls in GROUPS.items() if name in cls.__dataclass_fields__)
    for name in (
        "input_width",
        "input_height",
        "stride",
        "crop_width",
        "crop_height",
        "crop_enlarge",
        "size_unit",
        "heat_threshold",
        "max_candidates",
        "peak_spacing",
        "min_confidence",
        "max_none",
        "nms_iou",
        "same_card_iou",
        "refine_steps",
        "refine_below",
        "alternatives",
        "pad_value",
        "extra_heat",
        "neighbour_across",
        "neighbour_along",
        "neighbour_heat",
        "extra_confidence",
        "row_steps",
        "size_tolerance",
        "size_keep_above",
        "size_grow_below",
        "hot_heat",
        "hot_confidence",
        "accept_weights",
        "accept_above",
        "accept_trees",
    )  # fmt: skip
}
assert len(GROUP_OF) == sum(len(cls.__dataclass_fields__) for cls in GROUPS.values())


@dataclass(frozen=True)
class Settings:
    """Preprocessing and decoding constants, in groups that say what they are for
    (``settings.candidates.heat_threshold``); stored flat in the model's JSON metadata
    (``from_dict``, ``to_dict``: one flat name per constant, as each group names it)."""

    inputs: Inputs = field(default_factory=Inputs)
    candidates: Candidates = field(default_factory=Candidates)
    second_chances: SecondChances = field(default_factory=SecondChances)
    acceptance: Acceptance = field(default_factory=Acceptance)
    final_steps: FinalSteps = field(default_factory=FinalSteps)

    def with_(self, **flat) -> Settings:
        """These settings with some constants changed, named flat as in recognizer.json
        (``with_(heat_threshold=0.15, input_width=320)``): each goes to its group."""
        changes: dict[str, dict] = {}
        for name, value in flat.items():
            if name not in GROUP_OF:
                raise TypeError(f"Settings has no constant named {name!r}.")
            changes.setdefault(GROUP_OF[name], {})[name] = value
        return replace(
            self,
            **{group: replace(getattr(self, group), **c) for group, c in changes.items()},
        )

    @classmethod
    def from_dict(cls, data: dict) -> Settings:
        """Settings from recognizer.json's flat "settings" (names it does not know are left
        out; a missing one keeps its default)."""
        known = {k: v for k, v in data.items() if k in GROUP_OF}
        for key in ("neighbour_across", "neighbour_along", "accept_weights"):
            if key in known:
                known[key] = tuple(float(v) for v in known[key])
        if known.get("accept_trees") is not None:
            known["accept_trees"] = AcceptTrees.from_dict(known["accept_trees"])
        return cls().with_(**known)

    def to_dict(self) -> dict:
        """recognizer.json's flat "settings"."""
        out = {name: getattr(getattr(self, group), name) for name, group in GROUP_OF.items()}
        trees = self.acceptance.accept_trees
        out["accept_trees"] = trees.to_dict() if trees else None
        return out

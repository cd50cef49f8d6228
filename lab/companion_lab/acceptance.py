"""The learned acceptance rule (``Settings.acceptance``: ``accept_weights``, ``accept_trees``),
fitted to a model's nets on rendered scenes: which crops count as cards.

The fit needs numpy only; the rule it writes runs in the product's decoder.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from companion.bench.evaluation import EVAL_IOU, MUST_FIND_VISIBLE, rendered_scenes
from companion.recognizer import ACCEPT_FEATURES, AcceptTrees, Recognizer, RecognizerError


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
    """Fit the acceptance rule's weights (``Settings.acceptance.accept_weights``) to the crops
    this recognizer's nets reach the final decision with, on ``n`` rendered scenes of each deck
    (deck k: dataset seed ``seed + k``), then ``trees`` boosted trees of depth 3 on top of them
    (``accept_trees``; 0: none). A crop outlining a card to find is a positive, one outlining
    nothing to find a negative. The rule in force matters through which of two looks
    at one card reaches the decision (``Decoder._distinct``) and whether second chances near
    a found card, such as row steps, go on to it (``Decoder._kept_spots``)."""
    from companion.detections import iou_matrix
    from companion.simulator import synth

    rows, labels, scenes = [], [], 0
    for k, deck in enumerate(decks):
        synth.load_deck(str(deck))
        config = synth.SceneConfig(width=width, height=height, decks=(str(deck),))
        for scene in rendered_scenes(config, seed + k, n, workers):
            _, trace = recognizer.detect_traced(scene.image)
            scenes += 1
            if progress:
                progress(scenes)
            if not trace.candidates:
                continue  # nothing the localizer found
            ((quads, features),) = trace.candidates
            truth = np.array([lab.quad for lab in scene.labels], np.float32).reshape(-1, 4, 2)
            must = np.array([lab.visible >= MUST_FIND_VISIBLE for lab in scene.labels], bool)
            ious = iou_matrix(quads.astype(np.float32), truth)
            to_find = np.where(must[None, :], ious, 0).max(axis=1, initial=0.0)
            hidden = np.where(~must[None, :], ious, 0).max(axis=1, initial=0.0)
            rows.append(features)
            labels.append(np.where(to_find >= EVAL_IOU, 1, np.where(hidden >= EVAL_IOU, -1, 0)))
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

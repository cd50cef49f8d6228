"""How well a recognizer does on rendered scenes of one deck (``evaluate``, ``companion eval``):
recall, false cards, where cards were lost and why detections were false, by condition, with
intervals from resampling whole scenes. Needs OpenCV and numpy only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from companion.bench.misses import annotate_misses
from companion.detections import BACK, CLASSES, Detections, chaff_group, iou_matrix
from companion.recognizer.decoding import DecodeTrace, names_a_card
from companion.recognizer.settings import NONE_ID, RecognizerError, Settings
from companion.simulator import synth
from companion.simulator.closeup import render_closeup

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

    def figures(self) -> Figures:
        return Figures(
            labels=self.labels,
            recall=round(self.found / self.labels, 4) if self.labels else None,
            exact_accuracy=round(self.exact / self.found, 4) if self.found else None,
            chaff_accuracy=round(self.chaff_equal / self.found, 4) if self.found else None,
        )


@dataclass(frozen=True)
class Figures:
    """Recall and naming over one group of cards (the whole set, or one condition)."""

    labels: int
    recall: float | None
    exact_accuracy: float | None
    chaff_accuracy: float | None

    def to_dict(self) -> dict:
        return {
            "labels": self.labels,
            "recall": self.recall,
            "exact_accuracy": self.exact_accuracy,
            "chaff_accuracy": self.chaff_accuracy,
        }


@dataclass(frozen=True)
class FalseCardsInScenes:
    """False cards over the scenes of one kind."""

    images: int
    false_positives: int

    @property
    def per_image(self) -> float:
        return round(self.false_positives / self.images, 4)

    def to_dict(self) -> dict:
        return {
            "images": self.images,
            "false_positives": self.false_positives,
            "per_image": self.per_image,
        }


@dataclass(frozen=True)
class EvalReport:
    """What ``evaluate`` measured on one set of rendered scenes (``companion eval``); ``to_dict``
    is ``companion eval --json``, key for key."""

    deck: str
    render_version: int  # the scenes change when the renderer does
    seed: int
    lens_k: float
    frame: str  # "1280x720", or "1280x720 close-ups"
    images: int
    detections: int
    precision: float | None
    overall: Figures
    false_positives: int
    false_positives_per_image: float | None
    intervals: dict  # scene_intervals: the level, recall and false cards per image
    confused_pairs: list[dict]  # {true, predicted, count}, the ten most frequent
    false_positive_kinds: dict[str, int]
    missed_card_kinds: dict[str, int]
    by_condition: dict[str, Figures]
    false_positives_by_scene: dict[str, FalseCardsInScenes]
    against: dict | None = None  # the other recognizer's figures (``against=``)
    scenes_drawn: int | None = None  # scenes written to ``misses_dir``
    # uncovered face-up cards found but called ``back``, and face-down cards found as ``back``
    # (of how many): a deck's own back must name the second and never the first
    faces_called_back: int = 0
    backs_named: int = 0
    backs_to_find: int = 0
    # loose cards and cards of fanned rows (partly covered) apart: found, named right, false
    # cards (``LIES``)
    by_lie: dict | None = None

    @property
    def labels(self) -> int:
        return self.overall.labels

    @property
    def recall(self) -> float | None:
        return self.overall.recall

    @property
    def exact_accuracy(self) -> float | None:
        return self.overall.exact_accuracy

    @property
    def chaff_accuracy(self) -> float | None:
        return self.overall.chaff_accuracy

    @property
    def named_right(self) -> float | None:
        """The share of the cards to find found and named right for scoring (chaff twins
        alike): recall times the chaff-equivalent accuracy."""
        o = self.overall
        if not o.labels or o.recall is None or o.chaff_accuracy is None:
            return None
        return round(o.recall * o.chaff_accuracy, 4)

    def to_dict(self) -> dict:
        return {
            "deck": self.deck,
            "render_version": self.render_version,
            "seed": self.seed,
            "lens_k": self.lens_k,
            "frame": self.frame,
            "images": self.images,
            "labels": self.labels,
            "detections": self.detections,
            "precision": self.precision,
            "recall": self.recall,
            "exact_accuracy": self.exact_accuracy,
            "chaff_accuracy": self.chaff_accuracy,
            "false_positives": self.false_positives,
            "false_positives_per_image": self.false_positives_per_image,
            "faces_called_back": self.faces_called_back,
            "backs_named": self.backs_named,
            "backs_to_find": self.backs_to_find,
            "named_right": self.named_right,
            **({"by_lie": self.by_lie} if self.by_lie is not None else {}),
            "intervals": self.intervals,
            **({"against": self.against} if self.against is not None else {}),
            "confused_pairs": self.confused_pairs,
            "false_positive_kinds": self.false_positive_kinds,
            "missed_card_kinds": self.missed_card_kinds,
            **({"scenes_drawn": self.scenes_drawn} if self.scenes_drawn is not None else {}),
            "by_condition": {k: f.to_dict() for k, f in self.by_condition.items()},
            "false_positives_by_scene": {
                k: f.to_dict() for k, f in self.false_positives_by_scene.items()
            },
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


def missed_card_kinds(
    looks: list, quads: np.ndarray, missed: np.ndarray, settings: Settings
) -> list[str]:
    """Where each missed card (label indices ``missed`` into ``quads``) was lost, judged from
    every crop the classifier looked at (``looks``: (quads, probs) per run, ``DecodeTrace.looks``):

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


LIES = ("loose", "fanned")  # a card fully in sight, or partly covered (a fanned row, a pile)


def _lie(visible: float) -> str:
    return "fanned" if visible < 0.95 else "loose"


def false_card_lies(
    det: Detections, quads: np.ndarray, visible: np.ndarray, det_to_label: np.ndarray
) -> list[str]:
    """Where each false card lies: "fanned" where it overlaps a partly covered card (IoU at
    least 0.1), else "loose"."""
    from companion.detections import iou_matrix

    unmatched = np.flatnonzero(det_to_label < 0)
    covered = np.asarray(quads, np.float32).reshape(-1, 4, 2)[np.asarray(visible) < 0.95]
    if len(unmatched) == 0 or len(covered) == 0:
        return ["loose"] * len(unmatched)
    near = iou_matrix(det.quads[unmatched], covered).max(axis=1) >= 0.1
    return ["fanned" if n else "loose" for n in near]


def _lie_figures(tallies: dict, false_cards: dict, images: int) -> dict:
    out = {}
    for lie in LIES:
        t = tallies[lie]
        out[lie] = {
            "labels": t.labels,
            "found": t.found,
            "named_right": t.chaff_equal,
            "recall": round(t.found / t.labels, 4) if t.labels else None,
            "named_right_share": round(t.chaff_equal / t.labels, 4) if t.labels else None,
            "false_positives": false_cards[lie],
            "false_positives_per_image": round(false_cards[lie] / images, 4) if images else None,
        }
    return out


def _render_for_eval(args):
    seed, config = args
    if isinstance(config, Closeups):
        return render_closeup(seed, config.deck, config.width, config.height)
    return synth.render_scene(seed, config)


@dataclass(frozen=True)
class Closeups:
    """Close-up frames (``companion.simulator.closeup``) instead of whole tables: what ``evaluate``
    renders with ``closeup=True``."""

    deck: str
    width: int
    height: int


def rendered_scenes(config, seed: int, n: int, workers: int):
    """Scenes ``synth.scene_seed(seed, i)`` for i < n, rendered by ``workers`` processes."""
    jobs = [(synth.scene_seed(seed, i), config) for i in range(n)]
    if workers <= 1:
        yield from map(_render_for_eval, jobs)
        return
    pool = synth.render_pool(workers)
    try:
        yield from pool.imap(_render_for_eval, jobs, chunksize=4)
    finally:
        pool.terminate()


def detect_traced(detector, image: np.ndarray):
    """``detector.detect_traced(image)`` where it has one (a Recognizer), else its
    ``detect(image)`` with an empty trace: any object with ``detect(bgr)`` can be evaluated."""
    traced = getattr(detector, "detect_traced", None)
    return traced(image) if traced else (detector.detect(image), DecodeTrace())


def evaluate(
    recognizer,
    deck: str,
    seed: int = 0,
    n: int = 500,
    width: int = 1280,
    height: int = 720,
    workers: int = 1,
    progress=None,
    lens_k: float = 0.0,
    misses_dir: str | Path | None = None,
    against=None,
    closeup: bool = False,
) -> EvalReport:
    """Render ``n`` scenes of one deck with synth and score the recognizer (a ``Recognizer``, or
    anything with ``detect(bgr)`` and ``settings``) on them (``lens_k``: every scene seen through a lens with that radial distortion,
    ``synth.SceneConfig.lens_k``). ``misses_dir``: a folder to write each scene with a missed
    or false card into (``annotate_misses``; named by its index in the set: ``0042.jpg``).
    ``against``: a second recognizer run on the same scenes, for the difference between the
    two and how far it could move (key "against"). ``closeup``: close-ups of one to three cards
    filling 30-80 % of the frame's short side (``companion.simulator.closeup``) instead of tables."""
    from collections import Counter


    config = synth.SceneConfig(width=width, height=height, decks=(str(deck),), lens_k=lens_k)
    if closeup:
        config = Closeups(str(deck), width, height)
    synth.load_deck(str(deck))  # a clear error before rendering anything
    scenes = rendered_scenes(config, seed, n, workers)
    total, by_cond = _Tally(), {}
    by_lie, false_by_lie = {lie: _Tally() for lie in LIES}, dict.fromkeys(LIES, 0)
    false_pos, detections, confused = 0, 0, Counter()
    fp_kinds, fp_by_scene = Counter(), {}  # scene key -> [images, false positives]
    miss_kinds, scenes_drawn = Counter(), 0
    faces_called_back = backs_named = backs_to_find = 0
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
            det, trace = detect_traced(recognizer, scene.image)
            detections += len(det)
            quads = np.array([lab.quad for lab in scene.labels], np.float32).reshape(-1, 4, 2)
            vis = np.array([lab.visible for lab in scene.labels], np.float32)
            det_to_label, label_to_det = match_detections(det, quads, vis)
            false_pos += int((det_to_label < 0).sum())
            for lie in false_card_lies(det, quads, vis, det_to_label):
                false_by_lie[lie] += 1
            kinds = false_positive_kinds(det, quads, vis, det_to_label)
            fp_kinds.update(kinds)
            missed = np.flatnonzero((vis >= MUST_FIND_VISIBLE) & (label_to_det < 0))
            why = missed_card_kinds(trace.looks, quads, missed, recognizer.settings)
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
                if lab.card == BACK:
                    backs_to_find += 1
                    backs_named += int(exact)
                elif found and CLASSES[pred] == BACK:
                    faces_called_back += 1
                total.add(found, exact, chaff_eq)
                by_lie[_lie(lab.visible)].add(found, exact, chaff_eq)
                frame = frame_position(lab.quad, scene.image.shape[1], scene.image.shape[0])
                for key in _condition_keys(scene.conditions, lab.visible, lab.card, frame):
                    by_cond.setdefault(key, _Tally()).add(found, exact, chaff_eq)
            if progress:
                progress(i + 1)
    finally:
        scenes.close()  # stops the render processes
    true_pos = detections - false_pos
    counts = np.array(per_scene, np.int64).reshape(-1, 3)
    compared = None
    if against is not None:
        other = np.array(other_per_scene, np.int64).reshape(-1, 3)
        found, need, false_other = (int(v) for v in other.sum(axis=0))
        compared = {
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
    return EvalReport(
        deck=Path(deck).name,
        render_version=synth.RENDER_VERSION,
        seed=seed,
        lens_k=float(lens_k),
        frame=f"{width}x{height}" + (" close-ups" if closeup else ""),
        images=n,
        detections=detections,
        precision=round(true_pos / detections, 4) if detections else None,
        overall=total.figures(),
        false_positives=false_pos,
        false_positives_per_image=round(false_pos / n, 4) if n else None,
        intervals=scene_intervals(*counts.T),
        against=compared,
        confused_pairs=[
            {"true": t, "predicted": p, "count": c} for (t, p), c in confused.most_common(10)
        ],
        false_positive_kinds=dict(fp_kinds.most_common()),
        missed_card_kinds=dict(miss_kinds.most_common()),
        scenes_drawn=scenes_drawn if misses_dir is not None else None,
        faces_called_back=faces_called_back,
        by_lie=_lie_figures(by_lie, false_by_lie, n),
        backs_named=backs_named,
        backs_to_find=backs_to_find,
        by_condition={k: by_cond[k].figures() for k in sorted(by_cond)},
        false_positives_by_scene={
            k: FalseCardsInScenes(i, f) for k, (i, f) in sorted(fp_by_scene.items())
        },
    )

"""Decoding: the localizer's heatmap -> candidate boxes -> classifier crops -> Detections.

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
cut around the corners found by the first. Then *second chances* (``Settings.second_chances``:
``extra_heat``, ``neighbour_*``): extra crops at the heatmap's cooler peaks and beside each sure
card (where the next card of a capture row or of the field lies, and one step on along each
fanned row of found cards, ``row_steps``), looked at only where no card was found yet and kept
only when the classifier is very sure, for the cards the localizer barely saw. Last
(``detections.final_cards``, ``Settings.final_steps``), a card whose size does not fit the
others' (one deck, one table) is dropped unless it is very sure, before NMS and one card once,
and one a little too small is outlined at the size they say. Which crops count as cards is
``Settings.acceptance``: a card at a place the localizer is sure of needs less confidence in its
name (``hot_heat``); or, where the model has one (the committed model does), a learned rule
decides (``accept_weights``: a logistic model over how sure the name is, the heat there, the
size and shape against the other cards', and whether a surer crop names the same card, bent by
boosted trees where a straight line does not fit, ``accept_trees``), and the same rule's
probability, not the name's sureness, says which of two first looks at one card goes on, which
of two overlapping crops NMS keeps and which
claimant of a card's name keeps it.

``localize`` is the one path from a frame to the localizer's boxes: the decoder, training's
proposals and the quantizer's calibration all go through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from companion.detections import BACK_ID, Detections, final_cards, quad_size_offsets
from companion.recognizer.geometry import (
    crop_cards,
    crop_matrices,
    crop_points_to_image,
    far_from,
    in_frame,
    letterbox,
    neighbour_boxes,
    quads_to_rboxes,
    row_boxes,
    spaced,
    view_size,
)
from companion.recognizer.nets import net_input
from companion.recognizer.settings import NONE_ID, Settings

MAX_HOT_CELLS = 384  # with peak_spacing, the hottest cells looked at
DISTINCT_SPACING = 0.25  # two crops whose cards' centres are this close saw the same card
SPOT_FLOOR = 0.3  # a second-chance crop less sure than this at first gets no second look
FREE_SPACING = 0.5  # second chances look only this far (in short sides) from found cards
CARD_ASPECT = 1.6  # long side over short side of a card seen from above (54 x 33 mm: 1.64)
ACCEPT_PLANE_CONFIDENCE = 0.6  # crops this sure (and not "none") say what size a card is where


def acceptance_features(
    probs: np.ndarray, flip: np.ndarray, quads: np.ndarray, heat: np.ndarray
) -> np.ndarray:
    """(N, len(ACCEPT_FEATURES)) features of N crops for the learned acceptance rule:
    classifier outputs ``probs`` (N, classes + none), ``flip`` (N, 1), the quads found (N,4,2,
    image pixels) and the localizer's heat at their centres (N)."""
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
    """How likely the learned acceptance rule (``settings.acceptance.accept_weights``,
    corrected by its ``accept_trees`` where the model has them) finds each crop of
    ``acceptance_features`` to be a card."""
    rule = settings.acceptance
    logit = features @ np.asarray(rule.accept_weights)
    if rule.accept_trees is not None:
        logit = logit + rule.accept_trees.logit(features)
    return 1 / (1 + np.exp(-np.clip(logit, -30, 30)))


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, np.float64), 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def decode_heatmap(heat: np.ndarray, reg: np.ndarray, settings: Settings) -> np.ndarray:
    """Heatmap peaks -> rotated boxes in input pixels, rows (cx, cy, w, h, theta, score)."""
    heat = heat.reshape(heat.shape[-2:]).astype(np.float32)
    pick = settings.candidates
    hot = heat >= pick.heat_threshold
    if pick.peak_spacing <= 0:
        hot &= heat == cv2.dilate(heat, np.ones((3, 3), np.uint8))
    ys, xs = np.nonzero(hot)
    limit = pick.max_candidates if pick.peak_spacing <= 0 else MAX_HOT_CELLS
    boxes = _boxes_at(ys, xs, heat, reg, settings, limit)
    if pick.peak_spacing > 0:
        boxes = boxes[spaced(boxes, pick.peak_spacing)]
    return boxes[: pick.max_candidates]


def cool_peaks(
    heat: np.ndarray, warm: np.ndarray, reg: np.ndarray, settings: Settings
) -> np.ndarray:
    """The heatmap's 3x3 maxima from ``second_chances.extra_heat`` up to (not including)
    ``candidates.heat_threshold``, as ``decode_heatmap`` rows; ``warm`` is the heatmap dilated
    by 3x3."""
    heat = heat.reshape(heat.shape[-2:])
    lowest, hot = settings.second_chances.extra_heat, settings.candidates.heat_threshold
    cool = (heat >= lowest) & (heat < hot) & (heat == warm)
    ys, xs = np.nonzero(cool)
    return _boxes_at(ys, xs, heat, reg, settings, settings.candidates.max_candidates)


def _boxes_at(ys, xs, heat, reg, settings: Settings, limit: int) -> np.ndarray:
    """The rotated boxes predicted at heatmap cells (ys, xs), at most ``limit``, hottest first."""
    if len(ys) == 0:
        return np.zeros((0, 6), np.float32)
    scores = heat[ys, xs]
    order = np.argsort(-scores, kind="stable")[:limit]
    ys, xs, scores = ys[order], xs[order], scores[order]
    r = reg.reshape(6, *heat.shape)[:, ys, xs]
    s = settings.inputs.stride
    cx = (xs + r[0]) * s
    cy = (ys + r[1]) * s
    w = np.exp(np.clip(r[2], -4, 4)) * settings.inputs.size_unit
    h = np.exp(np.clip(r[3], -4, 4)) * settings.inputs.size_unit
    theta = 0.5 * np.arctan2(r[5], r[4])
    return np.stack([cx, cy, w, h, theta, scores], axis=1).astype(np.float32)


def heat_at(points: np.ndarray, warm: np.ndarray, scale: float, stride: int) -> np.ndarray:
    """The heatmap's 3x3 maximum at each image point (N,2, original pixels); ``warm`` is the
    heatmap dilated by 3x3, ``scale`` the letterbox scale."""
    cells = np.floor(np.asarray(points, np.float64) * scale / stride).astype(int)
    xs = cells[:, 0].clip(0, warm.shape[1] - 1)
    ys = cells[:, 1].clip(0, warm.shape[0] - 1)
    return warm[ys, xs]


def names_a_card(probs: np.ndarray, settings: Settings) -> np.ndarray:
    """Which classifier outputs (N, classes) name a card surely enough to count as one: not
    "none" (under ``max_none``) and at least ``min_confidence`` sure of some card or back."""
    sure = probs[:, :NONE_ID].max(axis=1, initial=0.0)
    rule = settings.acceptance
    return (probs[:, NONE_ID] < rule.max_none) & (sure >= rule.min_confidence)


@dataclass
class Localized:
    """The localizer's view of a frame: the letterboxed input, its scale (input pixels per frame
    pixel), the raw heatmap and regression outputs, and the boxes decoded from them (rows cx, cy,
    w, h, theta, heat; frame pixels)."""

    boxed: np.ndarray
    scale: float
    heat: np.ndarray
    reg: np.ndarray
    boxes: np.ndarray


def localize(localizer, image: np.ndarray, settings: Settings, zoom: float = 1.0) -> Localized:
    """Run the localizer (an onnxruntime session) on a BGR frame and decode its heatmap.
    ``zoom``: the frame seen this many times larger than the scale that fits it into the
    model's input (``view_size``; a portrait frame gets a portrait input)."""
    h, w = image.shape[:2]
    view = None if (zoom == 1.0 and w >= h) else view_size(image.shape, settings, zoom)
    boxed, scale = letterbox(image, settings, view)
    heat, reg = localizer.run(None, {"image": net_input(localizer, boxed[None])})
    boxes = decode_heatmap(heat, reg, settings)
    boxes[:, :4] /= scale  # into frame pixels
    return Localized(boxed, scale, heat, reg, boxes)


@dataclass
class DecodeTrace:
    """What one decode looked at, for evaluation and fitting (``Recognizer.detect_traced``):
    ``looks``, (quads, probs) of every classifier run, for ``bench.evaluation.missed_card_kinds``;
    and ``candidates``, (quads, acceptance_features) of the crops that reached the final decision,
    for fitting the acceptance rule."""

    looks: list = field(default_factory=list)
    candidates: list = field(default_factory=list)


class Decoder:
    """One frame's decode with a model's two nets and settings (``trace``: a DecodeTrace to
    fill, or None)."""

    def __init__(
        self,
        localizer,
        classifier,
        settings: Settings,
        trace: DecodeTrace | None = None,
        zoom: float = 1.0,
        lengths: tuple[float, float] | None = None,
    ):
        self.localizer = localizer
        self.classifier = classifier
        self.settings = settings
        self.trace = trace
        self.zoom = zoom  # the localizer's view of the frame (``localize``)
        # (shortest, longest) long side in frame pixels of the localizer's boxes looked at
        self.lengths = lengths

    def run(self, image: np.ndarray) -> Detections:
        """The cards in ``image`` (BGR, at most MAX_SIDE pixels a side)."""
        st = self.settings
        found = localize(self.localizer, image, st, self.zoom)
        if self.lengths is not None and len(found.boxes):  # only boxes of these lengths
            long = np.maximum(found.boxes[:, 2], found.boxes[:, 3])
            found.boxes = found.boxes[(long >= self.lengths[0]) & (long <= self.lengths[1])]
        if len(found.boxes) == 0:
            return Detections.empty()
        heat, reg, scale = found.heat, found.reg, found.scale
        matrices = crop_matrices(found.boxes, st)
        probs, flip, corners = self._classify(image, matrices)
        heat = heat.reshape(heat.shape[-2:])
        warm = cv2.dilate(heat, np.ones((3, 3), np.uint8))  # each cell's 3x3 maximum
        # one look per card from here on: spaced candidates often name the same card twice
        live = self._distinct(matrices, probs, flip, corners, (warm, scale))
        matrices, probs, flip, corners = matrices[live], probs[live], flip[live], corners[live]
        # second chances are looked at in the same classifier run as the first second look
        spots = self._spots(image, heat, warm, reg, scale, matrices, probs, corners)
        spot_looks = None
        for step in range(st.candidates.refine_steps):
            # re-cut each card around the quad the classifier found: the second look is
            # better centred and aligned than the localizer's coarse box
            # (only crops still in doubt: a card already named surely keeps its first look)
            live = np.flatnonzero(
                (probs[:, NONE_ID] < st.acceptance.max_none)
                & (probs[:, :NONE_ID].max(axis=1) < st.candidates.refine_below)
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
        more = st.second_chances
        if not more.enabled:
            return np.zeros((0, 2, 3))
        found, sure = self._found(matrices, probs, corners)
        sure_cards = found[
            sure >= more.extra_confidence
        ]  # the cards whose places say where more lie

        def warm_enough(boxes):  # a neighbour's place is looked at only where the heat says so
            if more.neighbour_heat <= 0 or len(boxes) == 0:
                return boxes
            return boxes[
                heat_at(boxes[:, :2], warm, scale, st.inputs.stride) >= more.neighbour_heat
            ]

        cool = cool_peaks(heat, warm, reg, st)[:, :5] if more.extra_heat > 0 else np.zeros((0, 5))
        cool[:, :4] /= scale
        near = neighbour_boxes(sure_cards, more.neighbour_across, more.neighbour_along)
        spots = np.concatenate([cool, warm_enough(near)])
        spots = spots[in_frame(spots, image.shape)]
        spots = spots[far_from(spots, found, FREE_SPACING)]
        spots = spots[spaced(spots, FREE_SPACING)]
        if more.row_steps:
            # a row's next strip lies nearer its found neighbour than FREE_SPACING
            rows = row_boxes(sure_cards)
            rows = rows[in_frame(rows, image.shape) & far_from(rows, found, DISTINCT_SPACING)]
            rows = warm_enough(rows)
            if len(rows):
                spots = np.concatenate([spots, rows[spaced(rows, DISTINCT_SPACING)]])
        return crop_matrices(spots, st) if len(spots) else np.zeros((0, 2, 3))

    def _kept_spots(self, image, m, p, f, c, matrices, probs, corners):
        """The second chances worth keeping, as crops (matrices, probs, flip, corners), or None:
        the sure finds (``extra_confidence``, after a second look for the doubtful ones), and
        without a learned acceptance rule only those of cards not found yet. Being that sure,
        they add few false cards."""
        rule, bar = self.settings.acceptance, self.settings.second_chances.extra_confidence
        sure = p[:, :NONE_ID].max(axis=1)
        maybe = p[:, NONE_ID] < rule.max_none
        if not (maybe & (sure >= min(SPOT_FLOOR, bar))).any():
            return None  # the usual case: nothing there
        m, p, f, c = m.copy(), p.copy(), f.copy(), c.copy()
        # a second look, re-cut around the corners found, for what may be a card: even a sure
        # first look was cut around a guessed place, and its corners are less exact
        again, recut = self._recut(m, c, np.flatnonzero(maybe & (sure >= SPOT_FLOOR)))
        if len(again):
            m[again] = recut
            p[again], f[again], c[again] = self._classify(image, m[again])
        sure = p[:, :NONE_ID].max(axis=1)
        live = np.flatnonzero((p[:, NONE_ID] < rule.max_none) & (sure >= bar))
        live = live[np.argsort(-sure[live], kind="stable")]
        cards = quads_to_rboxes(self._corner_quads(m[live], c[live]))
        if not rule.accept_weights:
            # without a learned rule, the surer claimant wins NMS and one card once, so a
            # second chance near a found card is kept out. With one, the rule ranks them: in a
            # tight capture row a found crop often lies that near the next card, which the
            # second chance alone outlines
            new = far_from(cards, self._found(matrices, probs, corners)[0], FREE_SPACING)
            live, cards = live[new], cards[new]
        if len(live) == 0:
            return None
        live = live[spaced(cards, DISTINCT_SPACING)]
        return m[live], p[live], f[live], c[live]

    def _distinct(self, matrices, probs, flip, corners, heatmap) -> np.ndarray:
        """Indices of the crops that show a card and are not a likelier crop's card again
        (their cards' centres closer than a quarter of the short side). Likelier: by the
        learned acceptance rule where the model has one, else by the name's sureness."""
        rule = self.settings.acceptance
        cards = np.flatnonzero(probs[:, NONE_ID] < rule.max_none)
        quads = self._corner_quads(matrices[cards], corners[cards])
        if rule.accept_weights:
            rank = self._likely(probs[cards], flip[cards], quads, heatmap)
        else:
            rank = probs[cards, :NONE_ID].max(axis=1)
        order = np.argsort(-rank, kind="stable")
        return cards[order][spaced(quads_to_rboxes(quads[order]), DISTINCT_SPACING)]

    def _likely(self, probs, flip, quads, heatmap) -> np.ndarray:
        """How likely the learned acceptance rule finds each crop to be a card."""
        warm, scale = heatmap
        heat = heat_at(quads.mean(axis=1), warm, scale, self.settings.inputs.stride)
        return accept_probability(acceptance_features(probs, flip, quads, heat), self.settings)

    def _classify(self, image, matrices):
        crops = crop_cards(image, matrices, self.settings)
        out = self.classifier.run(None, {"crop": net_input(self.classifier, crops)})
        if self.trace is not None:
            self.trace.looks.append((self._corner_quads(matrices, out[2]), out[0]))
        return out

    def _corner_quads(self, matrices: np.ndarray, corners: np.ndarray) -> np.ndarray:
        """The classifier's corners (N,8, crop units 0..1) as image quads (N,4,2)."""
        inputs = self.settings.inputs
        size = np.float32([inputs.crop_width, inputs.crop_height])
        return crop_points_to_image(matrices, corners.reshape(-1, 4, 2) * size)

    def _assemble(self, matrices, probs, flip, corners, heatmap=None) -> Detections:
        """The crops that name a card, as Detections; ``heatmap``: (the localizer's heat
        dilated by 3x3, the letterbox scale), for ``hot_heat``."""
        st = self.settings
        rule, last = st.acceptance, st.final_steps
        n = len(matrices)
        card_probs = probs[:, :NONE_ID]
        best = card_probs.argmax(axis=1)
        conf = card_probs[np.arange(n), best]
        quads = self._corner_quads(matrices, corners)
        learned = bool(rule.accept_weights) or self.trace is not None
        heat = np.zeros(n, np.float32)
        if heatmap is not None and (rule.hot_heat > 0 or learned):  # only where a rule reads it
            warm, scale = heatmap
            heat = heat_at(quads.mean(axis=1), warm, scale, st.inputs.stride)
        if learned:
            features = acceptance_features(probs, flip, quads, heat)
            if self.trace is not None:
                self.trace.candidates.append((quads.copy(), features))
        rank = None
        if rule.accept_weights:
            likely = accept_probability(features, st)
            keep = likely >= rule.accept_above
            rank = likely  # also which of two overlapping crops or claimants of a name wins
        else:
            needed = np.full(n, rule.min_confidence, np.float32)
            if rule.hot_heat > 0:
                needed[heat >= rule.hot_heat] = rule.hot_confidence
            keep = conf >= needed
        keep &= probs[:, NONE_ID] < rule.max_none
        # upside down: the card's own top-left is the crop's bottom-right
        turned = (flip[:, 0] > 0.5) & (best != BACK_ID)
        quads[turned] = np.roll(quads[turned], 2, axis=1)
        k = last.alternatives
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
            nms_iou=last.nms_iou,
            same_card_iou=last.same_card_iou,
            size_tolerance=last.size_tolerance,
            size_keep_above=last.size_keep_above,
            size_grow_below=last.size_grow_below,
        )

"""Train the two recognizer nets on synthetic scenes and export them to ONNX (needs torch).

    companion train --out models/ --decks traditional-ngs,modern-mantia,hwatu-korean \
        --scenes 3000 --epochs 12 --seed 1

1. Render scenes with ``companion.simulator.synth`` (ground truth: each card's quad, class, visibility).
2. Localizer: letterboxed frames -> centre heatmap (focal loss) + offset, log size and
   (cos 2θ, sin 2θ) at the centre cell (L1).
3. Classifier: rectified crops cut exactly like the runtime does (``recognizer.crop_matrix``)
   around jittered ground-truth boxes (so it tolerates localizer error), plus "none" crops
   of table and card fragments; cross-entropy on 48 cards + back + none, BCE for upside-down,
   smooth L1 for the four corners.
4. Photometric augmentation on every batch, for real rooms: warm/cold white balance,
   brightness, contrast, gamma, glare blobs, blur, sensor noise, desaturation; JPEG on a share
   of the stored samples.
5. Export both nets (opset 17) and ``recognizer.json`` (classes, settings, command, data, metrics).

Only this module imports torch; the runtime (``companion.recognizer``) never does.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import math
import os
import pickle
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np

from companion.detections import BACK, CLASSES, class_id
from companion.recognizer import (
    NONE_ID,
    Settings,
    crop_card,
    crop_cards,
    crop_matrix,
    crop_targets,
    letterbox,
    quad_to_rbox,
    rbox_quad,
)

TRAIN_DECKS = ("traditional-ngs", "modern-mantia", "hwatu-korean")
HELD_OUT_DECK = "traditional-scan"
POSITIVE_VISIBLE = 0.3  # cards at least this visible are taught as cards
# Centre heatmap Gaussian (in heatmap cells): sharp enough that the centres of cards
# overlapping in a capture row (about 2 cells apart) stay separate peaks
HEAT_SIGMA_MIN = 0.5
HEAT_SIGMA_SCALE = 0.12
# Face-down cards are about 4 % of the cards in the scenes, and plain black or red backs on dark
# cloth were the localizer's most missed card (79 % recall against 89 % for faces): in a stage
# with extra "backs" scenes (resume's back_scenes) their centres weigh this much in the heat loss.
BACK_HEAT_WEIGHT = 3.0
# Scene variants: changes to synth.SceneConfig for extra training scenes. "backs": more random
# layouts, a third of whose loose cards lie face down (the default scenes have 0.25 and 0.1).
# "lens": every scene seen through a webcam's lens of its own (synth.SceneConfig.p_lens).
# "restyle": every scene's faces printed in inks of their own (synth.SceneConfig.p_restyle).
# "clean": no print grain, stock colour, glare, light, casts, blur, noise or JPEG (the
# augmentation ablation's baseline).
SCENE_VARIANTS = {
    "backs": {"p_random_layout": 0.6, "p_loose_backs": 0.35},
    "lens": {"p_lens": 1.0},
    "restyle": {"p_restyle": 1.0},
    "clean": {"realism": False},
}
# Batch sizes when resuming: a GPU step costs about the same for a batch several times as big
CPU_BATCHES = {"localizer": 16, "classifier": 128}
GPU_BATCHES = {"localizer": 32, "classifier": 512}
# peak learning rates of a resumed stage (cosine from there to zero), before ``lr_scale``
RESUME_LR = {"localizer": 7e-4, "classifier": 1e-3}
BACK_SCENES_SEED_OFFSET = 10  # the "backs" scenes are dataset seed + this: never the same scenes
LENS_SCENES_SEED_OFFSET = 20  # ...and the "lens" scenes dataset seed + this
RESTYLE_SCENES_SEED_OFFSET = 30  # ...and the "restyle" scenes dataset seed + this
# How a freshly trained model decodes (written into its recognizer.json): the settings chosen
# on unseen scenes of training decks for the committed model (the model card, models/README.md).
# The one-hour `train` measured 67.2 % recall and 1.94 false cards per image on the held-out
# deck with the neutral Settings() decode, 79.2 % and 0.72 with this one. Consistent sizes
# (measured after those figures): on the one-hour model they removed 0.10 to 0.17
# false cards per image for 0.1 to 0.4 points of recall on four validation sets, and growing
# small quads to that size 0 to 0.1 more for 0 to 0.2 points. Second chances are left out: on
# that model's weaker heatmap they added 0.23 to 0.28 false cards per image.
CHOSEN_DECODE = {
    "peak_spacing": 0.2,
    "min_confidence": 0.6,
    "same_card_iou": 0.3,
    "refine_steps": 1,
    "refine_below": 0.9,
    "size_tolerance": 0.25,
    "size_keep_above": 0.97,
    "size_grow_below": 0.08,
}


@dataclass(frozen=True)
class TrainConfig:
    """What a training run or a resumed stage learns from, for how long, where, and how wide
    its nets are (``train``, ``resume``; ``companion-lab train`` builds one from its options)."""

    decks: tuple = TRAIN_DECKS  # deck names in ../shared/decks, or folders
    scenes: int = 2400  # plain scenes of dataset ``seed``
    seed: int = 1
    epochs: int = 12  # passes over the data of a fresh run, when ``minutes`` is None
    # train until this many minutes have passed (after rendering); a resumed stage: 60 if None
    minutes: float | None = None
    input_size: tuple[int, int] | None = None  # localizer input; None: 512x288 or the model's
    scene_size: tuple[int, int] = (960, 540)
    cache: str | Path | None = None  # a folder caching rendered scenes between runs
    jitters: int = 1  # classifier crops per card and scene
    # extra scenes of a resumed stage: rich in face-down cards, through a lens, restyled faces
    back_scenes: int = 0
    lens_scenes: int = 0
    restyle_scenes: int = 0
    workers: int = 1  # processes rendering scenes and cutting samples (same data for any number)
    device: str = "cpu"  # where the nets train: "cpu" or "cuda"
    deep_widths: dict | None = None  # the nets' widths (``DEEP_WIDTHS``); None: standard
    tiny: bool = False  # half-width nets, for tests
    command: str | None = None  # the command recorded in recognizer.json (default: sys.argv)

    def recorded_command(self) -> str:
        return self.command or " ".join(shlex.quote(a) for a in sys.argv)


@dataclass(frozen=True)
class NetSchedule:
    """How one net trains in a resumed stage (``finetune_localizer``, ``finetune_classifier``)."""

    lr: float = 1e-3  # peak learning rate
    batch: int | None = None  # None: the training function's own
    threads: int = 1  # torch threads
    stage: int = 0  # the stage's number: each stage shuffles and augments differently


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --------------------------------------------------------------------------------------------
# Scenes (thin wrapper over companion.simulator.synth)
# --------------------------------------------------------------------------------------------


@dataclass
class SceneData:
    image: np.ndarray  # BGR
    codes: list[str]
    quads: np.ndarray  # (N,4,2)
    visible: np.ndarray  # (N,)
    conditions: dict


def deck_dir(name: str) -> Path:
    """A deck folder, or a deck's name in the shared folder (``synth.find_shared_dir``: ``../shared``
    or ``$COMPANION_SHARED``, as on a device machine that carries the decks in the checkout)."""
    from companion.simulator import synth

    path = Path(name)
    if path.is_dir():
        return path
    return synth.find_shared_dir() / "decks" / name


def render(seed: int, decks, width: int, height: int, variant: str = "") -> SceneData:
    from companion.simulator import synth

    # synth scales card sizes with the frame height: a smaller frame is the same camera view
    config = synth.SceneConfig(
        width=width,
        height=height,
        decks=tuple(str(deck_dir(d)) for d in decks),
        **(SCENE_VARIANTS[variant] if variant else {}),  # an unknown variant is an error
    )
    scene = synth.render_scene(seed, config)
    labels = list(scene.labels)
    quads = np.array([lab.quad for lab in labels], np.float32).reshape(len(labels), 4, 2)
    return SceneData(
        image=scene.image,
        codes=[lab.card for lab in labels],
        quads=quads,
        visible=np.array([lab.visible for lab in labels], np.float32),
        conditions=dict(getattr(scene, "conditions", {}) or {}),
    )


def _render_batch(args):
    seeds, decks, width, height, cache, variant = args
    return [_render_cached(s, decks, width, height, cache, variant) for s in seeds]


def _render_cached(seed, decks, width, height, cache, variant=""):
    """Render one scene, or read it back from ``cache`` (a folder; None = no cache)."""
    if cache is None:
        return render(seed, decks, width, height, variant)
    from companion.simulator import synth

    # the render version keeps scenes rendered before a change to synth from being read back
    key = f"r{synth.RENDER_VERSION}_{'+'.join(Path(d).name for d in decks)}_{width}x{height}_{seed}"
    if variant:
        key += f"_{variant}"
    img_path, meta_path = Path(cache) / f"{key}.jpg", Path(cache) / f"{key}.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        image = cv2.imread(str(img_path), cv2.IMREAD_COLOR)
        if image is not None:
            return SceneData(
                image,
                meta["codes"],
                np.array(meta["quads"], np.float32).reshape(-1, 4, 2),
                np.array(meta["visible"], np.float32),
                meta["conditions"],
            )
    scene = render(seed, decks, width, height, variant)
    Path(cache).mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(img_path), scene.image, [cv2.IMWRITE_JPEG_QUALITY, 97])
    meta_path.write_text(
        json.dumps(
            {
                "codes": scene.codes,
                "quads": scene.quads.tolist(),
                "visible": scene.visible.tolist(),
                "conditions": scene.conditions,
            }
        )
    )
    return scene


def render_many(
    n: int,
    seed: int,
    decks,
    width: int,
    height: int,
    workers: int = 2,
    start: int = 0,
    cache=None,
    variant: str = "",
):
    """Render scenes ``start..start+n-1`` of dataset ``seed`` (as synth.write_dataset numbers
    them), of the default scene config or one of ``SCENE_VARIANTS``."""
    from companion.simulator.synth import scene_seed

    seeds = [scene_seed(seed, i) for i in range(start, start + n)]
    if workers <= 1 or n < 8:
        return _render_batch((seeds, decks, width, height, cache, variant))
    from companion.simulator.synth import render_pool

    chunks = [seeds[i :: workers * 4] for i in range(workers * 4)]
    with render_pool(workers) as pool:
        parts = pool.map(_render_batch, [(c, decks, width, height, cache, variant) for c in chunks])
    by_seed = {}
    for chunk, part in zip(chunks, parts, strict=False):
        by_seed.update(zip(chunk, part, strict=False))
    return [by_seed[s] for s in seeds]


def iter_scenes(
    n: int,
    seed: int,
    decks,
    scene_size,
    cache=None,
    workers: int = 1,
    batch: int = 200,
    variant: str = "",
):
    """Scenes ``0..n-1`` of dataset ``seed`` one by one, rendered (or read from ``cache``)
    ``batch`` at a time so that only one batch of images is held at once; logs progress."""
    for start in range(0, n, batch):
        part = render_many(
            min(batch, n - start),
            seed,
            decks,
            *scene_size,
            start=start,
            cache=cache,
            workers=workers,
            variant=variant,
        )
        yield from part
        log(f"  {start + len(part)} scenes")


# --------------------------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------------------------


def localizer_sample(
    scene: SceneData, st: Settings, rng: np.random.Generator, back_weight: float = 1.0
):
    """(letterboxed image, heat target, reg target (6,h,w), reg mask, heat weight), the
    centres of face-down cards weighing ``back_weight``."""
    boxed, scale = letterbox(scene.image, st)
    if rng.random() < 0.3:  # store some JPEG-degraded frames
        ok, buf = cv2.imencode(".jpg", boxed, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(35, 90))])
        boxed = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    backs = np.array([code == "back" for code in scene.codes], bool)
    return (boxed, *_loc_targets(scene.quads * scale, scene.visible, st, backs, back_weight))


def _loc_targets(
    quads: np.ndarray, visible: np.ndarray, st: Settings, backs=None, back_weight: float = 1.0
):
    """(heat, reg (6,h,w), reg mask, weight) for the heat grid of ``st``. ``weight`` is 0 where
    a mostly hidden card, or a card whose centre lies off the grid (past the frame), makes any
    answer right (the loss still counts every centre there), and ``back_weight`` at the centre
    cell of a face-down card (``backs``: a flag per quad), which ``focal_loss`` applies."""
    grid = st.inputs
    gh, gw = grid.input_height // grid.stride, grid.input_width // grid.stride
    heat = np.zeros((gh, gw), np.float32)
    weight = np.ones((gh, gw), np.float32)
    reg = np.zeros((6, gh, gw), np.float32)
    mask = np.zeros((gh, gw), np.float32)
    yy, xx = np.mgrid[0:gh, 0:gw].astype(np.float32)
    backs = np.zeros(len(quads), bool) if backs is None else backs
    back_centres = []
    for quad, vis, back in zip(quads, visible, backs, strict=False):
        cx, cy, w, h, theta = quad_to_rbox(quad)
        gx, gy = cx / st.inputs.stride, cy / st.inputs.stride
        ix, iy = int(gx), int(gy)
        if w < 2 or h < 2:
            continue
        if not (0 <= ix < gw and 0 <= iy < gh):
            if vis >= POSITIVE_VISIBLE:
                # a card reaching in from past the frame has no centre cell to learn, but what
                # shows of it is a card to find, not table: no answer is wrong there
                cv2.fillPoly(weight, [np.round(quad / st.inputs.stride).astype(np.int32)], 0.0)
            continue
        if vis < POSITIVE_VISIBLE:
            weight[max(0, iy - 2) : iy + 3, max(0, ix - 2) : ix + 3] = 0  # don't care
            continue
        sigma = max(HEAT_SIGMA_MIN, HEAT_SIGMA_SCALE * min(w, h) / st.inputs.stride)
        g = np.exp(-((xx - gx) ** 2 + (yy - gy) ** 2) / (2 * sigma**2))
        np.maximum(heat, g, out=heat)
        heat[iy, ix] = 1.0
        reg[:, iy, ix] = (
            gx - ix,
            gy - iy,
            math.log(w / st.inputs.size_unit),
            math.log(h / st.inputs.size_unit),
            math.cos(2 * theta),
            math.sin(2 * theta),
        )
        mask[iy, ix] = 1.0
        if back:
            back_centres.append((iy, ix))
    for cell in back_centres:  # after the loop: a later hidden card's patch may cover it
        weight[cell] = back_weight
    return heat, reg, mask, weight


def classifier_samples(
    scene: SceneData, st: Settings, rng: np.random.Generator, jitters: int = 1, negatives: int = 3
):
    """Crops cut like the runtime, around jittered true boxes, plus "none" crops."""
    from companion.detections import iou_matrix

    crops, labels, flips, corners = [], [], [], []
    image = scene.image
    boxes = [quad_to_rbox(q) for q in scene.quads]
    for quad, code, vis, box in zip(scene.quads, scene.codes, scene.visible, boxes, strict=False):
        if vis < POSITIVE_VISIBLE or box[2] < 4:
            continue
        cx, cy, w, h, theta = box
        for _ in range(jitters):
            jx, jy = rng.normal(0, 0.06, 2)
            u = (math.cos(theta), math.sin(theta))
            # shift along the card's own axes, so the error scales with the card
            dx = jx * w * u[1] + jy * h * u[0]
            dy = -jx * w * u[0] + jy * h * u[1]
            s = math.exp(rng.normal(0, 0.07))
            a = math.exp(rng.normal(0, 0.04))
            t = theta + rng.normal(0, math.radians(4)) + (math.pi if rng.random() < 0.5 else 0)
            m = crop_matrix(cx + dx, cy + dy, w * s * a, h * s / a, t, st)
            up, cor = crop_targets(quad, m, st)
            crops.append(crop_card(image, m, st))
            labels.append(class_id(code))
            flips.append(up)
            corners.append(cor)
    # negatives: card-sized boxes on the table or straddling cards
    if len(boxes):
        sizes = np.array([b[2:4] for b in boxes])
        H, W = image.shape[:2]
        made, tries = 0, 0
        while made < negatives and tries < negatives * 6:
            tries += 1
            w, h = sizes[rng.integers(len(sizes))] * math.exp(rng.normal(0, 0.1))
            if rng.random() < 0.5:
                b = boxes[rng.integers(len(boxes))]
                off = rng.uniform(0.45, 0.9) * rng.choice([-1, 1], 2)
                cx, cy = b[0] + off[0] * w, b[1] + off[1] * h
            else:
                cx, cy = rng.uniform(0, W), rng.uniform(0, H)
            t = rng.uniform(-math.pi, math.pi)
            m = crop_matrix(cx, cy, w, h, t, st)
            inv = cv2.invertAffineTransform(m)
            crop = st.inputs
            cw, ch = crop.crop_width / crop.crop_enlarge, crop.crop_height / crop.crop_enlarge
            ox, oy = (crop.crop_width - cw) / 2, (crop.crop_height - ch) / 2
            box_quad = cv2.transform(
                np.float32([[[ox, oy], [ox + cw, oy], [ox + cw, oy + ch], [ox, oy + ch]]]), inv
            )[0]
            iou = iou_matrix(box_quad[None], scene.quads)
            if iou.size and iou.max() > 0.25:
                continue
            crops.append(crop_card(image, m, st))
            labels.append(NONE_ID)
            flips.append(0)
            corners.append(np.zeros(8, np.float32))
            made += 1
    return crops, labels, flips, corners


class CropSet:
    """Classifier samples gathered scene by scene (``classifier_samples`` and
    ``cascade_samples`` results): crops, labels, upside-down flags, corners."""

    def __init__(self):
        self.parts = ([], [], [], [])

    def add(self, sample) -> None:
        for acc, items in zip(self.parts, sample, strict=True):
            acc.extend(items)

    def __len__(self) -> int:
        return len(self.parts[0])

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        crops, labels, flips, corners = self.parts
        return (
            np.stack(crops),
            np.asarray(labels, np.int64),
            np.asarray(flips, np.float32),
            np.asarray(corners, np.float32),
        )


def cascade_samples(scene: SceneData, boxes: np.ndarray, st: Settings, rng: np.random.Generator):
    """Crops cut at the boxes a trained localizer really proposes (rows cx,cy,w,h,theta in scene
    pixels), labelled by the card they overlap most.

    The classifier must correct the localizer's real errors (loose boxes, boxes straddling two
    cards of a capture row) and reject its real false alarms (hands, card art on a box), so it
    learns from exactly those crops. Boxes overlapping a card only a little are left out: there
    is no right answer for them.
    """
    from companion.detections import iou_matrix

    crops, labels, flips, corners = [], [], [], []
    if len(boxes) == 0:
        return crops, labels, flips, corners
    proposed = np.array([rbox_quad(*b[:5]) for b in boxes], np.float32)
    ious = iou_matrix(proposed, scene.quads) if len(scene.quads) else np.zeros((len(boxes), 0))
    for i, box in enumerate(boxes):
        best = int(ious[i].argmax()) if ious.shape[1] else -1
        iou = ious[i, best] if best >= 0 else 0.0
        if iou >= 0.3 and scene.visible[best] >= POSITIVE_VISIBLE:
            label = class_id(scene.codes[best])
        elif iou < 0.15:
            label = NONE_ID
        else:
            continue
        cx, cy, w, h, theta = (float(v) for v in box[:5])
        if rng.random() < 0.5:
            theta += math.pi  # the localizer only knows the axis, not which end is up
        m = crop_matrix(cx, cy, w, h, theta, st)
        if label == NONE_ID:
            up, cor = 0, np.zeros(8, np.float32)
        else:
            up, cor = crop_targets(scene.quads[best], m, st)
        crops.append(crop_card(scene.image, m, st))
        labels.append(label)
        flips.append(up)
        corners.append(cor)
    return crops, labels, flips, corners


# --------------------------------------------------------------------------------------------
# A stage's samples, cut scene by scene in a pool of processes
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleRecipe:
    """What ``stage_samples`` cuts from each scene. Picklable: every pool worker gets one. A
    scene's samples come from its own random streams, ``default_rng((*key, net, index))``, so
    they do not depend on how many workers cut them."""

    decks: tuple
    scene_size: tuple = (960, 540)
    cache: str | None = None  # a folder of rendered scenes (``_render_cached``)
    variant: str = ""  # one of SCENE_VARIANTS
    localizer: Settings | None = None  # cut ``localizer_sample``s at this input size
    back_weight: float = 1.0
    classifier: Settings | None = None  # cut ``classifier_samples`` like this
    jitters: int = 1
    proposer: str | None = None  # an ONNX localizer whose proposals become crops too
    propose: Settings | None = None  # ...decoded like this (``cascade_samples``)
    key: tuple = ()


_PROPOSERS: dict = {}  # in each worker process: ONNX path -> session, opened once


def _proposed_boxes(scene: SceneData, recipe: SampleRecipe) -> np.ndarray:
    from companion.recognizer import localize, open_session

    session = _PROPOSERS.get(recipe.proposer)
    if session is None:
        session = _PROPOSERS[recipe.proposer] = open_session(Path(recipe.proposer), 1)
    return localize(session, scene.image, recipe.propose).boxes


def _scene_samples(job):
    """Pool worker: [(localizer sample or None, [classifier samples] or None)] for a chunk."""
    recipe, items = job
    out = []
    for index, seed in items:
        scene = _render_cached(seed, recipe.decks, *recipe.scene_size, recipe.cache, recipe.variant)
        loc = crops = None
        if recipe.localizer is not None:
            rng = np.random.default_rng((*recipe.key, 0, index))
            loc = localizer_sample(scene, recipe.localizer, rng, recipe.back_weight)
        if recipe.classifier is not None:
            rng = np.random.default_rng((*recipe.key, 1, index))
            crops = [classifier_samples(scene, recipe.classifier, rng, recipe.jitters)]
            if recipe.proposer:
                boxes = _proposed_boxes(scene, recipe)
                crops.append(cascade_samples(scene, boxes, recipe.classifier, rng))
        out.append((loc, crops))
    return out


def _scene_samples_to_file(job):
    """Pool worker: ``_scene_samples`` of a chunk, pickled into a file of the job's folder;
    returns the file's path. A localizer sample is about 2 MB, and messages that large crawl
    through a pool's pipe (4 MB/s on a 2-core machine, where cutting
    cached scenes in-process ran 36 times faster than with 2 workers); a file does not."""
    folder, job = job
    fd, path = tempfile.mkstemp(suffix=".pkl", dir=folder)
    with os.fdopen(fd, "wb") as f:
        pickle.dump(_scene_samples(job), f, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def _read_samples(path: str) -> list:
    with open(path, "rb") as f:
        part = pickle.load(f)
    os.unlink(path)
    return part


def stage_samples(n: int, seed: int, recipe: SampleRecipe, workers: int = 1):
    """``_scene_samples`` of scenes ``0..n-1`` of dataset ``seed``, in order, cut by
    ``workers`` processes (1: in this one); logs progress."""
    from companion.simulator.synth import render_pool, scene_seed

    chunk = 4
    items = [(i, scene_seed(seed, i)) for i in range(n)]
    jobs = [(recipe, items[i : i + chunk]) for i in range(0, n, chunk)]
    pool = render_pool(workers) if workers > 1 and n > chunk else None
    if pool:
        folder = tempfile.mkdtemp(prefix="companion-samples-")
        parts = map(_read_samples, pool.imap(_scene_samples_to_file, [(folder, j) for j in jobs]))
    else:
        parts = map(_scene_samples, jobs)
    done = 0
    try:
        for part in parts:
            yield from part
            if (done + len(part)) // 500 > done // 500 or done + len(part) == n:
                log(f"  {done + len(part)} scenes")
            done += len(part)
    finally:
        if pool:
            pool.terminate()
            pool.join()
            shutil.rmtree(folder, ignore_errors=True)


def stage_data(recipe: SampleRecipe, config: TrainConfig):
    """(localizer samples, classifier arrays or None, how many crops came from proposals) of
    ``config.scenes`` scenes of dataset ``config.seed``, of its ``back_scenes`` scenes of the
    "backs" variant (dataset ``seed + BACK_SCENES_SEED_OFFSET``), of its ``lens_scenes`` scenes
    of the "lens" variant (dataset ``seed + LENS_SCENES_SEED_OFFSET``) and of its
    ``restyle_scenes`` scenes of the "restyle" variant (dataset
    ``seed + RESTYLE_SCENES_SEED_OFFSET``), cut by ``config.workers`` processes."""
    seed, workers = config.seed, config.workers
    back_scenes, lens_scenes, restyle_scenes = (
        config.back_scenes,
        config.lens_scenes,
        config.restyle_scenes,
    )
    parts = [stage_samples(config.scenes, seed, recipe, workers)]
    # The classifier cuts its crops of the "backs" scenes too: it, not only the localizer, was
    # unsure of plain backs (in a scratch trace, 23 of 55 missed backs cut at their true box
    # were named "back" less than half sure). The last number keeps each set's shuffling apart.
    extra = (
        (back_scenes, "backs", BACK_SCENES_SEED_OFFSET, 2),
        (lens_scenes, "lens", LENS_SCENES_SEED_OFFSET, 3),
        (restyle_scenes, "restyle", RESTYLE_SCENES_SEED_OFFSET, 4),
    )
    for count, variant, offset, key_part in extra:
        if count:
            varied = replace(recipe, variant=variant, key=(*recipe.key, key_part))
            parts.append(stage_samples(count, seed + offset, varied, workers))
    loc, crop_set, cascade = [], CropSet(), 0
    for loc_sample, crops in itertools.chain(*parts):
        if loc_sample is not None:
            loc.append(loc_sample)
        for sample in crops or ():
            crop_set.add(sample)
        cascade += len(crops[1][0]) if crops and len(crops) > 1 else 0
    return loc, crop_set.arrays() if recipe.classifier is not None else None, cascade


# --------------------------------------------------------------------------------------------
# Nets, losses, augmentation (torch)
# --------------------------------------------------------------------------------------------


# How wide each net's low-resolution layers are, against the standard nets (the localizer's
# stride-16 and stride-32 stages, the classifier's stride-8 and stride-16 layers and its dense
# layer). Widening there buys capacity cheaply: those layers see few pixels, so doubling them
# costs the localizer net about 1.2 ms where doubling every layer costs 4, and a whole frame
# 0.8 ms (int8, 2 threads). A model keeps
# its widths in recognizer.json (training.deep_widths); without them it has the standard ones.
DEEP_WIDTHS = {"localizer": 1.0, "classifier": 1.0}


def model_shape(meta: dict) -> dict:
    """The ``build_nets`` arguments that rebuild the nets of the model with metadata ``meta``."""
    training = meta.get("training", {})
    return {
        "tiny": bool(training.get("tiny")),
        "deep_widths": {**DEEP_WIDTHS, **training.get("deep_widths", {})},
    }


def build_nets(tiny: bool = False, deep_widths: dict | None = None):
    import torch
    from torch import nn

    def cbr(cin, cout, stride=1, dilation=1):
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )

    m = 0.5 if tiny else 1.0
    widths = {**DEEP_WIDTHS, **(deep_widths or {})}
    lw, cw = widths["localizer"], widths["classifier"]

    def c(n, k=1.0):
        return max(8, int(n * m * k))

    class Localizer(nn.Module):
        def __init__(self):
            super().__init__()
            # thin at high resolution, where every channel costs the most
            self.stem = nn.Sequential(cbr(3, c(12), 2), cbr(c(12), c(20), 2))  # stride 4
            self.s8 = nn.Sequential(cbr(c(20), c(32), 2), cbr(c(32), c(32)))
            self.s16 = nn.Sequential(
                cbr(c(32), c(64, lw), 2),
                cbr(c(64, lw), c(64, lw)),
                cbr(c(64, lw), c(64, lw), dilation=2),
            )
            self.s32 = nn.Sequential(cbr(c(64, lw), c(96, lw), 2), cbr(c(96, lw), c(96, lw)))
            self.lat16 = nn.Conv2d(c(96, lw), c(64, lw), 1)
            self.merge16 = cbr(c(64, lw), c(32))
            self.merge8 = cbr(c(32), c(24))
            self.lat4 = nn.Conv2d(c(20), c(24), 1)
            self.merge4 = cbr(c(24), c(24))
            self.heat = nn.Conv2d(c(24), 1, 1)
            self.reg = nn.Conv2d(c(24), 6, 1)
            nn.init.constant_(self.heat.bias, -2.19)  # CenterNet prior: few centres

        def forward(self, x):
            up = nn.functional.interpolate
            f4 = self.stem(x)
            f8 = self.s8(f4)
            f16 = self.s16(f8)
            f32 = self.s32(f16)
            y = self.merge16(f16 + up(self.lat16(f32), scale_factor=2.0, mode="nearest"))
            y = self.merge8(f8 + up(y, scale_factor=2.0, mode="nearest"))
            y = self.merge4(self.lat4(f4) + up(y, scale_factor=2.0, mode="nearest"))
            return self.heat(y), self.reg(y)

    class Classifier(nn.Module):
        def __init__(self, crop_w=48, crop_h=80):
            super().__init__()
            self.features = nn.Sequential(
                cbr(3, c(16), 2),
                cbr(c(16), c(32), 2),
                cbr(c(32), c(32)),
                cbr(c(32), c(64, cw), 2),
                cbr(c(64, cw), c(64, cw)),
                cbr(c(64, cw), c(128, cw), 2),
                cbr(c(128, cw), c(128, cw)),
            )
            flat = c(128, cw) * math.ceil(crop_h / 16) * math.ceil(crop_w / 16)
            self.fc = nn.Sequential(
                nn.Flatten(), nn.Linear(flat, c(192, cw)), nn.ReLU(inplace=True), nn.Dropout(0.1)
            )
            self.cls = nn.Linear(c(192, cw), NONE_ID + 1)
            self.flip = nn.Linear(c(192, cw), 1)
            self.corners = nn.Linear(c(192, cw), 8)

        def forward(self, x):
            f = self.fc(self.features(x))
            return self.cls(f), self.flip(f), self.corners(f)

    torch.manual_seed(0)
    return Localizer(), Classifier()


def grown_state(old: dict, net) -> dict:
    """The weights ``old`` (a state dict) fitted to ``net``, whose layers may be wider, without
    changing what the net computes: each tensor's old values fill its leading block, the new
    output channels keep ``net``'s fresh initialisation, and every weight that reads a new
    input channel starts at zero, so the new channels add nothing until training finds them a
    use. (Net2Net copies units instead; copies would get the same gradients and stay twins.)
    A flattened input (the classifier's dense layer) keeps its order: channels are outermost.
    ValueError where a layer would shrink or the layers differ."""
    new = net.state_dict()
    if old.keys() != new.keys():
        raise ValueError("the checkpoint's layers are not this net's")
    out = {}
    for name, target in new.items():
        source = old[name]
        if source.shape == target.shape:
            out[name] = source
            continue
        if source.dim() != target.dim() or any(
            a > b for a, b in zip(source.shape, target.shape, strict=True)
        ):
            raise ValueError(
                f"{name} cannot grow from {tuple(source.shape)} to {tuple(target.shape)}"
            )
        grown = target.clone()
        if grown.dim() >= 2:
            grown[:, source.shape[1] :] = 0
        grown[tuple(slice(0, n) for n in source.shape)] = source
        out[name] = grown
    return out


def to_device(array: np.ndarray, device):
    """A host array as a tensor on ``device``. On a GPU it goes through pinned memory without
    waiting: a copy from ordinary host memory first waits for all the work queued on the GPU,
    so the host could not queue a training step's kernels ahead of them."""
    import torch

    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if torch.device(device).type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def augment(x, rng: np.random.Generator, glare: bool = True):
    """Photometric augmentation of a float batch (N,3,H,W) RGB in 0..1 (vectorised: it runs on
    every training step and must cost far less than the step itself). Every random number is
    drawn on the host first, in the order of the steps, and sent to the batch's device in one
    copy (``to_device``)."""
    import torch
    import torch.nn.functional as F

    n, _, h, w = x.shape
    dev = x.device
    none = np.zeros(0)

    # one colour matrix per sample: white balance (warm lamps to cold daylight), brightness,
    # saturation; then contrast around the sample's mean
    warmth = rng.normal(0, 0.12, n)
    gains = np.stack([1 + warmth, np.ones(n), 1 - warmth], 1) * np.exp(rng.normal(0, 0.05, (n, 3)))
    gains *= np.exp(rng.normal(0, 0.25, (n, 1)))
    sat = np.clip(rng.normal(1, 0.25, n), 0.2, 1.6)[:, None, None]
    mats = (sat * np.eye(3) + (1 - sat) * np.full((3, 3), 1 / 3)) * gains[:, :, None]
    contrast = np.exp(rng.normal(0, 0.2, n))
    # gamma on a share of samples (pow is the costliest op here)
    gamma_at = np.flatnonzero(rng.random(n) < 0.4)
    gamma = np.exp(rng.normal(0, 0.25, len(gamma_at))) if len(gamma_at) else none
    # glare: soft bright elliptic blobs (centre, radius, strength)
    glare_at = np.flatnonzero(rng.random(n) < 0.3) if glare else none
    k = len(glare_at)
    blobs = none
    if k:
        blobs = np.concatenate(
            [
                rng.uniform(-0.1, 1.1, k),
                rng.uniform(-0.1, 1.1, k),
                rng.uniform(0.05, 0.35, k),
                rng.uniform(0.3, 0.9, k),
            ]
        )
    # blur / low resolution: down- and up-sample a share of samples
    blur_at = np.flatnonzero(rng.random(n) < 0.35)
    factor = rng.uniform(0.35, 0.8) if len(blur_at) else 1.0
    noise = rng.uniform(0, 0.04, n)  # sensor noise
    parts = [mats.reshape(-1), contrast, gamma_at, gamma, glare_at, blobs, blur_at, noise]
    # float32 holds the sample indices exactly (a batch is far below 2**24)
    drawn = to_device(np.concatenate(parts).astype(np.float32), dev)
    mats, contrast, gamma_at, gamma, glare_at, blobs, blur_at, noise = torch.split(
        drawn, [len(p) for p in parts]
    )

    x = torch.einsum("nij,njhw->nihw", mats.view(n, 3, 3), x)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = ((x - mean) * contrast.view(n, 1, 1, 1) + mean).clamp_(0, 1)
    if len(gamma_at):
        idx = gamma_at.long()
        x[idx] = x[idx].clamp_min(1e-3) ** gamma.view(-1, 1, 1, 1)
    if k:
        yy = torch.linspace(0, 1, h, device=dev).view(1, h, 1)
        xx = torch.linspace(0, 1, w, device=dev).view(1, 1, w)
        cx, cy, r, st = (v.view(k, 1, 1) for v in blobs.view(4, k))
        blob = st * torch.exp(-((xx - cx) ** 2 + ((yy - cy) * h / w) ** 2) / (2 * r * r))
        idx = glare_at.long()
        x[idx] = x[idx] + blob[:, None] * (1 - x[idx])
    if len(blur_at):
        idx = blur_at.long()
        small = F.interpolate(
            x[idx], scale_factor=factor, mode="bilinear", align_corners=False, antialias=True
        )
        x[idx] = F.interpolate(small, size=(h, w), mode="bilinear", align_corners=False)
    # the noise from a generator seeded by ``rng`` (its last draw), not torch's global one: a
    # thread elsewhere drawing from that would change it between two runs of the same seed
    noise_gen = torch.Generator(device=x.device).manual_seed(int(rng.integers(2**62)))
    grain = torch.randn(x.shape, generator=noise_gen, device=x.device, dtype=x.dtype)
    x = x + grain * noise.view(n, 1, 1, 1)
    return x.clamp_(0, 1)


def focal_loss(logits, target, weight):
    import torch

    p = torch.sigmoid(logits).clamp(1e-4, 1 - 1e-4)
    pos = target.eq(1).float()
    neg = (1 - pos) * weight
    # a centre's weight is 1, or more for a face-down card (0 only when a hidden card's
    # don't-care patch covers it, and a centre still counts then)
    pos_loss = torch.log(p) * (1 - p) ** 2 * pos * weight.clamp_min(1)
    neg_loss = torch.log(1 - p) * p**2 * (1 - target) ** 4 * neg
    npos = pos.sum().clamp_min(1)
    return -(pos_loss.sum() + neg_loss.sum()) / npos


# --------------------------------------------------------------------------------------------
# Training loops
# --------------------------------------------------------------------------------------------


class _Schedule:
    """Cosine learning rate over a number of epochs, or over wall-clock time when a deadline
    is given (the CPU is shared, so a step budget would not say when training ends)."""

    def __init__(self, base, steps_per_epoch, epochs, deadline=None):
        self.base, self.total, self.deadline = base, steps_per_epoch * epochs, deadline
        self.warmup = 100 if deadline else min(100, max(1, self.total // 5))
        self.start = time.time()

    def progress(self, step):
        if self.deadline:
            return (time.time() - self.start) / max(1.0, self.deadline - self.start)
        return step / max(1, self.total)

    def lr(self, step):
        warm = min(1.0, (step + 1) / self.warmup)
        return self.base * warm * 0.5 * (1 + math.cos(math.pi * min(1.0, self.progress(step))))

    def done(self, step):
        return self.progress(step) >= 1.0


def _fit(
    net, n, batch, lr, weight_decay, epochs, rng, checkpoint, deadline, batch_loss, report, device
):
    """The loop both nets share: AdamW on a cosine schedule (``_Schedule``), shuffled batches
    of ``n`` samples, a checkpoint (CPU tensors) after every epoch. ``batch_loss(idx)`` returns
    the loss to minimise and a 1-D tensor of figures to average over the epoch (the first one
    is the loss history); ``report(figures)`` words them for the log. The net trains on
    ``device`` and comes back on the CPU. Returns the history."""
    import torch

    net.to(device)
    batch = min(batch, max(2, n // 4))  # tiny runs still take several steps per epoch
    steps_per_epoch = max(1, n // batch)
    schedule = _Schedule(lr, steps_per_epoch, epochs, deadline)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    net.train()
    step, t0 = 0, time.time()
    history = []
    epochs = 10_000 if deadline else epochs  # with a deadline, the clock ends training
    # At least one step runs, whatever the clock says: a busy machine can spend a short
    # deadline on data preparation, and a stage must still leave a checkpoint to resume from.
    for epoch in range(epochs):
        if step and schedule.done(step):
            break
        order = rng.permutation(n)
        sums, steps = None, 0
        for b in range(steps_per_epoch):
            if deadline and step and schedule.done(step):
                break
            for group in opt.param_groups:
                group["lr"] = schedule.lr(step)
            loss, figures = batch_loss(order[b * batch : (b + 1) * batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            # summed on the device: reading a figure every step would stall a GPU
            sums = figures if sums is None else sums + figures
            step += 1
            steps += 1
        if sums is None:
            break
        sums = sums.cpu().numpy() / steps
        history.append(round(float(sums[0]), 4))
        log(f"{report(sums)} (epoch {epoch + 1}, {time.time() - t0:.0f}s)")
        if checkpoint:
            torch.save({k: v.detach().cpu() for k, v in net.state_dict().items()}, checkpoint)
    net.to("cpu").eval()
    return history


def _as_input(images, device="cpu"):
    """uint8 BGR (N,H,W,3), numpy or torch -> torch float RGB NCHW in 0..1 on ``device``."""
    import torch

    if not torch.is_tensor(images):
        images = torch.from_numpy(np.ascontiguousarray(images))
    x = images.to(device, non_blocking=True).flip(-1).permute(0, 3, 1, 2).contiguous()
    return x.float().div_(255)


def resolve_device(name: str = "auto") -> str:
    """``auto``: the GPU when torch sees one, else the CPU; any other torch device name as is."""
    import torch

    from companion.recognizer import RecognizerError

    # ask NVML, which leaves CUDA uninitialised here: the trainers forked later can then use it
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name != "cpu" and not name.startswith("cuda"):
        raise RecognizerError(f"--device takes cpu, cuda or auto, not {name!r}.")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RecognizerError(f"--device {name}: torch sees no CUDA GPU here (try --device cpu).")
    return name


def _release_freed_memory() -> None:
    """Hand the memory of freed samples back to the system now. glibc keeps freed blocks of a
    few hundred KB (a sample's targets) in its heap, so moving 8,600 samples into one array
    each held them twice: 22 GB instead of 16 in one training run."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


def train_localizer(
    net,
    data,
    epochs: int,
    rng,
    batch: int = 16,
    lr: float = 2e-3,
    checkpoint: Path | None = None,
    deadline: float | None = None,
    device: str = "cpu",
):
    """Train on ``data`` (``localizer_sample`` tuples), all of it held on ``device``.

    The samples are moved out of ``data`` (a list: it is left holding None) into one array per
    field as they are copied, so that a stage's frames are not held twice at once (a frame and
    its targets are about 2 MB at 768x448)."""
    import torch

    arrays = [np.empty((len(data), *a.shape), a.dtype) for a in data[0]]
    for k in range(len(data)):
        for array, field in zip(arrays, data[k], strict=True):
            array[k] = field
        data[k] = None
        if k % 256 == 255:
            _release_freed_memory()
    images, heat, reg, mask, weight = (torch.from_numpy(a).to(device) for a in arrays)
    del arrays
    heat, weight = heat[:, None], weight[:, None]

    def batch_loss(idx):
        idx = to_device(idx, device)
        x = augment(_as_input(images[idx], device), rng)
        h, r, mk, wt = heat[idx], reg[idx], mask[idx], weight[idx]
        # 180-degree rotation keeps every target meaningful: centres move, angles don't
        if rng.random() < 0.5:
            x, h, wt = x.flip(2, 3), h.flip(2, 3), wt.flip(2, 3)
            r, mk = r.flip(2, 3).clone(), mk.flip(1, 2)
            r[:, 0:2] = torch.where(mk[:, None] > 0, 1 - r[:, 0:2], r[:, 0:2])
            # a flipped grid cell (i) becomes (G-1-i): offset o -> 1-o keeps the same point
        out_heat, out_reg = net(x)
        lh = focal_loss(out_heat, h, wt)
        m = mk[:, None]
        npos = m.sum().clamp_min(1)
        lo = (torch.abs(out_reg[:, 0:2] - r[:, 0:2]) * m).sum() / npos
        ls = (torch.abs(out_reg[:, 2:4] - r[:, 2:4]) * m).sum() / npos
        la = (torch.abs(out_reg[:, 4:6] - r[:, 4:6]) * m).sum() / npos
        return lh + lo + ls + la, torch.stack([lh, ls, la]).detach()

    return _fit(
        net,
        len(images),
        batch,
        lr,
        1e-4,
        epochs,
        rng,
        checkpoint,
        deadline,
        batch_loss,
        lambda f: f"localizer: heat {f[0]:.3f} size {f[1]:.3f} angle {f[2]:.3f}",
        device,
    )


def train_classifier(
    net,
    data,
    epochs: int,
    rng,
    batch: int = 128,
    lr: float = 2e-3,
    checkpoint: Path | None = None,
    deadline: float | None = None,
    photometric: bool = True,
    device: str = "cpu",
):
    """Train on ``data`` (``CropSet.arrays()``), all of it held on ``device``.
    ``photometric=False`` leaves out ``augment`` (only for the augmentation ablation)."""
    import torch
    import torch.nn.functional as F

    crops, labels, flips, corners = data
    crops_t = torch.from_numpy(np.ascontiguousarray(crops)).to(device)
    labels_t = torch.from_numpy(np.asarray(labels, np.int64)).to(device)
    flips_t = torch.from_numpy(np.asarray(flips, np.float32)).to(device)
    corners_t = torch.from_numpy(np.asarray(corners, np.float32)).to(device)
    back = class_id(BACK)

    def batch_loss(idx):
        idx = to_device(idx, device)
        x = _as_input(crops_t[idx], device)
        if photometric:
            x = augment(x, rng)
        y, f, cor = labels_t[idx], flips_t[idx], corners_t[idx]
        logits, flip, pred_cor = net(x)
        lc = F.cross_entropy(logits, y, label_smoothing=0.05)
        card = (y < back).float()
        lf = (
            F.binary_cross_entropy_with_logits(flip[:, 0], f, reduction="none") * card
        ).sum() / card.sum().clamp_min(1)
        real = (y < NONE_ID).float()[:, None]
        lk = (F.smooth_l1_loss(pred_cor, cor, reduction="none", beta=0.02) * real).sum() / (
            real.sum() * 8
        ).clamp_min(1)
        acc = (logits.argmax(1) == y).float().mean()
        return lc + 0.5 * lf + 5 * lk, torch.stack([lc, lf, lk, acc]).detach()

    return _fit(
        net,
        len(crops),
        batch,
        lr,
        5e-4,
        epochs,
        rng,
        checkpoint,
        deadline,
        batch_loss,
        lambda f: f"classifier: ce {f[0]:.3f} flip {f[1]:.3f} corners {f[2]:.4f} acc {f[3]:.3f}",
        device,
    )


# --------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------


def export_onnx(localizer, classifier, out_dir: Path, st: Settings) -> tuple[str, str]:
    import torch
    from torch import nn

    class LocalizerExport(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, image):
            # uint8 BGR NHWC in: the conversion runs inside the graph, cheaper than in numpy
            x = image.permute(0, 3, 1, 2)[:, [2, 1, 0]].float() * (1 / 255)
            heat, reg = self.net(x)
            return torch.sigmoid(heat), reg

    class ClassifierExport(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, crop):
            x = crop.permute(0, 3, 1, 2)[:, [2, 1, 0]].float() * (1 / 255)
            logits, flip, corners = self.net(x)
            return torch.softmax(logits, dim=1), torch.sigmoid(flip), corners

    out_dir.mkdir(parents=True, exist_ok=True)
    loc_name, cls_name = "localizer.onnx", "classifier.onnx"
    localizer.eval()
    classifier.eval()
    torch.onnx.export(
        LocalizerExport(localizer),
        torch.zeros(1, st.inputs.input_height, st.inputs.input_width, 3, dtype=torch.uint8),
        str(out_dir / loc_name),
        input_names=["image"],
        output_names=["heat", "reg"],
        # any input size divisible by 32 works (the runtime may look at a finer scale)
        dynamic_axes={
            "image": {1: "h", 2: "w"},
            "heat": {2: "h4", 3: "w4"},
            "reg": {2: "h4", 3: "w4"},
        },
        opset_version=17,
        dynamo=False,
    )
    torch.onnx.export(
        ClassifierExport(classifier),
        torch.zeros(2, st.inputs.crop_height, st.inputs.crop_width, 3, dtype=torch.uint8),
        str(out_dir / cls_name),
        input_names=["crop"],
        output_names=["probs", "flip", "corners"],
        dynamic_axes={"crop": {0: "n"}, "probs": {0: "n"}, "flip": {0: "n"}, "corners": {0: "n"}},
        opset_version=17,
        dynamo=False,
    )
    return loc_name, cls_name


# --------------------------------------------------------------------------------------------
# The whole run
# --------------------------------------------------------------------------------------------


def start_forked(target, *args):
    """Run ``target(*args, queue)`` in a forked child process, which shares this process's
    training data without copying it; returns (the process, the queue it reports on).

    A forked child has only the thread that forked. If its garbage collector frees an
    onnxruntime session inherited from this process (a ``Recognizer`` left in a reference
    cycle, say, by an earlier proposal pass or test), the session's destructor waits forever
    for thread-pool threads that do not exist there, and training hangs. So this process frees
    its own garbage first (where those threads still run), and freezes what is left out of the
    child's collections. The child ends with this process: killed (out of memory, say), it
    would otherwise go on training for nobody (``_end_with_parent``)."""
    import gc
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    process = ctx.Process(target=_end_with_parent, args=(os.getpid(), target, *args, queue))
    gc.collect()
    gc.freeze()
    try:
        process.start()
    finally:
        gc.unfreeze()
    return process, queue


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _end_with_parent(parent: int, target, *args):
    """In a forked child: ask the kernel for SIGKILL when the parent dies, then run ``target``.
    (The kernel sends it when the thread that forked ends: the training runs fork from their
    main thread.)"""
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):  # not Linux with glibc: the child may outlive its parent
        pass
    if os.getppid() != parent:  # the parent died before the request above
        os._exit(1)
    target(*args)


def wait_for_report(process, queue, what: str, poll: float = 5.0):
    """What a ``start_forked`` job put on its queue, waiting as long as it runs. A job that
    ended without a word (killed, most often by the kernel when memory ran out) raises a
    ``RuntimeError`` instead of leaving this process waiting forever."""
    import queue as queues

    while True:
        # read before waiting: a job that had ended has flushed any report into the queue
        ended = not process.is_alive()
        try:
            report = queue.get(timeout=poll)
            break
        except queues.Empty:
            if ended:
                process.join()
                hint = (
                    " (killed: out of memory? try fewer --scenes)" if process.exitcode == -9 else ""
                )
                raise RuntimeError(
                    f"{what} training stopped with exit code {process.exitcode}{hint}"
                ) from None
    process.join()
    if process.exitcode != 0 or report is None:
        raise RuntimeError(f"{what} training failed (see the log above)")
    return report


def _localizer_job(net, data, epochs, seed, out, deadline, device, queue):
    import torch

    torch.set_num_threads(1)
    try:
        history = train_localizer(
            net,
            data,
            epochs,
            np.random.default_rng(seed + 1),
            checkpoint=out / "localizer.ckpt",
            deadline=deadline,
            device=device,
        )
    except BaseException:
        queue.put(None)
        raise
    queue.put(history)


def train(out: str | Path = "companion/models", config: TrainConfig | None = None) -> dict:
    """Render ``config.scenes`` scenes, train both nets from scratch on ``config.device`` for
    ``config.epochs`` (or ``config.minutes``), export to ONNX and write ``recognizer.json``;
    returns the metadata."""
    import torch

    config = config or TrainConfig()
    decks, scenes, seed, epochs, minutes = (
        config.decks,
        config.scenes,
        config.seed,
        config.epochs,
        config.minutes,
    )
    scene_size, cache, workers, jitters = (
        config.scene_size,
        config.cache,
        config.workers,
        config.jitters,
    )
    input_size, device, tiny = config.input_size, config.device, config.tiny

    torch.set_num_threads(1)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    st = Settings().with_(**CHOSEN_DECODE)
    if input_size:
        st = st.with_(input_width=input_size[0], input_height=input_size[1])
    rng = np.random.default_rng(seed)
    t_start = time.time()
    log(f"rendering {scenes} scenes from {', '.join(decks)} (seed {seed})")
    loc_data, cls_set = [], CropSet()
    for scene in iter_scenes(scenes, seed, decks, scene_size, cache, workers):
        loc_data.append(localizer_sample(scene, st, rng))
        cls_set.add(classifier_samples(scene, st, rng, jitters))
    cls_data = cls_set.arrays()
    crops = cls_data[0]
    # --minutes: both nets train until this wall-clock deadline (data preparation excluded)
    deadline = time.time() + 60 * minutes if minutes else None
    log(f"data ready: {len(loc_data)} frames, {len(crops)} crops ({time.time() - t_start:.0f}s)")

    widths = {**DEEP_WIDTHS, **(config.deep_widths or {})}
    localizer, classifier = build_nets(tiny, widths)
    # The two nets train side by side in two single-threaded processes: on a small shared CPU,
    # one thread per process beats two threads per process (no OpenMP spin-wait collapse).
    job, queue = start_forked(
        _localizer_job, localizer, loc_data, epochs, seed, out, deadline, device
    )
    del loc_data
    ce = train_classifier(
        classifier,
        cls_data,
        epochs,
        rng,
        checkpoint=out / "classifier.ckpt",
        deadline=deadline,
        device=device,
    )
    heat = wait_for_report(job, queue, "localizer")
    localizer.load_state_dict(torch.load(out / "localizer.ckpt"))
    localizer.eval()
    loc_name, cls_name = export_onnx(localizer, classifier, out, st)
    _keep_checkpoints(out, out / "localizer.ckpt", out / "classifier.ckpt")
    meta = _metadata(
        loc_name,
        cls_name,
        st,
        {
            "command": config.recorded_command(),
            "decks": [Path(d).name for d in decks],
            "scenes": scenes,
            "scene_size": list(scene_size),
            "scene_seeds": f"synth.scene_seed({seed}, 0..{scenes - 1})",
            "epochs": epochs,
            "minutes": minutes,
            "jitters": jitters,
            "seed": seed,
            "tiny": tiny,
            **({"deep_widths": widths} if widths != DEEP_WIDTHS else {}),
            "device": device,
            "crops": int(len(crops)),
            "seconds": round(time.time() - t_start),
            "losses": {"classifier_ce": ce, "localizer_heat": heat},
        },
    )
    (out / "recognizer.json").write_text(json.dumps(meta, indent=2) + "\n")
    meta |= quantize(out, decks)  # "quantization" and "float_nets"
    log(f"exported to {out} ({time.time() - t_start:.0f}s)")
    return meta


# --------------------------------------------------------------------------------------------
# Does the augmentation earn its keep? The classifier trained three ways, scored on a held-out deck
# --------------------------------------------------------------------------------------------

# arm -> (scenes rendered with realism, photometric augmentation while training)
ABLATION_ARMS = {
    "clean": (False, False),
    "renders": (True, False),
    "renders+augment": (True, True),  # how `companion train` trains
}
ABLATION_TEST_SEED = 2026


def _crop_set(scenes, st: Settings, seed: int):
    """Card crops around jittered true boxes and "none" crops, cut from ``scenes``."""
    rng = np.random.default_rng(seed)
    crop_set = CropSet()
    for scene in scenes:
        crop_set.add(classifier_samples(scene, st, rng, 1))
    if not len(crop_set):
        from companion.simulator.synth import SynthError

        raise SynthError(f"The {len(scenes)} scenes hold no card to crop: render more of them.")
    return crop_set.arrays()


def score_crops(net, crops: np.ndarray, labels: np.ndarray, batch: int = 256) -> dict:
    """Exact and chaff-equivalent accuracy on card crops, and how many "none" crops it rejects."""
    import torch

    from companion.detections import chaff_group

    net.eval()
    preds = []
    with torch.no_grad():
        for i in range(0, len(crops), batch):
            preds.append(net(_as_input(crops[i : i + batch]))[0].argmax(1).numpy())
    pred = np.concatenate(preds)
    cards, nones = labels < NONE_ID, labels == NONE_ID
    named = cards & (pred < NONE_ID)  # chaff_group knows the 49 card classes only
    chaff = np.zeros(len(labels), bool)
    chaff[named] = chaff_group(pred[named]) == chaff_group(labels[named])
    return {
        "card_crops": int(cards.sum()),
        "exact_accuracy": round(float((pred == labels)[cards].mean()), 4) if cards.any() else None,
        "chaff_accuracy": round(float(chaff[cards].mean()), 4) if cards.any() else None,
        "none_crops": int(nones.sum()),
        "none_rejected": round(float((pred[nones] == NONE_ID).mean()), 4) if nones.any() else None,
    }


def augmentation_ablation(
    epochs: int = 10,
    scenes: int = 800,
    test_scenes: int = 200,
    seed: int = 1,
    decks=TRAIN_DECKS,
    test_deck: str = HELD_OUT_DECK,
    scene_size=(960, 540),
    tiny: bool = False,
    threads: int = 2,
    workers: int = 2,
    reference: str | Path | None = None,
    progress=log,
) -> dict:
    """Train the classifier from scratch three ways for ``epochs`` each (epochs, not minutes,
    so that a busy machine cannot tilt the comparison), on the same scene layouts: clean
    renders; renders with print grain, stock colour, glare, light, casts, blur, noise and JPEG
    (synth's realism); and those plus the photometric ``augment`` of every batch (how ``train``
    trains). Score each on crops of a deck none of them saw, rendered both ways: real cards
    under a real camera differ from any render, and that deck (a scan of printed cards) is the
    nearest stand-in. ``reference``: also score this model folder's classifier checkpoint."""
    import torch

    torch.set_num_threads(threads)
    st = Settings()
    test = {}
    for name, variant in (("realistic", ""), ("clean", "clean")):
        progress(f"test crops: {test_scenes} {name} scenes of {Path(test_deck).name}")
        held_out = render_many(
            test_scenes,
            ABLATION_TEST_SEED,
            [test_deck],
            *scene_size,
            workers=workers,
            variant=variant,
        )
        test[name] = _crop_set(held_out, st, seed=ABLATION_TEST_SEED)
    result = {
        "epochs": epochs,
        "scenes": scenes,
        "seed": seed,
        "decks": [Path(d).name for d in decks],
        "test_deck": Path(test_deck).name,
        "test_scenes": test_scenes,
        "test_seed": ABLATION_TEST_SEED,
        "arms": {},
    }
    for arm, (realism, photometric) in ABLATION_ARMS.items():
        progress(f"arm {arm}: rendering {scenes} scenes")
        train_scenes = render_many(
            scenes, seed, decks, *scene_size, workers=workers, variant="" if realism else "clean"
        )
        data = _crop_set(train_scenes, st, seed)
        crops = data[0]
        del train_scenes
        _, net = build_nets(tiny)
        t0 = time.time()
        train_classifier(net, data, epochs, np.random.default_rng(seed), photometric=photometric)
        result["arms"][arm] = {
            "realistic_renders": realism,
            "photometric_augmentation": photometric,
            "train_crops": int(len(crops)),
            "seconds": round(time.time() - t0),
            "test": {name: score_crops(net, *crop_set[:2]) for name, crop_set in test.items()},
        }
        progress(f"arm {arm}: {result['arms'][arm]['test']}")
    if reference:
        meta, ckpts = _trained_model(Path(reference), "to compare with")
        net = build_nets(**model_shape(meta))[1]
        net.load_state_dict(torch.load(ckpts / "classifier.pt"))
        result["reference"] = {
            "model": str(reference),
            "test": {name: score_crops(net, *crop_set[:2]) for name, crop_set in test.items()},
        }
    return result


# --------------------------------------------------------------------------------------------
# The speed yardstick: a YOLO11n-shaped network (ultralytics yolo11.yaml at scale n)
# --------------------------------------------------------------------------------------------


def build_yolo11n(num_classes: int = 80):
    """YOLO11n's layer graph (Conv-BN-SiLU, C3k2, SPPF, C2PSA, decoupled Detect head + DFL).

    Only the shape matters: it is a speed yardstick, exported with constant weights.
    """
    import torch
    from torch import nn

    class Conv(nn.Module):
        def __init__(self, c1, c2, k=1, s=1, g=1, act=True):
            super().__init__()
            self.conv = nn.Conv2d(c1, c2, k, s, k // 2, groups=g, bias=False)
            self.bn = nn.BatchNorm2d(c2)
            self.act = nn.SiLU() if act else nn.Identity()

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    class Bottleneck(nn.Module):
        def __init__(self, c1, c2, shortcut=True, e=0.5):
            super().__init__()
            c_ = int(c2 * e)
            self.cv1, self.cv2 = Conv(c1, c_, 3), Conv(c_, c2, 3)
            self.add = shortcut and c1 == c2

        def forward(self, x):
            y = self.cv2(self.cv1(x))
            return x + y if self.add else y

    class C3k(nn.Module):
        def __init__(self, c1, c2, n=2, shortcut=True, e=0.5):
            super().__init__()
            c_ = int(c2 * e)
            self.cv1, self.cv2, self.cv3 = Conv(c1, c_), Conv(c1, c_), Conv(2 * c_, c2)
            self.m = nn.Sequential(*(Bottleneck(c_, c_, shortcut, e=1.0) for _ in range(n)))

        def forward(self, x):
            return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))

    class C3k2(nn.Module):
        def __init__(self, c1, c2, n=1, c3k=False, e=0.5, shortcut=True):
            super().__init__()
            self.c = int(c2 * e)
            self.cv1 = Conv(c1, 2 * self.c)
            self.cv2 = Conv((2 + n) * self.c, c2)
            self.m = nn.ModuleList(
                C3k(self.c, self.c, 2, shortcut) if c3k else Bottleneck(self.c, self.c, shortcut)
                for _ in range(n)
            )

        def forward(self, x):
            y = list(self.cv1(x).chunk(2, 1))
            y.extend(m(y[-1]) for m in self.m)
            return self.cv2(torch.cat(y, 1))

    class SPPF(nn.Module):
        def __init__(self, c1, c2, k=5):
            super().__init__()
            c_ = c1 // 2
            self.cv1, self.cv2 = Conv(c1, c_), Conv(c_ * 4, c2)
            self.m = nn.MaxPool2d(k, 1, k // 2)

        def forward(self, x):
            y = [self.cv1(x)]
            y.extend(self.m(y[-1]) for _ in range(3))
            return self.cv2(torch.cat(y, 1))

    class Attention(nn.Module):
        def __init__(self, dim, num_heads, attn_ratio=0.5):
            super().__init__()
            self.num_heads = num_heads
            self.head_dim = dim // num_heads
            self.key_dim = int(self.head_dim * attn_ratio)
            self.scale = self.key_dim**-0.5
            self.qkv = Conv(dim, dim + self.key_dim * num_heads * 2, 1, act=False)
            self.proj = Conv(dim, dim, 1, act=False)
            self.pe = Conv(dim, dim, 3, 1, g=dim, act=False)

        def forward(self, x):
            b, c, h, w = x.shape
            n = h * w
            qkv = self.qkv(x)
            q, k, v = qkv.view(b, self.num_heads, self.key_dim * 2 + self.head_dim, n).split(
                [self.key_dim, self.key_dim, self.head_dim], dim=2
            )
            attn = ((q.transpose(-2, -1) @ k) * self.scale).softmax(dim=-1)
            x = (v @ attn.transpose(-2, -1)).view(b, c, h, w) + self.pe(v.reshape(b, c, h, w))
            return self.proj(x)

    class PSABlock(nn.Module):
        def __init__(self, c, num_heads):
            super().__init__()
            self.attn = Attention(c, num_heads)
            self.ffn = nn.Sequential(Conv(c, c * 2, 1), Conv(c * 2, c, 1, act=False))

        def forward(self, x):
            x = x + self.attn(x)
            return x + self.ffn(x)

    class C2PSA(nn.Module):
        def __init__(self, c1, c2, n=1, e=0.5):
            super().__init__()
            self.c = int(c1 * e)
            self.cv1, self.cv2 = Conv(c1, 2 * self.c), Conv(2 * self.c, c1)
            self.m = nn.Sequential(*(PSABlock(self.c, self.c // 64) for _ in range(n)))

        def forward(self, x):
            a, b = self.cv1(x).split((self.c, self.c), dim=1)
            return self.cv2(torch.cat((a, self.m(b)), 1))

    class Detect(nn.Module):
        def __init__(self, nc, ch, reg_max=16):
            super().__init__()
            self.nc, self.reg_max = nc, reg_max
            c2, c3 = max(16, ch[0] // 4, reg_max * 4), max(ch[0], min(nc, 100))
            self.cv2 = nn.ModuleList(
                nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1))
                for x in ch
            )
            self.cv3 = nn.ModuleList(
                nn.Sequential(
                    nn.Sequential(Conv(x, x, 3, g=x), Conv(x, c3, 1)),
                    nn.Sequential(Conv(c3, c3, 3, g=c3), Conv(c3, c3, 1)),
                    nn.Conv2d(c3, nc, 1),
                )
                for x in ch
            )
            self.dfl = nn.Conv2d(reg_max, 1, 1, bias=False)

        def forward(self, feats):
            b = feats[0].shape[0]
            out = torch.cat(
                [
                    torch.cat((r(f), c(f)), 1).view(b, 4 * self.reg_max + self.nc, -1)
                    for f, r, c in zip(feats, self.cv2, self.cv3, strict=True)
                ],
                2,
            )
            box, cls = out.split((4 * self.reg_max, self.nc), 1)
            a = box.shape[-1]
            dist = self.dfl(box.view(b, 4, self.reg_max, a).transpose(2, 1).softmax(1)).view(
                b, 4, a
            )
            return torch.cat((dist, cls.sigmoid()), 1)

    class YOLO11n(nn.Module):
        def __init__(self):
            super().__init__()
            self.b0, self.b1 = Conv(3, 16, 3, 2), Conv(16, 32, 3, 2)
            self.b2 = C3k2(32, 64, 1, False, 0.25)
            self.b3 = Conv(64, 64, 3, 2)
            self.b4 = C3k2(64, 128, 1, False, 0.25)
            self.b5 = Conv(128, 128, 3, 2)
            self.b6 = C3k2(128, 128, 1, True)
            self.b7 = Conv(128, 256, 3, 2)
            self.b8 = C3k2(256, 256, 1, True)
            self.b9 = SPPF(256, 256, 5)
            self.b10 = C2PSA(256, 256, 1)
            self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
            self.h13 = C3k2(384, 128, 1, False)
            self.h16 = C3k2(256, 64, 1, False)
            self.h17 = Conv(64, 64, 3, 2)
            self.h19 = C3k2(192, 128, 1, False)
            self.h20 = Conv(128, 128, 3, 2)
            self.h22 = C3k2(384, 256, 1, True)
            self.detect = Detect(num_classes, (64, 128, 256))

        def forward(self, x):
            p4 = self.b4(self.b3(self.b2(self.b1(self.b0(x)))))
            p6 = self.b6(self.b5(p4))
            p10 = self.b10(self.b9(self.b8(self.b7(p6))))
            h13 = self.h13(torch.cat((self.up(p10), p6), 1))
            h16 = self.h16(torch.cat((self.up(h13), p4), 1))
            h19 = self.h19(torch.cat((self.h17(h16), h13), 1))
            h22 = self.h22(torch.cat((self.h20(h19), p10), 1))
            return self.detect([h16, h19, h22])

    return YOLO11n()


def export_yardstick(out_dir="companion/models", size: int = 640) -> Path:
    """Export the YOLO11n-shaped net with weights generated in-graph (a few kB on disk).

    Every weight tensor becomes ``ConstantOfShape(1/fan_in)``: onnxruntime folds these at
    load time, so inference costs exactly what the real network costs, activations stay in a
    sane range (no denormals, no overflow) and the file needs no torch to run.
    """
    import onnx
    import torch
    from onnx import helper, numpy_helper

    net = build_yolo11n().eval()
    params = sum(p.numel() for p in net.parameters())
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "yolo11n_yardstick.onnx"
    tmp = out / "yolo11n_yardstick.tmp.onnx"
    torch.onnx.export(
        net,
        torch.zeros(1, 3, size, size),
        str(tmp),
        input_names=["images"],
        output_names=["output0"],
        opset_version=17,
        dynamo=False,
    )
    model = onnx.load(str(tmp))
    tmp.unlink()
    keep, nodes = [], []
    for init in model.graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.size < 64 or arr.dtype != np.float32:
            keep.append(init)
            continue
        fan_in = int(np.prod(arr.shape[1:])) if arr.ndim > 1 else arr.size
        shape_name = init.name + "__shape"
        keep.append(numpy_helper.from_array(np.array(arr.shape, np.int64), shape_name))
        nodes.append(
            helper.make_node(
                "ConstantOfShape",
                [shape_name],
                [init.name],
                value=helper.make_tensor("v", onnx.TensorProto.FLOAT, [1], [1.0 / max(1, fan_in)]),
            )
        )
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    for node in reversed(nodes):
        model.graph.node.insert(0, node)
    model.doc_string = f"YOLO11n-shaped speed yardstick, {params} parameters, constant weights"
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def finetune_localizer(
    out: str | Path,
    init: str | Path | None,
    config: TrainConfig,
    schedule: NetSchedule = NetSchedule(batch=16),
    data: list | None = None,
) -> tuple[Path, list]:
    """Continue training the localizer checkpoint ``init`` for ``config.minutes`` (30 if None)
    at ``config.input_size`` (512x288 if None), on ``config.scenes`` scenes plus its extra
    scenes (with "backs" scenes, the centres of face-down cards weigh ``BACK_HEAT_WEIGHT`` in
    the heat loss), or on ``data`` already cut (``stage_data``).

    Writes ``localizer.ckpt`` in ``out`` and returns its path and the heat loss per epoch;
    ``export_trained`` turns checkpoints into ONNX.
    One thread suits a CPU shared with other work; use 2 on an idle 2-core machine.
    """
    import torch

    input_size = config.input_size or (512, 288)
    seed, stage, back_scenes = config.seed, schedule.stage, config.back_scenes
    torch.set_num_threads(schedule.threads)
    out = Path(out)
    if data is None:
        st = Settings().with_(input_width=input_size[0], input_height=input_size[1])
        recipe = SampleRecipe(
            decks=tuple(str(d) for d in config.decks),
            scene_size=tuple(config.scene_size),
            cache=str(config.cache) if config.cache else None,
            localizer=st,
            # a stage with the extra face-down scenes also weighs face-down centres more
            back_weight=BACK_HEAT_WEIGHT if back_scenes else 1.0,
            key=(seed, stage),
        )
        data, _, _ = stage_data(recipe, config)
    log(f"fine-tuning the localizer at {input_size[0]}x{input_size[1]} on {len(data)} frames")
    net, _ = build_nets(config.tiny, config.deep_widths)
    rng = np.random.default_rng((seed + 7, stage))
    return _train_until(
        train_localizer, net, init, data, rng, out / "localizer.ckpt", config, schedule
    )


def finetune_classifier(
    out: str | Path,
    init: str | Path | None,
    config: TrainConfig,
    schedule: NetSchedule = NetSchedule(batch=128),
    localizer: str | Path | None = None,
    peak_spacing: float = 0.0,
    proposal_threshold: float = 0.15,
    data: tuple | None = None,
) -> tuple[Path, list, int]:
    """Continue training the classifier checkpoint ``init`` for ``config.minutes`` (30 if None)
    on jittered true boxes plus the boxes that the ONNX ``localizer`` (run at
    ``config.input_size``, 768x448 if None) proposes on the same scenes (``cascade_samples``),
    decoded as the model will decode them (``peak_spacing``), on ``config.scenes`` scenes plus
    its extra scenes; or on ``data`` already cut.

    Writes ``classifier.ckpt`` in ``out``; returns its path, the loss per epoch and the number
    of crops.
    """
    import torch

    input_size = config.input_size or (768, 448)
    seed, stage = config.seed, schedule.stage
    torch.set_num_threads(schedule.threads)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if data is None:
        recipe = SampleRecipe(
            decks=tuple(str(d) for d in config.decks),
            scene_size=tuple(config.scene_size),
            cache=str(config.cache) if config.cache else None,
            classifier=Settings().with_(input_width=input_size[0], input_height=input_size[1]),
            jitters=config.jitters,
            proposer=str(localizer) if localizer else None,
            propose=Settings().with_(
                input_width=input_size[0],
                input_height=input_size[1],
                heat_threshold=proposal_threshold,
                peak_spacing=peak_spacing,
            ),
            key=(seed, stage),
        )
        _, data, cascade = stage_data(recipe, config)
        log(f"{len(data[0])} crops ({cascade} at proposed boxes)")
    _, net = build_nets(config.tiny, config.deep_widths)
    rng = np.random.default_rng((seed + 11, stage))
    ckpt, history = _train_until(
        train_classifier, net, init, data, rng, out / "classifier.ckpt", config, schedule
    )
    return ckpt, history, len(data[0])


def _train_until(
    train_net, net, init, data, rng, checkpoint: Path, config: TrainConfig, schedule: NetSchedule
):
    """Load ``init`` into ``net`` (grown to its widths: ``grown_state``), train it on
    ``config.device`` for ``config.minutes`` (30 if None) of wall-clock time, keep the weights
    in ``checkpoint`` and the loss per epoch beside it; returns (checkpoint, losses)."""
    import torch

    if init:
        net.load_state_dict(grown_state(torch.load(init, map_location="cpu"), net))
    minutes = 30 if config.minutes is None else config.minutes
    history = train_net(
        net,
        data,
        1,
        rng,
        lr=schedule.lr,
        checkpoint=checkpoint,
        deadline=time.time() + 60 * minutes,
        device=config.device,
        **({"batch": schedule.batch} if schedule.batch else {}),
    )
    checkpoint.with_name(checkpoint.stem + "_history.json").write_text(json.dumps(history))
    return checkpoint, history


def export_trained(
    out, localizer_ckpt, classifier_ckpt, settings: Settings, training: dict
) -> dict:
    """Export two checkpoints to ONNX and write ``recognizer.json`` (used when the nets were
    trained in separate runs, e.g. a localizer fine-tuned at a finer input size); ``training``
    says the nets' shape (``model_shape``)."""
    import torch

    out = Path(out)
    localizer, classifier = build_nets(**model_shape({"training": training}))
    localizer.load_state_dict(torch.load(localizer_ckpt))
    classifier.load_state_dict(torch.load(classifier_ckpt))
    loc_name, cls_name = export_onnx(localizer, classifier, out, settings)
    meta = _metadata(loc_name, cls_name, settings, training)
    (out / "recognizer.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


CHECKPOINTS = "checkpoints"  # torch weights kept beside the ONNX files, so training can resume


def _keep_checkpoints(out: Path, localizer_ckpt: Path, classifier_ckpt: Path) -> None:
    folder = Path(out) / CHECKPOINTS
    folder.mkdir(parents=True, exist_ok=True)
    for src, name in ((localizer_ckpt, "localizer.pt"), (classifier_ckpt, "classifier.pt")):
        if Path(src).resolve() != (folder / name).resolve():
            shutil.copyfile(src, folder / name)
    for leftover in ("localizer.ckpt", "classifier.ckpt"):
        (Path(out) / leftover).unlink(missing_ok=True)


def _trained_model(start: Path, purpose: str) -> tuple[dict, Path]:
    """(metadata, checkpoints folder) of the model in ``start``; RecognizerError if it has none."""
    from companion.recognizer import RecognizerError

    meta_path, ckpts = start / "recognizer.json", start / CHECKPOINTS
    if not meta_path.is_file() or not (ckpts / "localizer.pt").is_file():
        raise RecognizerError(
            f"{start} has no recognizer.json with {CHECKPOINTS}/ {purpose}: "
            "train a model first with 'companion train'."
        )
    try:
        return json.loads(meta_path.read_text()), ckpts
    except ValueError:
        raise RecognizerError(f"The model metadata {meta_path} is unreadable.") from None


def average_weights(first: dict, second: dict, share: float) -> dict:
    """Two state dicts of one net averaged tensor by tensor, ``share`` of ``second``: weights and
    batch-norm statistics; counters (``num_batches_tracked``) are ``second``'s. ValueError
    where the nets differ."""
    if first.keys() != second.keys() or any(first[k].shape != second[k].shape for k in first):
        raise ValueError("the two models' nets differ in shape")
    return {
        k: (1 - share) * a + share * second[k] if a.is_floating_point() else second[k]
        for k, a in first.items()
    }


def _averaged_history(
    training: dict, other: dict, start: Path, average_with, share: float, command: str
) -> dict:
    """``training`` (the start model's history) with the stages the model ``other`` (its
    metadata) has beyond it, and a last one naming the average of the two."""
    ours = training.get("stages", [])
    theirs = other.get("training", {}).get("stages", [])
    added = theirs[len(ours) :] if theirs[: len(ours)] == ours else theirs
    averaged = {
        "command": command,
        "nets": "both",
        # the stages above it from ``len(ours) + 1`` on were trained apart from the nets of
        # ``from``; these nets are the average of the two
        "averaged": {"with": str(average_with), "share": share, "from": str(start)},
    }
    return {**training, "stages": [*ours, *added, averaged]}


def reexport(
    start: str | Path,
    out: str | Path,
    decks=TRAIN_DECKS,
    command: str | None = None,
    average_with: str | Path | None = None,
    share: float = 0.5,
) -> dict:
    """Export the checkpoints of the model in ``start`` to ONNX and int8 again, in ``out``,
    with this machine's torch and onnxruntime; the settings and training history are kept. For nets trained elsewhere: a GPU machine's other versions may leave the input
    conversion unfolded (``quantize``), which costs speed at every frame.

    ``average_with``: another model of the same shape, usually a stage trained on from
    ``start``; both nets are then the average of the two models' weights, ``share`` of
    ``average_with``'s (``average_weights``), and the history gains that model's stages after
    ``start``'s and a last one saying so. Two nets fine-tuned apart from one start often find a
    wider, better-placed minimum between them than either."""
    import torch

    from companion.recognizer import RecognizerError

    start, out = Path(start), Path(out)
    command = command or " ".join(shlex.quote(a) for a in sys.argv)
    old, ckpts = _trained_model(start, "to export")
    if average_with is not None:
        other, other_ckpts = _trained_model(Path(average_with), "to average with")
        if model_shape(other) != model_shape(old):
            raise RecognizerError(f"{average_with}'s nets are not {start}'s shape: no average.")
        if not 0 < share < 1:
            raise RecognizerError(f"The share of {average_with} is between 0 and 1, not {share}.")
    out.mkdir(parents=True, exist_ok=True)
    settings = Settings.from_dict(old.get("settings", {}))
    training = old.get("training", {})
    with tempfile.TemporaryDirectory() as scratch:
        if average_with is not None:
            # averaged in a scratch folder: exported in place (--out the start), the start's
            # checkpoints stay as they were until the export has been made
            for name in ("localizer.pt", "classifier.pt"):
                mine = torch.load(ckpts / name, map_location="cpu")
                theirs = torch.load(other_ckpts / name, map_location="cpu")
                torch.save(average_weights(mine, theirs, share), Path(scratch) / name)
            ckpts = Path(scratch)
            training = _averaged_history(training, other, start, average_with, share, command)
        loc, cls = ckpts / "localizer.pt", ckpts / "classifier.pt"
        meta = export_trained(out, loc, cls, settings, training)
        _keep_checkpoints(out, loc, cls)
    meta |= quantize(out, decks)  # "quantization" and "float_nets"
    import onnxruntime

    # metrics start empty: other int8 files are measured again ('companion eval --record')
    meta["export"] = {
        "command": command,
        "from": str(start),
        **({"averaged_with": str(average_with), "share": share} if average_with else {}),
        "torch": torch.__version__,
        "onnxruntime": onnxruntime.__version__,
    }
    (out / "recognizer.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"exported {start}'s checkpoints to {out}")
    return meta


def _finetune_localizer_job(kwargs, queue):
    try:
        queue.put(finetune_localizer(**kwargs)[1])
    except BaseException:
        queue.put(None)
        raise


def resume(
    out: str | Path,
    start: str | Path = "companion/models",
    config: TrainConfig | None = None,
    localizer_only: bool = False,
    classifier_only: bool = False,
    lr_scale: float = 1.0,
) -> dict:
    """Continue training the model in ``start`` (its ``checkpoints/``) for ``config.minutes``
    (60 if None): the localizer at ``config.input_size`` (the model's if None) and, side by
    side, the classifier on jittered true boxes plus the boxes ``start``'s own localizer
    proposes (``cascade_samples``). Exports to ``out``.

    ``localizer_only``: train the localizer alone, on both threads, and keep the classifier;
    ``classifier_only``: the other way round (the classifier is small: on a CPU it sees several
    times as many crops in the same minutes as when it shares the machine with the localizer).
    ``config.back_scenes``: both nets also learn from that many scenes rich in face-down
    cards; ``lens_scenes``: ...and from that many scenes each seen through a lens of its own
    (``synth.SceneConfig.p_lens``), as a webcam's wide-angle lens bends the table;
    ``restyle_scenes``: ...and from that many scenes whose faces are printed in inks of their
    own (``synth.SceneConfig.p_restyle``), as a deck never seen may be.
    ``config.device``: where the nets train ("cpu", "cuda"); on a GPU the batches are larger
    (``GPU_BATCHES``), since a step there costs about the same for a batch several times as big.
    ``lr_scale``: multiplies both nets' learning rates (``RESUME_LR``), e.g. to fine-tune a
    model trained with a GPU's larger batches on a CPU's smaller ones.
    ``config.deep_widths``: the nets grow to these widths (``DEEP_WIDTHS``; ``grown_state``)
    before training; a net not named keeps its width, and none can shrink.
    """
    from companion.recognizer import RecognizerError

    config = config or TrainConfig()
    if config.minutes is None:
        config = replace(config, minutes=60)
    decks, scenes, seed, minutes, device = (
        config.decks,
        config.scenes,
        config.seed,
        config.minutes,
        config.device,
    )
    back_scenes, lens_scenes, restyle_scenes = (
        config.back_scenes,
        config.lens_scenes,
        config.restyle_scenes,
    )

    if localizer_only and classifier_only:
        raise ValueError("train the localizer only or the classifier only, not both")
    start, out = Path(start), Path(out)
    old, ckpts = _trained_model(start, "to resume from")
    shape = model_shape(old)
    widths = {**shape["deep_widths"], **(config.deep_widths or {})}
    for net, width in widths.items():
        if width < shape["deep_widths"][net]:
            raise RecognizerError(
                f"The {net} of {start} is {shape['deep_widths'][net]:g} wide; a net can grow "
                f"but not shrink (asked for {width:g})."
            )
    grown = {n: w for n, w in widths.items() if w != shape["deep_widths"][n]}
    if (localizer_only and "classifier" in grown) or (classifier_only and "localizer" in grown):
        raise RecognizerError("Only a net that trains in this stage can grow.")
    settings = Settings.from_dict(old.get("settings", {}))
    if config.input_size:
        width, height = config.input_size
        settings = settings.with_(input_width=width, input_height=height)
    size = (settings.inputs.input_width, settings.inputs.input_height)
    work = out / "resume-work"
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    batches = GPU_BATCHES if device.startswith("cuda") else CPU_BATCHES
    lrs = {net: lr * lr_scale for net, lr in RESUME_LR.items()}
    stage_config = replace(config, input_size=size, tiny=shape["tiny"], deep_widths=widths)
    # each stage shuffles and augments the same scenes differently
    stage_number = len(old.get("training", {}).get("stages", [])) + 1
    schedules = {
        net: NetSchedule(lr=lrs[net], batch=batches[net], threads=1, stage=stage_number)
        for net in ("localizer", "classifier")
    }
    loc_ckpt = work / "localizer.ckpt"
    if localizer_only:
        schedule = replace(schedules["localizer"], threads=2)
        _, heat = finetune_localizer(work, ckpts / "localizer.pt", stage_config, schedule)
        cls_ckpt, ce, crops = ckpts / "classifier.pt", None, 0
    elif classifier_only:
        cls_ckpt, ce, crops = finetune_classifier(
            work,
            ckpts / "classifier.pt",
            stage_config,
            replace(schedules["classifier"], threads=2),
            localizer=start / old["localizer"],
            peak_spacing=settings.candidates.peak_spacing,
        )
        loc_ckpt, heat = ckpts / "localizer.pt", None
    else:
        cls_ckpt, ce, crops, heat = _resume_both(
            start, old, settings, stage_config, schedules, work
        )
    training = dict(old.get("training", {}))
    if widths != DEEP_WIDTHS:  # no net shrinks, so a model with widths keeps them
        training["deep_widths"] = widths
    stage = {
        "command": config.recorded_command(),
        "resumed_from": str(start),
        "nets": "localizer" if localizer_only else "classifier" if classifier_only else "both",
        "input_size": list(size),
        "decks": [Path(d).name for d in decks],
        "scenes": scenes,
        "scene_seeds": f"synth.scene_seed({seed}, 0..{scenes - 1})",
        "minutes": minutes,
        "device": device,
        "batches": batches,
        "learning_rates": {
            **lrs,
            **({"classifier": None} if localizer_only else {}),
            **({"localizer": None} if classifier_only else {}),
        },
        "crops": crops,
        "seconds": round(time.time() - t_start),
        "losses": {"classifier_ce": ce, "localizer_heat": heat},
        **({"grown_to": grown} if grown else {}),
    }
    from companion.simulator import synth  # the extra scenes' ranges, as rendered

    if back_scenes:
        back_seed = seed + BACK_SCENES_SEED_OFFSET
        stage["back_scenes"] = {
            "scenes": back_scenes,
            "scene_seeds": f"synth.scene_seed({back_seed}, 0..{back_scenes - 1})",
            "config": SCENE_VARIANTS["backs"],
            "back_heat_weight": BACK_HEAT_WEIGHT,
        }
    if lens_scenes:
        lens_seed = seed + LENS_SCENES_SEED_OFFSET
        stage["lens_scenes"] = {
            "scenes": lens_scenes,
            "scene_seeds": f"synth.scene_seed({lens_seed}, 0..{lens_scenes - 1})",
            "config": {**SCENE_VARIANTS["lens"], "lens_k_range": synth.SceneConfig().lens_k_range},
        }
    if restyle_scenes:
        restyle_seed = seed + RESTYLE_SCENES_SEED_OFFSET
        stage["restyle_scenes"] = {
            "scenes": restyle_scenes,
            "scene_seeds": f"synth.scene_seed({restyle_seed}, 0..{restyle_scenes - 1})",
            "config": {
                **SCENE_VARIANTS["restyle"],
                "hue_deg": synth.RESTYLE_HUE_DEG,
                "saturation": synth.RESTYLE_SATURATION,
                "contrast": synth.RESTYLE_CONTRAST,
            },
        }
    training["stages"] = [*training.get("stages", []), stage]
    meta = export_trained(out, loc_ckpt, cls_ckpt, settings, training)
    _keep_checkpoints(out, loc_ckpt, cls_ckpt)
    shutil.rmtree(work, ignore_errors=True)
    meta |= quantize(out, decks)  # "quantization" and "float_nets"
    log(f"exported to {out} ({time.time() - t_start:.0f}s)")
    return meta


def _resume_both(
    start: Path,
    old: dict,
    settings: Settings,
    config: TrainConfig,
    schedules: dict[str, NetSchedule],
    work: Path,
):
    """Both nets side by side, the localizer in a forked process, on samples cut in one pass
    over the scenes. Returns (classifier checkpoint, its losses, crops made, the localizer's
    heat losses)."""
    # cut as finetune_localizer and finetune_classifier cut them on their own
    size = dict(input_width=settings.inputs.input_width, input_height=settings.inputs.input_height)
    recipe = SampleRecipe(
        decks=tuple(str(d) for d in config.decks),
        scene_size=tuple(config.scene_size),
        cache=str(config.cache) if config.cache else None,
        localizer=Settings().with_(**size),
        back_weight=BACK_HEAT_WEIGHT if config.back_scenes else 1.0,
        classifier=Settings().with_(**size),
        jitters=config.jitters,
        proposer=str(start / old["localizer"]),
        propose=Settings().with_(
            **size, heat_threshold=0.15, peak_spacing=settings.candidates.peak_spacing
        ),
        key=(config.seed, schedules["localizer"].stage),
    )
    loc_data, crops, cascade = stage_data(recipe, config)
    log(f"{len(loc_data)} frames, {len(crops[0])} crops ({cascade} at proposed boxes)")
    # fork before torch starts its threads here: its thread pool does not survive a fork
    localizer_job = dict(
        out=work,
        init=start / CHECKPOINTS / "localizer.pt",
        config=config,
        schedule=schedules["localizer"],
        data=loc_data,
    )
    job, queue = start_forked(_finetune_localizer_job, localizer_job)
    del loc_data, localizer_job
    cls_ckpt, ce, n_crops = finetune_classifier(
        work,
        start / CHECKPOINTS / "classifier.pt",
        config,
        schedules["classifier"],
        data=crops,
    )
    heat = wait_for_report(job, queue, "localizer")
    return cls_ckpt, ce, n_crops, heat


def quantize(out: str | Path, decks=TRAIN_DECKS, seed: int = 555, frames: int = 24) -> dict:
    """Turn the float ONNX nets in ``out`` into int8 ones in place (static QDQ quantization,
    per-channel weights), keeping the float ones beside them (``float_nets``), calibrated on
    ``frames`` synthetic frames of the training decks and the crops the localizer proposes on
    them. About 1.4x faster on a CPU with int8 dot products, for the same accuracy; slower and
    a little less accurate on one without. Then adds the nets for
    x86 CPUs without int8 dot products (``quantize_avx2``). Returns the metadata it added:
    ``quantization`` (what it did), ``float_nets`` and ``avx2_nets`` (the files' names)."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    out = Path(out)
    # run as "int8": the model's own nets, still the float ones here
    images, crops = _calibration(out, "int8", decks, seed, frames)
    meta = json.loads((out / "recognizer.json").read_text())
    folded, float_folded, float_nets = [], [], {}
    for key, name, batches in (("localizer", "image", images), ("classifier", "crop", crops)):
        path = out / meta[key]
        # the float net stays beside the int8 one: on CPUs without int8 dot products it is the
        # faster of the two (recognizer.int8_is_fast)
        float_nets[key] = f"{path.stem}.float.onnx"
        shutil.copyfile(path, out / float_nets[key])
        if batches and fold_float_input_conversion(out / float_nets[key], batches[0]):
            float_folded.append(key)
        prepared = path.with_suffix(".prepared.onnx")
        quant_pre_process(str(path), str(prepared), skip_symbolic_shape=True)
        quantize_static(
            str(prepared),
            str(path),
            _Feed(name, batches),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
        )
        prepared.unlink()
        if batches and fold_input_conversion(path, batches[0]):
            folded.append(key)
    done = {
        "int8": "static QDQ, per-channel int8 weights, uint8 activations",
        "input_folded": folded,
        "float_input_folded": float_folded,
        "calibration": _calibration_note(decks, seed, frames, crops),
    }
    width = model_shape(meta)["deep_widths"]["localizer"]
    avx2 = quantize_avx2(out, float_nets, crops, images=images, localizer_width=width)
    added = {
        "quantization": done | avx2["quantization"],
        "float_nets": float_nets,
        "avx2_nets": avx2["avx2_nets"],
    }
    meta |= added
    (out / "recognizer.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"quantized the nets in {out}: int8, and the avx2 set")
    return added


def _Feed(name: str, batches):
    """Calibration batches for onnxruntime's quantizer: the net's input ``name`` fed each of
    ``batches`` in turn (a CalibrationDataReader, made here: onnxruntime.quantization loads
    only when a net is quantized)."""
    from onnxruntime.quantization import CalibrationDataReader

    class Feed(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{name: b} for b in batches])

        def get_next(self):
            return next(self.batches, None)

    return Feed()


def _calibration(out: Path, nets: str, decks, seed: int, frames: int):
    """Calibration data for quantizing the nets of ``out`` (run as ``nets``): ``frames``
    letterboxed frames (1,H,W,3) of the training decks, and per frame the crops the classifier
    sees there: first looks at the proposed boxes, second looks at the true cards."""
    from companion.recognizer import Recognizer, crop_matrices, localize
    from companion.simulator import synth

    rec = Recognizer.load(out, threads=1, nets=nets)
    st = rec.settings
    config = synth.SceneConfig(decks=tuple(str(deck_dir(d)) for d in decks))
    images, crops = [], []
    for i in range(frames):
        scene = synth.render_scene(synth.scene_seed(seed, i), config)
        image = scene.image
        found = localize(rec.localizer, image, st)
        images.append(found.boxed[None])
        boxes = found.boxes
        true_boxes = [quad_to_rbox(np.float32(lab.quad)) for lab in scene.labels]
        boxes = np.concatenate([boxes[:, :5], np.float32(true_boxes).reshape(-1, 5)])
        if len(boxes):
            crops.append(crop_cards(image, crop_matrices(boxes, st), st))
    return images, crops


def _calibration_note(decks, seed: int, frames: int, crops) -> str:
    return (
        f"{frames} frames synth.scene_seed({seed}, 0..{frames - 1}) of "
        + ", ".join(Path(d).name for d in decks)
        + f" and {sum(len(c) for c in crops)} crops of them (proposed boxes and true cards)"
    )


AVX2_CLASSIFIER = "classifier.avx2.onnx"
AVX2_LOCALIZER = "localizer.avx2.onnx"
# The localizer's layers at strides 16 and 32, and the two that bring them back up: few pixels
# and many channels, where 7-bit int8 convolutions pay on AVX2. At the finer strides the
# traffic of quantizing and dequantizing large activations costs what the int8 sums save.
LOCALIZER_DEEP_LAYERS = ("s16", "s32", "lat16", "merge16")


def deep_convs(model) -> list[str]:
    """Names of the convolutions of an ONNX localizer in ``LOCALIZER_DEEP_LAYERS`` (torch's
    exporter names each node by the module path: ``/net/s16/s16.0/s16.0.0/Conv``); none for
    another net, or where an exporter names nodes otherwise."""
    prefixes = tuple(f"/net/{layer}/" for layer in LOCALIZER_DEEP_LAYERS)
    return [n.name for n in model.graph.node if n.op_type == "Conv" and n.name.startswith(prefixes)]


def _quantize_7bit(source: Path, target: Path, input_name: str, batches, pick) -> dict | None:
    """Write the float ONNX net ``source`` to ``target`` as static QDQ with per-channel 7-bit
    int8 weights (``reduce_range``: weights within -64..64, so two products with uint8 pixels sum
    to at most 32,640, which onnxruntime's 16-bit sums on AVX2 hold) and uint8 activations,
    calibrated on ``batches`` fed to its input ``input_name``. ``pick`` (the prepared ONNX model
    -> ``quantize_static``'s node arguments, e.g. ``{"nodes_to_exclude": [...]}``, or None to
    write nothing) chooses the nodes. Returns what ``pick`` returned."""
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = Path(target).with_suffix(".prepared.onnx")
    quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
    try:
        nodes = pick(onnx.load(str(prepared)))
        if nodes is not None:
            quantize_static(
                str(prepared),
                str(target),
                _Feed(input_name, batches),
                quant_format=QuantFormat.QDQ,
                per_channel=True,
                reduce_range=True,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                **nodes,
            )
    finally:
        prepared.unlink(missing_ok=True)
    return nodes


def quantize_deep_localizer(source: str | Path, target: str | Path, images) -> int:
    """Write the float localizer ``source`` to ``target`` with its ``deep_convs`` quantized, 7-bit
    weights as the avx2 classifier's (``quantize_avx2``), the rest float, calibrated on
    ``images`` (a list of (1,H,W,3) uint8 letterboxed frames). Returns how many convolutions
    were quantized; with none found nothing is written and 0 is returned."""

    def pick(model):
        convs = deep_convs(model)
        return {"nodes_to_quantize": convs} if convs and images else None

    nodes = _quantize_7bit(Path(source), Path(target), "image", images, pick)
    return len(nodes["nodes_to_quantize"]) if nodes else 0


def quantize_avx2(
    out: str | Path, float_nets: dict, crops, images=(), localizer_width: float = 1.0
) -> dict:
    """Make the classifier of the nets for x86 CPUs without int8 dot products in ``out``: the
    float classifier (``float_nets``: the float files' names, as ``quantize`` keeps them)
    quantized with 7-bit weights (``reduce_range``), calibrated on ``crops`` (a list of (N,H,W,3)
    uint8 batches). onnxruntime's int8 convolutions there sum pairs of uint8 x int8 products in
    16 bits, which 8-bit weights overflow (0.44 points of recall lost) and 7-bit ones cannot.
    The first convolution (3 input channels: slower in int8 than in float) and the heads (cheap;
    their outputs stay exact floats) stay float. The classifier then runs about a quarter
    faster than the float one, for about 0.07 points of recall; the
    int8 localizer is no faster than the float one there, so the float one serves, unless its
    low-resolution layers were grown (``localizer_width`` > 1): then those layers get 7-bit
    weights (``quantize_deep_localizer``, calibrated on ``images``), which takes back about half
    of what growing them costs there. At the
    standard width that saves nothing. Returns the metadata to add: ``avx2_nets`` and
    ``quantization`` (its ``avx2`` note)."""
    out = Path(out)
    kept_float = _quantize_7bit(
        out / float_nets["classifier"],
        out / AVX2_CLASSIFIER,
        "crop",
        crops,
        lambda model: {"nodes_to_exclude": float_ends(model)},
    )["nodes_to_exclude"]
    localizer, localizer_note = float_nets["localizer"], "the float localizer"
    (out / AVX2_LOCALIZER).unlink(missing_ok=True)  # a grown model's, from an earlier export
    if localizer_width > 1:
        deep = quantize_deep_localizer(out / float_nets["localizer"], out / AVX2_LOCALIZER, images)
        if deep:
            localizer = AVX2_LOCALIZER
            localizer_note = (
                f"the localizer with 7-bit int8 weights in its {deep} convolutions of "
                f"{', '.join(LOCALIZER_DEEP_LAYERS)} (grown {localizer_width:g} wide), the rest "
                "float"
            )
    return {
        "avx2_nets": {"localizer": localizer, "classifier": AVX2_CLASSIFIER},
        "quantization": {
            "avx2": f"{localizer_note}; the classifier static QDQ, per-channel 7-bit int8 "
            "weights (reduce_range: -64..64), uint8 activations, its first convolution and "
            f"heads float ({', '.join(kept_float)})",
        },
    }


def add_avx2_nets(out: str | Path, decks=TRAIN_DECKS, seed: int = 555, frames: int = 24) -> dict:
    """``quantize_avx2`` for a model quantized before the avx2 nets existed, calibrated as
    ``quantize`` does (the crops the float nets propose on the same frames), and the set
    written into its metadata. Returns what it added there."""
    out = Path(out)
    images, crops = _calibration(out, "float", decks, seed, frames)
    meta = json.loads((out / "recognizer.json").read_text())
    width = model_shape(meta)["deep_widths"]["localizer"]
    added = quantize_avx2(out, meta["float_nets"], crops, images=images, localizer_width=width)
    meta["quantization"] = meta.get("quantization", {}) | added["quantization"]
    meta["avx2_nets"] = added["avx2_nets"]
    (out / "recognizer.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"added the avx2 nets to {out}")
    return added


def float_ends(model) -> list[str]:
    """Names of the nodes of an ONNX classifier that the avx2 classifier keeps float: the first
    convolution, the heads (Gemms whose outputs are the net's or feed only its Softmax or
    Sigmoid) and those."""
    graph = _Graph(model)
    outputs = {o.name for o in graph.graph.output}
    ends = {"Softmax", "Sigmoid"}

    def head(node) -> bool:
        return node.op_type == "Gemm" and all(
            o in outputs or (graph.users.get(o) and {u.op_type for u in graph.users[o]} <= ends)
            for o in node.output
        )

    nodes = graph.graph.node
    first = next(n.name for n in nodes if n.op_type == "Conv")
    return [
        first,
        *(n.name for n in nodes if head(n)),
        *(n.name for n in nodes if n.op_type in ends),
    ]


FOLD_TOLERANCE = 0.05  # mean folded-output change, as a fraction of each output's spread


class _Graph:
    """An ONNX graph indexed for the input-conversion folds and ``float_ends``: who makes and
    who reads each value, and the value of a stored constant."""

    def __init__(self, model):
        self.model, self.graph = model, model.graph
        self.inits = {i.name: i for i in self.graph.initializer}
        self.producer = {o: n for n in self.graph.node for o in n.output}
        self.users: dict[str, list] = {}
        for n in self.graph.node:
            for i in n.input:
                self.users.setdefault(i, []).append(n)

    def only_user(self, name, op):
        found = self.users.get(name, [])
        return found[0] if len(found) == 1 and found[0].op_type == op else None

    def chain(self, *ops) -> list | None:
        """The nodes reading the graph input one after another, if their types are ``ops``."""
        nodes, value = [], self.graph.input[0].name
        for op in ops:
            node = self.only_user(value, op)
            if node is None:
                return None
            nodes.append(node)
            value = node.output[0]
        return nodes

    def const(self, name):
        """A stored constant's value, or None. Some torch versions export constants as Constant
        nodes, which the quantizer then quantizes with a node of its own: both are read."""
        from onnx import numpy_helper as nh

        if name in self.inits:
            return nh.to_array(self.inits[name])
        node = self.producer.get(name)
        if node is None:
            return None
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            return nh.to_array(node.attribute[0].t)
        if node.op_type == "QuantizeLinear" and len(node.input) == 3:
            x, scale, zero = (self.const(i) for i in node.input)
            if x is None or scale is None or zero is None or scale.ndim or zero.ndim:
                return None
            info = np.iinfo(zero.dtype)
            q = np.rint(x.astype(np.float32) / scale) + zero.astype(np.int64)  # half to even
            return np.clip(q, info.min, info.max).astype(zero.dtype)
        return None

    def replace_nodes(self, dropped, inserted=(), after=None):
        """Drop the nodes ``dropped``, put ``inserted`` right after ``after``, and prune what
        fed only the dropped ones (their constants)."""
        g = self.graph
        gone = {id(n) for n in dropped}
        nodes = [n for n in g.node if id(n) not in gone]
        if inserted:
            at = nodes.index(after) + 1
            nodes[at:at] = list(inserted)
        outputs = {o.name for o in g.output}
        while True:
            used = {i for n in nodes for i in n.input} | outputs
            kept = [n for n in nodes if any(o in used for o in n.output)]
            if len(kept) == len(nodes):
                break
            nodes = kept
        del g.node[:]
        g.node.extend(nodes)
        kept_inits = [i for i in g.initializer if i.name in used]
        del g.initializer[:]
        g.initializer.extend(kept_inits)

    def save_if_unchanged(self, path: Path, sample: np.ndarray | None) -> bool:
        """Write the rewritten model over ``path`` only if it computes what the file does, on
        ``sample`` (default: uint8 noise, 64 px for any free side), with onnxruntime's basic
        optimizations (which run the nodes as written): each output may change on average by
        less than ``FOLD_TOLERANCE`` of its spread, the order of float sums aside."""
        import onnx
        import onnxruntime as ort

        onnx.checker.check_model(self.model)

        def run(proto_bytes):
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            session = ort.InferenceSession(proto_bytes, options, providers=["CPUExecutionProvider"])
            return session.run(None, {self.graph.input[0].name: sample})

        if sample is None:
            dims = self.graph.input[0].type.tensor_type.shape.dim
            shape = [d.dim_value or (1 if i == 0 else 64) for i, d in enumerate(dims)]
            sample = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
        before = run(path.read_bytes())
        after = run(self.model.SerializeToString())
        if not all(
            np.abs(a - b).mean() <= FOLD_TOLERANCE * a.std()
            for a, b in zip(before, after, strict=True)
        ):
            log(f"{path.name}: folding the input conversion changed its outputs; left as it was")
            return False
        onnx.save(self.model, str(path))
        return True


def fold_input_conversion(path: str | Path, sample: np.ndarray | None = None) -> bool:
    """Let the first convolution of a quantized net read the uint8 BGR input directly.

    Export makes ``permute -> BGR to RGB -> float -> * 1/255``; quantization then wraps that in
    Quantize/Dequantize pairs whose scales are exactly 1 and 1/255 with zero points 0, so the
    uint8 pixel already *is* the quantized input of the first convolution. Dropping the chain
    (its channel order moved into the convolution's weights) removes four full-frame passes
    (about 2 ms of the localizer's 12, and lets onnxruntime run the first convolution on the
    NHWC input with no transpose). The rewrite is exact but for the order of the float sums
    over the three colour channels: checked on ``sample`` by ``_Graph.save_if_unchanged`` (a
    sum's last bit may move an activation by one int8 step; a wrong rewrite changes them by
    about their spread; fully optimized, the int8 convolutions of both graphs saturate on CPUs
    without VNNI, each in its own way), and the file is only rewritten when it passes.
    Returns whether it was."""
    import onnx
    from onnx import helper
    from onnx import numpy_helper as nh

    path = Path(path)
    graph = _Graph(onnx.load(str(path)))
    g, const = graph.graph, graph.const
    found = graph.chain(
        "Transpose", "Gather", "Cast", "QuantizeLinear", "DequantizeLinear", "Mul",
        "QuantizeLinear", "DequantizeLinear", "Conv",
    )  # fmt: skip
    if found is None:
        return False
    transpose, gather, cast, q1, d1, mul, q2, d2, conv = found
    factor = graph.producer.get(mul.input[1])  # the 1/255 constant, itself stored quantized
    if factor is None or factor.op_type != "DequantizeLinear":
        return False
    # every number the rewrite relies on must be a stored constant (else: leave the net alone)
    values = [const(name) for name in (*factor.input[:2], gather.input[1], *q1.input[1:3])]
    values += [const(name) for name in q2.input[1:3]]
    if any(v is None for v in values):
        return False
    factor_q, factor_scale, order, q1_scale, q1_zero, q2_scale, q2_zero = values
    scale = float(factor_q.astype(np.float64) * factor_scale)
    if (
        sorted(order.tolist()) != [0, 1, 2]
        or float(q1_scale) != 1.0
        or int(q1_zero) != 0
        or not np.isclose(float(q2_scale), scale, rtol=1e-6)
        or int(q2_zero) != 0
    ):
        return False
    weights = graph.inits[graph.producer[conv.input[1]].input[0]]
    w = nh.to_array(weights)
    weights.CopyFrom(nh.from_array(np.ascontiguousarray(w[:, order]), weights.name))
    g.initializer.extend(
        [
            nh.from_array(np.float32(q2_scale), "input_scale"),
            nh.from_array(np.uint8(0), "input_zero_point"),
        ]
    )
    dequantize = helper.make_node(
        "DequantizeLinear",
        [transpose.output[0], "input_scale", "input_zero_point"],
        ["input_dequantized"],
        name="input_dequantize",
    )
    conv.input[0] = "input_dequantized"
    graph.replace_nodes([gather, cast, q1, d1, mul, q2, d2], [dequantize], after=transpose)
    return graph.save_if_unchanged(path, sample)


def fold_float_input_conversion(path: str | Path, sample: np.ndarray | None = None) -> bool:
    """The float nets' counterpart of ``fold_input_conversion``: ``permute -> BGR to RGB ->
    float -> * 1/255 -> first convolution`` becomes ``permute -> float -> convolution``, the
    channel order and the 1/255 moved into the convolution's weights. Two full-frame passes
    fewer (about 0.6 ms of the float localizer's 19 on 2 cores). Exact but for float rounding,
    checked like the int8 fold; returns whether the file was rewritten."""
    import onnx
    from onnx import numpy_helper as nh

    path = Path(path)
    graph = _Graph(onnx.load(str(path)))
    found = graph.chain("Transpose", "Gather", "Cast", "Mul", "Conv")
    if found is None:
        return False
    transpose, gather, cast, mul, conv = found
    order, factor = graph.const(gather.input[1]), graph.const(mul.input[1])
    if (
        order is None
        or factor is None
        or factor.size != 1
        or sorted(order.tolist()) != [0, 1, 2]
        or conv.input[1] not in graph.inits
    ):
        return False
    weights = graph.inits[conv.input[1]]
    w = nh.to_array(weights)
    if w.ndim != 4 or w.shape[1] != 3:
        return False
    folded = np.empty_like(w)
    folded[:, order] = w * np.float32(factor.reshape(()))
    weights.CopyFrom(nh.from_array(folded, weights.name))
    cast.input[0] = transpose.output[0]
    conv.input[0] = cast.output[0]
    graph.replace_nodes([gather, mul])
    return graph.save_if_unchanged(path, sample)


def _metadata(loc_name, cls_name, st: Settings, training: dict) -> dict:
    return {
        "format": "hanafuda-companion recognizer 1",
        "classes": list(CLASSES),
        "classifier_outputs": [*CLASSES, "none"],
        "localizer": loc_name,
        "classifier": cls_name,
        "settings": st.to_dict(),
        "training": training,
        "metrics": {},
    }

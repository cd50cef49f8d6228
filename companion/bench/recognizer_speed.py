"""The speed benchmark (``companion bench``): the full pass over a fixed set of rendered table
frames of the held-out deck, timed next to a YOLO11n-shaped yardstick net on the same frames,
the same CPU and in the same run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from companion.recognizer.detector import Recognizer
from companion.recognizer.nets import MODELS_DIR, cpu_name, cpuinfo_text, int8_is_fast, open_session
from companion.simulator import synth

YARDSTICK = MODELS_DIR / "yolo11n_yardstick.onnx"
YARDSTICK_SIDE = 640  # the yardstick's input: a frame letterboxed to 640x640, as YOLO11n's
BENCH_DECK = "traditional-scan"  # the deck the committed model never trained on
BENCH_SEED = 68  # the set's seed: scenes synth.scene_seed(BENCH_SEED, i), i < BENCH_SCENES
BENCH_SCENES = 40


def bench_scene(width: int = 1280, height: int = 720) -> tuple[np.ndarray, int]:
    """A realistic table frame: the first synth scene (seed 1, 2, ...) with 20+ labelled cards."""
    config = synth.SceneConfig(width=width, height=height)
    for seed in range(1, 200):
        scene = synth.render_scene(seed, config)
        if len(scene.labels) >= 20:
            return scene.image, len(scene.labels)
    return scene.image, len(scene.labels)


def bench_frames(
    n: int = BENCH_SCENES,
    seed: int = BENCH_SEED,
    deck: str = BENCH_DECK,
    width: int = 1280,
    height: int = 720,
) -> list[np.ndarray]:
    """The fixed benchmark set: scenes ``synth.scene_seed(seed, i)`` for i < n of one deck (a
    folder, or a deck name in ../shared/decks), rendered at ``width`` x ``height``."""
    config = synth.SceneConfig(width=width, height=height, decks=(synth.resolve_deck_dir(deck),))
    return [synth.render_scene(synth.scene_seed(seed, i), config).image for i in range(n)]


def yardstick_input(frame: np.ndarray, side: int = YARDSTICK_SIDE) -> np.ndarray:
    """A frame as the yardstick reads it: letterboxed into side x side (grey padding, as YOLO's
    preprocessing), RGB float NCHW in 0..1. Its cost is not timed: only the net is."""
    import cv2

    h, w = frame.shape[:2]
    scale = side / max(h, w)
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    boxed = np.full((side, side, 3), 114, np.uint8)
    boxed[:nh, :nw] = cv2.resize(frame, (nw, nh), interpolation=cv2.INTER_LINEAR)
    return np.ascontiguousarray(boxed[None, ..., ::-1].transpose(0, 3, 1, 2), np.float32) / 255


@dataclass(frozen=True)
class BenchReport:
    """What ``benchmark`` timed (``companion bench``); ``to_dict`` is ``companion bench
    --json``, key for key, with the set's own description (``scene``) after the timings."""

    ms_median: float
    ms_p95: float
    runs: int
    frames: int  # distinct frames timed
    threads: int
    frame: str  # the frames' sizes, "1280x720"
    cards_detected: int  # over the distinct frames timed
    cards_per_frame: float
    nets: str  # int8, float or avx2
    # the ratio to the yardstick depends on the CPU kind far more than on the run: say which
    cpu: str
    int8_dot_products: bool
    yolo11n_ms_median: float | None
    load_average_1min: float
    scene: dict = field(default_factory=dict)  # scenes, seed, deck, looks, named_by_deck
    # with a taught deck (``taught_deck_costs``): the same look naming by the classifier
    # alone, timed alternately, and what the deck's own points cost
    taught: dict | None = None

    @property
    def speedup_vs_yolo11n(self) -> float | None:
        if self.yolo11n_ms_median is None:
            return None
        return round(self.yolo11n_ms_median / self.ms_median, 2)

    def to_dict(self) -> dict:
        data = {
            "ms_median": self.ms_median,
            "ms_p95": self.ms_p95,
            "runs": self.runs,
            "frames": self.frames,
            "threads": self.threads,
            "frame": self.frame,
            "cards_detected": self.cards_detected,
            "cards_per_frame": self.cards_per_frame,
            "nets": self.nets,
            "cpu": self.cpu,
            "int8_dot_products": self.int8_dot_products,
            "yolo11n_ms_median": self.yolo11n_ms_median,
            "load_average_1min": self.load_average_1min,
        }
        if self.yolo11n_ms_median is not None:
            data["speedup_vs_yolo11n"] = self.speedup_vs_yolo11n
        return data | (self.taught or {}) | self.scene


def benchmark(
    recognizer: Recognizer,
    frames,
    runs: int | None = None,
    yardstick: str | Path | None = YARDSTICK,
    threads: int = 2,
    warmup: int = 3,
) -> BenchReport:
    """Median/p95 ms of ``detect`` over ``frames`` (one frame, or a list: the fixed set), and
    the YOLO11n-shaped yardstick's median on the same frames.

    ``runs`` timed frames, cycling through the set (default: each frame once). The two are
    timed alternately on each frame (one detect, then one yardstick run, ...), so a load
    change on a shared machine hits both alike and their ratio stays meaningful.
    """
    import os
    import time

    if isinstance(frames, np.ndarray):
        frames = [frames]
    frames = list(frames)
    runs = len(frames) if runs is None else runs
    sess, name, inputs = None, None, []
    if yardstick and Path(yardstick).is_file():
        sess = open_session(Path(yardstick), threads)
        name = sess.get_inputs()[0].name
        inputs = [yardstick_input(f) for f in frames]
    # with a taught deck: a look as the camera takes it (its cards checked by their points
    # only as each settles), beside the same look naming by the classifier alone
    namer, verify = recognizer.namer, recognizer.verify
    recognizer.verify = False
    times, ytimes, known, cards = [], [], [], {}
    try:
        for k in range(warmup):
            recognizer.detect(frames[k % len(frames)])
            if sess:
                sess.run(None, {name: inputs[k % len(frames)]})
        for k in range(runs):
            i = k % len(frames)
            t0 = time.perf_counter()
            det = recognizer.detect(frames[i])
            times.append((time.perf_counter() - t0) * 1000)
            cards[i] = len(det)
            if namer is not None:
                recognizer.namer = None
                t0 = time.perf_counter()
                recognizer.detect(frames[i])
                known.append((time.perf_counter() - t0) * 1000)
                recognizer.namer = namer
            if sess:
                t0 = time.perf_counter()
                sess.run(None, {name: inputs[i]})
                ytimes.append((time.perf_counter() - t0) * 1000)
    finally:
        recognizer.namer, recognizer.verify = namer, verify
    taught = None
    if namer is not None:
        taught = {
            "known_deck_ms_median": round(float(np.median(known)), 2),
            "taught_over_known": round(float(np.median(times) / np.median(known)), 2),
        } | taught_deck_costs(recognizer, frames[:PHOTO_FRAMES])
    cpuinfo = cpuinfo_text()
    shapes = sorted({f"{f.shape[1]}x{f.shape[0]}" for f in frames})
    return BenchReport(
        ms_median=round(float(np.median(times)), 2),
        ms_p95=round(float(np.percentile(times, 95)), 2),
        runs=runs,
        frames=min(runs, len(frames)),
        threads=threads,
        frame=",".join(shapes),
        cards_detected=int(sum(cards.values())),
        cards_per_frame=round(sum(cards.values()) / len(cards), 2),
        nets=recognizer.nets,
        cpu=cpu_name(cpuinfo),
        int8_dot_products=int8_is_fast(cpuinfo),
        yolo11n_ms_median=round(float(np.median(ytimes)), 2) if ytimes else None,
        load_average_1min=round(os.getloadavg()[0], 2),
        taught=taught,
    )


PHOTO_FRAMES = 10  # frames a taught deck's whole-frame check (detect on a photo) is timed on


def taught_deck_costs(recognizer: Recognizer, frames: list[np.ndarray]) -> dict:
    """What a taught deck's own points cost (``keypoints``): ``settle_check_ms_median``, one
    card checked as it settles (``Recognizer.verify_quad``, over the face-up cards found in
    ``frames`` long enough to be checked: ``settle_checks``), and ``photo_ms_median``, a whole
    frame read with every card checked (``detect`` on a photo). Nothing for a deck without
    points."""
    import time

    from companion.detections import BACK_ID
    from companion.recognizer.keypoints import MIN_VERIFY_PX, long_side

    if getattr(recognizer.namer, "verifier", None) is None:
        return {}
    verify = recognizer.verify
    checks, photos = [], []
    try:
        for frame in frames:
            recognizer.verify = True
            t0 = time.perf_counter()
            det = recognizer.detect(frame)
            photos.append((time.perf_counter() - t0) * 1000)
            for quad in det.quads[det.class_ids != BACK_ID]:
                if long_side(quad) < MIN_VERIFY_PX:
                    continue
                t0 = time.perf_counter()
                recognizer.verify_quad(frame, quad)
                checks.append((time.perf_counter() - t0) * 1000)
    finally:
        recognizer.verify = verify
    return {
        "settle_check_ms_median": round(float(np.median(checks)), 2) if checks else None,
        "settle_checks": len(checks),
        "photo_ms_median": round(float(np.median(photos)), 2) if photos else None,
    }

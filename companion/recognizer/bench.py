"""The speed benchmark (``companion bench``): the full pass on a realistic frame, timed next to
a YOLO11n-shaped yardstick net on the same CPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from companion.recognizer.detector import Recognizer
from companion.recognizer.nets import MODELS_DIR, cpu_name, cpuinfo_text, int8_is_fast, open_session

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
        sess = open_session(Path(yardstick), threads)
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
    cpuinfo = cpuinfo_text()
    result = {
        "ms_median": round(float(np.median(times)), 2),
        "ms_p95": round(float(np.percentile(times, 95)), 2),
        "runs": runs,
        "threads": threads,
        "frame": f"{frame.shape[1]}x{frame.shape[0]}",
        "cards_detected": len(det),
        "nets": recognizer.nets,  # int8, float or avx2
        # the ratio to the yardstick depends on the CPU kind far more than on the run: say
        # which kind this was
        "cpu": cpu_name(cpuinfo),
        "int8_dot_products": int8_is_fast(cpuinfo),
        "yolo11n_ms_median": round(float(np.median(ytimes)), 2) if ytimes else None,
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    if ytimes:
        result["speedup_vs_yolo11n"] = round(result["yolo11n_ms_median"] / result["ms_median"], 2)
    return result

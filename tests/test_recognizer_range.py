"""Recognition at any distance and on any deck (issue 68): the fixed benchmark set, close-ups,
portrait and high-resolution frames built from the reference decks at test time, and decks
added by the user."""

from __future__ import annotations

import numpy as np
import pytest

from companion.recognizer import DEFAULT_MODEL, Recognizer

needs_model = pytest.mark.skipif(not DEFAULT_MODEL.is_file(), reason="no committed model")


def test_bench_frames_are_a_fixed_set_of_the_held_out_deck():
    from companion.recognizer.bench import bench_frames

    first = bench_frames(3)
    again = bench_frames(3)
    assert len(first) == 3 and all(f.shape == (720, 1280, 3) for f in first)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not np.array_equal(first[0], first[1])  # distinct scenes, not one frame thrice
    other = bench_frames(1, seed=69)
    assert not np.array_equal(first[0], other[0])


@needs_model
def test_benchmark_times_the_yardstick_on_the_same_frames():
    from companion.recognizer.bench import bench_frames, benchmark, yardstick_input

    frames = bench_frames(3)
    result = benchmark(Recognizer.load(), frames, runs=6, warmup=1)
    assert (result["runs"], result["frames"], result["frame"]) == (6, 3, "1280x720")
    assert result["ms_median"] > 0 and result["yolo11n_ms_median"] > 0
    x = yardstick_input(frames[0])
    assert x.shape == (1, 3, 640, 640) and x.dtype == np.float32
    # the frame, not noise: the padded rows below a 16:9 frame are grey 114
    assert np.allclose(x[0, :, 400:], 114 / 255) and x[0, :, :300].std() > 0.02

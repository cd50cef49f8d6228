"""A recorded table replayed with restarts: what a ``kill -9`` costs the tally.

    report = replay_with_restarts("table.mp4", detector, truth=truth, restarts=[420])

The pipeline (with everything it remembers: tracks, registered captures, the decider's
clocks) is thrown away at each restart frame and a new one is started on the same store,
as a restarted ``companion run`` would be. ``from_start=False``: the new pipeline goes on
from the restart frame, the cards lying as they were (a camera's process killed and started
again; its frame clock starts again from 0). ``from_start=True``: it plays the video again
from its first frame (``companion run --video`` started again), so every capture already
recorded is laid again in front of it. The report is ``replay_video``'s, scored against the
truth the same way: a capture recorded twice, lost or invented shows in ``captures_added``,
``captures_missed`` and ``captures_misnamed``.
"""

from __future__ import annotations

import time

from companion.bench.replay import (
    ReplayReport,
    _Answers,
    _compare,
    _replayed_match,
    _rounds,
    answer_as_the_truth_did,
)
from companion.game.engine import apply
from companion.live.pipeline import LivePipeline
from companion.live.sources import Frame, VideoFileSource
from companion.live.zones import Zones
from companion.store import MatchStore


def _answers_left(truth, store, match_id, done_until: int, taps: str = "truth") -> _Answers:
    """The tablet's taps still to come: the Koi/Stop answers the store does not hold yet, the
    declarations and redeals after the frames already played."""
    answers = _Answers(truth, taps)
    state = None
    for stored in store.events(match_id):
        before = state
        state = apply(state, stored.event)
        if stored.event.type in ("koi_called", "stop_called"):
            key = (before.round_number, stored.event.player)
            for i, d in enumerate(answers.left):
                if (d.get("round"), d.get("player")) == key:
                    del answers.left[i]
                    break
            answers.answered(*key)
    answers.taps = [(f, e) for f, e in answers.taps if f > done_until]
    return answers


def replay_with_restarts(
    video,
    detector,
    *,
    truth: dict | None = None,
    restarts=(),
    from_start: bool = False,
    zones: Zones | None = None,
    store: MatchStore | None = None,
    taps: str = "truth",
    on_end=None,
) -> ReplayReport:
    """Replay ``video`` through a new pipeline after each frame of ``restarts`` (see the
    module docstring); the match lives in ``store`` (in memory by default).
    ``on_end(pipeline, store, match_id)`` is called once the video has played."""
    zones, store, match_id = _replayed_match(truth, zones, store)
    cuts = sorted(int(k) for k in restarts)
    report = ReplayReport(truth=truth is not None)
    event_ms: dict[int, float] = {}
    records = []
    pipeline = None
    played_until = -1  # the last frame a pipeline has seen (video numbering)
    start = time.perf_counter()
    for run, stop in enumerate([*cuts, None]):
        first = 0 if (from_start or run == 0) else cuts[run - 1]
        pipeline = LivePipeline(detector, zones, store, match_id)
        answers = _answers_left(truth, store, match_id, played_until, taps)
        source = VideoFileSource(video)
        report.fps_video = source.fps
        with source:
            for frame in source:
                if stop is not None and frame.index >= stop:
                    break
                if frame.index < first:
                    continue
                # a restarted process's clock starts again from 0
                local = Frame(frame.image, frame.index - first, (frame.index - first) / source.fps)
                t0 = time.perf_counter()
                appended = pipeline.process(local)
                appended += answer_as_the_truth_did(
                    answers, store, match_id, frame.index, source.fps, pipeline
                )
                ms = (time.perf_counter() - t0) * 1000
                report.frame_ms.append(ms)
                if appended:
                    event_ms[frame.index] = ms
                played_until = max(played_until, frame.index)
        for record in pipeline.captures:  # back to the video's numbering
            record.steady_frame += first
            record.event_frame += first
        records += pipeline.captures
        report.frames += pipeline.frames
        report.detected_frames += pipeline.detected_frames
        report.recognised += len(pipeline.recognised)
        report.asked += pipeline.asked
    report.seconds = time.perf_counter() - start
    if on_end is not None:
        on_end(pipeline, store, match_id)
    pipeline.captures = records
    _rounds(report, store, match_id, pipeline)
    if truth:
        _compare(report, truth, pipeline, event_ms)
    report.restarts = cuts
    return report

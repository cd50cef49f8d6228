"""The pipeline keeps time in seconds: how often it looks, how long a card settles, whatever
the camera's frame rate; and how far behind a camera a pipeline falls."""

from __future__ import annotations

import numpy as np
import pytest
from test_live import DEAL, FIELD_SPOTS, ZONES, ScriptedDetector, quad

from companion.bench.replay import behind_real_time
from companion.live.pipeline import LivePipeline
from companion.live.sources import Frame
from companion.store import MatchStore


class Camera:
    """A table filmed at ``fps``: the dealt field, an arm that sweeps while ``arm`` is set,
    cards laid in A's capture area."""

    def __init__(self, fps):
        self.fps = fps
        self.store = MatchStore.open(":memory:")
        self.match_id = self.store.create_match(
            players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki"
        )
        self.detector = ScriptedDetector()
        self.pipeline = LivePipeline(self.detector, ZONES, self.store, self.match_id)
        self.cards = dict(zip(DEAL, FIELD_SPOTS, strict=True))
        self.readings: dict = {}  # code -> (confidence, alternatives) other than a sure look
        self.index = 0
        self.arm = False
        self.run(2.5)
        assert self.store.state(self.match_id).round_in_progress

    @property
    def now(self):
        return self.index / self.fps

    def run(self, seconds):
        for _ in range(round(seconds * self.fps)):
            image = np.zeros((720, 1280, 3), np.uint8)
            for x, y in self.cards.values():
                q = np.array(quad(x, y), np.int32)
                image[q[:, 1].min() : q[:, 1].max(), q[:, 0].min() : q[:, 0].max()] = 150
            if self.arm:  # sweeping over the top of the frame, away from every card
                x = int(100 + (self.now * 900) % 900)
                image[0:30, x : x + 200] = 255
            self.detector.looks = [
                (c, xy, *self.readings.get(c, (0.95, ()))) for c, xy in self.cards.items()
            ]
            self.pipeline.process(Frame(image, self.index, self.now))
            self.index += 1

    def looks_during(self, seconds):
        before = self.detector.calls
        self.run(seconds)
        return self.detector.calls - before


@pytest.mark.parametrize("fps", [10, 30])
def test_the_detector_looks_at_most_12_times_a_second_while_something_moves(fps):
    cam = Camera(fps)
    cam.arm = True
    looks = cam.looks_during(3.0)
    assert 3.0 * 9 <= looks <= 3.0 * 12.5 + 1
    cam.arm = False
    settling = cam.looks_during(0.7)  # it keeps looking a moment after motion stops
    assert 5 <= settling <= 0.7 * 12.5 + 1
    assert cam.looks_during(3.0) <= 4  # then about once a second


def _capture_delay(fps, readings=None):
    """Seconds from a pair landing in A's capture area to its first capture event."""
    cam = Camera(fps)
    cam.readings = readings or {}
    cam.cards.pop("08-3")
    cam.cards["08-1"] = (300, 620)
    cam.cards["08-3"] = (330, 620)
    landed = cam.now
    while not cam.pipeline.captures and cam.now < landed + 3:
        cam.run(1 / fps)
    assert sorted(r.card for r in cam.pipeline.captures) == ["08-1", "08-3"]
    return cam.pipeline.captures[0].event_time - landed


@pytest.mark.parametrize("fps", [10, 30])
def test_a_sure_card_is_decided_on_the_look_it_settles_at_any_frame_rate(fps):
    # seen in 3 looks over 0.2 s (lying still), decided on that look
    assert 0.15 <= _capture_delay(fps) <= 0.3


@pytest.mark.parametrize("fps", [10, 30])
def test_a_doubtful_card_is_looked_at_once_more_before_it_is_decided(fps):
    doubtful = (0.5, (("09-1", 0.4),))
    delay = _capture_delay(fps, {"08-1": doubtful, "08-3": doubtful})
    # seen in 3 looks over 0.2 s, then one more quiet look
    assert 0.25 <= delay <= 0.45


def test_behind_real_time_queues_the_frames_a_slow_pipeline_has_not_taken_yet():
    assert behind_real_time([10.0] * 30, 30) == pytest.approx(0.010)
    # a 0.5 s look, then quick frames at 10 fps: 0.5 s behind, caught up by 0.1 s a frame
    assert behind_real_time([500.0] + [5.0] * 9, 10) == pytest.approx(0.5)
    # every frame at 40 ms at 30 fps: 6.7 ms more behind each frame
    assert behind_real_time([40.0] * 31, 30) == pytest.approx(0.04 + 30 * (0.04 - 1 / 30))


def test_taking_the_newest_frame_keeps_a_slow_pipeline_one_frame_behind():
    from companion.bench.replay import behind_newest_first

    # every frame at 40 ms at 30 fps: queued, it falls further behind each frame; taking the
    # newest, it is never more than one frame's work (and the frame it waited for) behind
    assert behind_newest_first([40.0] * 300, 30) == pytest.approx(0.04 + 1 / 30)
    assert behind_real_time([40.0] * 300, 30) > 1.9
    # a 0.5 s look: 0.5 s behind once, and the next frame taken is that of its end
    assert behind_newest_first([500.0] + [5.0] * 20, 10) == pytest.approx(0.5)
    assert behind_newest_first([10.0] * 30, 30) == pytest.approx(0.010)


def test_a_recording_played_in_real_time_drops_the_frames_it_is_too_late_for(tmp_path):
    import cv2

    from companion.live.session import BEHIND_AT_MOST, LiveSession
    from companion.live.sources import VideoFileSource

    path = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30, (64, 36))
    for i in range(30):
        writer.write(np.full((36, 64, 3), i * 8, np.uint8))
    writer.release()
    source = VideoFileSource(path)
    session = LiveSession(source, ScriptedDetector(), MatchStore.open(":memory:"))
    assert source.read().index == 0
    session._catch_up(0.5)  # the first frame took half a second
    assert session.skipped == round((0.5 - BEHIND_AT_MOST) * 30)
    frame = source.read()
    assert frame.index == 1 + session.skipped and frame.time == pytest.approx(frame.index / 30)
    session._catch_up(10.0)  # far behind: to the end, no further
    assert source.read() is None and source.state == "ended"


def test_a_replay_names_the_captures_slower_than_3_s_to_their_event():
    from types import SimpleNamespace

    from companion.bench.replay import ReplayReport, _compare
    from companion.live.pipeline import CaptureRecord

    truth = {
        "rounds": [{"round": 1, "first_frame": 0, "captures": {"A": ["08-1", "08-3"]}}],
        "events": [
            {"frame": 50, "steady_frame": 40, "event": {"type": "card_captured", "player": "A",
                                                        "card": "08-1"}},
            {"frame": 50, "steady_frame": 42, "event": {"type": "card_captured", "player": "A",
                                                        "card": "08-3"}},
        ],
    }  # fmt: skip
    records = [
        CaptureRecord("A", "08-1", 3, 40, 43, 4.3, False, round=1),  # 0.3 s
        CaptureRecord("A", "08-3", 4, 42, 80, 8.0, False, round=1),  # 3.8 s: a hand over it
    ]
    report = ReplayReport(truth=True, fps_video=10.0)
    _compare(report, truth, SimpleNamespace(captures=records), {43: 20.0, 80: 20.0})
    assert report.steady_to_event_frames == [3, 38]
    assert report.to_dict()["slow_captures"] == [
        {"round": 1, "player": "A", "card": "08-3", "seconds": 3.8, "reason": None}
    ]
    assert report.to_dict()["slow_captures_unexplained"] == 1


def test_a_slow_capture_is_explained_by_what_the_tablet_said_while_it_waited():
    from types import SimpleNamespace

    from companion.bench.replay import ReplayReport, _compare
    from companion.live.pipeline import CaptureRecord

    truth = {
        "rounds": [{"round": 1, "first_frame": 0, "captures": {"A": ["08-1"], "B": ["09-1"]}}],
        "events": [
            {"frame": 50, "steady_frame": 10, "event": {"type": "card_captured", "player": "A",
                                                        "card": "08-1"}},
            {"frame": 50, "steady_frame": 10, "event": {"type": "card_captured", "player": "B",
                                                        "card": "09-1"}},
        ],
    }  # fmt: skip

    def replayed(said, check=False):
        records = [
            CaptureRecord("A", "08-1", 3, 10, 60, 6.0, check, round=1),
            CaptureRecord("B", "09-1", 4, 10, 60, 6.0, False, round=1),
        ]
        report = ReplayReport(truth=True, fps_video=10.0, unread_shown=said)
        _compare(report, truth, SimpleNamespace(captures=records), {})
        return {c["player"]: c["reason"] for c in report.to_dict()["slow_captures"]}

    # said of A while A's card waited: A's wait is explained, B's is not
    assert replayed([(45, "A", "camera.capture_unread")]) == {
        "A": "camera.capture_unread",
        "B": None,
    }
    # said before the card lay still, or after its event: it explains nothing
    assert replayed([(5, "A", "camera.capture_unread"), (61, "A", "x")]) == {"A": None, "B": None}
    assert replayed([], check=True) == {"A": "check", "B": None}

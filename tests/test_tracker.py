"""The tracker's parts on their own: a track's phases, the settings, the table snapshot."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
from collections import deque

import numpy as np
import pytest
from test_live import FakeFrame

from companion import CompanionError
from companion.detections import Detections, class_id
from companion.live import tracker as tracker_module
from companion.live.settings import TrackerSettings
from companion.live.tracker import (
    IllegalTransition,
    TableState,
    TableTracker,
    Track,
    TrackState,
)
from companion.live.zones import default_zones

ZONES = default_zones(2)


def new_track() -> Track:
    quad = np.array([[0, 0], [62, 0], [62, 100], [0, 100]], np.float32)
    return Track(1, quad, None, 1, quad.mean(axis=0), deque(maxlen=5), deque(maxlen=10))


# -- a track's life ---------------------------------------------------------------------------


def test_a_track_lives_through_its_phases_in_order():
    track = new_track()
    assert track.state is TrackState.ARRIVING
    track.settle(3, 0.3)
    assert track.state is TrackState.SETTLED and track.steady_since == 3
    track.unsettle()  # stirred before it was decided
    assert track.state is TrackState.ARRIVING and track.steady_since is None
    track.settle(5, 0.5)
    track.record("A", "08-3")
    assert track.state is TrackState.RECORDED and (track.seat, track.recorded_code) == ("A", "08-3")
    track.rename("08-4")
    assert track.state is TrackState.RECORDED and track.recorded_code == "08-4"
    track.remove()
    assert track.state is TrackState.REMOVED and track.state.removed and track.state.captured
    track.end(in_sight=True)
    assert track.state is TrackState.ENDED_REMOVED and track.recorded_code is None
    track.end(in_sight=False)  # the round ended again while it waits: it stays removed
    assert track.state is TrackState.ENDED_REMOVED and not track.in_sight


@pytest.mark.parametrize(
    "path, move",
    [
        ((), lambda t: t.record("A", "01-1")),  # a card still arriving is not a capture
        ((), lambda t: t.unsettle()),
        (("settle",), lambda t: t.settle(4, 0.4)),
        (("settle",), lambda t: t.remove()),  # only a capture is removed
        (("settle",), lambda t: t.rename("01-3")),
        (("settle", "record"), lambda t: t.settle(4, 0.4)),
        (("settle", "record"), lambda t: t.unsettle()),  # a capture's code is fixed
        (("settle", "record", "remove"), lambda t: t.record("A", "01-1")),
        (("end",), lambda t: t.settle(4, 0.4)),  # an ended round's card never settles again
        (("end",), lambda t: t.remove()),
    ],
)
def test_a_track_refuses_a_move_its_phase_does_not_lead_to(path, move):
    track = new_track()
    steps = {
        "settle": lambda t: t.settle(2, 0.2),
        "record": lambda t: t.record("A", "01-1"),
        "remove": lambda t: t.remove(),
        "end": lambda t: t.end(in_sight=True),
    }
    for step in path:
        steps[step](track)
    before = track.state
    with pytest.raises(IllegalTransition):
        move(track)
    assert track.state is before


def test_the_tracker_registers_and_forgets_through_the_transitions():
    tracker = TableTracker(ZONES)
    track = new_track()
    tracker.tracks[track.id] = track
    assert not tracker.register(track.id, "A", "01-1")  # not steady yet
    assert track.state is TrackState.ARRIVING and tracker.registered() == {}
    track.settle(1, 0.1)
    assert tracker.register(track.id, "A", "01-1")
    assert tracker.registered() == {"01-1": track}
    assert tracker.rename("01-1", "01-2") and tracker.registered() == {"01-2": track}
    assert tracker.forget("01-2") and tracker.registered() == {}
    assert track.state is TrackState.REMOVED
    tracker.end_round()
    assert track.state is TrackState.ENDED_REMOVED


def test_registering_a_card_no_longer_of_this_round_changes_nothing():
    # the round ended (and the next began) between the capture's decision and its registering
    tracker = TableTracker(ZONES)
    track = new_track()
    tracker.tracks[track.id] = track
    track.settle(1, 0.1)
    tracker.end_round()
    assert not tracker.register(track.id, "A", "01-1")
    assert track.state is TrackState.ENDED and track.recorded_code is None
    assert tracker.registered() == {}
    # its track gone (the table cleared, another match): nothing to register
    tracker.reset_round()
    assert not tracker.register(track.id, "A", "01-1") and not tracker.adopt(7, "B", "02-1")
    # a card settled later is registered once, in its own place
    later = new_track()
    tracker.tracks[later.id] = later
    later.settle(5, 0.5)
    assert tracker.register(later.id, "B", "03-1") and list(tracker.registered()) == ["03-1"]


# -- settings -------------------------------------------------------------------------------------


def test_every_tracker_setting_says_what_moving_it_trades_in_one_line():
    described = TrackerSettings.describe()
    assert list(described) == [f.name for f in dataclasses.fields(TrackerSettings)]
    for name, why in described.items():
        assert len(why) >= 40 and "\n" not in why, name
    # and the settings are the tracker's: each one is read by the module
    source = inspect.getsource(tracker_module)
    for name in described:
        assert f"s.{name}" in source or f"settings.{name}" in source, name


@pytest.mark.parametrize(
    "change",
    [
        {"window": 0},
        {"steady_looks": 6},  # more than the window
        {"same_card_iou": 1.5},
        {"agree": -0.1},
        {"at_rest": float("nan")},
        {"vanished_at_once": 2.5},
        {"hand_lingers": True},
        {"cleared_share": "a fifth"},
    ],
)
def test_a_tracker_setting_out_of_range_is_refused_in_one_sentence(change):
    with pytest.raises(CompanionError) as refused:
        TrackerSettings(**change)
    message = str(refused.value)
    assert message.startswith("The tracker's ") and message.count(". ") == 0
    assert message.endswith(".")


def test_the_tracker_decides_by_its_settings():
    """A card seen once settles at once when the settings ask one still look of it."""

    def field_after(settings: TrackerSettings | None, looks: int) -> tuple:
        tracker = TableTracker(ZONES) if settings is None else TableTracker(ZONES, settings)
        quad = [[460, 375], [516, 375], [516, 465], [460, 465]]
        det = Detections(
            quads=np.array([quad], np.float32),
            class_ids=np.array([class_id("08-1")]),
            confidence=np.array([0.95], np.float32),
        )
        state = None
        for i in range(looks):
            state = tracker.update(det, FakeFrame(i, i / 10))
        return state.field

    assert field_after(None, 1) == () and field_after(None, 3) == ("08-1",)
    assert field_after(TrackerSettings(steady_looks=1, at_rest=0.0), 1) == ("08-1",)


def test_no_tuning_number_is_left_inline_in_the_tracker():
    """Numbers in the tracker's code (outside TrackerSettings) are 0, 1, 2 (counts, "twice
    the window") or indices, never a threshold."""
    tree = ast.parse(inspect.getsource(tracker_module))
    inline = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TrackerSettings":
            continue
        # a subscript's index (a quad's corner q[3]) is no tuning
        indices = {id(sub.slice) for sub in ast.walk(node) if isinstance(sub, ast.Subscript)}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and type(sub.value) in (int, float):
                if sub.value not in (0, 1, 2) and id(sub) not in indices:
                    inline.append((sub.lineno, sub.value))
    assert inline == []


# -- the table --------------------------------------------------------------------------------


def test_the_table_state_is_a_snapshot():
    table = TableState(field=["01-1"], captures={"A": ["08-1"]}, arrivals={"A": [], "B": []})
    assert table.field == ("01-1",) and table.captures == {"A": ("08-1",)}
    assert table.arrivals == {"A": (), "B": ()}
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.field = ()
    changed = dataclasses.replace(table, field=())
    assert changed.field == () and table.field == ("01-1",)


def test_a_settled_card_is_read_again_once_and_that_reading_outweighs_the_looks():
    """A taught deck's second reading (``verify``: its own points) is asked once, when the
    card settles; it names the card against looks that keep misreading it, and is asked
    again only once the card has been carried and settles elsewhere."""
    asked = []

    def verify(image, quad):
        asked.append(np.asarray(quad).mean(axis=0).round().tolist())
        return ("08-1", 0.99)

    def det_at(cx):
        quad = [[cx - 28, 375], [cx + 28, 375], [cx + 28, 465], [cx - 28, 465]]
        return Detections(
            quads=np.array([quad], np.float32),
            class_ids=np.array([class_id("08-2")]),  # the looks misread it as the ribbon
            confidence=np.array([0.9], np.float32),
        )

    image = np.zeros((720, 1280, 3), np.uint8)
    plain, checked = TableTracker(ZONES), TableTracker(ZONES, verify=verify)
    for i in range(6):
        state = plain.update(det_at(488), FakeFrame(i, i / 10, image))
        checked_state = checked.update(det_at(488), FakeFrame(i, i / 10, image))
    assert state.field == ("08-2",)
    assert checked_state.field == ("08-1",) and asked == [[488.0, 420.0]]
    for i in range(6, 14):  # carried to another place of the field, where it settles again
        checked_state = checked.update(det_at(700), FakeFrame(i, i / 10, image))
    assert checked_state.field == ("08-1",) and asked == [[488.0, 420.0], [700.0, 420.0]]


def test_a_second_reading_that_finds_nothing_leaves_the_looks_their_name():
    tracker = TableTracker(ZONES, verify=lambda image, quad: None)
    quad = [[460, 375], [516, 375], [516, 465], [460, 465]]
    det = Detections(
        quads=np.array([quad], np.float32),
        class_ids=np.array([class_id("08-2")]),
        confidence=np.array([0.9], np.float32),
    )
    image = np.zeros((720, 1280, 3), np.uint8)
    for i in range(6):
        state = tracker.update(det, FakeFrame(i, i / 10, image))
    assert state.field == ("08-2",)


def test_a_capture_lying_still_settles_without_a_look_where_nothing_moved_over_it():
    """A card its last look saw lying still in a capture area, surely named, settles on the
    first frame its ``at_rest`` is up when the motion gate saw nothing move over it since
    (``settle_still``): the unchanged picture stands for the look. Motion over it, a doubt
    about its name, or a card not yet at rest wait for the detector's look."""
    quad = [[460, 580], [516, 580], [516, 670], [460, 670]]  # in A's capture area
    det = Detections(
        quads=np.array([quad], np.float32),
        class_ids=np.array([class_id("08-1")]),
        confidence=np.array([0.97], np.float32),
    )
    image = np.zeros((720, 1280, 3), np.uint8)
    still = np.zeros((90, 160), bool)  # the motion gate's picture: nothing moved
    over = still.copy()
    over[78, 61] = True  # one small pixel changed over the card

    def looked_twice(settings=None) -> TableTracker:
        tracker = TableTracker(ZONES, settings or TrackerSettings())
        for i in range(2):  # seen at rest at 0.0 and 0.1 s: at_rest (0.2 s) not up yet
            tracker.update(det, FakeFrame(i, i / 10, image), moving=still)
        assert tracker.state.arrivals["A"] == ()
        return tracker

    tracker = looked_twice()
    assert tracker.settle_still(FakeFrame(2, 0.15, image), still) is None  # not at rest yet
    state = tracker.settle_still(FakeFrame(3, 0.2, image), still)
    assert state is not None and [a.track for a in state.arrivals["A"]] == [1]
    assert state.arrivals["A"][0].quiet_time <= 0.2 and state.frame == 3

    assert looked_twice().settle_still(FakeFrame(3, 0.2, image), over) is None
    doubtful = looked_twice(TrackerSettings(still_sure=1.01))
    assert doubtful.settle_still(FakeFrame(3, 0.2, image), still) is None
    # and the look, when it comes, settles it as ever
    assert doubtful.update(det, FakeFrame(3, 0.2, image), moving=still).arrivals["A"] != ()


def test_a_card_its_points_missed_as_it_settled_is_read_again_a_few_times_apart():
    """The second reading is asked again while the card lies settled and unfound (the hand
    that laid it may have covered it), ``verify_every`` apart and ``verify_tries`` times in
    all; what it finds then names the card. A card never found is asked no more after that."""
    settings = TrackerSettings()
    asked = []

    def verify(image, quad):
        asked.append(len(asked))
        return ("08-1", 0.99) if len(asked) == 3 else None

    det = Detections(
        quads=np.array([[[460, 375], [516, 375], [516, 465], [460, 465]]], np.float32),
        class_ids=np.array([class_id("08-2")]),
        confidence=np.array([0.9], np.float32),
    )
    image = np.zeros((720, 1280, 3), np.uint8)
    tracker = TableTracker(ZONES, settings, verify=verify)
    for i in range(40):
        state = tracker.update(det, FakeFrame(i, i / 10, image))
    assert state.field == ("08-1",) and len(asked) == 3
    never = []
    tracker = TableTracker(ZONES, settings, verify=lambda image, quad: never.append(1))
    times = []
    for i in range(60):
        before = len(never)
        state = tracker.update(det, FakeFrame(i, i / 10, image))
        if len(never) > before:
            times.append(i / 10)
    assert state.field == ("08-2",) and len(never) == settings.verify_tries
    assert all(b - a >= settings.verify_every - 1e-6 for a, b in itertools.pairwise(times))

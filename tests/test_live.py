"""The live pipeline on hand-written detection sequences: no rendering, no model."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from companion import CompanionError
from companion.detections import Detections, class_id
from companion.live import pipeline as pipeline_module
from companion.live.capture_decider import (
    CaptureDecider,
    Decision,
    Reading,
    pairs_up,
    resolve_group,
)
from companion.live.pipeline import LivePipeline
from companion.live.settings import DeciderSettings, PipelineSettings, TrackerSettings
from companion.live.source_state import SourceState
from companion.live.sources import LiveSource, SourceError, open_source
from companion.live.tracker import Arrival, TableTracker
from companion.live.zones import default_zones
from companion.store import MatchStore

W, H = 1280, 720
# A cloth with a weave: an empty table still shows something (an even picture is a lens
# covered, or a dark room, and is not looked at).
_WEAVE = np.random.default_rng(0).integers(40, 80, (H // 16, W // 16)).astype(np.uint8)
TABLE_CLOTH = np.repeat(np.kron(_WEAVE, np.ones((16, 16), np.uint8))[..., None], 3, axis=2)
ZONES = default_zones(2)
FIELD_SPOTS = [(250 + 110 * (i % 4), 300 if i < 4 else 420) for i in range(8)]
DEAL = ["01-1", "02-3", "03-3", "05-1", "06-2", "08-3", "09-4", "11-2"]


@dataclass
class FakeFrame:
    index: int
    time: float
    image: np.ndarray | None = None
    size: tuple = (W, H)


def quad(cx, cy, h=90.0):
    w = h * 0.62
    return [
        [cx - w / 2, cy - h / 2],
        [cx + w / 2, cy - h / 2],
        [cx + w / 2, cy + h / 2],
        [cx - w / 2, cy + h / 2],
    ]


def look(code, x, y, conf=0.95, alts=()):
    """One detection: ``alts`` are (code, score) pairs after the top class."""
    return (code, (x, y), conf, tuple(alts))


def detections(looks) -> Detections:
    looks = list(looks)
    k = 3
    alt_ids = np.zeros((len(looks), k), np.int64)
    alt_scores = np.zeros((len(looks), k), np.float32)
    for i, (_, _, _, alts) in enumerate(looks):
        for j, (code, score) in enumerate(alts[:k]):
            alt_ids[i, j] = class_id(code)
            alt_scores[i, j] = score
    return Detections(
        quads=np.array([quad(*xy) for _, xy, _, _ in looks], np.float32).reshape(-1, 4, 2),
        class_ids=np.array([class_id(c) for c, _, _, _ in looks], np.int64),
        confidence=np.array([c for _, _, c, _ in looks], np.float32),
        alt_ids=alt_ids,
        alt_scores=alt_scores,
    )


class Scene:
    """A table written by hand: cards lying at positions; ``run`` feeds the tracker."""

    def __init__(self, tracker: TableTracker):
        self.tracker = tracker
        self.cards: dict[str, tuple] = {}
        self.index = 0

    def put(self, code, x, y, conf=0.95, alts=()):
        self.cards[code] = look(code, x, y, conf, alts)

    def take(self, *codes):
        for code in codes:
            self.cards.pop(code, None)

    def run(self, frames=1, hide=(), motion=0.0, extra=()):
        state = None
        for _ in range(frames):
            seen = [v for c, v in self.cards.items() if c not in hide] + list(extra)
            frame = FakeFrame(self.index, self.index / 10)
            state = self.tracker.update(detections(seen), frame, motion=motion)
            self.index += 1
        return state


def dealt_scene():
    scene = Scene(TableTracker(ZONES))
    for code, (x, y) in zip(DEAL, FIELD_SPOTS, strict=True):
        scene.put(code, x, y)
    return scene


# -- tracker -----------------------------------------------------------------------------------


def test_a_card_counts_in_a_zone_once_seen_in_most_of_the_window():
    scene = dealt_scene()
    assert scene.run(2).field == ()
    state = scene.run(3)
    assert sorted(state.field) == sorted(DEAL)
    assert state.arrivals == {"A": (), "B": ()}


def test_a_field_card_misread_now_and_then_keeps_its_fused_name():
    scene = dealt_scene()
    scene.run(6)
    for i in range(12):  # every third look calls 08-3 "08-4"
        if i % 3 == 0:
            scene.put("08-3", *FIELD_SPOTS[5], conf=0.55, alts=[("08-3", 0.4)])
            scene.cards["08-3"] = look("08-4", *FIELD_SPOTS[5], 0.55, [("08-3", 0.4)])
        else:
            scene.put("08-3", *FIELD_SPOTS[5])
        state = scene.run()
        assert "08-3" in state.field and "08-4" not in state.field


def test_a_hand_crossing_the_table_adds_and_removes_nothing():
    scene = dealt_scene()
    before = scene.run(6)
    # the hand hides half the field and drags a blur of false cards over the capture area
    blur = [look("07-1", 640, 600, 0.5), look("04-2", 700, 560, 0.45)]
    during = scene.run(4, hide=DEAL[:4], motion=0.08, extra=blur)
    assert sorted(during.field) == sorted(before.field)
    assert during.hand_present
    assert during.arrivals == {"A": (), "B": ()}
    after = scene.run(6)
    assert sorted(after.field) == sorted(DEAL)
    assert not after.hand_present and after.arrivals == {"A": (), "B": ()}


def test_a_sure_card_lying_still_settles_under_a_moving_hand_a_doubtful_one_waits():
    scene = dealt_scene()
    scene.run(6)
    scene.put("08-1", 300, 620)  # laid in A's capture area, read surely
    scene.put("09-1", 420, 620, conf=0.5, alts=[("10-1", 0.4)])  # read doubtfully
    # the hand that laid them moves over them for a second: the sure one lies still and is
    # seen in 3 looks over 0.2 s, so it settles; the doubtful one waits for the hand to go
    states = [scene.run(motion=0.08) for _ in range(10)]
    settled_at = next(i for i, st in enumerate(states) if st.arrivals["A"])
    assert settled_at <= 3
    assert all(
        [a.candidates[0][0] for a in st.arrivals["A"]] == ["08-1"] for st in states[settled_at:]
    )
    after = scene.run(3)
    assert sorted(a.candidates[0][0] for a in after.arrivals["A"]) == ["08-1", "09-1"]
    # a card still moving in the hand settles under no motion however surely it is read
    scene.put("07-1", 500, 620)
    for i in range(10):
        scene.cards["07-1"] = look("07-1", 500 + 20 * i, 620)
        state = scene.run(motion=0.08)
        assert "07-1" not in [a.candidates[0][0] for a in state.arrivals["A"]]


def test_many_steady_cards_vanishing_at_once_count_as_a_hand_even_without_motion():
    scene = dealt_scene()
    scene.run(6)
    during = scene.run(3, hide=DEAL[:5])
    assert during.hand_present
    assert sorted(during.field) == sorted(DEAL)


def test_a_fanned_capture_row_grows_and_covered_cards_stay():
    scene = dealt_scene()
    tracker = scene.tracker
    scene.run(6)
    scene.take("01-1")
    scene.put("01-1", 300, 600)
    scene.put("01-3", 330, 600)
    state = scene.run(6)
    arrivals = {a.candidates[0][0]: a for a in state.arrivals["A"]}
    assert set(arrivals) == {"01-1", "01-3"}
    for code, a in arrivals.items():
        tracker.register(a.track, "A", code)
    # the next card of the row lies a third of a card lower, on top: the two below vanish
    scene.take("01-1", "01-3", "02-3")
    scene.put("02-3", 330, 630)
    scene.put("02-1", 360, 660)
    state = scene.run(6)
    assert state.captures["A"] == ("01-1", "01-3")
    assert sorted(a.candidates[0][0] for a in state.arrivals["A"]) == ["02-1", "02-3"]
    assert state.arrivals["B"] == ()


def test_face_down_cards_are_backs_and_never_arrive():
    scene = dealt_scene()
    backs = [look("back", 1180, 360 + 4 * i, 0.9) for i in range(3)] + [look("back", 600, 650, 0.9)]
    state = scene.run(6, extra=backs)
    assert state.backs == 4
    assert state.arrivals == {"A": (), "B": ()}


def test_a_card_seen_in_two_places_at_once_is_named_once():
    scene = dealt_scene()
    scene.put("03-2", 800, 420, conf=0.6, alts=[("03-3", 0.1)])
    scene.cards["03-2"] = look("03-3", 800, 420, 0.6, [("03-2", 0.35)])
    state = scene.run(6)
    assert state.field.count("03-3") == 1
    assert "03-2" in state.field


def test_a_capture_recorded_under_a_name_its_looks_never_gave_keeps_its_identity():
    scene = dealt_scene()
    tracker = scene.tracker
    scene.run(6)
    scene.take("04-1")
    scene.put("04-1", 900, 620)
    state = scene.run(6)
    (laid,) = state.arrivals["A"]
    # recorded under another name (the pair rule's, its own name taken by a misread before)
    tracker.register(laid.track, "A", "11-2")
    state = scene.run(12)
    # the card goes on reading 04-1 where it lies: the same card, not a new one born on it
    assert state.captures["A"] == ("11-2",)
    assert state.arrivals["A"] == ()
    assert [t.id for t in tracker.tracks.values() if t.zone == "captures_A"] == [laid.track]


# -- capture decisions ---------------------------------------------------------------------


def arrival(track, *candidates, seat="A", since=0):
    return Arrival(track, seat, tuple(candidates), since, np.zeros((4, 2)))


def test_the_pair_rule_settles_a_doubtful_read_from_its_alternatives():
    group = [arrival(1, ("09-1", 0.97)), arrival(2, ("08-3", 0.55), ("09-3", 0.35))]
    (a, b) = resolve_group(group)
    assert a[0] == "09-1" and not a[2]
    assert b[0] == "09-3" and not b[2]
    assert b[3][0] == "08-3"  # the misread stays offered as an alternative


def test_a_capture_whose_months_cannot_pair_is_flagged():
    group = [arrival(1, ("09-1", 0.97)), arrival(2, ("04-3", 0.95), ("04-4", 0.04))]
    readings = resolve_group(group)
    assert [r[0] for r in readings] == ["09-1", "04-3"]
    assert all(r[2] for r in readings)


def test_captured_cards_and_field_cards_shape_the_reading():
    group = [arrival(1, ("05-1", 0.9)), arrival(2, ("05-2", 0.5), ("05-3", 0.45))]
    assert resolve_group(group, owned={"05-2"})[1][0] == "05-3"
    group = [arrival(1, ("05-1", 0.9)), arrival(2, ("05-3", 0.5), ("05-2", 0.45))]
    assert resolve_group(group, field_left={"05-2"})[1][0] == "05-2"


def test_the_fourth_card_of_a_month_takes_three():
    group = [arrival(i, (f"06-{i}", 0.9)) for i in range(1, 5)]
    assert pairs_up([r[0] for r in resolve_group(group)])
    assert not pairs_up(["06-1", "06-2", "06-3"])


# -- the decider's settings ----------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"sure": 1.5},  # a probability above 1
        {"settle_seconds": -0.1},  # a wait before the card settled
        {"partner_wait": float("nan")},
        {"max_combos": 0},  # no reading weighed at all
        {"alternatives": 2.5},  # a count that is not whole
        {"laid_after_stop": True},  # a flag where a count goes
        {"odd_month_odds": 0.5},  # odd months made likelier than pairs
        {"codes_weighed": ((6, 3), (4, 5))},  # group sizes not growing
        {"codes_weighed": ((4, 0),)},  # no code weighed
    ],
)
def test_a_decider_setting_out_of_range_is_refused_in_one_sentence(bad):
    with pytest.raises(CompanionError) as refused:
        DeciderSettings(**bad)
    (name,) = bad
    message = str(refused.value)
    assert name in message and message.endswith(".") and message.count(". ") == 0


def test_every_decider_setting_says_what_moving_it_trades():
    described = DeciderSettings.describe()
    names = [f.name for f in dataclasses.fields(DeciderSettings)]
    assert list(described) == names and len(names) >= 25
    for name, why in described.items():
        # one line: what it is, then what more or less of it costs
        assert why and "\n" not in why and ":" in why, name


def test_the_decider_decides_by_its_settings():
    group = [arrival(1, ("09-1", 0.5), ("08-1", 0.3), ("07-1", 0.1), ("06-1", 0.05))]
    assert len(resolve_group(group)[0][3]) == 3
    assert resolve_group(group, settings=DeciderSettings(alternatives=1))[0][3] == ("08-1",)
    # a doubtful lone card waits for its partner, unless the settings wait for none
    doubtful = arrival(1, ("08-3", 0.5), ("09-3", 0.45))
    match = _started_round()
    seats = {"A": "A", "B": "B"}
    assert CaptureDecider().step(_arrivals_table([doubtful], 10, 1.0), match, seats=seats) == ()
    impatient = CaptureDecider(DeciderSettings(partner_wait=0.0))
    (decided,) = impatient.step(_arrivals_table([doubtful], 10, 1.0), match, seats=seats)
    assert decided.event.card == "08-3" and decided.event.check


def _started_round():
    from companion.game.engine import replay

    return replay(
        [
            {"type": "match_started", "players": ["A", "B"], "rules": "livret", "rounds": 6},
            {"type": "round_started"},
        ]
    )


def _arrivals_table(arrivals, frame, time):
    from companion.live.tracker import TableState

    return TableState(frame=frame, time=time, arrivals={"A": arrivals, "B": []})


# -- the decider's decisions ---------------------------------------------------------------


def test_a_capture_decision_carries_the_reading_it_was_decided_from():
    match = _started_round()
    sure = arrival(7, ("09-1", 0.95), ("09-2", 0.03), since=4)
    doubtful = arrival(8, ("08-3", 0.5), ("09-3", 0.45), since=5)
    decisions = CaptureDecider().step(
        _arrivals_table([sure, doubtful], 12, 1.2), match, seats={"A": "A", "B": "B"}
    )
    assert [d.event.type for d in decisions] == ["card_captured", "card_captured"]
    for decision, track in zip(decisions, (7, 8), strict=True):
        reading, event = decision.reading, decision.event
        assert (reading.track, reading.seat) == (track, "A")
        assert event.player == "A" and event.source == "camera"
        assert event.card == reading.code
        assert event.confidence == round(reading.confidence, 3)
        assert bool(event.check) == reading.check
        assert event.alternatives == (reading.alternatives or None)
    assert [d.reading.steady_since for d in decisions] == [4, 5]
    assert decisions[1].event.card == "09-3"  # paired with the sure 09-1


def test_a_doubtful_card_its_own_points_will_read_again_waits_for_them():
    """An arrival a taught deck's points may still read (``verifying``) is not recorded by
    its doubtful looks; a sure one is, and so is the doubtful one once they are done."""
    match, seats = _started_round(), {"A": "A", "B": "B"}
    sure = arrival(7, ("09-1", 0.95), ("09-2", 0.03), since=4)
    doubtful = arrival(8, ("08-3", 0.5), ("09-3", 0.45), since=5)
    waiting = dataclasses.replace(doubtful, verifying=True)
    decided = CaptureDecider().step(_arrivals_table([sure, waiting], 12, 1.2), match, seats=seats)
    assert [d.reading.track for d in decided] == [7]
    decided = CaptureDecider().step(_arrivals_table([sure, doubtful], 12, 1.2), match, seats=seats)
    assert [d.reading.track for d in decided] == [7, 8]


def test_only_a_capture_is_decided_from_a_reading():
    from companion.game.engine import CardCaptured, CardsRanOut

    reading = Reading(3, "A", "09-1", 0.9, False, ("09-2",), 10)
    capture = Decision.captured("Aki", reading)
    assert capture.event.to_dict() == {
        "type": "card_captured",
        "player": "Aki",
        "card": "09-1",
        "source": "camera",
        "confidence": 0.9,
        "alternatives": ["09-2"],
    }
    with pytest.raises(ValueError):
        Decision(CardCaptured(player="Aki", card="09-1"))  # a capture without its card
    with pytest.raises(ValueError):
        Decision(CardsRanOut(), reading)


# -- the pipeline with a scripted detector and a store ----------------------------------------


class ScriptedDetector:
    """Returns whatever the test says the table looks like now."""

    def __init__(self):
        self.looks: list = []
        self.calls = 0

    def detect(self, bgr):
        self.calls += 1
        return detections(self.looks)


class Table:
    """Frames whose pixels change when the cards do (for the motion gate), and the detections
    the scripted detector reports for them."""

    def __init__(self, pipeline, detector):
        self.pipeline, self.detector = pipeline, detector
        self.cards: dict[str, tuple] = {}
        self.index = 0
        self.events = []

    def put(self, code, x, y, conf=0.95, alts=(), name=None, h=None):
        self.cards[code] = look(name or code, x, y, conf, alts)
        if h is not None:  # a look at part of a card: a smaller quad
            self.cards[code] = (name or code, (x, y, h), conf, tuple(alts))

    def take(self, *codes):
        for code in codes:
            self.cards.pop(code)

    def image(self):
        image = TABLE_CLOTH.copy()
        for name, xy, _, _ in self.cards.values():
            q = np.array(quad(*xy), np.int32)
            shade = 120 + 7 * sum(map(ord, name)) % 120  # another reading: other pixels
            image[q[:, 1].min() : q[:, 1].max(), q[:, 0].min() : q[:, 0].max()] = shade
        return image

    def run(self, frames=1, hand=False):
        from companion.live.sources import Frame

        for _ in range(frames):
            image = self.image()
            if hand:  # an arm: a big bright band sweeping
                x = 100 + (self.index * 97) % 900
                image[200:720, x : x + 260] = 255
            self.detector.looks = [] if hand else list(self.cards.values())
            frame = Frame(image, self.index, self.index / 10)
            self.events += self.pipeline.process(frame)
            self.index += 1
        return self.pipeline.table


@pytest.fixture
def live():
    store = MatchStore.open(":memory:")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    detector = ScriptedDetector()
    pipeline = LivePipeline(detector, ZONES, store, match_id)
    table = Table(pipeline, detector)
    for code, (x, y) in zip(DEAL, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(25)
    return store, match_id, table


def types(table):
    return [e.event.type for e in table.events]


def test_a_dealt_field_opens_the_round_with_the_field_read(live):
    store, match_id, table = live
    assert types(table) == ["round_started"]
    state = store.state(match_id)
    assert sorted(c.code for c in state.field) == sorted(DEAL)
    assert state.field_brights == 1


def test_a_capture_becomes_events_and_a_hand_passing_makes_none(live):
    store, match_id, table = live
    table.run(8, hand=True)
    table.run(8)
    assert types(table) == ["round_started"]
    table.take("08-3")
    table.run(4, hand=True)
    table.put("08-1", 300, 620)  # from the hand
    table.put("08-3", 330, 620)
    table.run(10)
    captured = [e.event for e in table.events if e.event.type == "card_captured"]
    assert sorted(e.card for e in captured) == ["08-1", "08-3"]
    assert {e.player for e in captured} == {"Aki"}
    assert all(e.source == "camera" and not e.check for e in captured)
    record = table.pipeline.captures[0]
    assert record.event_frame - record.steady_frame <= 5
    assert table.pipeline.crop("Aki", "08-1") is not None
    table.run(20)  # lying there: nothing more
    assert len(store.state(match_id).captures["Aki"]) == 2


def test_a_correction_on_the_tablet_sticks_to_that_card(live):
    store, match_id, table = live
    table.take("03-3")
    table.run(3, hand=True)
    table.put("03-3", 300, 100)
    # B's hand card is the ribbon 03-2 but the camera reads the curtain 03-1, confidently
    table.put("03-2", 330, 100, conf=0.9, alts=[("03-2", 0.05)], name="03-1")
    table.run(12)
    state = store.state(match_id)
    assert sorted(c.code for c in state.captures["Ben"]) == ["03-1", "03-3"]
    store.append(
        match_id, {"type": "capture_corrected", "player": "Ben", "card": "03-1", "new_card": "03-2"}
    )
    table.run(12)  # the card still reads 03-1, covered and uncovered by a hand
    table.run(3, hand=True)
    table.run(12)
    state = store.state(match_id)
    assert sorted(c.code for c in state.captures["Ben"]) == ["03-2", "03-3"]
    assert types(table).count("card_captured") == 2
    assert table.pipeline.crop("Ben", "03-2") is not None


def test_a_lone_card_surfacing_in_a_seat_just_after_another_players_capture_waits(live):
    """A card read in Aki's captures as Ben's hand leaves (a look at a row, in a real game) is
    no capture of Aki's: Ben is playing. It is not waited for either, until a card of its
    month comes to pair with it."""
    store, match_id, table = live
    table.take("03-3")
    table.run(3, hand=True)
    table.put("03-3", 300, 100)
    table.put("03-1", 330, 100)
    table.run(8)
    assert sorted(c.code for c in store.state(match_id).captures["Ben"]) == ["03-1", "03-3"]
    table.put("12-1", 300, 620)
    table.run(45)
    assert store.state(match_id).captures["Aki"] == []
    assert table.pipeline.proposal is None  # set aside on purpose: nothing to wait for
    table.run(3, hand=True)
    table.put("12-3", 340, 620)
    table.run(8)
    assert sorted(c.code for c in store.state(match_id).captures["Aki"]) == ["12-1", "12-3"]


def test_a_misread_partner_is_settled_by_the_pair_rule_and_flagged_when_unlikely(live):
    store, match_id, table = live
    table.take("03-3")
    table.put("03-3", 300, 100)
    table.put("03-1", 330, 100, conf=0.9, alts=[("03-1", 0.02)], name="04-1")
    table.run(12)
    state = store.state(match_id)
    assert sorted(c.code for c in state.captures["Ben"]) == ["03-1", "03-3"]
    assert [c["card"] for c in state.checks] == ["03-1"]
    assert state.checks[0]["alternatives"][0] == "04-1"


def test_a_removed_capture_is_never_brought_back(live):
    store, match_id, table = live
    table.take("05-1")
    table.put("05-1", 300, 620)
    table.put("05-2", 330, 620)
    table.run(12)
    store.append(match_id, {"type": "capture_removed", "player": "Aki", "card": "05-2"})
    table.run(12)
    assert [c.code for c in store.state(match_id).captures["Aki"]] == ["05-1"]


def test_a_capture_lying_still_is_recorded_without_waiting_for_the_detector():
    """Once a card lies still long enough in a capture area, the frame that shows nothing
    moved over it records the capture: the detector's look is not waited for (the next frame
    is looked at); with ``still_sure`` above 1 the same capture waits for the look."""

    def capture(tracker_settings=None):
        store = MatchStore.open(":memory:")
        match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
        detector = ScriptedDetector()
        pipeline = LivePipeline(
            detector, ZONES, store, match_id, tracker_settings=tracker_settings
        )
        table = Table(pipeline, detector)
        looked = []
        detect = detector.detect

        def seen(bgr):
            looked.append(table.index)
            return detect(bgr)

        detector.detect = seen
        for code, (x, y) in zip(DEAL, FIELD_SPOTS, strict=True):
            table.put(code, x, y)
        table.run(25)
        table.take("08-3")
        table.run(4, hand=True)
        table.put("08-1", 300, 620)
        table.run(10)
        (record,) = pipeline.captures
        return record, looked, pipeline

    record, looked, pipeline = capture()
    assert record.card == "08-1" and pipeline.still_settled == 1
    assert record.event_frame not in looked and record.event_frame + 1 in looked
    waited, looked_then, _ = capture(TrackerSettings(still_sure=1.01))
    assert waited.card == "08-1" and waited.event_frame in looked_then
    assert record.event_frame <= waited.event_frame


def test_the_motion_gate_skips_still_frames(live):
    _, _, table = live
    before = table.detector.calls
    table.run(30)
    refresh = table.pipeline.pipeline_settings.refresh
    assert table.detector.calls - before <= 3.0 / refresh + 1  # 30 frames: 3 s


# -- the pipeline's settings ----------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"refresh": -1.0},  # a look before the last one
        {"look_every": float("inf")},
        {"changed": 1.5},  # more than every pixel
        {"pixel_change": 300},  # beyond the grey levels
        {"motion_width": 4},  # too small a picture to see a card in
        {"same_deal": 2.5},  # a count that is not whole
        {"settling_seen_within": True},  # a flag where a count goes
        {"recognised": "a quarter"},
    ],
)
def test_a_pipeline_setting_out_of_range_is_refused_in_one_sentence(bad):
    with pytest.raises(CompanionError) as refused:
        PipelineSettings(**bad)
    (name,) = bad
    message = str(refused.value)
    assert message.startswith(f"The pipeline's {name} must be ")
    assert message.endswith(".") and message.count(". ") == 0


def test_every_pipeline_setting_says_what_moving_it_trades_and_is_read():
    described = PipelineSettings.describe()
    names = [f.name for f in dataclasses.fields(PipelineSettings)]
    assert list(described) == names and len(names) >= 10
    for name, why in described.items():
        assert len(why) >= 40 and "\n" not in why and ":" in why, name
    # each one is the pipeline's: read somewhere in its module, or by a property of the
    # settings that the module reads (motion_size: motion_width and motion_height)
    tree = ast.parse(inspect.getsource(pipeline_module))
    read = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    for node in ast.parse(inspect.getsource(PipelineSettings)).body[0].body:
        if isinstance(node, ast.FunctionDef) and node.name in read:
            read |= {sub.attr for sub in ast.walk(node) if isinstance(sub, ast.Attribute)}
    assert set(names) <= read


def _still_table_looks(settings: PipelineSettings | None) -> int:
    """Detector calls over 3 s of a dealt table lying still."""
    store = MatchStore.open(":memory:")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    detector = ScriptedDetector()
    pipeline = LivePipeline(detector, ZONES, store, match_id, pipeline_settings=settings)
    table = Table(pipeline, detector)
    for code, (x, y) in zip(DEAL, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(25)
    before = detector.calls
    table.run(30)
    return detector.calls - before


def test_the_pipeline_looks_by_its_settings():
    default = _still_table_looks(None)
    assert default == _still_table_looks(PipelineSettings())
    # refreshed twice a second: a still table is looked at twice as often
    assert _still_table_looks(PipelineSettings(refresh=0.5)) >= 2 * default - 1 > default
    # no gate at all: every frame is looked at
    assert _still_table_looks(PipelineSettings(refresh=0.0)) == 30


# -- sources -------------------------------------------------------------------------------


class FakeCapture:
    def __init__(self, world):
        self.world = world

    def isOpened(self):
        return self.world["plugged"]

    def read(self):
        if not self.world["plugged"]:
            return False, None
        return True, np.zeros((8, 8, 3), np.uint8)

    def release(self):
        pass


def test_an_unplugged_camera_is_reopened_with_backoff_within_five_seconds():
    world = {"plugged": True, "now": 0.0, "opens": 0}

    def opener(target):
        world["opens"] += 1
        return FakeCapture(world)

    source = LiveSource(0, opener=opener, clock=lambda: world["now"])
    assert source.read() is not None and source.state == "live"
    world["plugged"] = False
    for _ in range(200):  # 20 s unplugged, read every 0.1 s
        world["now"] += 0.1
        assert source.read() is None
    assert source.state is SourceState.LOST and SourceState.of(source).waiting
    assert world["opens"] < 15  # backoff, not a retry per read
    world["plugged"] = True
    back = world["now"]
    while source.read() is None:
        world["now"] += 0.1
        assert world["now"] - back <= 5.0
    assert source.state == "live"


def test_a_camera_slower_to_follow_than_it_films_hands_out_its_newest_picture():
    import time

    class Streaming:
        """A stream that always has its next picture ready (numbered in its first pixel)."""

        def __init__(self):
            self.sent = 0

        def isOpened(self):
            return True

        def read(self):
            time.sleep(0.002)
            self.sent += 1
            return True, np.full((4, 4, 3), self.sent % 256, np.uint8)

        def release(self):
            pass

    queued, newest = (LiveSource(0, opener=lambda t: Streaming(), newest=n) for n in (0, 1))
    second = {}
    try:
        for source in (queued, newest):
            first = source.read()
            time.sleep(0.2)  # a look that takes 0.2 s: the stream sent many pictures meanwhile
            second[source] = source.read()
            assert second[source].index > first.index
        assert second[queued].index == 1  # the next in its queue, 0.2 s old
        latest = second[newest]
        assert latest.index >= 3 and newest.dropped == latest.index - 1
        assert int(latest.image[0, 0, 0]) == (latest.index + 1) % 256
    finally:
        newest.close()
        queued.close()
    assert newest.state == "ended" and newest.read() is None


def test_a_source_state_reaches_json_as_its_plain_word():
    class Odd:
        state = "dozing"

    assert SourceState.of(None) is SourceState.OFF and SourceState.of(Odd()) is SourceState.OFF
    assert SourceState.of(Odd) is SourceState.OFF
    Odd.state = "lost"  # a source of its own may still say it in a word
    assert SourceState.of(Odd()) is SourceState.LOST
    assert json.dumps({"camera": SourceState.LIVE}) == '{"camera": "live"}'
    assert [s.value for s in SourceState] == ["connecting", "live", "lost", "ended", "off"]


def test_sources_are_named_by_spec(tmp_path):
    assert isinstance(open_source("camera:1"), LiveSource)
    assert isinstance(open_source("rtsp://example.invalid/x"), LiveSource)
    with pytest.raises(SourceError):
        open_source(tmp_path / "missing.mp4")
    with pytest.raises(SourceError):
        open_source(tmp_path)  # an empty folder
    import cv2

    for i in range(3):
        cv2.imwrite(str(tmp_path / f"{i:03d}.png"), np.full((8, 8, 3), i, np.uint8))
    frames = list(open_source(tmp_path))
    assert [f.index for f in frames] == [0, 1, 2]
    assert [f.time for f in frames] == [0.0, 0.1, 0.2]


def test_the_decider_does_nothing_without_a_match():
    assert CaptureDecider().step(TableTracker(ZONES).state, None, seats={}) == ()


def test_the_pipeline_records_each_capture_decision_with_its_reading():
    store = MatchStore.open(":memory:")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    detector = ScriptedDetector()
    # one alternative kept per capture (three by default)
    terse = DeciderSettings(alternatives=1)
    pipeline = LivePipeline(detector, ZONES, store, match_id, decider_settings=terse)
    table = Table(pipeline, detector)
    for code, (x, y) in zip(DEAL, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(25)
    table.take("08-3")
    table.put("08-1", 300, 620)
    table.put("08-3", 330, 620)
    table.run(10)
    captured = [e for e in table.events if e.event.type == "card_captured"]
    assert sorted(e.event.card for e in captured) == ["08-1", "08-3"]
    assert all(len(e.event.alternatives) == 1 for e in captured)
    # each stored capture is registered with the card it was read from
    records = {r.seq: r for r in pipeline.captures}
    assert sorted(records) == sorted(e.seq for e in captured)
    for stored in captured:
        record = records[stored.seq]
        event = stored.event
        assert (record.card, record.player, record.check) == (event.card, "Aki", bool(event.check))
    assert {"08-1", "08-3"} <= set(pipeline.tracker.registered())


def test_a_sure_lone_card_is_registered_before_its_partner_and_the_partner_pairs_with_it(live):
    store, match_id, table = live
    table.take("09-4")
    table.put("09-1", 300, 620)  # from the hand, surely read
    table.run(6)
    assert [c.code for c in store.state(match_id).captures["Aki"]] == ["09-1"]
    # its partner reads as 08-4 first, 09-4 second: it pairs with the card waiting
    table.put("09-4", 330, 620, conf=0.5, alts=[("09-4", 0.4)], name="08-4")
    table.run(6)
    state = store.state(match_id)
    assert [c.code for c in state.captures["Aki"]] == ["09-1", "09-4"]
    assert state.checks == []


def test_a_doubtful_lone_card_waits_for_its_partner():
    decider = CaptureDecider()
    from companion.game.engine import replay

    match = replay(
        [
            {"type": "match_started", "players": ["A", "B"], "rules": "livret", "rounds": 6},
            {"type": "round_started"},
        ]
    )
    doubtful = arrival(1, ("08-3", 0.5), ("09-3", 0.45))
    from companion.live.tracker import TableState

    def table(arrivals, frame, time):
        return TableState(frame=frame, time=time, arrivals={"A": arrivals, "B": []})

    seats = {"A": "A", "B": "B"}
    assert decider.step(table([doubtful], 10, 1.0), match, seats=seats) == ()
    partner = arrival(2, ("09-1", 0.95))
    decisions = decider.step(table([doubtful, partner], 12, 1.2), match, seats=seats)
    assert sorted(d.event.card for d in decisions) == ["09-1", "09-3"]


@pytest.mark.slow
def test_a_short_simulated_round_is_replayed_to_its_exact_score(tmp_path):
    from companion.bench.replay import load_truth, replay_video
    from companion.recognizer import Recognizer
    from companion.simulator.rounds import SimConfig, simulate

    try:
        simulate("traditional-scan", 7, tmp_path, SimConfig(max_turns=4))
    except CompanionError as exc:  # no shared decks on this machine
        pytest.skip(str(exc))
    truth = load_truth(tmp_path / "truth.json")
    report = replay_video(tmp_path / "table.mp4", Recognizer.load(threads=2), truth=truth)
    assert report.rounds_total == 1
    captured = sum(len(c) for c in truth["rounds"][0]["captures"].values())
    assert captured > 0
    for player, codes in truth["rounds"][0]["captures"].items():
        assert sorted(report.rounds[0].captures[player]) == sorted(codes)
    assert report.rounds_exact == 1


def test_the_live_session_serves_status_frames_crops_and_zones(tmp_path):
    from companion.live.session import LiveSession
    from companion.live.sources import Frame, FrameSource

    class Recorded(FrameSource):
        """The frames of a Table scene, as a source (a recording: still frames are frames)."""

        finite = True

        def __init__(self, frames):
            self.frames, self.state = list(frames), "live"

        def read(self):
            if not self.frames:
                self.state = "ended"
                return None
            return self.frames.pop(0)

        def describe(self):
            return "recorded"

    store = MatchStore.open(":memory:")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6)
    detector = ScriptedDetector()
    session = LiveSession(
        Recorded([]), detector, store, zones_path=tmp_path / "zones.toml", realtime=False
    )
    assert session.status()["camera"] == "live" and session.latest_jpeg() is None
    scene = Table(session.pipeline, detector)
    for code, (x, y) in zip(DEAL, FIELD_SPOTS, strict=True):
        scene.put(code, x, y)
    frames, looks = [], {}
    for i in range(40):
        if i == 25:
            scene.take("08-3")
            scene.put("08-1", 300, 620)
            scene.put("08-3", 330, 620)
        if i in (0, 25):
            looks[i] = list(scene.cards.values())
        frames.append(Frame(scene.image(), i, i / 10))
    session.source = Recorded(frames)
    while session.source.state != "ended":
        index = session.source.frames[0].index if session.source.frames else None
        if index in looks:
            detector.looks = looks[index]
        session.step()
    status = session.status()
    assert status["match_id"] == match_id and status["frames"] == 40
    assert session.latest_jpeg().startswith(b"\xff\xd8")
    assert session.snapshot_jpeg().startswith(b"\xff\xd8")
    assert session.crop_jpeg("Aki", "08-1").startswith(b"\xff\xd8")
    assert session.crop_jpeg("Aki", "12-1") is None
    boxes = session.field_boxes()
    assert len(boxes) == 9 and all(
        0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1 for x0, y0, x1, y1 in boxes
    )
    moved = session.zones.with_polygon("field", [[0.1, 0.3], [0.9, 0.3], [0.9, 0.7], [0.1, 0.7]])
    session.set_zones(moved)
    assert (tmp_path / "zones.toml").is_file() and session.zones == moved


def test_a_camera_unplugged_and_plugged_back_keeps_the_tally(live):
    from companion.live.session import LiveSession

    store, match_id, table = live
    table.take("06-2")
    table.put("06-1", 300, 620)
    table.put("06-2", 330, 620)
    world = {"plugged": True, "now": 0.0}

    class Camera(FakeCapture):
        def read(self):
            if not world["plugged"]:
                return False, None
            return True, table.image()

    source = LiveSource(0, opener=lambda target: Camera(world), clock=lambda: world["now"])
    session = LiveSession(source, table.detector, store, match_id=match_id, realtime=False)
    session.pipeline = table.pipeline  # the pipeline that saw the deal
    table.detector.looks = list(table.cards.values())
    for _ in range(15):
        world["now"] += 0.1
        session.step()
    before = [c.code for c in store.state(match_id).captures["Aki"]]
    assert sorted(before) == ["06-1", "06-2"]
    world["plugged"] = False
    for _ in range(50):
        world["now"] += 0.1
        assert not session.step()
    assert session.status()["camera"] == "lost"
    world["plugged"] = True
    back = world["now"]
    while not session.step():
        world["now"] += 0.1
    assert world["now"] - back <= 5.0 and session.status()["camera"] == "live"
    for _ in range(15):
        world["now"] += 0.1
        session.step()
    assert [c.code for c in store.state(match_id).captures["Aki"]] == before


def test_a_card_laid_half_over_a_capture_and_found_merged_with_it_is_captured(live):
    store, match_id, table = live
    table.take("05-1")
    table.put("05-1", 300, 620)
    table.put("05-3", 330, 620)
    table.run(8)
    table.take("11-2")
    table.put("11-2", 600, 620)
    table.run(8)
    assert sorted(c.code for c in store.state(match_id).captures["Aki"]) == ["05-1", "05-3", "11-2"]
    # 11-4 lies half over 05-3: the detector finds one card between the two, named either
    table.take("05-3")
    for i in range(16):
        if i % 2:
            table.put("05-3", 340, 620, conf=0.45, alts=[("11-4", 0.3)], name="05-3")
        else:
            table.put("05-3", 340, 620, conf=0.4, alts=[("05-3", 0.3)], name="11-4")
        table.run()
    state = store.state(match_id)
    assert sorted(c.code for c in state.captures["Aki"]) == ["05-1", "05-3", "11-2", "11-4"]
    assert state.checks == []


def test_a_capture_read_as_its_chaff_twin_is_the_same_card_not_a_new_one(live):
    store, match_id, table = live
    table.take("08-3")
    table.put("08-1", 300, 620)
    table.put("08-3", 330, 620)
    table.run(8)
    assert sorted(c.code for c in store.state(match_id).captures["Aki"]) == ["08-1", "08-3"]
    # from now on the chaff 08-3 reads as its twin 08-4, surely, while 08-2 lands and waits
    # for its partner (the month is odd: a look that pairs with it is plausible over 08-3)
    table.put("08-3", 330, 620, conf=0.96, name="08-4")
    table.put("08-2", 600, 540)
    table.run(60)
    table.put("08-4", 360, 620)
    table.run(12)
    state = store.state(match_id)
    assert sorted(c.code for c in state.captures["Aki"]) == ["08-1", "08-2", "08-3", "08-4"]
    assert state.checks == []


def test_a_look_at_part_of_a_capture_is_not_its_waiting_partner(live):
    store, match_id, table = live
    table.take("08-3")  # taken by the hand's 08-1; 08-1 lands first, read surely
    table.put("08-1", 300, 620)
    table.run(8)
    # the partner lies in the chaff line but goes unseen for a while; a smaller look at
    # the lower half of 08-1 (its hill) reads as the chaff 08-3
    table.put("part", 300, 640, conf=0.82, alts=[("08-4", 0.08)], name="08-3", h=50)
    table.run(60)
    table.take("part")
    table.put("08-3", 450, 650)
    table.run(12)
    state = store.state(match_id)
    assert sorted(c.code for c in state.captures["Aki"]) == ["08-1", "08-3"]
    assert state.checks == []
    assert [r.card for r in table.pipeline.captures] == ["08-1", "08-3"]


def test_a_look_reading_surely_as_a_captured_card_is_not_a_new_capture(live):
    store, match_id, table = live
    table.take("05-1")  # taken by the hand's 05-3
    table.put("05-1", 300, 620)
    table.put("05-3", 420, 620)
    table.run(8)
    assert sorted(c.code for c in store.state(match_id).captures["Aki"]) == ["05-1", "05-3"]
    # the two cards seen as one between them (a look at part of the row), read surely as
    # 05-1: recorded, it would take a free name its looks barely give (another card's)
    table.put("merged", 360, 600, conf=0.9, alts=[("05-3", 0.04)], name="05-1", h=110)
    table.run(40)
    state = store.state(match_id)
    assert sorted(c.code for c in state.captures["Aki"]) == ["05-1", "05-3"]
    assert state.checks == []
    # a real card of a month Aki waits on, read surely as a captured one, is still taken:
    # 08-1 alone (its partner unseen yet), then 08-3 read as 05-3 but likely enough 08-3
    table.take("merged", "08-3")
    table.put("08-1", 540, 620)
    table.run(8)
    table.put("08-3", 660, 620, conf=0.85, alts=[("08-3", 0.12)], name="05-3")
    table.run(40)
    state = store.state(match_id)
    assert sorted(c.code for c in state.captures["Aki"]) == ["05-1", "05-3", "08-1", "08-3"]


def test_after_a_round_the_cleared_table_and_a_new_deal_open_the_next_round(live):
    store, match_id, table = live
    table.take("02-3")
    table.put("02-1", 300, 620)
    table.put("02-3", 330, 620)
    table.run(8)
    store.append(match_id, {"type": "cards_ran_out"})  # the players end it on the tablet
    table.run(5)
    assert types(table).count("round_started") == 1  # the old table is no new deal
    table.cards.clear()  # gathered
    table.run(30)
    deal = ["01-1", "03-1", "04-2", "06-1", "07-3", "08-1", "10-2", "12-4"]
    for code, (x, y) in zip(deal, FIELD_SPOTS, strict=True):  # some at the old places
        table.put(code, x, y)
    table.run(20)
    state = store.state(match_id)
    assert state.round_number == 2 and state.round_in_progress
    assert sorted(c.code for c in state.field) == deal
    assert state.captures == {"Aki": [], "Ben": []}


def test_a_table_gathered_without_a_stop_ends_the_round(live):
    store, match_id, table = live
    table.take("06-2")
    table.put("06-1", 300, 620)
    table.put("06-2", 330, 620)
    table.run(8)
    table.cards.clear()
    table.run(50)
    state = store.state(match_id)
    assert not state.round_in_progress and state.rounds[-1].kind in ("draw", "exhausted")


def test_the_live_commands_turn_bad_input_into_one_sentence(tmp_path):
    from click.testing import CliRunner

    from companion.cli import main

    runner = CliRunner()
    missing = runner.invoke(main, ["replay", str(tmp_path / "none.mp4")])
    assert missing.exit_code == 2 and "No video file" in missing.output
    (tmp_path / "truth.json").write_text("not json")
    (tmp_path / "table.mp4").write_bytes(b"")
    bad = runner.invoke(
        main, ["replay", str(tmp_path / "table.mp4"), "--truth", str(tmp_path / "truth.json")]
    )
    assert bad.exit_code == 2 and "is not JSON" in bad.output
    two = runner.invoke(main, ["run", "--camera", "0", "--url", "rtsp://x.invalid/"])
    assert two.exit_code == 2 and "one source" in two.output


def test_run_and_replay_name_the_cards_of_an_added_deck(tmp_path):
    import json
    import shutil

    import cv2
    from click.testing import CliRunner

    from companion.cli import main
    from companion.cli.live import live_detector
    from companion.recognizer.decks import add_deck
    from companion.simulator import synth
    from companion.simulator.closeup import render_closeup

    try:
        shared = Path(synth.resolve_deck_dir("traditional-scan"))
    except CompanionError as exc:
        pytest.skip(str(exc))
    mine = tmp_path / "mine"
    mine.mkdir()
    for code, art in {"01-1": "08-1", "02-1": "11-1"}.items():  # re-skinned: 08-1's art is 01-1
        shutil.copy(shared / f"{art}.png", mine / f"{code}.png")
    decks = tmp_path / "decks"
    add_deck("mine", mine, decks, views=8)
    assert live_detector(None, "mine", decks).namer.deck.name == "mine"
    assert live_detector(None).namer is None

    runner = CliRunner()
    where = ["--decks-dir", str(decks)]
    video = tmp_path / "table.mp4"
    scene = render_closeup(0, str(mine))
    h, w = scene.image.shape[:2]
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"mp4v"), 10, (w, h))
    for _ in range(5):
        writer.write(scene.image)
    writer.release()
    replayed = runner.invoke(main, ["replay", str(video), "--deck", "mine", *where, "--json"])
    assert replayed.exit_code == 0, replayed.output
    assert json.loads(replayed.stdout)["frames"] == 5
    for command in (["replay", str(video)], ["run", "--video", str(video)]):
        result = runner.invoke(main, [*command, "--deck", "missing", *where])
        assert result.exit_code == 2, result.output
        assert "No deck 'missing'" in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1


# -- Koi, Stop, round ends and deals read from the table (no tap) -------------------------------


def logged(store, match_id):
    return [s.event for s in store.events(match_id)][1:]  # after match_started


def hanami_for_aki(table):
    """Aki's turn: 03-1 takes 03-3, then the pile's 09-1 takes 09-4: Hanami, a yaku."""
    table.take("03-3", "09-4")
    table.run(4, hand=True)
    table.put("03-1", 300, 620)
    table.put("03-3", 330, 620)
    table.run(8)
    table.run(3, hand=True)
    table.put("09-1", 360, 620)
    table.put("09-4", 390, 620)
    table.run(8)


def test_koi_is_read_from_play_going_on(live):
    store, match_id, table = live
    hanami_for_aki(table)
    assert store.state(match_id).pending_decision == "Aki"
    table.run(15)  # Aki thinks: the table lies still, nothing is read
    assert store.state(match_id).pending_decision == "Aki"
    # Ben plays on: his card finds no match, then the pile's card neither
    table.run(3, hand=True)
    table.put("04-1", 470, 360)
    table.run(8)
    assert store.state(match_id).pending_decision == "Aki"  # one card could be Aki's draw
    table.run(3, hand=True)
    table.put("12-1", 580, 360)
    table.run(8)
    state = store.state(match_id)
    calls = [e for e in logged(store, match_id) if e.type == "koi_called"]
    assert [(e.player, e.source) for e in calls] == [("Aki", "camera")]
    assert state.round_in_progress and state.koi["Aki"] == 1


def test_koi_is_read_when_the_next_player_captures(live):
    store, match_id, table = live
    hanami_for_aki(table)
    table.run(10)
    table.take("11-2")
    table.run(3, hand=True)
    table.put("11-1", 600, 100)
    table.put("11-2", 630, 100)
    table.run(10)
    kinds = [(e.type, getattr(e, "player", None)) for e in logged(store, match_id)]
    koi = kinds.index(("koi_called", "Aki"))
    assert koi < kinds.index(("card_captured", "Ben"))  # the Koi came first
    assert sorted(c.code for c in store.state(match_id).captures["Ben"]) == ["11-1", "11-2"]


def gather(table, *codes):
    """Cards swept off the table by a hand."""
    table.run(3, hand=True)
    table.take(*codes)
    table.run(3, hand=True)


def test_stop_is_read_from_the_gathering_and_the_cards_left_lying_open_no_round(live):
    store, match_id, table = live
    hanami_for_aki(table)
    table.run(20)  # "Stop": the table stays as it is while points are counted
    assert store.state(match_id).round_in_progress
    gather(table, "03-1", "03-3", "09-1", "09-4")  # Aki sweeps his captures
    table.run(25)
    state = store.state(match_id)
    stops = [e for e in logged(store, match_id) if e.type == "stop_called"]
    assert [(e.player, e.source) for e in stops] == [("Aki", "camera")]
    assert not state.round_in_progress and state.rounds[-1].winner == "Aki"
    table.run(60)  # the six field cards still lie there: no new deal
    assert not store.state(match_id).round_in_progress
    gather(table, *[c for c in DEAL if c not in ("03-3", "09-4")])
    table.run(15)
    deal = ["01-2", "02-1", "04-2", "06-1", "07-3", "08-2", "10-2", "12-4"]
    for code, (x, y) in zip(deal, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(20)
    state = store.state(match_id)
    assert state.round_number == 2 and state.round_in_progress
    assert sorted(c.code for c in state.field) == deal


def test_a_tap_first_is_kept_and_the_table_only_confirms_it(live):
    store, match_id, table = live
    hanami_for_aki(table)
    store.append(match_id, {"type": "koi_called", "player": "Aki"})  # tapped
    table.run(3, hand=True)
    table.put("04-1", 470, 360)
    table.run(8)
    table.run(3, hand=True)
    table.put("12-1", 580, 360)
    table.run(8)
    calls = [e for e in logged(store, match_id) if e.type in ("koi_called", "stop_called")]
    assert [(e.type, e.source) for e in calls] == [("koi_called", None)]
    assert table.pipeline.proposal is None


def test_a_reading_against_a_tap_is_shown_never_recorded(live):
    store, match_id, table = live
    hanami_for_aki(table)
    store.append(match_id, {"type": "stop_called", "player": "Aki"})  # tapped, by mistake
    table.run(10)
    before = len(store.events(match_id))
    table.run(3, hand=True)  # ...but Ben plays on
    table.put("04-1", 470, 360)
    table.run(8)
    table.run(3, hand=True)
    table.put("12-1", 580, 360)
    table.run(20)
    assert len(store.events(match_id)) == before  # nothing recorded, no round opened
    proposal = table.pipeline.proposal
    assert proposal.kind == "reading" and "Aki's Stop" in proposal.text


def test_an_answer_taken_back_on_the_tablet_is_not_read_again(live):
    store, match_id, table = live
    hanami_for_aki(table)
    table.run(15)
    table.run(3, hand=True)
    table.put("04-1", 470, 360)
    table.run(8)
    table.run(3, hand=True)
    table.put("12-1", 580, 360)
    table.run(8)
    assert store.state(match_id).koi["Aki"] == 1
    store.append(match_id, {"type": "undo"})  # it was not a Koi
    table.run(20)
    state = store.state(match_id)
    assert state.koi["Aki"] == 0 and state.pending_decision == "Aki"
    assert table.pipeline.proposal.kind == "reading"


def test_a_cleared_table_and_a_new_deal_close_the_round_without_taps(live):
    store, match_id, table = live
    table.put("back", 1180, 360)  # the draw pile
    table.take("06-2")
    table.put("06-1", 300, 620)
    table.put("06-2", 330, 620)
    table.run(10)
    gather(table, "06-1", "06-2", *[c for c in DEAL if c != "06-2"])
    deal = ["01-2", "02-1", "04-2", "06-3", "07-3", "08-2", "10-2", "12-4"]
    for code, (x, y) in zip(deal, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(60)
    state = store.state(match_id)
    kinds = [e.type for e in logged(store, match_id)]
    assert kinds[-2:] == ["cards_ran_out", "round_started"]
    assert state.round_number == 2 and sorted(c.code for c in state.field) == deal


@pytest.mark.parametrize("tapped", [False, True])
def test_a_redeal_sends_the_new_field_to_the_engine(tapped):
    store = MatchStore.open(":memory:")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    detector = ScriptedDetector()
    table = Table(LivePipeline(detector, ZONES, store, match_id), detector)
    four = ["01-1", "01-2", "01-3", "01-4", "05-1", "06-2", "08-3", "11-2"]
    for code, (x, y) in zip(four, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(25)
    assert any("redeal" in w for w in store.state(match_id).warnings)
    if tapped:
        store.append(match_id, {"type": "redeal"})
        table.run(5)
    gather(table, *four)
    table.run(45)  # cards vanishing at once count as covered for 2 s, then as gone
    deal = ["01-2", "02-1", "04-2", "06-1", "07-3", "08-2", "10-2", "12-1"]
    for code, (x, y) in zip(deal, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(20)
    state = store.state(match_id)
    assert state.round_in_progress and state.redeals == 1 and state.round_number == 1
    assert sorted(c.code for c in state.field) == deal and state.field_brights == 1
    assert not state.warnings


def test_a_stop_tapped_while_a_capture_lies_undecided_waits_for_it(live):
    store, match_id, table = live
    table.take("03-3", "09-4")
    table.put("03-1", 300, 620)
    table.put("03-3", 330, 620)
    table.run(8)
    table.put("09-1", 360, 620)  # the pile's card, surely read: Hanami
    table.run(5)
    assert store.state(match_id).pending_decision == "Aki"
    table.put("09-4", 390, 620)  # its partner lands...
    table.run(1)
    store.append(match_id, {"type": "stop_called", "player": "Aki"})  # ...as Stop is tapped
    table.run(12)
    state = store.state(match_id)
    assert not state.round_in_progress and state.rounds[-1].winner == "Aki"
    kinds = [e.type for e in logged(store, match_id)]
    # the Stop is taken back, the capture recorded, the Stop made again
    assert kinds[-4:] == ["stop_called", "undo", "card_captured", "stop_called"]
    held = [e.card for e in logged(store, match_id) if e.type == "card_captured"]
    assert sorted(held) == ["03-1", "03-3", "09-1", "09-4"]
    assert not any("pairs" in w for w in state.warnings)


@pytest.mark.slow
def test_a_two_round_match_is_scored_from_the_table_alone_without_a_tap(tmp_path):
    from companion.bench.replay import load_truth, replay_video
    from companion.recognizer import Recognizer
    from companion.simulator.rounds import SimConfig, simulate

    # seed 37: A stops in round 1 (the table is gathered, the next deal opens round 2),
    # round 2 runs out after 6 turns
    try:
        simulate("traditional-ngs", 37, tmp_path, SimConfig(rounds=2, max_turns=6))
    except CompanionError as exc:  # no shared decks on this machine
        pytest.skip(str(exc))
    truth = load_truth(tmp_path / "truth.json")
    assert [e["event"]["type"] for e in truth["events"]].count("stop_called") == 1
    report = replay_video(
        tmp_path / "table.mp4", Recognizer.load(threads=2), truth=truth, taps="none"
    )
    assert report.rounds_total == 2
    assert [r.points for r in report.rounds] == [r["points"] for r in truth["rounds"]]
    assert report.rounds_exact == 2


def test_a_settled_card_is_read_once_more_and_the_dealt_field_is_that_reading():
    """With a taught deck the detector's looks skip its costly check (``verify`` turned off)
    and the pipeline asks it (``verify_quad``) once for each card as it settles: a field the
    looks misread opens the round with the cards the check names."""
    from companion.detections import iou_matrix

    class CheckingDetector(ScriptedDetector):
        verify = True

        def __init__(self, truth):
            super().__init__()
            self.truth, self.asked = truth, 0

        def verify_quad(self, bgr, q):
            self.asked += 1
            spots = np.array([quad(x, y) for x, y in FIELD_SPOTS], np.float32)
            best = int(iou_matrix(np.asarray(q, np.float32)[None], spots).argmax())
            return self.truth[best], 0.99

    store = MatchStore.open(":memory:")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    detector = CheckingDetector(DEAL)
    table = Table(LivePipeline(detector, ZONES, store, match_id), detector)
    assert detector.verify is False
    misread = ["01-2", "02-4", "03-4", "05-2", "06-3", "08-4", "09-2", "11-3"]
    for code, name, (x, y) in zip(DEAL, misread, FIELD_SPOTS, strict=True):
        table.put(code, x, y, name=name)
    table.run(25)
    assert sorted(c.code for c in store.state(match_id).field) == sorted(DEAL)
    assert detector.asked == len(DEAL)


# -- a deal played out: every card was captured ------------------------------------------


def _three_seat_round_short_of(missing: set, odd_seat: str):
    """A Hana-Awase round for three with every card captured by pairs of a month, but
    ``missing`` never decided: their month-mates lie with ``odd_seat``."""
    from companion.game.cards import ALL_CODES
    from companion.game.engine import replay

    events = [
        {"type": "match_started", "players": ["A", "B", "C"], "rules": "hana-awase", "rounds": 6},
        {"type": "round_started"},
    ]
    months = sorted({int(c[:2]) for c in ALL_CODES})
    for i, month in enumerate(months):
        codes = [c for c in ALL_CODES if int(c[:2]) == month]
        seat = "ABC"[i % 3]
        for code in codes:
            if code in missing:
                continue
            mates_missing = any(int(m[:2]) == month for m in missing)
            player = odd_seat if mates_missing else seat
            events.append({"type": "card_captured", "player": player, "card": code})
    return replay(events)


def _ran_out_looks(decider, match, seats, field=()):
    """The pile in sight, then gone long enough for the cards to have run out."""
    from companion.live.tracker import TableState

    out = []
    for frame, (time, backs) in enumerate([(0.0, 3), (1.0, 0), (4.0, 0)]):
        table = TableState(frame=frame, time=time, backs=backs, field=field)
        out += decider.step(table, match, seats=seats)
    return out


def test_a_card_never_decided_is_credited_to_the_one_player_holding_its_month_oddly():
    seats = {"A": "A", "B": "B", "C": "C"}
    match = _three_seat_round_short_of({"11-1"}, odd_seat="B")
    decided = _ran_out_looks(CaptureDecider(), match, seats)
    assert [d.event.type for d in decided] == ["card_captured", "cards_ran_out"]
    credited = decided[0].event
    assert (credited.player, credited.card, credited.check) == ("B", "11-1", True)


def test_an_unsure_leftover_is_never_credited():
    seats = {"A": "A", "B": "B", "C": "C"}
    # two cards of one month missing: a pair nobody can place
    match = _three_seat_round_short_of({"11-1", "11-2"}, odd_seat="B")
    assert [d.event.type for d in _ran_out_looks(CaptureDecider(), match, seats)] == [
        "cards_ran_out"
    ]
    # cards still lying on the field: the deal was not played out
    match = _three_seat_round_short_of({"11-1"}, odd_seat="B")
    looks = _ran_out_looks(CaptureDecider(), match, seats, field=("11-1",))
    assert [d.event.type for d in looks] == ["cards_ran_out"]
    # more missing than a few: a round cut short, not a card or two missed
    few = CaptureDecider(DeciderSettings(unclaimed_at_most=0))
    looks = _ran_out_looks(few, _three_seat_round_short_of({"11-1"}, odd_seat="B"), seats)
    assert [d.event.type for d in looks] == ["cards_ran_out"]


# -- a slow capture says why on the tablet -----------------------------------------------------


def test_a_capture_whose_second_card_stays_hidden_says_so_after_3_s(live):
    store, match_id, table = live
    table.take("09-4")
    table.put("09-1", 300, 620)  # surely read: recorded alone; its partner lies under a hand
    table.run(6)
    assert [c.code for c in store.state(match_id).captures["Aki"]] == ["09-1"]
    table.run(15)  # 2.1 s after its record: still merely settling, nothing said
    assert table.pipeline.proposal is None
    table.run(12)  # past 3 s
    proposal = table.pipeline.proposal
    assert proposal.kind == "unread" and proposal.text.id == "camera.partner_unread"
    assert "Aki" in proposal.text
    table.put("09-4", 330, 620)  # the hand lifts: the partner is read, nothing more to say
    table.run(6)
    assert [c.code for c in store.state(match_id).captures["Aki"]] == ["09-1", "09-4"]
    assert table.pipeline.proposal is None


def test_a_card_in_the_captures_kept_unread_by_a_hand_over_it_says_so_after_3_s(live):
    from companion.live.sources import Frame

    store, match_id, table = live
    table.take("08-3")
    # a doubtful card in Aki's captures with fingers twitching over it: seen, never at rest
    table.put("08-1", 300, 620, conf=0.5, alts=[("09-1", 0.4)])
    said = []
    for i in range(45):
        image = table.image()
        image[600:640, 280 + 4 * (i % 2) : 320 + 4 * (i % 2)] = 250 - 200 * (i % 2)
        table.detector.looks = list(table.cards.values())
        table.events += table.pipeline.process(Frame(image, table.index, table.index / 10))
        table.index += 1
        proposal = table.pipeline.proposal
        said.append(None if proposal is None else (proposal.kind, proposal.text.id))
    assert store.state(match_id).captures["Aki"] == []  # never decided under the fingers
    assert said[20] is None  # 2 s: it may be a card being laid
    assert said[-1] == ("unread", "camera.capture_unread") and "Aki" in proposal.text

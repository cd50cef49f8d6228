"""One physical card, one capture: a restart, a video played again, a hand that hovers or
lingers, on hand-written detection sequences through the real tracker and decider."""

from __future__ import annotations

import numpy as np
import pytest
from test_live import DEAL, FIELD_SPOTS, ZONES, ScriptedDetector, Table, quad

from companion import CompanionError
from companion.live.pipeline import LivePipeline
from companion.live.sources import Frame
from companion.store import MatchStore

# A's captures lie along the bottom (y 560-680), B's along the top (y 40-160)
ROWS = {
    "Aki": [(300, 620), (334, 620), (600, 560), (634, 560)],
    "Ben": [(300, 100), (334, 100), (600, 160), (634, 160)],
}


def new_match():
    store = MatchStore.open(":memory:")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    return store, match_id


def start(store, match_id, cards=None, frames=25):
    """A pipeline on the store (a fresh process), looking at a table holding ``cards``
    (code -> (x, y)), the dealt field by default."""
    detector = ScriptedDetector()
    table = Table(LivePipeline(detector, ZONES, store, match_id), detector)
    for code, (x, y) in (cards or dict(zip(DEAL, FIELD_SPOTS, strict=True))).items():
        table.put(code, x, y)
    table.run(frames)
    return table


def captures(store, match_id):
    state = store.state(match_id)
    return {p: sorted(c.code for c in cs) for p, cs in state.captures.items()}


def camera_events(store, match_id):
    return [e for e in store.events(match_id) if e.event.type == "card_captured"]


def six_captures(store, match_id):
    """A round under way: six captures lying in their rows (one corrected on the tablet)."""
    table = start(store, match_id)
    assert [e.event.type for e in table.events] == ["round_started"]
    table.take("01-1")
    table.put("01-1", *ROWS["Aki"][0])
    table.put("01-3", *ROWS["Aki"][1])
    table.run(10)
    table.take("03-3")
    table.put("03-3", *ROWS["Ben"][0])
    # the ribbon 03-2, read surely as the curtain 03-1: the players correct it
    table.put("03-2", *ROWS["Ben"][1], conf=0.9, alts=[("03-2", 0.05)], name="03-1")
    table.run(10)
    store.append(
        match_id, {"type": "capture_corrected", "player": "Ben", "card": "03-1", "new_card": "03-2"}
    )
    table.take("08-3")
    table.put("08-3", *ROWS["Aki"][2])
    table.put("08-4", *ROWS["Aki"][3])
    table.run(10)
    assert captures(store, match_id) == {
        "Aki": ["01-1", "01-3", "08-3", "08-4"],
        "Ben": ["03-2", "03-3"],
    }
    return table


def test_a_restart_with_six_captures_lying_in_their_rows_records_nothing_again():
    store, match_id = new_match()
    before = six_captures(store, match_id)
    events = len(store.events(match_id))
    # killed; started again on the same database, the cards lying as they were
    table = start(store, match_id, {c: xy for c, (_, xy, _, _) in before.cards.items()}, 0)
    table.cards = dict(before.cards)  # the corrected card still reads as 03-1
    table.run(40)
    assert len(store.events(match_id)) == events
    assert captures(store, match_id) == {
        "Aki": ["01-1", "01-3", "08-3", "08-4"],
        "Ben": ["03-2", "03-3"],
    }
    assert sorted(table.pipeline.recognised) == [
        ("Aki", "01-1"), ("Aki", "01-3"), ("Aki", "08-3"), ("Aki", "08-4"),
        ("Ben", "03-2"), ("Ben", "03-3"),
    ]  # fmt: skip
    # the field cards lie where they did and stay field cards
    lying = sorted(c for c in DEAL if c not in ("01-1", "03-3", "08-3"))
    assert sorted(table.pipeline.table.field) == lying
    # the round goes on: the next capture is recorded, once
    table.take("05-1")
    table.run(4, hand=True)
    table.put("05-1", *ROWS["Ben"][2])
    table.put("05-3", *ROWS["Ben"][3])
    table.run(15)
    assert captures(store, match_id)["Ben"] == ["03-2", "03-3", "05-1", "05-3"]
    assert len(camera_events(store, match_id)) == 8


def test_a_capture_left_undecided_by_the_kill_is_recorded_after_the_restart():
    store, match_id = new_match()
    before = six_captures(store, match_id)
    before.take("11-2")
    before.put("11-2", 900, 620)
    before.put("11-1", 934, 620)
    before.run(1)  # killed as they land
    assert captures(store, match_id)["Aki"] == ["01-1", "01-3", "08-3", "08-4"]
    table = start(store, match_id, {}, 0)
    table.cards = dict(before.cards)
    table.run(40)
    assert captures(store, match_id)["Aki"] == ["01-1", "01-3", "08-3", "08-4", "11-1", "11-2"]
    assert len(camera_events(store, match_id)) == 8


def test_a_restart_while_a_hand_is_over_the_table_records_nothing_again():
    store, match_id = new_match()
    before = six_captures(store, match_id)
    events = len(store.events(match_id))
    table = start(store, match_id, {}, 0)
    table.cards = dict(before.cards)
    table.run(12, hand=True)  # an arm over the table as the camera comes back
    # then the cards show a few at a time as the arm withdraws
    hidden = dict(table.cards)
    table.cards = {c: v for c, v in hidden.items() if c in DEAL}
    table.run(5)
    table.cards = hidden
    table.run(30)
    assert len(store.events(match_id)) == events
    assert len(table.pipeline.recognised) == 6


def test_a_video_played_again_from_its_start_records_nothing_twice():
    store, match_id = new_match()
    six_captures(store, match_id)
    events = len(store.events(match_id))
    # the same table again from the deal: the captures are laid again, one by one
    table = start(store, match_id)
    table.take("01-1")
    table.put("01-1", *ROWS["Aki"][0])
    table.put("01-3", *ROWS["Aki"][1])
    table.run(10)
    table.take("03-3")
    table.put("03-3", *ROWS["Ben"][0])
    table.put("03-2", *ROWS["Ben"][1], conf=0.9, alts=[("03-2", 0.05)], name="03-1")
    table.run(10)
    table.take("08-3")
    table.put("08-3", *ROWS["Aki"][2])
    table.put("08-4", *ROWS["Aki"][3])
    table.run(10)
    assert len(store.events(match_id)) == events
    assert len(table.pipeline.recognised) == 6
    # past where the first run stopped, play is recorded
    table.take("09-4")
    table.put("09-4", *ROWS["Ben"][2])
    table.put("09-1", *ROWS["Ben"][3])
    table.run(10)
    assert captures(store, match_id) == {
        "Aki": ["01-1", "01-3", "08-3", "08-4"],
        "Ben": ["03-2", "03-3", "09-1", "09-4"],
    }
    assert len(camera_events(store, match_id)) == 8


class Hands:
    """A 30 fps camera over one capture area: what the detector finds (``seen``: code ->
    (x, y, h)) and what the frame shows are set apart, so that a card held in a hand, a
    nearly still hand, can be seen moving a little while the picture barely changes; a small
    moving spot outside every zone keeps the motion gate looking."""

    FPS = 30

    def __init__(self):
        self.store, self.match_id = new_match()
        self.detector = ScriptedDetector()
        self.pipeline = LivePipeline(self.detector, ZONES, self.store, self.match_id)
        self.field = {c: (x, y, 90.0) for c, (x, y) in zip(DEAL, FIELD_SPOTS, strict=True)}
        self.seen: dict[str, tuple] = {}
        self.index = 0
        self.run(1.5)
        assert self.store.state(self.match_id).round_in_progress

    def run(self, seconds, hand=False):
        for _ in range(round(seconds * self.FPS)):
            image = np.zeros((720, 1280, 3), np.uint8)
            for _, (x, y, h) in {**self.field, **self.seen}.items():
                q = np.array(quad(round(x / 16) * 16, round(y / 16) * 16, h), np.int32)
                image[q[:, 1].min() : q[:, 1].max(), q[:, 0].min() : q[:, 0].max()] = 150
            spot = 40 + (self.index * 7) % 80  # something small moving in a corner
            image[spot : spot + 20, 1230:1260] = 255
            lying = {**self.field, **self.seen}
            self.detector.looks = [] if hand else [(c, xy, 0.95, ()) for c, xy in lying.items()]
            if hand:  # an arm over the capture area
                image[480:720, 200:700] = 90 + (self.index % 5) * 30
            self.pipeline.process(Frame(image, self.index, self.index / self.FPS))
            self.index += 1

    def hover(self, code, x, y, seconds, drift):
        """Held just above its place, drifting slowly towards it (``drift`` pixels a frame)."""
        frames = round(seconds * self.FPS)
        for i in range(frames):
            self.seen[code] = (x - drift * (frames - i), y - 20, 96.0)  # nearer: a bit bigger
            self.run(1 / self.FPS)

    def captured(self):
        return [
            (e.event.card, e.seq)
            for e in self.store.events(self.match_id)
            if e.event.type == "card_captured"
        ]


def test_a_card_held_nearly_still_above_its_place_counts_once_it_lies():
    t = Hands()
    t.field.pop("11-2")
    t.seen["11-2"] = (600, 620, 90.0)  # its partner, laid first
    t.run(1.0)
    assert [c for c, _ in t.captured()] == ["11-2"]
    t.hover("11-1", 640, 620, 1.0, drift=2.0)  # 3.5 cm a second
    assert [c for c, _ in t.captured()] == ["11-2"]  # not while it is held
    t.seen["11-1"] = (644, 622, 90.0)  # let go, a few millimetres off
    t.run(1.5)
    assert [c for c, _ in t.captured()] == ["11-2", "11-1"]


def test_a_card_that_shifts_as_it_is_let_go_is_the_same_card():
    t = Hands()
    t.field.pop("09-4")
    t.seen["09-1"] = (600, 620, 90.0)
    t.seen["09-4"] = (640, 560, 60.0)  # seen partly, under the fingers, before letting go
    t.run(0.6)
    assert sorted(c for c, _ in t.captured()) == ["09-1", "09-4"]
    t.run(0.3, hand=True)
    t.seen["09-4"] = (640, 612, 90.0)  # let go: it drops and slides half a card
    t.run(2.0)
    assert sorted(c for c, _ in t.captured()) == ["09-1", "09-4"]


def test_a_card_under_a_lingering_hand_shows_again_as_the_same_card():
    t = Hands()
    t.field.pop("06-2")
    t.seen["06-1"] = (600, 620, 90.0)
    t.seen["06-2"] = (640, 620, 90.0)
    t.run(0.8)
    assert sorted(c for c, _ in t.captured()) == ["06-1", "06-2"]
    t.run(3.0, hand=True)  # the hand lingers over the row, then leaves, nudging 06-2
    t.seen["06-2"] = (646, 672, 90.0)
    t.run(2.0)
    assert sorted(c for c, _ in t.captured()) == ["06-1", "06-2"]


@pytest.mark.slow
def test_a_recorded_clip_played_twice_on_the_same_database_records_nothing_twice(tmp_path):
    from companion.bench.replay import load_truth
    from companion.bench.restart import replay_with_restarts
    from companion.recognizer import Recognizer
    from companion.simulator.rounds import SimConfig, simulate

    try:
        simulate("traditional-ngs", 12, tmp_path, SimConfig(max_turns=3, p_distractor=0.0))
    except CompanionError as exc:  # no shared decks on this machine
        pytest.skip(str(exc))
    truth = load_truth(tmp_path / "truth.json")
    turns = sorted({e["frame"] for e in truth["events"] if e["event"]["type"] == "card_captured"})
    assert len(turns) >= 2
    store = MatchStore.open(str(tmp_path / "match.db"))
    report = replay_with_restarts(
        tmp_path / "table.mp4",
        Recognizer.load(threads=2),
        truth=truth,
        restarts=[turns[1] + 10],  # killed after two turns, then played again from its start
        from_start=True,
        store=store,
    )
    assert report.rounds_total == 1
    first = [e for e in truth["events"] if e["event"]["type"] == "card_captured"]
    assert report.recognised >= len([e for e in first if e["frame"] <= turns[1]]) - 1
    assert report.captures_added == 0 and report.captures_misnamed == 0
    assert report.captures_missed <= 1
    cards = [e.event.card for e in store.events(1) if e.event.type == "card_captured"]
    assert len(cards) == len(set(cards)) == len(first) - report.captures_missed


def test_a_restart_after_a_round_ended_waits_for_the_table_to_be_gathered_and_dealt():
    store, match_id = new_match()
    before = six_captures(store, match_id)
    before.put("10-1", 690, 300)  # turned from the pile, matching nothing
    before.put("12-1", 690, 420)
    before.run(10)
    store.append(match_id, {"type": "cards_ran_out"})  # the round ended on the tablet
    assert not store.state(match_id).round_in_progress
    # killed before the cards were gathered; started again with them lying as they were
    table = start(store, match_id, {}, 0)
    table.cards = dict(before.cards)
    table.run(40)
    assert [e.event.type for e in store.events(match_id)][-1] == "cards_ran_out"
    table.cards.clear()  # gathered
    table.run(30)
    deal = ["01-2", "03-1", "04-2", "06-1", "07-3", "08-1", "10-2", "12-4"]
    for code, (x, y) in zip(deal, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(20)
    state = store.state(match_id)
    assert state.round_number == 2 and state.round_in_progress
    assert sorted(c.code for c in state.field) == deal


def test_a_restart_on_a_dealt_field_opens_the_next_round():
    store, match_id = new_match()
    six_captures(store, match_id)
    store.append(match_id, {"type": "cards_ran_out"})
    # killed after the table was gathered and dealt again, before the round was opened
    deal = ["01-2", "03-1", "04-2", "06-1", "07-3", "08-1", "10-2", "12-4"]
    start(store, match_id, dict(zip(deal, FIELD_SPOTS, strict=True)), 30)
    state = store.state(match_id)
    assert state.round_number == 2 and sorted(c.code for c in state.field) == deal


def test_a_restart_while_a_koi_or_stop_is_awaited_goes_on_after_the_tap():
    store, match_id = new_match()
    table = start(store, match_id)
    # Aki takes the crane and the curtain with their partners: a yaku waits for his call
    for dealt, hand, spots in (("01-1", "01-3", (0, 1)), ("03-3", "03-1", (2, 3))):
        table.take(dealt)
        table.put(dealt, *ROWS["Aki"][spots[0]])
        table.put(hand, *ROWS["Aki"][spots[1]])
        table.run(10)
    table.take("08-3")
    table.put("08-3", 700, 620)
    table.put("08-1", 734, 620)
    table.run(10)
    assert store.state(match_id).pending_decision == "Aki"
    events = len(store.events(match_id))
    again = start(store, match_id, {}, 0)
    again.cards = dict(table.cards)
    again.run(30)
    assert len(store.events(match_id)) == events
    store.append(match_id, {"type": "koi_called", "player": "Aki"})
    again.take("05-1")
    again.put("05-1", *ROWS["Ben"][0])
    again.put("05-3", *ROWS["Ben"][1])
    again.run(15)
    assert captures(store, match_id)["Ben"] == ["05-1", "05-3"]


DEAL_2 = ["01-2", "03-1", "04-2", "06-1", "07-3", "08-1", "10-2", "12-4"]


def play_two_rounds(store, match_id, table):
    """Round 1 (two captures, then gathered), round 2 dealt and one capture made."""
    table.take("08-3")
    table.put("08-3", *ROWS["Aki"][0])
    table.put("08-4", *ROWS["Aki"][1])
    table.run(10)
    if store.state(match_id).round_number == 1 and store.state(match_id).round_in_progress:
        store.append(match_id, {"type": "cards_ran_out"})
    table.run(5)
    table.cards.clear()
    table.run(30)
    for code, (x, y) in zip(DEAL_2, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(20)
    table.take("06-1")
    table.put("06-1", *ROWS["Ben"][0])
    table.put("06-3", *ROWS["Ben"][1])
    table.run(10)


def test_a_recording_played_again_from_an_earlier_round_records_nothing_twice():
    store, match_id = new_match()
    play_two_rounds(store, match_id, start(store, match_id))
    state = store.state(match_id)
    assert state.round_number == 2 and captures(store, match_id)["Ben"] == ["06-1", "06-3"]
    events = len(store.events(match_id))
    # the same recording from its start: round 1 is shown again, then round 2
    table = start(store, match_id)
    play_two_rounds(store, match_id, table)
    assert len(store.events(match_id)) == events
    assert captures(store, match_id) == {"Aki": [], "Ben": ["06-1", "06-3"]}
    table.take("12-4")  # and play goes on past where it stopped
    table.put("12-4", *ROWS["Aki"][2])
    table.put("12-1", *ROWS["Aki"][3])
    table.run(10)
    assert captures(store, match_id) == {"Aki": ["12-1", "12-4"], "Ben": ["06-1", "06-3"]}


def test_a_restarted_replay_without_truth_plays_the_layouts_game(tmp_path):
    """No truth file, the three-seat layout: Hana-Awase at three seats, as a replay without
    restarts plays it."""
    import cv2

    from companion.bench.restart import replay_with_restarts
    from companion.live.zones import default_zones

    video = tmp_path / "empty_table.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10, (64, 36))
    for _ in range(6):
        writer.write(np.zeros((36, 64, 3), np.uint8))
    writer.release()
    store = MatchStore.open(":memory:")
    zones = default_zones(3)
    replay_with_restarts(video, ScriptedDetector(), zones=zones, restarts=[3], store=store)
    (started,) = [e.event for e in store.events(1) if e.event.type == "match_started"]
    assert (list(started.players), started.rules) == (["A", "B", "C"], "hana-awase")

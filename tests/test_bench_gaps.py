"""The gap matrix's parts that need no video: where each kind of moment lies in a truth, how
the replay's players end on the tablet a round the camera did not see end, and how a cell is
scored."""

from __future__ import annotations

from companion.bench.gaps import RememberingDetector, _cell, moments
from companion.bench.replay import ReplayReport, RoundReport, _Answers
from companion.store import MatchStore

TRUTH = {
    "fps": 10,
    "events": [
        {"frame": 0, "event": {"type": "match_started", "players": ["A", "B"]}},
        {"frame": 100, "event": {"type": "round_started", "field": ["01-1"]}},
        {"frame": 170, "steady_frame": 150, "event": {"type": "card_captured", "player": "A",
                                                       "card": "08-1"}},
        {"frame": 170, "steady_frame": 160, "event": {"type": "card_captured", "player": "A",
                                                       "card": "08-2"}},
        {"frame": 500, "event": {"type": "koi_called", "player": "B"}},
        {"frame": 600, "event": {"type": "stop_called", "player": "A"}},
        {"frame": 790, "event": {"type": "round_started", "field": ["02-1"]}},
        {"frame": 1300, "event": {"type": "cards_ran_out"}},
    ],
    "rounds": [
        {"round": 1, "first_frame": 10, "last_frame": 690, "points": {"A": 6, "B": -6}},
        {"round": 2, "first_frame": 700, "last_frame": 1400, "points": {"A": 0, "B": 0}},
    ],
}  # fmt: skip


def test_each_kind_of_moment_is_found_in_the_truth():
    assert moments(TRUTH) == {
        "capture": 150,  # the first capture's card lying still
        "koi": 500,
        "stop": 600,
        "gathering": 620,  # the final table lies still 2 s, then is swept
        "deal": 700,  # the next round's first frame
    }
    assert moments({"events": [], "rounds": []}) == {}


def test_a_round_whose_cards_went_unseen_is_ended_on_the_tablet_as_it_went():
    store = MatchStore.open(":memory:")
    match_id = store.create_match(players=["A", "B"], rules="livret", rounds=6, oya="A")
    store.append(match_id, {"type": "round_started", "field": []})
    store.append(match_id, {"type": "card_captured", "player": "A", "card": "08-1"})
    told = _Answers(TRUTH, "none").round_told(store.state(match_id))
    assert told == [
        {"type": "card_captured", "player": "A", "card": "08-2"},  # not recorded: typed
        {"type": "koi_called", "player": "B"},
        {"type": "stop_called", "player": "A"},
    ]
    assert _Answers(None, "none").round_told(store.state(match_id)) == [
        {"type": "cards_ran_out"}
    ]


def _report(*exact: bool, extra: bool = False) -> ReplayReport:
    report = ReplayReport(truth=True, rounds_total=len(exact))
    for n, right in enumerate(exact, 1):
        points = {"A": 1, "B": -1}
        truth = points if right else {"A": 0, "B": 0}
        report.rounds.append(RoundReport(n, {}, points, [], truth_points=truth))
    if extra:
        report.rounds.append(RoundReport(len(exact) + 1, {}, {"A": 0, "B": 0}, []))
    return report


def test_a_cell_is_exact_pending_or_silently_wrong():
    assert _cell(_report(True, True), None)["verdict"] == "exact"
    assert _cell(_report(True, False), "decision")["verdict"] == "pending"
    wrong = _cell(_report(True, False), None)
    assert wrong["verdict"] == "wrong" and wrong["wrong_rounds"] == [2]
    never = _cell(_report(True, True, extra=True), None)  # a round that never was
    assert never["verdict"] == "wrong" and never["extra_rounds"] == [3]
    # a round the plain replay scores wrong too is the camera's own miss, not the cut's
    assert _cell(_report(True, False), None, baseline=[2])["verdict"] == "exact"
    assert _cell(_report(False, False), None, baseline=[2])["verdict"] == "wrong"


def test_the_remembering_detector_looks_at_each_picture_once():
    import numpy as np

    class Counting:
        verify = True

        def __init__(self):
            self.calls = 0

        def detect(self, image):
            self.calls += 1
            return int(image.sum())

    inner = Counting()
    remembering = RememberingDetector(inner)
    a, b = np.zeros((4, 4, 3), np.uint8), np.ones((4, 4, 3), np.uint8)
    assert [remembering.detect(x) for x in (a, b, a.copy(), b)] == [0, 48, 0, 48]
    assert inner.calls == 2 and remembering.hits == 2
    remembering.verify = False  # a pipeline turning the taught deck's check off reaches it
    assert inner.verify is False

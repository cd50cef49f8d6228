"""Turns order the captures: a lone card the turns say its seat cannot be capturing (a look at a
row of captures that settled as a hand left) is held until a card of its month pairs with it."""

from __future__ import annotations

import numpy as np

from companion.game.engine import apply, replay
from companion.live.capture_decider import CaptureDecider
from companion.live.settings import DeciderSettings
from companion.live.tracker import Arrival, TableState

SEATS = {"A": "A", "B": "B", "C": "C"}


def _card(track, seat, at, *candidates):
    """A card lying still in ``seat``'s captures since ``at`` seconds."""
    frame = round(at * 10)
    return Arrival(
        track,
        seat,
        tuple(candidates),
        frame,
        np.zeros((4, 2)),
        quiet_since=frame,
        steady_time=at,
        quiet_time=at,
    )


class _Table:
    """A three-seat Hana-Awase round the decider watches, its decisions recorded."""

    def __init__(self, decider=None):
        self.decider = decider or CaptureDecider()
        self.match = replay(
            [
                {
                    "type": "match_started",
                    "players": ["A", "B", "C"],
                    "rules": "hana-awase",
                    "rounds": 6,
                },
                {"type": "round_started"},
            ]
        )

    def look(self, at, *cards, backs=0):
        """The decider's look at ``at`` seconds with ``cards`` lying new (and ``backs`` of the
        pile in sight); what it decided (a capture as its player and card)."""
        arrivals = {seat: tuple(c for c in cards if c.seat == seat) for seat in SEATS}
        table = TableState(frame=round(at * 10), time=at, arrivals=arrivals, backs=backs)
        decided = self.decider.step(table, self.match, seats=SEATS)
        for decision in decided:
            self.match = apply(self.match, decision.event)
        return [
            (d.event.player, d.event.card) if d.event.type == "card_captured" else d.event.type
            for d in decided
        ]


def test_a_lone_card_in_a_seat_just_after_another_seats_capture_is_held():
    table = _Table()
    assert table.look(10.1, _card(1, "C", 10.0, ("03-1", 0.95))) == [("C", "03-1")]
    assert table.look(11.1, _card(2, "C", 11.0, ("03-4", 0.95))) == [("C", "03-4")]
    # as C's hand leaves, a look between two of A's captures settles, read surely
    phantom = _card(3, "A", 11.5, ("08-3", 0.6), ("08-4", 0.25))
    assert table.look(11.6, phantom) == []
    # C's draw goes on pairing; then B's turn, a few seconds on, is a turn of its own
    assert table.look(12.6, phantom, _card(4, "C", 12.5, ("10-3", 0.95))) == [("C", "10-3")]
    assert table.look(16.1, phantom, _card(5, "B", 16.0, ("07-4", 0.95))) == [("B", "07-4")]
    assert table.look(25.0, phantom) == []  # held, however long it lies
    # a card of its month reaching A's captures pairs with it: both are captures
    mate = _card(6, "A", 30.0, ("08-1", 0.95))
    assert sorted(table.look(30.1, phantom, mate)) == [("A", "08-1"), ("A", "08-3")]


def test_a_third_capture_in_one_turn_is_held():
    table = _Table()
    for i, (code, at) in enumerate([("07-4", 56.4), ("07-3", 58.5), ("11-2", 60.1), ("11-4", 61.2)]):
        assert table.look(at + 0.1, _card(i, "A", at, (code, 0.95))) == [("A", code)]
    # the turn laid its two cards: a lone card settling as A's hand leaves is no capture
    assert table.look(61.6, _card(9, "A", 61.5, ("03-1", 0.94))) == []
    # his next turn, after the others played, captures again
    assert table.look(72.6, _card(10, "A", 72.5, ("04-1", 0.95))) == [("A", "04-1")]


def test_a_quick_next_player_first_card_waits_only_for_its_partner():
    table = _Table()
    assert table.look(10.1, _card(1, "C", 10.0, ("03-1", 0.95))) == [("C", "03-1")]
    first = _card(2, "B", 11.0, ("09-1", 0.95))
    assert table.look(11.1, first) == []  # too soon after C's card to be B's turn
    partner = _card(3, "B", 12.0, ("09-3", 0.9))
    assert sorted(table.look(12.1, first, partner)) == [("B", "09-1"), ("B", "09-3")]
    # with no time given to a turn, nothing is held
    eager = _Table(CaptureDecider(DeciderSettings(turn_open=0.0)))
    assert eager.look(10.1, _card(1, "C", 10.0, ("03-1", 0.95))) == [("C", "03-1")]
    assert eager.look(11.1, _card(2, "B", 11.0, ("09-1", 0.95))) == [("B", "09-1")]


def test_a_card_held_out_of_turn_does_not_keep_the_round_from_ending():
    table = _Table()
    assert table.look(10.1, _card(1, "C", 10.0, ("03-1", 0.95)), backs=3) == [("C", "03-1")]
    phantom = _card(2, "A", 10.5, ("08-3", 0.9))
    assert table.look(10.6, phantom, backs=3) == []
    # the pile gone a while, the held card still lying: the cards ran out
    assert table.look(11.0, phantom) == []
    assert table.look(14.0, phantom) == ["cards_ran_out"]

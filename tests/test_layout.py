"""Zones proposed from the dealt field (companion/live/layout.py)."""

from __future__ import annotations

import pytest

from companion.live.layout import zones_from_field
from companion.live.zones import ZoneError

CARD_W, CARD_H = 0.05, 0.12


def field(columns=4, rows=2, x0=0.3, y0=0.35, step=0.07, row_step=0.15):
    return [
        (x0 + i * step, y0 + j * row_step, x0 + i * step + CARD_W, y0 + j * row_step + CARD_H)
        for j in range(rows)
        for i in range(columns)
    ]


def test_the_field_zone_wraps_the_dealt_cards_with_half_a_card_of_margin():
    boxes = field()
    zones = zones_from_field(boxes)
    margin = 0.5 * CARD_H
    xs = [p[0] for p in zones["field"].polygon]
    ys = [p[1] for p in zones["field"].polygon]
    assert min(xs) == pytest.approx(0.3 - margin, abs=1e-4)
    assert max(xs) == pytest.approx(0.3 + 3 * 0.07 + CARD_W + margin, abs=1e-4)
    assert min(ys) == pytest.approx(0.35 - margin, abs=1e-4)
    assert max(ys) == pytest.approx(0.35 + 0.15 + CARD_H + margin, abs=1e-4)
    for x0, y0, x1, y1 in boxes:  # every dealt card lies in the field, none in a capture area
        assert zones.zone_of((x0 + x1) / 2, (y0 + y1) / 2) == "field"
    assert zones.zone_of(0.5, 0.97) == "captures_A"
    assert zones.zone_of(0.5, 0.03) == "captures_B"
    pile = zones["draw_pile"].polygon
    assert min(p[0] for p in pile) == pytest.approx(max(xs), abs=1e-4)  # right beside the field


def test_three_players_share_the_top_edge():
    zones = zones_from_field(field(), players=3)
    assert zones.players == ("A", "B", "C")
    assert zones.zone_of(0.25, 0.03) == "captures_B" and zones.zone_of(0.75, 0.03) == "captures_C"


def test_the_draw_pile_goes_left_when_the_field_reaches_the_right_edge():
    zones = zones_from_field(field(x0=0.7))
    pile = zones["draw_pile"].polygon
    assert max(p[0] for p in pile) <= min(p[0] for p in zones["field"].polygon) + 1e-6


@pytest.mark.parametrize(
    "boxes, players, words",
    [
        (field()[:3], 2, "sees 3 face-up cards"),
        ([], 2, "sees 0 face-up cards"),
        (field(rows=2, y0=0.05, row_step=0.4), 2, "no room for the capture areas"),
        (field(), 4, "No proposed layout for 4 players"),
        ([("a", 0, 1, 1)] * 4, 2, "four numbers"),
    ],
)
def test_no_proposal_without_a_usable_field(boxes, players, words):
    with pytest.raises(ZoneError, match=words.replace("(", r"\(").replace(")", r"\)")):
        zones_from_field(boxes, players)

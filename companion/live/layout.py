"""A table layout proposed from the dealt field: the calibration page's starting point.

When the field has just been dealt, the face-up cards in view are the field. The field zone is
their bounding box with half a card of margin; the capture areas fill the bands between the
field and the image's edges (A along the bottom, B, or B and C, along the top, as in
``default_zones``); the draw pile goes beside the field where there is room. Boxes and the
result are in normalised image coordinates (0..1). The players then adjust the corners.
"""

from __future__ import annotations

from statistics import median

from companion.live.messages import Message
from companion.live.zones import CAPTURES, DRAW_PILE, FIELD, SEATS, Zone, ZoneError, Zones

MIN_FIELD_CARDS = 4
EDGE = 0.005  # keep corners this far inside the image
GAP = 0.01  # between the field and the capture areas


def _rect(x0, y0, x1, y1):
    x0, x1 = max(EDGE, x0), min(1 - EDGE, x1)
    y0, y1 = max(EDGE, y0), min(1 - EDGE, y1)
    return [
        [round(x0, 4), round(y0, 4)],
        [round(x1, 4), round(y0, 4)],
        [round(x1, 4), round(y1, 4)],
        [round(x0, 4), round(y1, 4)],
    ]


def zones_from_field(boxes, players: int = 2) -> Zones:
    """The layout that fits a dealt field of card ``boxes`` [(x0, y0, x1, y1), ...]."""
    if players not in (2, 3):
        raise ZoneError(f"No proposed layout for {players} players: drag the corners instead.")
    try:
        cards = [tuple(float(v) for v in box) for box in boxes or []]
    except (TypeError, ValueError):
        raise ZoneError("A card box is four numbers: x0, y0, x1, y1.") from None
    cards = [c for c in cards if len(c) == 4 and c[2] > c[0] and c[3] > c[1]]
    if len(cards) < MIN_FIELD_CARDS:
        raise ZoneError(Message("zone.field_too_few_cards", n=len(cards), least=MIN_FIELD_CARDS))
    width = median(c[2] - c[0] for c in cards)
    height = median(c[3] - c[1] for c in cards)
    margin = 0.5 * max(width, height)
    fx0 = min(c[0] for c in cards) - margin
    fy0 = min(c[1] for c in cards) - margin
    fx1 = max(c[2] for c in cards) + margin
    fy1 = max(c[3] for c in cards) + margin
    fy0, fy1 = max(fy0, EDGE), min(fy1, 1 - EDGE)
    if fy0 - GAP < height or 1 - (fy1 + GAP) < height:
        raise ZoneError(Message("zone.field_no_room"))
    zones = [Zone(FIELD, _rect(fx0, fy0, fx1, fy1))]
    pile_w, pile_h = 1.6 * width, 1.6 * height
    cy = (fy0 + fy1) / 2
    if 1 - EDGE - fx1 >= pile_w:  # room at the right
        zones.append(Zone(DRAW_PILE, _rect(fx1, cy - pile_h / 2, fx1 + pile_w, cy + pile_h / 2)))
    elif fx0 - EDGE >= pile_w:  # else at the left
        zones.append(Zone(DRAW_PILE, _rect(fx0 - pile_w, cy - pile_h / 2, fx0, cy + pile_h / 2)))
    seats = SEATS[:players]
    zones.append(Zone(f"{CAPTURES}A", _rect(0, fy1 + GAP, 1, 1), "A"))
    top = fy0 - GAP
    if players == 2:
        zones.append(Zone(f"{CAPTURES}B", _rect(0, 0, 1, top), "B"))
    else:
        zones.append(Zone(f"{CAPTURES}B", _rect(0, 0, 0.5, top), "B"))
        zones.append(Zone(f"{CAPTURES}C", _rect(0.5, 0, 1, top), "C"))
    return Zones(f"proposed-{players}p", seats, tuple(zones))

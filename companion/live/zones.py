"""Table zones: named polygons in normalised image coordinates (0..1), kept in TOML.

A layout names the field, the draw pile and one capture area per player. Coordinates are
fractions of the image's width and height, so a layout survives a change of resolution.
The file format (``calibration/*.toml``)::

    name = "default-2p"
    players = ["A", "B"]

    [zones.field]
    polygon = [[0.15, 0.30], [0.85, 0.30], [0.85, 0.70], [0.15, 0.70]]

    [zones.draw_pile]
    polygon = [[0.86, 0.38], [0.99, 0.38], [0.99, 0.62], [0.86, 0.62]]

    [zones.captures_A]
    player = "A"
    polygon = [[0.0, 0.72], [1.0, 0.72], [1.0, 1.0], [0.0, 1.0]]

A zone is ``field``, ``draw_pile`` or ``captures_<P>`` with ``player = "<P>"``; players are
seat labels (A, B, C) that the pipeline maps onto the match's players in seat order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from companion import CompanionError
from companion.game.cards import parse_toml
from companion.live.messages import Message

FIELD = "field"
DRAW_PILE = "draw_pile"
CAPTURES = "captures_"
SEATS = ("A", "B", "C", "D")


class ZoneError(CompanionError):
    """A zone file or polygon that cannot be used (one sentence)."""


@dataclass(frozen=True)
class Zone:
    """One named polygon; ``player`` is set for a capture area."""

    name: str
    polygon: tuple[tuple[float, float], ...]
    player: str | None = None

    def __post_init__(self):
        points = _polygon(self.polygon, self.name)
        object.__setattr__(self, "polygon", points)

    @property
    def kind(self) -> str:
        if self.name.startswith(CAPTURES):
            return "captures"
        return self.name

    def contains(self, x: float, y: float) -> bool:
        """Whether the normalised point (x, y) lies inside (even-odd rule)."""
        inside = False
        pts = self.polygon
        j = len(pts) - 1
        for i in range(len(pts)):
            xi, yi = pts[i]
            xj, yj = pts[j]
            if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
                inside = not inside
            j = i
        return inside

    def pixels(self, width: int, height: int) -> np.ndarray:
        """The polygon in pixels of a ``width`` x ``height`` image, (K, 2) float32."""
        return np.array(self.polygon, np.float32) * np.array([width, height], np.float32)


@dataclass(frozen=True)
class Zones:
    """A table layout: its zones in a fixed order, and the seat labels it knows."""

    name: str
    players: tuple[str, ...]
    zones: tuple[Zone, ...] = field(default_factory=tuple)

    def __post_init__(self):
        names = [z.name for z in self.zones]
        if len(set(names)) != len(names):
            raise ZoneError("Two zones of the layout have the same name.")
        for player in self.players:
            if f"{CAPTURES}{player}" not in names:
                raise ZoneError(f"The layout has no capture area for player {player}.")
        if FIELD not in names:
            raise ZoneError("The layout has no field zone.")

    def __getitem__(self, name: str) -> Zone:
        for zone in self.zones:
            if zone.name == name:
                return zone
        raise KeyError(name)

    def __iter__(self):
        return iter(self.zones)

    def captures(self, player: str) -> Zone:
        return self[f"{CAPTURES}{player}"]

    def zone_of(self, x: float, y: float) -> str | None:
        """The name of the zone holding the normalised point; capture areas first (they may
        overlap the field's margin), then the field, then the draw pile; None outside all."""
        order = sorted(self.zones, key=lambda z: (z.kind != "captures", z.name != FIELD))
        for zone in order:
            if zone.contains(x, y):
                return zone.name
        return None

    def zones_of(self, points: np.ndarray, width: int, height: int) -> list[str | None]:
        """The zone of each pixel point of ``points`` (N, 2) in a ``width`` x ``height`` image."""
        pts = np.asarray(points, np.float64).reshape(-1, 2)
        return [self.zone_of(px / width, py / height) for px, py in pts]

    @staticmethod
    def load(path: str | Path) -> Zones:
        """A layout from a TOML file; ZoneError with one sentence when it cannot be used."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or "not UTF-8 text"
            raise ZoneError(f"Cannot read the zone file {path}: {reason}.") from None
        return Zones.from_toml(text, default_name=path.stem)

    @staticmethod
    def from_toml(text: str, default_name: str = "zones") -> Zones:
        data = parse_toml(text, Message("phrase.the_zone_file"), ZoneError)
        return Zones.from_dict(data, default_name=default_name)

    @staticmethod
    def from_dict(data: dict, default_name: str = "zones") -> Zones:
        if not isinstance(data, dict) or not isinstance(data.get("zones"), dict):
            raise ZoneError("A zone file needs a [zones.<name>] table for each zone.")
        zones = []
        for name, spec in data["zones"].items():
            _check_label(name, "zone name")
            if not isinstance(spec, dict) or "polygon" not in spec:
                raise ZoneError(f"Zone {name!r} needs a polygon.")
            player = spec.get("player")
            if name.startswith(CAPTURES):
                player = player or name[len(CAPTURES) :]
                if name != f"{CAPTURES}{player}":
                    raise ZoneError(f"Zone {name!r} must be named captures_{player}.")
            elif name not in (FIELD, DRAW_PILE):
                raise ZoneError(
                    f"Unknown zone {name!r}: expected field, draw_pile or captures_<player>."
                )
            zones.append(Zone(name, spec["polygon"], player))
        players = data.get("players")
        if players is None:
            players = [z.player for z in zones if z.player]
        if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
            raise ZoneError('\'players\' must be a list of seat labels such as ["A", "B"].')
        for player in players:
            _check_label(player, "seat label")
        name = data.get("name", default_name)
        _check_label(str(name), "layout name")
        return Zones(str(name), tuple(players), tuple(zones))

    def to_dict(self) -> dict:
        zones = {}
        for zone in self.zones:
            spec: dict = {"polygon": [list(p) for p in zone.polygon]}
            if zone.player:
                spec = {"player": zone.player, **spec}
            zones[zone.name] = spec
        return {"name": self.name, "players": list(self.players), "zones": zones}

    def to_toml(self) -> str:
        lines = [
            "# Table zones: polygons in normalised image coordinates (0..1 from the top left).",
            f"name = {_toml_str(self.name)}",
            "players = [" + ", ".join(_toml_str(p) for p in self.players) + "]",
        ]
        for zone in self.zones:
            lines += ["", f"[zones.{zone.name}]"]
            if zone.player:
                lines.append(f"player = {_toml_str(zone.player)}")
            points = ", ".join(f"[{x:.4f}, {y:.4f}]" for x, y in zone.polygon)
            lines.append(f"polygon = [{points}]")
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text(self.to_toml(), encoding="utf-8")
            tmp.replace(path)  # atomic: a crash never leaves half a file
        except OSError as exc:
            raise ZoneError(f"Cannot write the zone file {path}: {exc.strerror}.") from None
        return path

    def with_polygon(self, name: str, polygon) -> Zones:
        """A copy with zone ``name``'s polygon replaced (the calibration page's drag)."""
        self[name]  # KeyError for an unknown zone
        zones = tuple(Zone(z.name, polygon, z.player) if z.name == name else z for z in self)
        return Zones(self.name, self.players, zones)


def default_zones(players: int = 2) -> Zones:
    """The layout that works with no set-up: two players facing each other across the image
    (A's captures along the bottom edge, B's along the top), the field in the middle, the
    draw pile at the right; with three players B and C share the top edge."""
    if players == 2:
        captures = [
            Zone("captures_A", [[0.0, 0.72], [1.0, 0.72], [1.0, 1.0], [0.0, 1.0]], "A"),
            Zone("captures_B", [[0.0, 0.0], [1.0, 0.0], [1.0, 0.28], [0.0, 0.28]], "B"),
        ]
    elif players == 3:
        captures = [
            Zone("captures_A", [[0.0, 0.72], [1.0, 0.72], [1.0, 1.0], [0.0, 1.0]], "A"),
            Zone("captures_B", [[0.0, 0.0], [0.5, 0.0], [0.5, 0.28], [0.0, 0.28]], "B"),
            Zone("captures_C", [[0.5, 0.0], [1.0, 0.0], [1.0, 0.28], [0.5, 0.28]], "C"),
        ]
    else:
        raise ZoneError(f"No default layout for {players} players: give a zone file.")
    field_zone = Zone(FIELD, [[0.12, 0.30], [0.85, 0.30], [0.85, 0.70], [0.12, 0.70]])
    pile = Zone(DRAW_PILE, [[0.86, 0.36], [0.99, 0.36], [0.99, 0.64], [0.86, 0.64]])
    seats = SEATS[:players]
    return Zones(f"default-{players}p", seats, (field_zone, pile, *captures))


# What a zone drawn over a table can be. A zone with more corners than MAX_CORNERS is not one
# a person drags (the page offers 4 to 8); one smaller than MIN_AREA (a fraction of the
# picture: 0.2 %, about one card's corner at 720p) catches no card; a self-crossing outline
# has no clear inside. Raise MAX_CORNERS for finely traced zones, lower MIN_AREA for a camera
# far above a large table.
MAX_CORNERS = 32
MIN_AREA = 0.002


def _polygon(points, name: str) -> tuple[tuple[float, float], ...]:
    try:
        pts = tuple((float(x), float(y)) for x, y in points)
    except (TypeError, ValueError, OverflowError):
        raise ZoneError(f"Zone {name!r}: a polygon is a list of [x, y] pairs.") from None
    if len(pts) < 3:
        raise ZoneError(f"Zone {name!r}: a polygon needs at least 3 corners.")
    if len(pts) > MAX_CORNERS:
        raise ZoneError(
            Message("zone.too_many_corners", zone=repr(name), n=len(pts), most=MAX_CORNERS)
        )
    for x, y in pts:
        if not (math.isfinite(x) and math.isfinite(y)) or not (
            -0.01 <= x <= 1.01 and -0.01 <= y <= 1.01
        ):
            raise ZoneError(
                f"Zone {name!r}: corners are fractions of the image, from 0 to 1, not ({x}, {y})."
            )
    # Corners all on one line first: their edges overlap, which is no crossing but no area.
    if not _all_aligned(pts) and crosses_itself(pts):
        raise ZoneError(Message("zone.crosses_itself", zone=repr(name)))
    if polygon_area(pts) < MIN_AREA:
        raise ZoneError(
            Message(
                "zone.too_small",
                zone=repr(name),
                share=f"{polygon_area(pts):.2%}",
                least=f"{MIN_AREA:.1%}",
            )
        )
    return pts


def _all_aligned(points) -> bool:
    (x0, y0), rest = points[0], points[1:]
    far = max(rest, key=lambda p: abs(p[0] - x0) + abs(p[1] - y0))
    return all(abs((far[0] - x0) * (y - y0) - (far[1] - y0) * (x - x0)) < 1e-9 for x, y in rest)


def polygon_area(points) -> float:
    """The area of a simple polygon (shoelace formula), in fractions of the picture."""
    total = 0.0
    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1], strict=True):
        total += x1 * y2 - x2 * y1
    return abs(total) / 2


def crosses_itself(points) -> bool:
    """Whether two edges of the closed outline that do not share a corner meet."""
    n = len(points)
    edges = [(points[i], points[(i + 1) % n]) for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if j == i + 1 or (i == 0 and j == n - 1):
                continue  # neighbours share a corner
            if _segments_meet(*edges[i], *edges[j]):
                return True
    return False


def _segments_meet(a, b, c, d) -> bool:
    def side(p, q, r) -> float:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    def within(p, q, r) -> bool:  # r on the segment pq, knowing the three are aligned
        return min(p[0], q[0]) <= r[0] <= max(p[0], q[0]) and min(p[1], q[1]) <= r[1] <= max(
            p[1], q[1]
        )

    d1, d2, d3, d4 = side(c, d, a), side(c, d, b), side(a, b, c), side(a, b, d)
    if ((d1 > 0 > d2) or (d1 < 0 < d2)) and ((d3 > 0 > d4) or (d3 < 0 < d4)):
        return True
    return (
        (d1 == 0 and within(c, d, a))
        or (d2 == 0 and within(c, d, b))
        or (d3 == 0 and within(a, b, c))
        or (d4 == 0 and within(a, b, d))
    )


MAX_LABEL_LENGTH = 40


def _check_label(text, what: str) -> None:
    """A zone, seat or layout name is printable text (no NUL, newline or escape) and short."""
    text = str(text)
    if not text or len(text) > MAX_LABEL_LENGTH or not text.isprintable():
        shown = ascii(text) if len(text) <= MAX_LABEL_LENGTH else ascii(text[:36]) + "..."
        raise ZoneError(
            f"A {what} is printable text of 1 to {MAX_LABEL_LENGTH} characters, not {shown}."
        )


def _toml_str(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'

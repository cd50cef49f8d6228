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
        data = parse_toml(text, "the zone file", ZoneError)
        return Zones.from_dict(data, default_name=default_name)

    @staticmethod
    def from_dict(data: dict, default_name: str = "zones") -> Zones:
        if not isinstance(data, dict) or not isinstance(data.get("zones"), dict):
            raise ZoneError("A zone file needs a [zones.<name>] table for each zone.")
        zones = []
        for name, spec in data["zones"].items():
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
        name = data.get("name", default_name)
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


def _polygon(points, name: str) -> tuple[tuple[float, float], ...]:
    try:
        pts = tuple((float(x), float(y)) for x, y in points)
    except (TypeError, ValueError):
        raise ZoneError(f"Zone {name!r}: a polygon is a list of [x, y] pairs.") from None
    if len(pts) < 3:
        raise ZoneError(f"Zone {name!r}: a polygon needs at least 3 corners.")
    for x, y in pts:
        if not (math.isfinite(x) and math.isfinite(y)) or not (
            -0.01 <= x <= 1.01 and -0.01 <= y <= 1.01
        ):
            raise ZoneError(
                f"Zone {name!r}: corners are fractions of the image, from 0 to 1, not ({x}, {y})."
            )
    return pts


def _toml_str(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'

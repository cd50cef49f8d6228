"""A Koi-Koi match played by scripted players, as the camera will film it: ``plan_match(seed,
config)`` deals a seeded shuffle and plays each turn's play and draw and the scripted Koi/Stop
answers through the real engine (``companion.game.engine``), so the truth is the engine's, never
a score computed here. Every physical action becomes a ``Move`` of one or more cards between
table poses over a span of frames, carried by a player's hand (``ArmSpan``); a ``MatchPlan``
holds them all. ``companion.simulator.rounds`` films it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from companion import CompanionError
from companion.game.cards import ALL_CODES, Card, Category
from companion.game.engine import MatchStarted, apply
from companion.game.rules import RuleSet
from companion.simulator import synth
from companion.simulator.lens import Lens

PLAYERS = ("A", "B")  # the two-player table
SEATS = ("A", "B", "C")
# Play goes round the table counter-clockwise (RULES.md), as the camera sees it from above: A
# at the bottom edge, then C at the top right, then B at the top left (``default_zones(3)``).
AROUND = {2: ("A", "B"), 3: ("A", "C", "B")}
_VALUES = {Category.BRIGHT: 20, Category.ANIMAL: 10, Category.RIBBON: 5, Category.CHAFF: 1}
_ROW_OF = {
    Category.BRIGHT: "brights",
    Category.ANIMAL: "animals",
    Category.RIBBON: "ribbons",
    Category.CHAFF: "chaff",
}


class SimulateError(CompanionError):
    """Bad input for a simulation (one sentence)."""


@dataclass(frozen=True)
class SimConfig:
    """What the simulated camera and players do; every random choice comes from the seed."""

    width: int = 1280
    height: int = 720
    fps: int = 10
    rules: str = "livret"
    rounds: int = 1
    # End each round after this many turns (cards_ran_out): short videos for tests.
    max_turns: int | None = None
    card_px: float = 90.0  # card height at the image centre, at 720 rows (TABLE.md)
    tilt_deg: tuple[float, float] = (4.0, 14.0)  # camera tilt from straight down, from A's side
    lens_k: tuple[float, float] = (0.0, 0.12)  # a mild wide-angle barrel
    move_s: float = 0.55  # a card move (longer moves take longer, up to ~1 s)
    reach_s: float = 0.35  # an empty hand moving to the next card
    pause_s: float = 0.3  # between the steps of a turn
    p_distractor: float = 0.15  # per turn: an arm crosses the table without playing
    backgrounds: tuple[str, ...] = ()  # texture folders/files; default ../shared/backgrounds
    rows: str = "overlap"  # how captures lie: "overlap" (top 60 % shows) or "apart"
    players: int = 2  # 2, or 3 (B and C share the top edge, as default_zones(3) has them)
    oya: str | None = None  # who deals first (a seat); default: A

    def __post_init__(self):
        if self.rows not in ("overlap", "apart"):
            raise SimulateError(f"Captures lie 'overlap' or 'apart', not {self.rows!r}.")
        if self.players not in AROUND:
            raise SimulateError(f"A simulated table has 2 or 3 players, not {self.players}.")
        if self.oya is not None and self.oya not in self.seats:
            raise SimulateError(
                f"The first dealer is one of the seats {', '.join(self.seats)}, not {self.oya!r}."
            )

    @property
    def seats(self) -> tuple[str, ...]:
        return SEATS[: self.players]

    def frames(self, seconds: float) -> int:
        return max(1, int(round(seconds * self.fps)))


# ---------------------------------------------------------------------------------------------
# The plan: poses, moves, arms, events
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pose:
    """A card on (or above) the table plane: centre in mm, angle in radians (0: its top points
    away from A), face up or down, height above the table in mm."""

    x: float
    y: float
    angle: float
    face_up: bool = True
    lift: float = 0.0
    layer: int = 0  # cards at rest are drawn by layer, then in the order they came to rest


@dataclass(frozen=True)
class Move:
    """Cards going from ``starts`` to ``ends`` over frames ``f0`` .. ``f1`` (at rest from
    ``f1``), carried by ``player``'s hand; ``gone`` cards leave the table (into a hand, or
    gathered) once there."""

    cards: tuple[str, ...]
    f0: int
    f1: int
    starts: tuple[Pose, ...]
    ends: tuple[Pose, ...]
    player: str | None = None
    gone: bool = False
    arc_mm: float = 25.0

    def pose_at(self, i: int, frame: int) -> tuple[Pose, float]:
        """Card ``i``'s pose at ``frame`` and its squash (a card turning over looks narrow)."""
        t = min(1.0, max(0.0, (frame - self.f0) / max(1, self.f1 - self.f0)))
        e = 0.5 - 0.5 * math.cos(math.pi * t)
        a, b = self.starts[i], self.ends[i]
        turn = (b.angle - a.angle + math.pi) % (2 * math.pi) - math.pi
        flips = a.face_up != b.face_up
        pose = Pose(
            a.x + (b.x - a.x) * e,
            a.y + (b.y - a.y) * e,
            a.angle + turn * e,
            (b.face_up if e >= 0.5 else a.face_up) if flips else a.face_up,
            a.lift + (b.lift - a.lift) * e + self.arc_mm * math.sin(math.pi * t),
        )
        squash = max(0.06, abs(math.cos(math.pi * e))) if flips else 1.0
        return pose, squash


@dataclass(frozen=True)
class ArmSpan:
    """A player's hand over frames ``f0`` .. ``f1``: at the grip of ``move`` (carrying), or
    going from table point ``p0`` to ``p1`` (x, y, lift in mm)."""

    player: str
    f0: int
    f1: int
    p0: tuple[float, float, float] = (0.0, 0.0, 0.0)
    p1: tuple[float, float, float] = (0.0, 0.0, 0.0)
    move: Move | None = None

    def point(self, frame: int) -> tuple[float, float, float]:
        if self.move is not None:
            i = len(self.move.cards) - 1
            pose, _ = self.move.pose_at(i, frame)
            return pose.x, pose.y, pose.lift
        t = min(1.0, max(0.0, (frame - self.f0) / max(1, self.f1 - self.f0)))
        e = 0.5 - 0.5 * math.cos(math.pi * t)
        return tuple(a + (b - a) * e for a, b in zip(self.p0, self.p1, strict=True))


@dataclass
class RoundPlan:
    number: int
    oya: str
    first_frame: int
    last_frame: int = 0
    field: list[str] = dataclasses.field(default_factory=list)
    captures: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    winner: str | None = None
    points: dict[str, int] = dataclasses.field(default_factory=dict)
    # Where each captured card finally lies (for checks): code -> Pose
    resting: dict[str, Pose] = dataclasses.field(default_factory=dict)


@dataclass
class MatchPlan:
    config: SimConfig
    seed: int
    view: TableView
    moves: list[Move]
    arms: list[ArmSpan]
    events: list[dict]
    decisions: list[dict]
    rounds: list[RoundPlan]
    frames: int
    rules_name: str
    next_oya: str | None = None  # who deals the round after the last one filmed

    def resting_pose(self, code: str, frame: int) -> Pose | None:
        """Where ``code`` lies at ``frame`` when not moving (None: off the table or moving)."""
        pose = None
        for m in self.moves:
            if code not in m.cards or m.f0 > frame:
                continue
            if m.f1 > frame:
                return None
            pose = None if m.gone else m.ends[m.cards.index(code)]
        return pose


class TableView:
    """The camera: table plane (mm) to image pixels, and the layout in image fractions."""

    def __init__(self, rng: np.random.Generator, cfg: SimConfig):
        self.w, self.h = cfg.width, cfg.height
        self.card_px = cfg.card_px * cfg.height / 720 * float(rng.uniform(0.95, 1.06))
        self.tilt = float(rng.uniform(*cfg.tilt_deg))
        scene_cfg = synth.SceneConfig(width=cfg.width, height=cfg.height)
        hom, self.camera_pos = synth._camera(rng, scene_cfg, self.card_px, self.tilt)
        # A table never sits square to the camera: turn it a little about the image centre.
        self.yaw = float(rng.normal(0, math.radians(1.5)))
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        cx, cy = self.w / 2, self.h / 2
        turn = np.array([[c, -s, cx - c * cx + s * cy], [s, c, cy - s * cx - c * cy], [0, 0, 1]])
        self.hom = turn @ hom
        self.hom_inv = np.linalg.inv(self.hom)
        k = float(rng.uniform(*cfg.lens_k)) if cfg.lens_k[1] > 0 else 0.0
        self.lens = Lens(round(k, 4)) if k > 1e-4 else None

    def table_point(self, u: float, v: float) -> np.ndarray:
        """The table point seen at image fractions (u, v) (straight view, before the lens)."""
        return synth._project(self.hom_inv, np.array([[u * self.w, v * self.h]]))[0].astype(float)

    def upright(self, u: float, v: float) -> float:
        """The card angle whose top points to the top of the image at (u, v)."""
        d = self.table_point(u, v - 0.02) - self.table_point(u, v)
        return math.atan2(-d[0], d[1])

    def along(self, u: float, v: float) -> np.ndarray:
        """The unit table direction that runs along the image's +x at (u, v)."""
        d = self.table_point(u + 0.02, v) - self.table_point(u, v)
        return d / np.linalg.norm(d)

    def quad(self, pose: Pose, squash: float = 1.0, lifted: bool = True) -> np.ndarray:
        """Image corners (straight view) TL, TR, BR, BL of the card's upright face."""
        corners = synth._card_corners(pose.x, pose.y, pose.angle, synth.CARD_W_MM * squash)
        if lifted:
            corners = synth._lifted(corners, pose.lift, self.camera_pos)
        return synth._project(self.hom, corners)

    def image_point(self, x: float, y: float, lift: float = 0.0) -> np.ndarray:
        p = synth._lifted(np.array([[x, y]]), lift, self.camera_pos)
        return synth._project(self.hom, p)[0]

    def to_frame(self, pts: np.ndarray) -> np.ndarray:
        """Straight-view pixels -> where the lens puts them in the frame."""
        if self.lens is None:
            return np.asarray(pts, np.float64)
        return self.lens.to_frame(np.asarray(pts, np.float64), self.w, self.h)


# ---------------------------------------------------------------------------------------------
# Playing the match
# ---------------------------------------------------------------------------------------------

_FIELD_COLS = np.linspace(0.19, 0.79, 8)
_FIELD_ROWS = (0.405, 0.595)
_PILE_UV = (0.925, 0.50)
# A's capture rows in image fractions (B's are the same turned half a turn about the centre):
# the first card's centre (u, v), each row filled to the right with room for all its cards.
# "apart": side by side, chaff below, each row fanned to show half of every covered card.
_ROWS_APART = {
    "brights": (0.06, 0.775),
    "animals": (0.225, 0.775),
    "ribbons": (0.475, 0.775),
    "chaff": (0.06, 0.9),
}
# "overlap": three lines from the field towards the player (brights then animals, ribbons,
# chaff), each nearer line lying over the one behind so that its top 60 % shows; cards side
# by side (chaff fanned).
_ROWS_OVERLAP = ("brights", "animals", "ribbons", "chaff")
_OVERLAP_LINE = {"brights": 2, "animals": 2, "ribbons": 1, "chaff": 0}  # lines before chaff's
_OVERLAP_UV = (0.05, 0.9)  # the chaff row's first card
_OVERLAP_SHOW = 0.62  # share of a card's height left to see by the line in front of it
_FAN_STEP = 0.5  # a covered card shows this share of its width
_SHARED_RIBBONS_APART = 6  # ribbons side by side in half the top edge (three players), then fanned


class _Planner:
    """Plays the match through the engine and lays every action out on the timeline."""

    def __init__(self, cfg: SimConfig, seed: int):
        self.cfg = cfg
        self.seed = seed
        self.rng = np.random.default_rng([seed, 11])  # the game: shuffles, choices, answers
        self.jit = np.random.default_rng([seed, 12])  # how cards lie: offsets and angles
        self.pace = np.random.default_rng([seed, 14])  # how long players think
        self.view = TableView(np.random.default_rng([seed, 13]), cfg)
        self.frame = 0
        self.moves: list[Move] = []
        self.arms: list[ArmSpan] = []
        self.events: list[dict] = []
        self.decisions: list[dict] = []
        self.rounds: list[RoundPlan] = []
        self.pose: dict[str, Pose] = {}  # cards on the table, at rest
        self.players = cfg.seats
        self.hand_at: dict[str, tuple[float, float, float] | None] = {p: None for p in self.players}
        self.field_slot: dict[str, tuple[int, int]] = {}  # field card -> its grid slot
        self.on_field: list[str] = []
        self.state = None
        self.rules = None

    # -- timeline helpers -------------------------------------------------------------------

    def _away(self, player: str, u: float = 0.5) -> tuple[float, float, float]:
        """A point off the table's visible part, beyond ``player``'s edge (where hands are)."""
        v = 1.28 if player == "A" else -0.28
        x, y = self.view.table_point(u, v)
        return float(x), float(y), 60.0

    def _hold(self, n: int) -> None:
        """Time passes: hands over the table stay where they are."""
        for p, at in self.hand_at.items():
            if at is not None:
                self.arms.append(ArmSpan(p, self.frame, self.frame + n, at, at))
        self.frame += n

    def _reach(
        self, player: str, to: tuple[float, float, float] | None, seconds: float | None = None
    ) -> None:
        """The player's hand goes to ``to`` (None: back off the table)."""
        at = self.hand_at[player] or self._away(player, self._shoulder_u(player))
        end = to if to is not None else self._away(player, self._shoulder_u(player))
        n = self.cfg.frames(seconds or self.cfg.reach_s)
        self.arms.append(ArmSpan(player, self.frame, self.frame + n, at, end))
        for p, other in self.hand_at.items():
            if p != player and other is not None:
                self.arms.append(ArmSpan(p, self.frame, self.frame + n, other, other))
        self.frame += n
        self.hand_at[player] = to

    def _shoulder_u(self, player: str) -> float:
        if player == "A":
            return 0.62
        if len(self.players) == 3:  # B and C share the top edge
            return 0.25 if player == "B" else 0.75
        return 0.38

    def _move(
        self,
        cards: list[str],
        ends: list[Pose],
        player: str | None,
        starts: list[Pose] | None = None,
        seconds: float | None = None,
        gone: bool = False,
    ) -> Move:
        starts = starts or [self.pose[c] for c in cards]
        a, b = starts[-1], ends[-1]
        dist = math.hypot(b.x - a.x, b.y - a.y)
        secs = seconds or self.cfg.move_s * (0.8 + 0.6 * min(1.0, dist / 400))
        n = self.cfg.frames(secs)
        move = Move(
            tuple(cards), self.frame, self.frame + n, tuple(starts), tuple(ends), player, gone
        )
        self.moves.append(move)
        if player is not None:
            self.arms.append(ArmSpan(player, self.frame, self.frame + n, move=move))
        for p, other in self.hand_at.items():
            if p != player and other is not None:
                self.arms.append(ArmSpan(p, self.frame, self.frame + n, other, other))
        self.frame += n
        for c, e in zip(cards, ends, strict=True):
            self.pose.pop(c, None)  # re-inserted last: the newest card lies on top
            if not gone:
                self.pose[c] = e
        if player is not None:
            self.hand_at[player] = None if gone else (b.x, b.y, b.lift)
        return move

    def _off_table(self, player: str, cards: list[str], u: float = 0.5) -> list[Pose]:
        """Where cards go when they leave the table by ``player``'s edge (stacked)."""
        x, y, lift = self._away(player, u)
        angle = self.view.upright(u, 0.5) + (0.0 if player == "A" else math.pi)
        return [Pose(x, y, angle, False, lift + 0.7 * i) for i in range(len(cards))]

    def _event(self, event: dict, frame: int | None = None, **extra) -> None:
        self.state = apply(self.state, event)
        entry = {"frame": self.frame if frame is None else frame, **extra, "event": event}
        self.events.append(entry)

    # -- layout -----------------------------------------------------------------------------

    def _pose_at(
        self,
        u: float,
        v: float,
        turned: bool = False,
        face_up=True,
        lift=0.0,
        jitter_mm: float = 1.5,
        jitter_deg: float = 3.0,
    ) -> Pose:
        x, y = self.view.table_point(u, v)
        angle = self.view.upright(u, v) + (math.pi if turned else 0.0)
        return Pose(
            float(x + self.jit.normal(0, jitter_mm)),
            float(y + self.jit.normal(0, jitter_mm)),
            float(angle + self.jit.normal(0, math.radians(jitter_deg))),
            face_up,
            lift,
        )

    def _pile_pose(self, index: int) -> Pose:
        return self._pose_at(
            *_PILE_UV, face_up=False, lift=index * 0.75, jitter_mm=0.7, jitter_deg=1.2
        )

    def _row_pose(self, player: str, row: str, index: int) -> Pose:
        overlap = self.cfg.rows == "overlap"
        u0, v = _OVERLAP_UV if overlap else _ROWS_APART[row]
        # Two players sharing the top edge have half its width each: every row is fanned.
        shared = player != "A" and len(self.players) == 3
        if player != "A":
            u0, v = 1 - u0, 1 - v
            if shared:  # B's rows start left of the middle, C's near the right edge
                u0 = u0 / 2 + (0.0 if player == "B" else 0.5) - 0.02
        x, y = self.view.table_point(u0, v)
        d = self.view.along(u0, v) * (1 if player == "A" else -1)
        angle = self.view.upright(u0, v) + (0.0 if player == "A" else math.pi)
        layer = 1
        if overlap:
            line = _OVERLAP_LINE[row]
            # Lines further from the player lie further in, and under the nearer ones.
            up = np.array([-math.sin(angle), math.cos(angle)])
            x, y = np.array([x, y]) + up * line * _OVERLAP_SHOW * synth.CARD_H_MM
            layer = 4 - line
            fanned = row == "chaff" or (shared and row != "ribbons")
            step_mm = _FAN_STEP * synth.CARD_W_MM if fanned else synth.CARD_W_MM + 3
            if row == "animals":  # after room for the five brights
                index += 5
            if shared and row == "ribbons":
                # Side by side while half the edge has room: a fanned ribbon under the chaff
                # line would show too little of itself to be read; fanned after that.
                apart = min(index, _SHARED_RIBBONS_APART)
                step_mm = synth.CARD_W_MM + 3
                index = apart + _FAN_STEP * synth.CARD_W_MM / step_mm * (index - apart)
        else:
            step_mm = _FAN_STEP * synth.CARD_W_MM
        return Pose(
            float(x + d[0] * step_mm * index + self.jit.normal(0, 0.5)),
            float(y + d[1] * step_mm * index + self.jit.normal(0, 0.8)),
            float(angle + self.jit.normal(0, math.radians(1.5))),
            layer=layer,
        )

    # -- the match --------------------------------------------------------------------------

    def play(self) -> MatchPlan:
        cfg = self.cfg
        self.rules = RuleSet.load(cfg.rules)
        # A match is as long as the rule set says (6 or 12 rounds): the video shows its first
        # ``cfg.rounds``.
        lengths = sorted(int(n) for n in self.rules.game.rounds)
        longer = [n for n in lengths if n >= cfg.rounds]
        if not longer:
            raise SimulateError(
                f"Rule set {self.rules.name!r} plays at most {lengths[-1]} rounds, "
                f"not {cfg.rounds}."
            )
        started = MatchStarted.new(
            list(self.players), cfg.rules, rounds=longer[0], oya=cfg.oya
        ).to_dict()
        if Path(cfg.rules).suffix.lower() != ".toml":
            started.pop("rules_text", None)  # a preset: its name is enough to replay
        self._event(started)
        self._hold(cfg.frames(1.0))
        for number in range(1, cfg.rounds + 1):
            self._play_round(number)
        self._hold(cfg.frames(2.5))  # the camera keeps filming the cleared table a moment
        return MatchPlan(
            cfg,
            self.seed,
            self.view,
            self.moves,
            self.arms,
            self.events,
            self.decisions,
            self.rounds,
            self.frame,
            self.rules.name,
            self.state.next_oya,
        )

    def _deal_sizes(self) -> tuple[int, int]:
        n = len(self.players)
        sizes = self.rules.game.deal.get(str(n)) or ((8, 8) if n == 2 else (7, 6))
        return int(sizes[0]), int(sizes[1])

    def _order(self, oya: str) -> tuple[str, ...]:
        """The players in playing order, the Oya first."""
        around = AROUND[len(self.players)]
        k = around.index(oya)
        return around[k:] + around[:k]

    def _play_round(self, number: int) -> None:
        cfg = self.cfg
        oya = self.state.next_oya or self.players[0]
        order = self._order(oya)
        plan = RoundPlan(number, oya, self.frame)
        self.rounds.append(plan)
        hands, field_cards, pile = self._deal(order)
        self._event({"type": "round_started", "oya": oya, "field": list(field_cards)})
        for _ in range(5):
            if not self._field_needs_redeal(field_cards):
                break
            self._hold(cfg.frames(1.5))
            self._event({"type": "redeal"})
            self._gather(oya)
            hands, field_cards, pile = self._deal(order)
        plan.field = list(field_cards)
        # Players look at their hands (off-camera) before the Oya plays.
        self._hold(cfg.frames(float(self.pace.uniform(2.0, 3.5))))

        declared = self._declaration(hands, order)
        if declared:
            player, kind = declared
            self._hold(cfg.frames(1.0))
            self._event({"type": "hand_declared", "player": player, "kind": kind})
        else:
            self._turns(order, hands, pile)
        result = self.state.rounds[-1] if self.state.rounds else None
        plan.captures = {p: [] for p in self.players}
        for entry in self.events:
            ev = entry["event"]
            if ev["type"] == "card_captured" and entry["frame"] >= plan.first_frame:
                plan.captures[ev["player"]].append(ev["card"])
        plan.resting = {c: self.pose[c] for cs in plan.captures.values() for c in cs}
        if result is not None and result.number == number:
            plan.winner = result.winner
            plan.points = dict(result.points)
        self._hold(cfg.frames(2.0))  # the final table, still
        self._gather(oya)
        plan.last_frame = self.frame - 1
        self._hold(cfg.frames(0.8))

    def _field_needs_redeal(self, field_cards: list[str]) -> bool:
        rr = self.rules.round
        if not rr.field_redeal:
            return False
        months = {}
        for c in field_cards:
            months[c[:2]] = months.get(c[:2], 0) + 1
        if max(months.values()) >= 4:
            return True
        return rr.field_redeal_pairs and sum(1 for n in months.values() if n >= 2) >= 4

    def _declaration(self, hands, order) -> tuple[str, str] | None:
        allowed = tuple(self.rules.round.instant_wins)
        for player in order:
            months = {}
            for c in hands[player]:
                months[c[:2]] = months.get(c[:2], 0) + 1
            if "teshi" in allowed and max(months.values()) >= 4:
                return player, "teshi"
            if "kuttsuki" in allowed and sorted(months.values()) == [2, 2, 2, 2]:
                return player, "kuttsuki"
        return None

    def _deal(self, playing):
        """A shuffled deck is set down at the pile's place, then dealt: 2 to each other player
        in playing order, 2 to the field, 2 to the dealer, until the hands and the field have
        the rule set's sizes (8 and 8 for two players)."""
        cfg = self.cfg
        oya = playing[0]
        order = [str(c) for c in self.rng.permutation(np.array(ALL_CODES))]
        away = self._away(oya, self._shoulder_u(oya))
        stack = [self._pile_pose(i) for i in range(len(order))]
        # Bottom of the stack first, so that order[0] (the top) is drawn last.
        bottom_first = list(reversed(order))
        starts = [Pose(away[0], away[1], p.angle, False, 60 + p.lift) for p in stack]
        self._reach(oya, (stack[-1].x, stack[-1].y, 40.0))
        self._move(bottom_first, stack, oya, starts=starts, seconds=0.9)
        self._hold(cfg.frames(0.3))
        hand_n, field_n = self._deal_sizes()
        hands = {p: [] for p in self.players}
        field_cards: list[str] = []
        top = 0
        slots = self._deal_slots(field_n)
        while len(field_cards) < field_n or any(len(hands[p]) < hand_n for p in self.players):
            for target in (*playing[1:], "field", oya):
                if target == "field":
                    want = min(2, field_n - len(field_cards))
                else:
                    want = min(2, hand_n - len(hands[target]))
                if want <= 0:
                    continue
                cards = order[top : top + want]
                top += want
                lie = self.pose[cards[0]]
                self._reach(oya, (lie.x, lie.y, lie.lift), seconds=0.2)
                if target == "field":
                    ends = []
                    for c in cards:
                        slot = slots[len(field_cards)]
                        field_cards.append(c)
                        ends.append(self._field_pose(slot, c))
                    self._move(cards, ends, oya, seconds=0.4)
                else:
                    hands[target].extend(cards)
                    ends = self._off_table(target, cards, float(self.jit.uniform(0.4, 0.6)))
                    self._move(cards, ends, oya, seconds=0.4, gone=True)
        self._reach(oya, None)
        pile = order[top:]
        return hands, field_cards, pile

    def _deal_slots(self, n: int) -> list[tuple[int, int]]:
        cols = len(_FIELD_COLS)
        mid = (cols - 1) / 2
        slots = sorted(
            ((r, c) for r in range(2) for c in range(cols)), key=lambda rc: (abs(rc[1] - mid), rc)
        )
        return slots[:n]

    def _field_pose(self, slot: tuple[int, int], code: str, on: Pose | None = None) -> Pose:
        self.field_slot[code] = slot
        if on is not None:  # laid on a card of the same month, a little offset
            off = self.view.along(_FIELD_COLS[slot[1]], _FIELD_ROWS[slot[0]]) * 9
            return Pose(
                on.x + off[0] + self.jit.normal(0, 1),
                on.y + off[1] - 7 + self.jit.normal(0, 1),
                on.angle + self.jit.normal(0, 0.05),
                True,
                on.lift + 1.0,
            )
        r, c = slot
        turned = bool(self.jit.random() < 0.3)
        return self._pose_at(
            _FIELD_COLS[c], _FIELD_ROWS[r], turned=turned, jitter_mm=2.5, jitter_deg=5.0
        )

    # -- turns ------------------------------------------------------------------------------

    def _turns(self, order, hands, pile) -> None:
        cfg = self.cfg
        field_cards = [c for c in self.pose if self.pose[c].face_up and c in self.field_slot]
        self.on_field = field_cards
        self.rows: dict[str, dict[str, int]] = {
            p: {r: 0 for r in _ROWS_OVERLAP} for p in self.players
        }
        pile = list(pile)
        turn = 0
        limit = cfg.max_turns if cfg.max_turns is not None else 10**9
        # Hana-Awase (card values) goes on drawing from the pile, in turn, until it is empty.
        to_the_last = self.rules.mode == "card_values"
        while turn < limit and (any(hands.values()) or (to_the_last and pile)):
            player = order[turn % len(order)]
            turn += 1
            if self.rng.random() < cfg.p_distractor:
                self._distractor()
            captured = []
            if hands[player]:
                card = self._choose(hands[player])
                hands[player].remove(card)
                captured += self._lay(player, card, from_hand=True)
                self._hold(cfg.frames(cfg.pause_s))
            if pile:
                card = pile.pop(0)
                captured += self._lay(player, card, from_hand=False)
            self._reach(player, None)
            due = self.frame
            for card, steady in captured:
                self._event(
                    {"type": "card_captured", "player": player, "card": card},
                    frame=due,
                    steady_frame=steady,
                )
            self._hold(cfg.frames(cfg.pause_s + float(self.pace.uniform(0.0, 1.2))))
            if self._decide(player, hands):
                return
        self._hold(cfg.frames(0.5))
        self._event({"type": "cards_ran_out"})

    def _decide(self, player: str, hands) -> bool:
        """Answer the engine's pending Koi/Stop decisions; True when the round ended."""
        while self.state.pending_decision is not None:
            who = self.state.pending_decision
            self._hold(self.cfg.frames(float(self.rng.uniform(0.6, 1.5))))
            left = len(hands[who])
            hand = self.state.hands[who]
            # Koi is likely early (many cards left to improve with), rare near the end, rarer
            # with a big hand already, and each Koi makes the next one less likely.
            p_koi = 0.85 * left / 8
            if hand.total >= 7:
                p_koi *= 0.5
            p_koi *= 0.4 ** self.state.koi.get(who, 0)
            answer = "koi" if left > 0 and self.rng.random() < p_koi else "stop"
            self.decisions.append(
                {"round": self.rounds[-1].number, "player": who, "answer": answer}
            )
            self._event({"type": "koi_called" if answer == "koi" else "stop_called", "player": who})
            if answer == "stop":
                return True
        return False

    def _choose(self, hand: list[str]) -> str:
        """The hand card to play: the best capture, else the least valuable card."""
        best, best_score = None, -1.0
        for c in hand:
            matches = [f for f in self.on_field if f[:2] == c[:2]]
            noise = float(self.rng.uniform(0, 3))
            if matches:
                score = 100 + _value(c) + max(_value(f) for f in matches) + noise
            else:
                score = 30 - _value(c) + noise
            if score > best_score:
                best, best_score = c, score
        return best

    def _free_slot(self) -> tuple[int, int]:
        used = {self.field_slot[c] for c in self.on_field}
        cols = len(_FIELD_COLS)
        mid = (cols - 1) / 2
        free = [(r, c) for r in range(2) for c in range(cols) if (r, c) not in used]
        if not free:  # a crowded field: lay it across the gap between two rows
            return (int(self.rng.integers(2)), int(self.rng.integers(cols)))
        free.sort(key=lambda rc: (abs(rc[1] - mid) + 0.1 * rc[0], rc))
        k = min(len(free) - 1, int(self.rng.integers(0, 3)))
        return free[k]

    def _lay(self, player: str, card: str, from_hand: bool) -> list[tuple[str, int]]:
        """Play ``card`` (from the hand, or the pile's top) onto the field; take what it
        matches into the player's rows. Returns (card, steady frame) in the order they settle."""
        cfg = self.cfg
        # One match: take it; three: the fourth takes all of them; two: take the better one.
        matches = [f for f in self.on_field if f[:2] == card[:2]]
        if len(matches) == 2:
            matches.sort(key=lambda f: (-_value(f), f))
            matches = matches[:1]
        if matches:
            target = matches[0]
            slot = self.field_slot[target]
            end = self._field_pose(slot, card, on=self.pose[target])
        else:
            slot = self._free_slot()
            end = self._field_pose(slot, card)
        if from_hand:
            away = self._away(player, float(self.jit.uniform(0.4, 0.6)))
            start = Pose(away[0], away[1], end.angle, True, 40.0)
            self._move([card], [end], player, starts=[start])
        else:
            self._reach(player, (self.pose[card].x, self.pose[card].y, self.pose[card].lift))
            self._move([card], [replace(end, face_up=True)], player)
        self.on_field.append(card)
        if not matches:
            return []
        self._hold(cfg.frames(cfg.pause_s))
        taken = [card, *matches]
        settled = []
        for i, c in enumerate(taken):
            if i:
                p = self.pose[c]
                self._reach(player, (p.x, p.y, p.lift))
            row = _ROW_OF[Card.from_code(c).category]
            index = self.rows[player][row]
            self.rows[player][row] += 1
            move = self._move([c], [self._row_pose(player, row, index)], player)
            self.on_field.remove(c)
            self.field_slot.pop(c, None)
            settled.append((c, move.f1))
        return settled

    def _distractor(self) -> None:
        """An arm crosses the table without playing (pointing, reaching for a cup)."""
        player = self.players[int(self.rng.integers(len(self.players)))]
        u = float(self.jit.uniform(0.2, 0.8))
        v = float(self.jit.uniform(0.35, 0.65))
        x, y = self.view.table_point(u, v)
        self._reach(player, (float(x), float(y), 80.0))
        self._hold(self.cfg.frames(float(self.jit.uniform(0.2, 0.8))))
        self._reach(player, None)

    def _gather(self, oya: str) -> None:
        """The table is cleared as players do it: each sweeps his own captures off by his
        edge (the dealer first), then the dealer gathers the field and the pile."""
        on_table = sorted(self.pose, key=lambda c: c)
        field_group = [c for c in on_table if c in self.field_slot]
        capture_groups = {p: [] for p in self.players}
        for rp in self.rounds[-1:]:
            for p, cs in rp.captures.items():
                capture_groups[p] = [c for c in cs if c in self.pose]
        rest = [
            c
            for c in on_table
            if c not in field_group and all(c not in g for g in capture_groups.values())
        ]
        sweepers = [oya] + [p for p in self.players if p != oya]
        groups = [(p, capture_groups[p]) for p in sweepers]
        groups += [(oya, field_group), (oya, rest)]
        for player, group in groups:
            if not group:
                continue
            p = self.pose[group[-1]]
            self._reach(player, (p.x, p.y, p.lift))
            ends = self._off_table(player, group, self._shoulder_u(player))
            self._move(group, ends, player, seconds=0.8, gone=True)
        self._reach(oya, None)
        self.field_slot = {}


def _value(code: str) -> int:
    return _VALUES[Card.from_code(code).category]


def plan_match(seed: int, config: SimConfig = SimConfig()) -> MatchPlan:
    """Play a whole match with scripted players; where every card is, frame by frame."""
    return _Planner(config, seed).play()

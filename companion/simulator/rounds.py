"""Whole Koi-Koi rounds played by scripted players, filmed by a simulated camera over the table.

``simulate(deck, seed, out_dir)`` writes ``table.mp4`` and ``truth.json`` (the contract is in
``docs/LIVE.md``, "Simulated rounds"). Two stages, both driven by ``seed`` alone:

1. ``plan_match`` (``companion/simulator/plans.py``) plays the match: a seeded shuffle, the deal, each turn's play and draw, the
   scripted Koi/Stop answers, all fed through the real engine (``companion.game.engine``) so that the
   truth is the engine's, never a score computed here. Every physical action becomes a ``Move``
   of one or more cards between table poses over a span of frames, carried by a player's hand.
2. ``render_frames`` films the plan: the table surface and cards come from ``synth`` (the same
   faces, surfaces, shadows, hands and lens the recognizer was trained on); cards at rest are
   composited once into a cached still layer, only moving cards and arms are drawn per frame,
   then slow light drift, focus blur, motion blur on what moves, sensor noise and the lens.

The table is laid out as ``default_zones(2)`` expects: A's captures along the bottom edge, B's
along the top, the field in the middle, the draw pile face down at the right; hands are held
off-camera. Captures lie by category as players lay them: three lines from the field towards
the player (brights then animals; ribbons; chaff fanned sideways), each line over the one behind
it so that the top 60 % of every card shows, the newest card on top of its row
(``rows="overlap"``); or side by side in rows fanned sideways, as synth's scenes have them
(``rows="apart"``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from companion.game.cards import ALL_CODES
from companion.live.zones import default_zones
from companion.recognizer.decks import back_image
from companion.simulator import synth
from companion.simulator.lens import _bend_maps
from companion.simulator.plans import (
    ArmSpan,
    MatchPlan,
    Move,
    Pose,
    SimConfig,
    SimulateError,
    plan_match,
)

FORMAT = "companion-simulation/1"
VIDEO_NAME = "table.mp4"
TRUTH_NAME = "truth.json"
DEFAULT_CONFIG = SimConfig()

__all__ = [
    "SimConfig",
    "SimulateError",
    "MatchPlan",
    "plan_match",
    "render_frames",
    "simulate",
    "truth_of",
]


# ---------------------------------------------------------------------------------------------
# Filming the plan
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ArmLook:
    """A player's arm, the same in every frame: its shape beside synth's shading."""

    shading: synth.HandShading
    width: float
    spread: float
    thumb: int


def _arm_look(rng: np.random.Generator) -> _ArmLook:
    lx, ly = rng.normal(0, 1, 2)
    skin = synth._skin_color(rng)
    sleeve = rng.uniform(15, 210, 3) if rng.random() < 0.6 else None
    cuff = float(rng.uniform(0.3, 2.5))
    width = float(rng.uniform(0.9, 1.15))
    shadow = (float(rng.uniform(0.15, 0.5) * rng.choice([-1, 1])), float(rng.uniform(0.15, 0.5)))
    shading = synth.HandShading(
        shadow=np.array(shadow, np.float32),
        strength=int(rng.uniform(70, 140)),
        light=(float(lx), float(ly)),
        skin=skin,
        sleeve=sleeve,
        cuff=cuff,
    )
    return _ArmLook(
        shading=shading,
        width=width,
        spread=float(rng.uniform(0.0, 0.3)),
        thumb=int(rng.choice([-1, 1])),
    )


def _draw_arm(img: np.ndarray, start, tip, s: float, look: _ArmLook, smear=None) -> None:
    """An arm from ``start`` (off the frame) whose fingers reach ``tip``: synth's hand
    (``synth._draw_hand``) with its shape given rather than drawn, smeared by ``smear``
    (dx, dy) pixels when it moves."""
    h, w = img.shape[:2]
    start = np.asarray(start, np.float32)
    tip = np.asarray(tip, np.float32)
    d = tip - start
    length = float(np.linalg.norm(d))
    if length < 1:
        return
    d /= length
    n = np.array([-d[1], d[0]], np.float32)
    palm_c = tip - d * 1.9 * s  # fingertips on the card's near edge, its face left to see
    wrist = palm_c - d * 0.75 * s
    key = np.array([wrist, palm_c, tip, start + d * max(0.0, length - 4 * s)])
    pad = int(1.8 * s) + 4 + (int(abs(smear[0]) + abs(smear[1])) if smear is not None else 0)
    x0, y0 = (max(int(v) - pad, 0) for v in key.min(axis=0))
    x1, y1 = (min(int(v) + pad + 1, lim) for v, lim in zip(key.max(axis=0), (w, h), strict=True))
    # The arm runs on to the frame's edge: widen the box along it.
    for t in np.linspace(0, 1, 9):
        p = start + (wrist - start) * t
        if 0 <= p[0] < w and 0 <= p[1] < h:
            x0, y0 = min(x0, max(int(p[0]) - pad, 0)), min(y0, max(int(p[1]) - pad, 0))
            x1, y1 = max(x1, min(int(p[0]) + pad, w)), max(y1, min(int(p[1]) + pad, h))
    edge_hit = _edge_point(start, wrist, w, h)
    if edge_hit is not None:
        x0, y0 = min(x0, max(int(edge_hit[0]) - pad, 0)), min(y0, max(int(edge_hit[1]) - pad, 0))
        x1, y1 = max(x1, min(int(edge_hit[0]) + pad, w)), max(y1, min(int(edge_hit[1]) + pad, h))
    if x1 - x0 < 2 or y1 - y0 < 2:
        return
    o = np.array([x0, y0], np.float32)
    mh, mw = y1 - y0, x1 - x0
    m = np.zeros((mh, mw), np.uint8)
    arm_w = 0.55 * s * look.width
    synth._poly_fill(
        m,
        [
            start + n * arm_w * 1.1 - o,
            wrist + n * arm_w * 0.9 - o,
            wrist - n * arm_w * 0.9 - o,
            start - n * arm_w * 1.1 - o,
        ],
        255,
    )
    angle = math.degrees(math.atan2(d[1], d[0]))
    cv2.ellipse(
        m,
        synth._pt(palm_c - o),
        (int(0.85 * s), int(0.78 * s)),
        angle,
        0,
        360,
        255,
        -1,
        cv2.LINE_AA,
    )
    finger_w = max(2, int(0.3 * s))
    for i, off in enumerate((-0.5, -0.17, 0.17, 0.5)):
        fdir = d + n * off * look.spread
        fdir /= np.linalg.norm(fdir)
        base = palm_c + n * off * 1.05 * s + d * 0.55 * s
        flen = (0.95, 1.15, 1.05, 0.8)[i] * s
        cv2.line(
            m, synth._pt(base - o), synth._pt(base + fdir * flen - o), 255, finger_w, cv2.LINE_AA
        )
    tdir = d * 0.6 + n * look.thumb * 0.8
    tdir /= np.linalg.norm(tdir)
    tbase = palm_c + n * look.thumb * 0.6 * s - d * 0.2 * s
    cv2.line(
        m,
        synth._pt(tbase - o),
        synth._pt(tbase + tdir * 0.8 * s - o),
        255,
        max(2, int(0.34 * s)),
        cv2.LINE_AA,
    )
    roi = img[y0:y1, x0:x1]
    synth._shade_hand(roi, m, s, (x0, y0), (start, wrist, d, palm_c), look.shading, smear)


def _edge_point(a, b, w, h):
    """Where segment a->b enters the frame, if it does."""
    for t in np.linspace(0, 1, 33):
        p = a + (b - a) * t
        if 0 <= p[0] < w and 0 <= p[1] < h:
            return p
    return None


class _Sprite:
    __slots__ = ("box", "quad", "colour", "alpha")

    def __init__(self, box, quad, colour, alpha):
        self.box, self.quad, self.colour, self.alpha = box, quad, colour, alpha


class _Film:
    """Renders a ``MatchPlan`` frame by frame with ``synth``'s faces, surfaces and effects."""

    def __init__(self, plan: MatchPlan, deck_dir: str):
        cfg = plan.config
        self.plan = plan
        self.view = view = plan.view
        self.w, self.h = cfg.width, cfg.height
        rng = np.random.default_rng([plan.seed, 21])
        self.deck_name, files = synth.load_deck(deck_dir)
        missing = [c for c in ALL_CODES if c not in files]
        if missing:
            raise SimulateError(
                f"Deck {deck_dir} has no image for {len(missing)} card(s), e.g. {missing[0]}.png."
            )
        self.files = files
        scene_cfg = synth.SceneConfig(
            width=cfg.width,
            height=cfg.height,
            backgrounds=cfg.backgrounds,
            p_procedural_background=0.3,
        )
        self.table, self.surface = synth._table_surface(rng, scene_cfg, view.hom_inv)
        self.clutter = self._clutter(np.random.default_rng([plan.seed, 24]))
        self.variation = {c: synth._card_variation(rng) for c in ALL_CODES}
        self.back_color = "red" if rng.random() < 0.35 else "black"
        self.back_variant = int(rng.integers(8))
        # a deck with a back of its own shows it face down (the plain back's draws above are
        # kept, so that a deck without one films as before)
        self.own_back = back_image(deck_dir)
        self.edge_color = (18, 18, 18) if rng.random() < 0.7 else (200, 205, 210)
        sd = np.array([rng.uniform(-1, 1), rng.uniform(0.2, 1)], np.float32)
        self.shadow_dir = sd / np.linalg.norm(sd)
        self.players = cfg.seats
        self.looks = {p: _arm_look(rng) for p in self.players}
        self.hand_px = view.card_px * float(rng.uniform(1.0, 1.25))
        self.shoulder = {
            "A": np.array([0.64 * self.w, 1.5 * self.h], np.float32),
            "B": np.array([0.36 * self.w, -0.5 * self.h], np.float32),
        }
        if len(self.players) == 3:  # B and C share the top edge
            self.shoulder["B"] = np.array([0.22 * self.w, -0.5 * self.h], np.float32)
            self.shoulder["C"] = np.array([0.78 * self.w, -0.5 * self.h], np.float32)
        # Light: a slow drift between key lights a few seconds apart, one colour cast.
        n_keys = plan.frames // (5 * cfg.fps) + 2
        self.key_every = 5 * cfg.fps
        self.key_fields = rng.uniform(0.82, 1.12, (n_keys, 3, 4, 1)).astype(np.float32)
        self.key_bright = rng.uniform(0.8, 1.08, n_keys).astype(np.float32)
        cast = ["neutral", "warm", "warm", "magenta", "blue", "green"][int(rng.integers(6))]
        self.cast = cast
        self.gains = np.array(synth._CASTS[cast], np.float32) * rng.normal(1, 0.03, 3).astype(
            np.float32
        )
        self.vignette = float(rng.uniform(0.0, 0.3))
        self.focus = float(rng.uniform(0.3, 1.1))
        self.noise = float(rng.uniform(1.5, 4.5))
        self.exposure = float(rng.uniform(0.15, 0.45))  # shutter open, share of a frame
        self.sheen = self._sheen(np.random.default_rng([plan.seed, 23]))
        self.noise_rng = np.random.default_rng([plan.seed, 22])
        # Sensor noise as two saturating uint8 banks (plus and minus), cropped at a random
        # offset each frame: synth's fixed bank, without float maths on the frame.
        bank = synth._noise_bank(self.h, self.w) * self.noise
        self.noise_banks = (
            np.clip(np.round(bank), 0, 255).astype(np.uint8),
            np.clip(np.round(-bank), 0, 255).astype(np.uint8),
        )
        self.lens_maps = None
        if view.lens is not None:
            map_x, map_y = _bend_maps(view.lens.k, self.w, self.h)
            self.lens_maps = cv2.convertMaps(map_x, map_y, cv2.CV_16SC2)
        self.sprites: dict = {}

    # -- cards --------------------------------------------------------------------------------

    def _sprite(self, code: str, pose: Pose, squash: float = 1.0) -> _Sprite | None:
        quad = self.view.quad(pose, squash)
        box = synth._bbox(quad, self.w, self.h)
        if box[2] <= box[0] or box[3] <= box[1]:
            return None
        side = max(np.linalg.norm(quad[0] - quad[3]), np.linalg.norm(quad[1] - quad[2]))
        level = synth._face_level(side)
        if pose.face_up:
            face = synth._face(self.files[code], level)
        elif self.own_back is not None:
            face = synth._face(self.own_back, level)
        else:
            face = synth._back_face(self.back_color, self.back_variant, level)
        warped = synth._warp_into(face, quad, box)
        alpha = warped[..., 3].copy()
        colour = synth._tint(warped, self.variation[code]) if pose.face_up else warped[..., :3]
        return _Sprite(box, quad, np.ascontiguousarray(colour), alpha)

    def _draw(
        self, img: np.ndarray, sprite: _Sprite, lift: float, kernel=None, shadow: bool = True
    ) -> None:
        quad = sprite.quad
        side = float(np.linalg.norm(quad[0] - quad[3]))
        if shadow:  # a lifted card throws a wider, softer shadow further off
            offset = self.shadow_dir * side * (0.04 + lift / 90)
            synth._draw_shadow(
                img, quad, offset, max(0.5, side / 40 + lift / 6), 0.35 if lift < 5 else 0.25
            )
        colour, alpha = sprite.colour, sprite.alpha
        x0, y0, x1, y1 = sprite.box
        if kernel is None:
            thickness = max(0.6, side / 90)
            synth._poly_fill(img, quad + np.array([0, thickness], np.float32), self.edge_color)
        else:
            colour = cv2.filter2D(colour, -1, kernel, borderType=cv2.BORDER_CONSTANT)
            alpha = cv2.filter2D(alpha, -1, kernel, borderType=cv2.BORDER_CONSTANT)
        synth._composite(img[y0:y1, x0:x1], colour, alpha)

    def _still(self, resting: dict[str, Pose]) -> np.ndarray:
        img = self.table.copy()
        cards = None if self.sheen is None else np.zeros((self.h, self.w), np.uint8)
        for code, pose in sorted(resting.items(), key=lambda item: item[1].layer):
            key = (code, pose)
            sprite = self.sprites.get(key)
            if sprite is None and key not in self.sprites:
                sprite = self.sprites[key] = self._sprite(code, pose)
            if sprite is not None:
                self._draw(img, sprite, 0.0, shadow=pose.lift < 3)
                if cards is not None:
                    x0, y0, x1, y1 = sprite.box
                    roi = cards[y0:y1, x0:x1]
                    np.maximum(roi, sprite.alpha, out=roi)
        if cards is not None:  # the lamp's sheen washes out the glossy faces under it
            amount = cv2.merge([cv2.multiply(self.sheen, cards, scale=1 / 255)] * 3)
            img = cv2.add(img, cv2.multiply(255 - img, amount, scale=1 / 255))
        return img

    def _clutter(self, rng: np.random.Generator) -> str | None:
        """Sometimes a score sheet, a phone or a card box lies at the table's left, beside the
        field: synth's distractors, in the table surface (nothing is laid on it)."""
        if rng.random() >= 0.5:
            return None
        centre = self.view.table_point(float(rng.uniform(0.03, 0.07)), float(rng.uniform(0.4, 0.6)))
        idmap = np.full((self.h, self.w), -1, np.int16)
        art = [synth._face(self.files[c], 128) for c in rng.choice(ALL_CODES, 2, replace=False)]
        return synth._draw_distractor(rng, self.table, idmap, self.view.hom, centre, art, False)

    def _sheen(self, rng: np.random.Generator) -> np.ndarray | None:
        """A lamp's reflection on glossy cards, as synth's sheen: a soft band, fixed in the
        image (lamp and camera stay put), or None (a matt light)."""
        if rng.random() >= 0.4:
            return None
        w, h = self.w, self.h
        angle = rng.uniform(0, math.pi)
        normal = np.array([math.cos(angle), math.sin(angle)], np.float32)
        mw, mh = max(4, w // 8), max(3, h // 8)
        ys, xs = np.mgrid[0:mh, 0:mw].astype(np.float32)
        dist = (xs * 8 - rng.uniform(0, w)) * normal[0] + (ys * 8 - rng.uniform(0, h)) * normal[1]
        width = rng.uniform(0.12, 0.3) * math.hypot(w, h)
        band = np.exp(-0.5 * (dist / (0.5 * width)) ** 2) * rng.uniform(0.15, 0.45) * 255
        return cv2.resize(band.astype(np.float32), (w, h)).astype(np.uint8)

    # -- light --------------------------------------------------------------------------------

    def _light(self, frame: int, arm_share: float) -> np.ndarray:
        k, rem = divmod(frame, self.key_every)
        t = 0.5 - 0.5 * math.cos(math.pi * rem / self.key_every)
        fld = self.key_fields[k] * (1 - t) + self.key_fields[k + 1] * t
        bright = self.key_bright[k] * (1 - t) + self.key_bright[k + 1] * t
        # Auto exposure opens up a little while a dark arm fills part of the view.
        bright *= 1 + 0.12 * arm_share
        # ...and auto white balance leans away from the skin's warm tones.
        gains = self.gains * (1 + 0.04 * arm_share * np.array([1, 0, -1], np.float32))
        small = fld * bright * gains * 128
        mw, mh = max(4, self.w // 8), max(3, self.h // 8)
        mid = cv2.resize(small, (mw, mh), interpolation=cv2.INTER_CUBIC)
        ys = np.linspace(-1, 1, mh, dtype=np.float32)
        xs = np.linspace(-1, 1, mw, dtype=np.float32)
        mid = mid * (1 - self.vignette * np.add.outer(ys**2, xs**2) / 2)[..., None]
        mid = np.clip(mid, 0, 255).astype(np.uint8)
        return cv2.resize(mid, (self.w, self.h), interpolation=cv2.INTER_LINEAR)

    # -- frames -------------------------------------------------------------------------------

    def frames(self) -> Iterator[np.ndarray]:
        plan = self.plan
        starts: dict[int, list[Move]] = {}
        ends: dict[int, list[Move]] = {}
        for m in plan.moves:
            starts.setdefault(m.f0, []).append(m)
            ends.setdefault(m.f1, []).append(m)
        arm_at: dict[tuple[str, int], ArmSpan] = {}
        for span in plan.arms:
            for f in range(span.f0, span.f1 + 1):
                arm_at[(span.player, f)] = span
        resting: dict[str, Pose] = {}
        moving: list[Move] = []
        still = None
        for f in range(plan.frames):
            changed = still is None
            for m in ends.get(f, []):
                moving.remove(m)
                if not m.gone:
                    for c, e in zip(m.cards, m.ends, strict=True):
                        resting[c] = e
                changed = True
            for m in starts.get(f, []):
                for c in m.cards:
                    resting.pop(c, None)
                moving.append(m)
                changed = True
            if changed:
                still = self._still(resting)
            yield self._frame(f, still, moving, arm_at)

    def _frame(self, f: int, still: np.ndarray, moving: list[Move], arm_at) -> np.ndarray:
        img = still.copy()
        view = self.view
        for m in moving:
            for i, code in enumerate(m.cards):
                pose, squash = m.pose_at(i, f)
                sprite = self._sprite(code, pose, squash)
                if sprite is None:
                    continue
                before, _ = m.pose_at(i, f - 1)
                a = view.image_point(before.x, before.y, before.lift)
                b = view.image_point(pose.x, pose.y, pose.lift)
                kernel = synth.line_kernel(*((b - a) * self.exposure))
                self._draw(img, sprite, pose.lift, kernel, shadow=i == 0)
        arm_share = 0.0
        for player in self.players:
            span = arm_at.get((player, f))
            if span is None:
                continue
            x, y, lift = span.point(f)
            tip = view.image_point(x, y, lift)
            px, py, pl = span.point(f - 1)
            smear = (tip - view.image_point(px, py, pl)) * self.exposure
            _draw_arm(img, self.shoulder[player], tip, self.hand_px, self.looks[player], smear)
            inside = 1.0 - abs(float(tip[1]) / self.h - (1.0 if player == "A" else 0.0))
            arm_share += max(0.0, min(1.0, inside)) * 0.3
        if self.lens_maps is not None:
            img = cv2.remap(img, *self.lens_maps, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        img = cv2.multiply(img, self._light(f, arm_share), scale=1 / 128)
        if self.focus > 0.35:
            img = cv2.GaussianBlur(img, (0, 0), self.focus)
        oy, ox = (int(v) for v in self.noise_rng.integers(0, 64, 2))
        up, down = self.noise_banks
        img = cv2.add(img, up[oy : oy + self.h, ox : ox + self.w])
        return cv2.subtract(img, down[oy : oy + self.h, ox : ox + self.w])


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def truth_of(plan: MatchPlan, deck_name: str) -> dict:
    """The truth file's content (``docs/LIVE.md``, "Simulated rounds")."""
    cfg = plan.config
    return {
        "format": FORMAT,
        "seed": plan.seed,
        "deck": deck_name,
        "rules": plan.rules_name,
        "video": VIDEO_NAME,
        "fps": cfg.fps,
        "width": cfg.width,
        "height": cfg.height,
        "frames": plan.frames,
        "players": list(cfg.seats),
        "zones": default_zones(cfg.players).to_dict(),
        "events": plan.events,
        "decisions": plan.decisions,
        "rounds": [
            {
                "round": r.number,
                "oya": r.oya,
                "first_frame": r.first_frame,
                "last_frame": r.last_frame,
                "field": r.field,
                "captures": r.captures,
                "winner": r.winner,
                "points": r.points,
            }
            for r in plan.rounds
        ],
    }


def check_output_dir(out_dir) -> Path:
    """The output folder, created; SimulateError (one sentence) when it cannot be written."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".companion-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SimulateError(f"Cannot write into the output folder {out}: {reason}.") from None
    return out


def write_image(path, image, params=()) -> None:
    """``cv2.imwrite`` that says in one sentence when the file could not be written."""
    if not cv2.imwrite(str(path), image, list(params)):
        raise SimulateError(f"Cannot write the image {path} (is the disk full?).")


def render_frames(plan: MatchPlan, deck_dir: str) -> Iterator[np.ndarray]:
    """The video's frames (BGR), one by one."""
    return _Film(plan, deck_dir).frames()


def write_simulation(
    plan: MatchPlan,
    deck_dir: str,
    out_dir,
    on_frame: Callable[[int], None] | None = None,
) -> dict:
    """Film ``plan`` into ``out_dir``/table.mp4 and write truth.json; returns timings."""
    out = check_output_dir(out_dir)
    film = _Film(plan, deck_dir)
    cfg = plan.config
    partial = out / "table.partial.mp4"
    writer = cv2.VideoWriter(
        str(partial), cv2.VideoWriter_fourcc(*"mp4v"), float(cfg.fps), (cfg.width, cfg.height)
    )
    if not writer.isOpened():
        raise SimulateError(f"OpenCV cannot write an mp4v video into {out}.")
    start, cpu = time.perf_counter(), time.process_time()
    try:
        for frame in film.frames():
            writer.write(frame)
            if on_frame is not None:
                on_frame(1)
    finally:
        writer.release()
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    partial.replace(out / VIDEO_NAME)
    truth = truth_of(plan, film.deck_name)
    tmp = out / (TRUTH_NAME + ".partial")
    tmp.write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    tmp.replace(out / TRUTH_NAME)
    return {
        "frames": plan.frames,
        "rounds": len(plan.rounds),
        "seconds": round(seconds, 2),
        "seconds_per_round": round(seconds / max(1, len(plan.rounds)), 2),
        "ms_per_frame": round(1000 * seconds / max(1, plan.frames), 1),
        "cpu_seconds_per_round": round(cpu / max(1, len(plan.rounds)), 2),
    }


def simulate(deck: str, seed: int, out_dir, config: SimConfig = DEFAULT_CONFIG, on_frame=None):
    """Play and film a match: ``out_dir``/table.mp4 and truth.json. ``deck``: a deck folder or
    a deck name in ../shared/decks."""
    deck_dir = synth.resolve_deck_dir(deck)
    check_output_dir(out_dir)
    plan = plan_match(seed, config)
    return plan, write_simulation(plan, deck_dir, out_dir, on_frame)

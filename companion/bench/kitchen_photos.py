"""Teaching photos as a player takes them in his own kitchen, for measuring how often teaching
accepts a month's photo at the first try (``first_try``; ``companion-lab kitchen-photos``): a
renderer of its own (not the simulator's teaching photos), the four cards of a month lying on
marble, wood grain, a tablecloth, a plain light or dark table or one of ../shared/backgrounds,
in a row or a 2x2, a few millimetres to a finger's width apart, the phone tilted up to 15
degrees in any direction, the photo upright or wide, 8 to 16 megapixels; the room's light
falling off across the table, a glare spot, the shadow of a hand or of the phone, slight blur,
sensor noise, JPEG. Every photo knows where its cards lie (``KitchenPhoto.quads``). Rendered
from deck folders at run time; never committed.

Each photo draws a table (``TABLES``) and one thing that makes it hard (``TROUBLES``); the
measurement reports the share accepted per deck, per table and per trouble.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

CARD_W_MM, CARD_H_MM = 33.0, 54.0
CORNER_MM = 2.0  # a card's rounded corner
TABLES = ("marble", "wood", "cloth", "light", "dark", "texture")
TROUBLES = ("none", "close", "glare", "shadow", "tilt", "square", "blur", "portrait")
MEGAPIXELS = ((3264, 2448), (4000, 3000), (4032, 2268), (4608, 3456))  # 8, 12, 9 (16:9), 16
MADE_UP = ("procedural", "recoloured", "pale")  # designs made at run time (``made_up_deck``)


@dataclass
class KitchenPhoto:
    """A photo (BGR), its cards' quads (4,4,2: TL, TR, BR, BL as the card stands, slot order)
    and what it shows (``table``, ``trouble``, ``layout``, ``gaps_mm``, ``tilt_deg``...)."""

    image: np.ndarray
    quads: np.ndarray
    info: dict = field(default_factory=dict)
    jpeg: bytes = b""  # the photo's file as the phone wrote it


# ---------------------------------------------------------------------------------------------
# Decks
# ---------------------------------------------------------------------------------------------


def _pale_face(month: int, index: int, seed: int) -> np.ndarray:
    """A flat modern face: a white outer margin, a thick dark frame, a light ground and a few
    flat shapes in the month's colours: the light card that vanishes into a light table."""
    rng = np.random.default_rng([seed, 7, month, index])
    month_rng = np.random.default_rng([seed, 7, month])
    w, h = 610, 1000
    face = np.full((h, w, 3), (246, 248, 250), np.uint8)
    ground = tuple(int(c) for c in month_rng.integers(205, 250, 3))
    frame = (40, 35, 30)
    m = 22
    cv2.rectangle(face, (m, m), (w - m, h - m), frame, -1)
    cv2.rectangle(face, (m + 30, m + 30), (w - m - 30, h - m - 30), ground, -1)
    colour = tuple(int(c) for c in month_rng.integers(20, 230, 3))
    accent = tuple(int(c) for c in rng.integers(20, 230, 3))
    for _ in range(int(rng.integers(2, 5))):
        c = (int(rng.uniform(140, w - 140)), int(rng.uniform(200, h - 200)))
        axes = (int(rng.uniform(40, 140)), int(rng.uniform(40, 140)))
        cv2.ellipse(face, c, axes, rng.uniform(0, 180), 0, 360, colour, -1)
    pts = rng.uniform([120, 150], [w - 120, h - 150], (int(rng.integers(3, 6)), 2))
    cv2.fillPoly(face, [np.round(pts).astype(np.int32)], accent)
    if index == 1:
        cv2.circle(face, (w // 2, 260), 110, (40, 40, 220), -1)
    elif index == 3:
        cv2.rectangle(
            face, (250, 120), (360, 560), (60, 60, 200) if month % 2 else (190, 90, 40), -1
        )
    return face


def made_up_deck(kind: str, folder: Path, seed: int = 0) -> Path:
    """Write a made-up design into ``folder`` (once) and return it: ``procedural`` and
    ``recoloured`` as ``companion deck redesign`` makes them, ``pale`` (``_pale_face``)."""
    folder = Path(folder) / f"{kind}-{seed}"
    if (folder / "12-4.png").is_file():
        return folder
    if kind == "procedural":
        from companion.simulator.redesign import procedural_deck

        procedural_deck(folder, seed)
    elif kind == "recoloured":
        from companion.simulator.redesign import recoloured_deck

        recoloured_deck("hwatu-korean", folder, seed)
    elif kind == "pale":
        folder.mkdir(parents=True, exist_ok=True)
        for month in range(1, 13):
            for index in range(1, 5):
                cv2.imwrite(
                    str(folder / f"{month:02d}-{index}.png"), _pale_face(month, index, seed)
                )
    else:
        raise ValueError(f"no made-up design {kind!r}: {', '.join(MADE_UP)}")
    return folder


def deck_folder(deck: str, scratch: Path | None = None) -> Path:
    """A deck's folder: a folder, a deck of ../shared/decks, or a made-up design (``MADE_UP``,
    written under ``scratch``)."""
    from companion.simulator import synth

    if deck in MADE_UP:
        scratch = Path(scratch) if scratch else Path(tempfile.gettempdir()) / "kitchen-decks"
        return made_up_deck(deck, scratch)
    return Path(synth.resolve_deck_dir(deck))


_FACES: dict = {}


def _face(folder: Path, code: str) -> np.ndarray:
    """A card's face as BGRA with rounded corners (transparent outside), at most 1000 px tall."""
    key = (str(folder), code)
    if key not in _FACES:
        path = next(p for p in folder.glob(f"{code}.*") if p.suffix.lower() in (".png", ".jpg"))
        img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if img.ndim == 2:
            img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGRA)
        elif img.shape[2] == 3:
            img = cv2.cvtColor(img, cv2.COLOR_BGR2BGRA)
        h, w = img.shape[:2]
        if img[..., 3].min() == 255:
            mask = np.zeros((h, w), np.uint8)
            r = max(2, round(w * CORNER_MM / CARD_W_MM))
            cv2.rectangle(mask, (r, 0), (w - 1 - r, h - 1), 255, -1)
            cv2.rectangle(mask, (0, r), (w - 1, h - 1 - r), 255, -1)
            for cx, cy in ((r, r), (w - 1 - r, r), (r, h - 1 - r), (w - 1 - r, h - 1 - r)):
                cv2.circle(mask, (cx, cy), r, 255, -1, cv2.LINE_AA)
            img[..., 3] = mask
        _FACES[key] = img
    return _FACES[key]


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


def _smooth_noise(rng, h: int, w: int, cell: float) -> np.ndarray:
    """Smooth noise in about -1..1 with features ``cell`` px wide."""
    gh, gw = max(2, int(h / cell) + 2), max(2, int(w / cell) + 2)
    grid = rng.normal(0, 1, (gh, gw)).astype(np.float32)
    return cv2.resize(grid, (w, h), interpolation=cv2.INTER_CUBIC)


def _turbulence(rng, h: int, w: int, cell: float, octaves: int = 4) -> np.ndarray:
    out = np.zeros((h, w), np.float32)
    for k in range(octaves):
        out += _smooth_noise(rng, h, w, cell / 2**k) / 2**k
    return out


def _table(rng, kind: str, h: int, w: int, px_per_mm: float) -> tuple[np.ndarray, str]:
    """The table under the cards, ``h`` x ``w`` BGR (drawn at a quarter of the size where it is
    smooth, then enlarged), and which one it is."""
    sh, sw = max(8, h // 4), max(8, w // 4)
    mm = px_per_mm / 4  # small-image pixels per mm
    yy, xx = np.mgrid[0:sh, 0:sw].astype(np.float32)
    if kind == "marble":
        base = rng.uniform(200, 245) + rng.uniform(-8, 8, 3)
        turb = _turbulence(rng, sh, sw, 60 * mm)
        angle = rng.uniform(0, math.pi)
        u = (xx * math.cos(angle) + yy * math.sin(angle)) / (rng.uniform(25, 70) * mm)
        veins = np.abs(np.sin(u + 2.5 * turb)) ** rng.uniform(0.15, 0.4)
        shade = (
            1 - rng.uniform(0.15, 0.45) * (1 - veins) - 0.04 * _smooth_noise(rng, sh, sw, 30 * mm)
        )
        img = shade[..., None] * base
        name = "marble"
    elif kind == "wood":
        light = rng.random() < 0.5
        base = np.array([120, 170, 215] if light else [40, 70, 110], np.float32)
        base = base * rng.uniform(0.85, 1.1)
        angle = rng.uniform(0, math.pi)
        along = xx * math.cos(angle) + yy * math.sin(angle)
        across = -xx * math.sin(angle) + yy * math.cos(angle)
        warp = _smooth_noise(rng, sh, sw, 80 * mm) * 6 * mm
        grain = np.sin((across + warp) / (rng.uniform(1.0, 3.0) * mm))
        fine = cv2.resize(rng.normal(0, 1, (sh, max(2, sw // 40))).astype(np.float32), (sw, sh))
        stripes = 0.12 * grain + 0.06 * fine + 0.05 * _smooth_noise(rng, sh, sw, 40 * mm)
        plank = rng.uniform(90, 160) * mm
        seam = (np.abs((along % plank) - plank / 2) > plank / 2 - 0.6 * mm) * -0.35
        img = (1 + stripes + seam * (rng.random() < 0.5))[..., None] * base
        name = "wood-light" if light else "wood-dark"
    elif kind == "cloth":
        light = rng.random() < 0.6
        a = np.array([235, 235, 240] if light else [60, 60, 70], np.float32)
        b = rng.uniform(40, 220, 3).astype(np.float32)
        period = rng.uniform(8, 25) * mm
        angle = rng.uniform(-0.2, 0.2) + (math.pi / 4 if rng.random() < 0.2 else 0)
        u = (xx * math.cos(angle) + yy * math.sin(angle)) % period < period / 2
        v = (-xx * math.sin(angle) + yy * math.cos(angle)) % period < period / 2
        mix = (u.astype(np.float32) + v.astype(np.float32)) / 2 * rng.uniform(0.4, 0.9)
        img = a * (1 - mix[..., None]) + b * mix[..., None]
        folds = 1 + 0.08 * _smooth_noise(rng, sh, sw, 60 * mm)
        img = img * folds[..., None]
        name = "cloth-light" if light else "cloth-dark"
    elif kind in ("light", "dark"):
        base = rng.uniform(205, 250, 3) if kind == "light" else rng.uniform(15, 70, 3)
        img = base * (1 + 0.03 * _smooth_noise(rng, sh, sw, 50 * mm))[..., None]
        name = kind
    else:
        files = sorted(Path(_backgrounds_dir()).rglob("*.png"))
        if not files:
            return _table(rng, "wood", h, w, px_per_mm)
        path = files[rng.integers(len(files))]
        tex = cv2.imread(str(path), cv2.IMREAD_COLOR).astype(np.float32)
        scale = rng.uniform(1.0, 3.0) * mm * 30 / max(tex.shape[:2])  # a tile 30-90 mm wide
        tex = cv2.resize(tex, None, fx=max(scale, 0.2), fy=max(scale, 0.2))
        reps = (sh // tex.shape[0] + 2, sw // tex.shape[1] + 2, 1)
        img = np.tile(tex, reps)[:sh, :sw]
        img = img * rng.uniform(0.7, 1.2, 3)
        name = f"texture:{path.stem}"
    img = cv2.resize(
        np.clip(img, 0, 255).astype(np.float32), (w, h), interpolation=cv2.INTER_LINEAR
    )
    return img, name


def _backgrounds_dir() -> str:
    from companion.simulator import synth

    try:
        return str(synth.find_shared_dir() / "backgrounds")
    except Exception:  # noqa: BLE001 - no shared folder: no textures
        return "/nonexistent"


# ---------------------------------------------------------------------------------------------
# The camera
# ---------------------------------------------------------------------------------------------


def _camera(rng, w: int, h: int, layout_mm: np.ndarray, fill: float, tilt_deg: float):
    """Homography table (mm) -> photo px for a phone ``tilt_deg`` off straight down, tilted in
    a random direction and turned a little about its axis, framing the layout so that it
    spans ``fill`` of the photo."""
    fov = math.radians(rng.uniform(62, 75))  # across the long side
    f = (max(w, h) / 2) / math.tan(fov / 2)
    t, azimuth = math.radians(tilt_deg), rng.uniform(0, 2 * math.pi)
    roll = rng.normal(0, math.radians(4))
    # world: the table is z = 0, the camera above it looking down (its y axis along -Y world)
    down = np.array(
        [math.sin(t) * math.cos(azimuth), math.sin(t) * math.sin(azimuth), -math.cos(t)]
    )
    x_axis = np.cross(down, [0.0, 1.0, 0.0])
    if np.linalg.norm(x_axis) < 1e-6:
        x_axis = np.array([1.0, 0, 0])
    x_axis /= np.linalg.norm(x_axis)
    y_axis = np.cross(down, x_axis)
    c, s = math.cos(roll), math.sin(roll)
    x_axis, y_axis = c * x_axis + s * y_axis, -s * x_axis + c * y_axis
    rot = np.stack([x_axis, y_axis, down])
    centre_mm = layout_mm.reshape(-1, 2).mean(0)
    span = np.ptp(layout_mm.reshape(-1, 2), axis=0)
    # distance: the layout's extent seen at ``fill`` of the photo, straight down
    need = max(span[0] / (fill * w), span[1] / (fill * h))
    distance = f * need
    eye = np.array([centre_mm[0], centre_mm[1], 0.0]) - distance * down
    k = np.array([[f, 0, w / 2], [0, f, h / 2], [0, 0, 1]])
    trans = -rot @ eye
    hom = k @ np.column_stack([rot[:, 0], rot[:, 1], trans])
    # a camera looking down with x along the table's X has its y along the table's -Y: the
    # table's Y turned over, so that the photo's top is toward -Y as the cards' tops are
    hom = hom @ np.diag([1.0, -1.0, 1.0])
    return hom / hom[2, 2]


def _project(hom: np.ndarray, pts: np.ndarray) -> np.ndarray:
    pts = np.asarray(pts, np.float64).reshape(-1, 2)
    p = np.column_stack([pts, np.ones(len(pts))]) @ hom.T
    return (p[:, :2] / p[:, 2:3]).astype(np.float32)


def _card_mm(cx: float, cy: float, angle: float) -> np.ndarray:
    """Corners TL, TR, BR, BL (table mm; the card's top toward -Y, as the photo's top)."""
    local = np.array(
        [
            [-CARD_W_MM / 2, -CARD_H_MM / 2],
            [CARD_W_MM / 2, -CARD_H_MM / 2],
            [CARD_W_MM / 2, CARD_H_MM / 2],
            [-CARD_W_MM / 2, CARD_H_MM / 2],
        ]
    )
    c, s = math.cos(angle), math.sin(angle)
    return local @ np.array([[c, s], [-s, c]]) + [cx, cy]


def _layout(rng, square: bool, close: bool) -> tuple[np.ndarray, list[float]]:
    """Four cards' corners (4,4,2 mm) in slot order (a row left to right, or a 2x2 read like
    a page) and the gaps between neighbours (mm)."""

    def gap() -> float:
        return rng.uniform(1.5, 5.0) if close else rng.uniform(4.0, 22.0)

    cards, gaps = [], []
    if square:
        gx, gy = gap(), gap()
        gaps = [gx, gy]
        for k in range(4):
            col, row = k % 2, k // 2
            x = (col - 0.5) * (CARD_W_MM + gx) + rng.uniform(-1, 1)
            y = (row - 0.5) * (CARD_H_MM + gy) + rng.uniform(-1, 1)
            cards.append(_card_mm(x, y, rng.normal(0, 0.03)))
    else:
        x = 0.0
        for k in range(4):
            if k:
                g = (
                    gap()
                    if (close and k == 1 + rng.integers(3)) or not close
                    else rng.uniform(3, 12)
                )
                gaps.append(g)
                x += CARD_W_MM + g
            cards.append(_card_mm(x, rng.normal(0, 1.5), rng.normal(0, 0.03)))
    out = np.stack(cards)
    out -= out.reshape(-1, 2).mean(0)
    return out, [round(g, 1) for g in gaps]


# ---------------------------------------------------------------------------------------------
# The photo
# ---------------------------------------------------------------------------------------------


def _paste_card(img: np.ndarray, face: np.ndarray, quad: np.ndarray, edge: np.ndarray) -> None:
    """Warp a BGRA face onto ``quad`` of the float photo, with the card's cut edge (``edge``
    colour) a hair wider than the print."""
    h, w = img.shape[:2]
    x0, y0 = np.maximum(np.floor(quad.min(0)).astype(int) - 4, 0)
    x1, y1 = np.minimum(np.ceil(quad.max(0)).astype(int) + 5, [w, h])
    if x1 <= x0 or y1 <= y0:
        return
    long_px = float(np.linalg.norm(quad[3] - quad[0]))
    scale = min(1.0, 1.3 * long_px / face.shape[0])
    small = (
        cv2.resize(face, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        if scale < 1
        else face
    )
    fh, fw = small.shape[:2]
    src = np.float32([[0, 0], [fw, 0], [fw, fh], [0, fh]])
    m = cv2.getPerspectiveTransform(src, (quad - [x0, y0]).astype(np.float32))
    warped = cv2.warpPerspective(
        small,
        m,
        (x1 - x0, y1 - y0),
        flags=cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_CONSTANT,
        borderValue=(0, 0, 0, 0),
    )
    alpha = warped[..., 3:4].astype(np.float32) / 255
    # the cut edge: the card's outline one or two pixels out, in the card stock's colour
    edge_alpha = cv2.dilate(alpha[..., 0], np.ones((3, 3), np.uint8))[..., None]
    roi = img[y0:y1, x0:x1]
    roi[:] = roi * (1 - edge_alpha) + edge * edge_alpha
    roi[:] = roi * (1 - alpha) + warped[..., :3].astype(np.float32) * alpha


def _soft_mask(h: int, w: int, polys: list[np.ndarray], blur: float) -> np.ndarray:
    scale = 4
    mask = np.zeros((h // scale + 1, w // scale + 1), np.float32)
    for p in polys:
        cv2.fillPoly(mask, [np.round(p / scale).astype(np.int32)], 1.0, cv2.LINE_AA)
    mask = cv2.GaussianBlur(mask, (0, 0), max(0.5, blur / scale))
    return cv2.resize(mask, (w, h), interpolation=cv2.INTER_LINEAR)


RENDER_SHARE = 0.5  # photos are drawn at this share of their size, then enlarged as a phone's are


def render_kitchen_photo(
    seed: int,
    deck: str | Path,
    month: int,
    table: str | None = None,
    trouble: str | None = None,
    scratch: Path | None = None,
) -> KitchenPhoto:
    """Month ``month``'s four cards of ``deck`` as a player photographs them (see the module);
    ``table`` and ``trouble`` drawn from ``TABLES`` and ``TROUBLES`` unless given."""
    folder = deck_folder(str(deck), scratch) if not Path(str(deck)).is_dir() else Path(deck)
    rng = np.random.default_rng([seed, month, sum(map(ord, folder.name))])
    table = table or TABLES[rng.integers(len(TABLES))]
    trouble = trouble or TROUBLES[rng.integers(len(TROUBLES))]
    full_w, full_h = MEGAPIXELS[rng.integers(len(MEGAPIXELS))]
    portrait = trouble == "portrait" or rng.random() < 0.3
    if portrait:
        full_w, full_h = full_h, full_w
    w, h = round(full_w * RENDER_SHARE), round(full_h * RENDER_SHARE)
    square = trouble == "square" or (portrait and rng.random() < 0.3)
    layout, gaps = _layout(rng, square, trouble == "close")
    layout_turn = rng.normal(0, 0.08)
    c, s = math.cos(layout_turn), math.sin(layout_turn)
    layout = layout @ np.array([[c, s], [-s, c]])
    tilt = rng.uniform(9, 15) if trouble == "tilt" else rng.uniform(0, 9)
    fill = rng.uniform(0.55, 0.85)
    hom = _camera(rng, w, h, layout, fill, tilt)
    quads = np.stack([_project(hom, q) for q in layout])
    px_per_mm = float(np.linalg.norm(quads[0, 3] - quads[0, 0])) / CARD_H_MM
    img, table_name = _table(rng, table, h, w, px_per_mm)
    # the cards' shadows on the table, then the cards
    light_dir = rng.normal(0, 1, 2)
    light_dir = light_dir / np.linalg.norm(light_dir) * rng.uniform(0.3, 1.5) * px_per_mm
    shade = _soft_mask(h, w, [q + light_dir for q in quads], rng.uniform(0.8, 3.0) * px_per_mm)
    img *= (1 - rng.uniform(0.15, 0.45) * shade)[..., None]
    edge = np.float32([30, 30, 32]) if rng.random() < 0.5 else np.float32([215, 225, 230])
    for k, quad in enumerate(quads):
        _paste_card(img, _face(folder, f"{month:02d}-{k + 1}"), quad, edge)
    # the room's light: falling off across the table, a warm or cool cast, a darker rim; and
    # a hand's or the phone's shadow; computed coarse (it is smooth), applied once
    sh, sw = h // 8, w // 8
    yy, xx = np.mgrid[0:sh, 0:sw].astype(np.float32)
    angle = rng.uniform(0, 2 * math.pi)
    ramp = (xx / sw - 0.5) * math.cos(angle) + (yy / sh - 0.5) * math.sin(angle)
    rim = (xx / sw - 0.5) ** 2 + (yy / sh - 0.5) ** 2
    gain = (1 + rng.uniform(0.1, 0.5) * ramp - rng.uniform(0.1, 0.5) * rim) * rng.uniform(0.75, 1.1)
    info: dict = {}
    if trouble == "shadow":  # a hand or the phone between the lamp and the table
        side = int(rng.integers(4))
        at = quads[rng.integers(4)].mean(0)
        card_px = px_per_mm * CARD_H_MM
        edge_pt = np.array([[at[0], 0], [w, at[1]], [at[0], h], [0, at[1]]][side], np.float64)
        towards = (at - edge_pt) / (np.linalg.norm(at - edge_pt) + 1e-6)
        across = np.array([-towards[1], towards[0]])
        width = rng.uniform(0.3, 0.7) * card_px
        tip = at + towards * rng.uniform(-0.3, 0.3) * card_px
        poly = np.array(
            [
                edge_pt - towards * 50 + across * width,
                edge_pt - towards * 50 - across * width,
                tip - across * width * 0.7,
                tip + across * width * 0.7,
            ]
        )
        mask = np.zeros((sh, sw), np.float32)
        cv2.fillPoly(mask, [np.round(poly / 8).astype(np.int32)], 1.0, cv2.LINE_AA)
        mask = cv2.GaussianBlur(mask, (0, 0), max(0.5, rng.uniform(0.05, 0.25) * width / 8))
        gain *= 1 - rng.uniform(0.3, 0.55) * mask
        info["shadow_from"] = side
    gain = cv2.resize(gain, (w, h), interpolation=cv2.INTER_LINEAR)
    img *= gain[..., None] * rng.uniform(0.9, 1.1, 3).astype(np.float32)
    if trouble == "glare":  # a lamp's reflection on a card's gloss
        at = quads[rng.integers(4)]
        centre = at.mean(0) + (at[rng.integers(4)] - at.mean(0)) * rng.uniform(0.2, 0.9)
        radius = rng.uniform(0.15, 0.45) * px_per_mm * CARD_W_MM
        yy, xx = np.mgrid[0 : h // 4, 0 : w // 4].astype(np.float32) * 4
        spot = np.exp(-((xx - centre[0]) ** 2 + (yy - centre[1]) ** 2) / (2 * radius**2))
        spot = cv2.resize(spot.astype(np.float32), (w, h), interpolation=cv2.INTER_LINEAR)
        img += rng.uniform(120, 260) * spot[..., None]
        info["glare_at"] = [round(float(v) / RENDER_SHARE) for v in centre]
    sigma = rng.uniform(1.0, 2.2) if trouble == "blur" else rng.uniform(0.0, 0.8)
    sigma *= max(w, h) / 2000  # the same blur on the card whatever the photo's size
    if sigma > 0.3:
        img = cv2.GaussianBlur(img, (0, 0), sigma)
    img += rng.normal(0, rng.uniform(1.0, 4.0), (h, w, 1)).astype(np.float32)
    img = np.clip(img, 0, 255).astype(np.uint8)
    img = cv2.resize(img, (full_w, full_h), interpolation=cv2.INTER_LINEAR)
    quality = int(rng.integers(70, 95))
    _, data = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, quality])
    quads = (quads + 0.5) * np.float32([full_w / w, full_h / h]) - 0.5
    info.update(
        table=table_name,
        table_kind=table,
        trouble=trouble,
        size=[full_w, full_h],
        layout="2x2" if square else "row",
        gaps_mm=gaps,
        tilt_deg=round(tilt, 1),
        blur_px=round(float(sigma) / RENDER_SHARE, 2),
        jpeg=quality,
        deck=folder.name,
        month=month,
        seed=seed,
    )
    return KitchenPhoto(
        cv2.imdecode(data, cv2.IMREAD_COLOR), quads.astype(np.float32), info, data.tobytes()
    )


# ---------------------------------------------------------------------------------------------
# Measuring: the share of photos accepted at the first try
# ---------------------------------------------------------------------------------------------

SHARED_DECKS = ("traditional-ngs", "traditional-scan", "modern-mantia", "hwatu-korean")
RIGHT_CORNER = 0.06  # a card found is right when no corner is further off (share of its length)


def check_photo(task: tuple) -> dict:
    """One photo rendered (seed, deck, month, scratch) and read as ``deck add --photos`` reads
    it: what it shows, the sentence it got ("" accepted), and whether the cards accepted are
    where they lie (every corner within ``RIGHT_CORNER`` of the card's length)."""
    from companion.recognizer.photos import read_month_photo

    seed, deck, month, scratch = task
    photo = render_kitchen_photo(seed, deck, month, scratch=scratch)
    folder = Path(tempfile.mkdtemp(prefix="kitchen-"))
    path = folder / f"{month:02d}.jpg"
    try:
        path.write_bytes(photo.jpeg)
        read = read_month_photo(path, month)
    finally:
        path.unlink(missing_ok=True)
        folder.rmdir()
    problem = getattr(read.problem, "id", str(read.problem)) if read.problem else ""
    right = False
    if not problem:
        long = np.linalg.norm(photo.quads[:, 3] - photo.quads[:, 0], axis=1).mean()
        # a large photo is read shrunk, at the size teaching needs: its outlines in those pixels
        scale = photo.image.shape[1] / read.image.shape[1]
        off = np.abs(np.asarray(read.quads) * scale - photo.quads).max()
        right = bool(off / long <= RIGHT_CORNER)
    return {
        **photo.info,
        "deck": str(deck),
        "problem": problem,
        "said": str(read.problem),
        "accepted": not problem,
        "right": right,
    }


def first_try(seeds, decks=SHARED_DECKS + MADE_UP, workers: int = 1, scratch=None) -> list[dict]:
    """Each of ``decks``' twelve months photographed once per seed and read (``check_photo``)."""
    scratch = Path(scratch or tempfile.mkdtemp(prefix="kitchen-decks-"))
    for deck in decks:  # the made-up designs written once, before the workers need them
        deck_folder(deck, scratch)
    tasks = [
        (seed, deck, month, scratch) for seed in seeds for deck in decks for month in range(1, 13)
    ]
    if workers <= 1:
        return [check_photo(t) for t in tasks]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(check_photo, tasks, chunksize=2))


def shares(rows: list[dict], key: str) -> dict:
    """Per value of ``key``: photos, accepted with their cards right, accepted wrong."""
    out: dict = {}
    for row in rows:
        entry = out.setdefault(row[key], {"photos": 0, "right": 0, "wrong": 0})
        entry["photos"] += 1
        entry["right"] += row["right"]
        entry["wrong"] += row["accepted"] and not row["right"]
    for entry in out.values():
        entry["share"] = round(entry["right"] / entry["photos"], 3)
    return dict(sorted(out.items()))

"""Synthetic table scenes with ground truth, for training and testing the card recognizer.

A scene is a table seen by a webcam: one homography maps the table plane (millimetres) to the
image, so every card, texture and distractor lying on the table shares the same perspective.
Cards come from deck folders of ``MM-K.png`` faces (``../shared/decks`` or a user's own folder)
and are laid out like a real game (field in the middle, overlapping capture rows near each
player, a draw pile of backs) or at random. Hands, lighting, glare, a broad sheen over the
glossy cards, motion and focus blur, noise and JPEG artefacts are added on top. Every random
choice comes from ``seed``: the same seed and config give the same pixels and labels.

Labels list every card at least ``min_visible`` visible, bottom card first (drawing order);
``quad`` corners follow the upright face (top-left, top-right, bottom-right, bottom-left)
whatever the card's rotation, and include a card's printed rim. A dataset on disk is
``images/NNNNNN.jpg`` plus ``labels.jsonl``, one JSON object per image::

    {"image": "images/000000.jpg", "width": 1280, "height": 720,
     "labels": [{"card": "08-1", "quad": [[x, y], ...], "visible": 0.93, "deck": "traditional-ngs"}],
     "conditions": {"seed": ..., "tilt_deg": ..., "card_px": ..., "light": "warm", ...}}

Speed: faces are decoded and resized once (``_face`` cache) and each card is warped only into
its own bounding rectangle.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cv2
import numpy as np

from companion import CompanionError
from companion.detections import BACK, polygon_areas
from companion.game.cards import ALL_CODES
from companion.recognizer.decks import back_image
from companion.simulator.lens import Lens

# Raised whenever a seed renders other pixels or labels than before (2: sheen and motion blur),
# so that caches of rendered scenes (training.py) never mix two versions.
RENDER_VERSION = 2
# Hanafuda cards are about 33 x 54 mm.
CARD_W_MM = 33.0
CARD_H_MM = 54.0
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
_CODE_FILE_RE = re.compile(r"^(\d\d)-(\d)$")
PROCEDURAL_SURFACES = ("wood", "cloth", "felt", "tatami")


class SynthError(CompanionError):
    """A missing or unusable deck or background folder."""


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


@dataclass
class CardLabel:
    card: str  # "MM-K" code, or "back" for a face-down card
    quad: np.ndarray  # (4, 2) float32 image pixels: upright face's TL, TR, BR, BL
    visible: float  # fraction of the card's area visible (uncovered and inside the frame)
    deck: str  # deck folder name ("" for backs drawn procedurally)

    def to_dict(self) -> dict:
        return {
            "card": self.card,
            "quad": [[round(float(x), 2), round(float(y), 2)] for x, y in self.quad],
            "visible": round(float(self.visible), 4),
            "deck": self.deck,
        }

    @classmethod
    def from_dict(cls, d: dict) -> CardLabel:
        return cls(
            card=d["card"],
            quad=np.asarray(d["quad"], dtype=np.float32).reshape(4, 2),
            visible=float(d["visible"]),
            deck=d.get("deck", ""),
        )


@dataclass
class Scene:
    image: np.ndarray  # (H, W, 3) uint8 BGR
    labels: list[CardLabel]
    conditions: dict = field(default_factory=dict)


@dataclass(frozen=True)
class SceneConfig:
    """Ranges the scene generator draws from; every value is randomised from the seed."""

    width: int = 1280
    height: int = 720
    decks: tuple[str, ...] = ()  # deck folders (MM-K.png); default: all of ../shared/decks
    backgrounds: tuple[str, ...] = ()  # texture folders/files; default ../shared/backgrounds
    # Card height in pixels at the image centre; () means 40-260 px at 720 rows, scaled to
    # ``height`` (the same camera views at any output size).
    card_px: tuple[float, ...] = ()
    max_tilt_deg: float = 45.0  # camera tilt from looking straight down
    p_random_layout: float = 0.25  # otherwise a game layout (field, capture rows, draw pile)
    field_cards: tuple[int, int] = (0, 12)
    capture_cards: tuple[int, int] = (0, 16)  # per player
    random_cards: tuple[int, int] = (1, 24)  # cards of a random layout
    p_draw_pile: float = 0.7
    p_third_player: float = 0.15  # a third capture area at a side (Hana-Awase)
    p_black_rim: float = 0.3  # faces printed inside a black rim (Nintendo-style card edge)
    p_loose_backs: float = 0.1  # chance that a card of a random layout lies face down
    p_mixed_decks: float = 0.15  # cards from several decks in one scene
    p_procedural_background: float = 0.35
    p_hands: float = 0.35
    p_distractors: float = 0.4
    p_color_cast: float = 0.5
    p_glare: float = 0.3
    p_big_shadow: float = 0.25
    p_blur: float = 0.5
    max_blur_sigma: float = 2.0
    # A moving camera or table (a bumped stand, a hand-held phone) smears along one direction;
    # a lamp or window shows as a broad sheen across glossy cards. Drawn from their own stream
    # of the seed, so a scene without them is the same image as before they existed.
    p_motion_blur: float = 0.15
    max_motion_px: float = 14.0  # smear length at 720 rows, scaled to ``height``
    p_sheen: float = 0.2
    # The camera lens's radial distortion, the same for every scene (``companion.simulator.lens``: > 0
    # barrel, as in wide-angle webcams; < 0 pincushion). 0: a perfect lens, scenes as before.
    lens_k: float = 0.0
    # ...or, for training scenes, a lens drawn per scene: with chance ``p_lens`` a k uniform
    # in ``lens_k_range`` (from the seed's own stream: a scene drawn without a lens is the same
    # image as with ``p_lens`` 0). Used only where ``lens_k`` is 0.
    p_lens: float = 0.0
    lens_k_range: tuple[float, float] = (-0.15, 0.35)
    # A deck printed in other inks: with chance ``p_restyle`` every face of the scene has its
    # hues turned, its colours more or less saturated and its contrast changed, the same way
    # for the whole scene (``deck_style``; the seed's own stream, so that a scene drawn without
    # a style is the same image as with ``p_restyle`` 0). Teaches the classifier shapes more
    # than one deck's palette.
    p_restyle: float = 0.0
    max_noise: float = 6.0  # sensor noise standard deviation (0-255 scale)
    jpeg_quality: tuple[int, int] = (35, 95)
    min_visible: float = 0.10  # cards less visible than this are left out of the labels
    # Print grain, stock colour, glare, uneven light, colour casts, blur, sensor noise and JPEG.
    # Off only to measure what they are worth (training.augmentation_ablation): clean renders.
    realism: bool = True

    def with_(self, **changes) -> SceneConfig:
        return SceneConfig(**{**asdict(self), **changes})


# ---------------------------------------------------------------------------------------------
# Files: shared folder, decks, backgrounds
# ---------------------------------------------------------------------------------------------


def find_shared_dir() -> Path:
    """``../shared`` next to the repository root, or ``$COMPANION_SHARED``."""
    env = os.environ.get("COMPANION_SHARED")
    if env:
        return Path(env)
    repo_root = Path(__file__).resolve().parents[2]
    return repo_root.parent / "shared"


def default_deck_dirs() -> tuple[str, ...]:
    return _deck_dirs_in(find_shared_dir() / "decks")


@functools.lru_cache(maxsize=8)
def _deck_dirs_in(root: Path) -> tuple[str, ...]:
    try:
        if not root.is_dir():
            raise SynthError(
                f"No deck folder found at {str(root)[:200]}: pass deck folders explicitly or "
                "set COMPANION_SHARED."
            )
        dirs = tuple(str(p) for p in sorted(root.iterdir()) if p.is_dir() and _deck_files(p))
    except OSError as exc:  # a path the system refuses (too long), a folder it cannot read
        raise SynthError(
            f"Cannot read the deck folders in {str(root)[:200]}: {exc.strerror}."
        ) from None
    if not dirs:
        raise SynthError(f"No deck folder with MM-K.png card images in {root}.")
    return dirs


def _deck_files(folder: Path) -> dict[str, Path]:
    """Card code -> image file in a deck folder (files named ``MM-K.png``, ``.jpg``...)."""
    files = {}
    for p in folder.iterdir():
        m = _CODE_FILE_RE.match(p.stem)
        if m and p.suffix.lower() in IMAGE_SUFFIXES:
            code = f"{m.group(1)}-{m.group(2)}"
            if code in ALL_CODES:
                files[code] = p
    return files


def resolve_deck_dir(name_or_path: str) -> str:
    """A deck folder given as a path, or by name in ``../shared/decks``; checked."""
    path = Path(name_or_path)
    try:
        if not path.exists() and not path.is_absolute() and len(path.parts) == 1:
            candidate = find_shared_dir() / "decks" / name_or_path
            if candidate.is_dir():
                path = candidate
    except OSError as exc:  # a name longer than the system takes
        raise SynthError(f"No deck folder {name_or_path[:60]!r}: {exc.strerror}.") from None
    load_deck(str(path))
    return str(path)


@functools.lru_cache(maxsize=64)
def load_deck(folder: str) -> tuple[str, dict[str, Path]]:
    """(deck name, code -> file); SynthError when the folder has no card images."""
    path = Path(folder)
    try:
        if not path.exists():
            raise SynthError(f"Deck folder {folder[:200]} does not exist.")
        if not path.is_dir():
            raise SynthError(f"Deck {folder} is not a folder of MM-K.png card images.")
        files = _deck_files(path)
    except OSError as exc:
        raise SynthError(f"Cannot read the deck folder {folder[:200]}: {exc.strerror}.") from None
    if not files:
        raise SynthError(
            f"Deck folder {folder} has no card images named like 01-1.png (month-card)."
        )
    return path.name, files


def default_backgrounds() -> tuple[str, ...]:
    root = find_shared_dir() / "backgrounds"
    try:
        return (str(root),) if root.is_dir() else ()
    except OSError:  # a path the system refuses: no backgrounds there
        return ()


@functools.lru_cache(maxsize=16)
def _background_files(sources: tuple[str, ...]) -> tuple[Path, ...]:
    files = []
    for src in sources:
        p = Path(src)
        try:
            if p.is_dir():
                files += sorted(q for q in p.rglob("*") if q.suffix.lower() in IMAGE_SUFFIXES)
            elif p.is_file():
                files.append(p)
            else:
                raise SynthError(f"Background {src[:200]} does not exist.")
        except OSError as exc:
            raise SynthError(f"Cannot read the background {src[:200]}: {exc.strerror}.") from None
    return tuple(files)


def _check_backgrounds(sources) -> None:
    """Each background given is an image, or a folder holding some: one not usable is one
    sentence before any scene is drawn, not silently left out."""
    for src in sources:
        files = _background_files((str(src),))
        if not files:
            raise SynthError(f"The background folder {str(src)[:200]} holds no images.")
        if not Path(src).is_dir():
            _texture(files[0])  # SynthError: "... cannot be read"


@functools.lru_cache(maxsize=128)
def _texture(path: Path) -> np.ndarray:
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None:
        raise SynthError(f"Background image {path} cannot be read: it is not a PNG or JPEG image.")
    return img


def tiled_table(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    """A plain table for a small scene (a close-up, a teaching photo): one of the default
    backgrounds tiled to ``width`` x ``height``, or a flat colour when there is none."""
    backgrounds = _background_files(default_backgrounds())
    if backgrounds:
        tex = _texture(backgrounds[rng.integers(len(backgrounds))])
        reps = (height // tex.shape[0] + 2, width // tex.shape[1] + 2, 1)
        return np.tile(tex, reps)[:height, :width].copy()
    return np.full((height, width, 3), rng.integers(40, 200, 3), np.uint8)


_MASTER_HEIGHT = 512


@functools.cache
def _face_master(path: Path, grain: bool = True) -> np.ndarray:
    """A card face decoded once: BGRA, at most 512 px tall, rounded transparent corners, and
    (``grain``) the print grain of card stock."""
    img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise SynthError(f"Card image {path} cannot be read.")
    if img.dtype != np.uint8:
        img = cv2.convertScaleAbs(img, alpha=255.0 / max(1, int(img.max())))
    if img.ndim == 2:
        img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGRA)
    elif img.shape[2] == 3:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2BGRA)
    if img.shape[0] > _MASTER_HEIGHT:
        width = max(4, round(img.shape[1] * _MASTER_HEIGHT / img.shape[0]))
        img = cv2.resize(img, (width, _MASTER_HEIGHT), interpolation=cv2.INTER_AREA)
    if img[..., 3].min() == 255:  # opaque scan: cut the rounded corners real cards have
        img[..., 3] = _rounded_mask(img.shape[1], img.shape[0])
    # Print grain of card stock, the same for a given card every time. Seeded by the deck
    # folder's name and the file's, not the whole path: a scene must not change with where
    # the shared folder happens to live (another checkout, CI).
    if grain:
        grain_key = f"{path.parent.name}/{path.name}"
        grain_rng = np.random.default_rng(
            int.from_bytes(hashlib.sha256(grain_key.encode()).digest()[:4], "little")
        )
        noise = grain_rng.normal(0, 4, img.shape[:2]).astype(np.float32)
        noise = cv2.GaussianBlur(noise, (0, 0), 0.7)
        img[..., :3] = np.clip(img[..., :3] + noise[..., None], 0, 255).astype(np.uint8)
    # Premultiplied colour: transparent pixels then blend without dark fringes.
    alpha = img[..., 3:4].astype(np.float32) / 255.0
    img[..., :3] = (img[..., :3] * alpha).astype(np.uint8)
    return img


@functools.lru_cache(maxsize=2048)  # every size level of 4 decks
def _face(path: Path, height: int, grain: bool = True) -> np.ndarray:
    """A card face as premultiplied BGRA, ``height`` pixels tall (cached per size level)."""
    master = _face_master(path, grain)
    if height >= master.shape[0]:
        return master
    width = max(4, round(master.shape[1] * height / master.shape[0]))
    return cv2.resize(master, (width, height), interpolation=cv2.INTER_AREA)


def _rounded_mask(w: int, h: int, radius_frac: float = 0.06) -> np.ndarray:
    """Alpha mask of a rectangle with rounded corners (anti-aliased by supersampling)."""
    s = 2
    r = max(1, int(round(min(w, h) * radius_frac * s)))
    big = np.zeros((h * s, w * s), np.uint8)
    cv2.rectangle(big, (r, 0), (w * s - 1 - r, h * s - 1), 255, -1)
    cv2.rectangle(big, (0, r), (w * s - 1, h * s - 1 - r), 255, -1)
    for cx, cy in ((r, r), (w * s - 1 - r, r), (r, h * s - 1 - r), (w * s - 1 - r, h * s - 1 - r)):
        cv2.circle(big, (cx, cy), r, 255, -1, lineType=cv2.LINE_AA)
    return cv2.resize(big, (w, h), interpolation=cv2.INTER_AREA)


_FACE_LEVELS = (32, 48, 64, 96, 128, 192, 256, 384, 512)


def _face_level(px: float) -> int:
    for level in _FACE_LEVELS:
        if level >= px:
            return level
    return _FACE_LEVELS[-1]


@functools.lru_cache(maxsize=64)
def _back_face(color: str, variant: int, height: int) -> np.ndarray:
    """A plain face-down card (black or red), BGRA premultiplied, with a faint print texture."""
    width = round(height * CARD_W_MM / CARD_H_MM)
    rng = np.random.default_rng(variant)
    base = {"black": (22, 20, 20), "red": (28, 30, 150)}[color]
    jitter = rng.normal(0, 6, 3)
    img = np.empty((height, width, 3), np.float32)
    img[:] = np.clip(np.array(base) + jitter, 0, 255)
    grain = cv2.GaussianBlur(rng.normal(0, 1, (height, width)).astype(np.float32), (0, 0), 0.8)
    img += grain[..., None] * (4 if color == "black" else 7)
    # Faint inner frame many backs have.
    if variant % 2 and height >= 64:
        m = max(2, height // 20)
        cv2.rectangle(
            img,
            (m, m),
            (width - 1 - m, height - 1 - m),
            tuple(float(c) * 0.7 for c in base),
            max(1, height // 80),
        )
    out = np.empty((height, width, 4), np.uint8)
    out[..., :3] = np.clip(img, 0, 255).astype(np.uint8)
    out[..., 3] = _rounded_mask(width, height)
    alpha = out[..., 3:4].astype(np.float32) / 255.0
    out[..., :3] = (out[..., :3] * alpha).astype(np.uint8)
    return out


@functools.lru_cache(maxsize=64)
def _plain_face(color: tuple, height: int) -> np.ndarray:
    """A plain card-shaped BGRA image (premultiplied) in one colour, e.g. a black rim."""
    width = round(height * CARD_W_MM / CARD_H_MM)
    out = np.empty((height, width, 4), np.uint8)
    out[..., 3] = _rounded_mask(width, height)
    alpha = out[..., 3].astype(np.float32) / 255.0
    for c in range(3):
        out[..., c] = (color[c] * alpha).astype(np.uint8)
    return out


# ---------------------------------------------------------------------------------------------
# Procedural table surfaces (periodic tiles, so they wrap seamlessly)
# ---------------------------------------------------------------------------------------------


def _periodic_noise(
    rng: np.random.Generator, size: int, cells: int, cells_x: int = 0
) -> np.ndarray:
    """Smooth noise in [-1, 1] that tiles seamlessly (``cells_x`` for stretched noise)."""
    grid = rng.uniform(-1, 1, (cells, cells_x or cells)).astype(np.float32)
    tiled = np.tile(grid, (3, 3))
    big = cv2.resize(tiled, (3 * size, 3 * size), interpolation=cv2.INTER_CUBIC)
    return big[size : 2 * size, size : 2 * size]


@functools.lru_cache(maxsize=256)
def _procedural_surface(kind: str, variant: int, size: int = 256) -> np.ndarray:
    rng = np.random.default_rng(1000 + variant)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    n1 = _periodic_noise(rng, size, 8)
    n2 = _periodic_noise(rng, size, 32)
    fine = _periodic_noise(rng, size, 128)
    if kind == "wood":
        light = np.array(
            rng.choice(
                [(70, 120, 170), (60, 95, 140), (40, 65, 105), (110, 160, 200), (35, 50, 80)]
            ),
            np.float32,
        )
        dark = light * rng.uniform(0.55, 0.8)
        rings = int(rng.integers(3, 9))
        warp = _periodic_noise(rng, size, 2, 4) * rng.uniform(0.02, 0.06)
        streaks = _periodic_noise(rng, size, 128, 4)  # long thin fibres along the grain
        t = 0.5 + 0.5 * np.sin(2 * np.pi * rings * (yy + warp + 0.01 * n1))
        t = np.clip(0.7 * t**3 + 0.25 * streaks + 0.1 * fine, 0, 1)
        img = dark + (light - dark) * (1 - t)[..., None]
        planks = int(rng.integers(1, 4))
        seam = np.abs(((yy * planks) % 1.0) - 0.5) > 0.496
        img[seam] *= 0.55
    elif kind == "felt":
        base = np.array(
            rng.choice([(40, 100, 20), (30, 80, 30), (90, 50, 20), (30, 30, 120), (50, 50, 50)]),
            np.float32,
        )
        t = 0.08 * n1 + 0.05 * n2 + 0.10 * fine
        img = base * (1 + t)[..., None]
    elif kind == "cloth":
        palette = [
            (110, 40, 30),
            (40, 90, 30),
            (40, 40, 120),
            (150, 180, 200),
            (200, 205, 210),
            (90, 90, 90),
            (40, 60, 90),
            (160, 150, 140),
            (60, 40, 100),
        ]  # BGR tablecloths
        base = np.array(palette[int(rng.integers(len(palette)))], np.float32) * rng.uniform(
            0.8, 1.15
        )
        f = int(rng.choice([32, 48, 64]))
        weave = np.sin(2 * np.pi * f * xx) * np.sin(2 * np.pi * f * yy)
        checks = (np.floor(xx * 4) + np.floor(yy * 4)) % 2 if rng.random() < 0.3 else 0
        img = base * (1 + 0.12 * weave + 0.06 * n1 - 0.15 * checks)[..., None]
    elif kind == "tatami":
        base = np.array(rng.choice([(90, 170, 185), (80, 150, 160), (110, 180, 190)]), np.float32)
        rows = int(rng.choice([48, 64, 80]))
        stripes = 0.5 + 0.5 * np.sin(2 * np.pi * rows * yy + 0.4 * n2)
        img = base * (0.82 + 0.18 * stripes + 0.05 * fine + 0.05 * n1)[..., None]
        border = (xx < 0.08) | (xx > 0.92)
        if rng.random() < 0.5:
            img[border] = np.array(
                rng.choice([(30, 30, 30), (60, 40, 20), (30, 60, 20)]), np.float32
            )
    else:  # pragma: no cover
        raise ValueError(kind)
    return np.clip(img, 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# Geometry
# ---------------------------------------------------------------------------------------------


def _camera(
    rng, cfg: SceneConfig, card_px: float, tilt_deg: float
) -> tuple[np.ndarray, np.ndarray]:
    """Homography table plane (mm, origin at the point looked at, +Y away) -> image pixels,
    and the camera's position (x, y, height) in mm."""
    w, h = cfg.width, cfg.height
    fov = math.radians(rng.uniform(50, 75))
    f = (w / 2) / math.tan(fov / 2)
    cx = w / 2 + rng.uniform(-0.03, 0.03) * w
    cy = h / 2 + rng.uniform(-0.03, 0.03) * h
    t = math.radians(tilt_deg)
    z = np.array([0.0, math.sin(t), -math.cos(t)])  # viewing direction
    x = np.array([1.0, 0.0, 0.0])
    y = np.cross(z, x)
    rot = np.stack([x, y, z])  # world -> camera
    distance = f * CARD_H_MM / card_px
    centre = -distance * z
    trans = -rot @ centre
    k = np.array([[f, 0, cx], [0, f, cy], [0, 0, 1]])
    hom = k @ np.column_stack([rot[:, 0], rot[:, 1], trans])
    return hom / hom[2, 2], centre


def _project(hom: np.ndarray, pts: np.ndarray) -> np.ndarray:
    pts = np.asarray(pts, np.float64)
    p = np.column_stack([pts, np.ones(len(pts))]) @ hom.T
    return (p[:, :2] / p[:, 2:3]).astype(np.float32)


def _card_corners(cx: float, cy: float, angle: float, w=CARD_W_MM, h=CARD_H_MM) -> np.ndarray:
    """Table-plane corners TL, TR, BR, BL of an upright face rotated by ``angle`` (radians)."""
    local = np.array([[-w / 2, h / 2], [w / 2, h / 2], [w / 2, -h / 2], [-w / 2, -h / 2]])
    c, s = math.cos(angle), math.sin(angle)
    rot = np.array([[c, -s], [s, c]])
    return local @ rot.T + np.array([cx, cy])


def _card_height(quad: np.ndarray) -> float:
    """Length of the card's long sides in pixels (mean of left and right)."""
    return float((np.linalg.norm(quad[0] - quad[3]) + np.linalg.norm(quad[1] - quad[2])) / 2)


def _visible_extent(hom_inv: np.ndarray, w: int, h: int) -> np.ndarray:
    """Table-plane polygon seen by the camera."""
    frame = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float64)
    return _project(hom_inv, frame)


# ---------------------------------------------------------------------------------------------
# Layouts: lists of (x_mm, y_mm, angle_rad, kind) in the table plane, bottom card first
# ---------------------------------------------------------------------------------------------


@dataclass
class _Placed:
    x: float
    y: float
    angle: float
    face_down: bool = False
    card: str = ""
    deck: str = ""
    path: Path | None = None
    lift: float = 0.0  # height above the table (mm), e.g. in a draw pile


def _lifted(corners: np.ndarray, lift: float, camera_pos: np.ndarray) -> np.ndarray:
    """Table point that lies on the same camera ray as ``corners`` raised by ``lift`` mm."""
    if lift <= 0:
        return corners
    nadir = camera_pos[:2]
    return corners + lift * (corners - nadir) / (camera_pos[2] - lift)


def _reach(poly: np.ndarray, direction: np.ndarray, limit: float) -> float:
    """How far from the origin one can go along ``direction`` and stay in the seen polygon."""
    contour = poly.reshape(-1, 1, 2).astype(np.float32)
    step = CARD_H_MM / 4
    d = 0.0
    while d < limit:
        p = direction * (d + step)
        if cv2.pointPolygonTest(contour, (float(p[0]), float(p[1])), False) < 0:
            break
        d += step
    return d


def _game_layout(rng, cfg: SceneConfig, poly: np.ndarray, yaw: float) -> tuple[list[_Placed], dict]:
    cw, ch = CARD_W_MM, CARD_H_MM
    c, s = math.cos(yaw), math.sin(yaw)

    def to_table(u, v):
        return c * u - s * v, s * u + c * v

    placed: list[_Placed] = []
    jitter = math.radians(rng.uniform(1, 8))

    # Draw pile: stacked backs beside the field.
    has_pile = rng.random() < cfg.p_draw_pile
    pile_u = -rng.uniform(2.8, 4.2) * cw * (1 if rng.random() < 0.5 else -1)
    if has_pile:
        n_pile = int(rng.integers(3, 25))
        pu, pv = pile_u, rng.uniform(-0.3, 0.3) * ch
        base_angle = yaw + rng.normal(0, 0.1)
        thickness = rng.uniform(0.6, 1.0)  # hanafuda are thick card stock
        for k in range(n_pile):
            x, y = to_table(pu + rng.normal(0, 0.8), pv + rng.normal(0, 0.8))
            placed.append(
                _Placed(x, y, base_angle + rng.normal(0, 0.04), face_down=True, lift=k * thickness)
            )

    # Field: cards in a loose grid in the middle, gaps from edge-to-edge to half a card.
    n_field = int(rng.integers(cfg.field_cards[0], cfg.field_cards[1] + 1))
    if n_field:
        cols = max(1, math.ceil(n_field / 2))
        gap = rng.choice([0.0, rng.uniform(0.5, 4), rng.uniform(4, 16)])
        pitch_u, pitch_v = cw + gap, ch + gap + rng.uniform(0, 6)
        u0 = -(cols - 1) * pitch_u / 2 + (pile_u * -0.35 if has_pile else 0)
        for i in range(n_field):
            row, col = divmod(i, cols)
            u = u0 + col * pitch_u + (rng.normal(0, 1.5) if gap > 1 else 0)
            v = (0.5 - row) * pitch_v + (rng.normal(0, 1.5) if gap > 1 else 0)
            flip = math.pi if rng.random() < 0.5 else 0.0
            a = yaw + flip + (rng.normal(0, jitter) if gap > 1 else 0)
            placed.append(_Placed(*to_table(u, v), a))

    # Capture rows near each player's edge, overlapping like a fanned hand. Two players face
    # each other; a third (Hana-Awase) sometimes sits at a side.
    players = [0.0, math.pi]
    if rng.random() < cfg.p_third_player:
        players.append(math.pi / 2 if rng.random() < 0.5 else -math.pi / 2)
    for phi in players:
        n_cap = int(rng.integers(cfg.capture_cards[0], cfg.capture_cards[1] + 1))
        if not n_cap:
            continue
        cp, sp = math.cos(yaw + phi), math.sin(yaw + phi)

        def to_player(u, v, cp=cp, sp=sp):  # the player's frame: +v from them to the centre
            return cp * u - sp * v, sp * u + cp * v

        reach = _reach(poly, -np.array(to_player(0, 1)), 12 * ch)
        dist = float(np.clip(reach - 0.7 * ch, 1.6 * ch, 6.5 * ch)) + rng.uniform(-0.2, 0.2) * ch
        groups = _split(rng, n_cap, int(rng.integers(1, 5)))
        step = rng.uniform(0.38, 0.7) * cw  # visible strip of each covered card
        gap = rng.uniform(0.3, 1.0) * cw
        total = sum((len(g) - 1) * step + cw for g in groups) + gap * (len(groups) - 1)
        u = -total / 2 + cw / 2
        second_row = rng.random() < 0.3
        for gi, group in enumerate(groups):
            for _ in group:
                v = -dist + (1.05 * ch if second_row and gi % 2 else 0)
                placed.append(
                    _Placed(
                        *to_player(u + rng.normal(0, 0.7), v + rng.normal(0, 1.0)),
                        yaw + phi + rng.normal(0, 0.03),  # upright for their owner
                    )
                )
                u += step
            u += cw - step + gap
    return placed, {
        "layout": "game",
        "draw_pile": has_pile,
        "field": n_field,
        "players": len(players),
    }


def _split(rng, n: int, parts: int) -> list[list[int]]:
    parts = max(1, min(parts, n))
    cuts = (
        sorted(rng.choice(np.arange(1, n), parts - 1, replace=False).tolist()) if parts > 1 else []
    )
    bounds = [0, *cuts, n]
    return [list(range(bounds[i], bounds[i + 1])) for i in range(len(bounds) - 1)]


def _random_layout(rng, cfg: SceneConfig, hom_inv: np.ndarray) -> tuple[list[_Placed], dict]:
    """Cards anywhere in the frame (uniform in the image, not on the table), any angle."""
    n = int(rng.integers(cfg.random_cards[0], cfg.random_cards[1] + 1))
    placed: list[_Placed] = []
    clustered = rng.random() < 0.5
    for _ in range(n):
        if clustered and placed:
            ref = placed[int(rng.integers(len(placed)))]
            x, y = ref.x + rng.normal(0, CARD_W_MM), ref.y + rng.normal(0, CARD_H_MM * 0.6)
        else:
            pt = np.array(
                [[rng.uniform(0.05, 0.95) * cfg.width, rng.uniform(0.05, 0.95) * cfg.height]]
            )
            x, y = (float(v) for v in _project(hom_inv, pt)[0])
        face_down = rng.random() < cfg.p_loose_backs
        placed.append(_Placed(x, y, rng.uniform(0, 2 * math.pi), face_down=face_down))
    return placed, {"layout": "random", "clustered": clustered}


# ---------------------------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------------------------


def _bbox(quad: np.ndarray, w: int, h: int, pad: int = 0):
    x0 = max(int(math.floor(quad[:, 0].min())) - pad, 0)
    y0 = max(int(math.floor(quad[:, 1].min())) - pad, 0)
    x1 = min(int(math.ceil(quad[:, 0].max())) + 1 + pad, w)
    y1 = min(int(math.ceil(quad[:, 1].max())) + 1 + pad, h)
    return x0, y0, x1, y1


def _warp_into(face: np.ndarray, quad: np.ndarray, box) -> np.ndarray:
    """Warp a BGRA face onto ``quad`` (image pixels), only inside ``box``."""
    x0, y0, x1, y1 = box
    fh, fw = face.shape[:2]
    src = np.array(
        [[-0.5, -0.5], [fw - 0.5, -0.5], [fw - 0.5, fh - 0.5], [-0.5, fh - 0.5]], np.float32
    )
    m = cv2.getPerspectiveTransform(src, (quad - np.array([x0, y0], np.float32)).astype(np.float32))
    return cv2.warpPerspective(
        face,
        m,
        (x1 - x0, y1 - y0),
        flags=cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_CONSTANT,
        borderValue=0,
    )


def _composite(roi: np.ndarray, premult_bgr: np.ndarray, alpha: np.ndarray) -> None:
    """roi = premultiplied colour + roi * (1 - alpha), in place (saturating uint8 maths)."""
    inverse = cv2.merge([255 - alpha] * 3)
    roi[:] = cv2.add(premult_bgr, cv2.multiply(roi, inverse, scale=1 / 255))


def _draw_shadow(img, quad, offset, blur, strength) -> None:
    h, w = img.shape[:2]
    pad = int(3 * blur) + 2
    shifted = quad + offset
    box = _bbox(shifted, w, h, pad)
    x0, y0, x1, y1 = box
    if x1 <= x0 or y1 <= y0:
        return
    mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
    cv2.fillConvexPoly(
        mask, np.round((shifted - [x0, y0]) * 4).astype(np.int32), 255, cv2.LINE_AA, shift=2
    )
    if blur > 0.3:
        k = 2 * int(round(blur)) + 1
        mask = cv2.blur(mask, (k, k))
    roi = img[y0:y1, x0:x1]
    # roi * (1 - strength * mask), with the multiplier as uint8 x/255.
    factor = 255 - (mask.astype(np.uint16) * int(strength * 255) // 255).astype(np.uint8)
    roi[:] = cv2.multiply(roi, cv2.merge([factor] * 3), scale=1 / 255)


def _poly_fill(img, pts, color) -> None:
    cv2.fillPoly(img, [np.round(np.asarray(pts) * 4).astype(np.int32)], color, cv2.LINE_AA, shift=2)


def _card_variation(rng) -> np.ndarray:
    """Printed-stock look as one colour matrix on BGRA: gain per channel, a little
    desaturation, and a paper brightness offset that follows alpha (premultiplied)."""
    gain = rng.normal(1.0, 0.05, 3)
    desat = rng.uniform(0.0, 0.25)
    mix = (1 - desat) * np.eye(3) + desat / 3 * np.ones((3, 3))
    m = np.zeros((3, 4))
    m[:, :3] = gain[:, None] * mix
    m[:, 3] = rng.normal(0, 6) / 255.0
    return m


_NO_VARIATION = np.hstack([np.eye(3), np.zeros((3, 1))])
# How far a drawn deck style turns hues (degrees either way), scales saturation and contrast.
RESTYLE_HUE_DEG = 35.0
RESTYLE_SATURATION = (0.55, 1.5)
RESTYLE_CONTRAST = (0.8, 1.2)


def deck_style(seed: int, cfg: SceneConfig) -> dict | None:
    """The ink style a scene's faces are printed in (``p_restyle``), or None for the deck's own:
    a hue turn in degrees, a saturation and a contrast factor."""
    if cfg.p_restyle <= 0:
        return None
    rng = np.random.default_rng([seed, 3])
    if rng.random() >= cfg.p_restyle:
        return None
    return {
        "hue_deg": round(float(rng.uniform(-RESTYLE_HUE_DEG, RESTYLE_HUE_DEG)), 1),
        "saturation": round(float(rng.uniform(*RESTYLE_SATURATION)), 3),
        "contrast": round(float(rng.uniform(*RESTYLE_CONTRAST)), 3),
    }


def style_matrix(style: dict) -> np.ndarray:
    """``deck_style`` as a colour matrix on premultiplied BGRA, as ``_card_variation``'s: a
    turn about the grey axis (greys, paper white and black ink stay as they are), saturation
    about the pixel's grey, contrast about mid-grey (the offset follows alpha)."""
    theta = math.radians(style["hue_deg"])
    axis = np.ones(3) / math.sqrt(3)
    cross = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    turn = np.eye(3) + math.sin(theta) * cross + (1 - math.cos(theta)) * cross @ cross
    sat = style["saturation"]
    saturate = sat * np.eye(3) + (1 - sat) / 3 * np.ones((3, 3))
    con = style["contrast"]
    m = np.zeros((3, 4))
    m[:, :3] = con * saturate @ turn
    m[:, 3] = (1 - con) * 128 / 255
    return m


def _then(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """One colour matrix doing ``first`` then ``second`` (both 3x4 on BGRA, alpha kept)."""
    m = np.zeros((3, 4))
    m[:, :3] = second[:, :3] @ first[:, :3]
    m[:, 3] = second[:, :3] @ first[:, 3] + second[:, 3]
    return m


def _tint(warped_bgra: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    return cv2.transform(warped_bgra, matrix)


def _skin_color(rng) -> np.ndarray:
    tones = [(150, 180, 225), (120, 155, 205), (95, 130, 185), (70, 100, 150), (50, 70, 110)]
    return np.array(tones[int(rng.integers(len(tones)))], np.float32) * rng.uniform(0.9, 1.08)


def _pt(p) -> tuple[int, int]:
    return int(round(float(p[0]))), int(round(float(p[1])))


def _draw_hand(rng, img, idmap, card_px: float) -> None:
    """An arm from a frame edge ending in a hand, shaded as a rounded volume, with a shadow.

    Sizes are in card heights ``s``: a forearm is about 1.1 s wide, a palm 1.6 s wide and
    a hand about 3 s long, as for a real 54 mm card.
    """
    h, w = img.shape[:2]
    # Hands are nearer the camera than the table; in close-ups they would fill the frame.
    s = min(card_px * rng.uniform(0.95, 1.35), 0.3 * min(h, w))
    edge = int(rng.integers(4))
    t = rng.uniform(0.1, 0.9)
    margin = 1.5 * s
    start = np.array(
        [(t * w, h + margin), (t * w, -margin), (-margin, t * h), (w + margin, t * h)][edge],
        np.float32,
    )
    target = np.array([rng.uniform(0.15, 0.85) * w, rng.uniform(0.15, 0.85) * h], np.float32)
    d = target - start
    length = float(np.linalg.norm(d))
    d /= length
    n = np.array([-d[1], d[0]], np.float32)
    wrist = start + d * max(length * rng.uniform(0.3, 0.9), margin + s)
    mask = np.zeros((h, w), np.uint8)
    arm_w = 0.55 * s * rng.uniform(0.9, 1.15)
    _poly_fill(
        mask,
        [
            start + n * arm_w * 1.1,
            wrist + n * arm_w * 0.9,
            wrist - n * arm_w * 0.9,
            start - n * arm_w * 1.1,
        ],
        255,
    )
    palm_c = wrist + d * 0.75 * s
    angle = math.degrees(math.atan2(d[1], d[0]))
    cv2.ellipse(
        mask, _pt(palm_c), (int(0.85 * s), int(0.78 * s)), angle, 0, 360, 255, -1, cv2.LINE_AA
    )
    curled = rng.random() < 0.35  # a fist or fingers bent under
    spread = rng.uniform(0.0, 0.35)
    finger_w = max(2, int(0.3 * s))
    lengths = (0.95, 1.15, 1.05, 0.8)
    for i, off in enumerate((-0.5, -0.17, 0.17, 0.5)):
        fdir = d + n * off * spread
        fdir /= np.linalg.norm(fdir)
        base = palm_c + n * off * 1.05 * s + d * 0.55 * s
        flen = lengths[i] * s * (rng.uniform(0.25, 0.45) if curled else rng.uniform(0.85, 1.1))
        cv2.line(mask, _pt(base), _pt(base + fdir * flen), 255, finger_w, cv2.LINE_AA)
    side = 1 if rng.random() < 0.5 else -1
    tdir = d * 0.6 + n * side * 0.8
    tdir /= np.linalg.norm(tdir)
    tbase = palm_c + n * side * 0.6 * s - d * 0.2 * s
    cv2.line(mask, _pt(tbase), _pt(tbase + tdir * 0.8 * s), 255, max(2, int(0.34 * s)), cv2.LINE_AA)
    key = np.array([start, wrist, palm_c])
    pad = int(2.6 * s) + 4  # palm, fingers and shadow all lie within this of the key points
    x0, y0 = (max(int(v) - pad, 0) for v in key.min(axis=0))
    x1, y1 = (min(int(v) + pad + 1, lim) for v, lim in zip(key.max(axis=0), (w, h), strict=True))
    if x1 <= x0 or y1 <= y0:
        return
    m = mask[y0:y1, x0:x1]
    roi = img[y0:y1, x0:x1]
    # Drawn in the order the hand's earlier renders drew them, so that seeds give the same scenes.
    shadow = rng.uniform(0.15, 0.5, 2) * np.array([rng.choice([-1, 1]), 1])
    strength = int(rng.uniform(70, 140))
    light = tuple(rng.normal(0, 1, 2))
    skin = _skin_color(rng)
    sleeved = rng.random() < 0.6  # a sleeve over the forearm
    cuff = rng.uniform(0.3, 2.5) if sleeved else 0.0
    sleeve = rng.uniform(15, 210, 3) if sleeved else None
    look = HandShading(shadow, strength, light, skin, sleeve, cuff)
    _shade_hand(roi, m, s, (x0, y0), (start, wrist, d, palm_c), look)
    idmap[y0:y1, x0:x1][m > 127] = -1


@dataclass(frozen=True)
class HandShading:
    """How a hand and its arm look once their outline is drawn: light, shadow, skin, sleeve."""

    shadow: np.ndarray  # the shadow's offset on the table (x, y), in hand sizes
    strength: int  # how much the shadow darkens the table, of 255
    light: tuple[float, float]  # the direction the light comes from (x, y)
    skin: np.ndarray  # BGR
    sleeve: np.ndarray | None  # the sleeve's BGR; None for a bare forearm
    cuff: float  # where the sleeve ends, in hand sizes before the wrist


def _shade_hand(roi, m, s: float, origin, pose, look: HandShading, smear=None) -> None:
    """Paint the hand whose outline is the mask ``m`` into ``roi`` (the same box of the
    image, whose top-left is ``origin``): its shadow on the table, then the arm shaded as a
    rounded volume lit from one side, in skin and sleeve. ``pose`` is (start, wrist,
    direction, palm centre) in image pixels; ``smear`` (dx, dy) smears a moving arm."""
    x0, y0 = origin
    start, wrist, d, palm_c = pose
    mh, mw = m.shape
    # Shading and shadow are smooth: work at a reduced scale ``f``, only the outline at full.
    f = max(1, int(s // 40))
    small = cv2.resize(m, (max(1, mw // f), max(1, mh // f)), interpolation=cv2.INTER_AREA)
    sh, sw = small.shape
    ss = s / f
    # Soft shadow on the table, offset away from the light (box blurs: cheap at any radius).
    off = look.shadow * ss
    shadow = cv2.warpAffine(small, np.float32([[1, 0, off[0]], [0, 1, off[1]]]), (sw, sh))
    k = 2 * int(0.15 * ss + 1) + 1
    shadow = cv2.blur(cv2.blur(shadow, (k, k)), (k, k))
    factor = 255 - (shadow.astype(np.uint16) * look.strength // 255).astype(np.uint8)
    factor = cv2.resize(factor, (mw, mh), interpolation=cv2.INTER_LINEAR)
    roi[:] = cv2.multiply(roi, cv2.merge([factor] * 3), scale=1 / 255)
    # Rounded volume: brightness grows with the distance to the outline; light from one side.
    dist = cv2.distanceTransform((small > 127).astype(np.uint8), cv2.DIST_L2, 3)
    volume = np.sqrt(np.minimum(dist * (1 / (0.22 * ss)), 1))
    xs_ = np.arange(sw, dtype=np.float32) * f + x0
    ys_ = np.arange(sh, dtype=np.float32) * f + y0
    lx, ly = look.light
    ramp = np.add.outer((ys_ - palm_c[1]) * ly, (xs_ - palm_c[0]) * lx) / (
        3 * s * math.hypot(lx, ly) + 1e-6
    )
    shade = (0.55 + 0.45 * volume) * (1 + 0.25 * np.clip(ramp, -1, 1))
    colour = cv2.merge([cv2.convertScaleAbs(shade, alpha=float(c)) for c in look.skin])
    if look.sleeve is not None:
        along = np.add.outer((ys_ - start[1]) * d[1], (xs_ - start[0]) * d[0])
        cuff = float(np.dot(wrist - start, d)) - look.cuff * s
        sleeve = (along < cuff).astype(np.uint8)
        cloth = cv2.merge([cv2.convertScaleAbs(shade, alpha=float(c)) for c in look.sleeve])
        cv2.copyTo(cloth, sleeve, colour)
    if smear is not None and (kernel := line_kernel(smear[0] / f, smear[1] / f)) is not None:
        # A moving arm is smeared: at the reduced scale, where it costs a few per cent.
        colour = cv2.filter2D(colour, -1, kernel, borderType=cv2.BORDER_REPLICATE)
        soft = cv2.filter2D(small, -1, kernel, borderType=cv2.BORDER_CONSTANT)
        soft = cv2.resize(soft, (mw, mh), interpolation=cv2.INTER_LINEAR)
    else:
        soft = cv2.blur(m, (3, 3))
    colour = cv2.resize(colour, (mw, mh), interpolation=cv2.INTER_LINEAR)
    _composite(roi, cv2.multiply(colour, cv2.merge([soft] * 3), scale=1 / 255), soft)


def line_kernel(dx: float, dy: float) -> np.ndarray | None:
    """A straight smear ``(dx, dy)`` pixels long, or None when too short to show."""
    length = math.hypot(dx, dy)
    if length < 1.5:
        return None
    size = 2 * int(math.ceil(length / 2)) + 1
    kernel = np.zeros((size, size), np.float32)
    c = size // 2
    cv2.line(
        kernel, _pt((c - dx / 2, c - dy / 2)), _pt((c + dx / 2, c + dy / 2)), 1.0, 1, cv2.LINE_AA
    )
    return kernel / kernel.sum()


def _draw_distractor(rng, img, idmap, hom, centre_uv, faces: list[np.ndarray], on_top: bool) -> str:
    """A card box printed with card art, a sheet of paper or a phone, lying on the table."""
    h, w = img.shape[:2]
    kind = ["box", "paper", "phone"][int(rng.integers(3))]
    size = {"box": (70, 110), "paper": (148, 210), "phone": (72, 150)}[kind]
    angle = rng.uniform(0, 2 * math.pi)
    corners = _card_corners(centre_uv[0], centre_uv[1], angle, *size)
    quad = _project(hom, corners)
    box = _bbox(quad, w, h)
    if box[2] <= box[0] or box[3] <= box[1]:
        return kind
    _draw_shadow(img, quad, np.array([3, 4], np.float32), 3, 0.35)
    if kind == "paper":
        _poly_fill(img, quad, tuple(float(v) for v in rng.uniform(215, 250, 3)))
        # Pencil lines of a score sheet.
        for i in range(1, int(rng.integers(4, 14))):
            v = size[1] / 2 - i * 15
            a, b = _card_corners(0, 0, angle, size[0] * 0.8, 0)[:2]
            off = np.array([-math.sin(angle), math.cos(angle)]) * v
            line = _project(hom, np.array([a + off, b + off]) + centre_uv)
            cv2.line(
                img,
                tuple(int(x) for x in line[0]),
                tuple(int(x) for x in line[1]),
                (150, 150, 150),
                1,
                cv2.LINE_AA,
            )
    elif kind == "phone":
        _poly_fill(img, quad, (20, 20, 22))
        screen = _project(
            hom, _card_corners(centre_uv[0], centre_uv[1], angle, size[0] - 8, size[1] - 16)
        )
        _poly_fill(img, screen, tuple(float(v) for v in rng.uniform(8, 45, 3)))
    else:
        _poly_fill(
            img,
            quad,
            tuple(
                float(v)
                for v in rng.choice([(20, 20, 150), (20, 20, 20), (30, 120, 170), (240, 240, 240)])
            ),
        )
        if faces:
            art = faces[int(rng.integers(len(faces)))]
            inner = _project(
                hom,
                _card_corners(
                    centre_uv[0],
                    centre_uv[1],
                    angle,
                    size[0] * 0.55,
                    size[0] * 0.55 * CARD_H_MM / CARD_W_MM,
                ),
            )
            ibox = _bbox(inner, w, h)
            if ibox[2] > ibox[0] and ibox[3] > ibox[1]:
                warped = _warp_into(art, inner, ibox)
                _composite(
                    img[ibox[1] : ibox[3], ibox[0] : ibox[2]], warped[..., :3], warped[..., 3]
                )
    if on_top:
        mask = np.zeros((h, w), np.uint8)
        _poly_fill(mask, quad, 255)
        idmap[mask > 127] = -1
    return kind


_CASTS = {
    "neutral": (1.0, 1.0, 1.0),
    "warm": (0.78, 0.94, 1.12),
    "magenta": (1.05, 0.82, 1.08),
    "blue": (1.18, 1.02, 0.84),
    "green": (0.92, 1.08, 0.92),
}


@functools.lru_cache(maxsize=4)
def _noise_bank(h: int, w: int) -> np.ndarray:
    """Fixed Gaussian noise, cropped at random offsets: far faster than fresh noise per scene."""
    return np.random.default_rng(12345).standard_normal((h + 64, w + 64, 3), dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# The scene
# ---------------------------------------------------------------------------------------------


def render_scene(seed: int, config: SceneConfig = SceneConfig()) -> Scene:
    """One table scene and its labels; the same seed and config give the same result."""
    cfg = config
    rng = np.random.default_rng(seed)
    w, h = cfg.width, cfg.height
    deck_dirs = cfg.decks or default_deck_dirs()
    decks = [load_deck(str(d)) for d in deck_dirs]

    # Camera.
    lo, hi = cfg.card_px or (40.0 * h / 720, 260.0 * h / 720)
    card_px = float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
    tilt = float(cfg.max_tilt_deg * math.sqrt(rng.random()))
    hom, camera_pos = _camera(rng, cfg, card_px, tilt)
    hom_inv = np.linalg.inv(hom)
    poly = _visible_extent(hom_inv, w, h)

    # Table surface, in the table plane so it shares the perspective.
    img, surface = _table_surface(rng, cfg, hom_inv)

    # Layout.
    # Players mostly sit square to the camera, sometimes at any angle.
    if rng.random() < 0.3:
        yaw = float(rng.uniform(0, 2 * math.pi))
    else:
        yaw = float(rng.choice([0, math.pi / 2, math.pi, 3 * math.pi / 2]) + rng.normal(0, 0.12))
    if rng.random() < cfg.p_random_layout:
        placed, layout = _random_layout(rng, cfg, hom_inv)
    else:
        placed, layout = _game_layout(rng, cfg, poly, yaw)

    # Which face goes where: one deck per scene (sometimes mixed), no card twice per deck.
    mixed = len(decks) > 1 and rng.random() < cfg.p_mixed_decks
    scene_decks = decks if mixed else [decks[int(rng.integers(len(decks)))]]
    pools = {name: [c for c in ALL_CODES if c in files] for name, files in scene_decks}
    for name in pools:
        rng.shuffle(pools[name])
    for p in placed:
        if p.face_down:
            continue
        name, files = scene_decks[int(rng.integers(len(scene_decks)))]
        if not pools[name]:
            pools[name] = [c for c in ALL_CODES if c in files]
            rng.shuffle(pools[name])
        p.card = pools[name].pop()
        p.deck, p.path = name, files[p.card]
    back_color = "red" if rng.random() < 0.35 else "black"
    back_variant = int(rng.integers(8))
    # a deck with a back of its own shows it face down (drawn after the draws above: scenes of
    # decks without one keep their pixels)
    own_back = back_image(deck_dirs[[n for n, _ in decks].index(scene_decks[0][0])])

    idmap = np.full((h, w), -1, np.int16)
    distractors = []
    n_distractors = int(rng.integers(1, 3)) if rng.random() < cfg.p_distractors else 0
    art_faces = [_face(p.path, 128, cfg.realism) for p in placed if p.path is not None][:3]
    for _ in range(n_distractors):
        centre = poly[int(rng.integers(4))] * rng.uniform(0.3, 0.8)
        distractors.append(_draw_distractor(rng, img, idmap, hom, centre, art_faces, on_top=False))

    # Cards, bottom first. Some scenes print every face inside a black rim, as on Nintendo
    # cards whose black core folds over the face.
    rim_mm = rng.uniform(0.6, 1.6) if rng.random() < cfg.p_black_rim else 0.0
    shadow_dir = np.array([rng.uniform(-1, 1), rng.uniform(0.2, 1)], np.float32)
    shadow_dir /= np.linalg.norm(shadow_dir)
    edge_color = (18, 18, 18) if rng.random() < 0.7 else (200, 205, 210)
    style = deck_style(seed, cfg)
    restyle = style_matrix(style) if style else None
    quads, areas = [], []
    for i, p in enumerate(placed):
        quad = _project(hom, _lifted(_card_corners(p.x, p.y, p.angle), p.lift, camera_pos))
        quads.append(quad)
        areas.append(float(polygon_areas(quad[None].astype(np.float64))[0]))
        side = max(np.linalg.norm(quad[0] - quad[3]), np.linalg.norm(quad[1] - quad[2]))
        box = _bbox(quad, w, h)
        if box[2] <= box[0] or box[3] <= box[1]:
            continue
        level = _face_level(side)
        if p.face_down and own_back is not None:
            face = _face(own_back, level, cfg.realism)
        elif p.face_down:
            face = _back_face(back_color, back_variant, level)
        else:
            face = _face(p.path, level, cfg.realism)
        thickness_px = max(0.6, side / 90)
        _draw_shadow(img, quad, shadow_dir * side * 0.04, max(0.5, side / 40), 0.35)
        # The card's edge (thickness) shows on the side facing the camera.
        _poly_fill(img, quad + np.array([0, thickness_px], np.float32), edge_color)
        x0, y0, x1, y1 = box
        variation = _card_variation(rng)  # drawn either way: clean scenes keep the same layout
        if not cfg.realism:
            variation = _NO_VARIATION
        if restyle is not None and not p.face_down:
            variation = _then(restyle, variation)  # the deck's inks, then this print's stock
        if rim_mm and not p.face_down:
            rim = _warp_into(_plain_face(edge_color, level), quad, box)
            _composite(img[y0:y1, x0:x1], rim[..., :3], rim[..., 3])
            idmap[y0:y1, x0:x1][rim[..., 3] > 127] = i
            inner = _card_corners(p.x, p.y, p.angle, CARD_W_MM - 2 * rim_mm, CARD_H_MM - 2 * rim_mm)
            face_quad = _project(hom, _lifted(inner, p.lift, camera_pos))
        else:
            face_quad = quad
        warped = _warp_into(face, face_quad, box)
        alpha = warped[..., 3]
        colour = _tint(warped, variation)
        _composite(img[y0:y1, x0:x1], colour, alpha)
        idmap[y0:y1, x0:x1][alpha > 127] = i

    # Distractors and hands above the cards.
    if n_distractors and rng.random() < 0.3:
        centre = poly[int(rng.integers(4))] * rng.uniform(0.2, 0.6)
        distractors.append(_draw_distractor(rng, img, idmap, hom, centre, art_faces, on_top=True))
    n_hands = int(rng.integers(1, 3)) if rng.random() < cfg.p_hands else 0
    for _ in range(n_hands):
        _draw_hand(rng, img, idmap, card_px)

    # Glare: bright specular ellipses on glossy cards.
    glare = placed and cfg.realism and rng.random() < cfg.p_glare
    if glare:
        for i in rng.choice(len(placed), min(len(placed), int(rng.integers(1, 4))), replace=False):
            _draw_glare(rng, img, idmap, quads[i], int(i))

    # Sheen and motion blur, then the lens, then camera: light, colour cast, blur, noise, JPEG.
    movement = {"motion_blur": 0.0, "sheen": False}
    if cfg.realism:
        movement = _sheen_and_motion(np.random.default_rng([seed, 1]), cfg, img, idmap)
    lens_k = cfg.lens_k or _drawn_lens_k(seed, cfg)
    if lens_k:
        # What a card shows is still counted on the flat render (as a share of its flat area),
        # less what the lens leaves out of the frame.
        lens = Lens(lens_k)
        img, in_frame = lens.bend(img)
        idmap[~in_frame] = -1
        quads = [lens.to_frame(q, w, h).astype(np.float32) for q in quads]
    if cfg.realism:
        light, img = _camera_effects(rng, cfg, img)
    else:
        light = {"light": "neutral", "blur": 0.0, "noise": 0.0, "jpeg_quality": None}
    light.update(movement, lens_k=float(lens_k))

    counts = np.bincount((idmap.ravel() + 1).astype(np.int64), minlength=len(placed) + 1)[1:]
    labels = []
    for i, p in enumerate(placed):
        visible = float(min(1.0, counts[i] / areas[i])) if areas[i] > 0 else 0.0
        if visible < cfg.min_visible:
            continue
        labels.append(
            CardLabel(
                BACK if p.face_down else p.card, quads[i], visible, "" if p.face_down else p.deck
            )
        )

    conditions = {
        "seed": int(seed),
        "tilt_deg": round(tilt, 2),
        "yaw_deg": round(math.degrees(yaw) % 360, 1),
        "card_px": round(card_px, 1),
        "overlap": bool(any(lab.visible < 0.98 for lab in labels)),  # covered or cut by the frame
        "card_px_median": round(float(np.median([_card_height(lab.quad) for lab in labels])), 1)
        if labels
        else 0.0,
        "n_cards": len(placed),
        "decks": sorted({p.deck for p in placed if p.deck}),
        "backs": back_color,
        "surface": surface,
        "distractors": distractors,
        "hands": n_hands,
        "glare": bool(glare),
        **layout,
        **light,
    }
    if style:
        conditions["deck_style"] = style
    return Scene(img, labels, conditions)


def _table_surface(rng, cfg: SceneConfig, hom_inv: np.ndarray) -> tuple[np.ndarray, str]:
    w, h = cfg.width, cfg.height
    sources = cfg.backgrounds or default_backgrounds()
    files = _background_files(tuple(str(s) for s in sources)) if sources else ()
    if not files or rng.random() < cfg.p_procedural_background:
        kind = PROCEDURAL_SURFACES[int(rng.integers(len(PROCEDURAL_SURFACES)))]
        tex = _procedural_surface(kind, int(rng.integers(32)))
        name = kind
        mm_per_tile = rng.uniform(150, 400) if kind != "cloth" else rng.uniform(40, 120)
    else:
        path = files[int(rng.integers(len(files)))]
        tex = _texture(path)
        name = path.stem
        mm_per_tile = rng.uniform(0.4, 1.5) * tex.shape[0]
    px_per_mm = tex.shape[0] / mm_per_tile
    # Tint the small tile, not the frame, so one texture comes in several colours cheaply.
    gain = rng.uniform(0.75, 1.2) * rng.normal(1, 0.06, 3)
    tex = np.clip(tex * gain, 0, 255).astype(np.uint8)
    a = rng.uniform(0, 2 * math.pi)
    c, s = math.cos(a) * px_per_mm, math.sin(a) * px_per_mm
    to_tex = np.array([[c, -s, rng.uniform(0, 1000)], [s, c, rng.uniform(0, 1000)], [0, 0, 1]])
    m = to_tex @ hom_inv
    img = cv2.warpPerspective(
        tex, m, (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_WRAP
    )
    return img, name


def _draw_glare(rng, img, idmap, quad, idx) -> None:
    h, w = img.shape[:2]
    x0, y0, x1, y1 = _bbox(quad, w, h)
    if x1 - x0 < 4 or y1 - y0 < 4:
        return
    centre = quad.mean(axis=0) + rng.uniform(-0.3, 0.3, 2) * (quad.max(0) - quad.min(0))
    side = float(np.linalg.norm(quad[0] - quad[3]))
    axes = (max(2, int(side * rng.uniform(0.15, 0.5))), max(1, int(side * rng.uniform(0.05, 0.2))))
    patch = np.zeros((y1 - y0, x1 - x0), np.float32)
    cv2.ellipse(
        patch,
        (int(centre[0] - x0), int(centre[1] - y0)),
        axes,
        rng.uniform(0, 180),
        0,
        360,
        1.0,
        -1,
    )
    k = 2 * max(1, int(axes[1] * 0.5)) + 1
    patch = cv2.blur(cv2.blur(patch, (k, k)), (k, k))
    patch *= idmap[y0:y1, x0:x1] == idx
    strength = rng.uniform(120, 230)
    roi = img[y0:y1, x0:x1]
    roi[:] = np.clip(roi + patch[..., None] * strength, 0, 255).astype(np.uint8)


def _drawn_lens_k(seed: int, cfg: SceneConfig) -> float:
    """The lens of a scene whose config draws one per scene (``p_lens``), else 0."""
    if cfg.p_lens <= 0:
        return 0.0
    rng = np.random.default_rng([seed, 2])
    if rng.random() >= cfg.p_lens:
        return 0.0
    return round(float(rng.uniform(*cfg.lens_k_range)), 4)  # as the conditions record it


def _sheen_and_motion(rng, cfg: SceneConfig, img: np.ndarray, idmap: np.ndarray) -> dict:
    """In place: a broad sheen over the card pixels, then a straight smear of the whole frame."""
    h, w = img.shape[:2]
    sheen = rng.random() < cfg.p_sheen
    if sheen:
        # A soft band of reflected light, wider than a card, washing out the print under it.
        angle = rng.uniform(0, math.pi)
        normal = np.array([math.cos(angle), math.sin(angle)], np.float32)
        mw, mh = max(4, w // 8), max(3, h // 8)
        ys, xs = np.mgrid[0:mh, 0:mw].astype(np.float32)
        dist = (xs * 8 - rng.uniform(0, w)) * normal[0] + (ys * 8 - rng.uniform(0, h)) * normal[1]
        width = rng.uniform(0.12, 0.35) * math.hypot(w, h)
        band = np.exp(-0.5 * (dist / (0.5 * width)) ** 2) * rng.uniform(0.25, 0.6)
        band = cv2.resize(band, (w, h), interpolation=cv2.INTER_LINEAR)
        band = band.astype(np.float32) * (idmap >= 0)  # card stock only: not cloth, skin, paper
        img[:] = np.clip(img + band[..., None] * (np.float32(255) - img), 0, 255).astype(np.uint8)
    length = 0.0
    if rng.random() < cfg.p_motion_blur:
        length = float(rng.uniform(3.0, max(3.0, cfg.max_motion_px * h / 720)))
        size = 2 * int(math.ceil(length / 2)) + 1
        kernel = np.zeros((size, size), np.float32)
        c = size // 2
        direction = rng.uniform(0, math.pi)
        d = np.array([math.cos(direction), math.sin(direction)]) * length / 2
        cv2.line(kernel, _pt((c - d[0], c - d[1])), _pt((c + d[0], c + d[1])), 1.0, 1, cv2.LINE_AA)
        img[:] = cv2.filter2D(img, -1, kernel / kernel.sum(), borderType=cv2.BORDER_REFLECT)
    return {"motion_blur": round(length, 1), "sheen": bool(sheen)}


def _camera_effects(rng, cfg: SceneConfig, img: np.ndarray) -> tuple[dict, np.ndarray]:
    h, w = img.shape[:2]
    # Uneven light: a smooth random field plus a gradient, as from a lamp to one side.
    field_ = rng.uniform(0.75, 1.15, (3, 4)).astype(np.float32)
    gx, gy = rng.uniform(-0.25, 0.25, 2)
    yy, xx = np.mgrid[0:3, 0:4].astype(np.float32)
    field_ *= 1 + gx * (xx / 3 - 0.5) + gy * (yy / 2 - 0.5)
    brightness = rng.uniform(0.65, 1.15)
    cast = "neutral"
    if rng.random() < cfg.p_color_cast:
        cast = ["warm", "magenta", "blue", "green"][int(rng.integers(4))]
    gains = np.array(_CASTS[cast], np.float32) * rng.normal(1, 0.03, 3).astype(np.float32)
    # Light and colour cast as one uint8 multiplier (x/128), upsampled from a tiny field:
    # saturating SIMD maths on the frame, no float copies of it.
    small = field_[..., None] * brightness * gains * 128
    mw, mh = max(4, w // 8), max(3, h // 8)
    mid = cv2.resize(small, (mw, mh), interpolation=cv2.INTER_CUBIC)
    # Lens vignetting: darker towards the corners.
    vignette = rng.uniform(0.0, 0.35)
    ys = np.linspace(-1, 1, mh, dtype=np.float32)
    xs = np.linspace(-1, 1, mw, dtype=np.float32)
    r2 = np.add.outer(ys**2, xs**2) / 2
    mid = mid * (1 - vignette * r2)[..., None]
    # Sometimes a large soft shadow (a player leaning over, a lamp shade) crosses the table.
    big_shadow = rng.random() < cfg.p_big_shadow
    if big_shadow:
        shade = np.zeros((mh, mw), np.float32)
        centre = rng.uniform(0, 1, 2) * (mw, mh)
        axes = rng.uniform(0.2, 0.6, 2) * (mw, mh)
        cv2.ellipse(shade, _pt(centre), _pt(axes), rng.uniform(0, 180), 0, 360, 1.0, -1)
        k = 2 * max(1, mh // 10) + 1
        shade = cv2.blur(cv2.blur(shade, (k, k)), (k, k))
        mid = mid * (1 - rng.uniform(0.25, 0.55) * shade)[..., None]
    mid = np.clip(mid, 0, 255).astype(np.uint8)
    mult = cv2.resize(mid, (w, h), interpolation=cv2.INTER_LINEAR)
    out = cv2.multiply(img, mult, scale=1 / 128)
    blur = 0.0
    if rng.random() < cfg.p_blur:
        blur = float(rng.uniform(0.4, cfg.max_blur_sigma))
        out = cv2.GaussianBlur(out, (0, 0), blur)
    noise = float(rng.uniform(0.5, cfg.max_noise))
    bank = _noise_bank(h, w)
    oy, ox = (int(v) for v in rng.integers(0, 64, 2))
    out = cv2.addWeighted(out, 1.0, bank[oy : oy + h, ox : ox + w], noise, 0.0, dtype=cv2.CV_8U)
    quality = int(rng.integers(cfg.jpeg_quality[0], cfg.jpeg_quality[1] + 1))
    ok, buf = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, quality])
    out = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    return {
        "light": cast,
        "vignette": round(float(vignette), 3),
        "big_shadow": bool(big_shadow),
        "brightness": round(float(brightness), 3),
        "blur": round(blur, 2),
        "noise": round(noise, 2),
        "jpeg_quality": quality,
    }, out


# ---------------------------------------------------------------------------------------------
# Datasets: images/000000.jpg + labels.jsonl
# ---------------------------------------------------------------------------------------------


def scene_seed(seed: int, index: int) -> int:
    """Seed of scene ``index`` of a dataset: datasets with different seeds never share scenes."""
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _render_record(task: tuple[int, int, SceneConfig]) -> tuple[bytes, dict]:
    """One dataset entry: JPEG bytes and its JSON record (runs in worker processes too)."""
    index, seed, config = task
    scene = render_scene(scene_seed(seed, index), config)
    ok, buf = cv2.imencode(".jpg", scene.image, [cv2.IMWRITE_JPEG_QUALITY, 95])
    record = {
        "image": f"images/{index:06d}.jpg",
        "width": config.width,
        "height": config.height,
        "labels": [lab.to_dict() for lab in scene.labels],
        "conditions": scene.conditions,
    }
    return buf.tobytes(), record


def render_pool(workers: int):
    """A process pool for rendering scenes.

    Workers come from a fresh 'forkserver' process: forking a process that already runs torch,
    onnxruntime or OpenCV threads can leave the children deadlocked on a lock copied mid-use.
    """
    import multiprocessing

    return multiprocessing.get_context("forkserver").Pool(
        workers, initializer=cv2.setNumThreads, initargs=(1,)
    )


def write_dataset(
    out_dir,
    n: int,
    seed: int,
    config: SceneConfig = SceneConfig(),
    progress: bool = True,
    workers: int = 1,
) -> Path:
    """Render ``n`` scenes into ``out_dir``: ``images/NNNNNN.jpg`` and one JSON line per image.

    Scene ``i`` depends only on ``(seed, i)``, so ``workers`` processes give the same files.
    """
    out = Path(out_dir)
    for d in config.decks or default_deck_dirs():
        load_deck(str(d))  # fail before writing anything
    if config.backgrounds:
        _check_backgrounds(config.backgrounds)
    try:
        (out / "images").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SynthError(f"Cannot write scenes into {out}: {exc.strerror}.") from None
    tasks = [(i, seed, config) for i in range(n)]
    pool = None
    if workers > 1:
        pool = render_pool(workers)
        results = pool.imap(_render_record, tasks, chunksize=4)
    else:
        results = map(_render_record, tasks)
    if progress:
        try:
            from tqdm import tqdm

            results = tqdm(results, total=n, desc="render", unit="scene")
        except ImportError:  # tqdm is in the training extra only
            pass
    # Labels go to a temporary file renamed at the end: an interrupted run leaves no half list.
    partial = out / "labels.jsonl.partial"
    try:
        with open(partial, "w", encoding="utf-8") as fh:
            for jpeg, record in results:
                (out / record["image"]).write_bytes(jpeg)
                fh.write(json.dumps(record) + "\n")
        partial.replace(out / "labels.jsonl")
    except OSError as exc:  # a full disk, a folder taken away
        raise SynthError(f"Cannot write scenes into {out}: {exc.strerror}.") from None
    finally:
        if pool is not None:
            pool.terminate()
    return out


def read_dataset(out_dir) -> Iterator[Scene]:
    """Scenes written by ``write_dataset`` (images decoded from the JPEG files)."""
    root = Path(out_dir)
    path = root / "labels.jsonl"
    if not path.is_file():
        raise SynthError(f"{root} is not a rendered dataset: labels.jsonl is missing.")
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise SynthError(f"Line {line_no} of {path} is not valid JSON.") from None
            image = cv2.imread(str(root / record["image"]), cv2.IMREAD_COLOR)
            if image is None:
                raise SynthError(f"Image {record['image']} of {root} cannot be read.")
            labels = [CardLabel.from_dict(d) for d in record["labels"]]
            yield Scene(image, labels, record.get("conditions", {}))


def preload(config: SceneConfig = SceneConfig()) -> int:
    """Decode every card face of the configured decks now (e.g. before forking workers);
    returns the number of faces."""
    count = 0
    for folder in config.decks or default_deck_dirs():
        for path in load_deck(str(folder))[1].values():
            _face_master(path)
            count += 1
    return count


def benchmark(n: int = 50, config: SceneConfig = SceneConfig(), seed: int = 0) -> dict:
    """Render ``n`` scenes in memory (after a warm-up that fills the face cache); timings."""
    import time

    preload(config)
    for i in range(min(n, 10)):
        render_scene(scene_seed(seed + 1, i), config)
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        render_scene(scene_seed(seed, i), config)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "scenes": n,
        "width": config.width,
        "height": config.height,
        "scenes_per_s": round(n / wall, 2),
        "ms_per_scene": round(1000 * wall / n, 1),
        "cpu_ms_per_scene": round(1000 * cpu / n, 1),
        "opencv_threads": cv2.getNumThreads(),
        "load_avg_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }

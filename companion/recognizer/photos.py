"""Teaching a deck from twelve phone photos: ``companion deck add NAME --photos DIR``.

DIR holds ``01.jpg`` .. ``12.jpg`` (any common image type), one a month: that month's four
cards face up on a table, left to right in the order of the deck file's slots (``MM-1`` ..
``MM-4``: bright, animal, ribbon, chaff for the standard order). Each photo's cards are found
by their shape alone (``rectangles.find_cards``: no net has to know the deck), checked (four
cards, large enough, inside the photo, sharp), straightened, and the deck's references built
from them as ``deck add NAME DIR`` builds them from scans (``decks.card_views``), plus crops
cut from the photo itself as the detector cuts a card from a frame. A photo that will not do
gets one sentence naming it and what to fix; nothing is stored until all twelve are good.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from companion.detections import CLASSES
from companion.recognizer.decks import (
    EMBEDDER,
    IMAGE_SUFFIXES,
    DeckError,
    UserDeck,
    back_image,
    card_views,
    check_deck_name,
    model_settings,
    store_deck,
)
from companion.recognizer.geometry import crop_cards, crop_matrices, quads_to_rboxes
from companion.recognizer.messages import Message, Named
from companion.recognizer.month_cards import SIDE_SEEN, cards_around, find_month_cards
from companion.recognizer.month_cards import slot_order as cards_order
from companion.recognizer.nets import open_session
from companion.recognizer.rectangles import find_cards, order_quad, rectify
from companion.recognizer.settings import Settings

PHOTO_RE = re.compile(r"^(\d{1,2})$")
CARDS_PER_PHOTO = 4
MIN_CARD_PX = 120  # a card's long side in the photo: fewer pixels show too little of its art
EDGE_MARGIN = 0.005  # a card this close to the photo's edge (share of its short side) is cut
# how sharp a card must be: its steepest brightness step (99.5th percentile of the gradient,
# per pixel, seen at most 256 px tall) over its brightness range. Renders: 0.33-0.38 in focus,
# 0.26-0.30 with a 1.5 px blur, 0.17-0.21 at 3 px, 0.11-0.15 at 5 px; below 0.22 the fine
# lines that tell a month's chaff apart are gone
MIN_SHARPNESS = 0.22
# ... and blurred only where its steps are also soft for their height (``edge_sharpness``):
# 0.29-0.41 in focus whatever the design, 0.21-0.35 at 1.5 px, 0.13-0.27 at 3 px (a flat
# card's few lines leave the steepest 0.5 % of its pixels on its plain ground, under
# MIN_SHARPNESS however crisp)
MIN_EDGE_SHARPNESS = 0.25
LIKE_STEP = 24.0  # Lab units (OpenCV scale): a card's edge band this near the table's colour hides its edge
PATTERN_STEP = 8.0  # Lab units across 2 px, 3 in 4 of the table's: a grain that hides edges
STEP_SPAN = 24.0  # grey levels: a smaller change within STEP_REACH is grain, not a printed line
STEP_REACH = 5  # px either way a step is measured over
FACE_HEIGHT = 256  # the straightened card's height (px) the references are cut from
PHOTO_VIEWS = 20  # synthetic views per card (each both ways up), as deck add from scans
IN_PHOTO_VIEWS = 4  # crops cut from the photo itself per card (each both ways up)
MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


# a month's name in the page's languages (the sentences name it: "March's four cards")
MONTH_TRANSLATIONS = {
    "fr": (
        "janvier", "février", "mars", "avril", "mai", "juin",
        "juillet", "août", "septembre", "octobre", "novembre", "décembre",
    ),
    "ja": tuple(f"{m}月" for m in range(1, 13)),
}  # fmt: skip


def month_named(month: int) -> Named:
    """A month's name (English, with its French and Japanese) for a photo's sentence."""
    return Named(
        MONTH_NAMES[month - 1],
        {lang: names[month - 1] for lang, names in MONTH_TRANSLATIONS.items()},
    )


class PhotoError(DeckError):
    """Photos that cannot teach a deck: ``problems`` holds one sentence per photo to fix."""

    def __init__(self, problems: list[str]):
        super().__init__(
            problems[0]
            if len(problems) == 1
            else f"{len(problems)} photos need another take: {' '.join(problems)}"
        )
        self.problems = problems


@dataclass
class MonthPhoto:
    """One month's photo read: its four cards' quads (slot order, photo pixels), their
    straightened faces, and what is wrong with it (``problem``, one sentence, or "")."""

    month: int
    name: str
    image: np.ndarray | None = None
    quads: np.ndarray = field(default_factory=lambda: np.zeros((0, 4, 2), np.float32))
    faces: list = field(default_factory=list)
    problem: str = ""  # a Message (photo.*): English as text, said again by the page
    # what the finder saw, good or not (slot order, photo pixels): the page shows it to fix
    found: np.ndarray = field(default_factory=lambda: np.zeros((0, 4, 2), np.float32))


def photo_files(folder: str | Path) -> dict[int, Path]:
    """Month -> photo of a folder of ``01.jpg`` .. ``12.jpg``; a missing month is one sentence."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DeckError(f"{folder} is not a folder of twelve photos named 01.jpg to 12.jpg.")
    files: dict[int, Path] = {}
    for path in sorted(folder.iterdir()):
        found = PHOTO_RE.match(path.stem)
        if found and path.suffix.lower() in IMAGE_SUFFIXES and 1 <= int(found.group(1)) <= 12:
            files.setdefault(int(found.group(1)), path)
    missing = [m for m in range(1, 13) if m not in files]
    if missing:
        names = ", ".join(f"{m:02d}.jpg" for m in missing)
        months = ", ".join(MONTH_NAMES[m - 1] for m in missing)
        raise DeckError(
            f"{folder} lacks the photo of {months} ({names}): take each month's four cards "
            "face up, one photo a month."
        )
    return dict(sorted(files.items()))


def sharpness(face: np.ndarray) -> float:
    """How sharp a straightened card is (``MIN_SHARPNESS``): its steepest brightness step over
    its brightness range, at most ``FACE_HEIGHT`` px tall."""
    grey = cv2.cvtColor(face, cv2.COLOR_BGR2GRAY).astype(np.float32)
    grey = cv2.GaussianBlur(grey, (0, 0), 0.8)  # sensor noise is no sharpness
    gx = cv2.Sobel(grey, cv2.CV_32F, 1, 0, ksize=3) / 8
    gy = cv2.Sobel(grey, cv2.CV_32F, 0, 1, ksize=3) / 8
    low, high = np.percentile(grey, [2, 98])
    return float(np.percentile(np.hypot(gx, gy), 99.5) / max(high - low, 1.0))


def edge_sharpness(face: np.ndarray) -> float:
    """How steep a picture's colour steps are for their height: at the pixels of real steps
    (the brightness spans ``STEP_SPAN`` within ``STEP_REACH`` px), the steepest brightness
    change over that span (95th percentile). A step's steepness over its own height does not
    depend on how much of the picture is steps: a flat card (one colour, a frame, a mark)
    reads as sharp as a busy one in the same focus."""
    grey = cv2.cvtColor(face, cv2.COLOR_BGR2GRAY).astype(np.float32)
    grey = cv2.GaussianBlur(grey, (0, 0), 0.8)  # sensor noise is no sharpness
    gx = cv2.Sobel(grey, cv2.CV_32F, 1, 0, ksize=3) / 8
    gy = cv2.Sobel(grey, cv2.CV_32F, 0, 1, ksize=3) / 8
    window = np.ones((2 * STEP_REACH + 1, 2 * STEP_REACH + 1), np.uint8)
    span = cv2.dilate(grey, window) - cv2.erode(grey, window)
    low, high = np.percentile(grey, [2, 98])
    steps = span >= max(STEP_SPAN, 0.3 * (high - low))
    if steps.sum() < 20:
        return 0.0
    return float(np.percentile(np.hypot(gx, gy)[steps] / span[steps], 95))


def blurred(picture: np.ndarray) -> bool:
    """Whether a straightened card (or the middle of a photo) is out of focus: its steepest
    steps are soft for its brightness range (``sharpness``) and every step is soft for its
    own height (``edge_sharpness``)."""
    return sharpness(picture) < MIN_SHARPNESS and edge_sharpness(picture) < MIN_EDGE_SHARPNESS


def slot_order(quads: np.ndarray) -> np.ndarray:
    """Indices of the quads in slot order: a row left to right as the cards lie (across their
    long axis), a 2x2 as a page is read (``month_cards.slot_order``)."""
    return cards_order(quads)[0]


def _long_side(quad: np.ndarray) -> float:
    return float((np.linalg.norm(quad[3] - quad[0]) + np.linalg.norm(quad[2] - quad[1])) / 2)


# The long side a photo is read at for teaching: the photos the teaching is measured on
# (``simulator.teaching``) are 1600 px; a phone's 4000 px photo is decoded at half its size
# (JPEG), holding a quarter of the memory, with cards still over FACE_HEIGHT tall.
TEACH_LONG_SIDE = 2000


def _read_image(path: Path) -> np.ndarray | None:
    """A photo's pixels (BGR) at the size teaching needs (``TEACH_LONG_SIDE`` at most), or
    None where the file cannot be read or decoded."""
    from companion.recognizer.image_files import decoded

    try:
        data = np.fromfile(str(path), np.uint8)
    except OSError:
        return None
    return decoded(data, TEACH_LONG_SIDE)


def read_month_photo(path: Path, month: int, quads=None, centres=None) -> MonthPhoto:
    """Read and check one month's photo (``problem`` says what to fix, else ""); ``quads``:
    the four cards' outlines as the player drew them (slot order, photo pixels), taken as
    they are instead of looking for the cards; ``centres``: the four points the player tapped
    (photo pixels), the cards looked for around them (``month_cards.cards_around``)."""
    name = path.name
    photo = MonthPhoto(month, name)
    image = _read_image(path)
    if image is None:
        photo.problem = Message("photo.unreadable", name=name)
        return photo
    photo.image = image
    h, w = image.shape[:2]
    if min(h, w) < MIN_CARD_PX:  # no card of MIN_CARD_PX fits (and too few pixels to look in)
        photo.problem = Message("photo.too_small", name=name, px=min(h, w), need=MIN_CARD_PX)
        return photo
    month_name = month_named(month)
    if quads is not None:
        quads = check_drawn_quads(quads, w, h)
        found, sure, close = quads, True, False
    elif centres is not None:
        seen = cards_around(image, check_tapped_centres(centres, w, h))
        photo.found = seen.quads
        if not seen.sure:  # four outlines at the taps all the same: the page shows them to fix
            unclear = [str(k + 1) for k, s in enumerate(seen.support) if s.min() < SIDE_SEEN]
            photo.problem = Message(
                "photo.taps_unsure", name=name, cards=", ".join(unclear) or "1, 2, 3, 4"
            )
            return photo
        found, sure, close = seen.quads, True, False
    else:
        seen = find_month_cards(image)
        found, sure, close = seen.quads, seen.sure, seen.close
    photo.found = found
    margin = EDGE_MARGIN * min(h, w)
    cut = [
        q
        for q in found
        if (q[:, 0] < margin).any() or (q[:, 1] < margin).any()
        or (q[:, 0] > w - 1 - margin).any() or (q[:, 1] > h - 1 - margin).any()
    ]  # fmt: skip
    where = places(found, w, h)
    if len(found) != CARDS_PER_PHOTO:
        if _blurred_photo(image):
            photo.problem = Message("photo.blurred", name=name)
        elif cut or _touches_edge(image):
            photo.problem = Message(
                "photo.cut_and_counted", name=name, n=len(found), month=month_name
            )
        elif not len(found):
            photo.problem = Message("photo.no_card", name=name, month=month_name)
        elif close:
            photo.problem = Message(
                "photo.too_close", name=name, n=len(found), where=where, month=month_name
            )
        elif (trouble := table_trouble(image, found)) and len(found) > 1:
            photo.problem = Message(
                "photo.table_like_cards" if trouble == "like" else "photo.busy_table",
                name=name, n=len(found), where=where, month=month_name,
            )  # fmt: skip
        elif len(found) == 1:
            photo.problem = Message("photo.too_few_one", name=name, month=month_name)
        else:
            photo.problem = Message("photo.too_few", name=name, n=len(found), month=month_name)
        return photo
    if cut or (not sure and _touches_edge(image)):
        photo.problem = Message("photo.cut", name=name, month=month_name)
        return photo
    smallest = min(_long_side(q) for q in found)
    if smallest < MIN_CARD_PX:
        photo.problem = Message("photo.too_small", name=name, px=round(smallest), need=MIN_CARD_PX)
        return photo
    faces = [
        rectify(image, q, min(FACE_HEIGHT, max(MIN_CARD_PX, round(_long_side(q))))) for q in found
    ]
    # the photo's focus is the sharpest card's: a flat card (one colour, few lines) shows
    # fewer steep steps than a busy one in the same focus
    if all(blurred(f) for f in faces):
        photo.problem = Message("photo.blurred", name=name)
        return photo
    if not sure:
        trouble = table_trouble(image, found)
        said = {"like": "photo.unsure_like", "pattern": "photo.unsure_pattern"}
        photo.problem = Message(
            said.get(trouble, "photo.unsure"), name=name, where=where, month=month_name
        )
        return photo
    photo.quads = found
    photo.faces = [rectify(image, q, FACE_HEIGHT) for q in found]
    return photo


# where a card lies in the photo, by thirds: (English, French, Japanese)
_ACROSS = (("left", "à gauche", "左"), ("middle", "au milieu", "中央"), ("right", "à droite", "右"))
_DOWN = (("top", "en haut", "上"), ("", "", ""), ("bottom", "en bas", "下"))


def places(quads: np.ndarray, width: int, height: int) -> Named:
    """Where the cards found lie in the photo, in words ("top left, middle, right"), said in
    the page's languages: the sentences say what was seen where."""
    words: dict[str, list[str]] = {"en": [], "fr": [], "ja": []}
    for quad in quads:
        x, y = quad.mean(0)
        across = _ACROSS[min(2, int(3 * x / max(width, 1)))]
        down = _DOWN[min(2, int(3 * y / max(height, 1)))]
        words["en"].append(f"{down[0]} {across[0]}".strip())
        words["fr"].append(f"{down[1]} {across[1]}".strip().replace("en haut au milieu", "en haut")
                           .replace("en bas au milieu", "en bas"))  # fmt: skip
        words["ja"].append(f"{down[2]}{across[2]}" if down[2] and across[2] != "中央" else
                           (down[2] or across[2]))  # fmt: skip
    joined = {lang: ("、" if lang == "ja" else ", ").join(w) for lang, w in words.items()}
    return Named(joined["en"], {"fr": joined["fr"], "ja": joined["ja"]})


def check_drawn_quads(quads, width: int, height: int) -> np.ndarray:
    """Four outlines drawn by the player (slot order, photo pixels) as a (4, 4, 2) array;
    DeckError with one sentence where they are not four cards inside the photo."""
    try:
        arr = np.asarray(quads, np.float64).reshape(CARDS_PER_PHOTO, 4, 2)
    except (ValueError, TypeError):
        raise DeckError("The outlines drawn are not four cards of four corners each.") from None
    if not np.isfinite(arr).all():
        raise DeckError("The outlines drawn are not four cards of four corners each.")
    arr[..., 0] = np.clip(arr[..., 0], 0, width - 1)
    arr[..., 1] = np.clip(arr[..., 1], 0, height - 1)
    out = []
    for quad in arr:
        if cv2.contourArea(quad.astype(np.float32)) < (MIN_CARD_PX / 4) ** 2:
            raise DeckError("An outline drawn is too small to be a card: drag its corners out.")
        out.append(order_quad(quad))
    return np.stack(out).astype(np.float32)


def check_tapped_centres(centres, width: int, height: int) -> np.ndarray:
    """The four points the player tapped (photo pixels) as a (4, 2) array; DeckError with one
    sentence where they are not four points inside the photo, apart from each other."""
    try:
        arr = np.asarray(centres, np.float64).reshape(CARDS_PER_PHOTO, 2)
    except (ValueError, TypeError):
        raise DeckError("The points tapped are not four, one in the middle of each card.") from None
    if not np.isfinite(arr).all():
        raise DeckError("The points tapped are not four, one in the middle of each card.")
    arr[:, 0] = np.clip(arr[:, 0], 0, width - 1)
    arr[:, 1] = np.clip(arr[:, 1], 0, height - 1)
    apart = np.linalg.norm(arr[:, None] - arr[None], axis=-1)
    np.fill_diagonal(apart, np.inf)
    if apart.min() < MIN_CARD_PX / 4:
        raise DeckError("Two points tapped lie on one card: tap the middle of each card once.")
    return arr


def table_trouble(image: np.ndarray, quads: np.ndarray) -> str:
    """What on the table hid some cards' edges, as far as the photo tells: ``like`` (the
    cards' edges are of the table's colour: the step from the band just inside each card
    found to the ring just outside it is under ``LIKE_STEP``), ``pattern`` (the table's own
    grain steps as much as a card's edge would: 3 in 4 of its border strip's colour changes
    across 2 px reach ``PATTERN_STEP``), else ""."""
    edge, grain = table_steps(image, quads)
    if edge is not None and edge < LIKE_STEP:
        return "like"
    return "pattern" if grain >= PATTERN_STEP else ""


def table_steps(image: np.ndarray, quads: np.ndarray) -> tuple[float | None, float]:
    """(the median step from the cards' edge bands to the table just outside them, None
    without cards; the 75th percentile of the table's colour change across 2 px), Lab."""
    scale = min(1.0, 600 / max(image.shape[:2]))
    small = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    lab = cv2.cvtColor(cv2.GaussianBlur(small, (0, 0), 0.7), cv2.COLOR_BGR2Lab).astype(np.float32)
    h, w = lab.shape[:2]
    cards = np.zeros((h, w), np.uint8)
    for q in quads:
        cv2.fillConvexPoly(cards, np.round(np.asarray(q) * scale).astype(np.int32), 1)
    if len(quads):
        steps: list = []
        for q in np.asarray(quads, np.float64) * scale:
            centre = q.mean(0)
            inside = np.zeros((h, w), np.uint8)
            cv2.fillConvexPoly(inside, np.round(centre + (q - centre) * 0.97).astype(np.int32), 1)
            cv2.fillConvexPoly(inside, np.round(centre + (q - centre) * 0.9).astype(np.int32), 0)
            outside = np.zeros((h, w), np.uint8)
            cv2.fillConvexPoly(outside, np.round(centre + (q - centre) * 1.1).astype(np.int32), 1)
            cv2.fillConvexPoly(outside, np.round(centre + (q - centre) * 1.03).astype(np.int32), 0)
            outside &= 1 - cards
            if inside.any() and outside.any():
                steps.append(np.linalg.norm(np.median(lab[inside > 0], 0)
                                            - np.median(lab[outside > 0], 0)))  # fmt: skip
    edge = float(np.median(steps)) if len(quads) and steps else None
    strip = np.zeros((h, w), np.uint8)
    band = max(4, int(0.08 * min(h, w)))
    strip[:band], strip[-band:], strip[:, :band], strip[:, -band:] = 1, 1, 1, 1
    strip &= 1 - cv2.dilate(cards, np.ones((9, 9), np.uint8))
    along_x = np.linalg.norm(lab[1:-1, 2:] - lab[1:-1, :-2], axis=-1)
    along_y = np.linalg.norm(lab[2:, 1:-1] - lab[:-2, 1:-1], axis=-1)
    grain = np.maximum(along_x, along_y)[strip[1:-1, 1:-1] > 0]
    return edge, float(np.percentile(grain, 75)) if grain.size else 0.0


def _touches_edge(image: np.ndarray) -> bool:
    """Whether something unlike the table reaches the photo's edge with a card's bulk (a cut
    card), judged on the table's colours (``rectangles.table_colours``) at a coarse scale."""
    from companion.recognizer.rectangles import table_colours

    scale = 400 / max(image.shape[:2])
    small = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    unlike = (cv2.blur(table_colours(small), (5, 5)) < 0.05).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(unlike)
    h, w = unlike.shape
    for i in range(1, count):
        x, y, bw, bh, area = stats[i]
        at_edge = x == 0 or y == 0 or x + bw >= w or y + bh >= h
        if at_edge and area >= 0.004 * h * w:
            return True
    return False


def _blurred_photo(image: np.ndarray) -> bool:
    """Whether the middle of a photo where no four cards were found is out of focus."""
    h, w = image.shape[:2]
    middle = image[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4]
    scale = min(1.0, FACE_HEIGHT * 2 / max(middle.shape[:2]))
    middle = cv2.resize(middle, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    return blurred(middle)


@dataclass
class BackPicture:
    """The deck's back: its straightened picture (``face``), and the photo and quad it was found
    in (None for a scan, which is the card alone)."""

    name: str
    face: np.ndarray
    image: np.ndarray | None = None
    quad: np.ndarray | None = None

    def crops(self, settings: Settings, rng) -> np.ndarray | None:
        """Crops cut from the photo itself (``photo_crops``), None for a scan."""
        if self.image is None:
            return None
        return photo_crops(self.image, self.quad, settings, rng)


def back_photo_problem(path: str | Path) -> tuple[BackPicture | None, str]:
    """Read a photo of one card of the deck lying face down: (the back, "") or (None, one
    sentence saying what to fix, a Message)."""
    path = Path(path)
    name = path.name
    image = _read_image(path)
    if image is None:
        return None, Message("photo.back_unreadable", name=name)
    h, w = image.shape[:2]
    if min(h, w) < MIN_CARD_PX:  # no card of MIN_CARD_PX fits
        return None, Message("photo.back_too_small", name=name, px=min(h, w), need=MIN_CARD_PX)
    quads = find_cards(image).quads
    margin = EDGE_MARGIN * min(h, w)
    inside = [
        q
        for q in quads
        if not ((q[:, 0] < margin).any() or (q[:, 1] < margin).any()
                or (q[:, 0] > w - 1 - margin).any() or (q[:, 1] > h - 1 - margin).any())
    ]  # fmt: skip
    if len(quads) != 1 or len(inside) != 1:
        if len(quads) == 1 or (not quads.size and _touches_edge(image)):
            return None, Message("photo.back_cut", name=name)
        if _blurred_photo(image) and not len(quads):
            return None, Message("photo.back_blurred", name=name)
        if len(quads):
            return None, Message("photo.back_cards", name=name, n=len(quads))
        return None, Message("photo.back_no_card", name=name)
    quad = quads[0]
    if _long_side(quad) < MIN_CARD_PX:
        return None, Message(
            "photo.back_too_small", name=name, px=round(_long_side(quad)), need=MIN_CARD_PX
        )
    return BackPicture(name, rectify(image, quad, FACE_HEIGHT), image, quad), ""


def read_back_photo(path: str | Path) -> BackPicture:
    """``back_photo_problem``'s back, or its sentence as a DeckError."""
    back, problem = back_photo_problem(path)
    if back is None:
        raise DeckError(problem)
    return back


def read_photos(folder: str | Path) -> list[MonthPhoto]:
    """The twelve months' photos of ``folder``, read and checked (see ``MonthPhoto.problem``)."""
    return [read_month_photo(path, month) for month, path in photo_files(folder).items()]


def photo_crops(
    image: np.ndarray, quad: np.ndarray, settings: Settings, rng, views: int = IN_PHOTO_VIEWS
) -> np.ndarray:
    """Crops of one card cut from the photo itself as the detector cuts a card from a frame
    (the photo shrunk so that the card is 40-160 px long, the box a little off), each both ways
    up: (2 * views, crop height, crop width, 3)."""
    long = _long_side(quad)
    crops = []
    for _ in range(views):
        scale = min(1.0, rng.uniform(40, 160) / long)
        small = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        box = quads_to_rboxes(quad[None] * scale)[0]
        box[:2] += rng.normal(0, 0.04, 2) * box[2]
        box[2:4] *= np.exp(rng.normal(0, 0.05))
        box[4] += rng.normal(0, 0.04)
        turned = box.copy()
        turned[4] += np.pi
        crops.append(crop_cards(small, crop_matrices(np.stack([box, turned]), settings), settings))
    return np.concatenate(crops)


def teach_from_photos(
    name: str,
    photo_dir: str | Path,
    decks_dir: str | Path | None = None,
    names_file: str | Path | None = None,
    definition: str = "standard",
    seed: int = 0,
    photos: list[MonthPhoto] | None = None,
    back_photo: str | Path | None = None,
) -> UserDeck:
    """Make and store deck ``name`` from the twelve photos in ``photo_dir`` (or the ``photos``
    already read from it); ``names_file``: the deck's own names (a deck file, checked first and
    kept with the deck), else ``definition``; ``back_photo``: one card lying face down, the
    deck's back (default: ``back.jpg`` in ``photo_dir`` where there is one; else the deck has no
    back of its own). PhotoError names every photo to take again."""
    from companion.game.cards import Deck

    check_deck_name(name)
    if names_file is not None:
        Deck.load(names_file)  # one sentence per mistake, before any work
    else:
        Deck.load(definition)
    start = time.perf_counter()
    photos = photos if photos is not None else read_photos(photo_dir)
    problems = [p.problem for p in photos if p.problem]
    if back_photo is None and photo_dir is not None:
        back_photo = back_image(photo_dir)
    back = None
    if back_photo is not None:
        back, problem = back_photo_problem(back_photo)
        problems += [problem] if problem else []
    if problems:
        raise PhotoError(problems)
    settings = Settings.from_dict(model_settings())
    session = open_session(EMBEDDER, 2)
    rng = np.random.default_rng(seed)
    crops, ids, faces = [], [], {}
    for photo in photos:
        for k, (quad, face) in enumerate(zip(photo.quads, photo.faces, strict=True)):
            code = f"{photo.month:02d}-{k + 1}"
            faces[code] = face
            made = np.concatenate(
                [
                    card_views(face, settings, rng, PHOTO_VIEWS),
                    photo_crops(photo.image, quad, settings, rng),
                ]
            )
            crops.append(made)
            ids += [CLASSES.index(code)] * len(made)
    return store_deck(
        name,
        crops,
        ids,
        session,
        settings,
        rng,
        back=back,
        definition=definition,
        names_file=names_file,
        decks_dir=decks_dir,
        source=photo_dir,
        start=start,
        faces=faces,
    )

"""The player's own deck: ``companion deck add NAME DIR`` and the stage that names its cards.

``add_deck`` reads one image per card (``MM-K`` names, as in ``../shared/decks``), cuts from
each many crops as the detector would see the card on a table (turned either way up, off
centre, larger or smaller, blurred, under other light, its lower part hidden as in a fanned
capture row, on table colours), and keeps their embeddings: the 192 features the classifier's
heads read (``models/embedder.onnx``, the float classifier cut at its last hidden layer). That
needs no GPU and takes seconds. ``DeckNamer`` then names each face-up detection after the card
whose crops its own crop lies nearest, blended with the classifier's own belief. A deck
definition (``companion/game/decks/*.toml``) can rename and re-role the slots: the deck records
which one it uses.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from companion import CompanionError
from companion.detections import BACK_ID, CLASSES, Detections
from companion.game.cards import ALL_CODES
from companion.recognizer.geometry import crop_cards, crop_matrices, quads_to_rboxes
from companion.recognizer.messages import CardCode, Message
from companion.recognizer.nets import MODELS_DIR, open_session
from companion.recognizer.settings import Settings

EMBEDDER = MODELS_DIR / "embedder.onnx"
DECK_FORMAT = 1
VIEWS = 24  # crops per card image, each way up
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
CODE_FILE_RE = re.compile(r"^(\d{2})-(\d)$")
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".bmp"}
# how much the deck's own references weigh against the classifier (log-probability units)
SIMILARITY_WEIGHT = 100.0
CONFIDENCE_SHARPNESS = 30.0  # a name's confidence: softmax of this times the similarities
NAMES_FILE = "names.toml"  # a deck's own names and roles, kept in its folder


class DeckError(CompanionError):
    """A deck that cannot be added or found."""


def default_decks_dir() -> Path:
    """Beside the default match database: the player's data folder's ``decks``."""
    from companion.store import default_db_path

    return default_db_path().parent / "decks"


def deck_images(folder: str | Path) -> dict[str, Path]:
    """Card code -> image file of a folder of ``MM-K`` images; DeckError when it has none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DeckError(f"{folder} is not a folder of card images named like 01-1.png.")
    files = {}
    for path in sorted(folder.iterdir()):
        found = CODE_FILE_RE.match(path.stem)
        if found and path.suffix.lower() in IMAGE_SUFFIXES:
            code = f"{found.group(1)}-{found.group(2)}"
            if code in ALL_CODES:
                files[code] = path
    if not files:
        raise DeckError(f"{folder} has no card images named like 01-1.png (month-card).")
    return files


def _face(path: Path) -> np.ndarray:
    """A card image as BGR on mid-grey where it is transparent."""
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise DeckError(f"Cannot read the card image {path}.")
    if image.ndim == 2:
        image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    if image.shape[2] == 4:
        alpha = image[..., 3:4].astype(np.float32) / 255
        image = (image[..., :3] * alpha + 128 * (1 - alpha)).astype(np.uint8)
    return image[..., :3]


def card_views(face: np.ndarray, settings: Settings, rng, views: int = VIEWS) -> np.ndarray:
    """``views`` crops of one card (BGR image) as the detector cuts them from a table, and as
    many turned a half turn: (2 * views, crop height, crop width, 3)."""
    fh, fw = face.shape[:2]
    height = 160  # the card's long side on the made-up table, pixels
    width = max(8, round(fw * height / fh))
    card = cv2.resize(face, (width, height), interpolation=cv2.INTER_AREA)
    pad = height
    crops = []
    for k in range(views):
        table = np.empty((height + 2 * pad, width + 2 * pad, 3), np.uint8)
        table[:] = rng.integers(20, 235, 3)
        table = np.clip(table + rng.normal(0, 8, table.shape), 0, 255).astype(np.uint8)
        table[pad : pad + height, pad : pad + width] = card
        if k % 3 == 2:  # a fanned row: the next card covers the lower part
            cover = int(height * rng.uniform(0.3, 0.6))
            shade = rng.integers(60, 250, 3)
            table[pad + height - cover : pad + height + 20, pad - 10 : pad + width + 10] = shade
        gain, bias = rng.uniform(0.7, 1.25), rng.uniform(-25, 25)
        tint = rng.uniform(0.9, 1.1, 3)
        table = np.clip(table * gain * tint + bias, 0, 255).astype(np.uint8)
        sigma = rng.uniform(0, 1.5)
        if sigma > 0.3:
            table = cv2.GaussianBlur(table, (0, 0), sigma)
        # the box the detector would cut: off centre, a little large or small, turned a little
        cx = pad + width / 2 + rng.normal(0, 0.04) * width
        cy = pad + height / 2 + rng.normal(0, 0.04) * height
        grow = np.exp(rng.normal(0, 0.06))
        theta = np.pi / 2 + rng.normal(0, 0.05)  # the long axis points down the crop
        scale = rng.uniform(0.35, 1.0)  # as far as the camera may be: fewer pixels a card
        small = cv2.resize(table, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        boxes = np.array(
            [
                [cx * scale, cy * scale, width * grow * scale, height * grow * scale, theta],
                [cx * scale, cy * scale, width * grow * scale, height * grow * scale, -theta],
            ]
        )
        boxes[1, 4] = theta + np.pi  # the same card the other way up
        crops.append(crop_cards(small, crop_matrices(boxes, settings), settings))
    return np.concatenate(crops)


PIXELS_SIZE = (12, 20)  # the small picture a crop is also compared by (width, height)
PIXELS_MARGIN = 0.08  # ... cut this share inside each side: the card, not the table around it
# what a deck's references hold: the embedding alone (a partial deck), beside it the small
# picture less its mean colour (a whole deck of art the classifier knows), or the small
# picture with each channel's contrast evened too (a whole deck of a design of its own)
DESCRIPTORS = ("embedding", "embedding+pixels", "embedding+even-pixels")
EVEN_FLOOR = 4.0  # Lab units added to a channel's spread: a flat channel is not blown up


def pixels(crops: np.ndarray, even: bool = False) -> np.ndarray:
    """Unit-length small pictures of crops (N, H, W, 3): the card inside each (``PIXELS_MARGIN``
    in from the crop's sides, which show the table) shrunk to ``PIXELS_SIZE`` in Lab, less
    its mean colour, and (``even``) each channel divided by its spread (plus ``EVEN_FLOOR``),
    so that a colour cast, dim or harsh light change it less. The embedding knows the art of
    the decks the nets were trained on; the picture tells apart the cards of any design by
    where their colours lie."""
    h, w = crops.shape[1:3]
    mh, mw = round(PIXELS_MARGIN * h), round(PIXELS_MARGIN * w)
    out = np.empty((len(crops), PIXELS_SIZE[0] * PIXELS_SIZE[1] * 3), np.float32)
    for row, crop in zip(out, crops[:, mh : h - mh, mw : w - mw], strict=True):
        small = cv2.resize(crop, PIXELS_SIZE, interpolation=cv2.INTER_AREA)
        lab = cv2.cvtColor(small, cv2.COLOR_BGR2Lab).astype(np.float32).reshape(-1, 3)
        lab -= lab.mean(0)
        if even:
            lab /= lab.std(0) + EVEN_FLOOR
        row[:] = lab.reshape(-1)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)


def full_deck_descriptor(sureness: float) -> str:
    """What the references of a deck with all 48 cards hold, by how sure the classifier is of
    their names (``classifier_view``): for a design of its own (under ``RESCUE_BELOW``) the
    picture with its contrast evened, which on tables of redesigned decks named 2-7 points more
    of the found cards right; for art the classifier knows the picture as before (the evened
    one named 2 cards in 754 fewer right there)."""
    return "embedding+even-pixels" if sureness < RESCUE_BELOW else "embedding+pixels"


def describe(session, crops: np.ndarray, descriptor: str = "embedding+pixels") -> np.ndarray:
    """Unit-length descriptors of crops (``DESCRIPTORS``): the embedding, or the embedding and
    the small picture weighing half each in the cosine similarity."""
    feats = embed(session, crops)
    if descriptor == "embedding":
        return feats
    even = descriptor == "embedding+even-pixels"
    return np.concatenate([feats, pixels(crops, even)], axis=1) / np.sqrt(2.0)


def classifier_view(crops: np.ndarray, class_ids: np.ndarray) -> tuple[float, float]:
    """How the recognizer's classifier sees a deck's reference crops: (agreement, sureness).
    Agreement: the share it names as their own card, near 1 for a deck of the art the nets
    learned, near 0 for a design of its own or a re-skinned deck, where its belief must not
    weigh on the names. Sureness: its mean belief in the card it names (any card), near 1
    for art it knows even under other codes, low for a design of its own, whose cards it
    outlines but names unsure (``rescue_cards``)."""
    from companion.recognizer.nets import DEFAULT_MODEL, net_input

    meta = json.loads(DEFAULT_MODEL.read_text())
    session = open_session(DEFAULT_MODEL.parent / meta.get("float_nets", meta)["classifier"], 2)
    named, sure = [], []
    for i in range(0, len(crops), 256):
        batch = np.ascontiguousarray(crops[i : i + 256])
        probs = session.run(None, {"crop": net_input(session, batch)})[0][:, : len(ALL_CODES)]
        named.append(probs.argmax(axis=1))
        sure.append(probs.max(axis=1))
    return (
        float(np.mean(np.concatenate(named) == class_ids)),
        float(np.mean(np.concatenate(sure))),
    )


PLAIN_SPREAD = 5.0


def plain(crops: np.ndarray) -> np.ndarray:
    """Which crops (N, H, W, 3) are plain in their middle (the central three quarters each way,
    inside a back's printed frame): a face-down card's back, not a face with its art. The
    spread is the grey levels' standard deviation after a light blur (grain and sensor noise
    are no art)."""
    h, w = crops.shape[1:3]
    middle = crops[:, h // 8 : h - h // 8, w // 8 : w - w // 8]
    out = np.empty(len(crops), bool)
    for i, crop in enumerate(middle):
        grey = cv2.GaussianBlur(cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY), (3, 3), 0)
        out[i] = float(grey.std()) < PLAIN_SPREAD
    return out


def embed(session, crops: np.ndarray, batch: int = 256) -> np.ndarray:
    """Unit-length embeddings of crops (N, H, W, 3) uint8 BGR."""
    out = []
    for i in range(0, len(crops), batch):
        out.append(session.run(None, {"crop": np.ascontiguousarray(crops[i : i + batch])})[0])
    feats = np.concatenate(out) if out else np.zeros((0, 1), np.float32)
    return feats / np.maximum(np.linalg.norm(feats, axis=1, keepdims=True), 1e-6)


@dataclass(frozen=True)
class UserDeck:
    """A deck the player added: reference embeddings of its cards' crops, each with the class
    id of its card, and the deck definition that names its slots."""

    name: str
    definition: str  # a deck definition's name or path (companion.game.cards.Deck.load)
    embeddings: np.ndarray  # (M, D) float32, unit length
    class_ids: np.ndarray  # (M,) int64, indices into CLASSES
    source: str = ""
    seconds: float = 0.0
    # a crop this similar to a card's nearest reference is that card (a partial deck's bar)
    accept_similarity: float = 0.0
    folder: str = ""  # where it is kept (set by save and load)
    descriptor: str = "embedding"  # what the references hold (DESCRIPTORS)
    # the share of the references the classifier names right (``classifier_view``): how
    # much its belief weighs on the names (1: as much as ever, 0: not at all)
    agreement: float = 1.0
    # how sure the classifier is of the references' names, right or not (``classifier_view``)
    sureness: float = 1.0
    # the deck's own back (``deck add --back PHOTO``, or a back.png among the scans): (B, D)
    # descriptors of its crops, as ``embeddings``; None: no back taught, the classifier's
    # ``back`` stands
    back_embeddings: np.ndarray | None = None

    def names_deck(self):
        """The ``companion.game.cards.Deck`` that names and roles this deck's slots: its own
        ``names.toml`` where it keeps one, else its definition."""
        from companion.game.cards import Deck

        if self.definition == NAMES_FILE and self.folder:
            return Deck.load(Path(self.folder) / NAMES_FILE)
        return Deck.load(self.definition)

    @property
    def codes(self) -> list[str]:
        return sorted({CLASSES[i] for i in self.class_ids})

    def save(
        self, decks_dir: str | Path, names_file: str | Path | None = None, also=None
    ) -> Path:
        """Write the deck into ``decks_dir``/NAME, replacing a deck of that name as a whole or
        not at all: it is written in a folder of its own beside it, then swapped in by
        renaming, so that a write cut short (a full disk, a killed process) leaves the deck
        that was there. ``names_file``: the deck's own names (a deck file, already checked),
        kept with it; ``also(folder)`` writes what else the deck keeps (its cards' points) in
        the same folder before the swap. DeckError (one sentence) when it cannot be written
        (read-only, full, a file in the way)."""
        decks_dir = Path(decks_dir)
        folder = decks_dir / self.name
        _make_folder(decks_dir, self.name)
        staging = decks_dir / f".{self.name}{STAGING_MARK}{os.getpid()}-{time.time_ns()}"
        try:
            if folder.exists() and not folder.is_dir():  # a file in the way: never replaced
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST))
            staging.mkdir()
            if names_file is not None:
                shutil.copyfile(names_file, staging / NAMES_FILE)
            if also is not None:
                also(staging)
            self._write(staging)
            _swap_in(staging, folder)
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            reason = exc.strerror or str(exc)
            raise DeckError(
                Message("deck.cannot_keep", name=repr(self.name), folder=folder, reason=reason)
            ) from None
        object.__setattr__(self, "folder", str(folder))
        return folder

    def _write(self, folder: Path) -> None:
        backs = {}
        if self.back_embeddings is not None:
            backs["back_embeddings"] = self.back_embeddings.astype(np.float16)
        np.savez_compressed(
            folder / "references.npz",
            embeddings=self.embeddings.astype(np.float16),
            class_ids=self.class_ids,
            **backs,
        )
        meta = {
            "format": DECK_FORMAT,
            "name": self.name,
            "definition": self.definition,
            "cards": self.codes,
            "views_per_card": int(len(self.class_ids) // max(1, len(self.codes))),
            "source": self.source,
            "seconds": round(self.seconds, 2),
            "accept_similarity": round(float(self.accept_similarity), 4),
            "descriptor": self.descriptor,
            "classifier_agreement": round(float(self.agreement), 4),
            "classifier_sureness": round(float(self.sureness), 4),
            "back": self.back_embeddings is not None,
        }
        (folder / "deck.json").write_text(json.dumps(meta, indent=2) + "\n")
        for path in folder.iterdir():  # on disk before the swap makes them the deck
            with open(path, "rb") as written:
                os.fsync(written.fileno())

    @classmethod
    def load(cls, name: str, decks_dir: str | Path | None = None) -> UserDeck:
        decks_dir = Path(decks_dir) if decks_dir else default_decks_dir()
        folder = decks_dir / name
        if NAME_RE.fullmatch(name) and not _is_file(folder / "deck.json") and _is_dir(decks_dir):
            with contextlib.suppress(OSError):
                _restore_replaced(decks_dir)  # a replacement cut short puts the old deck back
        if not NAME_RE.fullmatch(name) or not _is_file(folder / "deck.json"):
            known = ", ".join(list_decks(decks_dir)) or "none yet"
            shown = name if len(name) <= 40 else f"{name[:30]}..."
            raise DeckError(
                f"No deck {shown!r} in {decks_dir} (added: {known}); add it with "
                "'companion deck add NAME DIR'."
            )
        try:
            meta = json.loads((folder / "deck.json").read_text(encoding="utf-8"))
            if not isinstance(meta, dict):
                raise ValueError("deck.json is not a JSON object")
            if meta.get("descriptor", "embedding") not in DESCRIPTORS:
                raise ValueError(f"its descriptor is not one of {', '.join(DESCRIPTORS)}")
            with np.load(folder / "references.npz", allow_pickle=False) as refs:
                embeddings = refs["embeddings"].astype(np.float32)
                class_ids = refs["class_ids"].astype(np.int64)
                backs = None
                if "back_embeddings" in refs.files:
                    backs = refs["back_embeddings"].astype(np.float32)
            deck = cls(
                str(meta["name"]),
                str(meta.get("definition", "standard")),
                embeddings,
                class_ids,
                str(meta.get("source", "")),
                float(meta.get("seconds", 0.0)),
                float(meta.get("accept_similarity", 0.0)),
                str(folder),
                meta.get("descriptor", "embedding"),
                float(meta.get("classifier_agreement", 1.0)),
                float(meta.get("classifier_sureness", 1.0)),
                backs,
            )
            deck._check()
            return deck
        except (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise DeckError(
                Message("deck.unreadable", name=repr(name), folder=decks_dir, reason=reason)
            ) from None

    def _check(self) -> None:
        """ValueError unless the references make sense: one row of features per crop, each
        with the class id of a card (a damaged file would fail later, mid-detection)."""
        emb, ids = self.embeddings, self.class_ids
        if emb.ndim != 2 or ids.ndim != 1 or len(emb) != len(ids) or not len(ids):
            raise ValueError("its references do not pair a crop's features with a card")
        if ids.min() < 0 or ids.max() >= len(CLASSES) or not np.isfinite(emb).all():
            raise ValueError("its references name no card of the 48, or hold no numbers")
        backs = self.back_embeddings
        if backs is not None and (
            backs.ndim != 2 or not len(backs) or backs.shape[1] != emb.shape[1]
            or not np.isfinite(backs).all()
        ):  # fmt: skip
            raise ValueError("its back's references are not crops' features like its cards'")


# A deck being written is ``.NAME.new-...`` beside the decks; the deck it replaces is moved
# to ``.NAME.old-...`` for the instant of the swap. Neither is a deck name (NAME_RE).
STAGING_MARK = ".new-"
REPLACED_MARK = ".old-"


def _swap_in(staging: Path, folder: Path) -> None:
    """Make the written folder ``staging`` the deck ``folder``: the old deck is renamed away,
    the new one renamed in, the old one removed. Killed between the two renames, the old deck
    is put back where it was by ``_restore_replaced`` the next time the decks are listed."""
    replaced = None
    if folder.exists():
        token = staging.name.split(STAGING_MARK)[-1]
        replaced = folder.with_name(f".{folder.name}{REPLACED_MARK}{token}")
        os.rename(folder, replaced)
    try:
        os.rename(staging, folder)
    except OSError:
        if replaced is not None:
            os.rename(replaced, folder)
        raise
    _sync_folder(folder.parent)
    if replaced is not None:
        shutil.rmtree(replaced, ignore_errors=True)


def _sync_folder(folder: Path) -> None:
    """The renames in ``folder`` on disk (a power cut keeps one deck or the other)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def _restore_replaced(decks_dir: Path) -> None:
    """Put back a deck left renamed away by a replacement cut short between its two renames,
    and remove what a cut-short write left (never a deck)."""
    for path in decks_dir.iterdir():
        name = path.name
        if name.startswith(".") and REPLACED_MARK in name:
            deck = decks_dir / name[1:].split(REPLACED_MARK)[0]
            if NAME_RE.fullmatch(deck.name) and not deck.exists():
                with contextlib.suppress(OSError):
                    os.rename(path, deck)
                    continue
            shutil.rmtree(path, ignore_errors=True)
        elif name.startswith(".") and STAGING_MARK in name:
            with contextlib.suppress(OSError):
                if time.time() - path.stat().st_mtime > STALE_STAGING_SECONDS:
                    shutil.rmtree(path, ignore_errors=True)


STALE_STAGING_SECONDS = 3600  # a deck being written for longer than this was cut short


def list_decks(decks_dir: str | Path | None = None) -> list[str]:
    decks_dir = Path(decks_dir) if decks_dir else default_decks_dir()
    if not _is_dir(decks_dir):
        return []
    try:
        _restore_replaced(decks_dir)
        return sorted(
            p.name
            for p in decks_dir.iterdir()
            if NAME_RE.fullmatch(p.name) and _is_file(p / "deck.json")
        )
    except OSError as exc:
        raise DeckError(
            Message("deck.folder_unreadable", folder=decks_dir, reason=exc.strerror)
        ) from None


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False for a path the system refuses (a name too long)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def remove_deck(name: str, decks_dir: str | Path | None = None) -> Path:
    """Delete deck ``name`` (its references and names); DeckError where there is none."""
    decks_dir = Path(decks_dir) if decks_dir else default_decks_dir()
    folder = decks_dir / name
    if not NAME_RE.fullmatch(name) or not _is_file(folder / "deck.json"):
        known = ", ".join(list_decks(decks_dir)) or "none yet"
        shown = name if len(name) <= 40 else f"{name[:30]}..."
        raise DeckError(f"No deck {shown!r} in {decks_dir} to remove (added: {known}).")
    try:
        shutil.rmtree(folder)
    except OSError as exc:  # a read-only folder, a disk gone
        raise DeckError(
            f"Cannot remove the deck {name!r} from {decks_dir}: {exc.strerror}."
        ) from None
    return folder


BACK_STEM = "back"  # the deck's back among its scans or photos: back.png, back.jpg...


def back_image(folder: str | Path) -> Path | None:
    """The picture of the deck's back in a folder of scans or photos (``back.png``, ``back.jpg``
    ...), or None."""
    try:
        for path in sorted(Path(folder).iterdir()):
            if path.stem.lower() == BACK_STEM and path.suffix.lower() in IMAGE_SUFFIXES:
                return path
    except OSError:
        return None
    return None


def back_references(
    session, settings: Settings, rng, face: np.ndarray, descriptor: str, extra=None
) -> np.ndarray:
    """Descriptors of the deck's back as the detector would crop it from a table: ``VIEWS``
    views of its straightened picture each way up (``card_views``), and ``extra`` crops (cut
    from its photo) beside them."""
    crops = card_views(face, settings, rng, VIEWS)
    if extra is not None and len(extra):
        crops = np.concatenate([crops, extra])
    return describe(session, crops, descriptor).astype(np.float32)


# A back whose crops lie nearer one of the deck's faces than this, less than its own crops lie
# to each other (median over its crops), is that face photographed the wrong way up. Renders
# of the procedural deck: its back -0.15 and -0.16; four of its faces given as the back -0.05
# to +0.03. Lower: a back much like a face refused; higher: a face taken for the back
BACK_IS_A_FACE_MARGIN = -0.09


def check_back(back: np.ndarray, embeddings: np.ndarray, class_ids: np.ndarray, what: str):
    """DeckError (one sentence) when the back's references (``back``) look like one of the
    deck's faces more than like each other: then no face-up card could be told from it."""
    to_faces = back @ embeddings.T
    own = back @ back.T
    np.fill_diagonal(own, -1.0)
    margin = to_faces.max(axis=1) - own.max(axis=1)
    if float(np.median(margin)) > BACK_IS_A_FACE_MARGIN:
        nearest = np.bincount(class_ids[to_faces.argmax(axis=1)]).argmax()
        raise DeckError(Message("photo.back_is_a_face", name=what, code=CardCode(CLASSES[nearest])))


def check_deck_name(name: str) -> None:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):  # "$" would let "x\n" in
        raise DeckError(
            f"A deck name is lower-case letters, digits, '-' or '_' (up to 40), not {name!r}."
        )


def add_deck(
    name: str,
    image_dir: str | Path,
    decks_dir: str | Path | None = None,
    definition: str = "standard",
    settings: Settings | None = None,
    views: int = VIEWS,
    seed: int = 0,
    names_file: str | Path | None = None,
    back_photo: str | Path | None = None,
) -> UserDeck:
    """Make and store deck ``name`` from ``image_dir`` (one ``MM-K`` image per card; the cards
    it lacks keep the classifier's names; ``back.png`` there: the deck's back, scanned).
    ``definition``: the deck definition naming its slots (checked here); ``names_file``: the
    deck's own names instead (a deck file, checked here and kept with the deck);
    ``back_photo``: a photo of one card lying face down (``photos.read_back_photo``), the
    deck's back. Returns the stored deck."""
    from companion.game.cards import Deck

    check_deck_name(name)
    Deck.load(names_file if names_file is not None else definition)  # a clear error first
    start = time.perf_counter()
    files = deck_images(image_dir)
    back = _read_back(back_photo, image_dir)  # a bad back: its sentence before any work
    decks_dir = decks_dir or default_decks_dir()
    _make_folder(Path(decks_dir), name)  # and for a place it cannot be kept
    settings = settings or Settings.from_dict(model_settings())
    session = open_session(EMBEDDER, 2)
    rng = np.random.default_rng(seed)
    crops, ids, faces = [], [], {}
    for code, path in files.items():
        faces[code] = _face(path)
        made = card_views(faces[code], settings, rng, views)
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
        source=image_dir,
        start=start,
        faces=faces,
    )


def store_deck(
    name: str,
    crops: list[np.ndarray],
    ids: list[int],
    session,
    settings: Settings,
    rng: np.random.Generator,
    *,
    back,
    definition: str,
    names_file,
    decks_dir,
    source,
    start: float,
    faces: dict[str, np.ndarray] | None = None,
) -> UserDeck:
    """Deck ``name`` made from its cards' crops (``ids``: each crop's class), whether they came
    from scans or from photos: the classifier's view of them, their descriptors, the back's
    references (refused when the back looks like one of the faces), the names file kept with
    the deck, the points of its straightened ``faces`` (by code; ``keypoints.DeckKeypoints``;
    None: found again in ``source``); stored in ``decks_dir`` and returned."""
    crops = np.concatenate(crops)
    ids = np.array(ids, np.int64)
    agreement, sureness = classifier_view(crops, ids)
    # a partial deck renames only crops as near its references as they lie to each other
    # (accept_similarity): the embedding alone keeps that bar where it was measured
    descriptor = "embedding"
    if len(set(ids.tolist())) == len(ALL_CODES):
        descriptor = full_deck_descriptor(sureness)
    embeddings = describe(session, crops, descriptor).astype(np.float32)
    back_embeddings = None
    if back is not None:
        back_embeddings = back_references(
            session, settings, rng, back.face, descriptor, back.crops(settings, rng)
        )
        check_back(back_embeddings, embeddings, ids, back.name)
    decks_dir = Path(decks_dir) if decks_dir else default_decks_dir()
    if names_file is not None:
        definition = NAMES_FILE  # the file itself is kept with the deck by ``save``
    deck = UserDeck(
        name,
        str(definition),
        embeddings,
        ids,
        str(Path(source).resolve()),
        time.perf_counter() - start,
        own_card_similarity(embeddings, ids),
        descriptor=descriptor,
        agreement=agreement,
        sureness=sureness,
        back_embeddings=back_embeddings,
    )
    from companion.recognizer import design_references
    from companion.recognizer.keypoints import DeckKeypoints
    from companion.recognizer.strips import StripFaces, face_size

    faces = faces if faces is not None else source_faces(source)
    design = None
    if design_references.wanted(deck):
        session = design_references.design_session()
        design = design_references.DesignReferences.of_crops(session, crops, ids)

    def write_keypoints(folder: Path) -> None:  # taught again from no face: no former points
        if faces:
            DeckKeypoints.from_faces(faces).save(folder)
        if design is not None:
            design.save(folder)
            if faces:
                StripFaces.of_faces(faces, face_size(settings)).save(folder)

    deck.save(decks_dir, names_file, also=write_keypoints)
    return deck


def source_faces(source: str | Path) -> dict[str, np.ndarray]:
    """The straightened faces (by code) of the scans or the twelve photos a deck was taught
    from, found again there; empty where that folder is gone or holds neither."""
    folder = Path(source)
    if not source or not _is_dir(folder):
        return {}
    try:
        return {code: _face(path) for code, path in deck_images(folder).items()}
    except DeckError:
        pass
    from companion.recognizer.photos import read_photos

    try:
        photos = read_photos(folder)
    except DeckError:
        return {}
    return {
        f"{photo.month:02d}-{k + 1}": face
        for photo in photos
        if not photo.problem
        for k, face in enumerate(photo.faces)
    }


def kept_or_made(deck: UserDeck, load, make):
    """What a taught deck keeps beside its references: ``load(folder)``'s (None: not there, or
    made otherwise), else ``make(faces)`` from the faces it was taught from (``source_faces``;
    a deck taught before it was kept), kept for next time; None where those faces are gone
    too. Whatever is made has a ``save(folder)``."""
    if deck.folder:
        kept = load(deck.folder)
        if kept is not None:
            return kept
    faces = source_faces(deck.source)
    if not faces:
        return None
    made = make(faces)
    if deck.folder:
        try:
            made.save(deck.folder)
        except OSError:
            pass  # a read-only folder: made again next time
    return made


def deck_keypoints(deck: UserDeck):
    """The points of a taught deck's faces (``keypoints.DeckKeypoints``, ``kept_or_made``);
    None for a deck with no folder or no faces left (it is then named as before, by its
    references alone)."""
    from companion.recognizer.keypoints import DeckKeypoints

    if not deck.folder:
        return None
    return kept_or_made(deck, DeckKeypoints.load, DeckKeypoints.from_faces)


def _read_back(back_photo, image_dir):
    """The deck's back: the photo given (``photos.BackPicture``), else a ``back.png`` among
    the scans, else None."""
    from companion.recognizer.photos import BackPicture, read_back_photo

    if back_photo is not None:
        return read_back_photo(back_photo)
    scan = back_image(image_dir)
    return None if scan is None else BackPicture(scan.name, _face(scan))


def _make_folder(folder: Path, name: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise DeckError(
            Message("deck.cannot_keep", name=repr(name), folder=folder, reason=reason)
        ) from None


def own_card_similarity(embeddings: np.ndarray, class_ids: np.ndarray, share: float = 0.02):
    """How similar a crop of a card is to the nearest other crop of the same card, at worst
    but for ``share`` of the crops: the bar a crop must pass to be named by a partial deck."""
    sims = embeddings @ embeddings.T
    np.fill_diagonal(sims, -1.0)
    same = class_ids[:, None] == class_ids[None]
    nearest = np.where(same, sims, -1.0).max(axis=1)
    return float(np.quantile(nearest, share))


def model_settings() -> dict:
    from companion.recognizer.nets import DEFAULT_MODEL

    return json.loads(DEFAULT_MODEL.read_text()).get("settings", {})


# A detection is the deck's own back when its crop lies nearer the back's references than any
# card's by more than this (cosine similarity). Renders (30 tables each of a procedural and a
# recoloured deck taught from photos, seed 8): face-up cards' margins reach -0.03 and +0.01,
# face-down cards' medians +0.09; higher: fewer face-up cards called back, more backs named
# as cards
BACK_MARGIN = 0.03


def verifier_for(deck: UserDeck):
    """The ``keypoints.Verifier`` of a deck (None where its points cannot be had)."""
    from companion.recognizer.keypoints import Verifier

    kept = deck_keypoints(deck)
    return None if kept is None or len(kept.class_ids) == 0 else Verifier(kept)


class _ByCard:
    """References (unit-length rows) grouped by card, and where each card's group starts: a
    crop's nearest reference of each card is then one reduction (np.maximum.at is ten times
    slower). ``cards``: the columns of ``card_ids`` the references hold."""

    def __init__(self, embeddings: np.ndarray, class_ids: np.ndarray, card_ids: np.ndarray):
        column = np.searchsorted(card_ids, class_ids)
        order = np.argsort(column, kind="stable")
        self.embeddings = embeddings[order]
        self.starts = np.flatnonzero(np.diff(column[order], prepend=-1))
        self.cards = np.unique(column)

    def nearest(self, feats: np.ndarray) -> np.ndarray:
        """Each crop's similarity to each of ``cards``' nearest reference: (crops, cards)."""
        return np.maximum.reduceat(feats @ self.embeddings.T, self.starts, axis=1)


class DeckNamer:
    """The stage that names detections after a user deck: ``namer(bgr, det) -> Detections``.
    Each face-up detection's crop (cut upright by its quad) is embedded; a card's score is the
    classifier's log-probability (its confidence and alternatives) plus ``SIMILARITY_WEIGHT``
    times the crop's nearest similarity to that card's references; the best card names it, its
    confidence the scores' softmax. Cards the deck has no image of keep the classifier's name.
    Backs: a deck taught its own back calls ``back`` what lies near that back and nothing else
    (``_with_own_back``); without one, the classifier's backs stay backs (but for the plain-
    middle test of a design of its own)."""

    def __init__(self, deck: UserDeck, settings: Settings, embedder=None):
        self.deck = deck
        self.settings = settings
        self.session = embedder or open_session(EMBEDDER, 2)
        size = self.session.get_outputs()[0].shape[-1]
        if isinstance(size, int) and deck.descriptor != "embedding":
            size += PIXELS_SIZE[0] * PIXELS_SIZE[1] * 3  # the small picture beside it
        if isinstance(size, int) and deck.embeddings.shape[1] != size:
            raise DeckError(
                f"The deck {deck.name!r} was made by another recognizer ({deck.embeddings.shape[1]} "
                f"features a crop, not {size}): add it again with 'companion deck add'."
            )
        self.card_ids = np.array(sorted(set(deck.class_ids.tolist())), np.int64)
        self._references = _ByCard(deck.embeddings, deck.class_ids, self.card_ids)
        # the names the players' deck gives its slots (the tablet and detect show them)
        self.names = deck.names_deck()
        # the deck's cards found by their own points (None: no faces to take them from)
        self.verifier = verifier_for(deck)
        # a design of its own is named by the design embedder's references too
        self.design, self.design_session = None, None
        from companion.recognizer import design_references

        if design_references.wanted(deck):
            self.design_session = design_references.design_session()
            self.design = design_references.for_deck(deck, self.design_session, settings)
        if self.design is not None:
            known = np.isin(self.design.class_ids, self.card_ids)
            # the cards it has references of (made again from photos, one may be unreadable
            # now): the others are named by the first references alone
            self._design_refs = _ByCard(
                self.design.embeddings[known], self.design.class_ids[known], self.card_ids
            )
            if len(self._design_refs.cards) == 0:
                self.design = None
        # the strip a card of a fanned row shows, named by the same strip of the deck's faces
        self.strips = None
        if self.design is not None:
            from companion.recognizer import strips

            faces = strips.for_deck(deck, settings)
            if faces is not None:
                self.strips = strips.StripNamer(
                    faces, self.card_ids, self.design_session, settings
                ).made(deck.folder)
                if len(self.strips.cards) == 0:
                    self.strips = None

    def similarity(self, crops: np.ndarray) -> np.ndarray:
        """How near each crop (N, H, W, 3, cut as the detector cuts a card) lies to the deck's
        nearest reference of any card, or of its back where it was shown one (cosine
        similarity of the descriptors)."""
        if len(crops) == 0:
            return np.zeros(0, np.float32)
        feats = describe(self.session, crops, self.deck.descriptor)
        nearest = (feats @ self.deck.embeddings.T).max(axis=1)
        if self.deck.back_embeddings is not None:
            nearest = np.maximum(nearest, (feats @ self.deck.back_embeddings.T).max(axis=1))
        return nearest

    def design_similarity(self, crops: np.ndarray) -> np.ndarray | None:
        """How near each crop lies to the deck's nearest design reference of any card (cosine
        similarity of the design embedder's features); None for a deck named without them. The
        design embedder learned to keep crops of no single card (the table, two cards at once,
        a box half off its card) away from every card's references."""
        if self.design is None:
            return None
        if len(crops) == 0:
            return np.zeros(0, np.float32)
        return self._design_refs.nearest(embed(self.design_session, crops)).max(axis=1)

    def _crops(self, bgr: np.ndarray, det: Detections, rows: np.ndarray) -> np.ndarray:
        matrices = crop_matrices(quads_to_rboxes(det.quads[rows]), self.settings)
        return crop_cards(bgr, matrices, self.settings)

    def _nearest_by_card(self, feats: np.ndarray) -> np.ndarray:
        """Each crop's similarity to each card's nearest reference: (crops, cards)."""
        return self._references.nearest(feats)

    def _named_by_design(
        self,
        crops: np.ndarray,
        best: np.ndarray,
        bgr: np.ndarray | None = None,
        quads: np.ndarray | None = None,
        rows: np.ndarray | None = None,
    ) -> np.ndarray:
        """``best`` (crops, cards) blended with the crops' nearest design references of each
        card (``design_references.DESIGN_WEIGHT``), still in similarity units; as it was
        where the deck has none. A crop of the detections ``rows`` that another of the
        frame's outlines (``quads``, all of them) overlaps is blended again with the strip it
        shows (``strips``, ``STRIP_WEIGHT``), where its best card leads the next by less than
        ``strips.UNSURE_LEAD``."""
        if self.design is None or len(crops) == 0:
            return best
        from companion.recognizer.design_references import DESIGN_WEIGHT

        design = best.copy()
        design[:, self._design_refs.cards] = self._design_refs.nearest(
            embed(self.design_session, crops)
        )
        named = (best + DESIGN_WEIGHT * design) / (1.0 + DESIGN_WEIGHT)
        if self.strips is None or rows is None or len(quads) < 2 or named.shape[1] < 2:
            return named
        from companion.recognizer.strips import STRIP_WEIGHT, UNSURE_LEAD

        ranked = np.sort(named, axis=1)
        unsure = np.flatnonzero(ranked[:, -1] - ranked[:, -2] < UNSURE_LEAD)
        if len(unsure) == 0:
            return named
        sims, had = self.strips.similarity(bgr, quads, np.asarray(rows)[unsure])
        if not had.any():
            return named
        at = unsure[had]
        strip = named[at].copy()
        strip[:, self.strips.cards] = sims[had]
        named[at] = (named[at] + STRIP_WEIGHT * strip) / (1.0 + STRIP_WEIGHT)
        return named

    def __call__(self, bgr: np.ndarray, det: Detections) -> Detections:
        if self.deck.back_embeddings is not None:
            return self._with_own_back(bgr, det)
        faces = det.class_ids != BACK_ID
        if self.deck.sureness < RESCUE_BELOW and (~faces).any():
            # the classifier learned backs as plain card-shaped patches: a deck of its own with
            # flat grounds looks like them. A back is plain; a face shows its art
            backs = np.flatnonzero(~faces)
            matrices = crop_matrices(quads_to_rboxes(det.quads[backs]), self.settings)
            faces[backs[~plain(crop_cards(bgr, matrices, self.settings))]] = True
        faces = np.flatnonzero(faces)
        if len(faces) == 0:
            return det
        crops = self._crops(bgr, det, faces)
        best = self._nearest_by_card(describe(self.session, crops, self.deck.descriptor))
        return self._named(det, faces, self._named_by_design(crops, best, bgr, det.quads, faces))

    def _with_own_back(self, bgr: np.ndarray, det: Detections) -> Detections:
        """Naming by a deck that was shown its back: every detection, whatever the classifier
        called it, is the deck's back when its crop lies nearer the back's references than
        any card's (by ``BACK_MARGIN``: ``back`` then means this deck's back and nothing
        else), else named as a
        face. A detection the classifier called ``back`` that is neither near the back nor,
        for a partial deck, near a card it has images of, takes the classifier's likeliest card."""
        if len(det) == 0:
            return det
        rows = np.arange(len(det))
        crops = self._crops(bgr, det, rows)
        feats = describe(self.session, crops, self.deck.descriptor)
        best = self._nearest_by_card(feats)
        to_back = (feats @ self.deck.back_embeddings.T).max(axis=1)
        is_back = to_back > best.max(axis=1) + BACK_MARGIN
        class_ids, confidence = det.class_ids.copy(), det.confidence.copy()
        alt_ids, alt_scores = det.alt_ids.copy(), det.alt_scores.copy()
        # how sure: the back's similarity against the nearest card's, sharpened as names are
        sure = 1.0 / (1.0 + np.exp(-CONFIDENCE_SHARPNESS * (to_back - best.max(axis=1))))
        class_ids[is_back] = BACK_ID
        confidence[is_back] = sure[is_back]
        was_back = np.flatnonzero(~is_back & (det.class_ids == BACK_ID))
        for i in was_back:  # the classifier's likeliest card, until the deck names it
            cards = [a for a in det.alt_ids[i] if a != BACK_ID] if det.alt_ids.ndim == 2 else []
            class_ids[i] = cards[0] if cards else self.card_ids[int(best[i].argmax())]
            confidence[i] = 1.0 - sure[i]
        det = Detections(det.quads, class_ids, confidence, alt_ids, alt_scores)
        faces = np.flatnonzero(~is_back)
        if len(faces) == 0:
            return det
        named = self._named_by_design(crops[faces], best[faces], bgr, det.quads, faces)
        return self._named(det, faces, named)

    def _named(self, det: Detections, faces: np.ndarray, best: np.ndarray) -> Detections:
        """``det`` with the detections ``faces`` named after the deck's cards (``best``: their
        crops' similarity to each card's nearest reference)."""
        # the classifier's belief on the same cards, from its confidence and alternatives
        prior = np.full((len(faces), len(self.card_ids)), np.log(1e-3), np.float32)
        column = {int(c): k for k, c in enumerate(self.card_ids)}
        for row, i in enumerate(faces):
            ids = [det.class_ids[i], *det.alt_ids[i]]
            probs = [det.confidence[i], *det.alt_scores[i]]
            for cid, p in zip(ids, probs, strict=False):
                if int(cid) in column:
                    prior[row, column[int(cid)]] = np.log(max(float(p), 1e-3))
        score = self.deck.agreement * prior + SIMILARITY_WEIGHT * best
        if len(self.card_ids) < len(ALL_CODES):
            # a deck with images of some cards only: a crop that lies near none of them is one
            # of the others, and keeps the classifier's name
            near = best.max(axis=1) >= self.deck.accept_similarity
            faces, score, best = faces[near], score[near], best[near]
            if len(faces) == 0:
                return det
        order = np.argsort(-score, axis=1)
        # how sure: the similarities alone, sharpened (the score's weight would say 1.00 always)
        soft = CONFIDENCE_SHARPNESS * best
        soft = np.exp(soft - soft.max(axis=1, keepdims=True))
        soft /= soft.sum(axis=1, keepdims=True)
        class_ids, confidence = det.class_ids.copy(), det.confidence.copy()
        k = det.alt_ids.shape[1]
        alt_ids, alt_scores = det.alt_ids.copy(), det.alt_scores.copy()
        rows = np.arange(len(faces))
        class_ids[faces] = self.card_ids[order[:, 0]]
        confidence[faces] = soft[rows, order[:, 0]]
        if k:
            alt_ids[faces] = self.card_ids[order[:, 1 : k + 1]]
            alt_scores[faces] = np.take_along_axis(soft, order[:, 1 : k + 1], axis=1)
        return Detections(det.quads, class_ids, confidence, alt_ids, alt_scores)


RESCUE_BELOW = 0.6  # a deck whose references the classifier names less sure than this is rescued
# a candidate the classifier finds less likely "not a card" than this may be a card (the
# decoder's own bar, ``acceptance.max_none``: lower loses cards of fanned rows, higher adds
# crops of the table and of two cards at once)...
RESCUE_MAX_NONE = 0.5
# ... where its long side is this near the found cards' median (a table seen 45 degrees from
# above shows its near cards up to 1.5 times as long as its far ones; wider lets in crops of
# a card box or of two cards at once)
RESCUE_SIZE = (0.55, 1.6)
# ... and its long over short side this near a card's (1.64 seen straight on; a table seen
# 45 degrees from above shortens one side by up to 0.7)
RESCUE_ASPECT = (1.1, 2.4)
# ... overlapping every card found by less than this: the cards of a fanned capture row
# overlap their neighbours by up to about 0.4 (the rescued cards among themselves: 0.3)
RESCUE_NEW_IOU = 0.4
RESCUE_APART_IOU = 0.3
# ... and lying at least this near one of the deck's references (cosine similarity of the
# descriptors), or as near as the deck's crops of one card lie to each other where that is
# more (``UserDeck.accept_similarity``, 0.63 for decks taught from photos): crops of the table,
# of two cards at once or of a hidden card's sliver lie at 0.5-0.6
RESCUE_MIN_SIMILARITY = 0.6
# ... or, for a deck named by design references too (``design_references``), lying at least
# this near one of them, whatever the classifier's "none" says: on the candidates of tables of
# made-up decks (tuning scenes) the design features tell a card from the table, from two cards
# at once and from a loose box better than the classifier's features and "none" together
RESCUE_MIN_DESIGN_SIMILARITY = 0.7
# ... and its outline on the frame's edges: at least two of its sides run along an edge for
# this share of their length (``rectangles.side_support``). Crops of a hand, a shadow or the
# table that the deck's flat grounds resemble have none; a card covered in a fanned row still
# shows its cut edge on two or three sides
RESCUE_MIN_SIDE_SUPPORT = 0.3


def rescue_cards(
    image: np.ndarray,
    det: Detections,
    quads: np.ndarray,
    classifier,
    namer: DeckNamer,
    settings: Settings,
) -> Detections:
    """``det`` and the cards among candidate ``quads`` (N,4,2) that the classifier found only
    unsure: for a deck of a design of its own (``UserDeck.sureness`` under
    ``RESCUE_BELOW``) the classifier outlines its cards and knows they are cards (its "none"
    stays low) but names none of them surely, so the decoder drops them. A candidate that is
    card-shaped, of the found cards' size, apart from them and not "none" becomes a card,
    named by the deck (``namer``), where its crop also lies as near one of the deck's own
    references as the deck's crops of one card lie to each other (``DeckNamer.similarity``
    against ``UserDeck.accept_similarity``), or near one of its design references
    (``DeckNamer.design_similarity``, whatever "none" says): the taught deck, not the
    classifier, says that a crop shows one whole card, and where two of its sides run along edges of the picture
    (``rectangles.side_support``): a card's cut edge, not a hand or the table. Candidates: every crop the decode looked at
    (``DecodeTrace.looks``) and the rectangles found by shape (``rectangles.find_cards``)."""
    from companion.detections import iou_matrix
    from companion.recognizer.distance import long_sides
    from companion.recognizer.geometry import spaced
    from companion.recognizer.nets import net_input
    from companion.recognizer.settings import NONE_ID

    quads = np.asarray(quads, np.float32).reshape(-1, 4, 2)
    if len(quads) == 0:
        return det
    rboxes = quads_to_rboxes(quads)
    long, short = np.maximum(rboxes[:, 2], rboxes[:, 3]), np.minimum(rboxes[:, 2], rboxes[:, 3])
    aspect = long / np.maximum(short, 1e-3)
    keep = (aspect >= RESCUE_ASPECT[0]) & (aspect <= RESCUE_ASPECT[1]) & (short > 4)
    faces = det.class_ids != BACK_ID
    if faces.sum() >= 3:
        median = float(np.median(long_sides(det.quads[faces])))
        keep &= (long >= RESCUE_SIZE[0] * median) & (long <= RESCUE_SIZE[1] * median)
    if len(det):
        keep &= iou_matrix(quads, det.quads).max(axis=1) < RESCUE_NEW_IOU
    quads, rboxes = quads[keep], rboxes[keep]
    if len(quads) == 0:
        return det
    crops = crop_cards(image, crop_matrices(rboxes, settings), settings)
    probs = classifier.run(None, {"crop": net_input(classifier, crops)})[0]
    # the deck's own references say which crops show one of its cards, whole and centred
    known = probs[:, NONE_ID] < RESCUE_MAX_NONE
    nearest = np.zeros(len(crops), np.float32)
    if known.any():
        nearest[known] = namer.similarity(crops[known])
    known &= nearest >= max(RESCUE_MIN_SIMILARITY, namer.deck.accept_similarity)
    design = namer.design_similarity(crops)
    if design is not None:
        known |= design >= RESCUE_MIN_DESIGN_SIMILARITY
        nearest = np.maximum(nearest, design)
    if known.any():
        from companion.recognizer.rectangles import side_support

        sides = np.sort(side_support(image, quads[known]), axis=1)
        known[known] = sides[:, -2] >= RESCUE_MIN_SIDE_SUPPORT
    quads, rboxes, nearest = quads[known], rboxes[known], nearest[known]
    if len(quads) == 0:
        return det
    order = np.argsort(-nearest, kind="stable")
    quads, rboxes, nearest = quads[order], rboxes[order], nearest[order]
    chosen = spaced(np.column_stack([rboxes[:, :4], nearest]), 0.5)
    quads = quads[chosen]
    # one rescued card per place, none on another rescued card
    if len(quads) > 1:
        ious = iou_matrix(quads, quads)
        alone = np.ones(len(quads), bool)
        for i in range(len(quads)):
            if alone[i]:
                alone[i + 1 :] &= ious[i, i + 1 :] < RESCUE_APART_IOU
        quads = quads[alone]
    k = det.alt_ids.shape[1] if det.alt_ids.ndim == 2 else 0
    found = Detections(
        quads,
        np.full(len(quads), namer.card_ids[0], np.int64),
        np.full(len(quads), 0.5, np.float32),
        np.zeros((len(quads), k), np.int64),
        np.zeros((len(quads), k), np.float32),
    )
    if len(det) == 0:
        return found
    return Detections(
        *(np.concatenate([getattr(det, f), getattr(found, f)]) for f in DETECTION_FIELDS)
    )


DETECTION_FIELDS = ("quads", "class_ids", "confidence", "alt_ids", "alt_scores")

"""Teaching a deck on the tablet: twelve photos from the tablet's camera or files, each checked
as it arrives (its four cards outlined and named, or the one sentence saying what to fix),
then the deck kept as ``companion deck add NAME --photos DIR`` keeps it (``deck list``,
``detect --deck NAME`` and ``run --deck NAME`` find it by name).

    GET  /decks/teach                    the page: the taught decks, the twelve months' photos
    POST /decks/teach/photo              month=1..12 or back, photo=<file>: keep that month's
                                         photo (or the deck's back: one card face down, optional)
                                         and check it; answers its place (fragment; 303 to the
                                         page without htmx). A file that is not a JPEG or PNG photo,
                                         or of more than PHOTO_MAX_PIXELS, is 4xx with one
                                         sentence and keeps nothing
    GET  /decks/teach/photo/<slot>.jpg   that month's (or the back's) photo, shrunk for the page
    POST /decks/teach/outline            month=1..12, quads=<four cards' corners, x,y from 0 to 1
                                         of the photo, "x,y x,y x,y x,y" a card, ";" between>:
                                         the player's outlines of a photo the finder was unsure
                                         of, checked and then used to teach that month
    POST /decks/teach/centres            month=1..12, centres=<the middle of each of the four
                                         cards, "x,y" from 0 to 1 of the photo, ";" between>:
                                         the cards looked for around the points tapped (four
                                         outlines shown to be dragged where their edges are
                                         not clear)
    POST /decks/teach/back/remove        teach the deck without the back's photo
    POST /decks/teach/names              names=<deck file (TOML)>: the deck's own names, checked
                                         like a rule file (one sentence); forget=1 drops them
    POST /decks/teach/reset              forget the photos and names sent so far
    POST /decks/teach/save               name=NAME: teach the deck from the twelve photos and
                                         keep it; 4xx with one sentence (nothing kept) while a
                                         month is missing or needs another take, or the name
                                         is taken or not a deck name
    POST /decks/<name>/remove            delete a taught deck

The photos sent so far wait in a folder of their own per browser (``pending_root``: beside
the decks, ``teaching/<token>``, the token in the signed session cookie), removed once the
deck is kept, on reset, and when left for ``PENDING_HOURS``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import threading
import time
from pathlib import Path

from flask import (
    Blueprint,
    current_app,
    render_template,
    request,
    send_file,
    session,
    url_for,
)
from flask_babel import gettext as _

from companion import CompanionError
from companion.game.cards import STANDARD_DECK, Deck
from companion.web.auth import can_change
from companion.web.errors import WebError
from companion.web.i18n import card_name, language, say
from companion.web.pages import go_to, is_htmx

bp = Blueprint("teach", __name__, url_prefix="/decks")

MONTHS = range(1, 13)
BACK = "back"  # the place of the deck's back among the months' (its photo: ``back.jpg``)
# A photo's pixels, at most: a 50-megapixel phone's photo passes; a file declaring more (a
# decompression bomb: a few KB of PNG that decodes to gigabytes) is refused before decoding.
PHOTO_MAX_PIXELS = 52_000_000
# The long side a photo is kept at: the size teaching reads it at (``photos._read_image``):
# the cards' references are cut at 256 px a card, which a card on a photo of this size
# already gives; larger photos only cost memory, time and disk.
KEPT_LONG_SIDE = 2000
PREVIEW_LONG_SIDE = 720  # the photo as the page shows it
PENDING_HOURS = 6  # photos sent but never taught are removed after this long
MAX_PENDING = 8  # teachings kept at once (browsers); the oldest beyond go
TOKEN_RE = re.compile(r"^[0-9a-f]{32}$")
NAMES_FILE = "names.toml"
# Checking a photo decodes it and looks for its cards (some 100 MB at KEPT_LONG_SIDE): one at
# a time, so that twelve photos sent from each of five tablets at once cost one's memory
_checking = threading.BoundedSemaphore(1)
_teaching = threading.Lock()  # one deck taught at a time: it takes the machine's cores


# ---------------------------------------------------------------------------------------------
# Where things are kept
# ---------------------------------------------------------------------------------------------


def decks_dir() -> Path:
    """Where taught decks are kept: the app's ``DECKS_DIR``, else the CLI's default."""
    from companion.recognizer.decks import default_decks_dir

    configured = current_app.config.get("DECKS_DIR")
    return Path(configured) if configured else default_decks_dir()


def pending_root() -> Path:
    """Where photos wait between requests: ``teaching`` beside the decks folder."""
    configured = current_app.config.get("TEACH_PENDING_DIR")
    return Path(configured) if configured else decks_dir().parent / "teaching"


def _token(create: bool) -> str | None:
    token = session.get("teach")
    if isinstance(token, str) and TOKEN_RE.fullmatch(token):
        return token
    if not create:
        return None
    token = session["teach"] = secrets.token_hex(16)
    return token


def pending_dir(create: bool = False) -> Path | None:
    """This browser's folder of photos sent so far (None when it has sent none)."""
    token = _token(create)
    if token is None:
        return None
    folder = pending_root() / token
    if create:
        _clean_old(pending_root(), keep=folder)
        try:
            (folder / "seen").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WebError(
                _("Cannot keep the photos on this server: %(reason)s.", reason=exc.strerror), 507
            ) from None
        os.utime(folder)  # in use: not among the old ones
    return folder if folder.is_dir() else None


def _clean_old(root: Path, keep: Path) -> None:
    """Remove teachings left for ``PENDING_HOURS``, and the oldest beyond ``MAX_PENDING``."""
    try:
        folders = [p for p in root.iterdir() if p.is_dir() and TOKEN_RE.fullmatch(p.name)]
    except OSError:
        return
    now = time.time()
    folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for rank, folder in enumerate(f for f in folders if f != keep):
        if rank >= MAX_PENDING - 1 or now - folder.stat().st_mtime > PENDING_HOURS * 3600:
            shutil.rmtree(folder, ignore_errors=True)


def _forget_pending() -> None:
    folder = pending_dir()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    session.pop("teach", None)


# ---------------------------------------------------------------------------------------------
# A photo as it arrives
# ---------------------------------------------------------------------------------------------


def _slot(value) -> int | str:
    """A photo's place: its month (1 to 12), or ``BACK``."""
    text = str(value or "").strip()
    if text == BACK:
        return BACK
    if not (text.isascii() and text.isdigit() and len(text) <= 2 and int(text) in MONTHS):
        raise WebError(_("The request does not say which month (1 to 12) the photo is of."), 400)
    return int(text)


def _stem(slot: int | str) -> str:
    """A place's file name without its type: ``03`` for March, ``back`` for the back."""
    return BACK if slot == BACK else f"{slot:02d}"


def keep_photo(folder: Path, slot: int | str, data: bytes) -> Path:
    """Check that ``data`` is a photo and keep it as the place's ``MM.jpg``/``MM.png`` (shrunk
    to ``KEPT_LONG_SIDE``); WebError with one sentence, keeping nothing, when it will not do."""
    import cv2
    import numpy as np

    from companion.recognizer.image_files import decoded, image_kind_and_size

    found = image_kind_and_size(data)
    if found is None:
        raise WebError(_("This file is not a photo: send a JPEG or PNG image."), 415)
    kind, width, height = found
    if width * height > PHOTO_MAX_PIXELS or width == 0 or height == 0:
        raise WebError(
            _(
                "This photo has too many pixels (%(w)s × %(h)s): at most %(n)s megapixels.",
                w=width,
                h=height,
                n=PHOTO_MAX_PIXELS // 1_000_000,
            ),
            413,
        )
    with _checking:
        if max(width, height) > KEPT_LONG_SIDE:  # decoded shrunk (JPEG), one large at a time
            image = decoded(data, KEPT_LONG_SIDE)
            if image is None:
                raise WebError(_("This photo cannot be read: save it again as JPEG or PNG."), 400)
            kind = "jpg"
            ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 95])
            data = encoded.tobytes() if ok else data
            del image, encoded
        elif cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR) is None:
            # kept as sent (at most KEPT_LONG_SIDE): only whether it decodes is checked here
            raise WebError(_("This photo cannot be read: save it again as JPEG or PNG."), 400)
    stem = _stem(slot)
    for old in folder.glob(f"{stem}.*"):
        old.unlink(missing_ok=True)
    path = folder / f"{stem}.{kind}"
    temporary = folder / f".{stem}.{kind}.part"
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        if isinstance(exc, FileNotFoundError):
            raise
        raise WebError(
            _("Cannot keep the photos on this server: %(reason)s.", reason=exc.strerror), 507
        ) from None
    return path


def check_photo(folder: Path, slot: int | str, path: Path, drawn=None, tapped=None) -> dict:
    """Read the place's photo as ``deck add --photos`` does, keep what was seen (the cards'
    outlines on a shrunk copy, or what to fix, and what the finder saw) in ``seen/MM.json``
    and return it; ``drawn``: the four cards' outlines as the player drew them (photo
    pixels), used instead of looking for the cards; ``tapped``: the four points the player
    tapped (photo pixels), the cards looked for around them."""
    import cv2

    from companion.recognizer.image_files import give_memory_back
    from companion.recognizer.photos import _read_image, back_photo_problem, read_month_photo

    stem = _stem(slot)
    with _checking:
        if slot == BACK:
            back, problem = back_photo_problem(path)
            # the picture the back was found on (its quad is in its pixels)
            image = back.image if back is not None else _read_image(path)
            quads = [back.quad] if back is not None else []
            found = quads
        else:
            photo = read_month_photo(path, slot, quads=drawn, centres=tapped)
            image, quads, problem = photo.image, photo.quads, photo.problem
            found = photo.found
        seen: dict = {"slot": stem, "file": path.name}
        (folder / "seen" / f"{stem}.jpg").unlink(missing_ok=True)  # the last photo's
        if problem:
            seen["problem"] = _message_data(problem)
        if image is not None:
            scale = min(1.0, PREVIEW_LONG_SIDE / max(image.shape[:2]))
            small = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
            cv2.imwrite(str(folder / "seen" / f"{stem}.jpg"), small, [cv2.IMWRITE_JPEG_QUALITY, 82])
            seen["size"] = [small.shape[1], small.shape[0]]
            seen["photo_size"] = [image.shape[1], image.shape[0]]
            seen["quads"] = [[[round(float(v) * scale, 1) for v in p] for p in q] for q in quads]
            # what the finder saw, shown to be fixed when the photo will not do as it is
            seen["found"] = [[[round(float(v) * scale, 1) for v in p] for p in q] for q in found]
            if drawn is not None:
                seen["drawn"] = [[[float(v) for v in p] for p in q] for q in drawn]
            if tapped is not None:
                seen["tapped"] = [[float(v) for v in p] for p in tapped]
        del image
        give_memory_back()
    # written whole, then put in place: a page rendered meanwhile reads the old one or this
    temporary = folder / "seen" / f".{stem}.json.part"
    temporary.write_text(json.dumps(seen))
    os.replace(temporary, folder / "seen" / f"{stem}.json")
    return seen


def _message_data(message) -> dict:
    """A photo's sentence (a Message) as JSON, to be said again in any language."""
    from companion.recognizer.messages import Message, Named

    if not isinstance(message, Message):
        return {"text": str(message)}
    params = {}  # each parameter as JSON keeps it: a month's name with its translations
    for key, value in message.params.items():
        if isinstance(value, Named):
            params[key] = {"named": str(value), "names": dict(value.names)}
        else:
            params[key] = value if isinstance(value, int) else str(value)
    return {"id": message.id, "params": params, "text": str(message)}


def _said(data: dict) -> str:
    from companion.recognizer.messages import Message, Named

    if "id" not in data:
        return str(data.get("text", ""))
    params = {
        k: Named(v["named"], v["names"]) if isinstance(v, dict) else v
        for k, v in data.get("params", {}).items()
    }
    try:
        return say(Message(data["id"], **params))
    except (ValueError, KeyError, TypeError):  # a sentence this version no longer has
        return str(data.get("text", ""))


# ---------------------------------------------------------------------------------------------
# What the page shows
# ---------------------------------------------------------------------------------------------


def _names_deck(folder: Path | None):
    """The deck that names the slots: the names file sent, else the standard deck."""
    if folder is not None and (folder / NAMES_FILE).is_file():
        try:
            return Deck.load(folder / NAMES_FILE)
        except CompanionError:
            pass
    return STANDARD_DECK


def month_label(month: int) -> str:
    """A month as the photos' sentences name it (March, mars, 3月), in the page's language."""
    from companion.recognizer.photos import month_named

    return month_named(month).in_language(language())


def month_view(folder: Path | None, slot: int | str, deck) -> dict:
    """One place's view (a month, or the back): its photo's state (``empty``, ``good``,
    ``bad``), its sentence, the cards' outlines (preview pixels) and names."""
    stem = _stem(slot)
    label = _("the back (optional)") if slot == BACK else month_label(slot)
    view = {"month": slot, "stem": stem, "label": label, "state": "empty", "problem": ""}
    if folder is None:
        return view
    try:
        seen = json.loads((folder / "seen" / f"{stem}.json").read_text())
    except (OSError, ValueError):
        return view
    view["size"] = seen.get("size")
    view["has_preview"] = bool(view["size"]) and (folder / "seen" / f"{stem}.jpg").is_file()
    view["version"] = int((folder / "seen" / f"{stem}.json").stat().st_mtime_ns // 1000)
    if slot != BACK and view["has_preview"]:
        view["outline"] = outline_view(seen, deck, slot)
    if seen.get("problem"):
        view.update(state="bad", problem=_said(seen["problem"]))
        return view
    view["drawn"] = bool(seen.get("drawn"))
    view["tapped"] = bool(seen.get("tapped"))
    cards = []
    for k, quad in enumerate(seen.get("quads", [])):
        code = BACK if slot == BACK else f"{slot:02d}-{k + 1}"
        name = _("Back") if slot == BACK else card_name(deck.card(code))
        xs, ys = [p[0] for p in quad], [p[1] for p in quad]
        cards.append(
            {
                "code": code,
                "slot": k + 1,
                "name": name,
                "points": " ".join(f"{x},{y}" for x, y in quad),
                "label_x": round(sum(xs) / 4, 1),
                "label_y": round(sum(ys) / 4, 1),
            }
        )
    view.update(state="good", cards=cards)
    return view


def outline_view(seen: dict, deck, month: int) -> list[dict]:
    """The four cards' outlines the player may drag (corners as shares 0..1 of the photo, slot
    order): what was found, and where fewer than four were, card-sized outlines beside them."""
    width, height = seen["size"]
    found = [q for q in (seen.get("quads") or seen.get("found") or [])][:4]
    quads = [[[x / width, y / height] for x, y in q] for q in found]
    quads += placeholder_quads(quads, width / height, 4 - len(quads))
    cards = []
    for k, quad in enumerate(quads):
        code = f"{month:02d}-{k + 1}"
        cards.append(
            {
                "slot": k + 1,
                "code": code,
                "name": card_name(deck.card(code)),
                "corners": [[round(x, 4), round(y, 4)] for x, y in quad],
                "points": " ".join(f"{x:.4f},{y:.4f}" for x, y in quad),
                "text": " ".join(f"{x:.4f},{y:.4f}" for x, y in quad),
            }
        )
    return cards


def placeholder_quads(quads: list, aspect: float, missing: int) -> list:
    """``missing`` upright card-shaped outlines (shares of the photo; ``aspect``: the photo's
    width over its height) in a row beside the ``quads`` found, or across the middle."""
    if missing <= 0:
        return []
    if quads:
        heights = [abs(q[3][1] - q[0][1]) for q in quads]
        card_h = sorted(heights)[len(heights) // 2]
        row_y = sum(sum(p[1] for p in q) / 4 for q in quads) / len(quads)
    else:
        card_h, row_y = 0.35, 0.5
    card_w = card_h * aspect_of_card_share(aspect)
    taken = [(min(p[0] for p in q), max(p[0] for p in q)) for q in quads]
    out: list = []
    x = 0.04
    while len(out) < missing and x + card_w <= 0.98:
        if all(x + card_w < a - 0.01 or x > b + 0.01 for a, b in taken):
            out.append(
                [[x, row_y - card_h / 2], [x + card_w, row_y - card_h / 2],
                 [x + card_w, row_y + card_h / 2], [x, row_y + card_h / 2]]
            )  # fmt: skip
            taken.append((x, x + card_w))
            x += card_w * 1.15
        else:
            x += card_w * 0.25
    while len(out) < missing:  # no room left in the row: stacked in the middle
        d = 0.02 * len(out)
        out.append([[0.4 + d, 0.3 + d], [0.5 + d, 0.3 + d], [0.5 + d, 0.6 + d], [0.4 + d, 0.6 + d]])
    return [[[min(max(v, 0.0), 1.0) for v in p] for p in q] for q in out]


def aspect_of_card_share(photo_aspect: float) -> float:
    """A card's width over its height in shares of the photo (x shares are of the width)."""
    from companion.recognizer.rectangles import CARD_ASPECT

    return 1 / CARD_ASPECT / photo_aspect


def panel_context() -> dict:
    folder = pending_dir()
    deck = _names_deck(folder)
    views = [month_view(folder, m, deck) for m in MONTHS]
    back = month_view(folder, BACK, deck)
    names_title = ""
    if folder is not None and (folder / NAMES_FILE).is_file():
        names_title = deck.title if hasattr(deck, "title") else ""
    return {
        "months": views,
        "back": back,
        "good": sum(v["state"] == "good" for v in views),
        "names_title": names_title or "",
        "has_names": folder is not None and (folder / NAMES_FILE).is_file(),
    }


def taught_decks() -> list[dict]:
    from companion.recognizer.decks import UserDeck, list_decks

    decks = []
    for name in list_decks(decks_dir()):
        try:
            deck = UserDeck.load(name, decks_dir())
            title = deck.names_deck().title
        except CompanionError:
            decks.append({"name": name, "cards": 0, "title": "", "broken": True})
            continue
        decks.append({"name": name, "cards": len(deck.codes), "title": title, "broken": False})
    return decks


def _page(**extra):
    return render_template(
        "teach.html",
        decks=taught_decks(),
        taught=request.args.get("taught", ""),
        **extra,
        **panel_context(),
    )


def _back_to_page(fragment: str | None = None, **context):
    if is_htmx() and fragment:
        return render_template(fragment, **context)
    return go_to(url_for("teach.page"))


# ---------------------------------------------------------------------------------------------
# Routes
# ---------------------------------------------------------------------------------------------


@bp.get("/teach")
def page():
    if can_change():
        # the token before any photo: twelve photos picked at once are sent side by side, and
        # each would otherwise start a teaching of its own
        _token(create=True)
    return _page()


@bp.post("/teach/photo")
def photo():
    slot = _slot(request.form.get("month"))
    upload = request.files.get("photo")
    data = upload.read() if upload is not None else b""
    if upload is None or not (data or upload.filename):
        raise WebError(_("Choose a photo for this month first."), 400)
    if not data:
        raise WebError(_("The photo sent is empty: take it again."), 400)
    folder = pending_dir(create=True)
    try:
        path = keep_photo(folder, slot, data)
        check_photo(folder, slot, path)
    except FileNotFoundError:  # "Start again" (or a cleaning) took the folder meanwhile
        raise WebError(
            _("The photos were forgotten meanwhile: send this one again."), 409
        ) from None
    return _back_to_page("_teach_month.html", m=month_view(folder, slot, _names_deck(folder)))


@bp.get("/teach/photo/<slot>.jpg")
def preview(slot: str):
    folder = pending_dir()
    stems = {BACK, *(f"{m:02d}" for m in MONTHS), *(str(m) for m in MONTHS)}
    if folder is None or slot not in stems:
        raise WebError(_("There is no such page."), 404)
    path = folder / "seen" / f"{_stem(_slot(slot))}.jpg"
    if not path.is_file():
        raise WebError(_("There is no such page."), 404)
    resp = send_file(path, mimetype="image/jpeg", max_age=0)
    resp.headers["Cache-Control"] = "no-store"
    return resp


def _sent_month(slot) -> tuple[Path, dict, Path]:
    """A month's photo sent so far: its folder, what was seen in it and its file; WebError with
    one sentence where there is none."""
    if slot == BACK:
        raise WebError(_("The request does not say which month (1 to 12) the photo is of."), 400)
    folder = pending_dir()
    stem = _stem(slot)
    try:
        seen = json.loads((folder / "seen" / f"{stem}.json").read_text()) if folder else None
    except (OSError, ValueError):
        seen = None
    paths = [p for p in folder.glob(f"{stem}.*") if not p.name.startswith(".")] if folder else []
    if not seen or not paths or not seen.get("photo_size"):
        raise WebError(_("Send this month's photo first."), 400)
    return folder, seen, paths[0]


@bp.post("/teach/outline")
def outline():
    """The player's outlines of a month's four cards, used instead of what was found."""
    slot = _slot(request.form.get("month"))
    folder, seen, path = _sent_month(slot)
    quads = parse_outlines(request.form.get("quads", ""))
    width, height = seen["photo_size"]
    drawn = [[[x * width, y * height] for x, y in quad] for quad in quads]
    from companion.recognizer.decks import DeckError

    try:
        check_photo(folder, slot, path, drawn=drawn)
    except DeckError:
        raise WebError(
            _("An outline is too small to be a card: drag its corners apart."), 400
        ) from None
    return _back_to_page("_teach_month.html", m=month_view(folder, slot, _names_deck(folder)))


@bp.post("/teach/centres")
def centres():
    """The points the player tapped, one in the middle of each of a month's four cards: the
    cards are looked for around them."""
    slot = _slot(request.form.get("month"))
    folder, seen, path = _sent_month(slot)
    points = parse_centres(request.form.get("centres", ""))
    width, height = seen["photo_size"]
    tapped = [[x * width, y * height] for x, y in points]
    from companion.recognizer.decks import DeckError

    try:
        check_photo(folder, slot, path, tapped=tapped)
    except DeckError:
        raise WebError(
            _("Two points tapped lie on one card: tap the middle of each card once."), 400
        ) from None
    return _back_to_page("_teach_month.html", m=month_view(folder, slot, _names_deck(folder)))


def parse_centres(text: str) -> list:
    """Four points from the form ("x,y" a card's middle, ";" between, x and y from 0 to 1 of
    the photo); WebError with one sentence where they are not."""
    points = []
    parts = [p for p in re.split(r"\s*;\s*", (text or "").strip()) if p]
    for part in parts:
        try:
            x, y = (float(v) for v in part.split(","))
        except ValueError:
            break
        if not (0 <= x <= 1 and 0 <= y <= 1):
            break
        points.append([x, y])
    if len(points) != 4 or len(parts) != 4:
        raise WebError(
            _("Tap the middle of each of the four cards: four points, x,y from 0 to 1."), 400
        )
    return points


def parse_outlines(text: str) -> list:
    """Four cards' corners from the form ("x,y x,y x,y x,y" a card, ";" between, x and y from
    0 to 1 of the photo); WebError with one sentence where they are not."""
    cards = [c for c in re.split(r"\s*;\s*", (text or "").strip()) if c]
    quads = []
    for card in cards:
        corners = []
        for pair in card.split():
            try:
                x, y = (float(v) for v in pair.split(","))
            except ValueError:
                corners = []
                break
            if not (0 <= x <= 1 and 0 <= y <= 1):
                corners = []
                break
            corners.append([x, y])
        if len(corners) != 4:
            break
        quads.append(corners)
    if len(quads) != 4 or len(cards) != 4:
        raise WebError(
            _("The outlines are four cards of four corners each, x,y from 0 to 1."), 400
        )
    return quads


@bp.post("/teach/back/remove")
def remove_back():
    folder = pending_dir()
    if folder is not None:
        for path in [*folder.glob(f"{BACK}.*"), *(folder / "seen").glob(f"{BACK}.*")]:
            path.unlink(missing_ok=True)
    return _back_to_page("_teach_month.html", m=month_view(folder, BACK, _names_deck(folder)))


@bp.post("/teach/names")
def names():
    if request.form.get("forget"):
        folder = pending_dir()
        if folder is not None:
            (folder / NAMES_FILE).unlink(missing_ok=True)
        return _back_to_page("_teach_panel.html", **panel_context())
    upload = request.files.get("names")
    data = upload.read() if upload is not None else b""
    if not data:
        raise WebError(_("Choose the deck's names file (TOML) first."), 400)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise WebError(
            _("The names file is not text (UTF-8): it is a TOML deck file."), 400
        ) from None
    folder = pending_dir(create=True)
    # checked under the name it was sent by (the sentences name the file), in a folder of its own
    shown = re.sub(r"[^A-Za-z0-9._-]", "_", Path(upload.filename or NAMES_FILE).name)[-60:]
    shown = shown.lstrip(".") or NAMES_FILE
    shown = shown if shown.endswith(".toml") else f"{shown}.toml"
    (folder / ".names").mkdir(exist_ok=True)
    trial = folder / ".names" / shown
    trial.write_bytes(data)
    try:
        Deck.load(trial)  # one sentence for the first mistake, as the CLI says it
    except CompanionError as exc:
        trial.unlink(missing_ok=True)
        raise WebError(
            _("The names file will not do: %(reason)s", reason=say(exc.sentence)), 400
        ) from None
    os.replace(trial, folder / NAMES_FILE)
    return _back_to_page("_teach_panel.html", **panel_context())


@bp.post("/teach/reset")
def reset():
    _forget_pending()
    return _back_to_page("_teach_panel.html", **panel_context())


@bp.post("/teach/save")
def save():
    from companion.recognizer.decks import NAME_RE, list_decks
    from companion.recognizer.photos import PhotoError, read_month_photo, teach_from_photos

    name = (request.form.get("name") or "").strip()
    if not NAME_RE.fullmatch(name):
        raise WebError(
            _("A deck name is lower-case letters, digits, '-' or '_' (up to 40 characters)."), 400
        )
    where = decks_dir()
    if name in list_decks(where):
        raise WebError(
            _(
                "There is already a deck named %(name)s: remove it first, or choose another name.",
                name=name,
            ),
            409,
        )
    folder = pending_dir()
    views = [month_view(folder, m, _names_deck(folder)) for m in MONTHS]
    missing = [v["label"] for v in views if v["state"] == "empty"]
    if missing:
        raise WebError(
            _(
                "Send the photo of each month first; missing: %(months)s.",
                months=", ".join(missing),
            ),
            400,
        )
    bad = [v["label"] for v in views if v["state"] == "bad"]
    if month_view(folder, BACK, None)["state"] == "bad":
        bad.append(_("the back"))
    if bad:
        raise WebError(
            _("Take these months' photos again first: %(months)s.", months=", ".join(bad)), 400
        )
    if not _teaching.acquire(blocking=False):
        raise WebError(
            _("Another deck is being taught on this server: wait until it is done."), 409
        )
    existed = (where / name).exists()
    try:
        photos = []
        for month in MONTHS:
            path = next(p for p in folder.glob(f"{month:02d}.*") if not p.name.startswith("."))
            photos.append(read_month_photo(path, month, quads=_drawn(folder, month)))
        names_file = folder / NAMES_FILE if (folder / NAMES_FILE).is_file() else None
        backs = [p for p in folder.glob(f"{BACK}.*") if not p.name.startswith(".")]
        deck = teach_from_photos(
            name, folder, where, names_file, photos=photos, back_photo=backs[0] if backs else None
        )
    except PhotoError as exc:
        _remove_partial(where / name, existed)
        raise WebError(say(exc.problems[0]), 400) from None
    except (CompanionError, StopIteration) as exc:
        _remove_partial(where / name, existed)
        if isinstance(exc, StopIteration):
            raise WebError(_("Send the photo of each month first."), 400) from None
        raise  # its sentence (a back that is a face...) said in the page's language
    except BaseException:
        _remove_partial(where / name, existed)
        raise
    finally:
        _teaching.release()
        from companion.recognizer.image_files import give_memory_back

        give_memory_back()  # the twelve photos and their crops: hundreds of MB back
    _forget_pending()
    target = url_for("teach.page", taught=deck.name)
    return go_to(target)


def _drawn(folder: Path, month: int):
    """The player's outlines of a month's cards (photo pixels), or None (find them)."""
    try:
        return json.loads((folder / "seen" / f"{month:02d}.json").read_text()).get("drawn")
    except (OSError, ValueError):
        return None


def _remove_partial(folder: Path, existed: bool) -> None:
    """Nothing half-kept: a deck folder made by a teaching that failed goes."""
    if not existed:
        shutil.rmtree(folder, ignore_errors=True)


@bp.post("/<name>/remove")
def remove(name: str):
    from companion.recognizer.decks import remove_deck

    try:
        remove_deck(name, decks_dir())
    except CompanionError:
        raise WebError(_("There is no taught deck named %(name)s.", name=name[:40]), 404) from None
    return _back_to_page()

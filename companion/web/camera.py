"""The camera on the tablet: the live view, the zone calibration page and the crops of the
cards the camera is unsure of (documented in ``companion/web/__init__`` and docs/LIVE.md).

Everything here reads ``app.extensions["companion_live"]``, a ``LiveSession`` or None when the
server runs without a camera: the pages then say so, and the image endpoints answer 404.
"""

from __future__ import annotations

import math
import time

from flask import (
    Blueprint,
    Response,
    current_app,
    jsonify,
    redirect,
    render_template,
    request,
    stream_with_context,
    url_for,
)
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from companion import CompanionError
from companion.game.cards import STANDARD_DECK
from companion.live.source_state import SourceState
from companion.web.auth import joined
from companion.web.errors import WebError
from companion.web.forms import seconds_arg
from companion.web.i18n import card_name, say
from companion.web.match import camera_names_for_unrecorded, taught_names
from companion.web.pages import go_to, store
from companion.web.teach import decks_dir

bp = Blueprint("camera", __name__)

NO_CAMERA = _l("No camera: this server was started without one; keep scoring by hand.")
NO_FRAME = _l("The camera has not sent a picture yet; try again in a moment.")
LOST = _l("Camera lost — keep scoring by hand, retrying.")
DEFAULT_STREAM_SECONDS = 300
MAX_STREAM_SECONDS = 3600
STREAM_INTERVAL = 0.1  # seconds between looks for a new frame: at most 10 pictures a second
BOUNDARY = "frame"

# What each state of the camera means for the players, in one sentence.
STATE_MESSAGES = {
    SourceState.OFF: NO_CAMERA,
    SourceState.CONNECTING: _l("Connecting to the camera…"),
    SourceState.LIVE: _l("The camera keeps the score; fix any misread card by hand."),
    SourceState.LOST: LOST,
    SourceState.ENDED: _l("The video has ended; keep scoring by hand."),
}
ZONE_LABELS = {"field": _l("Field"), "draw_pile": _l("Draw pile")}
# A source that has sent no picture for 5 s: which one, and what to check (the session says
# when; the pipeline keeps retrying).
ABSENT = {
    "camera": _l(
        "No picture from %(source)s for 5 s: check that it is plugged in and that no other "
        "program is using it; still trying."
    ),
    "stream": _l(
        "No picture from %(source)s for 5 s: check the address and that the camera is "
        "switched on and on this network; still trying."
    ),
    "phone": _l(
        "No picture from %(source)s for 5 s: check that the phone's camera page is open, "
        "sending, and its screen on; still trying."
    ),
    "source": _l("No picture from %(source)s for 5 s: check the camera; still trying."),
}


def live_session():
    """The app's LiveSession, or None when serving without a camera."""
    return current_app.extensions.get("companion_live")


def _require_live():
    session = live_session()
    if session is None:
        raise WebError(str(NO_CAMERA), 404)
    return session


def _require_pictures():
    """The session, for a request allowed to see the camera's pictures: with a join code set
    (serving on the LAN), only tablets that entered it see the room, as only they may change."""
    session = _require_live()
    if not joined():
        raise WebError(
            _("Enter the join code first: the camera’s pictures are for the players."), 403
        )
    return session


def camera_status() -> dict:
    """``LiveSession.status()`` with every documented key present and a message to show."""
    session = live_session()
    if session is None:
        return {
            "camera": SourceState.OFF.value,
            "source": "",
            "fps": 0.0,
            "frames": 0,
            "match_id": None,
            "message": str(NO_CAMERA),
            "proposal": None,
        }
    raw = dict(session.status() or {})
    camera = raw.get("camera")
    camera = SourceState(camera) if camera in STATE_MESSAGES else SourceState.CONNECTING
    try:
        fps = float(raw.get("fps") or 0.0)
    except (TypeError, ValueError):
        fps = 0.0
    from companion.live.sources import redact_url

    # Whatever the session says, a camera URL's password is never shown or sent.
    status = {
        "camera": camera.value,
        "source": redact_url(say(raw.get("source") or "")),  # named in the page's language
        "fps": round(fps, 1) if math.isfinite(fps) else 0.0,
        "frames": int(raw.get("frames") or 0),
        "match_id": raw.get("match_id"),
        # the session's Message, said here; a camera URL in it never shows its password
        "message": redact_url(say(raw.get("message") or "")),
    }
    proposal = raw.get("proposal")
    if isinstance(proposal, dict) and proposal.get("text"):
        # What the camera suggests (a redeal, the next round): confirmed on the match page.
        status["proposal"] = {
            "kind": str(proposal.get("kind") or ""),
            "text": say(proposal["text"]),
        }
    else:
        status["proposal"] = None
    absent = raw.get("absent")
    if camera.waiting and absent:
        sentence = ABSENT.get(str(absent), ABSENT["source"])
        status["message"] = sentence % {"source": status["source"] or _("the camera")}
    elif camera is SourceState.LOST:
        status["message"] = str(LOST)  # whatever the source said: the players need to know this
    elif not status["message"]:
        status["message"] = str(STATE_MESSAGES[camera])
    return status


def zone_label(name: str) -> str:
    if name.startswith("captures_"):
        return _("Captures %(player)s", player=name[len("captures_") :])
    return str(ZONE_LABELS.get(name, name))


@bp.app_context_processor
def camera_for_templates():
    # Pages show a camera link/panel only when a live session exists; the camera demo's match
    # shows the live view beside its tally; the scripted demo links to the camera demo.
    present = live_session() is not None
    return {
        "camera_present": present,
        # whether the tablet may change the deck the camera reads with (``POST /live/deck``)
        "camera_decks": present and hasattr(live_session(), "use_deck"),
        "live_beside_match": current_app.config.get("LIVE_BESIDE") if present else None,
        "demo_camera": current_app.config.get("DEMO_CAMERA") is not None,
    }


def _jpeg(data: bytes | None) -> Response:
    if not data:
        raise WebError(str(NO_FRAME), 503)
    response = Response(data, mimetype="image/jpeg")
    response.headers["Cache-Control"] = "no-store"
    return response


def _no_store(response):
    response.headers["Cache-Control"] = "no-store"
    return response


# ---------------------------------------------------------------------------------------------
# Live view
# ---------------------------------------------------------------------------------------------


@bp.get("/live")
def view():
    status = camera_status()
    match_id = status["match_id"]
    return render_template(
        "live.html",
        status=status,
        match_url=url_for("match.page", match_id=match_id) if match_id else None,
        **deck_choice(match_id),
    )


def _deck_title(names) -> str:
    from companion.game.cards import STANDARD_DECK

    if names is None:
        return _("the standard names")
    if names.title == STANDARD_DECK.title:  # the product's own deck, named in the page's words
        return _("Standard Hanafuda (Nintendo design)")
    return names.title


def deck_choice(match_id) -> dict:
    """What the live page shows of the deck the camera reads with: the taught decks to choose
    from (``deck list``), the one in use ("" for the standard names), and, when the match in
    progress keeps other names than the camera's deck (it recorded its deck when it started),
    one sentence saying so."""
    from companion.recognizer.decks import list_decks

    session = live_session()
    if session is None:
        return {"decks": [], "camera_deck": "", "match_deck_note": None}
    try:
        decks = list_decks(decks_dir())
    except CompanionError:
        decks = []
    note = None
    camera_names = taught_names()
    if match_id is not None:
        try:
            state = store().state(match_id)
        except CompanionError:
            state = None
        if state is not None and hasattr(state, "deck_names"):  # a Koi-Koi-family match
            kept = state.deck_names
            if kept is None:
                kept = camera_names_for_unrecorded()
            if (kept.name if kept else None) != (camera_names.name if camera_names else None):
                note = _(
                    "Match %(n)s keeps the names of the deck it was started with (%(kept)s); "
                    "the camera reads with %(camera)s, which a new match will use.",
                    n=match_id,
                    kept=_deck_title(kept),
                    camera=_deck_title(camera_names),
                )
    return {
        "decks": decks,
        "camera_deck": getattr(session, "deck_name", None) or "",
        "match_deck_note": note,
    }


@bp.post("/live/deck")
def use_deck():
    """deck=NAME: the camera reads with that taught deck from its next frame (its names on the
    live view, and in a match started afterwards); deck="" for the standard names. A name
    that is not a taught deck is one sentence (404), and nothing changes."""
    from companion.recognizer.decks import UserDeck, list_decks

    session = _require_live()
    if not hasattr(session, "use_deck"):
        raise WebError(_("This camera reads with the deck it was started with."), 404)
    name = (request.form.get("deck") or "").strip()
    deck = None
    if name:
        where = decks_dir()
        if name not in list_decks(where):
            raise WebError(_("There is no taught deck named %(name)s.", name=name[:40]), 404)
        try:
            deck = UserDeck.load(name, where)
        except CompanionError:  # its sentence names the server's folder and a library's words
            raise WebError(
                _(
                    "The taught deck %(name)s cannot be read: teach it again, or remove it.",
                    name=name[:40],
                ),
                409,
            ) from None
    session.use_deck(deck)
    return go_to(url_for("camera.view"))


@bp.get("/demo/camera")
def demo_camera():
    """The camera demo (``companion demo`` only): started on the first visit, then its match
    page, the live view beside the tally. Without card images to film: one sentence, 503."""
    start = current_app.config.get("DEMO_CAMERA")
    if start is None:
        raise WebError(_("The camera demo runs only with 'companion demo'."), 404)
    try:
        match_id = start()
    except WebError:
        raise
    except CompanionError as exc:
        raise WebError(exc.sentence, 503) from None
    return redirect(url_for("match.page", match_id=match_id), 303)


@bp.get("/live/status")
def status():
    return _no_store(jsonify(camera_status()))


@bp.get("/live/frame.jpg")
def frame():
    session = _require_pictures()
    if request.args.get("plain") in ("1", "true", "yes"):
        return _jpeg(session.snapshot_jpeg())
    return _jpeg(session.latest_jpeg(annotated=True))


@bp.get("/live/cards")
def cards():
    """The cards of the camera's last look, named in the page's language, and the zones: the
    live view writes these names over the picture (which carries the outlines only), placed
    so that no two cover each other. No codes, no confidences: the players read names, those
    of the deck the camera was taught (``run --deck``) where it was."""
    session = _require_pictures()
    deck = taught_names() or STANDARD_DECK
    looked = getattr(session, "cards_in_view", None)
    seen = looked() if looked is not None else {"frame": 0, "cards": []}
    named = []
    for card in seen.get("cards", []):
        code = str(card.get("code", ""))
        try:
            name = card_name(deck.card(code))
        except CompanionError:  # a back, or a code this deck does not know
            name = _("Face down") if code == "back" else None
        if name is None:
            continue
        named.append(
            {
                "name": name,
                "quad": card.get("quad", []),
                "sure": float(card.get("confidence", 1.0)) >= 0.8,
                "back": code == "back",
            }
        )
    named.sort(key=lambda c: not c["sure"])  # the surest cards get the best places first
    zones = session.zones
    return _no_store(
        jsonify(
            {
                "frame": int(seen.get("frame") or 0),
                "cards": named,
                "zones": [
                    {"name": z["name"], "label": z["label"], "polygon": z["polygon"]}
                    for z in zones_for_page(zones)
                ]
                if zones is not None
                else [],
            }
        )
    )


@bp.get("/live/stream.mjpg")
def stream():
    """The annotated frames as MJPEG (``multipart/x-mixed-replace``), each new frame once;
    the stream closes itself after ``?max_seconds=`` (default 300) so that a forgotten tab
    does not hold a server thread for ever (an ``<img>`` simply shows the last frame)."""
    session = _require_pictures()
    max_seconds = seconds_arg("max_seconds", DEFAULT_STREAM_SECONDS, MAX_STREAM_SECONDS)
    plain = request.args.get("plain") in ("1", "true", "yes")

    def frame_number():
        try:
            return (session.status() or {}).get("frames")
        except Exception:  # noqa: BLE001 - a session that cannot say: encode every look
            return None

    def parts():
        deadline = time.monotonic() + max_seconds
        last = seen = None
        while time.monotonic() < deadline:
            # Encoding costs the pipeline's CPU: only when the camera has a new frame.
            number = frame_number()
            if number is not None and number == seen:
                time.sleep(min(STREAM_INTERVAL, max(0.0, deadline - time.monotonic())))
                continue
            data = session.snapshot_jpeg() if plain else session.latest_jpeg(annotated=True)
            seen = number
            if data and data != last:
                last = data
                yield (
                    (
                        f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\n"
                        f"Content-Length: {len(data)}\r\n\r\n"
                    ).encode()
                    + data
                    + b"\r\n"
                )
            time.sleep(min(STREAM_INTERVAL, max(0.0, deadline - time.monotonic())))
        yield f"--{BOUNDARY}--\r\n".encode()

    response = Response(
        stream_with_context(parts()), mimetype=f"multipart/x-mixed-replace; boundary={BOUNDARY}"
    )
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"
    return response


@bp.get("/live/crop")
def crop():
    """The camera's picture of one captured card (the "check this card" panel shows it)."""
    session = _require_pictures()
    player = (request.args.get("player") or "").strip()
    if not player:
        raise WebError(_("Say whose capture to show (player)."), 400)
    code = (request.args.get("card") or "").strip()
    if not code:
        raise WebError(_("Say which card to show (card=MM-K)."), 400)
    code = STANDARD_DECK.card(code).code  # CardError (400) for an unknown code
    data = session.crop_jpeg(player, code)
    if not data:
        raise WebError(
            _(
                "The camera kept no picture of %(card)s captured by %(player)s.",
                card=code,
                player=player,
            ),
            404,
        )
    response = Response(data, mimetype="image/jpeg")
    response.headers["Cache-Control"] = "private, max-age=60"
    return response


# ---------------------------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------------------------


def zones_for_page(zones) -> list[dict]:
    return [
        {
            "name": z.name,
            "label": zone_label(z.name),
            "kind": z.kind,
            "polygon": [[round(x, 4), round(y, 4)] for x, y in z.polygon],
            "text": polygon_text(z.polygon),
        }
        for z in zones
    ]


def polygon_text(polygon) -> str:
    """A polygon as the form writes it: ``x,y`` pairs separated by spaces."""
    return " ".join(f"{x:.4f},{y:.4f}" for x, y in polygon)


def parse_polygon(text: str, label: str) -> list[list[float]]:
    """``x,y x,y x,y ...`` (normalised) -> corners; WebError with one sentence otherwise."""
    pairs = str(text).replace(";", " ").split()
    if len(pairs) < 3:
        raise WebError(_("%(zone)s needs at least 3 corners.", zone=label), 400)
    corners = []
    for pair in pairs:
        parts = pair.split(",")
        try:
            x, y = (float(v) for v in parts)
        except ValueError:
            raise WebError(
                _(
                    "%(zone)s: a corner is written x,y with two numbers, not %(pair)s.",
                    zone=label,
                    pair=repr(pair[:40]),
                ),
                400,
            ) from None
        if not (math.isfinite(x) and math.isfinite(y) and 0 <= x <= 1 and 0 <= y <= 1):
            raise WebError(
                _(
                    "%(zone)s: corners are fractions of the picture from 0 to 1, not %(pair)s.",
                    zone=label,
                    pair=pair[:40],
                ),
                400,
            )
        corners.append([x, y])
    return corners


def zones_from_form(zones, form):
    """``zones`` with each ``zone_<name>`` field's polygon; every field is checked before
    anything is replaced, so a bad form changes nothing."""
    known = {z.name for z in zones}
    sent = {k[len("zone_") :]: v for k, v in form.items() if k.startswith("zone_")}
    if not sent:
        raise WebError(_("The form sent no zone corners (zone_<name> fields)."), 400)
    unknown = sorted(set(sent) - known)
    if unknown:
        raise WebError(
            _(
                "There is no zone %(zone)s in this layout: expected %(zones)s.",
                zone=repr(unknown[0][:40]),
                zones=", ".join(sorted(known)),
            ),
            400,
        )
    polygons = {name: parse_polygon(text, zone_label(name)) for name, text in sent.items()}
    for name, polygon in polygons.items():
        try:
            zones = zones.with_polygon(name, polygon)
        except CompanionError as exc:  # ZoneError: one sentence already
            raise WebError(exc.sentence, 400) from None
    return zones


def default_layout(zones):
    from companion.live.zones import default_zones

    return default_zones(max(2, min(3, len(zones.players))))


def proposed_layout(session, zones):
    """``(zones, note)``: the layout proposed from the dealt field the camera sees (the
    session's optional ``field_boxes()``), or the current zones and why there is none."""
    from companion.live.layout import zones_from_field

    field_boxes = getattr(session, "field_boxes", None)
    if field_boxes is None:
        return zones, _("This camera cannot propose zones; drag the corners instead.")
    try:
        proposed = zones_from_field(field_boxes(), max(2, min(3, len(zones.players))))
    except CompanionError as exc:  # ZoneError: its sentence in the page's language
        return zones, say(exc.sentence)
    return proposed, None


@bp.get("/calibrate")
def calibrate():
    session = live_session()
    zones = session.zones if session is not None else None
    proposed = problem = None
    if zones is not None and request.args.get("propose"):
        candidate, problem = proposed_layout(session, zones)
        if problem is None:
            proposed, zones = True, candidate
    return render_template(
        "calibrate.html",
        status=camera_status(),
        zones=zones_for_page(zones) if zones is not None else [],
        layout=zones.name if zones is not None else None,
        saved=request.args.get("saved"),
        can_propose=session is not None and hasattr(session, "field_boxes"),
        proposed=proposed,
        problem=problem,
    )


@bp.post("/calibrate")
def save_calibration():
    session = _require_live()
    if request.form.get("reset"):
        zones = default_layout(session.zones)
        done = "reset"
    else:
        zones = zones_from_form(session.zones, request.form)
        done = "saved"
    session.set_zones(zones)
    if request.headers.get("HX-Request") == "true" or request.accept_mimetypes.best == (
        "application/json"
    ):
        return jsonify({"saved": True, "zones": zones.to_dict(), "done": done})
    return redirect(url_for("camera.calibrate", saved=done), 303)

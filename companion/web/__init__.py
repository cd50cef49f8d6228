"""The tablet page: a Flask app over a MatchStore (app factory, one blueprint per area).

Routes (every page is also an htmx fragment: a request with the ``HX-Request`` header gets
the fragment only, the same URL without it gets the full page)::

    GET  /                              match list + new-match form
    GET  /new/options?rules=PRESET      the rules-dependent part of the new-match form (htmx swap):
                                        player fields, Oya, rounds, option toggles; re-rendered
                                        with the form's values (options_for=PRESET, opt_<id>,
                                        player_<n>...) when an option changes
    POST /matches                       create a match (player_1..4, rounds, rules, opt_<id>, oya,
                                        title; team_1/team_2 names with the teams option)
    GET  /matches/<id>                  the match page (live tally, prompt, actions, log, ledger)
    GET  /matches/<id>/board            the live part of the match page (fragment)
    GET  /matches/<id>/picker?player=P[&card=MM-K]   48-card picker (add, or correct/remove a card)
    GET  /matches/<id>/picker?player=P&declare=KIND  the picker for a declared hand's cards
                                        (teshi, kuttsuki, dealt_yaku: hand_declared with them)
    POST /matches/<id>/events           record one event (see ``companion.web.match``)
    GET  /matches/<id>/summary          the printable match summary (companion.summaries.koikoi.render_html)
    GET  /join, POST /join              enter the join code (only when one is set)

Live endpoint (the page, ``companion bench-live`` and any other follower use it)::

    GET /matches/<id>/live              Server-Sent Events, ``Content-Type: text/event-stream``.
        Sends at once, then every time the match's log grows (at once for an append made
        through this app's store, within 0.1 s for one made by another process):
            event: update
            data: {"match": <id>, "seq": <last seq>}
        plus a ``: keep-alive`` comment every 10 s. The stream closes itself after
        ``?max_seconds=`` (default 300, at most 3600); EventSource reconnects on its own
        (``retry: 1000``). With ``?board=1`` (what the page asks for) each update also
        carries ``"board"``: the board fragment at that seq, rendered once per event and
        language and sent as is to every follower, its forms' CSRF token and request ids
        left as marks (``match.CSRF_MARK``, ``match.RID_MARK``) that the page fills in.
    GET /matches/<id>/seq?after=N&timeout=S
        Long-poll alternative: answers ``{"match": <id>, "seq": <last seq>}`` as soon as the
        last seq is greater than N, or after S seconds (default 20, at most 60) with the
        current seq. Without ``after`` it answers at once.

A follower that sees a new seq without a board fetches ``GET /matches/<id>/board`` (the tally
fragment). Each stream (live, long-poll, MJPEG) is served by a thread of its own, up to
``MAX_STREAMS``, never by the page threads: tablets left open do not keep pages waiting.

The camera (``companion.web.camera``; ``create_app(live=LiveSession)``, docs/LIVE.md). Without a
live session the pages say "no camera" and the picture endpoints answer 404::

    GET  /live                          the live view: the camera's picture with each card
                                        outlined and named and the zones drawn, its state and
                                        frame rate (pictures refreshed, or the MJPEG stream)
    GET  /live/status                   {"camera": off|connecting|live|lost|ended, "source",
                                        "fps", "frames", "match_id", "message"}
    GET  /live/frame.jpg[?plain=1]      the last frame, annotated (plain: as the camera saw it);
                                        503 before the first frame
    GET  /live/stream.mjpg[?max_seconds=S]   multipart/x-mixed-replace JPEG stream of the
                                        annotated frames, each new frame once; closes itself
                                        after S seconds (default 300, at most 3600)
    GET  /live/cards                    the last look's cards and the zones, named in the
                                        page's language (the live view writes them over the
                                        picture, which carries the outlines only)
    GET  /live/crop?player=P&card=MM-K  the camera's crop of a capture it flagged for a check
    GET  /calibrate[?propose=1]         the zones drawn over a snapshot; drag their corners
                                        (propose=1: zones fitted to the dealt field, unsaved)
    POST /calibrate                     zone_<name>="x,y x,y x,y ..." (3+ corners, 0..1) for any
                                        zones of the layout, or reset=1 for the default layout;
                                        saved to the session's zone file and applied at once
                                        (a bad form is 400 with one sentence and saves nothing)
    GET  /demo/camera                   ``companion demo`` only: starts the camera demo (a simulated
                                        table read by the real pipeline) once, 303 to its match
                                        page, the live view beside the tally; 503 with one
                                        sentence without card images to film; 404 elsewhere

A phone's browser as the camera (``companion.web.phone``; ``companion run --phone``)::

    GET  /phone                         "Use this phone as the camera": takes the phone's back
                                        camera and posts about 10 pictures a second, shown with
                                        the zones over them; the screen kept awake
    POST /live/push                     body: one JPEG or PNG picture (at most 2 MB), for the
                                        session's PushedFrameSource; 204; 409 when the camera
                                        is not a phone, 404 without a camera

Teaching a deck (``companion.web.teach``: the twelve month photos, checked one by one, then the
deck kept where ``companion deck add`` keeps it)::

    GET  /decks/teach                   the taught decks, and the months' photos sent so far
    POST /decks/teach/photo             month=1..12|back, photo=<JPEG or PNG>: that place's photo,
                                        checked; answers its place (cards outlined and named, or
                                        the sentence saying what to fix)
    POST /decks/teach/names             names=<deck file>: the deck's own names (forget=1: none)
    POST /decks/teach/save              name=NAME: teach and keep the deck (4xx, nothing kept,
                                        while a photo is missing or will not do)
    POST /decks/<name>/remove           delete a taught deck

A flagged capture shows on the board as "check this card": ``capture_checked`` (POST
``/matches/<id>/events``, player + card) confirms it, ``capture_corrected`` corrects it.

Every POST carries the session's CSRF token (form field ``csrf_token`` or header
``X-CSRF-Token``). Every change to a match carries ``expected_seq`` (the last seq the page
saw: a stale one gets 409) and ``request_id`` (a resent request is a no-op). With a join code
set, nothing can be changed (403) until the browser has entered the code at ``/join``; with
``read_only=True`` nothing can be changed at all. Join codes are judged a few a second for the
whole server, whatever the address (``companion.web.auth``). A body over its route's limit
(64 KB, an import 4 MB, a teaching photo 16 MB, a phone's camera picture 2 MB) is refused with
413 before it is read (``companion.web.limits``). ``serve`` on a loopback address also refuses
requests made under any other host name (DNS rebinding); on another address it speaks https
(``companion.web.tls``), plain HTTP being left to this machine's own browser.

The modules: one blueprint per area (``matches``, ``match``, ``hanamikoji``, ``camera``,
``teach``, ``phone``, ``auth``, and ``tally_stream`` waiting on ``seq_watcher``); ``games``:
each game's page and new-match form, keyed by the game (``game.registry``); what views share
(``pages``: the store, rendering, ``go_to``; ``forms``: reading fields; ``errors``: the
one-sentence 4xx; ``tiles``, ``event_log``, ``chart``: what the match page draws); what guards
every request (``security``, ``limits``, ``auth``); serving it (``serving``: waitress;
``hosts``: addresses; ``tls``: https on the LAN). This module is the app factory alone.
"""

from __future__ import annotations

import secrets

from flask import Flask, current_app
from werkzeug.routing import IntegerConverter

from companion import CompanionError
from companion.resources import package_path
from companion.store import MatchStore
from companion.web import (
    auth,
    camera,
    errors,
    hanamikoji,
    i18n,
    limits,
    match,
    matches,
    phone,
    security,
    tally_stream,
    teach,
)
from companion.web.auth import can_change, csrf_token
from companion.web.forms import new_request_id
from companion.web.games import match_url, new_match_games
from companion.web.tiles import tile

WEB_DIR = package_path("web")  # templates/ and static/ ship inside the package


class AsciiIntConverter(IntegerConverter):
    """``<int:...>`` for ASCII digits only. More digits than SQLite's largest id are handed
    on as text, for the store to answer "no such match" (``int`` of 5,000 digits would fail)."""

    regex = r"[0-9]+"

    def to_python(self, value: str):
        return super().to_python(value) if len(value) <= 19 else value


def create_app(
    store=None,
    *,
    join_code: str | None = None,
    read_only: bool = False,
    secret_key: str | None = None,
    testing: bool = False,
    public_url: str | None = None,
    live=None,
) -> Flask:
    """The tablet app over ``store``: a MatchStore, a database path, ":memory:" or None
    (the default database). ``join_code``: required before any change (LAN serving);
    ``read_only``: refuse every change; ``public_url``: the address shown in the QR code;
    ``live``: the camera's ``LiveSession`` (None: no camera, the camera pages say so)."""
    if not isinstance(store, MatchStore):
        store = MatchStore.open(store)
    if join_code is not None:
        join_code = str(join_code).strip()
        if not (join_code.isascii() and join_code.isdigit() and 4 <= len(join_code) <= 12):
            raise CompanionError("The join code must be 4 to 12 digits.")

    app = Flask(
        __name__,
        template_folder=str(WEB_DIR / "templates"),
        static_folder=str(WEB_DIR / "static"),
        static_url_path="/static",
    )
    app.config.update(
        # A fresh secret at every start: sessions (join, CSRF) do not outlive the server.
        SECRET_KEY=secret_key or secrets.token_hex(32),
        SESSION_COOKIE_SAMESITE="Strict",
        SESSION_COOKIE_HTTPONLY=True,
        TESTING=testing,
        JOIN_CODE=join_code,
        READ_ONLY=bool(read_only),
        PUBLIC_URL=public_url,
        SEND_FILE_MAX_AGE_DEFAULT=3600,
    )
    app.extensions["companion_store"] = store
    app.extensions["companion_live"] = live


    # Match ids are ASCII digits only: ``\d`` would also take "٤" (match 4) or "²".
    app.url_map.converters["int"] = AsciiIntConverter
    i18n.init_app(app)
    errors.init_app(app)
    security.init_app(app)
    limits.init_app(app)  # before the join code and CSRF checks read anything
    auth.init_app(app)
    app.register_blueprint(matches.bp)
    app.register_blueprint(match.bp)
    app.register_blueprint(tally_stream.bp)
    app.register_blueprint(camera.bp)
    app.register_blueprint(auth.bp)
    app.register_blueprint(hanamikoji.bp)
    app.register_blueprint(teach.bp)
    app.register_blueprint(phone.bp)
    app.context_processor(_template_globals)
    return app


def _template_globals() -> dict:
    """What every template may use beside its own context."""
    config = current_app.config
    return {
        "can_change": can_change(),
        "csrf_token": csrf_token,
        "join_required": bool(config.get("JOIN_CODE")),
        "read_only": config.get("READ_ONLY"),
        "tile": tile,
        "new_request_id": new_request_id,
        "match_url": match_url,  # a listed match's page, whatever its game
        "new_match_games": new_match_games,
    }

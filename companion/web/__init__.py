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

A flagged capture shows on the board as "check this card": ``capture_checked`` (POST
``/matches/<id>/events``, player + card) confirms it, ``capture_corrected`` corrects it.

Every POST carries the session's CSRF token (form field ``csrf_token`` or header
``X-CSRF-Token``). Every change to a match carries ``expected_seq`` (the last seq the page
saw: a stale one gets 409) and ``request_id`` (a resent request is a no-op). With a join code
set, nothing can be changed (403) until the browser has entered the code at ``/join``; with
``read_only=True`` nothing can be changed at all. Join codes are judged a few a second for the
whole server, whatever the address (``companion.web.auth``). A body over its route's limit
(64 KB, an import 4 MB) is refused with 413 before it is read (``companion.web.limits``).
``serve`` on a loopback address also refuses
requests made under any other host name (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import logging
import re
import secrets
import threading

from flask import Flask
from werkzeug.routing import IntegerConverter

from companion import CompanionError
from companion.resources import package_path

WEB_DIR = package_path("web")  # templates/ and static/ ship inside the package
LOOPBACK_NAMES = {"localhost", "ip6-localhost", "ip6-loopback"}


def host_name(host_header: str) -> str:
    """The name in a ``Host`` header, without its port or IPv6 brackets, lower-cased.

    Werkzeug's own ``TRUSTED_HOSTS`` check cuts a bracketed IPv6 entry at its first colon, so
    ``[::1]`` never matches: the name is taken apart here instead."""
    host = (host_header or "").strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def url_host(host: str) -> str:
    """``host`` as it is written in a URL: an IPv6 address goes in brackets."""
    host = host.strip("[]")
    return f"[{host}]" if ":" in host else host


def is_loopback(host: str) -> bool:
    """True when ``host`` only accepts connections from this machine."""
    host = (host or "").strip().strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


JOIN_CODE_DIGITS = 10  # the QR code carries it; typed by hand it is read in groups of 3-3-4


def new_join_code() -> str:
    """A random code of ``JOIN_CODE_DIGITS`` digits, leading zeros kept: at the server's bound
    on guesses (``companion.web.auth``) finding it takes decades, not minutes."""
    return f"{secrets.randbelow(10**JOIN_CODE_DIGITS):0{JOIN_CODE_DIGITS}d}"


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
    from companion.store import MatchStore

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

    from companion.web import auth, camera, hanamikoji, i18n, limits, match, matches, teach, views
    from companion.web import live as live_updates  # ``live`` here is the camera session

    # Match ids are ASCII digits only: ``\d`` would also take "٤" (match 4) or "²".
    app.url_map.converters["int"] = AsciiIntConverter
    i18n.init_app(app)
    views.init_app(app)
    limits.init_app(app)  # before the join code and CSRF checks read anything
    auth.init_app(app)
    app.register_blueprint(matches.bp)
    app.register_blueprint(match.bp)
    app.register_blueprint(live_updates.bp)
    app.register_blueprint(camera.bp)
    app.register_blueprint(auth.bp)
    app.register_blueprint(hanamikoji.bp)
    app.register_blueprint(teach.bp)
    return app


# Page requests share a fixed pool of worker threads; a long-lived answer (a live tally's
# event stream, the camera's MJPEG stream, a long-poll) gets a thread of its own from a second
# pool, so that no number of tablets left open can keep a page waiting. Streams are cheap
# (a thread asleep on a condition) but not free: past MAX_STREAMS they queue for a free one.
SERVER_THREADS = 48
MAX_STREAMS = 400
STREAM_PATHS = re.compile(r"^/(matches/\d+/(live|seq)|live/stream\.mjpg)$")
CHANNEL_TIMEOUT = 30  # seconds an idle or half-sent connection is kept before it is dropped


class StreamingDispatcher:
    """waitress's task dispatcher, split in two: pages go to a fixed pool of ``threads``;
    long-lived streams (``STREAM_PATHS``) to a second pool, grown by one thread whenever a
    stream arrives and every stream thread is taken, up to ``max_streams`` threads (a thread
    whose stream ended waits for the next one)."""

    def __init__(self, threads: int = SERVER_THREADS, max_streams: int = MAX_STREAMS):
        from waitress.task import ThreadedTaskDispatcher

        self.pages = ThreadedTaskDispatcher()
        self.streams = ThreadedTaskDispatcher()
        # A stream waits for its thread only while that thread starts: not worth a warning.
        self.streams.queue_logger = logging.getLogger("waitress.queue.streams")
        self.streams.queue_logger.setLevel(logging.ERROR)
        self.max_streams = max_streams
        self._lock = threading.Lock()
        self.open_streams = 0  # queued or being served
        self.pages.set_thread_count(threads)

    @staticmethod
    def is_stream(channel) -> bool:
        requests = getattr(channel, "requests", None)
        path = getattr(requests[0], "path", "") if requests else ""
        return bool(STREAM_PATHS.match(path or ""))

    def add_task(self, channel) -> None:
        if not self.is_stream(channel):
            self.pages.add_task(channel)
            return
        with self._lock:
            self.open_streams += 1
            threads = len(self.streams.threads)
            if self.open_streams > threads and threads < self.max_streams:
                self.streams.set_thread_count(threads + 1)
        self.streams.add_task(_StreamTask(channel, self._stream_done))

    def _stream_done(self) -> None:
        with self._lock:
            self.open_streams -= 1

    def set_thread_count(self, count: int) -> None:
        self.pages.set_thread_count(count)

    def shutdown(self, cancel_pending: bool = True, timeout: float = 5) -> bool:
        streams = self.streams.shutdown(cancel_pending, timeout / 2)
        pages = self.pages.shutdown(cancel_pending, timeout / 2)
        return streams and pages


class _StreamTask:
    """A channel whose request is a stream, counted until it has been served or cancelled."""

    def __init__(self, channel, done):
        self.channel, self._done = channel, done

    def service(self) -> None:
        try:
            self.channel.service()
        finally:
            self._done()

    def cancel(self) -> None:
        try:
            self.channel.cancel()
        finally:
            self._done()

    def __repr__(self) -> str:  # waitress logs a failed task with it
        return repr(self.channel)


class Server:
    """A waitress server (production WSGI: requests are read whole before a worker thread
    sees them, a body over its route's limit is refused with 413 before it is read
    (``companion.web.limits``), idle and half-sent connections are dropped after
    ``channel_timeout``) with the
    small interface ``serve``'s callers use: ``server_port``, ``shutdown()``."""

    software = "waitress"

    def __init__(
        self,
        app,
        host,
        port,
        *,
        threads=SERVER_THREADS,
        channel_timeout=None,
        max_streams=MAX_STREAMS,
    ):
        from waitress.server import create_server

        from companion.web.limits import SERVER_MAX_BYTES, LimitedChannel

        timeout = CHANNEL_TIMEOUT if channel_timeout is None else channel_timeout
        self.dispatcher = StreamingDispatcher(threads, max_streams)
        self._server = create_server(
            app,
            host=host.strip("[]"),
            port=port,
            threads=threads,
            channel_timeout=timeout,
            cleanup_interval=max(1, min(30, timeout // 2 or 1)),
            # A tablet keeps about three connections open (its stream, its pages, the camera).
            connection_limit=max(100, 4 * threads) + 3 * max_streams,
            _dispatcher=self.dispatcher,
            ident="hanafuda-companion",
            clear_untrusted_proxy_headers=True,
            asyncore_use_poll=True,
            max_request_body_size=SERVER_MAX_BYTES,
        )
        # Each route's body limit checked when the headers end: a body over it is never read.
        self._server.channel_class = LimitedChannel
        self.software = f"waitress {_waitress_version()}"
        self.server_port = self._server.effective_port
        self._stop = threading.Event()
        self._stopped = threading.Event()

    def serve_forever(self, poll_interval: float = 0.2) -> None:
        server = self._server
        try:
            while not self._stop.is_set():
                server.asyncore.loop(
                    timeout=poll_interval, map=server._map, use_poll=True, count=1
                )
        finally:
            import logging

            for channel in list(server._map.values()):
                try:
                    channel.close()
                except Exception:  # noqa: BLE001 - closing down: nothing left to tell
                    pass
            # Live streams still waiting end at their next write; waitress would log each.
            quiet = logging.getLogger("waitress")
            level, quiet.level = quiet.level, logging.ERROR
            try:
                server.task_dispatcher.shutdown(cancel_pending=True, timeout=1)
            finally:
                quiet.setLevel(level)
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop serving (from another thread) and wait until the loop has ended."""
        self._stop.set()
        if not self._stopped.is_set():
            try:
                self._server.pull_trigger()  # wake the loop now rather than at its next poll
            except OSError:  # its trigger is already closed: the loop is ending anyway
                pass
        self._stopped.wait(5)

    def server_close(self) -> None:
        self._stop.set()


def _waitress_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("waitress")
    except PackageNotFoundError:  # pragma: no cover
        return ""


def serve(
    app: Flask,
    host: str = "127.0.0.1",
    port: int = 5000,
    *,
    ready=None,
    threads: int = SERVER_THREADS,
    channel_timeout: int | None = None,
    max_streams: int = MAX_STREAMS,
) -> None:
    """Serve ``app`` with waitress (a production WSGI server) until interrupted.
    ``ready(server)`` is called once the socket is bound (tests and ``demo`` use it to learn
    the port, ``server.server_port``, or to stop it, ``server.shutdown()``)."""
    if not is_loopback(host) and not (app.config.get("JOIN_CODE") or app.config.get("READ_ONLY")):
        raise CompanionError(
            f"Serving on {host} lets other machines in: give a join code or make it read-only."
        )
    if is_loopback(host):
        # Only this machine can connect: also refuse pages that reach it under another name
        # (DNS rebinding), so that no web site can drive the app through a local browser.
        app.config["LOOPBACK_ONLY"] = True
    _check_port_free(host, port)
    try:
        server = Server(
            app,
            host,
            port,
            threads=threads,
            channel_timeout=channel_timeout,
            max_streams=max_streams,
        )
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or "the address is in use or not this machine's"
        raise CompanionError(f"Cannot listen on {host}:{port}: {reason}.") from None
    if ready is not None:
        ready(server)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:  # pragma: no cover - the normal way to stop it
        pass


def _check_port_free(host: str, port: int) -> None:
    """One clear sentence for a port already taken."""
    import socket

    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)
    except OSError:
        raise CompanionError(f"Cannot listen on {host}: no such address on this machine.") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as waitress does
        try:
            probe.bind(address)
        except OSError as exc:
            import errno

            hint = (
                "stop the other server or pick another --port"
                if exc.errno == errno.EADDRINUSE
                else "give an address of this machine, such as 127.0.0.1 or 0.0.0.0"
            )
            raise CompanionError(
                f"Cannot listen on {host}:{port}: {exc.strerror}; {hint}."
            ) from None


def interface_addresses() -> list[str]:
    """This machine's IPv4 addresses, read from its network interfaces (Linux), then from its
    host name; no traffic is sent. Loopback and link-local addresses are left out."""
    import socket

    found = []
    try:
        import fcntl
        import struct

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            for _, name in socket.if_nameindex():
                try:
                    packed = fcntl.ioctl(
                        probe.fileno(), 0x8915, struct.pack("256s", name[:15].encode())
                    )  # SIOCGIFADDR
                except OSError:  # an interface with no IPv4 address
                    continue
                found.append(socket.inet_ntoa(packed[20:24]))
    except (ImportError, OSError, AttributeError):  # not Linux
        pass
    try:
        found += [
            info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
        ]
    except OSError:
        pass
    usable = []
    for address in found:
        ip = ipaddress.ip_address(address)
        if not (ip.is_loopback or ip.is_link_local or ip.is_unspecified) and address not in usable:
            usable.append(address)
    # A home LAN's private address first: that is where the tablet is.
    return sorted(usable, key=lambda a: not ipaddress.ip_address(a).is_private)


def lan_address(host: str) -> str:
    """The address LAN tablets should type: ``host`` itself, or for a wildcard bind this
    machine's LAN address (a numeric one: a tablet often cannot resolve the machine's name)."""
    if host not in ("0.0.0.0", "::", ""):
        return host
    addresses = interface_addresses()
    return addresses[0] if addresses else "127.0.0.1"


def qr_text(data: str) -> str:
    """``data`` as a QR code drawn with block characters for a terminal."""
    import io

    import segno

    out = io.StringIO()
    segno.make(data, error="m").terminal(out=out, compact=True, border=2)
    return out.getvalue()

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
        (``retry: 1000``).
    GET /matches/<id>/seq?after=N&timeout=S
        Long-poll alternative: answers ``{"match": <id>, "seq": <last seq>}`` as soon as the
        last seq is greater than N, or after S seconds (default 20, at most 60) with the
        current seq. Without ``after`` it answers at once.

A follower that sees a new seq fetches ``GET /matches/<id>/board`` (the tally fragment).

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
``read_only=True`` nothing can be changed at all. ``serve`` on a loopback address also refuses
requests made under any other host name (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import secrets
import threading

from flask import Flask

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


def new_join_code() -> str:
    """A random 6-digit code, leading zeros kept."""
    return f"{secrets.randbelow(1_000_000):06d}"


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
        if not (join_code.isdigit() and 4 <= len(join_code) <= 12):
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
        MAX_CONTENT_LENGTH=64 * 1024,
        SEND_FILE_MAX_AGE_DEFAULT=3600,
    )
    app.extensions["companion_store"] = store
    app.extensions["companion_live"] = live

    from companion.web import auth, camera, hanamikoji, i18n, match, matches, views
    from companion.web import live as live_updates  # ``live`` here is the camera session

    i18n.init_app(app)
    views.init_app(app)
    auth.init_app(app)
    app.register_blueprint(matches.bp)
    app.register_blueprint(match.bp)
    app.register_blueprint(live_updates.bp)
    app.register_blueprint(camera.bp)
    app.register_blueprint(auth.bp)
    app.register_blueprint(hanamikoji.bp)
    return app


# Live streams hold a worker thread each for as long as they last: enough threads for a
# table's tablets and the benchmark's 20 followers, with room left for page requests.
SERVER_THREADS = 48
CHANNEL_TIMEOUT = 30  # seconds an idle or half-sent connection is kept before it is dropped


class Server:
    """A waitress server (production WSGI: requests are read whole before a worker thread
    sees them, idle and half-sent connections are dropped after ``channel_timeout``) with the
    small interface ``serve``'s callers use: ``server_port``, ``shutdown()``."""

    software = "waitress"

    def __init__(self, app, host, port, *, threads=SERVER_THREADS, channel_timeout=None):
        from waitress.server import create_server

        timeout = CHANNEL_TIMEOUT if channel_timeout is None else channel_timeout
        self._server = create_server(
            app,
            host=host.strip("[]"),
            port=port,
            threads=threads,
            channel_timeout=timeout,
            cleanup_interval=max(1, min(30, timeout // 2 or 1)),
            connection_limit=max(100, 4 * threads),
            ident="hanafuda-companion",
            clear_untrusted_proxy_headers=True,
            asyncore_use_poll=True,
        )
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
        self._server.pull_trigger()  # wake the loop now rather than at its next poll
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
        server = Server(app, host, port, threads=threads, channel_timeout=channel_timeout)
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

"""Serving the app: waitress with page and stream threads apart, the checks made before
listening (a LAN bind needs a join code or read-only; a port already taken is one sentence)."""

from __future__ import annotations

import logging
import re
import threading
from typing import TYPE_CHECKING

from companion import CompanionError
from companion.web.hosts import is_loopback

if TYPE_CHECKING:
    from flask import Flask

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
        tls=None,
    ):
        from waitress.server import create_server

        from companion.web.limits import SERVER_MAX_BYTES, LimitedChannel

        if tls is not None:  # an ssl.SSLContext: https and, for this machine alone, http
            from companion.web.tls import https_on_the_lan

            app = https_on_the_lan(app)
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
        if tls is not None:
            from companion.web.tls import secure_channel

            self._server.channel_class = secure_channel(LimitedChannel, tls)
        self.tls = tls is not None
        self.software = f"waitress {_waitress_version()}"
        self.server_port = self._server.effective_port
        self._stop = threading.Event()
        self._stopped = threading.Event()

    def serve_forever(self, poll_interval: float = 0.2) -> None:
        server = self._server
        try:
            while not self._stop.is_set():
                server.asyncore.loop(timeout=poll_interval, map=server._map, use_poll=True, count=1)
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
    """Serve ``app`` with waitress (a production WSGI server) until interrupted; in https
    too when ``app.config["TLS_FILES"]`` names a certificate and its key (``companion.web.tls``).
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
    tls = _tls_context(app.config.get("TLS_FILES"))
    try:
        server = Server(
            app,
            host,
            port,
            threads=threads,
            channel_timeout=channel_timeout,
            max_streams=max_streams,
            tls=tls,
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


def _tls_context(files):
    """The server's TLS context from (certificate, key), None without them; a certificate
    that cannot be read is one sentence."""
    if not files:
        return None
    import ssl

    from companion.web.tls import server_context

    try:
        return server_context(*files)
    except (OSError, ssl.SSLError) as exc:
        raise CompanionError(
            f"Cannot use the certificate {files[0]}: {getattr(exc, 'reason', None) or exc}; "
            "delete it and its key to have a new one made."
        ) from None


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

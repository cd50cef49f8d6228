"""Serving the app: waitress with pages and streams apart, the checks made before listening
(a LAN bind needs a join code or read-only; a port already taken is one sentence).

No machine on the LAN can take the server off the air for the others: a live tally's stream
costs no thread (``companion.web.stream_hub`` serves them all from one loop, within budgets per
address), a request's headers must arrive within ``HEADER_SECONDS``, one address holds at most
``CONNECTIONS_PER_ADDRESS`` connections, and when connections run short the idle and half-sent
ones of addresses that never entered the join code are closed first."""

from __future__ import annotations

import collections
import logging
import re
import ssl
import threading
import time
from typing import TYPE_CHECKING

from waitress.server import TcpWSGIServer
from waitress.task import WSGITask

from companion import CompanionError
from companion.web import stream_hub
from companion.web.hosts import is_loopback
from companion.web.limits import LimitedChannel
from companion.web.stream_hub import HUB_KEY, OWN_ADDRESSES, PARKED_KEY, StreamHub, budget_key

if TYPE_CHECKING:
    from flask import Flask

# Page requests share a fixed pool of worker threads. A live tally's stream and a long-poll
# are parked in the stream hub once their view has answered (no thread each); the camera's
# MJPEG stream (for tablets that entered the join code only) gets a thread of its own from a
# second pool, so that no number of tablets left open can keep a page waiting: past
# MAX_STREAMS they queue for a free one.
SERVER_THREADS = 48
MAX_STREAMS = 400
STREAM_PATHS = re.compile(r"^/live/stream\.mjpg$")
CHANNEL_TIMEOUT = 30  # seconds an idle connection is kept before it is dropped
# A request's headers must all arrive within HEADER_SECONDS of its first byte, and its body
# at MIN_BODY_BYTES_PER_SECOND on average after that: a connection that dribbles is closed.
HEADER_SECONDS = 10
MIN_BODY_BYTES_PER_SECOND = 16 * 1024
# Open connections (streams parked in the hub not counted): one address may hold
# CONNECTIONS_PER_ADDRESS (a browser opens six), one that entered the join code
# TRUSTED_CONNECTIONS_PER_ADDRESS; past CONNECTION_LIMIT in all, the idle and half-sent
# connections of others are closed, a tenth at a time, to make room.
CONNECTION_LIMIT = 1024
CONNECTIONS_PER_ADDRESS = 32
TRUSTED_CONNECTIONS_PER_ADDRESS = 128
# Page threads the requests of addresses that did not enter the join code may take at once, in
# all and each: a machine asking for pages as fast as it can shares the processor with the
# tablets instead of taking it (their requests wait their turn, address by address).
UNTRUSTED_PAGE_THREADS = 8
PAGE_THREADS_PER_ADDRESS = 4
ACCEPTS_PER_TURN = 256  # connections taken from the system's queue each time it has some


class StreamingDispatcher:
    """waitress's task dispatcher, split in two: pages go to a fixed pool of ``threads``;
    long-lived streams (``STREAM_PATHS``) to a second pool, grown by one thread whenever a
    stream arrives and every stream thread is taken, up to ``max_streams`` threads (a thread
    whose stream ended waits for the next one). A trusted tablet's page (``is_trusted``) goes
    first; the others' take at most ``UNTRUSTED_PAGE_THREADS`` threads, and one address
    ``PAGE_THREADS_PER_ADDRESS``, the rest waiting their turn address by address."""

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
        self._running: collections.Counter = collections.Counter()  # untrusted, per address
        self._running_untrusted = 0
        self._waiting: dict[str, collections.deque] = {}  # address -> its pages, in turn
        self.pages.set_thread_count(threads)

    @staticmethod
    def is_stream(channel) -> bool:
        requests = getattr(channel, "requests", None)
        path = getattr(requests[0], "path", "") if requests else ""
        return bool(STREAM_PATHS.match(path or ""))

    def is_trusted(self, channel) -> bool:
        """Whether the request comes from a tablet that entered the join code (told by the
        server's stream hub, ``Server``): its pages go before the others' in the queue."""
        return False

    def add_task(self, channel) -> None:
        if not self.is_stream(channel):
            if self.is_trusted(channel):
                pages = self.pages
                with pages.lock:
                    pages.queue.appendleft(channel)
                    pages.queue_cv.notify()
                return
            key = getattr(channel, "budget_key", "")
            with self._lock:
                if not self._may_start(key):
                    self._waiting.setdefault(key, collections.deque()).append(channel)
                    return
                self._started(key)
            self.pages.add_task(_CountedTask(channel, lambda: self._page_done(key)))
            return
        with self._lock:
            self.open_streams += 1
            threads = len(self.streams.threads)
            if self.open_streams > threads and threads < self.max_streams:
                self.streams.set_thread_count(threads + 1)
        self.streams.add_task(_CountedTask(channel, self._stream_done))

    def _may_start(self, key: str) -> bool:
        return (
            self._running_untrusted < UNTRUSTED_PAGE_THREADS
            and self._running[key] < PAGE_THREADS_PER_ADDRESS
        )

    def _started(self, key: str) -> None:
        self._running[key] += 1
        self._running_untrusted += 1

    def _page_done(self, key: str) -> None:
        """An untrusted page is answered: the next address's waiting page (in turn) starts."""
        with self._lock:
            self._running[key] -= 1
            if self._running[key] <= 0:
                del self._running[key]
            self._running_untrusted -= 1
            following = None
            for waiting_key in list(self._waiting):
                if self._may_start(waiting_key):
                    queue = self._waiting.pop(waiting_key)
                    following = waiting_key, queue.popleft()
                    if queue:  # to the end of the line: every address in turn
                        self._waiting[waiting_key] = queue
                    self._started(waiting_key)
                    break
        if following is not None:
            next_key, channel = following
            self.pages.add_task(_CountedTask(channel, lambda: self._page_done(next_key)))

    def _stream_done(self) -> None:
        with self._lock:
            self.open_streams -= 1

    def set_thread_count(self, count: int) -> None:
        self.pages.set_thread_count(count)

    def shutdown(self, cancel_pending: bool = True, timeout: float = 5) -> bool:
        with self._lock:
            waiting = [channel for queue in self._waiting.values() for channel in queue]
            self._waiting.clear()
        for channel in waiting:
            channel.cancel()
        streams = self.streams.shutdown(cancel_pending, timeout / 2)
        pages = self.pages.shutdown(cancel_pending, timeout / 2)
        return streams and pages


class _CountedTask:
    """A channel's request, counted until it has been served or cancelled."""

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


class ParkingTask(WSGITask):
    """waitress's task for one request, offering the app the server's stream hub
    (``HUB_KEY``); a response the app left parked (``PARKED_KEY``) is handed to the hub with
    its connection once its headers are known, and the task ends at once."""

    def get_environment(self):
        environ = super().get_environment()
        environ[HUB_KEY] = self.channel.server.stream_hub
        return environ

    def finish(self):
        follower = (self.environ or {}).pop(PARKED_KEY, None)
        if follower is None:
            return super().finish()
        if (
            self.wrote_header
            or not self.status.startswith("200")
            or self.request.command != "GET"
            or not self.channel.connected
        ):
            follower.close()
            return super().finish()
        head = self.build_response_header()  # no length: chunked, and closed at its end
        chunked = self.chunked_response
        self.wrote_header, self.chunked_response = True, False
        self.close_on_finish = True  # waitress lets go of the connection; the hub keeps it
        sock = self.channel.socket
        if isinstance(sock, ssl.SSLSocket):
            # OpenSSL's state cannot be duplicated: the hub takes this very connection, and the
            # channel, which closes its socket once the task ends, is left a stand-in instead.
            connection = sock
            self.channel.socket = _HandedOver(sock.fileno())
        else:
            try:
                connection = sock.dup()
            except OSError:  # the tablet is already gone
                follower.close()
                return None
        self.channel.server.stream_hub.adopt(connection, head, follower, chunked)
        return None


class _HandedOver:
    """What a channel keeps of a connection it handed to the stream hub: closing it closes
    nothing, and a stray read or write by the channel finds nothing to do."""

    def __init__(self, fd: int):
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        pass

    def shutdown(self, how) -> None:
        pass

    def pending(self) -> int:
        return 0

    def recv(self, *args, **kwargs) -> bytes:
        raise BlockingIOError

    def send(self, *args, **kwargs) -> int:
        return 0


class GuardedChannel(LimitedChannel):
    """A connection, counted by its address, timed from the first byte of each request."""

    task_class = ParkingTask
    request_started = 0.0
    counted = False

    def __init__(self, server, sock, addr, adj, map=None):
        self.budget_key = budget_key(addr[0] if isinstance(addr, tuple) else str(addr))
        super().__init__(server, sock, addr, adj, map=map)

    def add_channel(self, map=None):
        super().add_channel(map)
        if not self.counted:
            self.counted = True
            self.server.per_address[self.budget_key] += 1

    def del_channel(self, map=None):
        if self.counted:
            self.counted = False
            per_address = self.server.per_address
            per_address[self.budget_key] -= 1
            if per_address[self.budget_key] <= 0:
                del per_address[self.budget_key]
        super().del_channel(map)

    def received(self, data):
        if self.request is None and data:
            self.request_started = time.monotonic()
        return super().received(data)

    def too_slow(self, now: float) -> bool:
        """Whether the request being received has taken longer than it may."""
        request = self.request
        if request is None or self.requests or self.will_close:
            return False
        allowed = HEADER_SECONDS
        if request.headers_finished:
            allowed += max(request.content_length, request.body_bytes_received) / (
                MIN_BODY_BYTES_PER_SECOND
            )
        return now - self.request_started > allowed


class GuardedServer(TcpWSGIServer):
    """waitress's TCP server with connection budgets: it never stops accepting (a tablet's new
    connection is never left in the queue behind a stranger's), refuses an address's
    connection past its budget, and makes room by closing others' idle and half-sent ones."""

    stream_hub: StreamHub
    per_address: dict
    trusted_until: dict

    def guard(self, hub: StreamHub) -> None:
        self.stream_hub = hub
        self.per_address = collections.Counter()
        self.refused = 0  # connections refused for their address's budget (a figure for tests)
        self.shed = 0  # idle or half-sent connections closed to make room

    def readable(self):
        now = time.time()
        if now >= self.next_channel_cleanup:
            self.next_channel_cleanup = now + self.adj.cleanup_interval
            self.maintenance(now)
        return self.accepting

    def maintenance(self, now):
        super().maintenance(now)  # idle past channel_timeout
        mono = time.monotonic()
        for channel in list(self.active_channels.values()):
            if isinstance(channel, GuardedChannel) and channel.too_slow(mono):
                channel.will_close = True

    def handle_accept(self):
        # Every connection waiting, not one a turn: a refused stranger's is closed at once, and
        # a tablet's is not left in the system's queue behind theirs.
        for _ in range(ACCEPTS_PER_TURN):
            try:
                accepted = self.accept()
            except OSError:
                return
            if accepted is None:  # none left waiting
                return
            self._admit(*accepted)

    def _admit(self, conn, addr) -> None:
        key = budget_key(addr[0])
        if key in OWN_ADDRESSES:  # this machine (a kiosk, the benchmarks): not budgeted
            budget = self.adj.connection_limit
        elif self.stream_hub.is_trusted(key):
            budget = TRUSTED_CONNECTIONS_PER_ADDRESS
        else:
            budget = CONNECTIONS_PER_ADDRESS
        if self.per_address[key] >= budget:
            self.refused += 1
            conn.close()
            return
        if len(self._map) >= self.adj.connection_limit:
            self._make_room()
            if len(self._map) >= self.adj.connection_limit + CONNECTIONS_PER_ADDRESS:
                self.refused += 1
                conn.close()
                return
        try:
            self.set_socket_options(conn)
        except OSError:
            conn.close()
            return
        self.channel_class(self, conn, self.fix_addr(addr), self.adj, map=self._map)

    def _make_room(self) -> None:
        """Close a tenth of the connections that are not being served: first those of addresses
        that never entered the join code, the half-sent before the idle, oldest first."""
        hub = self.stream_hub
        idle = [
            channel
            for channel in self.active_channels.values()
            if isinstance(channel, GuardedChannel) and not channel.requests and not channel.will_close
        ]
        idle.sort(
            key=lambda c: (
                hub.is_trusted(c.budget_key),
                c.request is None,
                c.request_started if c.request is not None else c.last_activity,
            )
        )
        for channel in idle[: max(1, self.adj.connection_limit // 10)]:
            self.shed += 1
            channel.handle_close()


class Server:
    """A waitress server (production WSGI: requests are read whole before a worker thread
    sees them, a body over its route's limit is refused with 413 before it is read
    (``companion.web.limits``), idle connections are dropped after ``channel_timeout`` and
    half-sent ones after ``HEADER_SECONDS``; the tally's streams are parked in its
    ``stream_hub``) with the small interface ``serve``'s callers use: ``server_port``,
    ``shutdown()``."""

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

        from companion.web.limits import SERVER_MAX_BYTES

        if tls is not None:  # an ssl.SSLContext: https and, for this machine alone, http
            from companion.web.tls import https_on_the_lan

            app = https_on_the_lan(app)
        timeout = CHANNEL_TIMEOUT if channel_timeout is None else channel_timeout
        # Every connection and parked stream is an open file: as many as the system lets.
        files = _raise_open_files_limit() - 64  # the database, the models, the camera...
        connections = max(64, min(CONNECTION_LIMIT, files // 4))
        self.stream_hub = StreamHub(
            total=max(64, min(stream_hub.MAX_STREAMS, files - connections))
        )
        self.dispatcher = StreamingDispatcher(threads, max_streams)
        self._server = create_server(
            app,
            host=host.strip("[]"),
            port=port,
            threads=threads,
            channel_timeout=timeout,
            cleanup_interval=1,  # idle, slow and half-sent connections looked for each second
            connection_limit=connections,
            _dispatcher=self.dispatcher,
            ident="hanafuda-companion",
            clear_untrusted_proxy_headers=True,
            asyncore_use_poll=True,
            max_request_body_size=SERVER_MAX_BYTES,
        )
        if type(self._server) is not TcpWSGIServer:  # pragma: no cover - one TCP address only
            raise ValueError("one address to listen on")
        self._server.__class__ = GuardedServer
        self._server.guard(self.stream_hub)
        hub = self.stream_hub
        self.dispatcher.is_trusted = lambda channel: hub.is_trusted(
            getattr(channel, "budget_key", "")
        )
        # Each route's body limit checked when the headers end: a body over it is never read.
        self._server.channel_class = GuardedChannel
        if tls is not None:  # the same budgets, in https as in plain http
            from companion.web.tls import secure_channel

            self._server.channel_class = secure_channel(GuardedChannel, tls)
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
            self.stream_hub.shutdown()
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


def _raise_open_files_limit() -> int:
    """The process's limit on open files, raised to the most the system allows (each
    connection and parked stream holds one)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not Unix
        return 2048
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):  # pragma: no cover - refused: keep the present one
            pass
    return soft if soft != resource.RLIM_INFINITY else 65536


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

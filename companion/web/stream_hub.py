"""Live streams without a thread each: the server (``companion.web.serving``) hands every
parked response (a live tally's event stream, a long-poll waiting for a seq) to one
``StreamHub``, a small event loop of its own (``selectors``) that writes each follower's updates
as the match grows, its keep-alives and its end. A stream then costs a socket and a few hundred
bytes, not a thread: thousands of them cost little, and none of them keeps a page or another
tablet waiting.

Who may hold how many is budgeted when a stream is asked for (``reserve``): a tablet that
entered the join code (``trusted``) is never refused for the others' sake; the rest share
``UNTRUSTED_STREAMS`` and may hold ``STREAMS_PER_ADDRESS`` each, so that one machine on the LAN
cannot take the streams of the others.

A follower (``companion.web.tally_stream``) is any object with:

- ``match_id`` and ``trusted``;
- ``start() -> (bytes, done)``: the body's first bytes (written with the headers);
- ``changed(seq) -> (bytes, done)``: the match now ends at ``seq``;
- ``due(now) -> (bytes, done)`` and ``next_due() -> float`` (``time.monotonic``): its
  keep-alives and its end;
- ``close()``: the stream has ended, for whatever reason (called once).
"""

from __future__ import annotations

import collections
import ipaddress
import logging
import selectors
import socket
import ssl
import threading
import time

logger = logging.getLogger(__name__)

STREAMS_PER_ADDRESS = 8  # streams one address may hold without the join code
UNTRUSTED_STREAMS = 512  # streams without the join code, all addresses together
MAX_STREAMS = 4096  # every stream (also bounded by the process's open files)
MAX_BACKLOG_BYTES = 1024 * 1024  # unsent bytes of one stream before it is dropped
SCAN_SECONDS = 0.5  # how often keep-alives and ends are looked for
TRUSTED_SECONDS = 600  # an address that used the join code is trusted this long
MAX_TRUSTED_ADDRESSES = 4096
# The key of the WSGI environ under which the server offers its hub, and the one under which
# a view leaves the follower it wants parked there.
HUB_KEY = "companion.stream_hub"
PARKED_KEY = "companion.parked"


# The server's own machine: only it can send from these addresses (the system drops them
# arriving from a network), so its clients (a kiosk browser, the benchmarks) are not budgeted.
OWN_ADDRESSES = frozenset({"127.0.0.1", "::1"})


def budget_key(address: str) -> str:
    """The part of a client address budgets are counted by: an IPv4 address itself; for IPv6
    its /64 network, which one machine's interface holds whole."""
    try:
        ip = ipaddress.ip_address((address or "").split("%")[0])
    except ValueError:
        return address or "?"
    if ip.version == 6:
        if ip.ipv4_mapped:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


class Reservation:
    """One stream's place in the budgets, given back once (``release``)."""

    def __init__(self, hub: StreamHub, key: str, trusted: bool):
        self.hub, self.key, self.trusted = hub, key, trusted
        self.released = False

    def release(self) -> None:
        self.hub._release(self)


class _Stream:
    __slots__ = ("sock", "follower", "chunked", "out", "ending", "reservation", "due_at")

    def __init__(self, sock, follower, chunked, reservation):
        self.sock, self.follower, self.chunked = sock, follower, chunked
        self.reservation = reservation
        self.out = bytearray()
        self.ending = False
        self.due_at = 0.0


class StreamHub:
    """The parked streams of one server and the thread that serves them all."""

    def __init__(
        self,
        *,
        per_address: int | None = None,
        untrusted: int | None = None,
        total: int | None = None,
    ):
        self.per_address = STREAMS_PER_ADDRESS if per_address is None else per_address
        self.untrusted_limit = UNTRUSTED_STREAMS if untrusted is None else untrusted
        self.total_limit = MAX_STREAMS if total is None else total
        self._lock = threading.Lock()
        self._by_key: collections.Counter = collections.Counter()  # untrusted, per address
        self._untrusted = 0
        self._total = 0
        self._trusted: dict[str, float] = {}  # address -> when it last followed with the code
        self._adopted: collections.deque = collections.deque()
        self._grown: dict[int, int] = {}
        self._streams: dict[int, _Stream] = {}  # by file descriptor
        self._by_match: dict[int, dict[int, _Stream]] = {}
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._woken = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stream-hub", daemon=True)
        self._thread.start()

    # -- budgets (any thread) -----------------------------------------------------------------

    def reserve(self, address: str, trusted: bool) -> Reservation | None:
        """A place for one more stream from ``address``, or None when its budget is spent."""
        key = budget_key(address)
        trusted = trusted or key in OWN_ADDRESSES
        if trusted:
            self.trust(address)
        with self._lock:
            if self._total >= self.total_limit:
                return None
            if not trusted:
                if self._by_key[key] >= self.per_address:
                    return None
                if self._untrusted >= self.untrusted_limit:
                    return None
                self._by_key[key] += 1
                self._untrusted += 1
            self._total += 1
        return Reservation(self, key, trusted)

    def trust(self, address: str) -> None:
        """``address`` belongs to a tablet that entered the join code (it followed a match or
        made a change with it): trusted for ``TRUSTED_SECONDS``."""
        key = budget_key(address)
        with self._lock:
            self._trusted.pop(key, None)
            self._trusted[key] = time.monotonic()  # newest last
            while len(self._trusted) > MAX_TRUSTED_ADDRESSES:
                del self._trusted[next(iter(self._trusted))]

    def is_trusted(self, key: str) -> bool:
        """Whether the address (its ``budget_key``) is this machine's own or lately followed a
        match with the join code."""
        if key in OWN_ADDRESSES:
            return True
        when = self._trusted.get(key)
        return when is not None and time.monotonic() - when < TRUSTED_SECONDS

    def _release(self, reservation: Reservation) -> None:
        with self._lock:
            if reservation.released:
                return
            reservation.released = True
            self._total -= 1
            if not reservation.trusted:
                self._untrusted -= 1
                self._by_key[reservation.key] -= 1
                if self._by_key[reservation.key] <= 0:
                    del self._by_key[reservation.key]

    def counts(self) -> dict:
        with self._lock:
            return {
                "streams": self._total,
                "untrusted": self._untrusted,
                "addresses": len(self._by_key),
            }

    # -- handing over (any thread) ------------------------------------------------------------

    def adopt(self, sock: socket.socket, head: bytes, follower, chunked: bool) -> None:
        """Serve ``follower`` on ``sock`` (a connection of its own) from now on: ``head`` (the
        response's status line and headers) is sent first, then the follower's bytes."""
        if self._stop.is_set():
            sock.close()
            follower.close()
            return
        self._adopted.append((sock, head, follower, chunked))
        self._wake()
        if self._stop.is_set() and not self._thread.is_alive():  # stopped meanwhile
            self._close_adopted()

    def grown(self, match_id: int, seq: int) -> None:
        """A match now ends at ``seq`` (``SeqWatcher``'s listener): its followers hear of it."""
        with self._lock:
            if seq > self._grown.get(match_id, 0):
                self._grown[match_id] = seq
        self._wake()

    def _wake(self) -> None:
        if self._woken:
            return
        self._woken = True
        try:
            self._wake_w.send(b"x")
        except OSError:  # full (already woken) or closed (stopping)
            pass

    def shutdown(self, timeout: float = 2) -> None:
        self._stop.set()
        self._wake()
        self._thread.join(timeout)

    # -- the loop (its own thread) ------------------------------------------------------------

    def _run(self) -> None:
        next_scan = time.monotonic() + SCAN_SECONDS
        try:
            while not self._stop.is_set():
                try:
                    next_scan = self._turn(next_scan)
                except Exception:  # noqa: BLE001 - the loop serves every stream: it goes on
                    logger.exception("the stream loop failed once")
                    time.sleep(0.05)
        finally:
            for stream in list(self._streams.values()):
                self._drop(stream)
            self._close_adopted()
            self._selector.close()
            self._wake_r.close()
            self._wake_w.close()

    def _close_adopted(self) -> None:
        while True:
            try:
                sock, _head, follower, _chunked = self._adopted.popleft()
            except IndexError:
                return
            sock.close()
            self._close_follower(follower)

    def _turn(self, next_scan: float) -> float:
        """One turn of the loop: sockets ready, streams handed over, matches grown, and each
        ``SCAN_SECONDS`` the keep-alives and ends due. Returns the next scan's time."""
        timeout = max(0.0, next_scan - time.monotonic())
        for key, mask in self._selector.select(timeout):
            stream = key.data
            if stream is None:
                self._drain_wake()
                continue
            if mask & selectors.EVENT_READ:
                self._read(stream)
            if mask & selectors.EVENT_WRITE and stream.sock.fileno() in self._streams:
                self._flush(stream)
        self._take_adopted()
        self._tell_grown()
        now = time.monotonic()
        if now >= next_scan:
            self._scan(now)
            next_scan = now + SCAN_SECONDS
        return next_scan

    def _drain_wake(self) -> None:
        self._woken = False
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass

    def _take_adopted(self) -> None:
        while self._adopted:
            sock, head, follower, chunked = self._adopted.popleft()
            sock.setblocking(False)
            stream = _Stream(sock, follower, chunked, getattr(follower, "reservation", None))
            fd = sock.fileno()
            self._streams[fd] = stream
            self._by_match.setdefault(follower.match_id, {})[fd] = stream
            self._selector.register(sock, selectors.EVENT_READ, stream)
            stream.out += head
            self._step(stream, lambda f: f.start())

    def _tell_grown(self) -> None:
        with self._lock:
            grown, self._grown = self._grown, {}
        for match_id, seq in grown.items():
            followers = list(self._by_match.get(match_id, {}).values())
            # Tablets that entered the join code first: their tally goes out before the rest.
            followers.sort(key=lambda s: not s.follower.trusted)
            for stream in followers:
                self._step(stream, lambda f, seq=seq: f.changed(seq))

    def _scan(self, now: float) -> None:
        for stream in list(self._streams.values()):
            if not stream.ending and now >= stream.due_at:
                self._step(stream, lambda f: f.due(now))

    def _step(self, stream: _Stream, action) -> None:
        if stream.ending:
            return
        try:
            data, done = action(stream.follower)
        except Exception:  # noqa: BLE001 - one follower's fault ends its stream only
            logger.exception("a live stream failed; it is closed")
            self._drop(stream)
            return
        if data:
            stream.out += b"%X\r\n%s\r\n" % (len(data), data) if stream.chunked else data
        if done:
            stream.ending = True
            if stream.chunked:
                stream.out += b"0\r\n\r\n"
        else:
            try:
                stream.due_at = stream.follower.next_due()
            except Exception:  # noqa: BLE001
                stream.due_at = 0.0
        self._flush(stream)

    def _flush(self, stream: _Stream) -> None:
        if stream.out:
            try:
                sent = stream.sock.send(stream.out)
                del stream.out[:sent]
            except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                pass  # full for now (in https, OpenSSL says so with its own errors)
            except OSError:  # the tablet is gone
                self._drop(stream)
                return
        if len(stream.out) > MAX_BACKLOG_BYTES:  # a follower that does not read
            self._drop(stream)
            return
        if not stream.out and stream.ending:
            try:
                stream.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self._drop(stream)
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if stream.out else 0)
        try:
            self._selector.modify(stream.sock, events, stream)
        except (KeyError, ValueError, OSError):
            self._drop(stream)

    def _read(self, stream: _Stream) -> None:
        try:
            data = stream.sock.recv(65536)
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return
        except OSError:
            data = b""
        if not data:  # the tablet closed the connection (a reload, a closed tab)
            self._drop(stream)
        # Anything a client sends on a stream's connection is not read as a request: dropped.

    def _drop(self, stream: _Stream) -> None:
        fd = stream.sock.fileno()
        if fd >= 0 and self._streams.pop(fd, None) is not None:
            self._by_match.get(stream.follower.match_id, {}).pop(fd, None)
            if not self._by_match.get(stream.follower.match_id, True):
                del self._by_match[stream.follower.match_id]
            try:
                self._selector.unregister(stream.sock)
            except (KeyError, ValueError):
                pass
        try:
            stream.sock.close()
        except OSError:
            pass
        stream.ending = True
        self._close_follower(stream.follower)

    @staticmethod
    def _close_follower(follower) -> None:
        try:
            follower.close()
        except Exception:  # noqa: BLE001
            logger.exception("closing a live follower failed")

    @property
    def stream_count(self) -> int:
        return len(self._streams)

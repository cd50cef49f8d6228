"""Attacks on the tablet server's availability from one machine on the LAN, made on loopback:
connections that send their headers a line at a time (slow headers) and live streams held
open without the join code, while a tablet that entered the code follows a match. Bounded in
connections and seconds; the attacker's addresses are 127.0.0.2 and up, the tablet's
127.0.0.200 (127.0.0.1, the server's own machine, is not budgeted).

    python tests/lan_attack.py [--slow N] [--streams N] [--addresses K] [--seconds S]
                               [--root DIR] [--json]

serves a match from a server process of its own (``--root``: the checkout whose code it runs,
this one by default), opens the attacks, and prints for the joined tablet the seconds to its
first tally update on a new stream, to an update after an event and to an answer of
``/matches/N/seq``, with the server's threads and memory, before and during the attack.
``tests/test_lan_attack.py`` runs it small against a server in the test's own process.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOIN_CODE = "2718281828"
ATTACKER = "127.0.0.2"  # the first of the attacker's addresses (one machine may hold several)
# The joined tablet: another machine of the LAN, not the server's own 127.0.0.1 (which is
# never budgeted: only the server's machine can send from it).
TABLET = "127.0.0.200"


def attacker_addresses(count: int) -> list[str]:
    return [f"127.0.0.{2 + k}" for k in range(count)]


# ---------------------------------------------------------------------------------------------
# The joined tablet
# ---------------------------------------------------------------------------------------------


class Tablet:
    """A tablet that entered the join code (its session cookie) and follows one match."""

    def __init__(self, port: int, match_id: int, address: str = TABLET, timeout=20.0):
        self.port, self.match_id, self.address = int(port), match_id, address
        self.timeout = timeout
        self.cookie = ""
        conn = self._connection()
        conn.request("GET", "/join")
        reply = conn.getresponse()
        self.cookie = (reply.getheader("Set-Cookie") or "").split(";")[0]
        page = reply.read().decode("utf-8")
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        conn.request(
            "POST",
            "/join",
            body=f"csrf_token={token}&code={JOIN_CODE}",
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "Cookie": self.cookie,
            },
        )
        reply = conn.getresponse()
        reply.read()
        self.cookie = (reply.getheader("Set-Cookie") or self.cookie).split(";")[0]
        conn.close()
        if reply.status not in (200, 303):
            raise RuntimeError(f"the tablet could not join: {reply.status}")

    def _connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=self.timeout, source_address=(self.address, 0)
        )

    def open_stream(self):
        """A new live stream with the board (as the page follows): (seconds to its first
        update, the open response) or (None, None) if it got none within the timeout."""
        started = time.monotonic()
        conn = self._connection()
        try:
            conn.request(
                "GET",
                f"/matches/{self.match_id}/live?board=1&max_seconds=120",
                headers={"Cookie": self.cookie, "Accept": "text/event-stream"},
            )
            sock = conn.sock  # the response takes it over: kept to bound its reads
            reply = conn.getresponse()
            if reply.status != 200:
                conn.close()
                return None, None
            while not reply.readline().startswith(b"data:"):
                pass
            return time.monotonic() - started, (sock, reply)
        except OSError:
            conn.close()
            return None, None

    def seq_seconds(self) -> float | None:
        started = time.monotonic()
        conn = self._connection()
        try:
            conn.request("GET", f"/matches/{self.match_id}/seq", headers={"Cookie": self.cookie})
            reply = conn.getresponse()
            reply.read()
            return time.monotonic() - started if reply.status == 200 else None
        except OSError:
            return None
        finally:
            conn.close()


def close_stream(stream) -> None:
    sock, reply = stream
    reply.close()
    sock.close()


def wait_for_update(stream, seq: int, timeout: float) -> float | None:
    """Seconds until ``stream`` announces ``seq`` (or a later one), None past ``timeout``."""
    sock, reply = stream
    started = time.monotonic()
    sock.settimeout(timeout)
    try:
        while time.monotonic() - started < timeout:
            line = reply.readline()
            if not line:
                return None
            found = re.search(rb'"seq": (\d+)', line)
            if found and int(found.group(1)) >= seq:
                return time.monotonic() - started
    except OSError:
        return None
    return None


# ---------------------------------------------------------------------------------------------
# The attacks: one selector loop each, in a thread, bounded in connections and time
# ---------------------------------------------------------------------------------------------


class Attack(threading.Thread):
    """``count`` connections from ``addresses`` (round robin) to ``port``, each opened again
    when the server closes it, until ``stop()`` or ``seconds``. Subclasses say what each sends
    (``opening``) and what it does after (``tick``)."""

    pause = 0.05  # seconds before a connection the server closed is opened again

    def __init__(self, port: int, count: int, addresses: list[str], seconds: float):
        super().__init__(daemon=True)
        self.port, self.count, self.addresses, self.seconds = int(port), count, addresses, seconds
        self.selector = selectors.DefaultSelector()
        self.halt = threading.Event()
        self.opened = 0  # connections made
        self.closed_by_server = 0
        self.failed = 0  # connections that could not be made
        self.statuses: dict[int, int] = {}
        self.live: dict[int, dict] = {}

    def stop(self) -> None:
        self.halt.set()
        self.join(10)

    def held(self) -> int:
        """Connections the server holds open now (made and not closed by it)."""
        return len(self.live)

    def opening(self) -> bytes:
        raise NotImplementedError

    def tick(self, state: dict, now: float) -> None:
        pass

    def _open(self, slot: int) -> None:
        address = self.addresses[slot % len(self.addresses)]
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((address, 0))
            sock.settimeout(2)
            sock.connect(("127.0.0.1", self.port))
            sock.sendall(self.opening())
            sock.setblocking(False)
        except OSError:
            self.failed += 1
            sock.close()
            return
        self.opened += 1
        state = {"sock": sock, "slot": slot, "at": time.monotonic(), "head": b""}
        self.live[sock.fileno()] = state
        self.selector.register(sock, selectors.EVENT_READ, state)

    def run(self) -> None:
        deadline = time.monotonic() + self.seconds
        reopen: list[tuple[float, int]] = []
        for slot in range(self.count):
            if self.halt.is_set() or time.monotonic() > deadline:
                break
            self._open(slot)
        while not self.halt.is_set() and time.monotonic() < deadline:
            for key, _mask in self.selector.select(0.1):
                state = key.data
                try:
                    data = state["sock"].recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data:
                    if len(state["head"]) < 16:
                        state["head"] += data
                        if len(state["head"]) >= 12 and state["head"][:5] == b"HTTP/":
                            status = int(state["head"][9:12])
                            self.statuses[status] = self.statuses.get(status, 0) + 1
                    continue
                self.closed_by_server += 1
                self._forget(state)
                reopen.append((time.monotonic() + self.pause, state["slot"]))
            now = time.monotonic()
            for state in list(self.live.values()):
                self.tick(state, now)
            due = [slot for when, slot in reopen if when <= now]
            reopen = [(when, slot) for when, slot in reopen if when > now]
            for slot in due:
                self._open(slot)
        for state in list(self.live.values()):
            self._forget(state)
        self.selector.close()

    def _forget(self, state: dict) -> None:
        sock = state["sock"]
        self.live.pop(sock.fileno(), None)
        try:
            self.selector.unregister(sock)
        except (KeyError, ValueError):
            pass
        sock.close()


class SlowHeaders(Attack):
    """Each connection sends a request line, then one header line every ``interval``
    seconds, and never ends its headers."""

    def __init__(self, port, count, addresses, seconds, interval: float = 10.0):
        super().__init__(port, count, addresses, seconds)
        self.interval = interval

    def opening(self) -> bytes:
        return b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"

    def tick(self, state, now):
        if now - state["at"] >= self.interval:
            state["at"] = now
            try:
                state["sock"].send(b"X-Slow: a\r\n")
            except OSError:
                pass


class HeldStreams(Attack):
    """Each connection asks for the live tally for an hour without the join code and never
    reads it."""

    def __init__(self, port, count, addresses, seconds, match_id: int = 1):
        super().__init__(port, count, addresses, seconds)
        self.match_id = match_id
        self.pause = 0.5  # a refused stream is asked for again, as a browser's EventSource would

    def opening(self) -> bytes:
        return (
            f"GET /matches/{self.match_id}/live?max_seconds=3600 HTTP/1.1\r\n"
            "Host: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
        ).encode()

    def streams(self) -> int:
        return self.statuses.get(200, 0)


def fan_out(port: int, tablet: Tablet, appender, count: int, events: int = 3) -> dict:
    """``count`` live streams of joined tablets (with the board, as the page follows), then
    ``events`` events one by one: the seconds until every stream announced each (worst)."""
    selector = selectors.DefaultSelector()
    request = (
        f"GET /matches/{tablet.match_id}/live?board=1&max_seconds=600 HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nCookie: {tablet.cookie}\r\nAccept: text/event-stream\r\n\r\n"
    ).encode()
    tails: dict = {}
    opened_at = time.monotonic()
    for k in range(count):
        # As many tablets: 20 streams an address (127.0.1.1 and up).
        source = (f"127.0.1.{1 + k // 20}", 0)
        sock = socket.create_connection(("127.0.0.1", int(port)), 10, source)
        sock.sendall(request)
        sock.setblocking(False)
        tails[sock] = b""
        selector.register(sock, selectors.EVENT_READ)

    def read_until(seq: int, seconds: float) -> int:
        """Streams that announced ``seq`` within ``seconds``."""
        wanted = f'"seq": {seq}'.encode()
        done: set = set()
        deadline = time.monotonic() + seconds
        while len(done) < count and time.monotonic() < deadline:
            for key, _ in selector.select(0.2):
                sock = key.fileobj
                try:
                    data = sock.recv(262144)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    selector.unregister(sock)
                    continue
                tails[sock] = tails[sock][-64:] + data
                if wanted in tails[sock]:
                    done.add(sock)
        return len(done)

    first_seq = appender.store.last_seq(appender.match_id) if hasattr(appender, "store") else 0
    connected = read_until(first_seq, 60) if first_seq else count
    report = {"streams": count, "connected": connected}
    report["connect_s"] = round(time.monotonic() - opened_at, 3)
    worst = 0.0
    for _ in range(events):
        started = time.monotonic()
        seq = appender.append()
        seen = read_until(seq, 30)
        worst = max(worst, time.monotonic() - started)
        report.setdefault("seen", []).append(seen)
    report["event_to_all_s"] = round(worst, 3)
    for sock in tails:
        sock.close()
    selector.close()
    return report


class PageFlood(Attack):
    """Each connection asks for the match page and is opened again as soon as it is answered:
    as many page requests as the server answers."""

    def __init__(self, port, count, addresses, seconds, match_id: int = 1):
        super().__init__(port, count, addresses, seconds)
        self.match_id = match_id
        self.pause = 0.0

    def opening(self) -> bytes:
        return (
            f"GET /matches/{self.match_id} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Connection: close\r\n\r\n"
        ).encode()


# ---------------------------------------------------------------------------------------------
# The server, in a process of its own (the script) or given (the tests)
# ---------------------------------------------------------------------------------------------

SERVER = """
import sys
sys.path.insert(0, {root!r})
from companion.store import MatchStore
from companion.web import create_app
from companion.web.serving import serve
store = MatchStore.open({db!r})
match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
store.append(match_id, {{"type": "round_started"}})
app = create_app(store, join_code={code!r})
serve(app, "127.0.0.1", 0, ready=lambda s: print(s.server_port, match_id, flush=True))
"""


def process_figures(pid: int) -> dict:
    """The server process's threads and resident memory (Linux)."""
    figures = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("Threads:"):
                    figures["threads"] = int(line.split()[1])
                elif line.startswith("VmRSS:"):
                    figures["rss_mb"] = round(int(line.split()[1]) / 1024, 1)
        figures["open_files"] = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        pass
    return figures


class Appender:
    """Appends events to the match through a store of its own on the same file (as the CLI
    or a second server would): the server's watcher sees them."""

    def __init__(self, db: Path, match_id: int):
        from companion.store import MatchStore

        self.store = MatchStore.open(db)
        self.match_id = match_id
        self.n = 0

    def append(self) -> int:
        self.n += 1
        if self.n % 2:
            event = {"type": "card_captured", "player": "Aki", "card": "01-1"}
        else:
            event = {"type": "undo"}
        return self.store.append(self.match_id, event).seq

    def close(self) -> None:
        self.store.close()


def measure_tablet(tablet: Tablet, appender: Appender, samples: int, timeout: float) -> dict:
    """The joined tablet, ``samples`` times: a new stream's first update, an update after an
    event appended, and ``/seq``. Returns the worst of each (None: not within ``timeout``)."""
    first, update, seq = [], [], []
    for _ in range(samples):
        seconds, stream = tablet.open_stream()
        first.append(seconds)
        if stream is not None:
            wanted = appender.append()
            started = time.monotonic()
            seen = wait_for_update(stream, wanted, timeout)
            update.append(None if seen is None else time.monotonic() - started)
            close_stream(stream)
        else:
            update.append(None)
        seq.append(tablet.seq_seconds())
        time.sleep(0.2)

    def worst(values):
        return None if any(v is None for v in values) else round(max(values), 3)

    return {"first_update_s": worst(first), "update_s": worst(update), "seq_s": worst(seq)}


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def run(
    slow: int,
    streams: int,
    addresses: int,
    seconds: float,
    root: Path = ROOT,
    samples: int = 5,
    followers: int = 0,
    pages: int = 0,
) -> dict:
    """Both attacks, one after the other, against a server process running ``root``'s code."""
    report = {"root": str(root), "slow_headers": slow, "streams": streams, "addresses": addresses}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "attack.db"
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER.format(root=str(root), db=str(db), code=JOIN_CODE)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            port, match_id = (int(x) for x in server.stdout.readline().split())
            tablet = Tablet(port, match_id, timeout=10.0)
            appender = Appender(db, match_id)
            report["before"] = measure_tablet(tablet, appender, 2, 5.0)
            report["before"].update(process_figures(server.pid))
            addrs = attacker_addresses(addresses)
            # Each attack lasts while the tablet is measured (each sample takes at most 3 x 10 s).
            bound = seconds + samples * 35
            for name, attack in (
                ("slow", SlowHeaders(port, slow, addrs, bound)),
                ("held", HeldStreams(port, streams, addrs, bound, match_id)),
                ("pages", PageFlood(port, pages, addrs, bound, match_id)),
            ):
                if not attack.count:
                    continue
                attack.start()
                time.sleep(seconds)  # the attack at full strength
                held = attack.held()
                during = measure_tablet(tablet, appender, samples, 10.0)
                during.update(process_figures(server.pid))
                during["attacker_connections_held"] = max(held, attack.held())
                during["attacker_statuses"] = dict(attack.statuses)
                attack.stop()
                time.sleep(2)
                during["after"] = process_figures(server.pid)
                during["load_average"] = load_average()
                report[name] = during
            if followers:
                report["fan_out"] = fan_out(port, tablet, appender, followers)
                report["fan_out"].update(process_figures(server.pid))
                report["fan_out"]["load_average"] = load_average()
            appender.close()
        finally:
            server.kill()
            server.wait()
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slow", type=int, default=1500, help="slow-header connections")
    parser.add_argument("--streams", type=int, default=1000, help="held live streams")
    parser.add_argument("--addresses", type=int, default=1, help="attacker addresses")
    parser.add_argument(
        "--seconds", type=float, default=20, help="each attack's length before the tablet is measured"
    )
    parser.add_argument(
        "--pages", type=int, default=0, help="connections asking for pages as fast as they can"
    )
    parser.add_argument(
        "--followers", type=int, default=0, help="then this many joined streams and 3 events"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout the server runs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the attacker's sockets
    except (ImportError, ValueError, OSError):
        pass
    report = run(
        args.slow,
        args.streams,
        args.addresses,
        args.seconds,
        args.root,
        followers=args.followers,
        pages=args.pages,
    )
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"server code: {report['root']}")
    print(f"before: {report['before']}")
    for name, what, count in (
        ("slow", "slow-header connections", args.slow),
        ("held", "held streams", args.streams),
        ("pages", "connections asking for pages", args.pages),
    ):
        if name in report:
            r = report[name]
            print(
                f"{count} {what} from {args.addresses} address(es): joined tablet's first update "
                f"{r['first_update_s']} s, update {r['update_s']} s, /seq {r['seq_s']} s "
                f"(worst of 5; None: not within 10 s); server threads {r.get('threads')}, "
                f"{r.get('rss_mb')} MB, {r.get('open_files')} open files; the attacker's "
                f"sockets connected at its end {r['attacker_connections_held']} (those the "
                f"server refused but the attacker has not yet seen closed counted), answers "
                f"{r['attacker_statuses']}; after: {r['after']}; load {r['load_average']}"
            )
    if "fan_out" in report:
        f = report["fan_out"]
        print(
            f"{f['streams']} joined streams with the board: {f['connected']} connected in "
            f"{f['connect_s']} s; an event reached all of them in {f['event_to_all_s']} s "
            f"(worst of {len(f['seen'])}, seen by {f['seen']}); server threads "
            f"{f.get('threads')}, {f.get('rss_mb')} MB; load {f['load_average']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

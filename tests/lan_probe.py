"""A probe of the tablet server as a stranger on the LAN and a clumsy user would make it: every
route with malformed input, malformed HTTP on the wire, join codes guessed from many addresses,
and a huge body. Loopback only; bounded in requests and time.

    python tests/lan_probe.py [--per-route N] [--seed S] [--json]

prints the figures (requests sent, answers 5xx, join codes judged per second from 30
addresses, bytes read of a refused 300 MB body); ``tests/test_lan_probe.py`` runs it smaller and
asserts that no answer is 5xx.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import random
import re
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: this checkout's package
    sys.path.insert(0, str(ROOT))

from companion.store import MatchStore  # noqa: E402
from companion.web import create_app  # noqa: E402
from companion.web.serving import serve  # noqa: E402

JOIN_CODE = "3141592653"

# Values a form field or a query argument may be sent with: what a fuzzer, a clumsy user or a
# stranger sends. Valid values are mixed in so that requests reach the deeper checks.
BAD_VALUES = [
    "",
    " ",
    "\x00",
    "\n",
    "\t",
    "\r\n",
    "٣",
    "٤",
    "²",
    "१२",
    "９",
    "9" * 5000,
    "-" + "9" * 30,
    "99999999999999999999",
    "-1",
    "0",
    "1e30",
    "1e400",
    "Infinity",
    "-Infinity",
    "NaN",
    "nan",
    "inf",
    "0x10",
    "1_000",
    "[",
    "{",
    "[]",
    "{}",
    '{"a":' * 50,
    "[" * 2000,
    "%",
    "%zz",
    "%00",
    "<script>alert(1)</script>",
    "'\"><img src=x>",
    "é" * 300,
    "A" * 5000,
    "\u202eikA",
    "null",
    "true",
    "../../etc/passwd",
    "//evil.example/",
    "/\\evil.example/",
    "javascript:alert(1)",
    "\x1b[2J",
    "Aki\x00",
    " Aki ",
]
VALID_VALUES = {
    "type": [
        "card_captured",
        "capture_checked",
        "capture_corrected",
        "capture_removed",
        "koi_called",
        "stop_called",
        "hand_declared",
        "field_brights_set",
        "cards_ran_out",
        "round_started",
        "redeal",
        "undo",
        "round_entered",
        "items_set",
        "round_scored",
        "match_started",
    ],
    "player": ["Aki", "Ben", "A", "B", "Chie"],
    "winner": ["Aki", "Ben"],
    "oya": ["Aki", "Ben", "1", "2"],
    "card": ["01-1", "08-1", "12-4", "moon", "13-1", "00-0"],
    "new_card": ["01-2", "08-1"],
    "kind": ["teshi", "kuttsuki", "dealt_yaku"],
    "declare": ["teshi", "kuttsuki", "dealt_yaku"],
    "count": ["0", "1", "3", "5", "9"],
    "points": ["0", "6", "12"],
    "geisha": ["ayane", "ruri", "1", "7"],
    "rules": ["livret", "hanamikoji", "koikoi-japan", "sloper"],
    "rounds": ["6", "12", "3"],
    "first": ["1", "2"],
    "archived": ["0", "1"],
    "code": [JOIN_CODE, "0000000000"],
    "zone_field": ["0.1,0.3 0.9,0.3 0.9,0.7 0.1,0.7", "0,0 1,1 1,0 0,1"],
    "zone_draw_pile": ["0.86,0.36 0.99,0.36 0.99,0.64"],
    "after": ["0", "1", "5"],
    "plain": ["1"],
    "propose": ["1"],
    "lang": ["fr", "ja", "xx"],
    "next": ["/", "/stats"],
}
FIELDS = sorted(
    set(VALID_VALUES)
    | {
        "title",
        "player_1",
        "player_2",
        "player_3",
        "player_4",
        "team_1",
        "team_2",
        "options_for",
        "opt_gaji",
        "opt_nothing",
        "reset",
        "field_brights",
        "max_seconds",
        "timeout",
        "expected_seq",
        "request_id",
    }
)
# Arguments that make a live route wait: the probe keeps them short so it stays bounded.
WAITING = {"max_seconds", "timeout"}


class FakeCamera:
    """A camera session as the web pages see it (docs/LIVE.md), with a password in its URL."""

    def __init__(self, zone_file: Path):
        from companion.live.zones import default_zones

        self.zones = default_zones(2)
        self.zone_file = zone_file

    def status(self):
        return {
            "camera": "live",
            "source": "stream rtsp://admin:probe-secret@192.0.2.9/x",
            "fps": 10.0,
            "frames": 3,
            "match_id": 1,
            "message": "",
        }

    def latest_jpeg(self, annotated=True):
        return b"\xff\xd8\xff\xd9"

    snapshot_jpeg = latest_jpeg

    def crop_jpeg(self, player, card):
        return None

    def set_zones(self, zones):
        zones.save(self.zone_file)
        self.zones = zones

    def field_boxes(self):
        return []


def _store(folder: Path) -> tuple[MatchStore, dict[str, int]]:
    store = MatchStore.open(folder / "probe.db")
    koikoi = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    store.append(koikoi, {"type": "round_started"})
    store.append(koikoi, {"type": "card_captured", "player": "Aki", "card": "01-1"})
    teams = (
        store.create_match(
            players=["Aki", "Ben", "Chie", "Dan"],
            rules="koikoi-japan",
            oya="Aki",
            options={"teams": True},
        )
        if _has_option("koikoi-japan", "teams")
        else koikoi
    )
    hanamikoji = store.create_hanamikoji_match(["Aki", "Ben"])
    return store, {"koikoi": koikoi, "teams": teams, "hanamikoji": hanamikoji}


def _has_option(preset: str, option: str) -> bool:
    from companion.game.rules import RuleSet

    return any(o.id == option for o in RuleSet.load(preset).options)


def _value(rng: random.Random, field: str) -> str:
    valid = VALID_VALUES.get(field)
    if valid and rng.random() < 0.3:
        return rng.choice(valid)
    if field in WAITING:
        return rng.choice(["0", "", "-1", "nan", "inf", "9" * 5000, "٣", "1e30", "x"])
    return rng.choice(BAD_VALUES)


EVENT_FIELDS = {  # a valid form of each event type: the probe spoils one or two of its fields
    "card_captured": {"player": "Aki", "card": "01-2"},
    "capture_checked": {"player": "Aki", "card": "01-1"},
    "capture_corrected": {"player": "Aki", "card": "01-1", "new_card": "01-2"},
    "capture_removed": {"player": "Aki", "card": "01-1"},
    "koi_called": {"player": "Aki"},
    "stop_called": {"player": "Aki"},
    "hand_declared": {"player": "Ben", "kind": "teshi", "card": ["03-1", "03-2", "03-3", "03-4"]},
    "field_brights_set": {"count": "1"},
    "cards_ran_out": {},
    "round_started": {"oya": "Aki", "field_brights": "0"},
    "redeal": {},
    "undo": {},
    "round_entered": {"winner": "Aki", "points": "6", "oya": "Aki"},
}


def _templates(endpoint: str, ids: dict, rng: random.Random, export: dict) -> tuple[dict, dict]:
    """(query, form) of a valid request to ``endpoint``, for the probe to spoil."""
    if endpoint == "matches.options":
        return {
            "rules": rng.choice(VALID_VALUES["rules"]),
            "options_for": "livret",
            "opt_gaji": "on",
            "rounds": "6",
            "oya": "1",
            "player_1": "Aki",
        }, {}
    if endpoint == "matches.create":
        return {}, {
            "rules": rng.choice(VALID_VALUES["rules"]),
            "player_1": "Aki",
            "player_2": "Ben",
            "rounds": "6",
            "oya": "1",
            "first": "1",
            "title": "T",
            "opt_gaji": "on",
            "team_1": "Red",
            "team_2": "White",
        }
    if endpoint == "matches.rename":
        return {}, {"title": "Friday"}
    if endpoint == "matches.archive":
        return {}, {"archived": "1"}
    if endpoint == "matches.import_match":
        return {}, {"file": export}
    if endpoint == "match.picker":
        return {"player": "Aki", "card": "01-1", "declare": "teshi"}, {}
    if endpoint == "match.record":
        kind = rng.choice(sorted(EVENT_FIELDS))
        return {}, {"type": kind, **EVENT_FIELDS[kind]}
    if endpoint == "hanamikoji.record":
        return {}, {
            "type": rng.choice(["items_set", "round_scored", "undo"]),
            "player": "A",
            "geisha": "ayane",
            "count": "1",
        }
    if endpoint in ("live.live", "camera.stream"):
        return {"max_seconds": "0", "plain": "1"}, {}
    if endpoint == "live.seq":
        return {"after": "0", "timeout": "0"}, {}
    if endpoint == "camera.crop":
        return {"player": "Aki", "card": "01-1"}, {}
    if endpoint == "camera.frame":
        return {"plain": "1"}, {}
    if endpoint == "camera.calibrate":
        return {"propose": "1", "saved": "saved"}, {}
    if endpoint == "camera.save_calibration":
        return {}, {"zone_field": VALID_VALUES["zone_field"][0], "reset": ""}
    if endpoint == "auth.join":
        return {"code": JOIN_CODE, "next": "/"}, {"code": JOIN_CODE, "next": "/stats"}
    return {}, {}


def _spoil_export(rng: random.Random, export: dict) -> bytes:
    """An export file with one value somewhere replaced by what no export holds."""
    data = json.loads(json.dumps(export))
    spots = []

    def walk(node):
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in list(items):
            spots.append((node, key))
            if isinstance(value, dict | list):
                walk(value)

    walk(data)
    node, key = rng.choice(spots)
    text = None
    choice = rng.randrange(8)
    if choice == 0:
        node[key] = "[" * 900 + "]" * 900
        text = json.dumps(data).replace('"' + "[" * 900 + "]" * 900 + '"', "[" * 900 + "]" * 900)
    elif choice == 1:
        node[key] = 1e308
        text = json.dumps(data).replace("1e+308", rng.choice(["Infinity", "NaN", "1e400"]), 1)
    elif choice == 2:
        node[key] = 10**30
    elif choice == 3:
        node[key] = "9" * 5000
        text = json.dumps(data).replace('"' + "9" * 5000 + '"', "9" * 5000)
    elif choice == 4:
        node[key] = rng.choice(BAD_VALUES)
    elif choice == 5:
        node[key] = rng.choice([None, True, [], {}, -1, 0.5])
    elif choice == 6:
        return rng.choice(BAD_VALUES).encode("utf-8", "replace")
    else:
        if isinstance(node, dict):
            del node[key]
    return (text if text is not None else json.dumps(data)).encode("utf-8", "surrogatepass")


def _spoil(rng: random.Random, values: dict) -> dict:
    """``values`` with one to three fields spoiled, dropped, or added."""
    values = dict(values)
    for _ in range(rng.randint(1, 3)):
        field = rng.choice(sorted(values) + FIELDS) if values else rng.choice(FIELDS)
        if field == "file":
            continue
        if rng.random() < 0.15:
            values.pop(field, None)
        else:
            values[field] = _value(rng, field)
    return values


def fuzz_routes(per_route: int = 12, seed: int = 75) -> dict:
    """Every route of the app, each method, with a valid request spoiled in one to three of
    its query arguments or form fields (or its match id), through the WSGI app itself: a
    crash is answered as the server would answer it, a 500. Three apps: a tablet that entered
    the join code, a stranger who did not, and a server with no camera.
    Returns {"requests", "status": Counter, "fivexx": [(method, url, status)]}."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store, ids = _store(folder)
        export = store.export_match(ids["koikoi"])
        camera = FakeCamera(folder / "zones.toml")
        apps = {
            "joined": create_app(store, join_code=JOIN_CODE, live=camera),
            "stranger": create_app(store, join_code=JOIN_CODE, live=camera),
            "no camera": create_app(store),
        }
        counts: Counter = Counter()
        failures: list[tuple[str, str, int]] = []
        sent = 0
        for name, app in apps.items():
            client = app.test_client()
            page = client.get("/").get_data(as_text=True)
            token = re.search(r'"X-CSRF-Token": "([^"]+)"', page).group(1)
            if name == "joined":
                client.post("/join", data={"csrf_token": token, "code": JOIN_CODE})
            rules = [r for r in app.url_map.iter_rules() if r.endpoint != "static"]
            for rule in rules:
                methods = sorted((rule.methods or set()) - {"OPTIONS"})
                for method in methods:
                    for n in range(per_route):
                        match_id = ids[
                            "hanamikoji"
                            if "hanamikoji" in rule.rule
                            else rng.choice(["koikoi", "teams"])
                        ]
                        if rule.endpoint == "matches.delete":  # a match of its own to delete
                            match_id = store.create_match(
                                players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki"
                            )
                        ident = str(match_id)
                        if n % 4 == 3:  # an id that is no match
                            ident = rng.choice(["0", "9" * 25, "٤", "%D9%A4", "-1", "1.0", "²"])
                        path = rule.rule.replace("<int:match_id>", ident)
                        query, form = _templates(rule.endpoint, ids, rng, export)
                        if method == "POST":
                            form = _spoil(rng, form) if rng.random() < 0.9 else form
                            form.setdefault("request_id", uuid.uuid4().hex)
                            if "expected_seq" not in form and match_id in ids.values():
                                form["expected_seq"] = str(store.last_seq(match_id))
                            if rng.random() < 0.9:
                                form["csrf_token"] = token
                            if "file" in form:
                                body = (
                                    _spoil_export(rng, form["file"])
                                    if rng.random() < 0.9
                                    else json.dumps(form["file"]).encode()
                                )
                                form["file"] = (io.BytesIO(body), "m.json")
                        else:
                            query = _spoil(rng, query) if rng.random() < 0.9 else query
                        for waiting in WAITING & set(query):  # never wait: stay bounded
                            if query[waiting] not in ("", "0") and _is_small_number(query[waiting]):
                                query[waiting] = "0"
                        headers = {"HX-Request": "true"} if rng.random() < 0.5 else {}
                        response = client.open(
                            path,
                            method=method,
                            query_string=query,
                            headers=headers,
                            data=form if method == "POST" else None,
                        )
                        sent += 1
                        counts[response.status_code] += 1
                        if response.status_code >= 500:
                            failures.append((method, path, response.status_code))
                        response.close()
        sent_damaged, failures_damaged = _fuzz_damaged(folder, rng)
        sent += sent_damaged
        failures += failures_damaged
        store.close()
    return {"requests": sent, "status": counts, "fivexx": failures}


def _is_small_number(text: str) -> bool:
    try:
        return 0 < float(text) <= 3600
    except ValueError:
        return False


def _fuzz_damaged(folder: Path, rng: random.Random) -> tuple[int, list]:
    """The pages of a database whose matches' page is garbage, and one whose file was
    deleted while served: every answer must be a sentence (4xx), none a 500."""
    import sqlite3

    path = folder / "damaged.db"
    store = MatchStore.open(path)
    ids = [
        store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
        for _ in range(3)
    ]
    hanamikoji = store.create_hanamikoji_match(["Aki", "Ben"])
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'matches'").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * 4096 + 8 : root * 4096] = b"\xa5" * (4096 - 8)
    path.write_bytes(bytes(data))
    sent, failures = 0, []
    store = MatchStore.open(path)
    client = create_app(store).test_client()
    for match_id in ids + [hanamikoji]:
        for suffix in (
            "",
            "/board",
            "/picker?player=Aki",
            "/summary",
            "/export",
            "/seq",
            "/hanamikoji",
            "/hanamikoji/board",
            "/live?max_seconds=0",
        ):
            for headers in ({}, {"HX-Request": "true"}):
                response = client.get(f"/matches/{match_id}{suffix}", headers=headers)
                sent += 1
                if response.status_code >= 500:
                    failures.append(
                        ("GET", f"damaged /matches/{match_id}{suffix}", response.status_code)
                    )
                response.close()
    for url in ("/", "/stats"):
        response = client.get(url)
        sent += 1
        if response.status_code >= 500:
            failures.append(("GET", f"damaged {url}", response.status_code))
    store.close()
    return sent, failures


# ---------------------------------------------------------------------------------------------
# On the wire: the real server (waitress) on a loopback port
# ---------------------------------------------------------------------------------------------


class Served:
    def __init__(self, app, count_bytes: bool = False):
        self.app = app
        self.servers = []
        self.read = Counter()  # bytes read by the server, per connection, when counted
        self.count_bytes = count_bytes

    def __enter__(self):
        def ready(server):
            if self.count_bytes:
                from companion.web.limits import LimitedChannel

                read = self.read

                class Counting(LimitedChannel):
                    def received(self, data):
                        read[id(self)] += len(data)
                        return super().received(data)

                server._server.channel_class = Counting
            self.servers.append(server)

        self.thread = threading.Thread(
            target=serve,
            args=(self.app, "127.0.0.1", 0),
            kwargs={"ready": ready, "channel_timeout": 3},
            daemon=True,
        )
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.servers and time.monotonic() < deadline:
            time.sleep(0.01)
        self.port = self.servers[0].server_port
        return self

    def __exit__(self, *exc):
        self.servers[0].shutdown()
        self.thread.join(timeout=5)


def _exchange(port: int, raw: bytes, timeout: float = 4.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(raw)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        answer = b""
        try:
            while len(answer) < 65536:
                more = s.recv(65536)
                if not more:
                    break
                answer += more
        except OSError:
            pass
    return answer


MALFORMED_HTTP = [
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n",
    b"POST /matches HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + b"9" * 30 + b"\r\n\r\n",
    b"POST /matches HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n",
    b"POST /matches HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"POST /matches HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
    b"Content-Length: 5\r\n\r\n0\r\n\r\n",
    b"POST /matches HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\n"
    b"Content-Length: 900000000\r\n\r\n",
    b"GET /\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bad: a\x00b\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " + b"a" * 300_000 + b"\r\n\r\n",
    b"GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    b"GET / HTTP/1.1\r\n\r\n",
    b"GET /matches/%D9%A4 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET /%5Cevil.example/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET /matches/" + b"9" * 5000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"GET / HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n",
    b"\r\n\r\n\r\n",
    b"GET /?" + b"a=%ff&" * 2000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"POST /join HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=x"
    b"\r\nContent-Length: 20\r\n\r\n--x\r\nbroken\r\n\r\n",
]


def fuzz_wire(app) -> dict:
    """Malformed HTTP, each on its own connection. Returns requests and 5xx answers."""
    counts: Counter = Counter()
    failures = []
    with Served(app) as server:
        for raw in MALFORMED_HTTP:
            answer = _exchange(server.port, raw)
            status = int(answer[9:12]) if answer[:5] == b"HTTP/" and answer[9:12].isdigit() else 0
            counts[status] += 1
            if status >= 500:
                failures.append((raw[:60], status))
    return {"requests": len(MALFORMED_HTTP), "status": counts, "fivexx": failures}


def huge_body(app, declared: int = 300 * 1024 * 1024, pushed: int = 32 * 1024 * 1024) -> dict:
    """A POST declaring ``declared`` bytes, without the join code; the client pushes up to
    ``pushed`` bytes of it until the server answers. Returns the answer's status, the body
    bytes the server read, those the client managed to send, and the seconds to the answer."""
    with Served(app, count_bytes=True) as server:
        head = (
            f"POST /matches HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {declared}\r\n\r\n"
        ).encode()
        chunk = b"x" * 65536
        started = time.monotonic()
        sent, answer = 0, b""
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            s.sendall(head)
            s.setblocking(False)
            for _ in range(16):  # a client that does not wait for an answer: 1 MB at once
                try:
                    sent += s.send(chunk)
                except OSError:
                    break
            while sent < pushed and time.monotonic() - started < 10:
                try:
                    answer += s.recv(4096)
                    if answer:
                        break
                except BlockingIOError:
                    pass
                except OSError:
                    break
                try:
                    sent += s.send(chunk)
                except BlockingIOError:
                    time.sleep(0.001)
                except OSError:
                    break
            seconds = time.monotonic() - started
            s.setblocking(True)
            s.settimeout(2)
            try:
                while not answer.count(b"\r\n\r\n"):
                    more = s.recv(4096)
                    if not more:
                        break
                    answer += more
            except OSError:
                pass
        time.sleep(0.2)  # the server's last reads before it hung up
        read = sum(server.read.values()) - len(head)
    status = int(answer[9:12]) if answer[:5] == b"HTTP/" else 0
    return {
        "status": status,
        "declared": declared,
        "server_read_body_bytes": max(read, 0),
        "client_sent_body_bytes": sent,
        "seconds": round(seconds, 3),
    }


def guesses(app, total: int = 300, addresses: int = 30, workers: int = 10) -> dict:
    """``total`` wrong join codes from ``addresses`` loopback addresses (127.0.0.2...), as
    fast as ``workers`` threads send them. Returns how many were judged (403: the server
    compared them) and refused unjudged (429), and judged per second."""
    counts: Counter = Counter()
    lock = threading.Lock()
    with Served(app) as server:

        def session(address):
            conn = http.client.HTTPConnection(
                "127.0.0.1", server.port, timeout=10, source_address=(address, 0)
            )
            try:
                conn.connect()
            except OSError:  # a system with only 127.0.0.1: one address, still bounded
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            conn.request("GET", "/join")
            response = conn.getresponse()
            cookie = response.getheader("Set-Cookie", "").split(";")[0]
            page = response.read().decode("utf-8")
            token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
            return conn, cookie, token

        todo = list(range(total))

        def work(k):
            address = f"127.0.0.{2 + k % addresses}"
            conn, cookie, token = session(address)
            while True:
                with lock:
                    if not todo:
                        break
                    n = todo.pop()
                address_n = f"127.0.0.{2 + n % addresses}"
                if address_n != address:
                    conn.close()
                    address = address_n
                    conn, cookie, token = session(address)
                body = f"csrf_token={token}&code={n:010d}"
                conn.request(
                    "POST",
                    "/join",
                    body=body,
                    headers={
                        "Content-Type": "application/x-www-form-urlencoded",
                        "Cookie": cookie,
                    },
                )
                response = conn.getresponse()
                response.read()
                with lock:
                    counts[response.status] += 1
            conn.close()

        started = time.monotonic()
        threads = [threading.Thread(target=work, args=(k,)) for k in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.monotonic() - started
    judged = counts[403]
    return {
        "sent": total,
        "addresses": addresses,
        "judged": judged,
        "refused": counts[429],
        "other": {k: v for k, v in counts.items() if k not in (403, 429)},
        "seconds": round(seconds, 2),
        "judged_per_second": round(judged / seconds, 2),
    }


IMPORT_SERVER = """
import sys
sys.path.insert(0, {root!r})
from companion.store import MatchStore
from companion.web import create_app
from companion.web.serving import serve
store = MatchStore.open({db!r})
serve(create_app(store), "127.0.0.1", 0, ready=lambda s: print(s.server_port, flush=True))
"""


def concurrent_imports(count: int = 40, events: int = 13_800) -> dict:
    """``count`` imports of a ~4 MB export (``events`` events, refused at its replay, as a
    damaged or hostile file is) sent at once to a server in its own process: its peak memory
    (VmHWM, Linux) before and after, and the answers."""
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        store = MatchStore.open(Path(tmp) / "m.db")
        match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
        export = store.export_match(match_id)
        store.close()
        first = export["events"][0]
        row = {"event": {"type": "round_started", "oya": "Aki"}, "created_at": first["created_at"]}
        export["events"] = [first] + [
            dict(row, seq=n, request_id="r" * 150 + str(n)) for n in range(2, events)
        ]
        data = json.dumps(export).encode()
        server = subprocess.Popen(
            [
                sys.executable,
                "-c",
                IMPORT_SERVER.format(root=str(ROOT), db=str(Path(tmp) / "s.db")),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            port = int(server.stdout.readline())

            def peak() -> int:
                with open(f"/proc/{server.pid}/status") as status:
                    return next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))

            before = peak()
            answers: Counter = Counter()

            def one():
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                conn.request("GET", "/")
                reply = conn.getresponse()
                page = reply.read().decode()
                cookie = (reply.getheader("Set-Cookie") or "").split(";")[0]
                token = re.search(r'"X-CSRF-Token": "([^"]+)"', page).group(1)
                mark = uuid.uuid4().hex
                body = (
                    (
                        f'--{mark}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n'
                        f'{token}\r\n--{mark}\r\nContent-Disposition: form-data; name="file"; '
                        'filename="m.json"\r\nContent-Type: application/json\r\n\r\n'
                    ).encode()
                    + data
                    + f"\r\n--{mark}--\r\n".encode()
                )
                try:
                    conn.request(
                        "POST",
                        "/matches/import",
                        body=body,
                        headers={
                            "Content-Type": f"multipart/form-data; boundary={mark}",
                            "Cookie": cookie,
                        },
                    )
                    reply = conn.getresponse()
                    reply.read()
                    answers[reply.status] += 1
                except OSError:
                    answers["connection closed"] += 1

            started = time.monotonic()
            threads = [threading.Thread(target=one) for _ in range(count)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return {
                "imports": count,
                "file_bytes": len(data),
                "peak_kb_before": before,
                "peak_kb_after": peak(),
                "answers": dict(answers),
                "seconds": round(time.monotonic() - started, 1),
            }
        finally:
            server.kill()
            server.wait()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-route", type=int, default=12)
    parser.add_argument("--seed", type=int, default=75)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--guesses", type=int, default=300, help="wrong join codes to send")
    parser.add_argument(
        "--imports",
        type=int,
        default=0,
        help="also send this many ~4 MB imports at once to a server process (Linux): its memory",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    routes = fuzz_routes(args.per_route, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        store = MatchStore.open(Path(tmp) / "wire.db")
        store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
        wire = fuzz_wire(create_app(store))
        body = huge_body(create_app(store, join_code=JOIN_CODE))
        joins = guesses(create_app(store, join_code=JOIN_CODE), total=args.guesses)
        store.close()
    report = {
        "requests": routes["requests"] + wire["requests"],
        "fivexx": len(routes["fivexx"]) + len(wire["fivexx"]),
        "routes": {
            "requests": routes["requests"],
            "status": dict(routes["status"]),
            "fivexx": routes["fivexx"][:20],
        },
        "wire": {
            "requests": wire["requests"],
            "status": dict(wire["status"]),
            "fivexx": wire["fivexx"],
        },
        "huge_body": body,
        "join_guesses": joins,
        "imports": concurrent_imports(args.imports) if args.imports else None,
        "seconds": round(time.monotonic() - started, 1),
    }
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print(
            f"requests sent: {report['requests']} ({routes['requests']} to every route, "
            f"{wire['requests']} malformed on the wire); answers 5xx: {report['fivexx']}"
        )
        print(f"route statuses: {dict(sorted(routes['status'].items()))}")
        print(f"wire statuses: {dict(sorted(wire['status'].items()))}")
        print(
            f"refused huge body: declared {body['declared']} bytes, answered "
            f"{body['status']} in {body['seconds']} s; the server read "
            f"{body['server_read_body_bytes']} bytes of it (the client pushed "
            f"{body['client_sent_body_bytes']} into the socket buffers)"
        )
        print(
            f"join codes: {joins['sent']} wrong codes from {joins['addresses']} addresses in "
            f"{joins['seconds']} s: {joins['judged']} judged ({joins['judged_per_second']} "
            f"per second), {joins['refused']} refused unjudged (429)"
        )
        imports = report["imports"]
        if imports:
            print(
                f"imports: {imports['imports']} files of {imports['file_bytes']} bytes at once: "
                f"server peak memory {imports['peak_kb_before'] // 1024} MB before, "
                f"{imports['peak_kb_after'] // 1024} MB after; answers {imports['answers']} "
                f"in {imports['seconds']} s"
            )
        print(f"probe took {report['seconds']} s")
        for failure in report["routes"]["fivexx"] + report["wire"]["fivexx"]:
            print("5xx:", failure)
    return 1 if report["fivexx"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""How the server names itself: Host headers, IPv6 URLs and the LAN address tablets join."""

from __future__ import annotations

import ipaddress
import json

import pytest

from companion import web
from companion.web import hosts, serving


@pytest.mark.parametrize(
    "header, name",
    [
        ("[::1]:5000", "::1"),
        ("[::1]", "::1"),
        ("LOCALHOST:80", "localhost"),
        ("127.0.0.1", "127.0.0.1"),
        ("rebound.example:5000", "rebound.example"),
        ("[fe80::1%eth0]:80", "fe80::1%eth0"),
    ],
)
def test_host_name_drops_the_port_and_ipv6_brackets(header, name):
    assert hosts.host_name(header) == name


def test_loopback_host_names_are_recognised_and_others_are_not():
    for header in ["[::1]:5000", "localhost:5000", "127.0.0.1:5000", "127.1.2.3"]:
        assert hosts.is_loopback(hosts.host_name(header)), header
    for header in ["rebound.example:5000", "192.0.2.7:5000", "[2001:db8::1]:80"]:
        assert not hosts.is_loopback(hosts.host_name(header)), header


def test_an_ipv6_address_is_bracketed_in_urls():
    assert hosts.url_host("::1") == "[::1]"
    assert hosts.url_host("[::1]") == "[::1]"
    assert hosts.url_host("192.0.2.7") == "192.0.2.7"
    assert hosts.url_host("tablet.local") == "tablet.local"


def test_a_wildcard_bind_names_a_numeric_lan_address(monkeypatch):
    monkeypatch.setattr(hosts, "interface_addresses", lambda: ["192.168.1.20", "203.0.113.9"])
    assert hosts.lan_address("0.0.0.0") == "192.168.1.20"
    assert hosts.lan_address("::") == "192.168.1.20"
    assert hosts.lan_address("192.0.2.7") == "192.0.2.7"  # an explicit address stays


def test_interface_addresses_are_usable_numeric_addresses():
    for address in hosts.interface_addresses():
        ip = ipaddress.ip_address(address)  # numeric, never a host name
        assert not (ip.is_loopback or ip.is_link_local or ip.is_unspecified)


def test_no_lan_address_falls_back_to_loopback_rather_than_an_unresolvable_name(monkeypatch):
    monkeypatch.setattr(hosts, "interface_addresses", lambda: [])
    assert hosts.lan_address("0.0.0.0") == "127.0.0.1"


# ---------------------------------------------------------------------------------------------
# Live tablets do not keep pages waiting
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def small_server(tmp_path):
    """A server with 4 page threads over a match; yields (port, match id)."""
    import threading
    import time

    from companion.store import MatchStore

    store = MatchStore.open(tmp_path / "m.db")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", oya="Aki")
    app = web.create_app(store)
    servers = []
    thread = threading.Thread(
        target=serving.serve,
        args=(app, "127.0.0.1", 0),
        kwargs={"ready": servers.append, "threads": 4},
        daemon=True,
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not servers and time.monotonic() < deadline:
        time.sleep(0.02)
    assert servers
    yield servers[0].server_port, match_id
    servers[0].shutdown()
    thread.join(5)


def test_a_page_is_answered_while_more_tablets_follow_than_there_are_page_threads(small_server):
    """Each live stream holds a thread for as long as it lasts: 12 streams on a server with
    4 page threads used to leave every page waiting for one of them to end."""
    import http.client

    port, match_id = small_server
    streams = []
    try:
        for _ in range(12):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", f"/matches/{match_id}/live?max_seconds=30&board=1")
            reply = conn.getresponse()
            assert reply.status == 200
            assert reply.readline().startswith(b"retry:")  # the stream is being served
            streams.append(conn)
        page = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        page.request("GET", f"/matches/{match_id}")
        reply = page.getresponse()
        assert reply.status == 200 and b'id="board"' in reply.read()
        page.close()
    finally:
        for conn in streams:
            conn.close()


def test_streams_get_threads_of_their_own_up_to_a_bound():
    import threading

    from companion.web.serving import StreamingDispatcher

    class Request:
        def __init__(self, path):
            self.path = path

    class Channel:
        def __init__(self, path, release):
            self.requests = [Request(path)]
            self.release, self.started = release, threading.Event()

        def service(self):
            self.started.set()
            self.release.wait(10)

        def cancel(self):
            self.release.set()

    release = threading.Event()
    dispatcher = StreamingDispatcher(threads=1, max_streams=2)
    try:
        streams = [Channel("/live/stream.mjpg", release) for _ in range(3)]
        for channel in streams:
            dispatcher.add_task(channel)
        page = Channel("/matches/1", threading.Event())
        page.release.set()
        dispatcher.add_task(page)
        assert page.started.wait(5)  # the page is served though every stream thread is taken
        assert streams[0].started.wait(5) and streams[1].started.wait(5)
        assert not streams[2].started.wait(0.2)  # the third waits: two stream threads at most
        assert len(dispatcher.streams.threads) == 2
        release.set()
        assert streams[2].started.wait(5)
        assert StreamingDispatcher.is_stream(Channel("/live/stream.mjpg", release))
        # The tally's streams are parked in the stream hub once answered: no thread of their own.
        for path in ("/matches/7", "/matches/7/board", "/live", "/live/frame.jpg", "/matches/7/live"):
            assert not StreamingDispatcher.is_stream(Channel(path, release))
    finally:
        release.set()
        dispatcher.shutdown(timeout=2)


# ---------------------------------------------------------------------------------------------
# Streams parked in the hub: no thread each, nothing left behind when they end
# ---------------------------------------------------------------------------------------------


def _followers(app) -> int:
    watcher = app.extensions.get("companion_watcher")
    return sum(watcher.followers.values()) if watcher else 0


def _until(condition, seconds: float = 5.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


@pytest.fixture
def served_match(tmp_path):
    """A served match (no join code, loopback); yields (server, app, store, match id)."""
    from web_support import ServedApp

    from companion.store import MatchStore

    store = MatchStore.open(tmp_path / "m.db")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", oya="Aki")
    app = web.create_app(store)
    with ServedApp(app) as running:
        yield running.servers[0], app, store, match_id
    store.close()


def test_a_parked_stream_ends_with_its_connection_and_leaves_no_follower(served_match):
    import socket
    import threading

    def threads():  # the watcher's own thread (one per app) aside
        return sum(t.name != "seq-watcher" for t in threading.enumerate())

    server, app, store, match_id = served_match
    before = threads()
    with socket.create_connection(("127.0.0.1", int(server.server_port)), timeout=5) as s:
        s.sendall(f"GET /matches/{match_id}/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        assert b"retry: 1000" in s.recv(65536) or b"retry: 1000" in s.recv(65536)
        assert server.stream_hub.counts()["streams"] == 1 and _followers(app) == 1
        assert threads() == before  # no thread of its own
    assert _until(lambda: server.stream_hub.counts()["streams"] == 0 and _followers(app) == 0)


def test_a_parked_stream_carries_each_update_and_ends_after_max_seconds(served_match):
    import http.client
    import time

    server, app, store, match_id = served_match
    conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=10)
    conn.request("GET", f"/matches/{match_id}/live?max_seconds=1.5")
    reply = conn.getresponse()
    assert reply.status == 200 and reply.getheader("Content-Type").startswith("text/event-stream")
    started = time.monotonic()
    store.append(match_id, {"type": "round_started"})
    body = reply.read()  # to its end: the chunked body is closed properly
    assert time.monotonic() - started < 5
    assert body.startswith(b"retry: 1000\n") and b'"seq": 2' in body
    assert _until(lambda: _followers(app) == 0 and server.stream_hub.counts()["streams"] == 0)


def test_a_parked_long_poll_answers_as_soon_as_the_match_grows(served_match):
    import http.client
    import threading
    import time

    server, app, store, match_id = served_match
    conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=10)
    conn.request("GET", f"/matches/{match_id}/seq?after=1&timeout=20")
    threading.Timer(0.3, lambda: store.append(match_id, {"type": "round_started"})).start()
    started = time.monotonic()
    reply = conn.getresponse()
    assert reply.status == 200
    assert json.loads(reply.read()) == {"match": match_id, "seq": 2}
    assert time.monotonic() - started < 5
    assert _until(lambda: _followers(app) == 0)


def test_head_on_a_live_route_leaves_no_follower(app, client, match_id):
    for url in (f"/matches/{match_id}/live", f"/matches/{match_id}/seq?after=5&timeout=1"):
        response = client.head(url)
        assert response.status_code == 200
        response.close()  # as a WSGI server does once it has sent the answer
        assert _followers(app) == 0, url


def test_stream_budgets_count_an_ipv6_machine_by_its_network():
    from companion.web.stream_hub import StreamHub, budget_key

    assert budget_key("192.0.2.7") == "192.0.2.7"
    assert budget_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert budget_key("2001:db8:1:2::5") == budget_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert budget_key("fe80::1%eth0") == "fe80::/64"
    hub = StreamHub(per_address=2, untrusted=3, total=5)
    try:
        taken = [hub.reserve(f"2001:db8:1:2::{n}", trusted=False) for n in range(3)]
        assert taken[2] is None  # two per machine, whatever address of its network it uses
        assert hub.reserve("192.0.2.7", trusted=False) is not None
        assert hub.reserve("192.0.2.8", trusted=False) is None  # three without the code
        assert hub.reserve("192.0.2.8", trusted=True) is not None  # with it: not refused
        taken[0].release()
        taken[0].release()  # once only
        assert hub.counts() == {"streams": 3, "untrusted": 2, "addresses": 2}
    finally:
        hub.shutdown()


def test_the_hub_writes_a_followers_bytes_in_chunks_and_ends_its_stream():
    import socket
    import time

    from companion.web.stream_hub import StreamHub

    class Follower:
        match_id, trusted, closed = 1, True, False

        def start(self):
            return b"first", False

        def changed(self, seq):
            return b"seq %d" % seq, seq >= 3

        def due(self, now):
            return b"", False

        def next_due(self):
            return time.monotonic() + 60

        def close(self):
            self.closed = True

    hub = StreamHub()
    server_side, client_side = socket.socketpair()
    follower = Follower()
    try:
        hub.adopt(server_side, b"HEAD\r\n\r\n", follower, chunked=True)
        hub.grown(1, 2)
        hub.grown(1, 3)
        client_side.settimeout(5)
        data = b""
        while more := client_side.recv(65536):
            data += more
    finally:
        client_side.close()
        hub.shutdown()
    assert data.startswith(b"HEAD\r\n\r\n5\r\nfirst\r\n")
    assert data.endswith(b"5\r\nseq 3\r\n0\r\n\r\n")  # the last update, then the end
    assert follower.closed and hub.stream_count == 0

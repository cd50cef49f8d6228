"""How the server names itself: Host headers, IPv6 URLs and the LAN address tablets join."""

from __future__ import annotations

import ipaddress

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
        streams = [Channel("/matches/1/live", release) for _ in range(3)]
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
        for path in ("/live/stream.mjpg", "/matches/7/seq", "/matches/7/live"):
            assert StreamingDispatcher.is_stream(Channel(path, release))
        for path in ("/matches/7", "/matches/7/board", "/live", "/live/frame.jpg"):
            assert not StreamingDispatcher.is_stream(Channel(path, release))
    finally:
        release.set()
        dispatcher.shutdown(timeout=2)

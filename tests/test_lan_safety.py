"""Safe on a shared network (issue 75): a stranger on the LAN, requests that gave a 500, and
what is stored. Each test fails on the code before the fix."""

from __future__ import annotations

import html
import io
import json
import math
import os
import re
import socket
import sqlite3
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from web_support import ServedApp, csrf, message

from companion import CompanionError
from companion.store import MatchStore, StoreError
from companion.web import create_app

HX = {"HX-Request": "true"}


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


class Running(ServedApp):
    """The app under the real server (waitress) on a free loopback port, idle connections
    dropped after 5 s."""

    def __init__(self, app):
        super().__init__(app, channel_timeout=5)

    def raw(self, head: bytes, body: bytes = b"", timeout: float = 5.0) -> tuple[bytes, int]:
        """Send ``head`` then ``body`` in pieces until the server answers; (answer, body
        bytes the client could send before the answer came)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall(head)
            sent = 0
            s.setblocking(False)
            answer = b""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                try:
                    answer += s.recv(65536)
                    if answer:
                        break
                except BlockingIOError:
                    pass
                except (ConnectionResetError, BrokenPipeError):
                    break
                if sent < len(body):
                    try:
                        sent += s.send(body[sent : sent + 65536])
                    except (BlockingIOError, ConnectionResetError, BrokenPipeError):
                        pass
                time.sleep(0.001)
            s.setblocking(True)
            s.settimeout(1)
            try:
                while len(answer) < 64 * 1024:
                    more = s.recv(65536)
                    if not more:
                        break
                    answer += more
            except (OSError, TimeoutError):
                pass
            return answer, sent


# ---------------------------------------------------------------------------------------------
# 1. A stranger on the LAN
# ---------------------------------------------------------------------------------------------


def test_a_huge_declared_body_is_refused_with_413_before_it_is_read(store, match_id):
    app = create_app(store, join_code="1234567890")
    with Running(app) as server:
        for path in ("/matches", f"/matches/{match_id}/events", "/join", "/matches/import"):
            head = (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                f"Content-Length: {300 * 1024 * 1024}\r\n\r\n"
            ).encode()
            started = time.monotonic()
            answer, sent = server.raw(head, b"x" * (8 * 1024 * 1024))
            assert answer.startswith(b"HTTP/1.1 413"), (path, answer[:80])
            assert b"too large" in answer
            assert time.monotonic() - started < 4, path  # not after reading 300 MB
            assert sent < 8 * 1024 * 1024, path  # the body was not read to its end


def test_each_route_has_its_own_body_limit_at_the_server(store, match_id):
    app = create_app(store)
    with Running(app) as server:
        form = b"a=" + b"x" * (200 * 1024)  # more than a form, less than an import
        head = (
            f"POST /matches/{match_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(form)}"
            "\r\n\r\n"
        ).encode()
        answer, _ = server.raw(head, form)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:80]
        # The same size to the import is read and judged by the page (no CSRF token: 400).
        head = head.replace(f"/matches/{match_id}/events".encode(), b"/matches/import")
        answer, _ = server.raw(head, form)
        assert answer.startswith(b"HTTP/1.1 400"), answer[:80]


def test_a_chunked_body_is_cut_off_at_the_route_limit(store, match_id):
    app = create_app(store)
    with Running(app) as server:
        chunk = b"x" * 16384
        body = (f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n") * 200  # 3.2 MB, never ends
        head = (
            b"POST /matches HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n\r\n"
        )
        answer, sent = server.raw(head, body)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:80]
        assert sent < len(body)


def test_the_app_refuses_a_large_declared_body_before_the_join_code_and_csrf(store, match_id):
    client = create_app(store, join_code="1234567890", testing=True).test_client()
    big = {"player_1": "A" * (100 * 1024)}
    response = client.post("/matches", data=big)
    assert response.status_code == 413  # not 403 after reading it
    assert "too large" in message(response)


class Clock:
    """A clock the test moves: the budgets' refill, without waiting."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def budgets_on(app, clock):
    from companion.web import auth

    app.extensions["companion_join_budgets"] = {
        "first": auth.GuessBudget(auth.FIRST_TRIES_PER_SECOND, auth.GUESS_BURST, clock),
        "known": auth.GuessBudget(auth.KNOWN_TRIES_PER_SECOND, auth.GUESS_BURST, clock),
        "retry": auth.GuessBudget(auth.RETRIES_PER_SECOND, auth.GUESS_BURST, clock),
    }


def guessed_per_second() -> float:
    """Codes a guesser gets judged a second at most: first tries, each address's one typo
    (the known lane, fed only by first tries), retries."""
    from companion.web import auth

    first = auth.FIRST_TRIES_PER_SECOND
    return first + min(first, auth.KNOWN_TRIES_PER_SECOND) + auth.RETRIES_PER_SECOND


def test_join_codes_judged_per_second_are_bounded_whatever_the_address(store):
    from companion.web import auth

    app = create_app(store, join_code="9876543210", testing=True)
    clock = Clock()
    budgets_on(app, clock)
    client = app.test_client()
    token = csrf(client)
    judged = 0
    for n in range(300):  # 300 guesses from 30 addresses in 3 seconds (100 a second)
        response = client.post(
            "/join",
            data={"csrf_token": token, "code": f"{n:010d}"},
            environ_base={"REMOTE_ADDR": f"10.1.{n % 30}.7"},
        )
        assert response.status_code in (403, 429)
        judged += response.status_code == 403
        clock.now += 0.01
    assert judged <= 3 * auth.GUESS_BURST + guessed_per_second() * clock.now + 1, judged
    assert judged < 50  # of 300


def test_a_player_who_types_the_code_right_gets_in_while_a_guesser_floods(store):
    app = create_app(store, join_code="9876543210", testing=True)
    clock = Clock()
    budgets_on(app, clock)
    guesser, player = app.test_client(), app.test_client()
    token = csrf(guesser)
    for n in range(300):  # wrong codes from 30 addresses, 100 a second, for 3 seconds
        guesser.post(
            "/join",
            data={"csrf_token": token, "code": f"{n:010d}"},
            environ_base={"REMOTE_ADDR": f"10.2.{n % 30}.7"},
        )
        clock.now += 0.01
    refused = guesser.post(
        "/join",
        data={"csrf_token": token, "code": "0000000001"},
        environ_base={"REMOTE_ADDR": "10.2.1.7"},
    )
    assert refused.status_code == 429  # the guessers' budget is spent
    right = player.post(
        "/join",
        data={"csrf_token": csrf(player), "code": "987 654 3210"},  # as read out, spaced
        environ_base={"REMOTE_ADDR": "10.2.200.7"},
    )
    assert right.status_code == 303
    with player.session_transaction() as session:
        assert session.get("joined") == "9876543210"


def test_a_player_who_mistyped_once_gets_in_while_a_guesser_floods(store):
    app = create_app(store, join_code="9876543210", testing=True)
    clock = Clock()
    budgets_on(app, clock)
    guesser, player = app.test_client(), app.test_client()
    token, mine = csrf(guesser), csrf(player)
    here = {"REMOTE_ADDR": "10.3.200.7"}
    typo = player.post("/join", data={"csrf_token": mine, "code": "9876543211"}, environ_base=here)
    assert typo.status_code == 403
    for n in range(2000):  # wrong codes from 30 addresses, 100 a second, for 20 seconds
        guesser.post(
            "/join",
            data={"csrf_token": token, "code": f"{n:010d}"},
            environ_base={"REMOTE_ADDR": f"10.3.{n % 30}.7"},
        )
        clock.now += 0.01
    flooded = guesser.post(
        "/join", data={"csrf_token": token, "code": "1"}, environ_base={"REMOTE_ADDR": "10.3.1.7"}
    )
    assert flooded.status_code == 429  # the guessers' budgets are spent
    right = player.post("/join", data={"csrf_token": mine, "code": "9876543210"}, environ_base=here)
    assert right.status_code == 303
    # and once joined, the address is known: a new tablet there is judged in the flood too
    tablet = app.test_client()
    for n in range(300):
        guesser.post(
            "/join",
            data={"csrf_token": token, "code": f"{n:010d}"},
            environ_base={"REMOTE_ADDR": f"10.3.{n % 30}.8"},
        )
        clock.now += 0.01
    again = tablet.post(
        "/join", data={"csrf_token": csrf(tablet), "code": "9876543210"}, environ_base=here
    )
    assert again.status_code == 303


def test_head_join_with_the_code_and_no_csrf_token_joins_nothing(store):
    client = create_app(store, join_code="1234567890", testing=True).test_client()
    client.get("/")
    response = client.open("/join", method="HEAD", data={"code": "1234567890"})
    assert response.status_code == 200
    with client.session_transaction() as session:
        assert "joined" not in session
    token = csrf(client)
    response = client.post("/matches", data={"csrf_token": token, "player_1": "A"})
    assert response.status_code == 403


@pytest.mark.parametrize("digits", ["٤", "٠١", "²", "१"])
def test_routes_take_ascii_digits_only(store, digits):
    for _ in range(4):
        store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    for path in ("", "/board", "/picker?player=Aki", "/summary", "/export", "/seq"):
        assert client.get(f"/matches/{digits}{path}").status_code == 404, path
    response = client.post(f"/matches/{digits}/delete", data={"csrf_token": token})
    assert response.status_code == 404
    assert len(store.matches()) == 4


def test_a_5000_digit_match_id_is_404_not_500(store, match_id):
    client = create_app(store, testing=True).test_client()
    response = client.get("/matches/" + "9" * 5000, headers=HX)
    assert response.status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/\\evil.example/",
        "/\\\\evil.example/x",
        "/\t/evil.example/",
        "/\n/evil.example/",
        "/x/\\evil.example",
    ],
)
def test_the_404_pages_language_links_stay_on_this_site(store, path):
    client = create_app(store, testing=True).test_client()
    # The path as the server hands it on once decoded (/%5Cevil.example/, /%09/...).
    response = client.get("/", environ_overrides={"PATH_INFO": path})
    assert response.status_code == 404
    links = re.findall(r'href="([^"]*lang=[a-z]+)"', response.get_data(as_text=True))
    assert len(links) >= 2
    for link in links:
        link = html.unescape(link)
        assert link.startswith("/") and not link.startswith("//"), link
        assert "\\" not in link and "\t" not in link and "evil" not in link, link


def test_a_known_pages_language_links_keep_the_page(store, match_id):
    client = create_app(store, testing=True).test_client()
    page = client.get(f"/matches/{match_id}/board").get_data(as_text=True)
    assert f'href="/matches/{match_id}/board?lang=fr"' in page


class CameraWithPassword:
    """A camera session whose source was given with its user and password."""

    def __init__(self, url):
        from companion.live.sources import LiveSource
        from companion.live.zones import default_zones

        self.source = LiveSource(url, opener=lambda target: None)
        self.zones = default_zones(2)
        self.url = url

    def status(self):
        return {
            "camera": "lost",
            "source": self.source.describe(),
            "fps": 0.0,
            "frames": 0,
            "match_id": None,
            "message": f"Cannot open {self.url}",
        }

    def latest_jpeg(self, annotated=True):
        return None

    snapshot_jpeg = latest_jpeg


def test_camera_credentials_are_never_shown(store):
    url = "rtsp://admin:hunter2@192.0.2.9:554/live?token=s3cr3t&fps=10"
    camera = CameraWithPassword(url)
    assert "hunter2" not in camera.source.describe() and "s3cr3t" not in camera.source.describe()
    assert "192.0.2.9" in camera.source.describe()  # which camera it is, still
    client = create_app(store, testing=True, live=camera).test_client()
    for path in ("/live/status", "/live", "/calibrate", "/"):
        text = client.get(path).get_data(as_text=True)
        assert "hunter2" not in text and "s3cr3t" not in text and "admin:" not in text, path
    assert "192.0.2.9" in client.get("/live/status").get_json()["source"]


@pytest.mark.parametrize("password", ["zqv pw", "zqv#pw", "pw zqv", "pw#zqv", "p/w@zqv"])
def test_a_camera_password_of_any_characters_is_never_shown(store, password):
    camera = CameraWithPassword(f"rtsp://admin:{password}@192.0.2.9:554/live")
    assert "zqv" not in camera.source.describe()
    client = create_app(store, testing=True, live=camera).test_client()
    for path in ("/live/status", "/live", "/"):
        assert "zqv" not in client.get(path).get_data(as_text=True), path
    assert "192.0.2.9" in client.get("/live/status").get_json()["source"]


def test_redact_url_hides_every_credential():
    from companion.live.sources import redact_url

    assert redact_url("rtsp://u:p@h/x") == "rtsp://***@h/x"
    assert (
        redact_url("http://h/x?user=u&password=p&fps=3") == "http://h/x?user=***&password=***&fps=3"
    )
    assert redact_url("stream rtsp://u:p@ss@h:554/x") == "stream rtsp://***@h:554/x"
    assert redact_url("camera 0") == "camera 0"
    assert redact_url("open rtsp://u:p w#x@h/x: no\nnext") == "open rtsp://***@h/x: no\nnext"
    assert redact_url("rtsp://a:b@h/1 and http://c:d@e/2") == "rtsp://***@h/1 and http://***@e/2"


# ---------------------------------------------------------------------------------------------
# 2. Requests that gave a 500
# ---------------------------------------------------------------------------------------------


def post_event(client, token, match_id, **fields):
    data = {"csrf_token": token, "request_id": uuid.uuid4().hex, **fields}
    return client.post(f"/matches/{match_id}/events", data=data, headers=HX)


@pytest.mark.parametrize("points", ["²", "٣", "9" * 5000, "1e30", "-" + "9" * 5000])
def test_round_entered_points_that_are_not_ascii_numbers_are_400(store, match_id, points):
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    response = post_event(
        client,
        token,
        match_id,
        type="round_entered",
        winner="Aki",
        points=points,
        expected_seq=1,
    )
    assert response.status_code == 400, response.status_code
    assert "whole number" in message(response) and len(message(response)) < 200
    assert store.last_seq(match_id) == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"geisha": "²", "count": "1"},
        {"geisha": "9" * 5000, "count": "1"},
        {"geisha": "ayane", "count": "٣"},
        {"geisha": "ayane", "count": "9" * 5000},
    ],
)
def test_hanamikoji_geisha_and_count_that_are_not_ascii_numbers_are_400(store, fields):
    match_id = store.create_hanamikoji_match(["Aki", "Ben"])
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    response = client.post(
        f"/matches/{match_id}/hanamikoji/events",
        data={
            "csrf_token": token,
            "request_id": "r1",
            "expected_seq": "1",
            "type": "items_set",
            "player": "A",
            **fields,
        },
        headers=HX,
    )
    assert response.status_code == 400
    assert store.last_seq(match_id) == 1


def test_hanamikoji_events_with_such_numbers_are_refused_by_the_engine():
    from companion.game import hanamikoji

    for geisha in ("²", "9" * 5000):
        with pytest.raises(CompanionError, match="no geisha"):
            hanamikoji.Event.from_dict(
                {"type": "items_set", "player": "A", "geisha": geisha, "count": 1}
            )
    with pytest.raises(CompanionError, match="not a whole number"):
        hanamikoji.Event.from_dict(
            {"type": "items_set", "player": "A", "geisha": "ayane", "count": "9" * 5000}
        )


def import_file(client, token, content: bytes | str, **headers):
    if isinstance(content, str):
        content = content.encode("utf-8")
    return client.post(
        "/matches/import",
        data={"csrf_token": token, "file": (io.BytesIO(content), "match.json")},
        headers=headers,
    )


@pytest.fixture
def exported(store, match_id):
    store.append(match_id, {"type": "round_started"})
    store.append(match_id, {"type": "card_captured", "player": "Aki", "card": "01-1"})
    return store.export_match(match_id)


def edited(exported, edit) -> str:
    data = json.loads(json.dumps(exported))
    edit(data)
    return json.dumps(data)


def test_imports_that_gave_a_500_are_400_and_add_nothing(store, exported):
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    before = len(store.matches())
    text = json.dumps(exported)
    bad = {
        "deeply nested": "[" * 100_000 + "]" * 100_000,
        "nested event": edited(
            exported,
            lambda d: d["events"][1]["event"].update({"oya": json.loads("[" * 900 + "]" * 900)}),
        ),
        "rounds Infinity": text.replace('"rounds": 6', '"rounds": Infinity', 1),
        "rounds NaN": text.replace('"rounds": 6', '"rounds": NaN', 1),
        "rounds 1e400": text.replace('"rounds": 6', '"rounds": 1e400', 1),
        "rounds 5000 digits": text.replace('"rounds": 6', '"rounds": ' + "9" * 5000, 1),
        "event rounds 1e30": edited(
            exported, lambda d: d["events"][0]["event"].update({"rounds": 1e30})
        ),
        "version a list": edited(exported, lambda d: d.update({"version": [[1]]})),
        "game a list": edited(exported, lambda d: d.update({"game": ["koikoi"]})),
    }
    for what, content in bad.items():
        response = import_file(client, token, content)
        assert 400 <= response.status_code < 500, what
        assert len(message(response)) < 300, what
    assert len(store.matches()) == before


def test_an_import_whose_rules_hold_3000_yaku_is_a_4xx(store, exported):
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    extra = "".join(
        f'\n[[yaku]]\nid = "y{i}"\nname = "Y{i}"\nkind = "count"\n'
        f'select = {{ category = "chaff" }}\nmin = 10\npoints = 1\n'
        for i in range(3000)
    )

    def many_yaku(data):
        event = data["events"][0]["event"]
        head, sep, tail = event["rules_text"].partition("[multipliers]")
        event["rules_text"] = head + extra + sep + tail

    before = len(store.matches())
    response = import_file(client, token, edited(exported, many_yaku))
    assert 400 <= response.status_code < 500
    assert len(store.matches()) == before


def test_a_database_with_corrupt_pages_answers_a_sentence_not_500(tmp_path):
    path = tmp_path / "m.db"
    store = MatchStore.open(path)
    ids = [
        store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
        for _ in range(3)
    ]
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'matches'").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    start = (root - 1) * 4096
    data[start + 8 : start + 4096] = b"\xa5" * (4096 - 8)  # the matches' cells: garbage
    path.write_bytes(bytes(data))
    store = MatchStore.open(path)  # readable enough to open: the damage shows when read
    client = create_app(store).test_client()  # not testing: a failure is a 500, as served
    for match_id in ids:
        for url in (
            f"/matches/{match_id}",
            f"/matches/{match_id}/board",
            f"/matches/{match_id}/picker?player=Aki",
            f"/matches/{match_id}/hanamikoji",
        ):
            for headers in ({}, HX):
                response = client.get(url, headers=headers)
                assert 400 <= response.status_code < 500, (url, response.status_code)
                assert "damaged" in message(response), url
    store.close()


@pytest.mark.parametrize("host", ["a..b", "a" * 64 + ".example", ".", "a..b:5000"])
def test_a_host_name_idna_cannot_encode_is_a_sentence_on_a_lan_server(store, host, caplog):
    """The error page itself used to fail (its links cannot be built for such a host): a 500
    and a traceback logged for every such request (issue 83)."""
    app = create_app(store, join_code="1234567890")
    with Running(app) as server:
        app.config["LOOPBACK_ONLY"] = False  # as on 0.0.0.0: any name is answered
        for path in ("/", "/matches/1", "/no-such-page"):
            answer, _ = server.raw(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 400"), (path, answer[:80])
            assert b"not a valid host name" in answer
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_head_on_a_hanamikoji_match_page_board_or_picker_is_answered_as_get(store):
    """HEAD ran the Koi-Koi view on a Hanamikoji match: AttributeError in board_context."""
    hanamikoji = store.create_hanamikoji_match(["Aki", "Ben"])
    client = create_app(store).test_client()
    for path in ("", "/board", "/picker?player=Aki"):
        url = f"/matches/{hanamikoji}{path}"
        head, get = client.head(url), client.get(url)
        assert head.status_code == get.status_code == 303, url
        assert head.headers["Location"] == get.headers["Location"]


# ---------------------------------------------------------------------------------------------
# 3. What is stored must make sense
# ---------------------------------------------------------------------------------------------


def test_an_import_is_listed_as_its_log_says_not_as_the_file_claims(store, exported):
    client = create_app(store, testing=True).test_client()
    token = csrf(client)

    def claims(data):
        data["match"].update(
            {
                "players": ["A\x00", "B\n" * 100],
                "rounds": 1e30,
                "rules": "x" * 5000,
                "oya": "nobody",
                "options": {"x" * 1000: True},
            }
        )

    response = import_file(client, token, edited(exported, claims))
    assert response.status_code == 303
    new = store.matches()[0]
    assert new.players == ["Aki", "Ben"] and new.rounds == 6 and new.rules == "livret"
    assert new.oya == "Aki" and "x" * 1000 not in new.options


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda d: d["match"].update({"title": "x" * 5000}), "at most 120"),
        (lambda d: d["match"].update({"title": "Friday\x00night"}), "control characters"),
        (
            lambda d: d["events"][0]["event"].update({"players": ["Aki\x00", "Ben"], "oya": "Ben"}),
            "control characters",
        ),
        (lambda d: d["events"][0]["event"].update({"rounds": 7}), "6 or 12 rounds"),
        (lambda d: d["events"][0]["event"].update({"rounds": 10**30}), "between"),
        (lambda d: d["events"].extend([d["events"][-1]] * 20_001), "at most"),
    ],
)
def test_an_import_is_checked_like_a_new_match(store, exported, edit, words):
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    before = len(store.matches())
    response = import_file(client, token, edited(exported, edit))
    assert 400 <= response.status_code < 500
    assert words in message(response)
    assert len(store.matches()) == before


def test_an_import_larger_than_an_export_is_refused_unread(store):
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    response = import_file(client, token, b" " * (5 * 1024 * 1024))
    assert response.status_code == 413


def test_imports_at_once_are_bounded(store, exported, monkeypatch):
    from companion.web import matches

    monkeypatch.setattr(matches, "IMPORT_WAIT_SECONDS", 0.05)
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    held = [matches._import_slots.acquire(timeout=1) for _ in range(matches.IMPORTS_AT_ONCE)]
    try:
        assert all(held)
        busy = import_file(client, token, json.dumps(exported))
        assert busy.status_code == 503 and "try again" in message(busy)
    finally:
        for _ in held:
            matches._import_slots.release()
    assert import_file(client, token, json.dumps(exported)).status_code == 303


@pytest.mark.parametrize(
    "corners, words",
    [
        ("0.1,0.1 0.9,0.1 0.5,0.1", "too small"),  # all on one line: no area
        ("0.5,0.5 0.5,0.5 0.5,0.5 0.5,0.5", "too small"),
        ("0.1,0.1 0.9,0.9 0.9,0.1 0.1,0.9", "crosses itself"),  # a bow tie
        (
            " ".join(
                f"{0.5 + 0.4 * math.cos(k / 16):.4f},{0.5 + 0.4 * math.sin(k / 16):.4f}"
                for k in range(100)
            ),
            "at most 32",
        ),
    ],
)
def test_calibration_refuses_absurd_zones_and_saves_nothing(store, tmp_path, corners, words):
    from companion.live.zones import default_zones

    class Camera(CameraWithPassword):
        def __init__(self):
            super().__init__("camera:0")
            self.saved = []

        def set_zones(self, zones):
            self.saved.append(zones)

    camera = Camera()
    client = create_app(store, testing=True, live=camera).test_client()
    token = csrf(client)
    response = client.post("/calibrate", data={"csrf_token": token, "zone_field": corners})
    assert response.status_code == 400
    assert words in message(response)
    assert camera.saved == [] and camera.zones == default_zones(2)


@pytest.mark.parametrize("name", ["Aki\x00", "Ak\x1bi", "\u202eikA", "A\x07"])
def test_player_names_with_control_characters_are_refused(store, name):
    with pytest.raises(CompanionError, match="control characters"):
        store.create_match(players=[name, "Ben"], rules="livret", rounds=6, oya="Ben")
    with pytest.raises(CompanionError, match="control characters"):
        store.create_hanamikoji_match([name, "Ben"])
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    for rules in ("livret", "hanamikoji"):
        response = client.post(
            "/matches",
            data={
                "csrf_token": token,
                "rules": rules,
                "player_1": name,
                "player_2": "Ben",
                "rounds": "6",
                "oya": "1",
            },
        )
        assert response.status_code == 400 and "control characters" in message(response)
    assert store.matches() == []


def test_deck_names_with_control_characters_are_refused(tmp_path):
    from companion.recognizer.decks import DeckError, add_deck

    for name in ("mydeck\n", "my\x00deck"):
        with pytest.raises(DeckError, match="deck name"):
            add_deck(name, tmp_path, tmp_path / "decks")
    assert not (tmp_path / "decks" / "mydeck\n").exists()


@pytest.mark.parametrize(
    "toml",
    [
        '[zones.field]\npolygon = [[0,0],[1,0],[1,1]]\n[zones."captures_A\\u0000"]\n'
        "polygon = [[0,0],[1,0],[1,1]]\n",
        'players = ["A\\n"]\n[zones.field]\npolygon = [[0,0],[1,0],[1,1]]\n'
        '[zones."captures_A\\n"]\npolygon = [[0,0],[1,0],[1,1]]\n',
    ],
)
def test_zone_names_with_control_characters_are_refused(toml):
    from companion.live.zones import ZoneError, Zones

    with pytest.raises(ZoneError, match="printable"):
        Zones.from_toml(toml)


def test_run_keeps_its_zone_file_in_the_users_data_folder(tmp_path, monkeypatch):
    from companion.cli import live

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    where = live.default_zones_path()
    assert where == tmp_path / "data" / "hanafuda-companion" / "zones.toml"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    where = live.default_zones_path()
    assert where.parent != Path(tempfile.gettempdir())
    assert str(where).startswith(str(tmp_path / "home"))


def test_events_sent_after_the_database_file_was_deleted_are_refused(tmp_path):
    path = tmp_path / "m.db"
    store = MatchStore.open(path)
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    with pytest.raises(StoreError, match="deleted"):
        store.append(match_id, {"type": "round_started"})
    response = post_event(client, token, match_id, type="round_started", expected_seq=1)
    assert 400 <= response.status_code < 500 and "deleted" in message(response)
    new = client.post(
        "/matches",
        data={
            "csrf_token": token,
            "rules": "livret",
            "player_1": "C",
            "player_2": "D",
            "rounds": "6",
            "oya": "1",
        },
    )
    assert 400 <= new.status_code < 500
    store.close()


def _make_read_only(folder: Path) -> bool:
    """Make ``folder`` and its files unwritable, even for root where chattr works."""
    for item in [*folder.iterdir(), folder]:
        item.chmod(0o555 if item.is_dir() else 0o444)
    if os.geteuid() != 0:
        return True
    done = subprocess.run(
        ["chattr", "+i", *map(str, folder.iterdir()), str(folder)], capture_output=True
    )
    return done.returncode == 0


def _make_writable(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(
            ["chattr", "-i", str(folder), *map(str, folder.iterdir())], capture_output=True
        )
    folder.chmod(0o755)
    for item in folder.iterdir():
        item.chmod(0o644)


def test_a_read_only_location_is_read_and_said_to_be_read_only_not_damaged(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    store = MatchStore.open(folder / "m.db")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    store.close()
    try:
        if not _make_read_only(folder):
            pytest.skip("cannot make a folder read-only here")
        with MatchStore.open(folder / "m.db") as copy:  # read as it is
            assert [m.id for m in copy.matches()] == [match_id]
            with pytest.raises(StoreError) as refused:
                copy.append(match_id, {"type": "round_started"})
    finally:
        _make_writable(folder)
    assert "read-only" in str(refused.value) and "free some space" not in str(refused.value)
    assert "integrity" not in str(refused.value) and "damaged" not in str(refused.value)


def test_a_backup_onto_a_full_disk_says_the_disk_is_full(tmp_path, monkeypatch):
    store = MatchStore.open(tmp_path / "m.db")
    for _ in range(20):
        store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    real_connect = sqlite3.connect

    def small_disk(target, *args, **kwargs):
        conn = real_connect(target, *args, **kwargs)
        if str(target).endswith("backup.db"):
            conn.execute("PRAGMA max_page_count = 2")  # SQLite's own "disk is full"
        return conn

    monkeypatch.setattr(sqlite3, "connect", small_disk)
    with pytest.raises(StoreError) as refused:
        store.backup(tmp_path / "backup.db")
    assert "full" in str(refused.value) and "damaged" not in str(refused.value)
    assert not (tmp_path / "backup.db").exists()
    store.close()


def test_a_zone_file_with_6000_corners_is_refused():
    from companion.live.zones import ZoneError, Zones, default_zones

    data = default_zones(2).to_dict()
    data["zones"]["field"]["polygon"] = [
        [0.5 + 0.4 * math.cos(k / 955), 0.5 + 0.4 * math.sin(k / 955)] for k in range(6000)
    ]
    with pytest.raises(ZoneError, match="at most 32"):
        Zones.from_dict(data)


# ---------------------------------------------------------------------------------------------
# 5. Declared hands from the tablet
# ---------------------------------------------------------------------------------------------


def rules_with_hand_cards(tmp_path, how: str) -> str:
    from companion.game.rules import RULESETS_DIR

    text = (RULESETS_DIR / "livret.toml").read_text(encoding="utf-8")
    text = text.replace('name = "livret"', f'name = "livret-{how}"', 1)
    text = text.replace("[round]\n", f'[round]\nhand_cards = "{how}"\n', 1)
    path = tmp_path / f"livret-{how}.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def declare(client, token, store, match_id, kind, cards):
    return client.post(
        f"/matches/{match_id}/events",
        data={
            "csrf_token": token,
            "request_id": uuid.uuid4().hex,
            "type": "hand_declared",
            "player": "Ben",
            "kind": kind,
            "expected_seq": store.last_seq(match_id),
            "card": cards,
        },
        headers=HX,
    )


TESHI_HAND = ["03-1", "03-2", "03-3", "03-4", "05-1", "07-2", "10-3", "12-4"]


def test_a_rule_set_that_needs_the_hands_cards_gets_them_from_the_picker(store, tmp_path):
    match_id = store.create_match(
        players=["Aki", "Ben"], rules=rules_with_hand_cards(tmp_path, "required"), oya="Aki"
    )
    store.append(match_id, {"type": "round_started"})
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    board = client.get(f"/matches/{match_id}/board", headers=HX).get_data(as_text=True)
    # The Teshi button opens the picker for the dealt hand instead of declaring blind.
    assert 'value="teshi"' not in board
    link = f"/matches/{match_id}/picker?player=Ben&amp;declare=teshi"
    assert link in board
    picker = client.get(html.unescape(link), headers=HX).get_data(as_text=True)
    assert 'name="type" value="hand_declared"' in picker and 'name="kind" value="teshi"' in picker
    assert picker.count('class="tile-btn') == 48
    # Without its cards the rule set refuses the declaration; with a hand that is no teshi too.
    assert declare(client, token, store, match_id, "teshi", []).status_code == 400
    no_teshi = declare(client, token, store, match_id, "teshi", TESHI_HAND[1:] + ["01-1"])
    assert no_teshi.status_code == 400 and "no teshi" in message(no_teshi)
    done = declare(client, token, store, match_id, "teshi", TESHI_HAND)
    assert done.status_code == 200, message(done)
    state = store.state(match_id)
    assert state.rounds[-1].winner == "Ben"
    assert store.events(match_id)[-1].event.cards == tuple(sorted(TESHI_HAND))


def test_an_optional_hand_can_still_be_declared_in_one_tap_or_checked(store, tmp_path):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", oya="Aki")
    store.append(match_id, {"type": "round_started"})
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    board = client.get(f"/matches/{match_id}/board", headers=HX).get_data(as_text=True)
    assert 'value="teshi"' in board and 'value="kuttsuki"' in board  # the one-tap buttons
    assert f"/matches/{match_id}/picker?player=Ben&amp;declare=kuttsuki" in board
    wrong = declare(client, token, store, match_id, "kuttsuki", TESHI_HAND)  # 2 pairs only
    assert wrong.status_code == 400 and "fewer than 4 pairs" in message(wrong)
    bad = client.get(f"/matches/{match_id}/picker?player=Ben&declare=dealt_yaku", headers=HX)
    assert bad.status_code == 400
    too_many = declare(
        client, token, store, match_id, "teshi", [f"{m:02d}-1" for m in range(1, 13)]
    )
    assert too_many.status_code == 400


def test_query_numbers_take_ascii_digits_only(store, match_id):
    client = create_app(store, testing=True, live=CameraWithPassword("camera:0")).test_client()
    for url in (
        f"/matches/{match_id}/seq?after=٣",
        f"/matches/{match_id}/seq?after=" + "9" * 5000,
        f"/matches/{match_id}/seq?after=0&timeout=٣",
        f"/matches/{match_id}/live?max_seconds=٣",
        "/live/stream.mjpg?max_seconds=٣",
    ):
        assert client.get(url).status_code == 400, url
    assert client.get(f"/matches/{match_id}/seq?after=0&timeout=0").get_json()["seq"] == 1


@pytest.mark.parametrize(
    "request_head",
    [
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\n\r\n",
        b"POST /join HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\n\r\n",
        b"POST /join HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
        b"Expect: 100-continue\r\n\r\n",
    ],
)
def test_expect_continue_without_a_body_is_answered_at_once(store, request_head):
    """No body to invite: the answer comes at once, not after the channel's timeout."""
    with ServedApp(create_app(store), channel_timeout=30) as served:
        with socket.create_connection(("127.0.0.1", served.port), timeout=5) as conn:
            conn.sendall(request_head)
            head = conn.recv(64)  # a timeout here fails the test
    assert head.startswith(b"HTTP/1.1 ") and not head.startswith(b"HTTP/1.1 100"), head


def test_expect_continue_still_invites_a_body(store):
    with ServedApp(create_app(store)) as served:
        with socket.create_connection(("127.0.0.1", served.port), timeout=5) as conn:
            conn.sendall(
                b"POST /join HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 6\r\n"
                b"Content-Type: application/x-www-form-urlencoded\r\nExpect: 100-continue\r\n\r\n"
            )
            assert conn.recv(64) == b"HTTP/1.1 100 Continue\r\n\r\n"
            conn.sendall(b"code=1")
            assert conn.recv(64).startswith(b"HTTP/1.1 4")  # no CSRF token: refused, answered

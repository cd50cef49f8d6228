"""Bad input found by fuzzing (issue 69, section 4): each gets a 4xx with a message, or exit
code 2 with one sentence, and changes nothing."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from web_support import csrf, message

from companion import CompanionError
from companion.cli import main
from companion.game.rules import RuleError, RuleSet
from companion.store import MatchStore, StoreError
from companion.web import create_app

HX = {"HX-Request": "true"}
ROOT = Path(__file__).resolve().parents[1]


def one_sentence(result) -> str:
    """The CLI's answer to bad input: exit 2, no traceback, one line on stderr."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


# -- tokens and codes that are not ASCII ------------------------------------------------------


def test_non_ascii_csrf_token_is_400_and_changes_nothing(store, match_id):
    client = create_app(store, testing=True).test_client()
    csrf(client)
    new = client.post("/matches", data={"csrf_token": "é", "player_1": "A", "player_2": "B"})
    assert new.status_code == 400 and "expired" in message(new)
    event = client.post(
        f"/matches/{match_id}/events",
        data={"csrf_token": "jötunn", "type": "round_started", "expected_seq": 1,
              "request_id": "x"},
        headers=HX,
    )
    assert event.status_code == 400
    header = client.post(
        f"/matches/{match_id}/events",
        data={"type": "round_started", "expected_seq": 1, "request_id": "x"},
        headers={**HX, "X-CSRF-Token": "é"},
    )
    assert header.status_code == 400
    assert len(store.matches()) == 1 and store.last_seq(match_id) == 1


def test_non_ascii_join_code_is_403_and_joins_nothing(store, match_id):
    client = create_app(store, join_code="424242", testing=True).test_client()
    token = csrf(client)
    response = client.post("/join", data={"csrf_token": token, "code": "٤٢٤٢٤٢"})
    assert response.status_code == 403 and "wrong" in message(response)
    with client.session_transaction() as session:
        assert "joined" not in session


# -- match ids out of SQLite's range -------------------------------------------------------


@pytest.mark.parametrize("big", [2**63, 2**64 + 5, 10**30])
def test_a_huge_match_id_is_404_on_every_route(store, match_id, big):
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    for path in ("", "/board", "/picker?player=Aki", "/summary", "/seq", "/live?max_seconds=0"):
        response = client.get(f"/matches/{big}{path}", headers=HX)
        assert response.status_code == 404, path
        assert "no match" in message(response)
    posted = client.post(
        f"/matches/{big}/events",
        data={"csrf_token": token, "type": "undo", "expected_seq": 1, "request_id": "r"},
        headers=HX,
    )
    assert posted.status_code == 404


def test_summary_of_a_huge_match_id_is_one_sentence(tmp_path):
    db = tmp_path / "m.db"
    MatchStore.open(db).close()
    line = one_sentence(run("summary", "99999999999999999999", "--db", db))
    assert "no match" in line


# -- numbers in forms ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [("oya", "²"), ("oya", "٣"), ("oya", "1" * 5000), ("rounds", "1" * 5000), ("rounds", "²")],
)
def test_unicode_digits_and_huge_numbers_in_the_new_match_form(store, field, value):
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    form = {"csrf_token": token, "player_1": "Aki", "player_2": "Ben", "rules": "livret",
            "rounds": "6", "oya": "1", field: value}
    response = client.post("/matches", data=form, headers=HX)
    assert response.status_code == 400 and message(response)
    assert store.matches() == []
    options = client.get("/new/options", query_string={"rules": "livret", field: value})
    assert options.status_code == 200  # the form falls back to the defaults


@pytest.mark.parametrize("value", ["²", "1" * 5000, "-1"])
def test_unicode_digits_and_huge_numbers_in_events(store, match_id, value):
    client = create_app(store, testing=True).test_client()
    token = csrf(client)
    for fields in (
        {"type": "round_started", "expected_seq": value},
        {"type": "field_brights_set", "expected_seq": 1, "count": value},
    ):
        data = {"csrf_token": token, "request_id": "r" + value[:3], **fields}
        response = client.post(f"/matches/{match_id}/events", data=data, headers=HX)
        assert 400 <= response.status_code < 500
    assert store.last_seq(match_id) == 1


# -- the join redirect ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["/%09/evil.example/", "/\t/evil.example/", "/\\evil.example", "/\n/evil.example",
     "//evil.example", "https://evil.example/", "/ /evil.example"],
)
def test_join_never_sends_a_browser_elsewhere(store, target):
    from urllib.parse import unquote

    client = create_app(store, join_code="111111", testing=True).test_client()
    token = csrf(client)
    nxt = unquote(target)
    response = client.post("/join", data={"csrf_token": token, "code": "111111", "next": nxt})
    assert response.status_code == 303 and response.headers["Location"] == "/"
    page = client.get("/join", query_string={"next": nxt}).get_data(as_text=True)
    assert "evil.example" not in page


def test_join_keeps_a_plain_next_page(store, match_id):
    client = create_app(store, join_code="111111", testing=True).test_client()
    token = csrf(client)
    response = client.post(
        "/join", data={"csrf_token": token, "code": "111111", "next": f"/matches/{match_id}?a=1"}
    )
    assert response.headers["Location"] == f"/matches/{match_id}?a=1"


# -- rule files ----------------------------------------------------------------------------

ALL_48 = ", ".join(f'"{m:02d}-{k}"' for m in range(1, 13) for k in range(1, 5))


def explosive_rules(minimum: int) -> str:
    return f"""
[game]
name = "explosive"
[scoring]
cards_count_once = true
[[yaku]]
id = "everything"
name = "Everything"
kind = "set"
points = 1
cards = [{ALL_48}]
[[yaku]]
id = "five"
name = "Any five"
kind = "count"
points = 1
select = {{}}
min = {minimum}
"""


@pytest.mark.parametrize("minimum", [5, 6])
def test_a_rule_file_that_makes_scoring_explode_is_refused_fast(minimum):
    started = time.perf_counter()
    with pytest.raises(RuleError, match="too many ways"):
        RuleSet.from_text(explosive_rules(minimum))
    assert time.perf_counter() - started < 10


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def rules_naming_deck(folder: Path, deck: str) -> Path:
    return write(folder / "rules.toml", f'[game]\nname = "x"\ndeck = "{deck}"\n')


@pytest.mark.parametrize(
    "setup, words",
    [
        (lambda d: (d / "folder.toml").mkdir(), "cannot be read"),
        (lambda d: write(d / "folder.toml", b"\xff\xfe name"), "cannot be read"),
        (lambda d: write(d / "folder.toml", 'base = "folder.toml"\n'), "based on itself"),
        (lambda d: write(d / "folder.toml", 'name = 3\n[cards]\n"01-1" = 5\n'), "deck file"),
        (lambda d: write(d / "folder.toml", '[cards]\n"01-1" = { roles = "crane" }\n'), "deck file"),
        (lambda d: write(d / "folder.toml", '[cards]\n"13-1" = { }\n'), "13-1"),
    ],
)
def test_a_bad_deck_file_named_by_a_rule_file_is_one_sentence(tmp_path, setup, words):
    setup(tmp_path)
    rules = rules_naming_deck(tmp_path, "folder.toml")
    line = one_sentence(run("rules", "show", rules))
    assert words in line


def test_a_deck_cycle_through_two_files_is_one_sentence(tmp_path):
    write(tmp_path / "a.toml", 'base = "b.toml"\n')
    write(tmp_path / "b.toml", 'base = "a.toml"\n')
    line = one_sentence(run("rules", "show", rules_naming_deck(tmp_path, "a.toml")))
    assert "based on itself" in line


def test_a_rule_file_of_nested_arrays_is_one_sentence(tmp_path):
    path = write(tmp_path / "deep.toml", "x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested too deeply" in one_sentence(run("rules", "show", path))
    deck = write(tmp_path / "deep-deck.toml", "x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested too deeply" in one_sentence(
        run("rules", "show", rules_naming_deck(tmp_path, deck.name))
    )


@pytest.mark.parametrize(
    "deck",
    ["../outside.toml", "/etc/passwd.toml", "sub/../../outside.toml", "../../decks/x",
     "../outside"],
)
def test_a_rule_files_deck_stays_in_its_folder(tmp_path, deck):
    write(tmp_path / "outside.toml", 'name = "outside"\n')
    folder = tmp_path / "rules"
    line = one_sentence(run("rules", "show", rules_naming_deck(folder, deck)))
    assert "its own folder" in line


def test_a_rule_files_deck_may_be_a_preset_or_beside_it(tmp_path):
    write(tmp_path / "mine.toml", 'name = "mine"\n[cards]\n"08-1" = { names = { en = "Lune" } }\n')
    assert RuleSet.load(rules_naming_deck(tmp_path, "mine.toml")).deck.card("08-1").name == "Lune"
    assert RuleSet.load(rules_naming_deck(tmp_path, "ferme-florale")).deck.name == "ferme-florale"


def test_a_deck_files_base_stays_in_its_folder(tmp_path):
    write(tmp_path / "outside.toml", 'name = "outside"\n')
    write(tmp_path / "rules" / "mine.toml", 'base = "../outside.toml"\n')
    line = one_sentence(run("rules", "show", rules_naming_deck(tmp_path / "rules", "mine.toml")))
    assert "its own folder" in line


@pytest.mark.parametrize(
    "text, words",
    [
        ("[multipliers]\nseven_factor = -2\n", "seven_factor"),
        ('[multipliers]\nkoi = "opponent_double"\nkoi_factor = 0\n', "koi_factor"),
        ("[game]\nplayers = [1000000]\n", "players"),
        ("[game]\nplayers = [true]\n", "players"),
        ("[game]\nrounds = [true]\ndefault_rounds = 1\n", "rounds"),
        ("[game]\nrounds = [100000]\ndefault_rounds = 100000\n", "rounds"),
        ("[round]\nexhausted_points = -5\n", "exhausted_points"),
        ("[round]\ninstant_win_points = 10000000000\n", "instant_win_points"),
        ('[game]\ndeal = { "2" = [100000, 8] }\n', "deal"),
        ("[scoring]\ncard_values = { bright = 100000000 }\n", "card_values"),
        ('[[yaku]]\nid = "y"\nname = "Y"\nkind = "count"\npoints = 5\nselect = {}\nmin = true\n',
         "whole number"),
        ('[[yaku]]\nid = "y"\nname = "Y"\nkind = "count"\npoints = -5\nselect = {}\nmin = 2\n',
         "points"),
        ('[[yaku]]\nid = "y"\nname = "Y"\nkind = "count"\npoints = 5\nselect = {}\nmin = 99\n',
         "48"),
    ],
)
def test_rule_files_with_absurd_values_are_refused(tmp_path, text, words):
    if "[game]" not in text:
        text = '[game]\nname = "x"\n' + text
    else:
        text = text.replace("[game]\n", '[game]\nname = "x"\n', 1)
    line = one_sentence(run("rules", "show", write(tmp_path / "absurd.toml", text)))
    assert words in line


def test_every_preset_still_loads():
    for name in RuleSet.presets():
        assert RuleSet.load(name).name == name


@pytest.mark.parametrize("flag", ["--koi", "--opponent-koi", "--field-brights"])
def test_score_counts_are_bounded(flag):
    line = one_sentence(run("score", "--cards", "01-1", flag, "100000000"))
    assert flag in line


# -- the CLI's other tracebacks -------------------------------------------------------------


def test_detect_annotate_into_a_folder_that_cannot_be_made(tmp_path):
    blocker = write(tmp_path / "file", "x")
    image = ROOT / "tests" / "cases"
    images = sorted(p for p in image.rglob("*") if p.suffix.lower() in (".jpg", ".png"))
    if not images:
        import cv2
        import numpy as np

        target = tmp_path / "blank.png"
        cv2.imwrite(str(target), np.zeros((64, 64, 3), np.uint8))
        images = [target]
    line = one_sentence(run("detect", images[0], "--annotate", blocker / "sub"))
    assert "annotated" in line


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_bench_live_interval_must_be_a_finite_number(value):
    line = one_sentence(run("bench-live", "--interval", value, "--events", "1", "--clients", "1"))
    assert "interval" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder")
def test_db_in_a_folder_the_user_cannot_read(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    MatchStore.open(locked / "m.db").close()
    locked.chmod(0)
    try:
        for args in (("matches",), ("summary",)):
            one_sentence(run(*args, "--db", locked / "m.db"))
    finally:
        locked.chmod(0o755)


def test_db_in_a_folder_the_user_cannot_read_simulated(tmp_path, monkeypatch):
    """As root every folder is readable: make the check itself fail with EACCES."""
    original = Path.exists

    def refuse(self, *args, **kwargs):
        if "locked" in str(self):
            raise PermissionError(13, "Permission denied", str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "exists", refuse)
    for args in (("matches",), ("summary",)):
        line = one_sentence(run(*args, "--db", tmp_path / "locked" / "m.db"))
        assert "Permission denied" in line or "cannot" in line.lower()


# -- a damaged database ---------------------------------------------------------------------


def damaged(tmp_path, how: str) -> tuple[Path, int]:
    path = tmp_path / "damaged.db"
    store = MatchStore.open(path)
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    store.append(match_id, {"type": "round_started"})
    store.close()
    conn = sqlite3.connect(path)
    if how == "not json":
        conn.execute("UPDATE events SET event = '{not json' WHERE seq = 2")
    elif how == "not utf-8":
        conn.execute("UPDATE events SET event = CAST(x'fffe7b' AS TEXT) WHERE seq = 2")
        conn.execute("UPDATE matches SET players = CAST(x'fffe' AS TEXT)")
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    if how == "zeroed page":
        data = bytearray(path.read_bytes())
        page = 4096
        pages = len(data) // page
        assert pages >= 3
        data[page * (pages - 1) : page * pages] = bytes(page)  # the last page: zeros
        data[page * 1 : page * 2] = bytes(page)
        path.write_bytes(bytes(data))
    return path, match_id


@pytest.mark.parametrize("how", ["not json", "not utf-8", "zeroed page"])
def test_a_damaged_database_is_a_clear_error_on_the_web(tmp_path, how):
    path, match_id = damaged(tmp_path, how)
    before = path.read_bytes()
    try:
        store = MatchStore.open(path)
    except StoreError as exc:
        assert str(exc)
        return  # refused at the door: nothing served, nothing written
    client = create_app(store, testing=True).test_client()
    for url in ("/", f"/matches/{match_id}", f"/matches/{match_id}/board",
                f"/matches/{match_id}/summary"):
        response = client.get(url, headers=HX)
        assert response.status_code < 500, (url, response.status_code)
    token = re.search(r'"X-CSRF-Token": "([^"]+)"', client.get("/").get_data(as_text=True))
    if token:
        response = client.post(
            f"/matches/{match_id}/events",
            data={"csrf_token": token.group(1), "type": "undo", "expected_seq": 2,
                  "request_id": "r"},
            headers=HX,
        )
        assert 400 <= response.status_code < 500
        new = client.post(
            "/matches",
            data={"csrf_token": token.group(1), "player_1": "C", "player_2": "D",
                  "rules": "livret", "rounds": "6", "oya": "1"},
            headers=HX,
        )
        if how == "zeroed page":
            assert 400 <= new.status_code < 500
    store.close()
    if how == "zeroed page":
        assert path.read_bytes() == before  # never written into


@pytest.mark.parametrize("how", ["not json", "not utf-8", "zeroed page"])
def test_a_damaged_database_is_one_sentence_in_the_cli(tmp_path, how):
    path, match_id = damaged(tmp_path, how)
    for args in (("summary", match_id), ("summary",)):
        one_sentence(run(*args, "--db", path))
    result = run("matches", "--db", path)
    assert result.exit_code in (0, 2) and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_damaged_file_refuses_every_write(tmp_path):
    path, match_id = damaged(tmp_path, "zeroed page")
    before = path.read_bytes()
    with pytest.raises(StoreError, match="integrity"):
        store = MatchStore.open(path)
        store.create_match(players=["C", "D"], rules="livret", rounds=6, oya="C")
    assert path.read_bytes() == before


# -- names with control characters ----------------------------------------------------------


def test_names_with_control_characters_stored_before_are_printed_safely(tmp_path):
    # New names with control characters are refused (test_lan_safety); a database written
    # before that may still hold some in how its matches are listed.
    db = tmp_path / "m.db"
    store = MatchStore.open(db)
    evil = "Ak\x1b[2Ji\x07"
    store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    store.close()
    conn = sqlite3.connect(db)
    conn.execute(
        "UPDATE matches SET players = ?, oya = ?, title = ?",
        [json.dumps([evil, "Ben\x00x"]), evil, "T\x1b]0;pwn\x07"],
    )
    conn.commit()
    conn.close()
    for args in (("matches",), ("summary",), ("summary", "--format", "text")):
        result = run(*args, "--db", db)
        assert result.exit_code == 0, result.output
        assert not any(ch in result.output for ch in "\x1b\x07\x00"), repr(result.output)
        assert "\\x1b" in result.output  # shown, as an escape


# -- the server ------------------------------------------------------------------------------


def test_serve_uses_a_production_server_that_drops_idle_connections(store):
    import threading

    from companion.web.serving import serve

    app = create_app(store)
    servers = []
    thread = threading.Thread(
        target=serve,
        args=(app, "127.0.0.1", 0),
        kwargs={"ready": servers.append, "channel_timeout": 1},
        daemon=True,
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not servers and time.monotonic() < deadline:
        time.sleep(0.02)
    server = servers[0]
    port = server.server_port
    try:
        # Ten clients that send half a request and wait: the server still answers others.
        idle = []
        for _ in range(10):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            idle.append(s)
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                assert s.recv(64).startswith(b"HTTP/1.1 200")
        # The half-sent ones are hung up on after the channel timeout (1 s here).
        idle[0].settimeout(10)
        started = time.monotonic()
        try:
            answer = idle[0].recv(64)
        except ConnectionResetError:
            answer = b""
        assert answer == b"" and time.monotonic() - started < 9
        for s in idle:
            s.close()
    finally:
        server.shutdown()
        thread.join(timeout=5)
    assert type(server).__module__.startswith("companion.web")
    assert "waitress" in server.software


def test_serve_keeps_the_loopback_host_check(store):
    import http.client
    import threading

    from companion.web.serving import serve

    app = create_app(store)
    servers = []
    thread = threading.Thread(
        target=serve, args=(app, "127.0.0.1", 0), kwargs={"ready": servers.append}, daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not servers and time.monotonic() < deadline:
        time.sleep(0.02)
    port = servers[0].server_port
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/", headers={"Host": "evil.example"})
        assert conn.getresponse().status == 400
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/")
        assert conn.getresponse().status == 200
    finally:
        servers[0].shutdown()
        thread.join(timeout=5)


def test_companion_error_is_the_base_of_store_errors():
    assert issubclass(StoreError, CompanionError)

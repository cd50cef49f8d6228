"""The match store: append-only log, validation, races, resends, crash safety."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import sqlite_utils

from companion import CompanionError
from companion.game.engine import IllegalEvent
from companion.store import (
    MatchInfo,
    MatchStore,
    StaleEventError,
    StoreError,
    UnknownMatchError,
    default_db_path,
    migrations,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def match(store):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    store.append(match_id, {"type": "round_started"})
    return match_id


def capture(player, card):
    return {"type": "card_captured", "player": player, "card": card}


# -- opening, schema, paths -------------------------------------------------------------------


def test_open_memory_applies_migrations(store):
    assert {"matches", "events"} <= set(store.db.table_names())
    names = [m.name for m in migrations.applied(store.db)]
    assert names[0] == "m001_matches_and_events" and "m002_match_game" in names
    unique = {tuple(i.columns) for i in store.db["events"].indexes if i.unique}
    assert ("match_id", "seq") in unique and ("match_id", "request_id") in unique


def test_file_store_uses_wal_and_reopens(tmp_path):
    path = tmp_path / "sub" / "c.db"
    with MatchStore.open(path) as s:
        match_id = s.create_match(players=["Aki", "Ben"], title="Friday")
        assert s.db.journal_mode == "wal"
    with MatchStore.open(str(path)) as again:  # migrations are not applied twice
        names = [m.name for m in migrations.applied(again.db)]
        assert len(names) == len(set(names)) and "m002_match_game" in names
        assert again.get_match(match_id).title == "Friday"


def test_open_accepts_a_database_object():
    db = sqlite_utils.Database(memory=True)
    s = MatchStore.open(db)
    assert s.db is db and "events" in db.table_names()


def test_not_a_database_is_a_clear_error(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all, " * 100)
    with pytest.raises(StoreError, match="not a usable match database"):
        MatchStore.open(junk)
    with pytest.raises(StoreError, match="folder"):
        MatchStore.open(tmp_path)


def test_default_db_path(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPANION_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"
    monkeypatch.delenv("COMPANION_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    if sys.platform.startswith("linux"):
        assert default_db_path() == tmp_path / "data" / "hanafuda-companion" / "companion.db"


# -- matches ------------------------------------------------------------------------------------


def test_create_match_writes_match_started(store):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=12, oya="Ben")
    [first] = store.events(match_id)
    assert first.seq == 1 and first.type == "match_started"
    assert first.event.rules_text  # the rule file travels with the match
    assert list(first.event.players) == ["Aki", "Ben"]
    info = store.get_match(match_id)
    assert isinstance(info, MatchInfo)
    assert (info.players, info.rules, info.rounds, info.oya) == (
        ["Aki", "Ben"],
        "livret",
        12,
        "Ben",
    )
    assert info.last_seq == 1 and not info.finished
    state = store.state(match_id)
    assert state.rounds_planned == 12 and state.next_oya == "Ben"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"players": ["Aki"]}, "played by 2"),
        ({"players": ["Aki", "Aki"]}, "same name"),
        ({"players": ["Aki", "Ben"], "rounds": 7}, "rounds"),
        ({"players": ["Aki", "Ben"], "oya": "Zed"}, "Oya"),
        ({"players": ["Aki", "Ben"], "options": {"nope": True}}, "nope"),
        ({"players": ["Aki", "Ben"], "rules": "no-such-preset"}, "no-such-preset"),
        ({"players": "Aki,Ben"}, "list"),
    ],
)
def test_create_match_refuses_a_bad_setup(store, kwargs, message):
    with pytest.raises(CompanionError, match=message):
        store.create_match(**kwargs)
    assert store.matches() == []


TEAMS_ON = {"teams": True}


def test_create_match_in_teams_seats_1_and_3_against_2_and_4(store):
    match_id = store.create_match(
        players=["Aki", "Ben", "Chie", "Dan"], rules="ferme-florale", options=TEAMS_ON, oya="Chie"
    )
    info = store.get_match(match_id)
    assert info.players == ["Aki & Chie", "Ben & Dan"] and info.oya == "Aki & Chie"
    assert info.options["teams"] is True
    state = store.state(match_id)
    assert state.teams == {"Aki & Chie": ("Aki", "Chie"), "Ben & Dan": ("Ben", "Dan")}
    # A member's capture is recorded under his name and pooled on his team.
    store.append(match_id, {"type": "round_started"})
    stored = store.append(match_id, capture("Dan", "08-1"))
    assert stored.event.player == "Dan"
    assert [c.code for c in store.state(match_id).captures["Ben & Dan"]] == ["08-1"]


def test_create_match_with_named_teams_passes_them_to_match_started(store):
    teams = {"Red": ["Aki", "Chie"], "Blue": ["Ben", "Dan"]}
    match_id = store.create_match(
        players=["Red", "Blue"], rules="ferme-florale", options=TEAMS_ON, oya="Ben", teams=teams
    )
    [first] = store.events(match_id)
    assert first.event.teams == {"Red": ("Aki", "Chie"), "Blue": ("Ben", "Dan")}
    assert store.get_match(match_id).oya == "Blue"
    store.append(match_id, {"type": "round_started"})
    store.append(match_id, capture("Chie", "03-1"))
    store.append(match_id, capture("Red", "01-1"))  # the team's name works too
    state = store.state(match_id)
    assert sorted(c.code for c in state.captures["Red"]) == ["01-1", "03-1"]
    assert state.captures["Blue"] == []


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"players": ["Aki", "Ben", "Chie"]}, "teams option of 'ferme-florale' is on"),
        ({"players": ["Aki", "Ben", "Chie", "Aki"]}, "same name"),
        (
            {"players": ["Red", "Blue"], "teams": {"Red": ["Aki", "Chie"], "Blue": ["Aki", "Dan"]}},
            "'Aki' appears twice",
        ),
        (
            {"players": ["Red", "Blue"], "teams": {"Red": ["Aki", "Chie"], "Green": ["Ben"]}},
            "players are the team names",
        ),
        ({"players": ["Red", "Blue"], "teams": ["Red", "Blue"]}, "map each team name"),
        (
            {"players": ["Red", "Blue"], "teams": {"Red": ["Aki"], "Blue": ["Ben"]}},
            "played by 4 players, not 2",
        ),
    ],
)
def test_create_match_refuses_a_bad_team_setup(store, kwargs, message):
    with pytest.raises(CompanionError, match=message):
        store.create_match(rules="ferme-florale", options=TEAMS_ON, **kwargs)
    assert store.matches() == []


def test_teams_without_the_option_are_refused(store):
    teams = {"Red": ["Aki", "Chie"], "Blue": ["Ben", "Dan"]}
    with pytest.raises(CompanionError, match="does not play in teams"):
        store.create_match(players=["Red", "Blue"], rules="ferme-florale", teams=teams)
    assert store.matches() == []


def test_titles_are_tidied_and_bounded(store):
    match_id = store.create_match(players=["Aki", "Ben"], title="  Friday \n night  ")
    assert store.get_match(match_id).title == "Friday night"
    with pytest.raises(CompanionError, match="at most 120"):
        store.create_match(players=["Aki", "Ben"], title="x" * 121)
    assert len(store.matches()) == 1


def test_a_locked_database_is_a_clear_error_and_writes_nothing(tmp_path):
    path = tmp_path / "busy.db"
    s = MatchStore.open(path, busy_timeout=0.2)
    match_id = s.create_match(players=["Aki", "Ben"])
    s.append(match_id, {"type": "round_started"})
    other = sqlite3.connect(path)
    other.execute("BEGIN IMMEDIATE")  # another process is writing and does not let go
    try:
        with pytest.raises(StoreError, match="cannot be written now"):
            s.append(match_id, capture("Aki", "01-1"))
        assert s.state(match_id).captures["Aki"] == []  # readers still read (WAL)
    finally:
        other.rollback()
        other.close()
    assert s.append(match_id, capture("Aki", "01-1")).seq == 3


def test_matches_lists_most_recent_first(store):
    first = store.create_match(players=["Aki", "Ben"])
    second = store.create_match(players=["Chie", "Dan"], title="Rematch")
    infos = store.matches()
    assert [i.id for i in infos] == [second, first]
    assert infos[0].label == "Rematch" and infos[1].label.startswith("Aki vs Ben")
    assert store.latest_match().id == second
    assert store.resolve_match(None).id == second
    assert store.resolve_match(str(first)).id == first
    assert json.loads(json.dumps(infos[0].to_dict()))["players"] == ["Chie", "Dan"]


def test_unknown_match(store):
    with pytest.raises(UnknownMatchError, match="no match 42"):
        store.get_match(42)
    with pytest.raises(UnknownMatchError, match="not a match number"):
        store.get_match("abc")
    for call in (store.state, store.events, store.last_seq):
        with pytest.raises(UnknownMatchError):
            call(42)
    with pytest.raises(UnknownMatchError):
        store.append(42, capture("Aki", "01-1"))
    with pytest.raises(UnknownMatchError, match="no matches"):
        store.latest_match()


# -- appending ----------------------------------------------------------------------------------


def test_append_and_replay(store, match):
    stored = store.append(match, capture("Aki", "moon"))
    assert stored.seq == 3 and stored.event.card == "08-1"  # logged as the engine read it
    assert store.last_seq(match) == 3
    state = store.state(match)
    assert [c.code for c in state.captures["Aki"]] == ["08-1"]
    assert [e.seq for e in store.events(match)] == [1, 2, 3]
    assert [e.seq for e in store.events(match, after_seq=2)] == [3]
    assert store.events(match)[-1].to_dict()["event"] == {
        "type": "card_captured",
        "player": "Aki",
        "card": "08-1",
    }


def test_illegal_event_writes_nothing(store, match):
    store.append(match, capture("Aki", "01-1"))
    before = store.events(match)
    for bad in (
        capture("Ben", "01-1"),  # Aki holds it
        capture("Zed", "02-1"),  # not a player
        capture("Aki", "13-1"),  # not a card
        {"type": "koi_called", "player": "Aki"},  # no yaku
        {"type": "no_such_event"},
        {"type": "match_started", "players": ["X", "Y"]},
    ):
        with pytest.raises(CompanionError):
            store.append(match, bad)
    assert store.events(match) == before
    assert store.last_seq(match) == 3


def test_stale_expected_seq_writes_nothing(store, match):
    store.append(match, capture("Aki", "01-1"), expected_seq=2)
    with pytest.raises(StaleEventError, match="changed") as info:
        store.append(match, capture("Ben", "02-1"), expected_seq=2)
    assert (info.value.expected_seq, info.value.last_seq) == (2, 3)
    assert store.last_seq(match) == 3
    with pytest.raises(CompanionError, match="whole number"):
        store.append(match, capture("Ben", "02-1"), expected_seq="soon")


def test_repeated_request_id_is_a_no_op(store, match):
    first = store.append(match, capture("Aki", "01-1"), expected_seq=2, request_id="tap-1")
    # The resend carries the seq its page saw then: still a no-op, not a 409.
    again = store.append(match, capture("Aki", "01-1"), expected_seq=2, request_id="tap-1")
    assert again.seq == first.seq and again.request_id == "tap-1"
    assert store.last_seq(match) == first.seq
    other = store.append(match, capture("Ben", "02-1"), request_id="tap-2")
    assert other.seq == first.seq + 1
    with pytest.raises(CompanionError, match="request id"):
        store.append(match, capture("Ben", "02-3"), request_id="x" * 500)


def test_request_ids_are_per_match(store, match):
    other = store.create_match(players=["Chie", "Dan"])
    store.append(other, {"type": "round_started"}, request_id="same")
    stored = store.append(match, capture("Aki", "01-1"), request_id="same")
    assert stored.seq == 3


def test_undo_is_an_event_and_the_log_keeps_everything(store, match):
    store.append(match, capture("Aki", "01-1"))
    store.append(match, {"type": "undo"})
    assert store.state(match).captures["Aki"] == []
    assert [e.type for e in store.events(match)][-2:] == ["card_captured", "undo"]


def test_finished_flag_follows_the_outcome(store):
    match_id = store.create_match(players=["Aki", "Ben"], rounds=6)
    for _ in range(6):
        store.append(match_id, {"type": "round_started"})
        store.append(match_id, {"type": "hand_declared", "player": "Aki", "kind": "teshi"})
    info = store.get_match(match_id)
    assert info.finished and store.state(match_id).outcome.winner == "Aki"
    with pytest.raises(IllegalEvent, match="over"):
        store.append(match_id, {"type": "round_started"})


def test_state_follows_another_connection(tmp_path):
    path = tmp_path / "c.db"
    writer, reader = MatchStore.open(path), MatchStore.open(path)
    match_id = writer.create_match(players=["Aki", "Ben"])
    writer.append(match_id, {"type": "round_started"})
    assert reader.state(match_id).round_in_progress  # cached now
    writer.append(match_id, capture("Aki", "01-1"))
    writer.append(match_id, capture("Aki", "01-2"))
    writer.append(match_id, {"type": "undo"})
    state = reader.state(match_id)  # extended from the cache, not replayed from scratch
    assert [c.code for c in state.captures["Aki"]] == ["01-1"]
    # The reader can append on top of what the writer wrote.
    assert reader.append(match_id, capture("Ben", "02-1"), expected_seq=5).seq == 6
    assert writer.state(match_id).captures["Ben"][0].code == "02-1"


# -- races --------------------------------------------------------------------------------------


def _race(stores, call):
    barrier = threading.Barrier(len(stores))
    results = [None] * len(stores)

    def run(i):
        barrier.wait()
        try:
            results[i] = call(stores[i], i)
        except Exception as exc:  # collected for the assertions
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def test_racing_writers_with_the_same_expected_seq_record_one_event(tmp_path):
    path = tmp_path / "race.db"
    setup = MatchStore.open(path)
    match_id = setup.create_match(players=["Aki", "Ben"])
    setup.append(match_id, {"type": "round_started"})
    # Separate connections behave like separate processes (tablets served by two servers).
    stores = [MatchStore.open(path) for _ in range(6)]
    cards = ["01-1", "02-1", "03-1", "04-1", "05-1", "06-1"]
    results = _race(stores, lambda s, i: s.append(match_id, capture("Aki", cards[i]), 2))
    written = [r for r in results if not isinstance(r, Exception)]
    assert len(written) == 1 and written[0].seq == 3
    assert all(isinstance(r, StaleEventError) for r in results if r not in written)
    assert setup.last_seq(match_id) == 3 and len(setup.events(match_id)) == 3


def test_racing_resends_with_one_request_id_record_one_event(tmp_path):
    path = tmp_path / "race.db"
    setup = MatchStore.open(path)
    match_id = setup.create_match(players=["Aki", "Ben"])
    setup.append(match_id, {"type": "round_started"})
    stores = [MatchStore.open(path) for _ in range(6)]
    results = _race(stores, lambda s, i: s.append(match_id, capture("Ben", "09-1"), None, "r1"))
    assert all(not isinstance(r, Exception) for r in results), results
    assert {r.seq for r in results} == {3}
    assert setup.last_seq(match_id) == 3


def test_threads_sharing_one_store(store, match):
    results = _race([store] * 8, lambda s, i: s.append(match, capture("Aki", f"{i + 1:02d}-1")))
    assert all(not isinstance(r, Exception) for r in results), results
    assert sorted(r.seq for r in results) == list(range(3, 11))
    assert len(store.state(match).captures["Aki"]) == 8


# -- crash safety -------------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from companion.store import MatchStore
    from companion.bench.live_tally import bench_events

    store = MatchStore.open(sys.argv[1])
    match_id = int(sys.argv[2])
    for n, event in enumerate(bench_events(100000)):
        stored = store.append(match_id, event, request_id=f"w-{n}")
        print(stored.seq, flush=True)  # acknowledged: committed before this line is written
    """
)


def test_kill_9_loses_nothing_acknowledged(tmp_path):
    path = tmp_path / "crash.db"
    with MatchStore.open(path) as s:
        match_id = s.create_match(players=["Aki", "Ben"])
        s.append(match_id, {"type": "round_started"})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(match_id)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    acked = []
    deadline = time.monotonic() + 60
    try:
        while len(acked) < 40 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acked.append(int(line))
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # mid-way through the loop, no clean-up
        proc.wait(10)
    assert len(acked) == 40, proc.stderr.read()
    assert proc.returncode == -signal.SIGKILL

    with MatchStore.open(path) as reopened:
        seqs = [e.seq for e in reopened.events(match_id)]
        assert seqs == list(range(1, len(seqs) + 1))  # no gap, no torn row
        assert set(acked) <= set(seqs)
        assert len(seqs) <= acked[-1] + 1  # at most the event being written is extra
        state = reopened.state(match_id)  # a valid replay...
        assert len(state.log) >= 2
        # ...and the match resumes where it was.
        last = reopened.last_seq(match_id)
        assert reopened.append(match_id, {"type": "undo"}, expected_seq=last).seq == last + 1
    # The database file itself is sound.
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


JOURNAL_DELETER = textwrap.dedent(
    """
    import os, sys
    from companion.store import MatchStore
    from companion.bench.live_tally import bench_events

    store = MatchStore.open(sys.argv[1])
    match_id = int(sys.argv[2])
    events = iter(bench_events(100000))
    for n in range(45):
        journal = sys.argv[1] + "-wal"
        if n in (5, 25) and os.path.exists(journal):  # "stray" files cleaned up meanwhile
            os.remove(journal)
        stored = store.append(match_id, next(events), request_id=f"d-{n}")
        print(stored.seq, flush=True)
    sys.stdin.readline()  # held open until killed
    """
)


def test_journal_deleted_while_in_use_loses_nothing_acknowledged(tmp_path):
    path = tmp_path / "journal.db"
    with MatchStore.open(path) as s:
        match_id = s.create_match(players=["Aki", "Ben"])
        s.append(match_id, {"type": "round_started"})
    proc = subprocess.Popen(
        [sys.executable, "-c", JOURNAL_DELETER, str(path), str(match_id)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    acked = []
    try:
        while len(acked) < 45:
            line = proc.stdout.readline()
            if not line:
                break
            acked.append(int(line))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert len(acked) == 45, proc.stderr.read()

    with MatchStore.open(path) as reopened:
        seqs = [e.seq for e in reopened.events(match_id)]
        assert set(acked) <= set(seqs), f"{len(set(acked) - set(seqs))} acknowledged lost"
        assert seqs == list(range(1, len(seqs) + 1))


RACER = textwrap.dedent(
    """
    import sys, time
    from companion.store import MatchStore, StaleEventError

    store = MatchStore.open(sys.argv[1])
    match_id, card, start = int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    time.sleep(max(0.0, start - time.time()))  # all processes fire together
    try:
        stored = store.append(match_id, {"type": "card_captured", "player": "Aki", "card": card}, 2)
        print("written", stored.seq)
    except StaleEventError:
        print("stale")
    """
)


def test_racing_processes_record_one_event(tmp_path):
    path = tmp_path / "race.db"
    with MatchStore.open(path) as s:
        match_id = s.create_match(players=["Aki", "Ben"])
        s.append(match_id, {"type": "round_started"})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.time() + 3.0  # time for every interpreter to import the store first
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(path), str(match_id), card, str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for card in ("01-1", "02-1", "03-1", "04-1")
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    answers = sorted(out.strip() for out, _ in outputs)
    assert answers == ["stale", "stale", "stale", "written 3"], outputs
    with MatchStore.open(path) as s:
        assert s.last_seq(match_id) == 3 and len(s.state(match_id).captures["Aki"]) == 1


# -- keeping matches: rename, delete, export, import, backup ---------------------------------


def _played(store):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    for event in (
        {"type": "round_started"},
        {"type": "card_captured", "player": "Aki", "card": "08-1"},
        {"type": "card_captured", "player": "Ben", "card": "03-1"},
        {"type": "undo"},
    ):
        store.append(match_id, event, request_id=f"r{store.last_seq(match_id)}")
    return match_id


def test_export_then_import_gives_the_same_match(tmp_path):
    source = MatchStore.open(tmp_path / "a.db")
    match_id = _played(source)
    source.rename_match(match_id, "Friday night")
    exported = source.export_match(match_id)
    target = MatchStore.open(tmp_path / "b.db")
    target.create_match(players=["X", "Y"], rules="livret", rounds=6, oya="X")
    new_id = target.import_match(json.loads(json.dumps(exported)))
    assert new_id != match_id
    assert target.export_match(new_id) == exported
    assert target.state(new_id).totals == source.state(match_id).totals
    assert target.get_match(new_id).title == "Friday night"


def test_an_edited_export_is_refused_and_writes_nothing(store):
    match_id = _played(store)
    exported = store.export_match(match_id)
    exported["events"][2]["event"]["card"] = "03-1"
    exported["events"][3]["event"]["card"] = "03-1"  # the same card captured twice
    with pytest.raises(CompanionError):
        store.import_match(exported)
    with pytest.raises(CompanionError, match="not a match exported"):
        store.import_match({"format": "something else"})
    assert len(store.matches()) == 1


def test_rename_and_delete(store):
    match_id = _played(store)
    assert store.rename_match(match_id, "  Sunday   lunch ").title == "Sunday lunch"
    store.delete_match(match_id)
    assert store.matches() == []
    with pytest.raises(UnknownMatchError):
        store.state(match_id)


def test_backup_is_a_whole_copy(tmp_path):
    store = MatchStore.open(tmp_path / "a.db")
    match_id = _played(store)
    copy = store.backup(tmp_path / "copy.db")
    again = MatchStore.open(copy)
    assert again.export_match(match_id) == store.export_match(match_id)
    with pytest.raises(StoreError, match="already exists"):
        store.backup(copy)


def test_export_import_backup_from_the_command_line(tmp_path):
    from click.testing import CliRunner

    from companion.cli import main

    db = tmp_path / "m.db"
    store = MatchStore.open(db)
    match_id = _played(store)
    store.close()
    runner = CliRunner()
    out = tmp_path / "match.json"
    exported = runner.invoke(main, ["export", str(match_id), "--db", str(db), "--out", str(out)])
    assert exported.exit_code == 0
    other = tmp_path / "other.db"
    result = runner.invoke(main, ["import", str(out), "--db", str(other)])
    assert result.exit_code == 0 and "as match 1" in result.output
    again = runner.invoke(main, ["export", "1", "--db", str(other)])
    assert json.loads(again.output) == json.loads(out.read_text())
    backup = runner.invoke(main, ["backup", str(tmp_path / "b.db"), "--db", str(db)])
    assert backup.exit_code == 0 and (tmp_path / "b.db").exists()
    renamed = runner.invoke(main, ["rename", str(match_id), "Final", "--db", str(db)])
    assert renamed.exit_code == 0 and "Final" in renamed.output
    gone = runner.invoke(main, ["delete", str(match_id), "--db", str(db), "--yes"])
    assert gone.exit_code == 0
    assert runner.invoke(main, ["matches", "--db", str(db), "--json"]).output.strip() == "[]"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = runner.invoke(main, ["import", str(bad), "--db", str(other)])
    assert result.exit_code == 2 and "not a JSON export" in result.output


def test_statistics_across_matches(store):
    from companion.stats import statistics

    for oya in ("Aki", "Ben"):
        match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya=oya)
        store.append(match_id, {"type": "round_started"})
        for code in ("01-1", "03-1", "08-1"):  # Sankō: a yaku, Koi-Koi, then two more cards
            store.append(match_id, {"type": "card_captured", "player": "Aki", "card": code})
        store.append(match_id, {"type": "koi_called", "player": "Aki"})
        store.append(match_id, {"type": "card_captured", "player": "Aki", "card": "11-1"})
        store.append(match_id, {"type": "stop_called", "player": "Aki"})
    figures = statistics(store)
    aki = next(p for p in figures.players if p.name == "Aki")
    ben = next(p for p in figures.players if p.name == "Ben")
    assert figures.matches == 2 and aki.matches == 2 and ben.matches == 2
    assert aki.rounds_won == 2 and ben.rounds_won == 0
    assert aki.koi_calls == 2 and aki.koi_paid == 2
    assert aki.yaku_made >= 2 and aki.points > 0 and ben.points == -aki.points
    assert figures.players[0].name == "Aki"


def test_journal_deleted_then_a_look_keeps_what_was_acknowledged(tmp_path):
    """Deleted after the last write: the next read copies the log's events into the file."""
    path = tmp_path / "look.db"
    store = MatchStore.open(path)
    match_id = store.create_match(players=["Aki", "Ben"])
    store.append(match_id, {"type": "round_started"})
    os.remove(f"{path}-wal")
    assert store.last_seq(match_id) == 2
    copy = tmp_path / "copy.db"  # the file alone, as a kill -9 would leave it
    copy.write_bytes(path.read_bytes())
    with MatchStore.open(copy) as reopened:
        assert reopened.last_seq(match_id) == 2
    assert store.append(match_id, {"type": "undo"}).seq == 3
    assert os.path.exists(f"{path}-wal")  # a new log on disk
    store.close()


def test_a_backup_on_read_only_media_opens_for_reading(tmp_path, monkeypatch):
    """A copy on a CD or a locked stick: read as it is (no journal files made beside it), and
    a change is refused with one sentence, never "free some space"."""
    path = tmp_path / "backup.db"
    with MatchStore.open(tmp_path / "live.db") as live:
        match_id = live.create_match(players=["Aki", "Ben"])
        live.append(match_id, {"type": "round_started"})
        live.backup(path)
    before = path.read_bytes()
    # the tests run as root, who may write anywhere: the system says what it says to a user
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: not mode & os.W_OK and real_access(p, mode))
    with MatchStore.open(path) as copy:
        assert copy.read_only
        assert [m.id for m in copy.matches()] == [match_id]
        assert len(copy.state(match_id).log) == 2
        with pytest.raises(StoreError, match="read-only") as refused:
            copy.append(match_id, {"type": "undo"})
        assert "free some space" not in str(refused.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.db", "live.db"]


def test_an_import_with_nonsense_metadata_is_refused_or_dated_sensibly(store):
    match_id = store.create_match(players=["Aki", "Ben"])
    store.append(match_id, {"type": "round_started"}, request_id="r-1")
    store.append(match_id, {"type": "card_captured", "player": "Aki", "card": "01-1"},
                 request_id="r-2")  # fmt: skip
    export = store.export_match(match_id)
    first_time = export["events"][0]["created_at"]
    for nonsense in (-1, "9" * 40, "0001-01-01T00:00:00", "3000-01-01T00:00:00", "tomorrow"):
        data = json.loads(json.dumps(export))
        data["match"]["created_at"] = nonsense
        assert store.get_match(store.import_match(data)).created_at == first_time
    kept = json.loads(json.dumps(export))
    kept["match"]["created_at"] = "2024-05-01T10:00:00+00:00"
    assert store.get_match(store.import_match(kept)).created_at.startswith("2024-05-01")

    named = json.loads(json.dumps(export))
    named["events"][0]["event"]["players"] = ["A\x00ki", "Ben"]
    with pytest.raises(CompanionError, match="player name cannot hold control characters"):
        store.import_match(named)

    twice = json.loads(json.dumps(export))
    twice["events"][2]["request_id"] = "r-1"
    with pytest.raises(CompanionError) as refused:
        store.import_match(twice)
    assert "repeats the request id of event 2" in str(refused.value)
    assert "changed" not in str(refused.value)


def test_journal_deleted_while_another_process_holds_it_is_refused_not_split(tmp_path):
    """Two processes on one database: a new log beside the one the other still writes into
    would garble both, so a write is refused in one sentence until the other has closed;
    what was acknowledged is kept in the file meanwhile."""
    path = tmp_path / "shared.db"
    store = MatchStore.open(path)
    match_id = store.create_match(players=["Aki", "Ben"])
    other = subprocess.Popen(
        [sys.executable, "-c", "import sys; from companion.store import MatchStore; "
         "s = MatchStore.open(sys.argv[1]); s.matches(); print('open', flush=True); "
         "sys.stdin.readline()", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert other.stdout.readline().strip() == "open"
    os.remove(f"{path}-wal")
    with pytest.raises(StoreError, match="another program still holds it"):
        store.append(match_id, {"type": "round_started"})
    other.communicate("\n", timeout=30)
    assert store.append(match_id, {"type": "round_started"}).seq == 2
    store.close()
    with MatchStore.open(path) as reopened:
        assert reopened.last_seq(match_id) == 2

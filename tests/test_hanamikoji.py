"""Hanamikoji (seed 002): golden cases quoting the seed (tests/cases/hanamikoji.toml), the
events and their replay, properties of the scoring, the `hanamikoji` command, the store and
the tablet page."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from web_support import csrf

from companion import CompanionError
from companion.cli import main
from companion.game.hanamikoji import (
    EVENT_TYPES,
    GEISHAS,
    MAX_ROUNDS,
    NO_FAVOURS,
    SIDES,
    TOTAL_POINTS,
    Event,
    HanamikojiError,
    RoundCounts,
    apply,
    decide,
    play,
    replay,
    score_round,
    standing,
)
from companion.store import MatchStore

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

CASES = tomllib.loads(
    (Path(__file__).parent / "cases" / "hanamikoji.toml").read_text(encoding="utf-8")
)
SHARED = Path(__file__).resolve().parents[1].parent / "shared"
HX = {"HX-Request": "true"}


def _favour(value):
    return None if value == "-" else value


def _normalise(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------------
# Golden cases
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES["case"], ids=lambda c: c["id"])
def test_golden_case(case):
    state = play(case["rounds"], players=("Aki", "Ben"))
    assert len(state.rounds) == len(case["rounds"])
    for k, r in enumerate(state.rounds):
        assert r.number == k + 1
        assert list(r.favours) == [_favour(f) for f in case["favours"][k]]
        assert [r.points["A"], r.points["B"]] == case["points"][k]
        assert [r.geishas["A"], r.geishas["B"]] == case["geishas"][k]
        assert r.first == case["first"][k]
    assert state.winner == (case["winner"] or None)
    assert state.decided_after_round == (case["decided_after_round"] or None)
    reason = state.rounds[-1].reason(state.names)
    assert case["reason"].lower() in reason.lower(), reason
    if state.winner:
        assert state.names[state.winner] in reason


@pytest.mark.parametrize("case", CASES["case"], ids=lambda c: c["id"])
def test_golden_case_with_the_command(case):
    args = ["hanamikoji", "--json", "--players", "Aki,Ben"]
    for counts in case["rounds"]:
        args += ["--round", counts]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) == {"rounds", "winner", "decided_after_round"}
    assert out["winner"] == (case["winner"] or None)
    assert out["decided_after_round"] == (case["decided_after_round"] or None)
    for k, r in enumerate(out["rounds"]):
        assert set(r) == {"round", "favours", "points", "geishas"}
        assert r["round"] == k + 1
        assert r["favours"] == [_favour(f) for f in case["favours"][k]]
        assert r["points"] == dict(zip(SIDES, case["points"][k], strict=True))
        assert r["geishas"] == dict(zip(SIDES, case["geishas"][k], strict=True))


@pytest.mark.parametrize("case", CASES["refused"], ids=lambda c: c["id"])
def test_refused_case(case):
    with pytest.raises(HanamikojiError) as info:
        play(case["rounds"])
    message = str(info.value)
    for word in case["words"]:
        assert word.lower() in message.lower(), message
    assert message.endswith(".") and "\n" not in message


@pytest.mark.parametrize("case", CASES["refused"], ids=lambda c: c["id"])
def test_refused_case_with_the_command(case):
    args = ["hanamikoji"]
    for counts in case["rounds"]:
        args += ["--round", counts]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert case["words"][0].lower() in lines[0].lower()


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared (the seeds) is not beside the project")
def test_every_cite_quotes_the_seed_with_a_translation():
    source = _normalise((SHARED / CASES["seed_file"]).read_text(encoding="utf-8"))
    missing = []
    for case in CASES["case"] + CASES["refused"]:
        assert len(case["cite"]) == len(case["translation"]) >= 1, case["id"]
        missing += [case["id"] for quote in case["cite"] if _normalise(quote) not in source]
    assert not missing, f"quotes not found in {CASES['seed_file']}: {missing}"


def test_the_geishas_in_the_seed_order():
    assert [(g.name, g.value, g.item) for g in GEISHAS] == [
        ("Ayane", 2, "flute"),
        ("Iroha", 2, "fan"),
        ("Tomoyo", 2, "paper"),
        ("Yoko", 3, "umbrella"),
        ("Chiharu", 3, "lute"),
        ("Anju", 4, "tea"),
        ("Ruri", 5, "flower"),
    ]
    assert TOTAL_POINTS == 21


# ---------------------------------------------------------------------------------------------
# Values and events
# ---------------------------------------------------------------------------------------------


def test_round_counts_text_round_trips():
    counts = RoundCounts.parse(" 1,1,1,2,1,1,1 : 0,0,0,1,2,2,3 ")
    assert counts.text == "1,1,1,2,1,1,1:0,0,0,1,2,2,3"
    assert RoundCounts.parse(counts.text) == counts
    assert RoundCounts.from_value(counts.to_dict()) == counts
    assert counts.total("A") == counts.total("B") == 8


SAMPLE_EVENTS = [
    {"type": "hanamikoji_started", "players": ["Aki", "Ben"], "first": "B"},
    {"type": "items_set", "player": "A", "geisha": "ruri", "count": 2},
    {"type": "round_scored", "counts": "1,1,1,2,1,1,1:0,0,0,1,2,2,3"},
    {"type": "round_scored"},
    {"type": "undo"},
]


@pytest.mark.parametrize("data", SAMPLE_EVENTS, ids=lambda d: d["type"])
def test_events_round_trip_through_json(data):
    event = Event.from_dict(data)
    assert Event.from_json(event.to_json()) == event
    assert Event.from_dict(json.loads(json.dumps(event.to_dict()))).to_dict() == event.to_dict()
    assert event.describe({"A": "Aki", "B": "Ben"})
    assert set(EVENT_TYPES) == {d["type"] for d in SAMPLE_EVENTS}


def test_the_first_player_is_named_and_alternates():
    state = apply(None, {"type": "hanamikoji_started", "players": ["Aki", "Ben"], "first": "ben"})
    assert state.first == "B" and state.first_player == "B"
    state = apply(state, {"type": "round_scored", "counts": "1,0,1,1,1,2,2:0,1,1,2,1,2,1"})
    assert state.first_player == "A" and state.rounds[0].first == "B"
    assert "Aki starts" in state.rounds[0].reason(state.names)


def _start():
    return apply(None, {"type": "hanamikoji_started", "players": ["Aki", "Ben"]})


def _set_round(state, counts: str):
    parsed = RoundCounts.parse(counts)
    for side in SIDES:
        for g, n in zip(GEISHAS, parsed.side(side), strict=True):
            if n:
                state = apply(
                    state, {"type": "items_set", "player": side, "geisha": g.id, "count": n}
                )
    return state


def test_items_set_on_the_tablet_score_like_the_counts_given_at_once():
    counts = "1,0,1,1,1,2,2:0,1,1,2,1,2,1"
    state = _set_round(_start(), counts)
    assert state.counts.text == counts
    scored = apply(state, {"type": "round_scored"})
    assert scored.log[-1].counts == counts  # the log keeps what was scored
    direct = play([counts], players=("Aki", "Ben"))
    assert scored.contract_dict() == direct.contract_dict()
    assert scored.counts == RoundCounts()  # the next round starts from nothing
    assert replay(scored.log).to_dict() == scored.to_dict()


def refused(state, event, *words):
    before = json.dumps(state.to_dict(), sort_keys=True)
    with pytest.raises(HanamikojiError) as info:
        apply(state, event)
    message = str(info.value)
    for word in words:
        assert word.lower() in message.lower(), message
    assert message.endswith(".")
    assert json.dumps(state.to_dict(), sort_keys=True) == before
    return message


def test_items_set_refuses_the_impossible():
    state = _set_round(_start(), "0,0,0,0,0,0,4:0,0,0,0,0,0,1")
    refused(
        state,
        {"type": "items_set", "player": "B", "geisha": "ruri", "count": 2},
        "together",
        "Ruri",
        "5 item cards",
    )
    refused(
        state,
        {"type": "items_set", "player": "A", "geisha": "yoko", "count": 4},
        "Aki has 4 items before Yoko",
        "only 3",
    )
    refused(
        state, {"type": "items_set", "player": "A", "geisha": "ruri", "count": 4}, "already has 4"
    )
    full = _set_round(_start(), "2,2,2,2,0,0,0:0,0,0,0,0,0,0")
    refused(
        full,
        {"type": "items_set", "player": "Aki", "geisha": "anju", "count": 1},
        "Aki would have 9 items",
        "8 at a round's end",
    )
    with pytest.raises(HanamikojiError, match="whole number from 0"):
        Event.from_dict({"type": "items_set", "player": "A", "geisha": "ruri", "count": -1})
    with pytest.raises(HanamikojiError, match="no geisha"):
        Event.from_dict({"type": "items_set", "player": "A", "geisha": "Hana", "count": 1})
    refused(state, {"type": "round_scored"}, "Aki 4", "Ben 1", "8 at a round's end")
    refused(
        state,
        {"type": "items_set", "player": "Chie", "geisha": "ruri", "count": 1},
        "Unknown player",
    )


def test_nothing_is_recorded_after_the_match_is_decided_but_undo_works():
    state = play(["2,0,1,0,1,2,2:0,2,1,2,1,1,1"], players=("Aki", "Ben"))
    assert state.finished and state.winner == "A"
    refused(
        state,
        {"type": "items_set", "player": "A", "geisha": "ruri", "count": 1},
        "decided after round 1",
        "Aki wins with 11 points",
    )
    back = apply(state, {"type": "undo"})
    assert not back.finished and back.rounds == []
    with pytest.raises(HanamikojiError, match="Nothing to undo"):
        apply(back, {"type": "undo"})
    with pytest.raises(HanamikojiError, match="already started"):
        apply(back, {"type": "hanamikoji_started", "players": ["X", "Y"]})


@pytest.mark.parametrize(
    ("players", "words"),
    [
        (["Aki"], "2 players, not 1"),
        (["Aki", "aki"], "same name"),
        (["Aki", "Ben", "Chie"], "not 3"),
    ],
)
def test_a_match_needs_two_players(players, words):
    with pytest.raises(HanamikojiError, match=words):
        apply(None, {"type": "hanamikoji_started", "players": players})


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

ITEM_CARDS = [i for i, g in enumerate(GEISHAS) for _ in range(g.value)]  # the 21 cards


def _counts(cards) -> RoundCounts:
    """A round's end from a shuffled deck: 8 cards to A, 8 to B, 5 out of play (1 set aside,
    2 discarded by each player)."""
    a = [0] * len(GEISHAS)
    b = [0] * len(GEISHAS)
    for i in cards[:8]:
        a[i] += 1
    for i in cards[8:16]:
        b[i] += 1
    return RoundCounts(tuple(a), tuple(b))


deals = st.permutations(ITEM_CARDS).map(_counts)
favours = st.lists(st.sampled_from(["A", "B", None]), min_size=7, max_size=7).map(tuple)


@settings(max_examples=200, deadline=None)
@given(deals, favours)
def test_a_tie_never_moves_a_token_and_a_majority_always_takes_it(counts, before):
    counts.check()  # every deal is a possible round's end
    after = score_round(counts, before)
    for a, b, was, now in zip(counts.a, counts.b, before, after, strict=True):
        if a == b:
            assert now == was
        else:
            assert now == ("A" if a > b else "B")


@settings(max_examples=200, deadline=None)
@given(st.lists(deals, min_size=1, max_size=3))
def test_a_whole_match_never_exceeds_21_points_or_3_rounds(rounds):
    state = _start()
    for counts in rounds:
        if state.finished:
            with pytest.raises(HanamikojiError):
                apply(state, {"type": "round_scored", "counts": counts.text})
            break
        state = apply(state, {"type": "round_scored", "counts": counts.text})
        points, geishas = standing(state.favours)
        assert points["A"] + points["B"] <= TOTAL_POINTS
        assert geishas["A"] + geishas["B"] <= len(GEISHAS)
    if len(state.rounds) == MAX_ROUNDS:
        assert state.finished  # decided after round 3, whatever happens
    if state.outcome and state.outcome.by == "both_conditions":
        w = state.winner
        assert w is not None and state.points[w] > state.points["B" if w == "A" else "A"]
    assert replay(state.log).contract_dict() == state.contract_dict()


@given(favours)
def test_both_meeting_a_condition_is_never_a_tie(tokens):
    points, geishas = standing(tokens)
    for number in (1, 2, 3):
        outcome = decide(number, points, geishas)
        if outcome and outcome.by == "both_conditions":
            assert outcome.winner is not None
        if number == MAX_ROUNDS:
            assert outcome is not None


def test_an_empty_round_moves_nothing():
    assert score_round(RoundCounts(), NO_FAVOURS) == NO_FAVOURS


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------


def test_command_text_names_the_players_and_the_reason():
    result = CliRunner().invoke(
        main,
        ["hanamikoji", "--players", "Aki, Ben", "--round", "1,1,1,2,1,1,1:0,0,0,1,2,2,3"],
    )
    assert result.exit_code == 0, result.output
    assert (
        "Both meet a condition (Aki 4 geishas, Ben 12 points): Ben has more points" in result.output
    )
    assert "Ben wins the match after round 1." in result.output


def test_command_json_keeps_a_and_b_labels_with_players():
    counts = "1,0,1,1,1,2,2:0,1,1,2,1,2,1"
    out = json.loads(
        CliRunner()
        .invoke(main, ["hanamikoji", "--json", "--players", "Aki,Ben", "--round", counts])
        .output
    )
    assert out == {
        "rounds": [
            {
                "round": 1,
                "favours": ["A", "B", None, "B", None, None, "A"],
                "points": {"A": 7, "B": 5},
                "geishas": {"A": 2, "B": 2},
            }
        ],
        "winner": None,
        "decided_after_round": None,
    }


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "at least one --round"),
        (["--round", "1,1,1,2,1,1,1:0,0,0,1,2,2,3", "--players", "Aki"], "two names"),
        (["--round", "1,1,1,2,1,1,1:0,0,0,1,2,2,3", "--players", "Aki,aki"], "same name"),
    ],
)
def test_command_bad_input_is_one_sentence(args, words):
    result = CliRunner().invoke(main, ["hanamikoji", *args])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and words in result.output


# ---------------------------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------------------------


def test_store_keeps_a_hanamikoji_match_as_events(store):
    koikoi = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6)
    match = store.create_hanamikoji_match(["Aki", "Ben"], first="Ben", title="Tea house")
    info = store.get_match(match)
    assert (info.game, info.rules, info.rounds, info.oya, info.title) == (
        "hanamikoji",
        "hanamikoji",
        3,
        "Ben",
        "Tea house",
    )
    assert store.get_match(koikoi).game == "koikoi"
    store.append(
        match,
        {"type": "items_set", "player": "A", "geisha": "ruri", "count": 2},
        expected_seq=1,
        request_id="r1",
    )
    again = store.append(
        match, {"type": "items_set", "player": "A", "geisha": "ruri", "count": 2}, request_id="r1"
    )
    assert again.seq == 2 and store.last_seq(match) == 2  # a resent request records nothing
    with pytest.raises(HanamikojiError):
        store.append(match, {"type": "round_scored"})  # 2 and 0 items: nothing is written
    store.append(match, {"type": "round_scored", "counts": "2,0,1,0,1,2,2:0,2,1,2,1,1,1"})
    assert store.get_match(match).finished
    fresh = MatchStore(store.db)  # another process: a replay from the rows
    assert fresh.state(match).contract_dict() == store.state(match).contract_dict()
    assert fresh.state(match).winner == "A"
    store.append(match, {"type": "undo"})
    assert not store.get_match(match).finished and store.state(match).counts.a[6] == 2
    with pytest.raises(CompanionError, match="only be started once"):
        store.append(match, {"type": "hanamikoji_started", "players": ["X", "Y"]})
    # Koi-Koi matches keep their own engine
    store.append(koikoi, {"type": "round_started"})
    with pytest.raises(CompanionError):
        store.append(koikoi, {"type": "items_set", "player": "A", "geisha": "ruri", "count": 1})


def test_an_older_database_gets_the_game_column(tmp_path):
    path = tmp_path / "old.db"
    with MatchStore.open(path) as st_:
        koikoi = st_.create_match(players=["Aki", "Ben"], rules="livret", rounds=6)
    # As a database written before the game column: drop it and forget the migration.
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE matches DROP COLUMN game")
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm002_match_game'")
    conn.commit()
    conn.close()
    assert "game" not in sqlite_utils.Database(path)["matches"].columns_dict
    with MatchStore.open(path) as st_:
        assert st_.get_match(koikoi).game == "koikoi"
        assert st_.state(koikoi).rules_name == "livret"
        match = st_.create_hanamikoji_match(["Aki", "Ben"])
        assert st_.get_match(match).game == "hanamikoji"


def test_summary_of_a_hanamikoji_match(store):
    from companion.summaries import summary_from_store
    from companion.summaries.koikoi import render, render_html

    match = store.create_hanamikoji_match(["Aki", "Ben"])
    for counts in (
        "1,0,1,1,1,2,2:0,1,1,2,1,2,1",
        "1,1,0,1,2,2,1:1,1,1,1,1,2,1",
        "0,1,1,1,1,2,2:1,1,1,1,1,1,2",
    ):
        store.append(match, {"type": "round_scored", "counts": counts})
    summary = summary_from_store(store, match)
    assert summary.winner == "Aki" and summary.rounds_played == 3
    text = render(summary, "text").decode()
    assert "After round 3: both meet a condition (Aki 12 points, Ben 4 geishas)" in text
    assert "Round 3 (Aki starts)" in text and "Round 2 (Ben starts)" in text
    html = render_html(summary)
    assert "Hanamikoji" in html and "Ruri" in html and "(moved)" in html
    data = json.loads(render(summary, "json"))
    assert data["points"] == {"Aki": 12, "Ben": 9} and data["game"] == "hanamikoji"
    pdf = summary.render_pdf(use_chromium=False)
    assert pdf.startswith(b"%PDF") and b"Ruri" in pdf


# ---------------------------------------------------------------------------------------------
# The tablet
# ---------------------------------------------------------------------------------------------


def test_the_new_match_form_offers_hanamikoji(client, store):
    page = client.get("/").get_data(as_text=True)
    assert '<option value="hanamikoji">' in page
    options = client.get("/new/options?rules=hanamikoji&player_1=Aki", headers=HX)
    assert 'name="first"' in options.get_data(as_text=True)
    assert 'value="Aki"' in options.get_data(as_text=True)
    token = csrf(client)
    form = {
        "csrf_token": token,
        "rules": "hanamikoji",
        "player_1": "Aki",
        "player_2": "Ben",
        "first": "2",
        "title": "Tea",
    }
    response = client.post("/matches", data=form)
    assert response.status_code == 303
    match = store.matches()[0]
    assert response.headers["Location"].endswith(f"/matches/{match.id}/hanamikoji")
    assert (match.game, match.oya, match.title) == ("hanamikoji", "Ben", "Tea")
    bad = client.post("/matches", data={**form, "player_2": ""}, headers=HX)
    assert bad.status_code == 400 and "both names" in bad.get_data(as_text=True)
    # the Koi-Koi page of a Hanamikoji match leads to its own page
    moved = client.get(f"/matches/{match.id}")
    assert moved.status_code == 303 and moved.headers["Location"].endswith("/hanamikoji")
    assert f"/matches/{match.id}/hanamikoji" in client.get("/").get_data(as_text=True)


def test_a_round_on_the_tablet(client, store):
    match = store.create_hanamikoji_match(["Aki", "Ben"])
    token = csrf(client)

    def post(**fields):
        data = {
            "csrf_token": token,
            "request_id": uuid.uuid4().hex,
            "expected_seq": store.last_seq(match),
            **fields,
        }
        return client.post(f"/matches/{match}/hanamikoji/events", data=data, headers=HX)

    page = client.get(f"/matches/{match}/hanamikoji").get_data(as_text=True)
    assert page.count('class="btn hk-btn hk-plus"') == 14
    assert "Score round 1" in page and "0/8 items" in page
    counts = RoundCounts.parse("1,1,1,0,2,1,2:0,0,0,3,1,2,2")
    for side in SIDES:
        for g, n in zip(GEISHAS, counts.side(side), strict=True):
            for k in range(1, n + 1):
                response = post(type="items_set", player=side, geisha=g.id, count=k)
                assert response.status_code == 200, response.get_data(as_text=True)
    board = response.get_data(as_text=True)
    assert "8/8 items" in board and 'id="board"' in board
    too_many = post(type="items_set", player="A", geisha="ruri", count=3)
    assert too_many.status_code == 400 and "8 at a round" in too_many.get_data(as_text=True)
    stale = post(type="round_scored", expected_seq=1)
    assert stale.status_code == 409
    scored = post(type="round_scored").get_data(as_text=True)
    assert "Aki wins after round 1" in scored and "Aki wins with 4 geishas." in scored
    assert store.state(match).winner == "A"
    assert 'class="btn hk-btn' not in scored  # nothing more to enter
    summary = client.get(f"/matches/{match}/summary").get_data(as_text=True)
    assert "After round 1: Aki wins with 4 geishas." in summary
    undone = post(type="undo").get_data(as_text=True)
    assert "Score round 1" in undone and store.state(match).winner is None
    assert "(undone)" in undone
    assert post(type="card_captured").status_code == 400


def test_the_tablet_refuses_a_koikoi_match_on_the_hanamikoji_page(client, store):
    koikoi = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6)
    assert client.get(f"/matches/{koikoi}/hanamikoji").status_code == 404
    assert client.get(f"/matches/{koikoi}").status_code == 200
    assert client.get("/matches/99/hanamikoji").status_code == 404


def test_a_refusal_names_the_player_as_typed_at_the_start_of_its_sentence():
    from click.testing import CliRunner

    from companion.cli import main

    result = CliRunner().invoke(main, ["hanamikoji", "--round", "1,1,1:1"])
    assert result.exit_code == 2 and "Player A's side lists 3 counts" in result.output
    named = CliRunner().invoke(main, ["hanamikoji", "--players", "McKay,Ben", "--round", "1,1,1:1"])
    assert named.exit_code == 2 and "McKay's side" in named.output

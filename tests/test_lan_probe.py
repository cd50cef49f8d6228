"""The LAN probe (tests/lan_probe.py), small: every route with malformed input, malformed HTTP
on the wire, a huge body and join codes from many addresses; no answer may be a 5xx."""

from __future__ import annotations

import lan_probe

from companion.store import MatchStore
from companion.web import create_app


def test_no_route_answers_5xx_to_malformed_input():
    result = lan_probe.fuzz_routes(per_route=6, seed=75)
    assert result["requests"] > 500
    assert result["fivexx"] == []
    # The probe reaches the views, not only the refusals at the door.
    assert result["status"][200] > 100 and result["status"][400] > 20


def test_no_malformed_http_gets_a_5xx_and_a_huge_body_is_refused_unread(tmp_path):
    store = MatchStore.open(tmp_path / "wire.db")
    store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    wire = lan_probe.fuzz_wire(create_app(store))
    assert wire["fivexx"] == []
    body = lan_probe.huge_body(create_app(store, join_code=lan_probe.JOIN_CODE))
    assert body["status"] == 413
    assert body["server_read_body_bytes"] < 1024 * 1024  # of 300 MB declared
    store.close()


def test_join_codes_from_many_addresses_are_judged_a_few_a_second(tmp_path):
    from companion.web import auth

    store = MatchStore.open(tmp_path / "join.db")
    result = lan_probe.guesses(create_app(store, join_code=lan_probe.JOIN_CODE), total=120)
    first = auth.FIRST_TRIES_PER_SECOND
    rate = first + min(first, auth.KNOWN_TRIES_PER_SECOND) + auth.RETRIES_PER_SECOND
    assert result["judged"] <= 3 * auth.GUESS_BURST + rate * result["seconds"] + 1, result
    assert result["judged"] + result["refused"] == 120
    store.close()

"""The helpers every blueprint shares, each in one place: reading seconds from a query,
going to a page after a form, which events an undo took back."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from companion.web.errors import WebError


@pytest.mark.parametrize(
    "query, expected", [("", 7.0), ("?t=", 7.0), ("?t=0", 0.0), ("?t=2.5", 2.5), ("?t=60", 60.0)]
)
def test_seconds_arg_reads_a_number_of_seconds_or_the_default(app, query, expected):
    from companion.web.forms import seconds_arg

    with app.test_request_context(f"/{query}"):
        assert seconds_arg("t", 7.0, 60) == expected


@pytest.mark.parametrize(
    "raw, sentence",
    [
        ("abc", "t must be a number of seconds."),
        ("%D9%A3", "t must be a number of seconds."),  # "٣": float() would read 3
        ("nan", "t must be between 0 and 60 seconds."),
        ("inf", "t must be between 0 and 60 seconds."),
        ("-1", "t must be between 0 and 60 seconds."),
        ("60.5", "t must be between 0 and 60 seconds."),
        ("1e9", "t must be between 0 and 60 seconds."),
    ],
)
def test_seconds_arg_refuses_what_is_not_seconds_in_range(app, raw, sentence):
    from companion.web.forms import seconds_arg

    with app.test_request_context(f"/?t={raw}"), pytest.raises(WebError) as refused:
        seconds_arg("t", 7.0, 60)
    assert refused.value.status == 400 and str(refused.value) == sentence


def test_the_streams_read_their_seconds_with_the_one_helper(client, store):
    from companion.web import camera, forms, tally_stream

    assert camera.seconds_arg is forms.seconds_arg is tally_stream.seconds_arg
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    for bad in ("nan", "inf", "-0.5", "61"):
        assert client.get(f"/matches/{match_id}/seq?after=0&timeout={bad}").status_code == 400
    for bad in ("nan", "inf", "-0.5", "3601"):
        assert client.get(f"/matches/{match_id}/live?max_seconds={bad}").status_code == 400


def test_go_to_sends_htmx_an_hx_redirect_and_a_form_a_see_other(app):
    from companion.web.pages import go_to

    with app.test_request_context("/", headers={"HX-Request": "true"}):
        answer = go_to("/matches/3")
        assert (answer.status_code, answer.headers["HX-Redirect"]) == (204, "/matches/3")
    with app.test_request_context("/"):
        answer = go_to("/matches/3")
        assert (answer.status_code, answer.headers["Location"]) == (303, "/matches/3")


def _stored(*types: str):
    return [SimpleNamespace(seq=n, event=SimpleNamespace(type=t)) for n, t in enumerate(types, 1)]


def test_taken_back_marks_what_each_undo_took_back_never_the_start():
    from companion.web.event_log import taken_back

    log = _stored("match_started", "round_started", "card_captured", "undo", "undo", "undo")
    assert taken_back(log) == {2, 3}  # the third undo finds nothing left but the start
    hanamikoji = _stored("hanamikoji_started", "items_set", "undo", "items_set")
    assert taken_back(hanamikoji, start="hanamikoji_started") == {2}


@pytest.mark.parametrize(
    ("form", "sentence"),
    [
        ({}, "The request is missing the number of Koi calls (count)."),
        ({"count": "  "}, "The request is missing the number of Koi calls (count)."),
        ({"count": "٣"}, "The number of Koi calls (count) must be a whole number."),
        ({"count": "1.5"}, "The number of Koi calls (count) must be a whole number."),
    ],
)
def test_a_whole_number_field_refuses_in_one_sentence_keeping_its_names_capitals(
    app, form, sentence
):
    from companion.web.forms import whole_number_field

    with app.test_request_context("/"), pytest.raises(WebError) as refused:
        whole_number_field(form, "count", "the number of Koi calls")
    assert str(refused.value) == sentence and refused.value.status == 400


def test_both_games_read_whole_number_fields_with_the_one_helper(app):
    from companion.web import forms, hanamikoji, match

    assert match.whole_number_field is hanamikoji.whole_number_field is forms.whole_number_field
    with app.test_request_context("/"):
        assert forms.whole_number_field({"count": " 12 "}, "count", "the count") == 12


def test_a_change_form_is_read_by_its_event_classs_own_fields(app):
    """A field added to an event class is read from the form with nothing else to list: by its
    name and type, required ones checked here, the rest left to the engine."""
    from dataclasses import dataclass
    from typing import ClassVar

    from werkzeug.datastructures import MultiDict

    from companion.game.events import required
    from companion.web.forms import event_fields

    @dataclass(frozen=True)
    class Planted:
        type: ClassVar[str] = "planted"
        gardener: str = required()
        rows: int = required(0)
        seeds: tuple = ()
        note: str | None = None
        source: str | None = None

    def read(**form):
        return event_fields(
            MultiDict(form),
            Planted,
            {"gardener": "the gardener", "rows": "the number of rows"},
            unsent=frozenset({"source"}),
            lists={"seeds": "seed"},
        )

    with app.test_request_context("/"):
        assert read(gardener=" Aki ", rows="3", seed=["01-1", " ", "02-1"], source="camera") == {
            "type": "planted",
            "gardener": "Aki",
            "rows": 3,
            "seeds": ["01-1", "02-1"],
        }
        assert read(gardener="Aki", rows="0", note=" by the gate ")["note"] == "by the gate"
        with pytest.raises(WebError, match=r"missing the gardener \(gardener\)"):
            read(rows="3")
        with pytest.raises(WebError, match="whole number"):
            read(gardener="Aki", rows="three")


def test_every_koikoi_event_the_page_records_is_read_from_its_fields(app):
    """The Koi-Koi page reads each event type by its class: a player's card, a correction's new
    card, a dealt hand's cards (the picker's card inputs), never what only the camera records."""
    from werkzeug.datastructures import MultiDict

    from companion.web.match import event_from_form

    with app.test_request_context("/"):
        form = MultiDict(
            [("type", "card_captured"), ("player", "Aki"), ("card", "01-1"), ("confidence", "1")]
        )
        assert event_from_form(form) == {"type": "card_captured", "player": "Aki", "card": "01-1"}
        form = MultiDict(
            [("type", "hand_declared"), ("player", "Aki"), ("kind", "teshi")]
            + [("card", code) for code in ("01-1", "01-2", "01-3", "01-4")]
        )
        assert event_from_form(form)["cards"] == ["01-1", "01-2", "01-3", "01-4"]
        form = MultiDict([("type", "capture_corrected"), ("player", "Aki"), ("card", "01-1")])
        with pytest.raises(WebError, match=r"missing the card \(new_card\)"):
            event_from_form(form)
        with pytest.raises(WebError, match=r"which player \(player\)"):
            event_from_form(MultiDict([("type", "koi_called")]))

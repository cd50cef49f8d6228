"""What a French or Japanese tablet page can show when it refuses a request: every sentence in
the page's language, none left in English. The refusals are found by reading the web package
(every ``WebError(...)``), then the routes that can give them are asked with ``?lang=fr`` and
``?lang=ja``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from test_camera_web import DealtCamera, FakeLive
from web_support import csrf, message

from companion.web import create_app

WEB = Path(__file__).parent.parent / "companion" / "web"

# Words that only an English sentence holds (a French one can share "zone", "image"...).
ENGLISH = re.compile(
    r"\b(the|must|needs?|is|are|of|with|between|number|seconds|which|whose|show|corners?|"
    r"picture|drag|layout|kept|sent|cannot|camera|field|card|cards|deal|try|again|too|small|"
    r"crosses|sees)\b",
    re.I,
)


def _said_at_request_time(arg, assigned: dict) -> bool:
    """Whether the first argument of a WebError is a sentence said in the page's language."""
    if _is_callers_missing_sentence(arg):
        return True  # every caller's ``missing=`` is checked to be said (below)
    if isinstance(arg, ast.Call):
        func = arg.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name in ("_", "gettext", "say"):
            return True
        if name == "capitalize":  # _("...").capitalize()
            return _said_at_request_time(func.value, assigned)
        if name == "opening_capital":  # opening_capital(_("..."))
            return _said_at_request_time(arg.args[0], assigned)
        # str(NO_CAMERA): a lazy_gettext constant, said when the request makes it a str
        if name == "str" and isinstance(arg.args[0], ast.Name):
            return assigned.get(arg.args[0].id) == "_l"
        return False
    if isinstance(arg, ast.BoolOp):  # a caller's sentence, or this one
        return all(_said_at_request_time(value, assigned) for value in arg.values)
    if isinstance(arg, ast.Attribute) and arg.attr == "sentence":
        return True  # a CompanionError's Message: the error handler says it
    if isinstance(arg, ast.Name):
        return assigned.get(arg.id) in ("_", "gettext")
    return False


def _is_callers_missing_sentence(node) -> bool:
    """``(missing or {}).get(name)``: the sentence a form's caller gave for a missing field."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr != "get":
        return False
    owner = node.func.value
    if isinstance(owner, ast.BoolOp):
        owner = owner.values[0]
    return isinstance(owner, ast.Name) and owner.id == "missing"


def _callers_missing_sentences():
    """Every ``missing={...}`` a web module gives a form reader: its place and whether each
    sentence in it is said in the page's language."""
    for path in sorted(WEB.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assigned = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                func = node.value.func
                for target in node.targets:
                    if isinstance(target, ast.Name) and isinstance(func, ast.Name):
                        assigned[target.id] = func.id
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "missing":
                if isinstance(node.value, ast.Dict):
                    for value in node.value.values:
                        yield f"{path.name}:{value.lineno}", _said_at_request_time(value, assigned)


def test_every_missing_field_sentence_a_form_is_given_is_said_in_the_page_language():
    found = list(_callers_missing_sentences())
    assert found, "no form is given its own sentence for a missing field"
    assert [place for place, said in found if not said] == []


def _web_errors():
    """Every ``WebError(...)`` of the web package: its place and whether its sentence is said
    in the page's language; found by reading the code, not listed by hand."""
    for path in sorted(WEB.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assigned = {}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        assigned[target.id] = node.value.func.id
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "WebError"
            ):
                yield f"{path.name}:{node.lineno}", _said_at_request_time(node.args[0], assigned)


def test_every_web_refusal_is_said_in_the_page_language():
    found = list(_web_errors())
    assert len(found) > 60
    english = [place for place, said in found if not said]
    assert english == [], f"sentences left in English: {english}"


# What a refusal quotes as the program reads it stays as it is: a query argument ("after",
# "(card=MM-K)"), a quoted value, a name with _ in it (max_seconds, captures_A), a deck
# file's keys; and the players' and the program's names.
CODE = re.compile(
    r"'[^']*'|[(（][A-Za-z_]+(?:=[\w-]+)?[)）]|[A-Za-z]+_[A-Za-z<>]+|\[[^\]]*\]|\{[^}]*\}"
    r"|(?<![A-Za-z])(?:[A-Z]{4,}|names)(?![A-Za-z])"  # a file's keys and tables, a format (TOML)
    r"|(?<![A-Za-z])(?:after|timeout|field|Aki|Ben|Hanafuda Companion)(?![A-Za-z])"  # names: an argument, a zone, a player
)


def _in_english(text: str) -> list[str]:
    return ENGLISH.findall(CODE.sub("", text))


def _check_said(response, lang: str, status: int, english: str, *paths: str) -> None:
    """The refusal said in ``lang``; the ``paths`` in it (a folder, an option) are no
    sentence's words."""
    assert response.status_code == status, response.get_data(as_text=True)[:300]
    said = message(response)
    assert said and said != english
    for path in paths:
        said = said.replace(path, "")
    assert _in_english(said) == [], (lang, said)
    if lang == "ja":  # only codes (a query argument, a zone's name, a card's) stay in Latin letters
        assert re.findall(r"[A-Za-z]{3,}", CODE.sub("", said)) == [], said


LANGS = ["fr", "ja"]


@pytest.fixture
def fake(tmp_path):
    return FakeLive(tmp_path / "zones.toml")


@pytest.fixture
def client(store, fake):
    return create_app(store, testing=True, live=fake).test_client()


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(
    ("url", "status", "english"),
    [
        ("/live/stream.mjpg?max_seconds=x", 400, "max_seconds must be a number of seconds."),
        (
            "/live/stream.mjpg?max_seconds=7200",
            400,
            "max_seconds must be between 0 and 3600 seconds.",
        ),
        ("/live/crop?card=03-1", 400, "Say whose capture to show (player)."),
        ("/live/crop?player=Aki", 400, "Say which card to show (card=MM-K)."),
        (
            "/live/crop?player=Ben&card=03-1",
            404,
            "The camera kept no picture of 03-1 captured by Ben.",
        ),
        ("/matches/{m}/seq?after=x", 400, "after must be an event number."),
        ("/matches/{m}/seq?after=0&timeout=99", 400, "timeout must be between 0 and 60 seconds."),
        (
            "/matches/{m}/live?max_seconds=-1",
            400,
            "max_seconds must be between 0 and 3600 seconds.",
        ),
    ],
)
def test_camera_and_live_api_refusals_in_the_page_language(
    client, store, lang, url, status, english
):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    url = url.format(m=match_id)
    assert message(client.get(url)) == english  # the English page as it always was
    _check_said(client.get(f"{url}&lang={lang}"), lang, status, english)


CROSSED = "0.1,0.1 0.9,0.9 0.9,0.1 0.1,0.9"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(
    ("fields", "english"),
    [
        ({}, "The form sent no zone corners (zone_<name> fields)."),
        ({"zone_field": "0.1,0.1 0.9,0.1"}, "Field needs at least 3 corners."),
        (
            {"zone_field": "0.1,0.1 0.9,0.1 a,b"},
            "Field: a corner is written x,y with two numbers, not 'a,b'.",
        ),
        (
            {"zone_field": "0.1,0.1 0.9,0.1 1.2,0.5"},
            "Field: corners are fractions of the picture from 0 to 1, not 1.2,0.5.",
        ),
        (
            {"zone_kitchen": "0.1,0.1 0.9,0.1 0.5,0.5"},
            "There is no zone 'kitchen' in this layout: expected captures_A, captures_B, "
            "draw_pile, field.",
        ),
        (
            {"zone_field": CROSSED},
            "Zone 'field' crosses itself: drag its corners into a plain outline.",
        ),
        (
            {"zone_field": "0.1,0.1 0.12,0.1 0.1,0.12"},
            "Zone 'field' covers 0.02% of the picture: too small to hold a card (at least "
            "0.2%); drag its corners apart.",
        ),
        (
            {"zone_field": " ".join(f"{0.5 + 0.4 * i / 40:.3f},0.{i % 2 + 1}" for i in range(40))},
            "Zone 'field' has 40 corners; a zone has at most 32.",
        ),
    ],
)
def test_a_refused_calibration_in_the_page_language(client, fake, lang, fields, english):
    token = csrf(client)
    refused = client.post("/calibrate", data={"csrf_token": token, **fields})
    assert message(refused) == english
    said = client.post(f"/calibrate?lang={lang}", data={"csrf_token": token, **fields})
    _check_said(said, lang, 400, english)
    assert not fake.zone_file.exists()


@pytest.mark.parametrize(
    ("lang", "cannot", "sees"),
    [
        ("en", "This camera cannot propose zones", "The camera sees 2 face-up cards"),
        ("fr", "Cette caméra ne peut pas proposer de zones", "La caméra voit 2 cartes"),
        ("ja", "このカメラは領域を提案できません", "カメラに見える表向きの札は2枚です"),
    ],
)
def test_a_layout_that_cannot_be_proposed_is_said_in_the_page_language(
    client, store, tmp_path, lang, cannot, sees
):
    page = client.get(f"/calibrate?propose=1&lang={lang}").get_data(as_text=True)
    assert cannot in page
    camera = DealtCamera(tmp_path / "zones.toml")
    camera.boxes = [(0.2, 0.4, 0.25, 0.52), (0.3, 0.4, 0.35, 0.52)]
    dealt = create_app(store, testing=True, live=camera).test_client()
    page = dealt.get(f"/calibrate?propose=1&lang={lang}").get_data(as_text=True)
    assert sees in page


# -- importing a match export: the store's and the engine's refusals ---------------------------


def _export_cases(exported: dict) -> list:
    started = exported["events"][0]
    with_event = lambda event: {**exported, "events": [{**started, "event": event}]}  # noqa: E731
    return [
        ({**exported, "format": "x"}, "This is not a match exported by Hanafuda Companion."),
        ({**exported, "version": 9}, "This export is version '9'; this program reads version 1."),
        # a refusal met while the export is replayed, quoted as it has always been
        (
            {**exported, "events": []},
            "The export holds a value no match has (The export holds no event.).",
        ),
        (
            {**exported, "events": [{**started, "seq": 2}]},
            "The export holds a value no match has (The export's event 1 is missing or out "
            "of order.).",
        ),
        (
            with_event({**started["event"], "rules_text": "x = "}),
            "The export holds a value no match has (The rule file is not valid TOML: Invalid "
            "value (at end of document).).",
        ),
        (
            with_event({**started["event"], "rules_text": "[game]\nname = = 1\n"}),
            "The export holds a value no match has (The rule file is not valid TOML: Invalid "
            "value (at line 2, column 8).).",
        ),
        (
            with_event({**started["event"], "deck": {"cards": {"01-1": {"names": 5}}}}),
            "The export holds a value no match has (The deck file of the match, "
            '[cards."01-1"]: names must be a table like { en = "Crane", fr = "Grue" }.).',
        ),
    ]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("case", range(7))
def test_a_refused_import_is_said_in_the_page_language(store, lang, case):
    import io
    import json

    from companion import CompanionError

    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    data, english = _export_cases(store.export_match(match_id))[case]
    with pytest.raises(CompanionError) as refused:  # the CLI's sentence, as it always was
        store.import_match(json.loads(json.dumps(data)))
    assert str(refused.value) == english
    client = create_app(store, testing=True).test_client()
    token = csrf(client)

    def send(query=""):
        body = json.dumps(data).encode()
        return client.post(
            f"/matches/import{query}",
            data={"csrf_token": token, "file": (io.BytesIO(body), "match.json")},
            content_type="multipart/form-data",
        )

    assert message(send()) == english
    _check_said(send(f"?lang={lang}"), lang, 400, english)


# -- the store's refusals of a tablet's request -------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
def test_the_stores_refusals_in_the_page_language(store, lang):
    from test_i18n import post_event

    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    client = create_app(store, testing=True).test_client()
    english = "The request id must be 1 to 200 characters long."
    long_id = {"type": "round_started", "request_id": "x" * 201}
    assert message(post_event(client, store, match_id, **long_id)) == english
    huge = "/matches/99999999999999999999"
    assert message(client.get(huge)) == "There is no match 99999999999999999999 in this database."
    _check_said(
        client.get(f"{huge}?lang={lang}"),
        lang,
        404,
        "There is no match 99999999999999999999 in this database.",
    )
    # the page's language, kept in its cookie since the request above
    _check_said(post_event(client, store, match_id, **long_id), lang, 400, english)


# -- a taught deck that cannot be read ----------------------------------------------------------


class SwitchingCamera(FakeLive):
    def use_deck(self, deck):
        self.deck = deck


@pytest.mark.parametrize("lang", LANGS)
def test_an_unreadable_taught_deck_is_said_in_the_page_language(store, tmp_path, lang):
    (tmp_path / "decks" / "broken").mkdir(parents=True)
    (tmp_path / "decks" / "broken" / "deck.json").write_text("{}", encoding="utf-8")
    app = create_app(store, testing=True, live=SwitchingCamera(tmp_path / "zones.toml"))
    app.config["DECKS_DIR"] = str(tmp_path / "decks")
    client = app.test_client()
    token = csrf(client)
    decks = str(tmp_path / "decks")
    english = "The taught deck broken cannot be read: teach it again, or remove it."
    assert message(client.post("/live/deck", data={"csrf_token": token, "deck": "broken"})) == (
        english
    )
    said = client.post(f"/live/deck?lang={lang}", data={"csrf_token": token, "deck": "broken"})
    # neither the server's folder nor a library's English reason reaches the tablet
    assert decks not in message(said) and "No such file" not in message(said)
    _check_said(said, lang, 409, english, "broken")


# -- the camera demo without card images -------------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
def test_the_camera_demo_without_decks_is_said_in_the_page_language(store, monkeypatch, lang):
    from companion.demo import CameraDemo
    from companion.simulator import synth

    def no_decks():
        raise synth.SynthError("no decks")

    monkeypatch.setattr(synth, "default_deck_dirs", no_decks)
    app = create_app(store, testing=True)
    app.config["DEMO_CAMERA"] = CameraDemo(app, store, echo=lambda *a: None).start
    client = app.test_client()
    english = message(client.get("/demo/camera"))
    assert english.startswith("The camera demo films card images from ../shared/decks")
    said = client.get(f"/demo/camera?lang={lang}")
    codes = ("$COMPANION_SHARED/decks", "../shared/decks", "--camera")
    _check_said(said, lang, 503, english, *codes)
    assert "../shared/decks" in message(said) and store.matches() == []


@pytest.mark.parametrize(
    ("lang", "source", "deck"),
    [
        ("en", "simulated table (standard deck, 10 fps)", "Standard Hanafuda (Nintendo design)"),
        ("fr", "table simulée (jeu standard, 10 images/s)", "Hanafuda standard (modèle Nintendo)"),
        ("ja", "シミュレーションの卓（standardの札、10フレーム/秒）", "標準の花札（任天堂の絵柄）"),
    ],
)
def test_the_camera_source_and_the_standard_decks_title_in_the_page_language(
    client, fake, lang, source, deck
):
    from companion.game.cards import STANDARD_DECK
    from companion.live.messages import Message
    from companion.web.camera import _deck_title

    fake.status = lambda: {
        **FakeLive.status(fake),
        "source": Message("source.simulated_table", deck="standard", fps="10"),
    }
    assert client.get(f"/live/status?lang={lang}").get_json()["source"] == source
    page = client.get(f"/live?lang={lang}").get_data(as_text=True)
    assert f'<span data-field="source">{source}</span>' in page
    with client.application.test_request_context(f"/?lang={lang}"):
        assert _deck_title(STANDARD_DECK) == deck


def test_the_teach_page_elides_french_and_names_the_photos_in_japanese(client):
    from flask import render_template_string

    photo = "{{ _('Photo of %(month)s', month=month) }}"
    with client.application.test_request_context("/?lang=fr"):
        assert render_template_string(photo, month="avril") == "Photo d’avril"
        assert render_template_string(photo, month="octobre") == "Photo d’octobre"
        assert render_template_string(photo, month="mai") == "Photo de mai"
        assert render_template_string(photo, month="<b>") == "Photo de &lt;b&gt;"  # escaped
    with client.application.test_request_context("/?lang=en"):
        assert render_template_string(photo, month="April") == "Photo of April"
    japanese = client.get("/decks/teach?lang=ja").get_data(as_text=True)
    assert "（と back）" not in japanese and "01〜12とback（裏面）" in japanese

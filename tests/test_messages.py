"""The engine's sentences as Messages: English as text, id and parameters for the page, and
every template translated in French and Japanese."""

from __future__ import annotations

import copy
import json
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from test_i18n import post_event

from companion import CompanionError
from companion.game import engine, hanamikoji
from companion.game.rules import RuleSet
from companion.game.scoring import score_hand
from companion.messages import (
    CATALOGS,
    SEPARATORS,
    TEMPLATES,
    CardCode,
    Listing,
    Message,
    Named,
    load_catalogs,
    say,
)

# Every layer's sentences, whichever modules this test's imports happened to load.
load_catalogs()

TRANSLATIONS = Path(__file__).parent.parent / "companion" / "web" / "translations"
MATCHES = Path(__file__).parent / "matches"
PLACEHOLDER = re.compile(r"%\((\w+)\)s")


# What a refusal quotes as the program reads it (an event type, a deck file's key, a path,
# 'back') stays as it is in every language: quoted or bracketed, or written with _ . or / inside.
CODE = re.compile(r"'[^']*'|(?<!\S)\.\w+|\[[^\]]*\]|\{[^}]*\}|\S*\w[_./]\w\S*|\b[A-Z]{4,}\b")
DECK_KEYS = {"name", "title", "base", "cards", "names", "roles", "add_roles"}


def code_words(message_id: str, english: str) -> set:
    """The words of an English template that are code, not English."""
    english = PLACEHOLDER.sub("", english)
    words = {w for literal in CODE.findall(english) for w in re.findall(r"[A-Za-z]+", literal)}
    if message_id.startswith(("refusal.deck", "refusal.match_deck")):
        words |= {w for w in DECK_KEYS if re.search(rf"\b{w}\b", english)}
    return words


def catalog(lang: str) -> dict:
    with open(TRANSLATIONS / lang / "LC_MESSAGES" / "messages.po", "rb") as f:
        # a plural entry by its singular msgid, as a template names it
        return {m.id[0] if isinstance(m.id, tuple) else m.id: m for m in read_po(f) if m.id}


# -- the type --------------------------------------------------------------------------------


def test_a_message_is_its_english_text_with_its_id_and_parameters():
    yaku = Listing([Message("yaku.points", name=Named("Gokō", {"ja": "五光"}), points=10)])
    reason = Message("round.stop", side="Aki", yaku=yaku, points=10)
    assert reason == "Aki stops with Gokō 10: 10 points"
    assert str(reason) == "Aki stops with Gokō 10: 10 points"
    assert reason.id == "round.stop" and reason.kind == "round"
    assert reason.params["side"] == "Aki" and reason.params["yaku"].items[0].id == "yaku.points"
    assert reason.template == "%(side)s stops with %(yaku)s: %(points)s points"
    assert json.dumps({"reason": reason}) == json.dumps({"reason": str(reason)})


@pytest.mark.parametrize("clone", [lambda m: pickle.loads(pickle.dumps(m)), copy.deepcopy])
def test_a_message_survives_a_copy_whole(clone):
    named = Named("Gokō", {"ja": "五光"})
    message = Message(
        "outcome.wins",
        winner="aki",
        table=Listing([Message("standing.entry", name=named, value=CardCode("08-1"))]),
    ).with_capital()
    again = clone(message)
    assert again == message == "Aki wins the match: Gokō 08-1."
    assert again.id == "outcome.wins" and again.capitalized
    entry = again.params["table"].items[0]
    assert entry.params["name"].names == {"ja": "五光"}
    assert isinstance(entry.params["value"], CardCode)


def test_an_unknown_message_id_is_refused():
    with pytest.raises(ValueError, match="No message template 'round.nowhere'"):
        Message("round.nowhere")


def test_every_layers_catalog_is_loaded_and_known_to_the_mechanism():
    # Each catalog registered its templates; a module registering templates is a catalog.
    assert {t.catalog for t in TEMPLATES.values()} == set(CATALOGS)
    registering = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "companion").rglob("*.py")
        if "catalog(__name__)" in path.read_text(encoding="utf-8")
    }
    assert registering == set(CATALOGS)
    for message_id, layer in [
        ("round.stop", "companion.game.messages"),
        ("camera.lost", "companion.live.messages"),
        ("photo.blurred", "companion.recognizer.messages"),
        ("refusal.card_class", "companion.detections"),
        ("refusal.stale", "companion.store_messages"),
        ("refusal.export_value", "companion.store_messages"),
    ]:
        assert TEMPLATES[message_id].catalog == layer, message_id


def test_a_module_that_is_not_a_catalog_cannot_register_a_template():
    from companion.messages import catalog as registering_in

    with pytest.raises(ValueError, match="not one of the message catalogs"):
        registering_in("companion.web.camera")
    with pytest.raises(ValueError, match="already in companion.game.messages"):
        registering_in("companion.live.messages")("round.stop", "%(side)s stops")
    assert TEMPLATES["round.stop"].catalog == "companion.game.messages"


def test_a_layers_sentence_is_made_where_its_catalog_was_not_loaded_yet():
    # (a sentence unpickled in a process that has not imported its layer yet)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from companion.messages import Message\n"
            "assert 'companion.live.messages' not in sys.modules\n"
            "print(Message('camera.following', n=3))\n",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    assert out == "Following match 3.\n"


def test_say_translates_each_part():
    catalog_ja = {
        "%(side)s stops with %(yaku)s: %(points)s points": "%(side)sが勝負（%(yaku)s）：%(points)s点",
        "%(name)s %(points)s": "%(name)s %(points)s点",
        ", ": "、",
    }
    yaku = Listing(
        [
            Message("yaku.points", name=Named("Gokō", {"ja": "五光"}), points=10),
            Message("yaku.points", name=Named("Tane"), points=1),
        ]
    )
    reason = Message("round.stop", side="aki", yaku=yaku, points=11)
    assert say(reason) == str(reason)
    assert (
        say(reason, lambda s: catalog_ja.get(s, s), "ja")
        == "akiが勝負（五光 10点、Tane 1点）：11点"
    )
    assert say(reason.with_capital(), lambda s: catalog_ja.get(s, s), "ja").startswith("Akiが")
    assert say(CardCode("08-1"), name_card=lambda code: f"Moon ({code})") == "Moon (08-1)"


# -- every message is translated ---------------------------------------------------------------


@pytest.mark.parametrize("lang", ["fr", "ja"])
def test_every_message_template_has_its_translation(lang):
    known = catalog(lang)
    for message_id, template in TEMPLATES.items():
        entry = known.get(template.english)
        assert entry is not None, f"{lang}: {message_id} ({template.english!r}) is not extracted"
        strings = entry.string if isinstance(entry.string, tuple) else (entry.string,)
        assert all(strings) and not entry.fuzzy, f"{lang}: {message_id} is not translated"
        # a counting template is a plural entry, and only it
        assert isinstance(entry.id, tuple) == bool(template.plural), message_id
        if template.plural:
            assert entry.id == (template.english, template.plural), message_id
        # every parameter is said, but another program's English words, which may be left out
        english = set(PLACEHOLDER.findall(template.english))
        for string in strings:
            said = set(PLACEHOLDER.findall(string))
            assert english - set(template.english_only) <= said <= english, message_id
    for sep in SEPARATORS:
        assert known[sep].string, f"{lang}: the separator {sep!r} is not translated"


@pytest.mark.parametrize("lang", ["fr", "ja"])
def test_every_message_is_said_in_the_language_with_sample_parameters(lang):
    from companion.store import MatchStore
    from companion.web import create_app
    from companion.web.i18n import say as page_say

    store = MatchStore.open(":memory:")
    app = create_app(store, testing=True)
    try:
        with app.test_request_context(f"/?lang={lang}"):
            for message_id, template in TEMPLATES.items():
                params = {name: 7 for name in PLACEHOLDER.findall(template.english)}
                message = Message(message_id, **params)
                said = page_say(message)
                assert said, message_id
                assert "%(" not in said, message_id
                if lang == "ja":  # every Japanese sentence is written in Japanese
                    english_words = re.findall(r"[A-Za-z]{4,}", said)
                    allowed = {"Koi", "Oya"} | code_words(message_id, template.english)
                    assert set(english_words) <= allowed, (message_id, said)
    finally:
        store.close()


# -- the engines speak only in messages --------------------------------------------------------


def _engine_sentences(state):
    for r in state.rounds:
        yield r.reason
        yield from (m.reason for m in r.multipliers)
        yield from r.notes
    yield from state.warnings
    if state.outcome:
        yield state.outcome.text
    for e in state.log:
        yield e.describe()


@pytest.mark.parametrize("path", sorted(MATCHES.glob("*.json")), ids=lambda p: p.stem)
def test_every_sentence_of_a_match_is_a_message(path):
    events = json.loads(path.read_text(encoding="utf-8"))["events"]
    state = None
    seen = 0
    for event in events:
        state = engine.apply(state, event)
        for sentence in _engine_sentences(state):
            assert isinstance(sentence, Message), repr(sentence)
            seen += 1
    assert seen


def test_hanamikoji_speaks_in_messages():
    state = hanamikoji.play(
        ["1,1,1,1,1,1,2:1,1,1,1,1,2,1", "1,1,1,0,2,1,2:0,0,0,3,1,2,2"], players=("aki", "Ben")
    )
    names = state.names
    sentences = [r.reason(names) for r in state.rounds] + [e.describe(names) for e in state.log]
    assert all(isinstance(s, Message) for s in sentences), sentences
    assert state.outcome.text(names) == "Aki wins with 5 geishas and 14 points."  # capital A
    assert state.outcome.text(names).params["winner"] == "aki"
    assert hanamikoji.condition(11, 4).items[1].id == "hanamikoji.points"


def test_yaku_names_carry_the_rule_files_japanese_names():
    livret = RuleSet.load("livret")
    hand = score_hand(livret, ["01-1", "03-1", "08-1", "11-1", "12-1"])
    (goko,) = hand.yaku
    assert goko.name == "Gokō" and goko.name.in_language("ja") == "五光"
    assert json.loads(json.dumps(goko.to_dict()))["name"] == "Gokō"
    expected = {"inoshikacho": "猪鹿蝶", "hanami": "花見で一杯", "tsukimi": "月見で一杯"}
    for preset in ("livret", "koikoi-japan", "hana-koikoi"):
        rules = RuleSet.load(preset)
        for yaku_id, japanese in expected.items():
            assert rules.yaku_by_id(yaku_id).name.in_language("ja") == japanese, preset
    for preset in RuleSet.presets():
        for y in RuleSet.load(preset).yaku:
            assert y.name.names.get("ja"), f"{preset}: {y.id} has no Japanese name"
            assert not re.search(r"[A-Za-z]", y.name.names["ja"]), (preset, y.id)


def test_a_rule_file_refuses_names_that_are_not_a_table_of_texts():
    from companion.game.rules import RuleError

    text = RuleSet.load("livret").source_text.replace('names = { ja = "五光" }', "names = 5", 1)
    with pytest.raises(RuleError, match="names maps a language code to the name"):
        RuleSet.from_text(text)


# -- code tests a warning's kind ---------------------------------------------------------------


def test_warnings_have_a_kind():
    state = engine.replay(
        [
            {"type": "match_started", "players": ["Aki", "Ben"], "rules": "livret", "rounds": 6},
            {"type": "round_started", "field": ["01-1", "01-2", "01-3", "01-4"]},
        ]
    )
    assert [w.kind for w in state.warnings] == ["redeal"]
    state = engine.apply(state, {"type": "card_captured", "player": "Ben", "card": "02-1"})
    (unpaired,) = state.warnings
    assert unpaired.kind == "unpaired_month" and unpaired.params["player"] == "Ben"
    assert unpaired == (
        "Ben holds 1 card of month 02 (02-1): captures come in pairs, so one may be misread."
    )


def test_the_camera_proposes_a_redeal_from_the_warnings_kind():
    from companion.live.capture_decider import CaptureDecider
    from companion.live.tracker import TableState

    match = engine.replay(
        [
            {"type": "match_started", "players": ["A", "B"], "rules": "livret", "rounds": 6},
            {"type": "round_started", "field": ["03-1", "03-2", "04-1", "04-2"]},
        ]
    )
    decider = CaptureDecider()
    table = TableState(frame=1, time=0.1, arrivals={"A": [], "B": []})
    decider.step(table, match, seats={"A": "A", "B": "B"})
    assert decider.proposal is None  # two pairs: nothing to deal again
    match = engine.replay(
        [
            {"type": "match_started", "players": ["A", "B"], "rules": "livret", "rounds": 6},
            {"type": "round_started", "field": ["03-1", "03-2", "03-3", "03-4"]},
        ]
    )
    decider.step(table, match, seats={"A": "A", "B": "B"})
    assert decider.proposal.kind == "redeal"
    assert decider.proposal.text.id == "warning.redeal_month"
    # what the tablet shows from the camera: the proposal, no reading against a tap standing
    assert decider.shown == decider.proposal
    decider.notice = Message("camera.table_shows_koi", player="A")
    assert decider.shown.kind == "reading" and decider.shown.text.id == "camera.table_shows_koi"


class _Camera:
    """What the page reads of a live session: its status, with the session's Messages."""

    zones = None

    def __init__(self, message, proposal=None):
        self.message, self.proposal = message, proposal

    def status(self) -> dict:
        return {
            "camera": "live",
            "source": "camera:0",
            "fps": 15.0,
            "frames": 3,
            "match_id": 1,
            "message": self.message,
            "proposal": self.proposal,
        }


@pytest.mark.parametrize(
    ("lang", "following", "deal"),
    [
        ("en", "Following match 1.", "The table is clear: deal the next round."),
        ("fr", "Suivi de la partie 1.", "La table est vide\u00a0: servez la manche suivante."),
        ("ja", "対局1を追跡中。", "卓が片付きました：次の回を配ってください。"),
    ],
)
def test_the_cameras_messages_in_the_page_language(lang, following, deal):
    from companion.store import MatchStore
    from companion.web import create_app

    proposal = {"kind": "next_round", "text": Message("camera.next_round")}
    camera = _Camera(Message("camera.following", n=1), proposal)
    store = MatchStore.open(":memory:")
    try:
        client = create_app(store, testing=True, live=camera).test_client()
        status = client.get(f"/live/status?lang={lang}").get_json()
        assert status["message"] == following
        assert status["proposal"] == {"kind": "next_round", "text": deal}
        page = client.get(f"/live?lang={lang}").get_data(as_text=True)
        assert following in page and deal in page
    finally:
        store.close()


def test_a_match_stored_before_the_preset_named_its_yaku_gets_the_presets_names():
    stored = "\n".join(
        line
        for line in RuleSet.load("nintendo").source_text.splitlines()
        if not line.startswith("names = ")
    )
    rules = RuleSet.from_text(stored)
    assert rules.yaku_by_id("hanami").name.in_language("ja") == "花見酒"
    own = stored.replace('name = "nintendo"', 'name = "my-rules"', 1)
    assert RuleSet.from_text(own).yaku_by_id("hanami").name.in_language("ja") == "Hanami-zake"


def test_a_logged_round_without_its_oya_says_no_none():
    assert engine.RoundStarted().describe() == "Round started"
    assert engine.RoundStarted(oya="Aki").describe() == "Round started, Aki is Oya"
    assert engine.HandDeclared(player="Aki", kind="teshi").describe() == "Aki declared teshi"


# -- refusals: the English sentence as before, a Message for the page --------------------------

ROOT = Path(__file__).parent.parent
GAME_ERRORS = {"IllegalEvent", "HanamikojiError", "CardError", "ScoringError"}
REFUSING_SOURCES = [
    *sorted((ROOT / "companion" / "game").glob("*.py")),
    ROOT / "companion" / "detections.py",
    ROOT / "companion" / "store.py",
]


def _game_error_raises():
    """Every ``raise IllegalEvent(...)`` (HanamikojiError, CardError, ScoringError) in the
    source: its place and its first argument, found by reading the code, not listed by hand."""
    import ast

    for path in REFUSING_SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if name in GAME_ERRORS:
                    yield f"{path.name}:{node.lineno}", node.exc.args[0] if node.exc.args else None


def test_every_game_error_is_raised_with_a_message():
    import ast

    raised = list(_game_error_raises())
    assert len(raised) > 100
    for place, argument in raised:
        passed_on = isinstance(argument, ast.Attribute) and argument.attr == "sentence"
        a_message = (
            isinstance(argument, ast.Call)
            and getattr(argument.func, "id", None) == "Message"
            and isinstance(argument.args[0], ast.Constant | ast.Name)
        )
        assert passed_on or a_message, f"{place} raises a sentence that is not a Message"
        if a_message and isinstance(argument.args[0], ast.Constant):
            message_id = argument.args[0].value
            assert TEMPLATES[message_id].kind == "refusal", (place, message_id)


def test_every_refusal_template_is_raised_somewhere():
    source = "\n".join(p.read_text(encoding="utf-8") for p in REFUSING_SOURCES)
    unused = [
        message_id
        for message_id, template in TEMPLATES.items()
        if template.kind in ("refusal", "field", "action") and f'"{message_id}"' not in source
    ]
    assert unused == []


def _refused(apply, *args):
    with pytest.raises(CompanionError) as refused:
        apply(*args)
    return refused.value


def test_a_refusal_is_its_old_english_sentence_and_carries_its_message():
    started = json.loads((MATCHES / "livret-6.json").read_text())["events"][0]
    match = engine.replay([started])
    capture = {"type": "card_captured", "player": "Aiko", "card": "01-1"}
    cases = [
        (
            _refused(engine.apply, match, capture),
            "No round is in progress: start round 1 before recording captures.",
            "refusal.no_round",
        ),
        (
            _refused(
                engine.replay, [started, {"type": "round_started"}, {**capture, "player": "Zed"}]
            ),
            "Event 3 is refused: Unknown player 'Zed': the players are Aiko, Ben.",
            "refusal.event_refused",
        ),
        (
            _refused(engine.apply, match, {**capture, "player": ""}),
            "The player must be a non-empty name, not ''.",
            "refusal.name_empty",
        ),
        (
            _refused(hanamikoji.apply, None, {"type": "hanamikoji_started", "players": ["a"]}),
            "Hanamikoji is played by 2 players, not 1.",
            "refusal.two_players",
        ),
        (
            _refused(score_hand, RuleSet.load("livret"), ["01-1", "01-1"]),
            "Card 01-1 is listed twice; each card exists once.",
            "refusal.card_twice",
        ),
    ]
    for error, english, message_id in cases:
        assert str(error) == english
        assert isinstance(error.sentence, Message) and error.sentence.id == message_id


@pytest.mark.parametrize(
    ("lang", "said"),
    [
        ("en", "Event 3 is refused: Unknown player 'Zed': the players are Aiko, Ben."),
        (
            "fr",
            "L’événement 3 est refusé\u00a0: Joueur inconnu 'Zed'\u00a0: "
            "les joueurs sont Aiko, Ben.",
        ),
        ("ja", "イベント3は受け付けられません：不明なプレイヤー'Zed'：プレイヤーはAiko、Benです。"),
    ],
)
def test_a_refusal_is_said_in_the_page_language(lang, said):
    from companion.store import MatchStore
    from companion.web import create_app
    from companion.web.i18n import say as page_say

    started = json.loads((MATCHES / "livret-6.json").read_text())["events"][0]
    bad = {"type": "card_captured", "player": "Zed", "card": "01-1"}
    error = _refused(engine.replay, [started, {"type": "round_started"}, bad])
    store = MatchStore.open(":memory:")
    try:
        with create_app(store, testing=True).test_request_context(f"/?lang={lang}"):
            assert page_say(error.sentence) == said
    finally:
        store.close()


def test_a_refusal_opens_with_a_capital_in_every_language_and_quotes_a_sentence_without_its_stop():
    from companion.messages import say as said_with

    french = {
        "The %(what)s must be a non-empty name, not %(value)s.": "%(what)s doit être un nom non vide.",
        "player name": "le nom du joueur",
        "The match is over (%(outcome)s); nothing more can be recorded.": "Finie (%(outcome)s).",
        "%(winner)s wins the match: %(table)s.": "%(winner)s gagne : %(table)s.",
    }
    error = _refused(engine.apply, None, {"type": "match_started", "players": [""]})
    assert (
        said_with(error.sentence, french.get, "fr") == "Le nom du joueur doit être un nom non vide."
    )
    over = Message(
        "refusal.match_over",
        outcome=Message("outcome.wins", winner="Aki", table="6").without_stop(),
    )
    assert over == "The match is over (Aki wins the match: 6); nothing more can be recorded."
    assert said_with(over, french.get, "fr") == "Finie (Aki gagne : 6)."
    assert pickle.loads(pickle.dumps(over)).params["outcome"].unstopped
    # A code or a name opening the translation stays as it is written.
    unknown = _refused(engine.apply, None, {"type": "capture_corrected", "seq": 1})
    japanese = {"Unknown field %(field)s for %(type)s: expected %(fields)s.": "%(type)sに不明な欄"}
    said = said_with(unknown.sentence, lambda text: japanese.get(text, text), "ja")
    assert said == "capture_correctedに不明な欄"


@pytest.mark.parametrize(
    ("lang", "held", "no_round"),
    [
        (
            "en",
            "Aki already holds 01-1 (Crane and Sun) this round.",
            "No round is in progress: start round 1 before recording captures.",
        ),
        (
            "fr",
            "Aki a déjà pris Grue et soleil (01-1) dans cette manche.",
            "Aucune manche n’est en cours\u00a0: commencez la manche 1 avant de noter des prises.",
        ),
        (
            "ja",
            "Akiはこの回ですでに松に鶴（01-1）を取っています。",
            "進行中の回がありません：取り札の記録の前に第1回を始めてください。",
        ),
    ],
)
def test_the_tablet_shows_a_refusal_in_its_language(client, store, lang, held, no_round):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    client.get(f"/?lang={lang}")
    capture = {"type": "card_captured", "player": "Aki", "card": "01-1"}
    refused = post_event(client, store, match_id, **capture)
    assert refused.status_code == 400 and no_round in refused.get_data(as_text=True)
    post_event(client, store, match_id, type="round_started")
    assert post_event(client, store, match_id, **capture).status_code == 200
    refused = post_event(client, store, match_id, **capture)
    assert refused.status_code == 400 and held in refused.get_data(as_text=True)


@pytest.mark.parametrize(
    ("lang", "said"),
    [
        ("en", "Aki already has 1 items before Ayane."),
        ("fr", "Aki a déjà 1 objets devant Ayane."),
        ("ja", "AkiはすでにAyaneの前にアイテムを1枚置いています。"),
    ],
)
def test_a_hanamikoji_refusal_in_the_page_language(client, store, lang, said):
    match_id = store.create_hanamikoji_match(["Aki", "Ben"])
    client.get(f"/?lang={lang}")
    item = {"type": "items_set", "player": "A", "geisha": "ayane", "count": 1}
    assert post_event(client, store, match_id, "hanamikoji/events", **item).status_code == 200
    refused = post_event(client, store, match_id, "hanamikoji/events", **item)
    assert refused.status_code == 400
    assert said in refused.get_data(as_text=True)


@pytest.mark.parametrize(
    ("lang", "said"),
    [
        ("en", "The match changed since this page was loaded; reload and try again."),
        ("fr", "La partie a changé depuis le chargement de cette page\u00a0; rechargez-la"),
        ("ja", "このページを開いた後に対局が変わりました。"),
    ],
)
def test_a_stale_page_is_told_so_in_its_language(client, store, lang, said):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    client.get(f"/?lang={lang}")
    assert post_event(client, store, match_id, type="round_started").status_code == 200
    stale = post_event(client, store, match_id, type="redeal", expected_seq=0)
    assert stale.status_code == 409 and said in stale.get_data(as_text=True)


@pytest.mark.parametrize(
    ("lang", "both", "same"),
    [
        ("en", "give both names", "Two players have the same name; give each a different one."),
        ("fr", "donnez les deux noms", "Deux joueurs ont le même nom"),
        ("ja", "2人とも名前を入れてください", "同じ名前のプレイヤーがいます。"),
    ],
)
def test_the_hanamikoji_form_refuses_in_the_page_language(client, store, lang, both, same):
    client.get(f"/?lang={lang}")
    page = client.get("/").get_data(as_text=True)
    token = re.search(r'"X-CSRF-Token": "([^"]+)"', page).group(1)
    form = {"csrf_token": token, "rules": "hanamikoji", "player_1": "Aki", "first": "1"}
    headers = {"HX-Request": "true"}
    one_name = client.post("/matches", data={**form, "player_2": ""}, headers=headers)
    assert one_name.status_code == 400 and both in one_name.get_data(as_text=True)
    twice = client.post("/matches", data={**form, "player_2": "aki"}, headers=headers)
    assert twice.status_code == 400 and same in twice.get_data(as_text=True)

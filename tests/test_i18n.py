"""One language per page: English, French or Japanese, by ``?lang=``, the browser or default."""

from __future__ import annotations

import re
import uuid

import pytest
from babel.messages.pofile import read_po

from companion.web import WEB_DIR

HX = {"HX-Request": "true"}
TRANSLATIONS = WEB_DIR / "translations"
PLACEHOLDER = re.compile(r"%\(\w+\)[sdr]")


def catalog(lang: str):
    with open(TRANSLATIONS / lang / "LC_MESSAGES" / "messages.po", "rb") as f:
        return read_po(f)


def visible_text(page: str) -> str:
    """What a reader sees: no tags, scripts, styles or icons; entities left as they are."""
    page = re.sub(r"<(script|style|svg)\b[\s\S]*?</\1>", " ", page)
    return re.sub(r"[ \t\r\n]+", " ", re.sub(r"<[^>]+>", " ", page)).strip()


def page_lang(page: str) -> str:
    return re.search(r'<html lang="([^"]+)"', page).group(1)


def post_event(client, store, match_id, path="events", **fields):
    """A form the tablet sends to the match's ``path`` (its events, or hanamikoji/events)."""
    page = client.get("/").get_data(as_text=True)
    token = re.search(r'"X-CSRF-Token": "([^"]+)"', page).group(1)
    data = {
        "csrf_token": token,
        "request_id": uuid.uuid4().hex,
        "expected_seq": store.last_seq(match_id),
        **fields,
    }
    return client.post(f"/matches/{match_id}/{path}", data=data, headers=HX)


def summary_says(client, match_id, lang: str, words) -> str:
    """Check the printable summary in ``lang``: its ``words`` shown, no English left; return
    the English page's text."""
    page = client.get(f"/matches/{match_id}/summary?lang={lang}").get_data(as_text=True)
    assert page_lang(page) == lang
    text = visible_text(page)
    for word in words:
        assert word in text, word
    assert english_leftovers(text, lang) == []
    return visible_text(client.get(f"/matches/{match_id}/summary?lang=en").get_data(as_text=True))


@pytest.fixture
def played(client, store):
    """A match one round in: Aki captured the crane, the round is open."""
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    assert post_event(client, store, match_id, type="round_started").status_code == 200
    assert (
        post_event(client, store, match_id, type="card_captured", player="Aki", card="01-1")
    ).status_code == 200
    return match_id


def english_leftovers(text: str, lang: str) -> list[str]:
    """The catalog's English strings (those translated differently, without placeholders)
    that still show in ``text``, a page that should be in ``lang``."""
    found = []
    for message in catalog(lang):
        english, translated = message.id, message.string
        if not english or isinstance(english, tuple) or PLACEHOLDER.search(english):
            continue
        if translated == english or len(english) < 4:
            continue
        if re.search(rf"(?<![\w-]){re.escape(english)}(?![\w-])", text):
            found.append(english)
    return found


# -- the catalogs ----------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["fr", "ja"])
def test_every_string_is_translated_with_the_same_placeholders(lang):
    from companion.messages import TEMPLATES, load_catalogs

    load_catalogs()
    # another program's English words in an engine's sentence, which a translation may leave out
    english_only = {t.english: {f"%({p})s" for p in t.english_only} for t in TEMPLATES.values()}
    messages = [m for m in catalog(lang) if m.id]
    assert len(messages) > 150
    for m in messages:
        ids = m.id if isinstance(m.id, tuple) else (m.id,)
        strings = m.string if isinstance(m.string, tuple) else (m.string,)
        assert all(strings), f"{lang}: {ids[0]!r} is not translated"
        assert not m.fuzzy, f"{lang}: {ids[0]!r} is marked fuzzy"
        for s in strings:
            expected = sorted(PLACEHOLDER.findall(ids[0]))
            left_out = english_only.get(ids[0], set())
            said = sorted(PLACEHOLDER.findall(s))
            assert said == expected or said == [p for p in expected if p not in left_out], s


@pytest.mark.parametrize("lang", ["en", "fr", "ja"])
def test_compiled_catalog_is_up_to_date(lang):
    from babel.messages.mofile import read_mo

    def texts(messages):
        def text(value):
            return value if isinstance(value, str) else tuple(value)

        # An entry left to its msgid (most of the English catalog) says the msgid either way.
        said = {text(m.id): text(m.string) for m in messages if m.id}
        return {k: v for k, v in said.items() if any(v) and v != k}

    with open(TRANSLATIONS / lang / "LC_MESSAGES" / "messages.mo", "rb") as f:
        compiled = texts(read_mo(f))
    assert compiled == texts(catalog(lang)), "run pybabel compile (translations/README.md)"


# -- choosing the language -------------------------------------------------------------------


def test_english_by_default(client):
    page = client.get("/").get_data(as_text=True)
    assert page_lang(page) == "en"
    assert "New match" in page and "Nouvelle partie" not in page


@pytest.mark.parametrize(
    ("accept", "lang", "heading"),
    [
        ("fr-FR,fr;q=0.9,en;q=0.5", "fr", "Nouvelle partie"),
        ("ja-JP,ja;q=0.9", "ja", "新しい対局"),
        ("de-DE,de;q=0.9,ja;q=0.4", "ja", "新しい対局"),  # the best one the page speaks
        ("de-DE,de;q=0.9", "en", "New match"),
    ],
)
def test_the_browser_language_picks(client, accept, lang, heading):
    page = client.get("/", headers={"Accept-Language": accept}).get_data(as_text=True)
    assert page_lang(page) == lang
    assert f"<h1>{heading}</h1>" in page


def test_lang_in_the_address_is_kept_for_later_pages(client, played):
    first = client.get("/?lang=fr", headers={"Accept-Language": "ja"})
    assert "lang=fr" in first.headers["Set-Cookie"]
    assert page_lang(first.get_data(as_text=True)) == "fr"
    # Later pages and htmx swaps name no language: the choice holds over the browser's.
    later = client.get(f"/matches/{played}", headers={"Accept-Language": "ja"})
    assert page_lang(later.get_data(as_text=True)) == "fr"
    board = client.get(f"/matches/{played}/board", headers={**HX, "Accept-Language": "ja"})
    assert "Journal" in board.get_data(as_text=True)
    back = client.get("/?lang=en", headers={"Accept-Language": "ja"}).get_data(as_text=True)
    assert page_lang(back) == "en" and "<h1>New match</h1>" in back


def test_an_unknown_lang_falls_back_to_english(client):
    response = client.get("/?lang=xx")
    page = response.get_data(as_text=True)
    assert page_lang(page) == "en" and "<h1>New match</h1>" in page
    assert "lang=" not in response.headers.get("Set-Cookie", "")
    # ... and leaves an earlier choice alone
    client.get("/?lang=ja")
    assert page_lang(client.get("/?lang=klingon").get_data(as_text=True)) == "ja"


def test_the_switch_links_keep_the_page_and_its_query(client, played):
    page = client.get(f"/matches/{played}/picker?player=Aki&lang=fr").get_data(as_text=True)
    switch = re.search(r'<nav class="lang-switch"[\s\S]*?</nav>', page).group(0)
    assert 'aria-current="true" title="Français"><span class="lang-name">Français</span>' in switch
    links = dict(re.findall(r'href="([^"]+)" data-lang="(\w+)"', switch))
    assert links == {
        f"/matches/{played}/picker?player=Aki&amp;lang=en": "en",
        f"/matches/{played}/picker?player=Aki&amp;lang=ja": "ja",
    }


# -- one language per page -------------------------------------------------------------------


def test_match_page_in_french(client, played):
    page = client.get(f"/matches/{played}?lang=fr").get_data(as_text=True)
    text = visible_text(page)
    for french in ("Manche", "Tableau des manches", "Journal", "Carte pour Aki", "Lumière"):
        assert french in text, french
    assert "Aki a pris Grue et soleil (01-1)" in text  # the log, with the card's French name
    assert "Pioche épuisée" in text and "Résumé imprimable" in text
    assert english_leftovers(text, "fr") == []
    assert "Crane and Sun" not in text and "Card for" not in text


def test_match_page_in_japanese(client, played):
    page = client.get(f"/matches/{played}?lang=ja").get_data(as_text=True)
    text = visible_text(page)
    for japanese in ("親", "各回の得点表", "記録", "Akiの札", "札切れ", "合計点"):
        assert japanese in text, japanese
    assert "Akiが松に鶴（01-1）を取った" not in text  # the code keeps ASCII brackets
    assert "Akiが松に鶴 (01-1)を取った" in text and "Matsu ni Tsuru" not in text
    assert english_leftovers(text, "ja") == []
    assert "Round ledger" not in text and "Crane and Sun" not in text


def test_the_koi_koi_prompt_in_each_language(client, store):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    post_event(client, store, match_id, type="round_started")
    for card in ("01-1", "03-1", "08-1"):  # three brights: a yaku, so Koi-Koi or Stop
        post_event(client, store, match_id, type="card_captured", player="Aki", card=card)
    fr_page = client.get(f"/matches/{match_id}?lang=fr").get_data(as_text=True)
    assert '<span class="who">Aki</span> a réalisé un yaku\u00a0: Koi-Koi ou Stop\u00a0?' in fr_page
    ja_page = client.get(f"/matches/{match_id}?lang=ja").get_data(as_text=True)
    assert '<span class="who">Aki</span>が役を作った：こいこい？それとも勝負？' in ja_page
    assert "こいこい！" in ja_page and "勝負" in ja_page
    fr, ja = visible_text(fr_page), visible_text(ja_page)
    assert english_leftovers(fr, "fr") == [] and english_leftovers(ja, "ja") == []


def test_the_board_is_rendered_once_per_language(client, played):
    """Followers share one rendering of the board per seq: each language gets its own."""
    fr = client.get(f"/matches/{played}/board?lang=fr", headers=HX).get_data(as_text=True)
    en = client.get(f"/matches/{played}/board?lang=en", headers=HX).get_data(as_text=True)
    assert "Tableau des manches" in fr and "Round ledger" not in fr
    assert "Round ledger" in en and "Tableau des manches" not in en


def test_picker_in_japanese_names_months_and_cards(client, played):
    page = client.get(f"/matches/{played}/picker?player=Ben&lang=ja").get_data(as_text=True)
    text = visible_text(page)
    assert "Benが取った札" in text and "閉じる" in text
    assert re.search(r'<span class="mnum">8</span> 芒</h3>', page)
    assert 'title="松に鶴：Akiが取得済み"' in page  # the crane, taken by Aki
    assert 'data-none="札が選ばれていません"' in page  # the words the picker script shows
    assert english_leftovers(text, "ja") == []


def test_index_in_french_has_no_english_left(client, played):
    page = client.get("/?lang=fr").get_data(as_text=True)
    text = visible_text(page)
    # The rule file's option texts too (companion/game/rulesets/livret.toml, the default preset).
    assert "Chaque carte ne compte que dans un seul yaku" in text
    assert "Each card counts in one yaku only" not in text
    assert "Parties" in text and "Commencer la partie" in text and "manche 1 sur 6" in text
    assert english_leftovers(text, "fr") == []


def test_errors_in_the_page_language(client, store, played):
    client.get("/?lang=fr")
    refused = post_event(client, store, played, type="card_captured", player="Aki")
    assert refused.status_code == 400
    assert "Il manque à la requête la carte (card)." in refused.get_data(as_text=True)
    missing = client.get("/nowhere?lang=ja")
    assert missing.status_code == 404
    page = missing.get_data(as_text=True)
    assert "そのページはありません。" in page and "何も変更されていません。" in page


def test_the_engine_sentences_in_the_page_language(client, store):
    """Round reasons, multipliers and warnings: the engine words them in English, the page
    says them again in its language."""
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    post_event(client, store, match_id, type="round_started")
    for card in ("01-1", "03-1", "08-1"):  # Sankō
        post_event(client, store, match_id, type="card_captured", player="Aki", card=card)
    post_event(client, store, match_id, type="koi_called", player="Aki")
    post_event(client, store, match_id, type="card_captured", player="Ben", card="02-3")
    post_event(client, store, match_id, type="card_captured", player="Aki", card="12-1")
    english = visible_text(client.get(f"/matches/{match_id}?lang=en").get_data(as_text=True))
    assert (
        "Ben holds 1 card of month 02 (Plum Chaff 1 (02-3)): captures come in pairs" in english
    )
    ja = visible_text(client.get(f"/matches/{match_id}?lang=ja").get_data(as_text=True))
    assert "Benの02月の札が1枚（梅のカス1 (02-3)）：札は2枚ずつ取るので" in ja
    post_event(client, store, match_id, type="stop_called", player="Aki")
    reason = store.state(match_id).rounds[0].reason
    assert reason.startswith("Aki stops after 1 Koi with ")  # the engine's own words
    fr = visible_text(client.get(f"/matches/{match_id}?lang=fr").get_data(as_text=True))
    assert "Aki dit Stop après 1 Koi-Koi avec " in fr and "stops after" not in fr
    ja = visible_text(client.get(f"/matches/{match_id}?lang=ja").get_data(as_text=True))
    assert "Akiがこいこい1回の後に勝負（" in ja and "stops after" not in ja


def test_an_engine_message_is_said_by_its_template(client):
    from companion.game.messages import Listing, Message
    from companion.web.i18n import say

    declared = Message(
        "round.declared_cards",
        side="Aki",
        kind=Message("hand.teshi"),
        what=Message("hand.teshi_what"),
        cards="01-1 01-2 01-3 01-4",
        points=6,
    )
    assert declared == (
        "Aki declares teshi (4 cards of one month in the dealt hand: 01-1 01-2 01-3 01-4): 6 points"
    )
    with client.application.test_request_context("/?lang=fr"):
        # A count in the French plural rule's words: 0 and 1 are singular, 2 is plural.
        assert say(Message("multiplier.field_brights", n=2)) == "2 lumières dans le tapis servi"
        assert say(Message("multiplier.field_brights", n=1)) == "1 lumière dans le tapis servi"
        assert say(Message("standing.points", n=0)) == "0 point"
        # "de" elided before a vowel: the month's name in a photo's problem.
        cut = Message("photo.cut", name="04.jpg", month="avril")
        assert "d’avril" in say(cut) and "de avril" not in say(cut)
        assert say(declared) == (
            "Aki déclare Teshi (4 cartes d’un même mois dans la main servie: 01-1 01-2 01-3 "
            "01-4)\u00a0: 6 points"
        )
        # Text that is no message (a player's name) is shown as written.
        assert say("A rule of a new kind was applied") == "A rule of a new kind was applied"
    with client.application.test_request_context("/?lang=ja"):
        assert say(Listing(["Aki", "Ben"], " and ")) == "AkiとBen"
        assert say(Listing(["五光 10", "タネ 1"])) == "五光 10、タネ 1"


@pytest.mark.parametrize(
    ("lang", "words"),
    [
        ("fr", ["Tableau des manches", "Imprimer", "1 manche jouée sur 6", "En cours\u00a0:"]),
        ("ja", ["各回の得点表", "印刷", "全6回中1回終了", "対局中：次は第2回"]),
    ],
)
def test_printable_summary_in_the_page_language(client, store, lang, words):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    post_event(client, store, match_id, type="round_started")
    for card in ("01-1", "03-1", "08-1"):
        post_event(client, store, match_id, type="card_captured", player="Aki", card=card)
    post_event(client, store, match_id, type="stop_called", player="Aki")
    english = summary_says(client, match_id, lang, words)
    assert "Round ledger" in english and "In progress: round 2 is next" in english


@pytest.mark.parametrize(
    ("lang", "words"),
    [
        (
            "fr",
            [
                "Manche par manche",
                "Manche 1",
                "(Aki commence)",
                "Faveur après la manche",
                "2 manches jouées sur 3 au plus",
                "Ben gagne avec 4 geishas et 12 points.",
                "(déplacé)",
                "Retour à la partie",
                "Corrections pendant la partie\u00a0: 0",
            ],
        ),
        (
            "ja",
            [
                "各回の記録",
                "第1回",
                "（先手はAki）",
                "回の後の好意",
                "最大3回中2回終了",
                "Benの勝ち（芸者4人と12点）。",
                "（移動）",
                "対局に戻る",
            ],
        ),
    ],
)
def test_the_hanamikoji_printable_summary_in_the_page_language(client, store, lang, words):
    match_id = store.create_hanamikoji_match(["Aki", "Ben"])
    for counts in ("1,0,1,1,1,2,2:0,1,1,2,1,2,1", "2,1,1,1,1,1,1:0,1,1,2,2,2,0"):
        store.append(match_id, {"type": "round_scored", "counts": counts})
    english = summary_says(client, match_id, lang, words)
    assert "Favour after the round" in english and "2 rounds played of at most 3" in english


def test_pages_vary_by_language_and_static_files_do_not(client):
    page = client.get("/")
    assert {"Accept-Language", "Cookie"} <= set(page.vary)
    static = client.get("/static/app.css")
    assert "Accept-Language" not in static.vary
    static.close()


@pytest.mark.parametrize("lang", ["fr", "ja"])
def test_the_shipped_rule_files_texts_are_in_the_catalogs(lang):
    """The new-match form shows each preset's title and option texts in the page's language:
    a rule file's new text needs its translation (translations/README.md)."""
    from companion.web.i18n import extract_rule_texts

    known = {m.id: m.string for m in catalog(lang) if m.id}
    rulesets = sorted((WEB_DIR.parent / "game" / "rulesets").glob("*.toml"))
    assert rulesets
    for path in rulesets:
        with open(path, "rb") as f:
            for _, _, text, _ in extract_rule_texts(f, None, None, None):
                assert known.get(text), f"{path.name}: {text!r} has no {lang} translation"


def test_a_rule_text_is_escaped_like_any_text(client):
    from companion.web.i18n import rule_text

    with client.application.test_request_context("/?lang=ja"):
        assert rule_text("Koi-Koi (Nintendo-style scoring)") == "こいこい（任天堂式の点数）"
        assert rule_text("<b>new</b>") == "<b>new</b>"  # plain text: the template escapes it
        assert rule_text(None) == ""
    page = client.get("/?lang=ja").get_data(as_text=True)
    assert ">こいこい（任天堂式の点数） (nintendo)</option>" in page


def test_the_switch_repeats_only_a_next_page_of_this_site(client):
    page = client.get("/join?next=/matches/3").get_data(as_text=True)
    assert 'href="/join?next=%2Fmatches%2F3&amp;lang=fr"' in page
    page = client.get("/join?next=//evil.example").get_data(as_text=True)
    assert 'href="/join?lang=fr"' in page and "evil.example" not in page


def test_camera_pages_and_the_scripts_words_in_the_page_language(client):
    import json

    page = client.get("/live?lang=ja").get_data(as_text=True)
    assert 'data-field="camera">オフ<' in page and "カメラなし" in page
    assert english_leftovers(visible_text(page), "ja") == []
    words = json.loads(re.search(r"data-words='([^']*)'", page).group(1))
    assert words["camera"]["live"] == "ライブ" and words["error"] == "エラー {status}"
    assert words["camera_says"] == "カメラ：{text}"
    page = client.get("/calibrate?lang=fr").get_data(as_text=True)
    assert "Pas de caméra" in page and "<title>Régler les zones ·" in page
    assert english_leftovers(visible_text(page), "fr") == []


def test_a_hanamikoji_round_in_french_and_japanese(client, store):
    from companion.game.hanamikoji import GEISHAS, SIDES, RoundCounts

    match = store.create_hanamikoji_match(["Aki", "Ben"])
    client.get("/?lang=fr")
    counts = RoundCounts.parse("1,1,1,0,2,1,2:0,0,0,3,1,2,2")
    for side in SIDES:
        for g, n in zip(GEISHAS, counts.side(side), strict=True):
            for k in range(1, n + 1):
                page = client.get("/").get_data(as_text=True)
                token = re.search(r'"X-CSRF-Token": "([^"]+)"', page).group(1)
                data = {
                    "csrf_token": token,
                    "request_id": uuid.uuid4().hex,
                    "expected_seq": store.last_seq(match),
                    "type": "items_set",
                    "player": side,
                    "geisha": g.id,
                    "count": k,
                }
                client.post(f"/matches/{match}/hanamikoji/events", data=data, headers=HX)
    before = visible_text(client.get(f"/matches/{match}/hanamikoji").get_data(as_text=True))
    assert "Compter la manche 1" in before and "8/8 objets" in before
    assert re.search(r"Ben\u00a0: 2 objets devant \w+", before)
    assert re.search(r"Aki\u00a0: 1 objet devant \w+", before)
    assert english_leftovers(before, "fr") == []
    data = {
        "csrf_token": token,
        "request_id": uuid.uuid4().hex,
        "expected_seq": store.last_seq(match),
        "type": "round_scored",
    }
    client.post(f"/matches/{match}/hanamikoji/events", data=data, headers=HX)
    fr = visible_text(client.get(f"/matches/{match}/hanamikoji").get_data(as_text=True))
    assert "Aki gagne après la manche 1" in fr and "Aki gagne avec 4 geishas." in fr
    assert english_leftovers(fr, "fr") == []
    ja = visible_text(client.get(f"/matches/{match}/hanamikoji?lang=ja").get_data(as_text=True))
    assert "第1回でAkiの勝ち" in ja and "Akiの勝ち（芸者4人）。" in ja
    assert english_leftovers(ja, "ja") == []


def test_a_round_entered_by_hand_in_french(client, store):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    page = client.get(f"/matches/{match_id}?lang=fr").get_data(as_text=True)
    assert "Saisir une manche jouée sans la tablette" in page
    response = post_event(
        client, store, match_id, type="round_entered", winner="Ben", points="4", oya="Aki"
    )
    assert response.status_code == 200
    text = visible_text(client.get(f"/matches/{match_id}").get_data(as_text=True))
    assert "Manche saisie à la main\u00a0: Ben marque 4" in text  # the log
    assert "Saisie à la main\u00a0: 4 points" in text  # the ledger
    assert english_leftovers(text, "fr") == []


def test_a_round_reason_a_multiplier_a_warning_and_yaku_names_in_french_and_japanese(client, store):
    """The engine's Messages said by the page: nothing of their English left, the yaku named
    as the rule file names them in the page's language (五光, 四光... on a Japanese page)."""
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    post_event(client, store, match_id, type="round_started")
    for card in ("01-1", "03-1", "08-1"):  # Sankō
        post_event(client, store, match_id, type="card_captured", player="Aki", card=card)
    post_event(client, store, match_id, type="koi_called", player="Aki")
    post_event(client, store, match_id, type="card_captured", player="Ben", card="02-3")
    post_event(client, store, match_id, type="card_captured", player="Aki", card="12-1")  # Yonkō
    ja = visible_text(client.get(f"/matches/{match_id}?lang=ja").get_data(as_text=True))
    assert "四光 10" in ja and "Yonkō" not in ja  # the prompt and the hand
    assert "この回のこいこい1回: Aki ×1" in ja  # the multiplier, with who called
    assert "こいこい×1" in ja and "Koi ×1" not in ja  # the pill of his calls
    post_event(client, store, match_id, type="stop_called", player="Aki")
    pages = {
        lang: visible_text(client.get(f"/matches/{match_id}?lang={lang}").get_data(as_text=True))
        for lang in ("en", "fr", "ja")
    }
    en, fr, ja = pages["en"], pages["fr"], pages["ja"]
    assert "Aki stops after 1 Koi with Yonkō 10: 20 points (base 10 x2)" in en
    assert "1 Koi call this round" in en
    assert "Ben holds 1 card of month 02 (Plum Chaff 1 (02-3))" in en  # named by the deck
    assert "Aki dit Stop après 1 Koi-Koi avec Yonkō 10\u00a0: 20 points (base 10 ×2)" in fr
    assert "1 Koi-Koi annoncé dans la manche" in fr  # the ledger's multiplier
    assert "Ben a 1 carte du mois 02 (Prunier simple 1 (02-3))" in fr
    assert "Akiがこいこい1回の後に勝負（四光 10点）：20点（基本点10×2）" in ja
    assert "この回のこいこい1回" in ja
    assert "Benの02月の札が1枚（梅のカス1 (02-3)）" in ja
    assert "Yonkō" not in ja and "四光" in ja  # the ledger's yaku too
    for lang in ("fr", "ja"):
        assert english_leftovers(pages[lang], lang) == []
        assert "stops after" not in pages[lang] and "Koi call" not in pages[lang]
        assert "(s)" not in pages[lang]  # plural forms by the catalog's rules, not by hand
        assert "captures come in pairs" not in pages[lang]
    summary = visible_text(
        client.get(f"/matches/{match_id}/summary?lang=ja").get_data(as_text=True)
    )
    assert "四光" in summary and "この回のこいこい1回" in summary and "Yonkō" not in summary


@pytest.mark.parametrize(
    ("preset", "cards", "japanese"),
    [
        ("livret", ("01-1", "03-1", "08-1", "11-1", "12-1"), "五光"),
        ("koikoi-japan", ("06-1", "07-1", "10-1"), "猪鹿蝶"),
        ("nintendo", ("03-1", "09-1"), "花見酒"),
        ("hana-koikoi", ("03-1", "09-1"), "花見で一杯"),
    ],
)
def test_yaku_names_on_a_japanese_page_as_japanese_players_write_them(
    client, store, preset, cards, japanese
):
    match_id = store.create_match(players=["Aki", "Ben"], rules=preset, oya="Aki")
    post_event(client, store, match_id, type="round_started")
    for card in cards:
        post_event(client, store, match_id, type="card_captured", player="Aki", card=card)
    ja = visible_text(client.get(f"/matches/{match_id}?lang=ja").get_data(as_text=True))
    assert japanese in ja
    en = visible_text(client.get(f"/matches/{match_id}?lang=en").get_data(as_text=True))
    assert japanese not in en


# Words that mark a rule file's text as French (the seeds quote French rule documents).
FRENCH_WORDS = re.compile(
    r"\b(Variante|Règles|joueurs?|cartes?|manches|partie|réarranger|adaptation française|"
    r"mutualisées|échange|Vérification|musée)\b"
)


def test_the_rule_files_french_texts_have_their_english_words():
    """An English page shows a rule file's French words (an option's description quoting its
    seed, a preset's title) in English: the English catalog carries them."""
    from companion.web.i18n import extract_rule_texts

    english = {m.id: m.string for m in catalog("en") if m.id}
    french = []
    for path in sorted((WEB_DIR.parent / "game" / "rulesets").glob("*.toml")):
        with open(path, "rb") as f:
            french += [t for _, _, t, _ in extract_rule_texts(f, None, None, None)]
    french = [t for t in french if FRENCH_WORDS.search(t)]
    assert len(french) >= 10
    for text in french:
        assert english.get(text), f"{text!r} has no English words"
        assert not FRENCH_WORDS.search(english[text]), english[text]


def test_an_english_page_shows_the_options_in_english(client):
    page = visible_text(client.get("/?lang=en").get_data(as_text=True))
    assert "Each card can count in one yaku only; the Triade is exempt" in page
    assert "Variant: Bright cards in the dealt field (Ba)" in page
    assert "Variante" not in page and "comptabilisée" not in page
    options = client.get("/new/options?rules=hana-koikoi&lang=en").get_data(as_text=True)
    assert "Règles de base" not in options


def test_cards_in_japanese_are_written_in_kanji_and_a_decks_own_cards_keep_their_names(client):
    from companion.game.cards import STANDARD_DECK
    from companion.game.rules import RuleSet
    from companion.web.i18n import card_name

    ferme = RuleSet.load("ferme-florale").deck
    with client.application.test_request_context("/?lang=ja"):
        assert card_name(STANDARD_DECK.card("01-1")) == "松に鶴"
        assert card_name(STANDARD_DECK.card("12-3")) == "桐のカス2"
        assert card_name(ferme.card("01-1")) == "Broadfork"  # not the standard slot's crane
    with client.application.test_request_context("/?lang=fr"):
        assert card_name(ferme.card("01-1")) == "Grelinette"
    # Scripts keep reading and printing the deck's romaji.
    assert STANDARD_DECK.parse("Matsu ni Tsuru").code == "01-1"
    assert STANDARD_DECK.card("01-1").names["ja"] == "Matsu ni Tsuru"


def test_the_statistics_name_the_yaku_in_the_page_language(client, store):
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    post_event(client, store, match_id, type="round_started")
    for card in ("01-1", "03-1", "08-1"):
        post_event(client, store, match_id, type="card_captured", player="Aki", card=card)
    post_event(client, store, match_id, type="stop_called", player="Aki")
    ja = visible_text(client.get("/stats?lang=ja").get_data(as_text=True))
    assert "三光 (1)" in ja and "Sankō" not in ja
    en = visible_text(client.get("/stats?lang=en").get_data(as_text=True))
    assert "Sankō (1)" in en


def test_a_dealt_hand_is_named_as_the_buttons_name_it_and_the_json_keeps_its_id(client, store):
    from companion import summaries

    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    post_event(client, store, match_id, type="round_started")
    post_event(client, store, match_id, type="hand_declared", player="Ben", kind="teshi")
    page = visible_text(client.get(f"/matches/{match_id}/summary?lang=en").get_data(as_text=True))
    assert "Ben declares Teshi (4 cards of one month in the dealt hand): 6 points" in page
    data = summaries.summary_from_store(store, match_id).to_dict()
    assert data["rounds"][0]["reason"] == (
        "Ben declares teshi (4 cards of one month in the dealt hand): 6 points"
    )
    ja = visible_text(client.get(f"/matches/{match_id}/summary?lang=ja").get_data(as_text=True))
    assert "Benが手四（配られた手札に同じ月の札が4枚）：6点" in ja

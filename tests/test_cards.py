"""Cards and decks: codes round-trip, names parse, deck files, one-sentence errors."""

from __future__ import annotations

import pytest

from companion import CompanionError
from companion.game.cards import (
    ALL_CODES,
    STANDARD_DECK,
    Card,
    CardError,
    Category,
    Deck,
    RibbonKind,
    normalize_code,
)


def one_sentence(message: str) -> bool:
    return "\n" not in message and message.endswith(".") and len(message) < 200


def test_48_codes_twelve_months_of_four():
    assert len(ALL_CODES) == 48 == len(set(ALL_CODES))
    assert ALL_CODES[0] == "01-1" and ALL_CODES[-1] == "12-4"
    for month in range(1, 13):
        assert [c for c in ALL_CODES if c.startswith(f"{month:02d}-")] == [
            f"{month:02d}-{k}" for k in range(1, 5)
        ]


@pytest.mark.parametrize("code", ALL_CODES)
def test_code_round_trips(code):
    card = Card.from_code(code)
    assert card.code == code == str(card)
    assert Card.from_code(card.code) == card
    assert eval(repr(card), {"Card": Card}) == card  # repr is code that rebuilds the card
    assert (card.month, card.index) == (int(code[:2]), int(code[3]))


@pytest.mark.parametrize(
    ("text", "code"), [("8-1", "08-1"), (" 08-1 ", "08-1"), ("12_4", "12-4"), ("1/2", "01-2")]
)
def test_code_spellings_normalise(text, code):
    assert normalize_code(text) == code
    assert Card.parse(text).code == code


def test_category_counts_match_the_seeds():
    counts = {cat: sum(1 for c in STANDARD_DECK if c.category is cat) for cat in Category}
    # 5 brights, 9 animals (seed 000's "14" is a typo), 10 ribbons, 24 chaff
    assert counts == {
        Category.BRIGHT: 5,
        Category.ANIMAL: 9,
        Category.RIBBON: 10,
        Category.CHAFF: 24,
    }
    ribbons = {kind: {c.code for c in STANDARD_DECK if c.ribbon is kind} for kind in RibbonKind}
    assert ribbons[RibbonKind.POEM] == {"01-2", "02-2", "03-2"}
    assert ribbons[RibbonKind.BLUE] == {"06-2", "09-2", "10-2"}
    assert ribbons[RibbonKind.PLAIN] == {"04-2", "05-2", "07-2", "11-3"}


@pytest.mark.parametrize("card", list(STANDARD_DECK), ids=lambda c: c.code)
def test_every_name_parses_back_to_its_card(card):
    assert set(card.names) == {"en", "ja", "fr"}
    for name in card.names.values():
        assert Card.parse(name) == card
        assert Card.parse(name.upper()) == card


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("moon", "08-1"),
        ("sake_cup", "09-1"),
        ("sake cup", "09-1"),
        ("Rain Man", "11-1"),
        ("pleine lune", "08-1"),
        ("Pleine Lune", "08-1"),
        ("phenix", "12-1"),
        ("Susuki ni Tsuki", "08-1"),
    ],
)
def test_roles_and_names_parse_accents_and_case_aside(text, code):
    assert Card.parse(text).code == code


def test_parse_list():
    cards = STANDARD_DECK.parse_list("01-1, moon,,sake cup ")
    assert [c.code for c in cards] == ["01-1", "08-1", "09-1"]
    assert STANDARD_DECK.parse_list("") == []


@pytest.mark.parametrize("bad", ["13-1", "00-1", "01-5", "1-0", "dragon", "", "08", "poem_ribbon"])
def test_unknown_cards_raise_one_sentence(bad):
    with pytest.raises(CardError) as err:
        Card.parse(bad)
    assert isinstance(err.value, CompanionError)
    assert one_sentence(str(err.value))


def test_non_text_code_is_an_error():
    with pytest.raises(CardError):
        normalize_code(81)


def test_cards_sort_and_compare_by_code():
    a, b = Card.from_code("08-1"), Card.from_code("01-1")
    assert sorted([a, b]) == [b, a]
    assert a == Deck.load("ferme-florale").card("08-1")  # same slot, another deck
    assert len({a, Card.parse("moon")}) == 1


def test_with_role():
    assert [c.code for c in STANDARD_DECK.with_role("blue_ribbon")] == ["06-2", "09-2", "10-2"]


# --- The Ferme Florale Urbaine deck (seed 003) ------------------------------------------------


@pytest.fixture(scope="module")
def ferme():
    return Deck.load("ferme-florale")


def test_ferme_tools_are_the_brights(ferme):
    tools = ferme.with_role("tool")
    assert len(tools) == 5 and all(c.category is Category.BRIGHT for c in tools)
    assert {c.names["fr"] for c in tools} == {"Grelinette", "Houe", "Faux", "Serre", "Bouquet"}
    assert ferme.parse("Serre").has_role("serre") and ferme.parse("Bouquet").has_role("bouquet")


def test_ferme_cider_and_auxiliaries(ferme):
    cider = ferme.parse("Cidre Fermier Normand")
    assert cider.code == "09-1" and cider.category is Category.ANIMAL and cider.has_role("cider")
    aux = ferme.with_role("auxiliary")
    assert {c.code for c in aux} == {"06-1", "07-1", "10-1"}  # butterflies, boar, deer slots
    assert {c.names["fr"] for c in aux} == {"Abeilles", "Hérisson", "Faucon"}


def test_ferme_lanterns_3_orange_3_blue_4_pink(ferme):
    sizes = {col: len(ferme.with_role(f"{col}_lantern")) for col in ("orange", "blue", "pink")}
    assert sizes == {"orange": 3, "blue": 3, "pink": 4}
    assert all(c.category is Category.RIBBON for c in ferme.with_role("lantern"))
    assert len(ferme.with_role("lantern")) == 10


def test_ferme_months_named_by_the_seed(ferme):
    assert ferme.card("01-3").names["fr"].startswith("Lierre")
    assert ferme.card("06-3").names["fr"].startswith("Bleuet")
    assert ferme.card("07-3").names["fr"].startswith("Zinnia")


def test_ferme_wild_card_in_july(ferme):
    wild = ferme.with_role("wild")
    assert len(wild) == 1 and wild[0].month == 7 and wild[0].category is Category.CHAFF
    assert ferme.parse("explosion de fleurs") == wild[0]


def test_ferme_has_no_standard_roles(ferme):
    assert not ferme.with_role("moon") and not ferme.with_role("rain_man")
    assert len({c.names["fr"] for c in ferme}) == 48  # every French name tells one card


def test_deck_file_errors(tmp_path):
    with pytest.raises(CardError) as err:
        Deck.load("no-such-deck")
    assert one_sentence(str(err.value))
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [", encoding="utf-8")
    with pytest.raises(CardError, match="not valid TOML"):
        Deck.load(bad)


def test_custom_deck_file_renames_a_card(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'name = "mine"\n[cards."08-1"]\nnames = { en = "Harvest Moon" }\nadd_roles = ["special"]\n',
        encoding="utf-8",
    )
    deck = Deck.load(path)
    card = deck.parse("harvest moon")
    assert card.code == "08-1" and card.has_role("moon") and card.has_role("special")


# -- chaff twins: one rule, in the cards module ----------------------------------------------


def test_chaff_twins_are_the_plain_chaff_of_one_month():
    from companion.game.cards import ALL_CODES, DISTINCT_CHAFF, chaff_twins, twin_group

    assert chaff_twins("08-3", "08-4") and chaff_twins("12-4", "12-3")
    # the banded paulownia chaff and the lightning are told apart at a glance
    assert not chaff_twins("12-2", "12-3") and not chaff_twins("12-2", "12-4")
    assert not chaff_twins("11-4", "11-3")
    assert not chaff_twins("08-3", "08-3")  # a card is not its own twin
    assert not chaff_twins("08-3", "09-3")  # nor a chaff of another month
    assert twin_group("12-2") == ("12-2",) and twin_group("8-4") == ("08-3", "08-4")
    assert DISTINCT_CHAFF == {"11-4", "12-2"}
    pairs = {tuple(sorted((a, b))) for a in ALL_CODES for b in ALL_CODES if chaff_twins(a, b)}
    assert len(pairs) == 11  # one pair in each month but November


def test_every_user_of_the_twin_rule_agrees_with_the_cards_module():
    """The recognizer's evaluation, the tracker and the capture decider group the 48 codes
    exactly as ``twin_group`` does (they once held three copies that disagreed on 12-2)."""
    import numpy as np

    from companion.detections import chaff_group, class_id
    from companion.game.cards import ALL_CODES, chaff_twins, twin_group
    from companion.live import capture_decider, pipeline, tracker

    ids = [class_id(c) for c in ALL_CODES]
    groups = dict(zip(ALL_CODES, chaff_group(ids).tolist(), strict=True))
    for a in ALL_CODES:
        assert [ALL_CODES[i] for i in tracker.TWIN_IDS[a]] == list(twin_group(a))
        for b in ALL_CODES:
            same = a == b or chaff_twins(a, b)
            assert (groups[a] == groups[b]) == same, (a, b)
            # the decider counts a reading's twins with it
            arrival = tracker.Arrival(1, "A", ((a, 0.5), (b, 0.5)), 0, np.zeros((4, 2)))
            assert capture_decider.surely(arrival) == (1.0 if same else 0.5), (a, b)
    assert tracker.chaff_twins is chaff_twins and pipeline.chaff_twins is chaff_twins

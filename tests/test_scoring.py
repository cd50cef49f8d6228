"""Rule sets and scoring: golden cases per preset (tests/cases/*.toml), the rule-set loader,
the `score` and `rules` commands, and properties that must hold for any hand."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import CompanionError
from companion.cli import main
from companion.game.cards import ALL_CODES, Card
from companion.game.rules import RULESETS_DIR, RuleError, RuleSet
from companion.game.scoring import ScoringError, card_value, score_hand, score_yaku

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

CASES_DIR = Path(__file__).parent / "cases"
SHARED = Path(__file__).resolve().parents[1].parent / "shared"
PRESETS = [
    "livret",
    "sloper",
    "ferme-florale",
    "hana-koikoi",
    "hana-awase",
    "nintendo",
    "koikoi-japan",
]


def load_case_files() -> dict[str, dict]:
    files = {p.stem: tomllib.loads(p.read_text(encoding="utf-8")) for p in CASES_DIR.glob("*.toml")}
    # Rule-set cases only: hanamikoji.toml is another game (tests/test_hanamikoji.py).
    return {name: data for name, data in files.items() if "preset" in data}


CASE_FILES = load_case_files()
ALL_CASES = [
    pytest.param(data["preset"], case, id=f"{name}:{case['id']}")
    for name, data in sorted(CASE_FILES.items())
    for case in data["case"]
]
CLI_CASES = [p for p in ALL_CASES if p.values[1].get("cli")]


def rules_for(preset: str, case: dict) -> RuleSet:
    return RuleSet.load(preset).with_options(case.get("options", {}))


def cards_of(rules: RuleSet, case: dict):
    return rules.deck.parse_list(case["cards"])


def test_every_preset_has_a_case_file():
    assert sorted(data["preset"] for data in CASE_FILES.values()) == sorted(PRESETS)


@pytest.mark.parametrize(("preset", "case"), ALL_CASES)
def test_golden_case_with_score_hand(preset, case):
    rules = rules_for(preset, case)
    hand = score_hand(
        rules,
        cards_of(rules, case),
        koi_own=case.get("koi", 0),
        koi_opponent=case.get("opponent_koi", 0),
        field_brights=case.get("field_brights", 0),
        month=case.get("month"),
    )
    assert {y.id: y.points for y in hand.yaku} == case["yaku"]
    assert hand.base == case["base"]
    assert hand.multiplier == case.get("multiplier", 1)
    assert hand.total == case["total"]
    assert hand.total == hand.base * hand.multiplier


@pytest.mark.parametrize(("preset", "case"), CLI_CASES)
def test_golden_case_through_the_cli(preset, case):
    args = ["score", "--rules", preset, "--cards", case["cards"], "--json"]
    args += ["--koi", str(case.get("koi", 0)), "--opponent-koi", str(case.get("opponent_koi", 0))]
    args += ["--field-brights", str(case.get("field_brights", 0))]
    if "month" in case:
        args += ["--month", str(case["month"])]
    for key, value in case.get("options", {}).items():
        args += ["--option", f"{key}={'on' if value else 'off'}"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert {y["id"]: y["points"] for y in out["yaku"]} == case["yaku"]
    assert all(set(y) >= {"name", "points"} for y in out["yaku"])
    assert (out["base"], out["multiplier"], out["total"]) == (
        case["base"],
        case.get("multiplier", 1),
        case["total"],
    )


def _normalise(text: str) -> str:
    text = re.sub(r"</?[bi]>|\*\*", "", text)
    return " ".join(text.split())


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared (the seeds) is not beside the project")
@pytest.mark.parametrize("name", sorted(n for n, d in CASE_FILES.items() if "seed_file" in d))
def test_every_cite_quotes_its_source(name):
    data = CASE_FILES[name]
    source = _normalise((SHARED / data["seed_file"]).read_text(encoding="utf-8"))
    quoted = [c for c in data["case"] if "source" not in c]  # the others name their own
    missing = [c["id"] for c in quoted if _normalise(c["cite"]) not in source]
    assert not missing, f"quotes not found in {data['seed_file']}: {missing}"


@pytest.mark.parametrize("name", sorted(CASE_FILES))
def test_every_case_names_where_its_values_come_from(name):
    """A case quotes the seeds (``seed_file``), or its file or itself names a ``source``
    (another project's code, the issue that asked for a house rule) and cites it."""
    data = CASE_FILES[name]
    for case in data["case"]:
        assert case.get("cite", "").strip(), f"{name}:{case['id']} has no cite"
        assert "seed_file" in data or data.get("source") or case.get("source"), case["id"]


@pytest.mark.parametrize("preset", PRESETS)
def test_cases_cover_every_yaku_of_the_preset(preset):
    """Every yaku of a preset (option-gated ones included) is expected in some golden case."""
    data = next(d for d in CASE_FILES.values() if d["preset"] == preset)
    raw = tomllib.loads((RULESETS_DIR / f"{preset}.toml").read_text(encoding="utf-8"))
    expected = {y for case in data["case"] for y in case["yaku"]}
    assert {y["id"] for y in raw.get("yaku", [])} <= expected


# --- Rule sets ------------------------------------------------------------------------------


def test_presets_default_first():
    assert RuleSet.presets()[0] == "livret"
    assert sorted(RuleSet.presets()) == sorted(PRESETS)


@pytest.mark.parametrize("preset", PRESETS)
def test_preset_loads_and_round_trips_through_its_text(preset):
    rules = RuleSet.load(preset)
    assert rules.name == preset
    flipped = {o.id: not o.default for o in rules.options}
    changed = rules.with_options(flipped)
    again = RuleSet.from_text(changed.source_text).with_options(changed.active_options)
    assert again.to_dict() == changed.to_dict()
    assert again.active_options == flipped


def test_schema_attributes_the_engine_reads():
    rules = RuleSet.load("livret")
    assert rules.round.exhausted == "last_yaku_maker_unless_oya"
    assert rules.round.payment == "zero_sum"
    assert rules.round.draw_oya == "changes"
    assert rules.match.tie_break == "extra_round"
    assert rules.players == (2,) and rules.rounds == (6, 12) and rules.default_rounds == 12
    koikoi = RuleSet.load("hana-koikoi")
    assert koikoi.players == (2, 3)
    # Teshi / Kuttsuki: "6 pts, fin de la manche" (seed 004), declared from the dealt hand
    assert koikoi.round.instant_wins == ("teshi", "kuttsuki")
    assert koikoi.round.instant_win_points == 6
    assert RuleSet.load("hana-awase").round.instant_wins == ()
    assert (koikoi.round.exhausted, koikoi.round.exhausted_points) == ("oya_scores", 6)
    assert koikoi.game.deal["3"] == (7, 6)
    ferme = RuleSet.load("ferme-florale")
    assert ferme.round.next_oya == "highest_total"
    assert "dealt_yaku" in ferme.round.instant_wins
    # "Si les 4 cartes d'un même mois sont dans la rivière, il faut rebrasser" (not 4 pairs)
    assert ferme.round.field_redeal and not ferme.round.field_redeal_pairs
    assert rules.round.field_redeal and rules.round.field_redeal_pairs
    assert ferme.deck.name == "ferme-florale"
    assert RuleSet.load("hana-awase").mode == "card_values"


def test_options_patch_the_rule_set():
    ferme = RuleSet.load("ferme-florale")
    assert ferme.match.winner_by == "points" and not ferme.match.teams
    assert ferme.with_options({"rounds_won": True}).match.winner_by == "rounds_won"
    teams = ferme.with_options({"teams": True})
    assert teams.match.teams and teams.players == (4,)
    assert ferme.with_options({"beginner": True}).mode == "card_values"
    livret = RuleSet.load("livret")
    assert livret.scoring.cards_count_once
    assert not livret.with_options({"cards_count_once": False}).scoring.cards_count_once
    gaji = livret.with_options({"gaji": True})
    assert gaji.is_wild(gaji.deck.parse("11-4")) and not livret.is_wild(livret.deck.parse("11-4"))
    assert "triade" not in {y.id for y in livret.yaku}
    assert "triade" in {y.id for y in livret.with_options({"triade": "on"}).yaku}
    # with_options keeps the other options as they were
    both = livret.with_options({"triade": True}).with_options({"field_brights": True})
    assert both.active_options["triade"] and both.active_options["field_brights"]


def test_rule_file_copied_and_changed_is_loaded_by_path(tmp_path):
    text = (RULESETS_DIR / "livret.toml").read_text(encoding="utf-8")
    changed = re.sub(r'(id = "sanko"(?:.*\n)*?points = )6', r"\g<1>9", text, count=1)
    changed = changed.replace('name = "livret"', 'name = "house"', 1)
    path = tmp_path / "house.toml"
    path.write_text(changed, encoding="utf-8")
    rules = RuleSet.load(str(path))
    assert rules.name == "house"
    assert score_yaku(rules, ["01-1", "03-1", "08-1"]).base == 9
    assert score_yaku(RuleSet.load("livret"), ["01-1", "03-1", "08-1"]).base == 6
    result = CliRunner().invoke(
        main, ["score", "--rules", str(path), "--cards", "crane,curtain,moon", "--json"]
    )
    assert result.exit_code == 0 and json.loads(result.output)["total"] == 9


def test_option_can_patch_a_yaku_value():
    text = (RULESETS_DIR / "nintendo.toml").read_text(encoding="utf-8")
    text += (
        '\n[options.cheap_sanko]\nlabel = "Sankō is worth 3"\nset = { "yaku.sanko.points" = 3 }\n'
    )
    rules = RuleSet.from_text(text)
    assert score_yaku(rules, ["01-1", "03-1", "12-1"]).base == 5
    assert score_yaku(rules.with_options({"cheap_sanko": True}), ["01-1", "03-1", "12-1"]).base == 3


def _one_sentence(message: str) -> bool:
    return "\n" not in message and message.endswith(".") and "Traceback" not in message


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        (lambda t: t + "\n[bogus]\nx = 1\n", "bogus"),
        (lambda t: t.replace('payment = "zero_sum"', 'payment = "sometimes"'), "sometimes"),
        (
            lambda t: t.replace(
                'cards = ["boar", "deer", "butterflies"]', 'cards = ["boar", "unicorn"]'
            ),
            "unicorn",
        ),
        (lambda t: t.replace("min = 10", "min = -1", 1), "min"),
        (lambda t: t.replace('kind = "set"', 'kind = "magic"', 1), "kind"),
        (lambda t: t.replace('option = "triade"', 'option = "nope"'), "nope"),
        (lambda t: t.replace("[match]", "[match]\nwinner = 1"), "winner"),
        (
            lambda t: t.replace(
                'select = { category = "chaff" }', 'select = { category = "gold" }'
            ),
            "category",
        ),
        (lambda t: t + "\n[[yaku", "TOML"),
        (lambda t: t.replace('deck = "standard"', 'deck = "nosuchdeck"'), "nosuchdeck"),
        (lambda t: t.replace("default_rounds = 12", "default_rounds = 7"), "default_rounds"),
    ],
)
def test_invalid_rule_files_give_one_sentence(patch, needle):
    text = (RULESETS_DIR / "livret.toml").read_text(encoding="utf-8")
    with pytest.raises(RuleError) as err:
        RuleSet.from_text(patch(text))
    assert needle in str(err.value)
    assert _one_sentence(str(err.value))
    assert isinstance(err.value, CompanionError)


def test_unknown_preset_path_and_option():
    for bad in ("nosuch", "../etc/passwd", "missing-file.toml"):
        with pytest.raises(RuleError) as err:
            RuleSet.load(bad)
        assert _one_sentence(str(err.value))
    with pytest.raises(RuleError, match="Unknown option 'nope'"):
        RuleSet.load("livret").with_options({"nope": True})
    with pytest.raises(RuleError, match="on or off"):
        RuleSet.load("livret").with_options({"triade": "maybe"})


# --- Scoring API ----------------------------------------------------------------------------


def test_score_yaku_reports_the_cards_of_each_yaku():
    rules = RuleSet.load("livret")
    report = score_yaku(rules, ["09-1", "02-1", "04-1", "05-1", "08-2", "11-2", "08-1"])
    used = {y.id: {c.code for c in y.cards} for y in report.yaku}
    assert used["tsukimi"] == {"08-1", "09-1"}
    assert used["tane"] == {"02-1", "04-1", "05-1", "08-2", "11-2"}
    d = report.to_dict()
    assert d["base"] == 4 and {"id", "name", "points", "cards"} <= set(d["yaku"][0])


def test_score_hand_to_dict_and_multiplier_reasons():
    hand = score_hand(RuleSet.load("sloper"), ["01-1", "03-1", "08-1"], koi_own=1, field_brights=1)
    d = hand.to_dict()
    assert d["multiplier"] == 4 and d["total"] == 32
    assert [m["factor"] for m in d["multipliers"]] == [2, 2]
    assert all(m["reason"] for m in d["multipliers"])


def test_no_multiplier_without_yaku():
    hand = score_hand(RuleSet.load("sloper"), ["01-3"], koi_own=2, field_brights=3)
    assert (hand.base, hand.multiplier, hand.total, hand.multipliers) == (0, 1, 0, [])


def test_bad_scoring_input():
    rules = RuleSet.load("livret")
    with pytest.raises(ScoringError, match="twice"):
        score_yaku(rules, ["01-1", "1-1"])
    with pytest.raises(ScoringError, match="koi_own"):
        score_hand(rules, ["01-1"], koi_own=-1)
    with pytest.raises(ScoringError, match="field_brights"):
        score_hand(rules, ["01-1"], field_brights=6)
    with pytest.raises(CompanionError, match="Unknown card"):
        score_yaku(rules, ["dragon"])


def test_card_value_categories():
    rules = RuleSet.load("hana-awase")
    values = {
        code: card_value(rules, rules.deck.parse(code)) for code in ("01-1", "02-1", "01-2", "11-4")
    }
    assert values == {"01-1": 20, "02-1": 10, "01-2": 5, "11-4": 1}


def test_best_assignment_is_fast_on_a_full_deck():
    # Not a benchmark: a bound that catches an exponential search (the whole deck takes ms).
    import time

    for preset in ("livret", "ferme-florale"):
        rules = RuleSet.load(preset)
        start = time.perf_counter()
        report = score_yaku(rules, ALL_CODES)
        assert time.perf_counter() - start < 5
        assert report.base > 0


# --- Properties -----------------------------------------------------------------------------

hands = st.lists(st.sampled_from(ALL_CODES), unique=True, max_size=30)


@settings(max_examples=60, deadline=None)
@given(preset=st.sampled_from(PRESETS), cards=hands, data=st.data())
def test_capture_order_never_changes_the_score(preset, cards, data):
    rules = RuleSet.load(preset)
    shuffled = data.draw(st.permutations(cards))
    a = score_hand(rules, cards, koi_own=1, field_brights=1)
    b = score_hand(rules, shuffled, koi_own=1, field_brights=1)
    assert a.to_dict() == b.to_dict()


@settings(max_examples=60, deadline=None)
@given(owner=st.lists(st.integers(0, 2), min_size=48, max_size=48), players=st.sampled_from([2, 3]))
def test_hana_awase_scores_add_up_to_264(owner, players):
    rules = RuleSet.load("hana-awase")
    assert sum(card_value(rules, c) for c in rules.deck) == 264
    piles = [
        [code for code, o in zip(ALL_CODES, owner, strict=True) if o % players == p]
        for p in range(players)
    ]
    assert sum(score_hand(rules, pile).total for pile in piles) == 264


CUMULATIVE = [
    ("sloper", {}),
    ("hana-koikoi", {}),
    ("nintendo", {}),
    ("livret", {"cards_count_once": False, "triade": True}),
    ("ferme-florale", {"cards_count_once": False}),
    ("koikoi-japan", {}),
    ("nintendo", {"tsukifuda": True}),
]


@settings(max_examples=80, deadline=None)
@given(variant=st.sampled_from(CUMULATIVE), cards=hands, extra=st.sampled_from(ALL_CODES))
def test_adding_a_card_never_lowers_the_base_when_cards_count_in_several_yaku(
    variant, cards, extra
):
    preset, options = variant
    rules = RuleSet.load(preset).with_options(options)
    assert not rules.scoring.cards_count_once
    before = score_yaku(rules, cards).base
    after = score_yaku(rules, sorted(set(cards) | {extra})).base
    assert after >= before


@settings(max_examples=60, deadline=None)
@given(preset=st.sampled_from(["livret", "ferme-florale"]), cards=hands)
def test_best_assignment_uses_each_card_once_and_is_consistent(preset, cards):
    rules = RuleSet.load(preset).with_options({"cards_count_once": True})
    report = score_yaku(rules, cards)
    used = [c.code for y in report.yaku for c in y.cards]
    assert len(used) == len(set(used)), "a card counted in two yaku"
    assert set(used) <= set(cards)
    for y in report.yaku:  # each yaku is worth its points with only its own cards
        alone = score_yaku(rules, y.cards)
        assert alone.base >= y.points
    cumulative = score_yaku(rules.with_options({"cards_count_once": False}), cards)
    assert report.base <= cumulative.base


def naive_best_base(rules: RuleSet, cards) -> int:
    """Best assignment by brute force: every disjoint choice of card subsets, yaku by yaku."""
    from companion.game.scoring import _can_use, _conflict_tokens, _score_alone

    specs = [y for y in rules.yaku if not y.exempt_from_count_once]
    dual = rules.dual_categories
    tokens = _conflict_tokens(specs)
    best = 0

    def walk(i, remaining, blocked, total):
        nonlocal best
        if i == len(specs):
            best = max(best, total)
            return
        walk(i + 1, remaining, blocked, total)
        if tokens[i] & blocked:
            return
        usable = [c for c in remaining if _can_use(specs[i], c, dual)]
        for size in range(1, len(usable) + 1):
            for subset in itertools.combinations(usable, size):
                made = _score_alone(specs[i], list(subset), dual)
                if made is None or len(made.cards) != size:
                    continue
                rest = [c for c in remaining if c not in subset]
                walk(i + 1, rest, blocked | tokens[i], total + made.points)

    walk(0, [rules.deck.parse(c) for c in cards], frozenset(), 0)
    return best


# Cards that take part in several yaku (brights, animals, ribbons) and a few chaff.
CONTESTED = [c for c in ALL_CODES if not c.endswith(("-3", "-4"))] + ["01-3", "12-3"]


@settings(max_examples=50, deadline=None)
@given(
    preset=st.sampled_from(["livret", "ferme-florale"]),
    cards=st.lists(st.sampled_from(CONTESTED), unique=True, min_size=2, max_size=9),
)
def test_best_assignment_matches_brute_force(preset, cards):
    rules = RuleSet.load(preset)
    assert rules.scoring.cards_count_once
    assert score_yaku(rules, cards).base == naive_best_base(rules, cards)


# --- Command line ---------------------------------------------------------------------------


def run_cli(*args):
    return CliRunner().invoke(main, list(args))


def test_score_table_output():
    result = run_cli("score", "--rules", "livret", "--cards", "01-1,03-1,08-1", "--koi", "1")
    assert result.exit_code == 0
    assert "Sankō" in result.output and "12" in result.output and "total" in result.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["score", "--cards", "13-1"], "13-1"),
        (["score", "--cards", "01-1,dragon"], "dragon"),
        (["score", "--cards", "01-1,moon,08-1"], "twice"),
        (["score", "--rules", "nosuch", "--cards", "01-1"], "nosuch"),
        (["score", "--cards", "01-1", "--koi", "-1"], "--koi"),
        (["score", "--cards", "01-1", "--opponent-koi", "-2"], "--opponent-koi"),
        (["score", "--cards", "01-1", "--field-brights", "-1"], "--field-brights"),
        (["score", "--cards", "01-1", "--option", "nope=on"], "nope"),
        (["score", "--cards", "01-1", "--option", "triade"], "ID=on"),
        (["rules", "show", "nosuch"], "nosuch"),
    ],
)
def test_cli_bad_input_exit_2_one_sentence(args, needle):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and needle in lines[0]


def test_cli_bad_input_in_a_real_process():
    proc = subprocess.run(
        [sys.executable, "-m", "companion.cli", "score", "--cards", "01-1,01-1", "--json"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert proc.returncode == 2
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "twice" in proc.stderr


def test_rules_list_and_show():
    result = run_cli("rules", "list")
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.output.splitlines()] == RuleSet.presets()
    listed = json.loads(run_cli("rules", "list", "--json").output)
    assert {row["name"] for row in listed} == set(PRESETS)
    shown = run_cli("rules", "show", "livret")
    assert shown.exit_code == 0
    for needle in (
        "Sankō",
        "= 6",
        "Gokō",
        "= 15",
        "Multipliers",
        "Round:",
        "Match:",
        "triade",
        "default off",
    ):
        assert needle in shown.output
    on = run_cli("rules", "show", "livret", "--option", "triade=on")
    assert "Triade" in on.output and "Triade" not in shown.output.split("Options:")[0]
    as_json = json.loads(run_cli("rules", "show", "ferme-florale", "--json").output)
    assert (
        as_json["game"]["deck"] == "ferme-florale" and as_json["active_options"]["cards_count_once"]
    )


# --- koikoi-japan against the table it copies ----------------------------------------------

LIGHTS = {"01-1", "03-1", "08-1", "11-1", "12-1"}
SEEDS = {"02-1", "04-1", "05-1", "06-1", "07-1", "08-2", "09-1", "10-1", "11-2"}
RIBBONS = {"01-2", "02-2", "03-2", "04-2", "05-2", "06-2", "07-2", "09-2", "10-2", "11-3"}
RED, BLUE = {"01-2", "02-2", "03-2"}, {"06-2", "09-2", "10-2"}


def koikoi_japan_points(pile: set[str], koi: int) -> int:
    """The round points of KoiKoi-AI's yaku() and yaku_point() (koikoigame.py), restated:
    an independent oracle for the preset, which is data."""
    dross = {c for c in ALL_CODES if c not in LIGHTS | SEEDS | RIBBONS} | {"09-1"}
    points = 0
    lights = len(pile & LIGHTS)
    rain = "11-1" in pile
    points += {5: 10, 4: 7 if rain else 8, 3: 0 if rain else 5}.get(lights, 0)
    points += 5 if {"06-1", "07-1", "10-1"} <= pile else 0
    for viewing in ({"03-1", "09-1"}, {"08-1", "09-1"}):
        points += (3 if koi else 1) if viewing <= pile else 0
    points += max(0, len(pile & SEEDS) - 4)
    points += 10 if RED | BLUE <= pile else 0
    points += 5 if RED <= pile else 0
    points += 5 if BLUE <= pile else 0
    points += max(0, len(pile & RIBBONS) - 4)
    points += max(0, len(pile & dross) - 9)
    if not points:
        return 0
    return points + koi if koi <= 3 else points * (koi - 2)


@settings(max_examples=300, deadline=None)
@given(cards=hands, koi=st.integers(0, 6), opponent_koi=st.integers(0, 3))
def test_koikoi_japan_scores_as_the_table_does(cards, koi, opponent_koi):
    rules = RuleSet.load("koikoi-japan")
    hand = score_hand(rules, cards, koi_own=koi, koi_opponent=opponent_koi)
    assert hand.total == koikoi_japan_points(set(cards), koi)


# --- the new keys (issue 71) -----------------------------------------------------------------


def nintendo_with(extra: str) -> RuleSet:
    return RuleSet.from_text((RULESETS_DIR / "nintendo.toml").read_text(encoding="utf-8") + extra)


def test_voided_by_takes_roles_codes_or_a_selector():
    base = (RULESETS_DIR / "nintendo.toml").read_text(encoding="utf-8")
    viewing = ["03-1", "09-1"]
    for void in ('["lightning"]', '["11-4", "11-1"]', "{ months = [11] }"):
        text = base.replace(
            'cards = ["curtain", "sake_cup"]\npoints = 5',
            f'cards = ["curtain", "sake_cup"]\npoints = 5\nvoided_by = {void}',
        )
        rules = RuleSet.from_text(text)
        assert score_yaku(rules, viewing).base == 5
        assert score_yaku(rules, [*viewing, "11-4"]).base == 0, void
        if "months" in void:  # any willow card
            assert score_yaku(rules, [*viewing, "11-2"]).base == 0
        assert "void with" in rules.yaku_by_id("hanami").describe()


def test_limited_yaku_with_cards_counted_once_take_the_best_valid_assignment():
    """livret, one card per yaku: moon + sake (3) alone cannot count once limited; Tane
    (the sake cup as its 5th animal) is then the best; with a sixth animal Tsukimi comes back."""
    text = (
        (RULESETS_DIR / "livret.toml")
        .read_text(encoding="utf-8")
        .replace(
            'cards = ["moon", "sake_cup"]\npoints = 3',
            'cards = ["moon", "sake_cup"]\npoints = 3\nneeds_another_yaku = true',
        )
    )
    rules = RuleSet.from_text(text)
    assert rules.scoring.cards_count_once
    animals = ["02-1", "04-1", "05-1", "06-1"]
    assert score_yaku(RuleSet.load("livret"), ["08-1", "09-1", *animals]).base == 3
    report = score_yaku(rules, ["08-1", "09-1", *animals])
    assert {y.id: y.points for y in report.yaku} == {"tane": 1}
    report = score_yaku(rules, ["08-1", "09-1", *animals, "07-1", "10-1"])
    # Ino-Shika-Chō takes butterflies, boar, deer; Tsukimi counts beside it.
    assert {y.id: y.points for y in report.yaku} == {"inoshikacho": 5, "tsukimi": 3}
    assert score_yaku(rules, ["08-1", "09-1"]).base == 0


def test_points_with_koi_follow_the_scorers_calls():
    rules = nintendo_with("")
    text = rules.source_text.replace(
        'cards = ["moon", "sake_cup"]\npoints = 5',
        'cards = ["moon", "sake_cup"]\npoints = 1\npoints_with_koi = [2, 4]',
    )
    rules = RuleSet.from_text(text)
    got = [score_yaku(rules, ["08-1", "09-1"], koi_own=k).base for k in range(4)]
    assert got == [1, 2, 4, 4]
    assert score_hand(rules, ["08-1", "09-1"], koi_opponent=3).base == 1


def test_round_month_selector_needs_a_month():
    rules = RuleSet.load("nintendo").with_options({"tsukifuda": True})
    april = ["04-1", "04-2", "04-3", "04-4"]
    assert score_yaku(rules, april).base == 0  # no month known: no yaku of the month
    assert score_yaku(rules, april, month=4).base == 4
    assert "cards of the round's month" in rules.yaku_by_id("tsukifuda").describe()
    assert rules.to_dict()["yaku"][-1]["select"] == {"round_month": True}
    with pytest.raises(ScoringError, match="month"):
        score_yaku(rules, april, month=13)
    result = run_cli("score", "--rules", "nintendo", "--cards", "04-1", "--month", "0")
    assert result.exit_code == 2 and "--month" in result.output


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        (
            lambda t: t.replace('koi = "opponent_double"', 'koi = "bonus"\nkoi_bonus = [1, -2]'),
            "koi_bonus",
        ),
        (
            lambda t: t.replace('koi = "opponent_double"', 'koi = "bonus"\nkoi_bonus = 3'),
            "koi_bonus",
        ),
        (lambda t: t.replace("koi_factor = 2", "koi_factor = 0"), "koi_factor"),
        (lambda t: t.replace("seven_factor = 2", "seven_factor = 1000"), "seven_factor"),
        (
            lambda t: t.replace(
                "points = 10\nfamily", "points = 10\npoints_with_koi = [-1]\nfamily", 1
            ),
            "points_with_koi",
        ),
        (lambda t: t.replace("points = 10\nfamily", "points = 1000000\nfamily", 1), "points"),
        (
            lambda t: t.replace(
                "points = 10\nfamily", 'points = 10\nvoided_by = ["unicorn"]\nfamily', 1
            ),
            "unicorn",
        ),
        (
            lambda t: t.replace("points = 10\nfamily", "points = 10\nvoided_by = []\nfamily", 1),
            "voided_by",
        ),
        (
            lambda t: t.replace(
                "points = 10\nfamily", 'points = 10\nneeds_another_yaku = "yes"\nfamily', 1
            ),
            "needs_another_yaku",
        ),
        (
            lambda t: t.replace('select = { category = "chaff" }', "select = { round_month = 1 }"),
            "round_month",
        ),
        (lambda t: t.replace('id = "kasu"', 'id = "koi_koi"'), "koi_koi"),
        (lambda t: t.replace("teams = false", "teams = false\nbank = -5"), "bank"),
        (lambda t: t.replace("teams = false", "teams = false\nbank = 10000000"), "bank"),
        (lambda t: t.replace("teams = false", 'teams = false\nbank = "lots"'), "bank"),
        (
            lambda t: t.replace("wild_cards = []", 'wild_cards = []\nhand_cards = "maybe"'),
            "hand_cards",
        ),
    ],
)
def test_new_keys_refuse_bad_values_in_one_sentence(patch, needle):
    text = (RULESETS_DIR / "nintendo.toml").read_text(encoding="utf-8")
    changed = patch(text)
    assert changed != text
    with pytest.raises(RuleError) as err:
        RuleSet.from_text(changed)
    assert needle in str(err.value)
    assert _one_sentence(str(err.value))


def test_koikoi_japan_preset_reads_as_the_table():
    rules = RuleSet.load("koikoi-japan")
    assert rules.match.bank == 30 and rules.default_rounds == 8
    assert (rules.round.exhausted, rules.round.exhausted_points) == ("oya_scores", 1)
    assert (rules.multipliers.koi, rules.multipliers.koi_bonus) == ("bonus", (1, 2, 3))
    assert rules.multipliers.seven_points == "none"
    shown = run_cli("rules", "show", "koikoi-japan").output
    assert "+1, +2, +3" in shown and "30 points" in shown and "3 after Koi" in shown


def test_nintendo_house_rules_are_options_off_by_default():
    rules = RuleSet.load("nintendo")
    options = {o.id: o.default for o in rules.options}
    assert options == {
        "rain_cancels_viewings": False,
        "viewings_limited": False,
        "tsukifuda": False,
    }
    assert all(o.label for o in rules.options)


def _nintendo_with_koi_bonus(extra_options: str = "") -> RuleSet:
    # nintendo's limited viewings, with koikoi-japan's Koi bonus instead of its Koi rule
    text = RuleSet.load("nintendo").source_text
    text = text.replace('koi = "opponent_double"', 'koi = "bonus"\nkoi_bonus = [1, 2, 3]', 1)
    return RuleSet.from_text(text + extra_options).with_options({"viewings_limited": True})


def test_the_koi_bonus_is_no_yaku_for_a_viewing_that_needs_another():
    # RULES_FORMAT.md: a needs_another_yaku yaku alone scores nothing, however many Koi calls
    rules = _nintendo_with_koi_bonus()
    viewing = [Card.from_code("03-1"), Card.from_code("09-1")]
    alone = score_hand(rules, viewing, koi_own=2)
    assert alone.total == 0 and alone.yaku == []
    # with another yaku (five ribbons) the viewing and the bonus both count
    ribbons = [Card.from_code(c) for c in ("01-2", "02-2", "04-2", "05-2", "07-2")]
    both = score_hand(rules, viewing + ribbons, koi_own=2)
    ids = {y.id for y in both.yaku}
    assert "hanami" in ids and "koi_koi" in ids and both.total > 0


def test_when_two_options_patch_one_key_the_one_written_later_wins():
    base = RuleSet.load("nintendo").source_text
    later = (
        '\n[options.first_patch]\nlabel = "a"\ndefault = true\n'
        'set = { "yaku.hanami.points" = 7 }\n'
        '\n[options.second_patch]\nlabel = "b"\ndefault = true\n'
        'set = { "yaku.hanami.points" = 9 }\n'
    )
    rules = RuleSet.from_text(base + later)
    assert rules.yaku_by_id("hanami").points == 9
    assert rules.with_options({"second_patch": False}).yaku_by_id("hanami").points == 7

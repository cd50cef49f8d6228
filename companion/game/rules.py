"""Rule sets as data: TOML presets (``companion/game/rulesets/*.toml``) loaded into frozen objects.

A rule set says which yaku exist and what they are worth, which multipliers apply, and how
rounds and matches are settled. Every variant a source document offers is an *option*: a named
switch with a default that patches the rule set when it is on. The format is documented in
``docs/RULES_FORMAT.md``; ``RuleSet.load("livret")`` or ``RuleSet.load("my-rules.toml")``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
from dataclasses import MISSING, dataclass, field
from pathlib import Path

from companion import CompanionError
from companion.game.cards import (
    CODE_RE,
    Card,
    CardError,
    Category,
    Deck,
    RibbonKind,
    normalize_code,
    parse_toml,
)
from companion.game.events import quoted
from companion.game.messages import Message, Named

RULESETS_DIR = Path(__file__).with_name("rulesets")
_NO_FOLDER = RULESETS_DIR / "decks-named-by-text"  # never exists: only built-in deck names
DEFAULT_PRESET = "livret"


class RuleError(CompanionError):
    """An unknown preset, an unreadable rule file or an invalid rule."""


# --------------------------------------------------------------------------------------------
# Card selectors
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selector:
    """Which cards a yaku counts: all given conditions must hold (an empty selector matches all).

    ``category`` and ``ribbon`` accept one value or a list; ``roles`` matches a card with any
    of them; dual roles of the rule set (sake cup also a chaff) extend ``category``.
    """

    category: tuple[str, ...] = ()
    ribbon: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    months: tuple[int, ...] = ()
    exclude_roles: tuple[str, ...] = ()
    exclude_codes: tuple[str, ...] = ()
    round_month: bool = False  # the cards of the round's month (tsuki-fuda); see for_month

    def matches(self, card: Card, dual: dict[str, frozenset[str]] | None = None) -> bool:
        if self.round_month:  # not resolved with for_month: no month, no card
            return False
        if self.category:
            cats = {card.category.value} | set((dual or {}).get(card.code, ()))
            if not cats & set(self.category):
                return False
        if self.ribbon and (card.ribbon is None or card.ribbon.value not in self.ribbon):
            return False
        if self.roles and not card.roles & set(self.roles):
            return False
        if self.codes and card.code not in self.codes:
            return False
        if self.months and card.month not in self.months:
            return False
        if card.roles & set(self.exclude_roles) or card.code in self.exclude_codes:
            return False
        return True

    def for_month(self, month: int | None) -> Selector | None:
        """This selector with ``round_month`` resolved to ``month`` (None: it matches nothing)."""
        if not self.round_month:
            return self
        if month is None or (self.months and month not in self.months):
            return None
        return dataclasses.replace(self, round_month=False, months=(month,))

    def describe(self) -> str:
        parts = []
        if self.ribbon:
            parts.append("/".join(self.ribbon) + " ribbons")
        elif self.category:
            parts.append("/".join(_plural(c) for c in self.category))
        if self.roles:
            parts.append("/".join(self.roles))
        if self.codes:
            parts.append(",".join(self.codes))
        if self.months:
            parts.append("months " + ",".join(str(m) for m in self.months))
        if self.round_month:
            parts.append("of the round's month" if parts else "cards of the round's month")
        text = " ".join(parts) or "cards"
        if self.exclude_roles or self.exclude_codes:
            text += " without " + ", ".join((*self.exclude_roles, *self.exclude_codes))
        return text

    def to_dict(self) -> dict:
        return {k: v if isinstance(v, bool) else list(v) for k, v in self.__dict__.items() if v}


def _plural(category: str) -> str:
    return {"bright": "brights", "animal": "animals", "ribbon": "ribbons", "chaff": "chaff"}.get(
        category, category
    )


def item_matches(item: str, card: Card) -> bool:
    """A set member is a card code (``09-1``) or a role (``sake_cup``)."""
    return card.code == _as_code(item) if CODE_RE.match(item) else item in card.roles


@functools.lru_cache(maxsize=32)
def _preset_yaku_names(preset: str) -> dict[str, dict]:
    """Each yaku id of the shipped preset ``preset`` -> its ``names`` ({} for another file)."""
    path = RULESETS_DIR / f"{preset}.toml"
    if not re.fullmatch(r"[A-Za-z0-9_-]+", preset) or not path.is_file():
        return {}
    data = parse_toml(
        path.read_text(encoding="utf-8"), Message("phrase.the_preset", name=preset), RuleError
    )
    return {
        y["id"]: dict(y["names"])
        for y in data.get("yaku", [])
        if isinstance(y, dict) and isinstance(y.get("names"), dict) and "id" in y
    }


@functools.lru_cache(maxsize=1024)
def _as_code(item: str) -> str:
    return normalize_code(item)  # "8-1" -> "08-1" (checked when the rule file was read)


# --------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class YakuSpec:
    """One yaku: ``count`` (``min`` cards matching ``select``, with the ``require``d ones among
    them), ``set`` (the named ``cards``, codes or roles) or ``bonus`` (a set exempt from
    cards_count_once). Worth ``points`` plus ``per_extra`` per card matching ``extra`` beyond its
    own cards (for ``count`` without ``extra``: per card beyond ``min``)."""

    id: str
    name: str  # a Named: the file's name, with its translations (``names``) for the page
    kind: str
    points: int
    select: Selector | None = None
    min: int = 0
    require: tuple[str, ...] = ()
    per_extra: int = 0
    extra: Selector | None = None
    family: str | None = None
    replaces: tuple[str, ...] = ()
    option: str | None = None
    exempt_from_count_once: bool = False
    description: str = ""
    points_with_koi: tuple[int, ...] = ()  # points after the scorer's 1st, 2nd... Koi call
    voided_by: tuple[str, ...] = ()  # codes or roles: holding any of them cancels the yaku
    voided_by_select: Selector | None = None  # or cards matching this selector
    needs_another_yaku: bool = False  # counts only alongside a yaku without this flag

    def points_for_koi(self, koi_own: int) -> int:
        """The yaku's value once the scorer has called Koi ``koi_own`` times."""
        if not koi_own or not self.points_with_koi:
            return self.points
        return self.points_with_koi[min(koi_own, len(self.points_with_koi)) - 1]

    def voided(self, cards) -> bool:
        """Whether held cards cancel the yaku (the rain man cancels the viewings)."""
        return any(
            any(item_matches(item, c) for item in self.voided_by)
            or (self.voided_by_select is not None and self.voided_by_select.matches(c))
            for c in cards
        )

    @property
    def uses_round_month(self) -> bool:
        return any(s is not None and s.round_month for s in (self.select, self.extra))

    @property
    def core_size(self) -> int:
        return max(self.min, len(self.require))

    @property
    def extra_selector(self) -> Selector | None:
        if self.per_extra == 0:
            return None
        return self.extra or (self.select if self.kind == "count" else None)

    def describe(self) -> str:
        if self.kind == "count":
            what = f"{self.min} {self.select.describe()}"
            if self.require:
                what += " incl. " + " + ".join(self.require)
        else:
            what = " + ".join(self.require)
        text = f"{what} = {self.points}"
        if self.points_with_koi:
            text += " (" + "/".join(map(str, self.points_with_koi)) + " after Koi)"
        if self.per_extra:
            extra = self.extra.describe() if self.extra else "card"
            text += f", +{self.per_extra} per extra {extra}"
        if self.voided_by or self.voided_by_select:
            held = [*self.voided_by]
            if self.voided_by_select:
                held.append(self.voided_by_select.describe())
            text += ", void with " + " or ".join(held)
        if self.needs_another_yaku:
            text += ", only with another yaku"
        return text


@dataclass(frozen=True)
class GameRules:
    name: str
    title: str = ""
    seed: str = ""
    deck: str = "standard"
    players: tuple[int, ...] = (2,)
    rounds: tuple[int, ...] = (6, 12)
    default_rounds: int = 12
    mode: str = "yaku"
    # player count (as text) -> (cards in each hand, cards in the dealt field)
    deal: dict = field(default_factory=lambda: {"2": (8, 8)})


@dataclass(frozen=True)
class ScoringRules:
    cards_count_once: bool = False
    dual_roles: tuple[tuple[str, str], ...] = ()  # (card code or role, also-category)
    card_values: dict = field(
        default_factory=lambda: {"bright": 20, "animal": 10, "ribbon": 5, "chaff": 1}
    )


@dataclass(frozen=True)
class MultiplierRules:
    seven_points: str = "none"
    seven_factor: int = 2
    koi: str = "none"
    koi_factor: int = 2  # the factor of koi = "opponent_double"
    field_brights: bool = False
    # koi = "bonus": points added for the scorer's 1st, 2nd... call; past the list, multiply
    koi_bonus: tuple[int, ...] = ()


@dataclass(frozen=True)
class RoundRules:
    payment: str = "zero_sum"
    exhausted: str = "draw"
    exhausted_points: int = 6
    draw_oya: str = "stays"
    next_oya: str = "winner"
    instant_wins: tuple[str, ...] = ("teshi", "kuttsuki")
    instant_win_points: int = 6
    field_redeal: bool = True  # a dealt field with 4 of a month or 4 pairs is dealt again
    field_redeal_pairs: bool = True  # with field_redeal: 4 pairs redeal too, not only 4 of a month
    wild_cards: tuple[str, ...] = ()  # codes or roles of wild cards (gaji), for the engine
    hand_cards: str = "optional"  # "required": a dealt-hand declaration lists its cards


@dataclass(frozen=True)
class MatchRules:
    tie_break: str = "extra_round"
    winner_by: str = "points"
    teams: bool = False
    bank: int = 0  # points each player starts with; the match ends when one runs out


@dataclass(frozen=True)
class OptionSpec:
    id: str
    label: str
    default: bool = False
    description: str = ""
    set: dict = field(default_factory=dict, compare=False)


_ENUMS = {
    ("game", "mode"): ("yaku", "card_values"),
    ("multipliers", "seven_points"): ("none", "at_least", "more_than"),
    ("multipliers", "koi"): ("none", "own", "all", "opponent_double", "bonus"),
    ("round", "payment"): ("zero_sum", "winner_only", "each_scores"),
    ("round", "exhausted"): ("draw", "oya_scores", "last_yaku_maker_unless_oya"),
    ("round", "draw_oya"): ("stays", "changes"),
    ("round", "next_oya"): ("winner", "highest_total"),
    ("round", "hand_cards"): ("optional", "required"),
    ("match", "tie_break"): ("extra_round", "none"),
    ("match", "winner_by"): ("points", "rounds_won"),
}
_INSTANT_WINS = ("teshi", "kuttsuki", "dealt_yaku")
# What a sane rule file may say: beyond these a value is a typo, and a huge one would make
# the engine or the page misbehave (a million seats, a factor of zero...).
MAX_POINTS = 10_000
_BOUNDS = {
    ("game", "default_rounds"): (1, 100),
    ("multipliers", "seven_factor"): (1, 100),
    ("multipliers", "koi_factor"): (1, 100),
    ("round", "exhausted_points"): (0, MAX_POINTS),
    ("round", "instant_win_points"): (0, MAX_POINTS),
}
_LIST_BOUNDS = {"players": (1, 6), "rounds": (1, 100)}
_SECTIONS = {
    "game": GameRules,
    "scoring": ScoringRules,
    "multipliers": MultiplierRules,
    "round": RoundRules,
    "match": MatchRules,
}
_YAKU_KEYS = {
    "id",
    "name",
    "names",
    "kind",
    "points",
    "select",
    "min",
    "require",
    "cards",
    "per_extra",
    "extra",
    "family",
    "replaces",
    "option",
    "exempt_from_count_once",
    "description",
    "points_with_koi",
    "voided_by",
    "needs_another_yaku",
}
KOI_BONUS_ID = "koi_koi"  # the line koi = "bonus" adds to a hand; no yaku may take this id
MAX_POINTS = 1000  # a yaku value, bonus or bank beyond this is a typo
# The presets have 15 yaku at most. Scoring with cards counting once searches yaku by yaku
# (one level of recursion each), so thousands would exhaust Python's stack and time.
MAX_YAKU = 100


# --------------------------------------------------------------------------------------------
# The rule set
# --------------------------------------------------------------------------------------------


class RuleSet:
    """A loaded rule set with its options applied. Build with ``load``/``from_text``."""

    def __init__(self, data: dict, source_text: str, option_values: dict[str, bool], base_dir):
        self._data = data
        self.source_text = source_text
        self._base_dir = base_dir
        self.options = _parse_options(data.get("options", {}))
        known = {o.id for o in self.options}
        for key in option_values:
            if key not in known:
                raise RuleError(
                    f"Unknown option {key!r} for rule set {data.get('game', {}).get('name', '?')!r}: "
                    f"known options are {', '.join(sorted(known)) or 'none'}."
                )
        self.active_options = {o.id: bool(option_values.get(o.id, o.default)) for o in self.options}

        effective = copy.deepcopy(data)
        for opt in self.options:
            if self.active_options[opt.id]:
                for path, value in opt.set.items():
                    _patch(effective, path, value, opt.id)
        self._effective = effective
        self._build(effective)

    # -- construction --------------------------------------------------------------------

    @classmethod
    def load(cls, name_or_path: str | Path = DEFAULT_PRESET) -> RuleSet:
        """A preset by name (``livret``) or a rule file by path (``./my-rules.toml``)."""
        text_name = str(name_or_path)
        shown = quoted(text_name, 80)
        path = Path(text_name)
        try:
            if path.suffix.lower() != ".toml" and not path.is_file():
                if (
                    not re.fullmatch(r"[A-Za-z0-9_-]{1,80}", text_name)
                    or not (RULESETS_DIR / f"{text_name}.toml").is_file()
                ):
                    raise RuleError(
                        f"No rule set {shown}: presets are {', '.join(cls.presets())}, "
                        "or give the path of a .toml file."
                    )
                path = RULESETS_DIR / f"{text_name}.toml"
            if not path.is_file():
                raise RuleError(f"Rule file {shown} does not exist.")
            text = path.read_text(encoding="utf-8")
        except OSError as exc:  # a name too long for the system, a folder that cannot be read
            raise RuleError(f"Cannot read rule file {shown}: {exc.strerror or exc}.") from None
        except UnicodeDecodeError:
            raise RuleError(f"Cannot read rule file {shown}: it is not UTF-8 text.") from None
        return cls.from_text(text, base_dir=path.parent, default_name=path.stem)

    @classmethod
    def from_text(
        cls,
        text: str,
        options: dict[str, bool] | None = None,
        *,
        base_dir: str | Path | None = None,
        default_name: str = "custom",
    ) -> RuleSet:
        data = parse_toml(text, Message("phrase.the_rule_file"), RuleError)
        if not isinstance(data.setdefault("game", {}), dict):
            raise RuleError("[game] must be a table.")
        data["game"].setdefault("name", default_name)
        return cls(data, text, dict(options or {}), Path(base_dir) if base_dir else None)

    @staticmethod
    def presets() -> list[str]:
        names = sorted(p.stem for p in RULESETS_DIR.glob("*.toml"))
        if DEFAULT_PRESET in names:  # the default first
            names.remove(DEFAULT_PRESET)
            names.insert(0, DEFAULT_PRESET)
        return names

    def with_options(self, options: dict[str, bool]) -> RuleSet:
        """A new rule set with these options switched (the others keep their current value)."""
        values = dict(self.active_options)
        for key, value in options.items():
            if key not in values:
                known = ", ".join(sorted(values)) or "none"
                raise RuleError(
                    f"Unknown option {key!r} for rule set {self.name!r}: known options are {known}."
                )
            values[key] = _as_bool(value, key)
        return RuleSet(self._data, self.source_text, values, self._base_dir)

    # -- attributes ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.game.name

    @property
    def title(self) -> str:
        return self.game.title or self.game.name

    @property
    def players(self) -> tuple[int, ...]:
        return self.game.players

    @property
    def rounds(self) -> tuple[int, ...]:
        return self.game.rounds

    @property
    def default_rounds(self) -> int:
        return self.game.default_rounds

    @property
    def mode(self) -> str:
        return self.game.mode

    def yaku_by_id(self, yaku_id: str) -> YakuSpec:
        for y in self.yaku:
            if y.id == yaku_id:
                return y
        raise RuleError(f"Rule set {self.name!r} has no yaku {yaku_id!r}.")

    def is_wild(self, card: Card) -> bool:
        return any(item_matches(item, card) for item in self.round.wild_cards)

    def __repr__(self) -> str:
        on = [k for k, v in self.active_options.items() if v]
        return f"<RuleSet {self.name} options={on}>"

    def to_dict(self) -> dict:
        """The effective rule set (options applied) as plain data."""
        return copy.deepcopy(self._effective) | {"active_options": dict(self.active_options)}

    def describe(self) -> str:
        """A readable summary: yaku, multipliers, round and match rules, options."""
        lines = [
            f"{self.title} ({self.name}" + (f", seed {self.game.seed})" if self.game.seed else ")")
        ]
        lines.append(
            f"  players {'/'.join(map(str, self.players))}, rounds {'/'.join(map(str, self.rounds))}"
            f" (default {self.default_rounds}), deck {self.deck.name}, mode {self.mode}"
        )
        if self.mode == "card_values":
            vals = ", ".join(f"{k} {v}" for k, v in self.scoring.card_values.items())
            lines.append(f"Card values: {vals}")
        else:
            lines.append(
                "Yaku ("
                + (
                    "each card in one yaku only, best assignment"
                    if self.scoring.cards_count_once
                    else "cumulative"
                )
                + "):"
            )
            width = max((len(y.name) for y in self.yaku), default=0)
            for y in self.yaku:
                notes = []
                if y.family:
                    notes.append(f"family {y.family}")
                if y.replaces:
                    notes.append("replaces " + ", ".join(y.replaces))
                if y.exempt_from_count_once:
                    notes.append("bonus")
                note = f"  [{'; '.join(notes)}]" if notes else ""
                lines.append(f"  {y.name:<{width}}  {y.describe()}{note}")
            if self.scoring.dual_roles:
                duals = ", ".join(f"{c} also {a}" for c, a in self.scoring.dual_roles)
                lines.append(f"  dual roles: {duals}")
        m = self.multipliers
        mult = []
        if m.seven_points == "at_least":
            mult.append(f"7 points or more x{m.seven_factor}")
        elif m.seven_points == "more_than":
            mult.append(f"more than 7 points x{m.seven_factor}")
        mult.append(
            {
                "none": "Koi calls do not multiply",
                "own": "x(1 + own Koi calls)",
                "all": "x(1 + all Koi calls of the round)",
                "opponent_double": f"x{m.koi_factor} if an opponent called Koi",
                "bonus": (
                    "own Koi calls add "
                    + ", ".join(f"+{n}" for n in m.koi_bonus)
                    + f", then x2, x3... from call {len(m.koi_bonus) + 1}"
                    if m.koi_bonus
                    else "x(1 + own Koi calls)"
                ),
            }[m.koi]
        )
        if m.field_brights:
            mult.append("x(1 + brights in the dealt field)")
        lines.append("Multipliers (by product): " + "; ".join(mult))
        r = self.round
        lines.append(
            f"Round: payment {r.payment}; cards run out: {r.exhausted}"
            + (f" ({r.exhausted_points})" if r.exhausted == "oya_scores" else "")
            + f"; after a draw the oya {r.draw_oya}; next oya: {r.next_oya}; instant wins "
            + (", ".join(r.instant_wins) or "none")
            + f" ({r.instant_win_points})"
            + (f"; wild cards {', '.join(r.wild_cards)}" if r.wild_cards else "")
        )
        mt = self.match
        lines.append(
            f"Match: winner by {mt.winner_by}; tie break {mt.tie_break}"
            + ("; 2 teams" if mt.teams else "")
            + (f"; each player starts with {mt.bank} points, out at 0" if mt.bank else "")
        )
        if self.options:
            lines.append("Options:")
            for o in self.options:
                state = "on" if self.active_options[o.id] else "off"
                lines.append(
                    f"  {o.id:<20} {state:<3} (default {'on' if o.default else 'off'})  {o.label}"
                )
        return "\n".join(lines)

    # -- building ----------------------------------------------------------------------------

    def _build(self, data: dict) -> None:
        for key in data:
            if key not in (*_SECTIONS, "yaku", "options"):
                raise RuleError(
                    f"Unknown section [{key}] in rule set: expected one of "
                    f"{', '.join((*_SECTIONS, 'yaku', 'options'))}."
                )
        sections = {}
        for section, klass in _SECTIONS.items():
            raw = data.get(section, {})
            if not isinstance(raw, dict):
                raise RuleError(f"[{section}] must be a table.")
            raw = dict(raw)
            fields = klass.__dataclass_fields__
            for key in raw:
                if key not in fields:
                    raise RuleError(
                        f"Unknown key {key!r} in [{section}]: expected one of {', '.join(sorted(fields))}."
                    )
                kind = _field_type(fields[key])
                if kind is not None and not _is_type(raw[key], kind):
                    raise RuleError(f"[{section}] {key} must be {_TYPE_WORDS[kind]}.")
                if (section, key) in _ENUMS and raw[key] not in _ENUMS[(section, key)]:
                    raise RuleError(
                        f"[{section}] {key} = {raw[key]!r} is not one of "
                        f"{', '.join(_ENUMS[(section, key)])}."
                    )
            for key, value in list(raw.items()):
                if isinstance(value, list):
                    raw[key] = tuple(tuple(v) if isinstance(v, list) else v for v in value)
            sections[section] = raw

        for (section, key), (low, high) in _BOUNDS.items():
            value = sections[section].get(key)
            if value is not None and not low <= value <= high:
                raise RuleError(f"[{section}] {key} = {value} must be between {low} and {high}.")
        game = sections["game"]
        for key in ("players", "rounds"):
            low, high = _LIST_BOUNDS[key]
            if key in game and (
                not game[key] or not all(_is_type(n, int) and low <= n <= high for n in game[key])
            ):
                raise RuleError(
                    f"[game] {key} must be a list of whole numbers from {low} to {high}."
                )
        deal = {}
        for count, sizes in dict(game.get("deal", {"2": (8, 8)})).items():
            if not (
                str(count).isdigit()
                and isinstance(sizes, list | tuple)
                and len(sizes) == 2
                and all(_is_type(n, int) and n > 0 for n in sizes)
                and sum(sizes) <= 48
            ):
                raise RuleError(
                    '[game] deal looks like { "2" = [8, 8], "3" = [7, 6] } (hand, field).'
                )
            deal[str(count)] = tuple(sizes)
        game["deal"] = deal
        self.game = GameRules(**game)
        if self.game.default_rounds not in self.game.rounds:
            raise RuleError(
                f"[game] default_rounds = {self.game.default_rounds} is not among rounds "
                f"{list(self.game.rounds)}."
            )
        try:
            # A deck file is read beside the rule file and never outside it; a rule set with
            # no folder (a stored match's text) names only built-in decks.
            self.deck = Deck.load(self.game.deck, folder=self._base_dir or _NO_FOLDER)
        except CardError as exc:
            raise RuleError(f"Rule set {self.game.name!r}: {exc}") from None

        scoring = sections["scoring"]
        duals = []
        for entry in scoring.get("dual_roles", ()):
            entry = dict(entry) if not isinstance(entry, tuple) else None
            if not entry or set(entry) != {"card", "also"} or entry["also"] not in _CATEGORIES:
                raise RuleError(
                    '[scoring] dual_roles entries look like { card = "09-1", also = "chaff" }.'
                )
            self._check_item(entry["card"], "[scoring] dual_roles")
            duals.append((entry["card"], entry["also"]))
        scoring["dual_roles"] = tuple(duals)
        values = dict(ScoringRules().card_values)
        for key, value in dict(scoring.get("card_values", {})).items():
            if key not in _CATEGORIES or not _is_type(value, int) or not 0 <= value <= MAX_POINTS:
                raise RuleError(
                    "[scoring] card_values maps bright/animal/ribbon/chaff to whole numbers "
                    f"from 0 to {MAX_POINTS}."
                )
            values[key] = value
        scoring["card_values"] = values
        self.scoring = ScoringRules(**scoring)
        self._dual = {}
        for item, also in self.scoring.dual_roles:
            for card in self.deck:
                if item_matches(item, card):
                    self._dual.setdefault(card.code, set()).add(also)
        self._dual = {k: frozenset(v) for k, v in self._dual.items()}

        mult = sections["multipliers"]
        for key in ("seven_factor", "koi_factor"):
            if key in mult and not 1 <= mult[key] <= 100:
                raise RuleError(f"[multipliers] {key} must be a whole number from 1 to 100.")
        bonus = mult.get("koi_bonus", ())
        if len(bonus) > 12 or not all(
            isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_POINTS for n in bonus
        ):
            raise RuleError(
                "[multipliers] koi_bonus lists at most 12 whole numbers of points, like [1, 2, 3]."
            )
        self.multipliers = MultiplierRules(**mult)
        rnd = sections["round"]
        for win in rnd.get("instant_wins", ()):
            if win not in _INSTANT_WINS:
                raise RuleError(
                    f"[round] instant_wins: {win!r} is not one of {', '.join(_INSTANT_WINS)}."
                )
        for item in rnd.get("wild_cards", ()):
            self._check_item(item, "[round] wild_cards")
        self.round = RoundRules(**rnd)
        mt = sections["match"]
        if not 0 <= mt.get("bank", 0) <= 100 * MAX_POINTS:
            raise RuleError("[match] bank must be a whole number from 0 (no bank) to 100000.")
        self.match = MatchRules(**mt)
        self.yaku = self._build_yaku(data.get("yaku", []))
        if self.scoring.cards_count_once:
            _check_search_bound(self)

    @property
    def dual_categories(self) -> dict[str, frozenset[str]]:
        """card code -> extra categories it also counts as (sake cup -> chaff)."""
        return self._dual

    def _check_item(self, item, where: str) -> None:
        if not isinstance(item, str):
            raise RuleError(f"{where}: {item!r} is not a card code or role name.")
        if CODE_RE.match(item):
            try:
                normalize_code(item)
            except CardError as exc:
                raise RuleError(f"{where}: {exc}") from None
        elif not self.deck.with_role(item):
            raise RuleError(f"{where}: no card of deck {self.deck.name!r} has the role {item!r}.")

    def _selector(self, raw, where: str) -> Selector:
        if not isinstance(raw, dict):
            raise RuleError(f'{where} must be a table like {{ category = "bright" }}.')
        fields = {}
        for key, value in raw.items():
            if key not in Selector.__dataclass_fields__:
                raise RuleError(
                    f"{where}: unknown key {key!r}, expected one of "
                    f"{', '.join(Selector.__dataclass_fields__)}."
                )
            if key == "round_month":
                if not isinstance(value, bool):
                    raise RuleError(f"{where}: round_month must be true or false.")
                fields[key] = value
                continue
            values = tuple(value) if isinstance(value, list | tuple) else (value,)
            if key == "category" and not set(values) <= set(_CATEGORIES):
                raise RuleError(f"{where}: category must be bright, animal, ribbon or chaff.")
            if key == "ribbon" and not set(values) <= {k.value for k in RibbonKind}:
                raise RuleError(f"{where}: ribbon must be poem, blue or plain.")
            if key in ("roles", "exclude_roles", "codes", "exclude_codes"):
                for item in values:
                    self._check_item(item, where)
            if key in ("codes", "exclude_codes"):
                values = tuple(normalize_code(v) for v in values)
            if key == "months" and not all(isinstance(m, int) and 1 <= m <= 12 for m in values):
                raise RuleError(f"{where}: months are whole numbers 1 to 12.")
            fields[key] = values
        return Selector(**fields)

    def _build_yaku(self, raw_list) -> tuple[YakuSpec, ...]:
        if not isinstance(raw_list, list):
            raise RuleError("Yaku are an array of tables: [[yaku]].")
        if len(raw_list) > MAX_YAKU:
            raise RuleError(f"A rule set has at most {MAX_YAKU} yaku, not {len(raw_list):,}.")
        option_ids = {o.id for o in self.options}
        specs = []
        for n, raw in enumerate(raw_list, 1):
            if not isinstance(raw, dict):
                raise RuleError(f"Yaku #{n} must be a table: [[yaku]].")
            where = f"yaku #{n} ({raw.get('id', '?')})"
            for key in raw:
                if key not in _YAKU_KEYS:
                    raise RuleError(f"{where}: unknown key {key!r}.")
            for key in ("id", "name", "kind", "points"):
                if key not in raw:
                    raise RuleError(f"{where} lacks {key!r}.")
            kind = raw["kind"]
            if kind not in ("count", "set", "bonus"):
                raise RuleError(f"{where}: kind must be count, set or bonus.")
            for key, high in (("points", MAX_POINTS), ("min", 48), ("per_extra", MAX_POINTS)):
                if key in raw and (not _is_type(raw[key], int) or not 0 <= raw[key] <= high):
                    raise RuleError(f"{where}: {key} must be a whole number from 0 to {high}.")
            for key in ("require", "cards", "replaces", "points_with_koi"):
                if key in raw and not isinstance(raw[key], list):
                    raise RuleError(f"{where}: {key} must be a list.")
            if raw.get("id") == KOI_BONUS_ID:
                raise RuleError(f"{where}: the id {KOI_BONUS_ID!r} is kept for the Koi-Koi bonus.")
            points_with_koi = tuple(raw.get("points_with_koi", ()))
            if len(points_with_koi) > 12 or not all(
                isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_POINTS
                for n in points_with_koi
            ):
                raise RuleError(
                    f"{where}: points_with_koi lists at most 12 whole numbers of points, like [3]."
                )
            if isinstance(raw.get("points"), int) and raw["points"] > MAX_POINTS:
                raise RuleError(f"{where}: points must be at most {MAX_POINTS}.")
            if "needs_another_yaku" in raw and not isinstance(raw["needs_another_yaku"], bool):
                raise RuleError(f"{where}: needs_another_yaku must be true or false.")
            voided_by, voided_by_select = (), None
            if isinstance(raw.get("voided_by"), dict):
                voided_by_select = self._selector(raw["voided_by"], f"{where} voided_by")
                if voided_by_select.round_month:
                    raise RuleError(f"{where}: voided_by cannot use round_month.")
            elif "voided_by" in raw:
                if not isinstance(raw["voided_by"], list) or not raw["voided_by"]:
                    raise RuleError(
                        f'{where}: voided_by lists codes or roles, like ["rain_man"], '
                        "or is a selector like { months = [11] }."
                    )
                for item in raw["voided_by"]:
                    self._check_item(item, f"{where} voided_by")
                voided_by = tuple(
                    normalize_code(i) if CODE_RE.match(i) else i for i in raw["voided_by"]
                )
            for key in ("id", "name", "kind"):
                if not isinstance(raw[key], str) or not raw[key]:
                    raise RuleError(f"{where}: {key} must be text.")
            # A match stored before its preset named its yaku in other languages: the
            # shipped preset's names for the same yaku.
            names = raw.get("names", _preset_yaku_names(self.game.name).get(raw["id"], {}))
            if not isinstance(names, dict) or not all(
                isinstance(k, str) and isinstance(v, str) and v for k, v in names.items()
            ):
                raise RuleError(
                    f'{where}: names maps a language code to the name, like {{ ja = "五光" }}.'
                )
            require = tuple(raw.get("require", ())) + tuple(raw.get("cards", ()))
            if len(require) > 48:  # each item takes a card of its own: more can never be made
                raise RuleError(f"{where}: require and cards list at most 48 cards together.")
            for item in require:
                self._check_item(item, where)
            select = self._selector(raw["select"], where) if "select" in raw else None
            if kind == "count" and (select is None or not raw.get("min")):
                raise RuleError(f"{where}: a count yaku needs select and a min of at least 1.")
            if kind in ("set", "bonus") and not require:
                raise RuleError(f"{where}: a {kind} yaku lists its cards (codes or roles).")
            if raw.get("option") is not None and raw["option"] not in option_ids:
                raise RuleError(f"{where}: option {raw['option']!r} is not defined in [options].")
            spec = YakuSpec(
                id=raw["id"],
                name=Named(raw["name"], names),
                kind=kind,
                points=raw["points"],
                select=select,
                min=raw.get("min", len(require)),
                require=require,
                per_extra=raw.get("per_extra", 0),
                extra=self._selector(raw["extra"], where) if "extra" in raw else None,
                family=raw.get("family"),
                replaces=tuple(raw.get("replaces", ())),
                option=raw.get("option"),
                exempt_from_count_once=bool(raw.get("exempt_from_count_once", kind == "bonus")),
                description=raw.get("description", ""),
                points_with_koi=points_with_koi,
                voided_by=voided_by,
                voided_by_select=voided_by_select,
                needs_another_yaku=raw.get("needs_another_yaku", False),
            )
            if spec.option and not self.active_options.get(spec.option):
                continue
            specs.append(spec)
        ids = [s.id for s in specs]
        if len(set(ids)) != len(ids):
            raise RuleError("Two yaku have the same id.")
        for s in specs:
            for r in s.replaces:
                if r not in ids and r not in {y.get("id") for y in raw_list}:
                    raise RuleError(f"Yaku {s.id!r} replaces {r!r}, which is not a yaku.")
        return tuple(specs)


_CATEGORIES = tuple(c.value for c in Category)
_TYPE_WORDS = {
    bool: "true or false",
    int: "a whole number",
    str: "text",
    tuple: "a list",
    dict: "a table",
}


_SEARCH_CHECKED: dict = {}  # (rule text, options) -> None, or the sentence refusing it


def _check_search_bound(rules: RuleSet) -> None:
    """Refuse a rule set whose best-assignment scoring would explode (once per text)."""
    from companion.game.scoring import ScoringTooCostly, search_cost

    key = (rules.source_text, tuple(sorted(rules.active_options.items())), rules.deck.name)
    if key not in _SEARCH_CHECKED:
        try:
            search_cost(rules)
            _SEARCH_CHECKED[key] = None
        except ScoringTooCostly as exc:
            _SEARCH_CHECKED[key] = str(exc)
        if len(_SEARCH_CHECKED) > 256:
            _SEARCH_CHECKED.pop(next(iter(_SEARCH_CHECKED)))
    if _SEARCH_CHECKED[key]:
        raise RuleError(_SEARCH_CHECKED[key])


def _field_type(f) -> type | None:
    """The TOML type a section field takes, from its default."""
    if f.default_factory is not MISSING:
        return type(f.default_factory())
    default = f.default
    return type(default) if type(default) in _TYPE_WORDS else None


def _is_type(value, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is tuple:
        return isinstance(value, list | tuple)
    return isinstance(value, kind)


def _as_bool(value, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("on", "true", "yes", "1"):
        return True
    if isinstance(value, str) and value.lower() in ("off", "false", "no", "0"):
        return False
    raise RuleError(f"Option {key!r} must be on or off, not {value!r}.")


def _parse_options(raw) -> list[OptionSpec]:
    if not isinstance(raw, dict):
        raise RuleError("[options] must hold tables like [options.triade].")
    options = []
    for oid, spec in raw.items():
        if not isinstance(spec, dict) or "label" not in spec:
            raise RuleError(f"[options.{oid}] needs a label.")
        for key in spec:
            if key not in ("label", "default", "description", "set"):
                raise RuleError(f"[options.{oid}]: unknown key {key!r}.")
        patches = spec.get("set", {})
        if not isinstance(patches, dict):
            raise RuleError(
                f'[options.{oid}] set is a table like {{ "round.payment" = "winner_only" }}.'
            )
        options.append(
            OptionSpec(
                id=oid,
                label=spec["label"],
                default=_as_bool(spec.get("default", False), oid),
                description=spec.get("description", ""),
                set=dict(patches),
            )
        )
    return options


def _patch(data: dict, path: str, value, option_id: str) -> None:
    """Apply one option patch: ``section.key`` or ``yaku.<id>.<key>``."""
    parts = path.split(".")
    if parts[0] == "yaku" and len(parts) == 3:
        for y in data.get("yaku", []):
            if y.get("id") == parts[1]:
                y[parts[2]] = value
                return
        raise RuleError(
            f"Option {option_id!r} patches {path!r}, but there is no yaku {parts[1]!r}."
        )
    if len(parts) != 2 or parts[0] not in _SECTIONS:
        raise RuleError(
            f"Option {option_id!r} patches {path!r}: expected 'section.key' or 'yaku.ID.key'."
        )
    data.setdefault(parts[0], {})[parts[1]] = value

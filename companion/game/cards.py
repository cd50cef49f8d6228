"""The 48 Hanafuda cards and deck definitions.

A card's identity is its slot code ``MM-K`` (month, index within the month, in the order
bright/animal, ribbon, chaff...; see ``../shared/decks/README.md``). What a slot is called and
which *roles* it plays (``crane``, ``sake_cup``...) come from a deck definition, so a
re-skinned deck (seed 003, "Ferme Florale Urbaine") can rename cards and give them roles of its
own without code changes. Rule sets refer to cards by code, category, ribbon kind or role.
"""

from __future__ import annotations

import enum
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

from companion import CompanionError
from companion.game.messages import Listing, Message

DECKS_DIR = Path(__file__).with_name("decks")


class CardError(CompanionError):
    """An unknown or malformed card code or name."""


_PARSER_POSITION = re.compile(r"^(.*) \(at line (\d+), column (\d+)\)$", re.S)
_AT_END = " (at end of document)"


def parse_toml(source: str, what, error: type[CompanionError] = CompanionError) -> dict:
    """``source`` read as TOML, or ``error`` with one sentence naming ``what`` (a phrase
    Message such as ``phrase.the_rule_file``, or plain text): bad syntax, nesting deeper than
    the parser's recursion, or a whole number too long for Python to read (over 4,300 digits:
    ``int`` refuses longer strings, a guard against quadratic parsing)."""
    what = what.with_capital() if isinstance(what, Message) else _upper_first(str(what))
    try:
        return tomllib.loads(source)
    except tomllib.TOMLDecodeError as exc:
        # the parser's words and where it stopped: a page in another language says where only
        detail = str(exc)
        if at := _PARSER_POSITION.match(detail):
            detail = Message("phrase.toml_at", problem=at[1], line=at[2], column=at[3])
        elif detail.endswith(_AT_END):
            detail = Message("phrase.toml_at_end", problem=detail[: -len(_AT_END)])
        raise error(Message("refusal.toml_invalid", what=what, detail=detail)) from None
    except RecursionError:
        raise error(Message("refusal.toml_too_deep", what=what)) from None
    except ValueError:  # int() of a number of thousands of digits
        raise error(Message("refusal.toml_long_number", what=what)) from None


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


class Category(str, enum.Enum):
    BRIGHT = "bright"
    ANIMAL = "animal"
    RIBBON = "ribbon"
    CHAFF = "chaff"


class RibbonKind(str, enum.Enum):
    POEM = "poem"  # red ribbon with writing (akatan): 01, 02, 03
    BLUE = "blue"  # aotan: 06, 09, 10
    PLAIN = "plain"  # red plain ribbon: 04, 05, 07, 11


MONTHS = {
    # month: (english, japanese, french)
    1: ("pine", "matsu", "pin"),
    2: ("plum", "ume", "prunier"),
    3: ("cherry", "sakura", "cerisier"),
    4: ("wisteria", "fuji", "glycine"),
    5: ("iris", "ayame", "iris"),
    6: ("peony", "botan", "pivoine"),
    7: ("bush clover", "hagi", "lespédèze"),
    8: ("susuki grass", "susuki", "eulalie"),
    9: ("chrysanthemum", "kiku", "chrysanthème"),
    10: ("maple", "momiji", "érable"),
    11: ("willow", "yanagi", "saule"),
    12: ("paulownia", "kiri", "paulownia"),
}

# The months as Japanese players write them (a card's Japanese name starts with its plant).
MONTH_KANJI = {
    1: "松",
    2: "梅",
    3: "桜",
    4: "藤",
    5: "菖蒲",
    6: "牡丹",
    7: "萩",
    8: "芒",
    9: "菊",
    10: "紅葉",
    11: "柳",
    12: "桐",
}
# The standard deck's cards as Japanese players write them (the page's Japanese names). The
# deck's "ja" names stay in romaji: they are what scripts type and what detect --json prints.
KANJI_NAMES = {
    "01-1": "松に鶴",
    "01-2": "松に赤短",
    "02-1": "梅に鶯",
    "02-2": "梅に赤短",
    "03-1": "桜に幕",
    "03-2": "桜に赤短",
    "04-1": "藤に不如帰",
    "04-2": "藤に短冊",
    "05-1": "菖蒲に八橋",
    "05-2": "菖蒲に短冊",
    "06-1": "牡丹に蝶",
    "06-2": "牡丹に青短",
    "07-1": "萩に猪",
    "07-2": "萩に短冊",
    "08-1": "芒に月",
    "08-2": "芒に雁",
    "09-1": "菊に盃",
    "09-2": "菊に青短",
    "10-1": "紅葉に鹿",
    "10-2": "紅葉に青短",
    "11-1": "柳に小野道風",
    "11-2": "柳に燕",
    "11-3": "柳に短冊",
    "11-4": "柳に雷",
    "12-1": "桐に鳳凰",
}


def kanji_name(code: str) -> str:
    """A standard card's slot as Japanese players write it: 松に鶴, 桐のカス2."""
    code = normalize_code(code)
    if code in KANJI_NAMES:
        return KANJI_NAMES[code]
    month, index = int(code[:2]), int(code[3])
    chaff = sum(1 for i in range(1, index) if f"{month:02d}-{i}" not in KANJI_NAMES) + 1
    return f"{MONTH_KANJI[month]}のカス{chaff}"


# Non-chaff cards of the standard deck: code -> (category, ribbon, role, en, ja, fr)
_SPECIAL = {
    "01-1": (Category.BRIGHT, None, "crane", "Crane and Sun", "Matsu ni Tsuru", "Grue et soleil"),
    "01-2": (
        Category.RIBBON,
        RibbonKind.POEM,
        None,
        "Pine Poem Ribbon",
        "Matsu ni Akatan",
        "Pin au ruban poème",
    ),
    "02-1": (Category.ANIMAL, None, "warbler", "Bush Warbler", "Ume ni Uguisu", "Fauvette"),
    "02-2": (
        Category.RIBBON,
        RibbonKind.POEM,
        None,
        "Plum Poem Ribbon",
        "Ume ni Akatan",
        "Prunier au ruban poème",
    ),
    "03-1": (Category.BRIGHT, None, "curtain", "Camp Curtain", "Sakura ni Maku", "Rideau"),
    "03-2": (
        Category.RIBBON,
        RibbonKind.POEM,
        None,
        "Cherry Poem Ribbon",
        "Sakura ni Akatan",
        "Cerisier au ruban poème",
    ),
    "04-1": (Category.ANIMAL, None, "cuckoo", "Cuckoo", "Fuji ni Hototogisu", "Coucou"),
    "04-2": (
        Category.RIBBON,
        RibbonKind.PLAIN,
        None,
        "Wisteria Red Ribbon",
        "Fuji ni Tanzaku",
        "Glycine au ruban rouge",
    ),
    "05-1": (Category.ANIMAL, None, "bridge", "Eight-plank Bridge", "Ayame ni Yatsuhashi", "Pont"),
    "05-2": (
        Category.RIBBON,
        RibbonKind.PLAIN,
        None,
        "Iris Red Ribbon",
        "Ayame ni Tanzaku",
        "Iris au ruban rouge",
    ),
    "06-1": (Category.ANIMAL, None, "butterflies", "Butterflies", "Botan ni Chō", "Papillons"),
    "06-2": (
        Category.RIBBON,
        RibbonKind.BLUE,
        None,
        "Peony Blue Ribbon",
        "Botan ni Aotan",
        "Pivoine au ruban bleu",
    ),
    "07-1": (Category.ANIMAL, None, "boar", "Boar", "Hagi ni Inoshishi", "Sanglier"),
    "07-2": (
        Category.RIBBON,
        RibbonKind.PLAIN,
        None,
        "Bush Clover Red Ribbon",
        "Hagi ni Tanzaku",
        "Lespédèze au ruban rouge",
    ),
    "08-1": (Category.BRIGHT, None, "moon", "Full Moon", "Susuki ni Tsuki", "Pleine lune"),
    "08-2": (Category.ANIMAL, None, "geese", "Geese", "Susuki ni Kari", "Oies sauvages"),
    "09-1": (Category.ANIMAL, None, "sake_cup", "Sake Cup", "Kiku ni Sakazuki", "Coupe de saké"),
    "09-2": (
        Category.RIBBON,
        RibbonKind.BLUE,
        None,
        "Chrysanthemum Blue Ribbon",
        "Kiku ni Aotan",
        "Chrysanthème au ruban bleu",
    ),
    "10-1": (Category.ANIMAL, None, "deer", "Deer", "Momiji ni Shika", "Cerf"),
    "10-2": (
        Category.RIBBON,
        RibbonKind.BLUE,
        None,
        "Maple Blue Ribbon",
        "Momiji ni Aotan",
        "Érable au ruban bleu",
    ),
    "11-1": (
        Category.BRIGHT,
        None,
        "rain_man",
        "Rain Man (Ono no Michikaze)",
        "Yanagi ni Ono no Michikaze",
        "Homme à l'ombrelle",
    ),
    "11-2": (Category.ANIMAL, None, "swallow", "Swallow", "Yanagi ni Tsubame", "Hirondelle"),
    "11-3": (
        Category.RIBBON,
        RibbonKind.PLAIN,
        None,
        "Willow Red Ribbon",
        "Yanagi ni Tanzaku",
        "Saule au ruban rouge",
    ),
    "11-4": (
        Category.CHAFF,
        None,
        "lightning",
        "Lightning (Gaji)",
        "Yanagi ni Kaminari",
        "Éclair (gaji)",
    ),
    "12-1": (Category.BRIGHT, None, "phoenix", "Phoenix", "Kiri ni Hō-ō", "Phénix"),
}

# A card code as people write it ("08-1", "8-1", "8 / 1"): the one pattern every module uses.
CODE_RE = re.compile(r"^\s*(\d{1,2})\s*[-_/.]\s*(\d)\s*$")
_CODE_RE = CODE_RE  # the older private name


def _fold(text: str) -> str:
    """Lower-case, accent-free, single-spaced form used to match card names."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"[^a-z0-9]+", " ", text.lower())
    return text.strip()


@dataclass(frozen=True)
class Card:
    """One card slot of a 48-card deck. Compare and hash by code."""

    code: str
    month: int
    index: int
    category: Category
    ribbon: RibbonKind | None = None
    roles: frozenset[str] = frozenset()
    names: dict = field(default_factory=dict, compare=False, hash=False)

    # Cards compare by code only: the same slot from two decks is the same card.
    def __eq__(self, other):
        return isinstance(other, Card) and other.code == self.code

    def __hash__(self):
        return hash(self.code)

    def __lt__(self, other: Card) -> bool:
        return (self.month, self.index) < (other.month, other.index)

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"Card.from_code({self.code!r})"

    @property
    def name(self) -> str:
        return self.names.get("en", self.code)

    def has_role(self, role: str) -> bool:
        return role in self.roles

    @classmethod
    def from_code(cls, code: str) -> Card:
        return STANDARD_DECK.card(code)

    @classmethod
    def parse(cls, text: str) -> Card:
        """A card from its code (``08-1``) or any of its names (``moon``, ``Susuki ni Tsuki``)."""
        return STANDARD_DECK.parse(text)


def normalize_code(code: str) -> str:
    """``'8-1'`` -> ``'08-1'``; raises CardError for anything that is not a card code."""
    if not isinstance(code, str):
        raise CardError(Message("refusal.code_not_text", value=repr(code)))
    m = _CODE_RE.match(code)
    if not m:
        raise CardError(Message("refusal.code_shape", value=repr(code)))
    month, index = int(m.group(1)), int(m.group(2))
    if not (1 <= month <= 12 and 1 <= index <= 4):
        raise CardError(Message("refusal.code_range", value=repr(code)))
    return f"{month:02d}-{index}"


def _standard_cards() -> list[Card]:
    cards = []
    for month, (m_en, m_ja, m_fr) in MONTHS.items():
        chaff_no = 0
        for index in range(1, 5):
            code = f"{month:02d}-{index}"
            if code in _SPECIAL:
                category, ribbon, role, en, ja, fr = _SPECIAL[code]
                roles = frozenset({role} if role else set())
            else:
                chaff_no += 1
                category, ribbon, roles = Category.CHAFF, None, frozenset()
                en = f"{m_en.title()} Chaff {chaff_no}"
                ja = f"{m_ja.title()} no Kasu {chaff_no}"
                fr = f"{m_fr.capitalize()} simple {chaff_no}"
            if ribbon is RibbonKind.POEM:
                roles = roles | {"poem_ribbon"}
            elif ribbon is RibbonKind.BLUE:
                roles = roles | {"blue_ribbon"}
            elif ribbon is RibbonKind.PLAIN:
                roles = roles | {"plain_ribbon"}
            cards.append(
                Card(code, month, index, category, ribbon, roles, {"en": en, "ja": ja, "fr": fr})
            )
    return cards


def card_name_in(card: Card, lang: str) -> str:
    """A card's name in ``lang`` (its English one where its deck has none). In Japanese, a
    standard card is written in kanji (松に鶴), not in the deck's romaji."""
    names = getattr(card, "names", None) or {}
    standard = STANDARD_DECK.card(card.code).names
    if lang == "ja" and names.get("ja") == standard.get("ja"):  # no Japanese name of its own
        if names.get("en") == standard.get("en"):
            return kanji_name(card.code)
        return names.get("en") or card.code  # a deck's own card, named in English only
    return names.get(lang) or names.get("en") or card.code


class Deck:
    """A named set of 48 card slots with their names and roles.

    Deck files (TOML, see ``companion/game/decks/``) start from the standard deck and override
    names and roles per code::

        name = "ferme-florale"
        base = "standard"          # optional, the default
        [cards."01-1"]
        names = { fr = "Grelinette", en = "Broadfork" }
        roles = ["tool"]           # replaces the slot's roles
        add_roles = ["first_tool"] # or adds to them
    """

    def __init__(self, name: str, cards: list[Card], title: str = ""):
        if len(cards) != 48 or len({c.code for c in cards}) != 48:
            raise CardError(Message("refusal.deck_48", deck=repr(name)))
        self.name = name
        self.title = title or name
        self.cards = sorted(cards)
        self._by_code = {c.code: c for c in self.cards}
        self._by_name: dict[str, Card] = {}
        for c in self.cards:
            keys = set(c.names.values()) | set(c.roles) | {c.code}
            for key in keys:
                folded = _fold(key)
                if folded:
                    # A role shared by several cards (e.g. 'tool') names none of them.
                    if folded in self._by_name and self._by_name[folded] != c:
                        self._by_name[folded] = None
                    else:
                        self._by_name[folded] = c

    def __iter__(self):
        return iter(self.cards)

    def __len__(self):
        return len(self.cards)

    def card(self, code: str) -> Card:
        try:
            return self._by_code[normalize_code(code)]
        except KeyError:  # pragma: no cover - normalize_code already rejects these
            raise CardError(Message("refusal.unknown_code", value=repr(code))) from None

    def parse(self, text: str) -> Card:
        if isinstance(text, Card):
            return self._by_code[text.code]
        if isinstance(text, str) and _CODE_RE.match(text):
            return self.card(text)
        folded = _fold(text) if isinstance(text, str) else ""
        if folded in self._by_name and self._by_name[folded] is None:
            codes = Listing(
                c.code
                for c in self.cards
                if folded in {_fold(k) for k in (*c.roles, *c.names.values())}
            )
            raise CardError(
                Message(
                    "refusal.several_cards", value=repr(text), deck=repr(self.name), codes=codes
                )
            )
        card = self._by_name.get(folded)
        if card is None:
            example = self.cards[0].names.get("en", self.cards[0].code)
            raise CardError(
                Message(
                    "refusal.unknown_card",
                    value=repr(text),
                    example=repr(example),
                    deck=repr(self.name),
                )
            )
        return card

    def parse_list(self, text: str) -> list[Card]:
        """Comma-separated codes or names; raises CardError on the first unknown one."""
        items = [t for t in (s.strip() for s in text.split(",")) if t]
        return [self.parse(t) for t in items]

    def renamed_by(self, other: Deck) -> Deck:
        """This deck's slots and roles (what the rules score) under ``other``'s names and
        title (what the players' own deck calls its cards)."""
        cards = [
            Card(c.code, c.month, c.index, c.category, c.ribbon, c.roles, other.card(c.code).names)
            for c in self.cards
        ]
        return Deck(other.name, cards, other.title)

    def names_data(self) -> dict:
        """This deck's names as a deck file's data (name, title, each card's names, no roles):
        what a match records of the deck the camera was taught (``MatchStarted.deck``), so that
        its pages and summary name the cards alike later, whatever becomes of the deck."""
        return {
            "name": self.name,
            "title": self.title,
            "cards": {c.code: {"names": dict(c.names)} for c in self.cards},
        }

    @classmethod
    def from_names_data(cls, data) -> Deck:
        """The deck ``names_data`` wrote (checked as a deck file is; only names, no ``base`` or
        roles: a recorded match never makes the program read a file); CardError otherwise."""
        if not isinstance(data, dict):
            raise CardError(Message("refusal.match_deck_names"))
        for key in data:
            if key not in ("name", "title", "cards"):
                raise CardError(Message("refusal.match_deck_key", key=repr(key)))
        cards = data.get("cards")
        for code, spec in cards.items() if isinstance(cards, dict) else ():
            if isinstance(spec, dict) and set(spec) - {"names"}:
                raise CardError(Message("refusal.match_deck_card", code=repr(code)))
        return cls.from_dict(data, "of the match", where=Message("phrase.match_deck_file"))

    def with_role(self, role: str) -> list[Card]:
        return [c for c in self.cards if role in c.roles]

    @classmethod
    def load(
        cls, name_or_path: str | Path, *, folder: str | Path | None = None, _chain: tuple = ()
    ) -> Deck:
        """A deck by built-in name (``standard``, ``ferme-florale``) or TOML file path.

        ``folder``: the folder of the file that names this deck (a rule file, or a deck file
        naming its ``base``): a path is then read relative to it and must stay inside it, so
        that a shared rule file cannot make the program read files elsewhere."""
        text = str(name_or_path)
        if _BUILTIN_NAME.fullmatch(text):
            if text == "standard":
                return STANDARD_DECK
            path = DECKS_DIR / f"{text}.toml"
            if not path.is_file():
                raise CardError(Message("refusal.no_deck", value=repr(text), known=_known_decks()))
        elif folder is not None:
            home = Path(folder).resolve()
            path = (home / text).resolve()
            if not path.is_relative_to(home) and not path.is_relative_to(DECKS_DIR.resolve()):
                raise CardError(Message("refusal.deck_outside", value=repr(text)))
        else:
            path = Path(text)
        if not path.exists():
            raise CardError(Message("refusal.no_deck", value=repr(text), known=_known_decks()))
        key = path.resolve()
        if key in _chain:
            raise CardError(Message("refusal.deck_loop", name=path.name))
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            reason = getattr(exc, "strerror", None) or "it is not UTF-8 text"
            raise CardError(
                Message("refusal.deck_unreadable", name=path.name, reason=reason)
            ) from None
        data = parse_toml(source, Message("phrase.the_deck_file", name=path.name), CardError)
        return cls.from_dict(
            data, default_name=path.stem, folder=path.parent, _chain=(*_chain, key)
        )

    @classmethod
    def from_dict(
        cls,
        data: dict,
        default_name: str = "custom",
        *,
        folder=None,
        where: Message | None = None,
        _chain: tuple = (),
    ) -> Deck:
        """The deck ``data`` describes; ``where`` names it in a refusal (by default "The deck
        file <default_name>")."""
        where = where or Message("phrase.deck_file", name=default_name)
        _check_deck_data(data, where)
        base = data.get("base", "standard")
        if base != "standard":
            base_cards = {c.code: c for c in cls.load(base, folder=folder, _chain=_chain)}
        else:
            base_cards = {c.code: c for c in _STANDARD_CARDS}
        cards = dict(base_cards)
        name, title = data.get("name", default_name), data.get("title", "")
        for code, spec in dict(data.get("cards") or {}).items():
            card = base_cards[normalize_code(code)]
            names = {**card.names, **dict(spec.get("names", {}))}
            roles = frozenset(spec["roles"]) if "roles" in spec else card.roles
            roles = roles | frozenset(spec.get("add_roles", []))
            cards[card.code] = Card(
                card.code, card.month, card.index, card.category, card.ribbon, roles, names
            )
        return cls(name, list(cards.values()), title)


DECK_KEYS = ("name", "title", "base", "cards")
CARD_KEYS = ("names", "roles", "add_roles")
_LANGUAGE = re.compile(r"[a-z]{2,3}(-[A-Za-z]{2,4})?")
_ROLE = re.compile(r"[a-z][a-z0-9_]*")
FORMAT_HINT = Message("phrase.deck_format")


def _check_deck_data(data: dict, where: Message) -> None:
    """One sentence (a CardError) for the first mistake in a deck file's data, naming where it
    lies, as a rule file is checked: unknown keys, a card that is not a slot, names that are not
    text by language, roles that are not a list of role names."""
    for key in data:
        if key not in DECK_KEYS:
            raise CardError(
                Message(
                    "refusal.deck_key",
                    where=where,
                    key=repr(key),
                    keys=Listing(DECK_KEYS),
                    hint=FORMAT_HINT,
                )
            )
    for key in ("name", "title", "base"):
        if key in data and (not isinstance(data[key], str) or not data[key].strip()):
            raise CardError(
                Message("refusal.deck_text", where=where, key=key, value=repr(data[key]))
            )
    cards = data.get("cards", {})
    if not isinstance(cards, dict):
        raise CardError(Message("refusal.deck_cards_tables", where=where, hint=FORMAT_HINT))
    seen: dict[str, str] = {}
    for code, spec in cards.items():
        try:
            slot = normalize_code(code)
        except CardError:
            raise CardError(Message("refusal.deck_slot", where=where, code=repr(code))) from None
        place = Message("phrase.deck_card", where=where, code=code)
        if slot in seen:
            raise CardError(Message("refusal.deck_card_twice", where=place, code=repr(seen[slot])))
        seen[slot] = code
        if not isinstance(spec, dict):
            raise CardError(Message("refusal.deck_card_table", where=place, hint=FORMAT_HINT))
        for key in spec:
            if key not in CARD_KEYS:
                raise CardError(
                    Message(
                        "refusal.deck_card_key", where=place, key=repr(key), keys=Listing(CARD_KEYS)
                    )
                )
        names = spec.get("names", {})
        if not isinstance(names, dict):
            raise CardError(Message("refusal.deck_names_table", where=place))
        for language, text in names.items():
            if not _LANGUAGE.fullmatch(language):
                raise CardError(
                    Message("refusal.deck_language", where=place, language=repr(language))
                )
            if not isinstance(text, str) or not text.strip():
                raise CardError(
                    Message(
                        "refusal.deck_name_text", where=place, language=language, value=repr(text)
                    )
                )
        for key in ("roles", "add_roles"):
            if key not in spec:
                continue
            roles = spec[key]
            if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
                raise CardError(Message("refusal.deck_roles_list", where=place, key=key))
            for role in roles:
                if not _ROLE.fullmatch(role):
                    raise CardError(Message("refusal.deck_role", where=place, role=repr(role)))


def _known_decks() -> str:
    """The built-in decks' names, as a refusal lists them."""
    return ", ".join(sorted(["standard", *(p.stem for p in DECKS_DIR.glob("*.toml"))]))


def spoken_names(card: Card) -> dict:
    """The card's name by language code as a sentence says it (``card_name_in``): in each
    language its deck names it in, and in Japanese."""
    languages = {*(getattr(card, "names", None) or {}), "ja"}
    return {lang: card_name_in(card, lang) for lang in sorted(languages)}


_BUILTIN_NAME = re.compile(r"[A-Za-z0-9_-]+")
_STANDARD_CARDS = _standard_cards()
STANDARD_DECK = Deck("standard", _STANDARD_CARDS, "Standard Hanafuda (Nintendo design)")
ALL_CODES = tuple(c.code for c in STANDARD_DECK)

# Chaff whose face a camera tells from the month's other chaff at a glance in every deck, and
# which rule sets may score on its own: the lightning (a red storm drawing; the gaji wild
# card) and December's first chaff (a coloured band across its foot; a double chaff in Korean
# hwatu). The other chaff of a month differ in a leaf or a printed word only (08-3 and 08-4;
# 12-3 and 12-4).
DISTINCT_CHAFF = frozenset({"11-4", "12-2"})


def _twin_groups() -> dict[str, tuple[str, ...]]:
    groups: dict[str, tuple[str, ...]] = {}
    for card in STANDARD_DECK:
        if card.category is Category.CHAFF and card.code not in DISTINCT_CHAFF:
            groups[card.code] = tuple(
                c.code
                for c in STANDARD_DECK
                if c.month == card.month
                and c.category is Category.CHAFF
                and c.code not in DISTINCT_CHAFF
            )
        else:
            groups[card.code] = (card.code,)
    return groups


_TWIN_GROUPS = _twin_groups()


def twin_group(code: str) -> tuple[str, ...]:
    """The cards a camera cannot tell from ``code`` and scoring never tells apart, ``code``
    included, in code order: the plain chaff of its month (``("08-3", "08-4")``), else ``code``
    alone (a bright, an animal, a ribbon, or a chaff in ``DISTINCT_CHAFF``). The first code
    stands for the group. Slots, not drawings: a re-skinned deck's names and roles change
    nothing."""
    try:
        return _TWIN_GROUPS[code]
    except KeyError:
        return _TWIN_GROUPS[normalize_code(code)]


def chaff_twins(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are two different cards of one twin group (``twin_group``): a
    camera's commonest slip, and one no score depends on."""
    return a != b and twin_group(a) == twin_group(b)

"""Card tiles: what the page draws for a card (its month's flower, its category, its role or
ribbon and an icon), in the page's language, and the tiles grouped for the picker and the
captures."""

from __future__ import annotations

from dataclasses import dataclass

from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from companion.game.cards import MONTH_KANJI, MONTHS, STANDARD_DECK, Card, Category, RibbonKind
from companion.web.i18n import card_name, language

ROLE_LABELS = {
    "crane": _l("Crane"),
    "curtain": _l("Curtain"),
    "moon": _l("Moon"),
    "rain_man": _l("Rain man"),
    "phoenix": _l("Phoenix"),
    "warbler": _l("Warbler"),
    "cuckoo": _l("Cuckoo"),
    "bridge": _l("Bridge"),
    "butterflies": _l("Butterflies"),
    "boar": _l("Boar"),
    "geese": _l("Geese"),
    "sake_cup": _l("Sake cup"),
    "deer": _l("Deer"),
    "swallow": _l("Swallow"),
    "lightning": _l("Lightning"),
}
# The icon drawn on a tile (symbols in companion/web/templates/_icons.html).
ROLE_ICONS = {
    "crane": "bird",
    "curtain": "curtain",
    "moon": "moon",
    "rain_man": "umbrella",
    "phoenix": "phoenix",
    "warbler": "bird",
    "cuckoo": "bird",
    "bridge": "bridge",
    "butterflies": "butterfly",
    "boar": "boar",
    "geese": "geese",
    "sake_cup": "cup",
    "deer": "deer",
    "swallow": "bird",
    "lightning": "bolt",
}
# Month names short enough for a tile.
FLOWERS = {
    1: _l("Pine"),
    2: _l("Plum"),
    3: _l("Cherry"),
    4: _l("Wisteria"),
    5: _l("Iris"),
    6: _l("Peony"),
    7: _l("Clover"),
    8: _l("Susuki"),
    9: _l("Chrysanth."),
    10: _l("Maple"),
    11: _l("Willow"),
    12: _l("Paulownia"),
}
CATEGORY_LABELS = {
    Category.BRIGHT: _l("Bright"),
    Category.ANIMAL: _l("Animal"),
    Category.RIBBON: _l("Ribbon"),
    Category.CHAFF: _l("Chaff"),
}
CATEGORY_ORDER = [Category.BRIGHT, Category.ANIMAL, Category.RIBBON, Category.CHAFF]
RIBBON_LABELS = {
    RibbonKind.POEM: _l("Poem"),
    RibbonKind.BLUE: _l("Blue"),
    RibbonKind.PLAIN: _l("Red"),
}


@dataclass(frozen=True)
class Tile:
    """What a card tile shows: enough to tell the 48 cards apart at a glance."""

    code: str
    month: int
    flower: str
    category: str
    category_label: str
    ribbon: str | None
    label: str
    icon: str | None
    name: str


def tile(card: Card | str, deck=None) -> Tile:
    if isinstance(card, str):
        card = (deck or STANDARD_DECK).card(card)
    elif deck is not None:
        card = deck.card(card.code)
    roles = [r for r in ROLE_LABELS if r in card.roles]
    if card.ribbon is not None:
        label, icon = str(RIBBON_LABELS[card.ribbon]), None
    elif roles:
        label, icon = str(ROLE_LABELS[roles[0]]), ROLE_ICONS[roles[0]]
    else:
        label, icon = _("Chaff"), None
    name = card_name(card)
    # A re-skinned deck renames cards: its own short name says more than the standard role.
    renamed = card.names.get("en", card.code) != STANDARD_DECK.card(card.code).name
    if deck is not None and deck.name != "standard" and renamed:
        label = name if len(name) <= 14 else name.split()[0]
    return Tile(
        code=card.code,
        month=card.month,
        flower=str(FLOWERS[card.month]),
        category=card.category.value,
        category_label=str(CATEGORY_LABELS[card.category]),
        ribbon=card.ribbon.value if card.ribbon else None,
        label=label,
        icon=icon,
        name=name,
    )


# A month's plant, by language: MONTHS gives the English and French names; Japanese in kanji.


def month_name(month: int) -> str:
    lang = language()
    if lang == "ja":
        return MONTH_KANJI[month]
    en, _romaji, fr = MONTHS[month]
    return (fr if lang == "fr" else en).capitalize()


def months(deck=None) -> list[tuple[int, str, list[Tile]]]:
    """The 48 tiles grouped by month, for the picker."""
    deck = deck or STANDARD_DECK
    return [(m, month_name(m), [tile(c, deck) for c in deck if c.month == m]) for m in range(1, 13)]


def by_category(cards, deck=None) -> list[tuple[str, list[Tile]]]:
    """A player's captures grouped bright/animal/ribbon/chaff, each group in card order."""
    groups = []
    for category in CATEGORY_ORDER:
        chosen = sorted(c for c in cards if c.category == category)
        groups.append((str(CATEGORY_LABELS[category]), [tile(c, deck) for c in chosen]))
    return groups

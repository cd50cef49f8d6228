"""Sentences as values: a message id and its parameters, English as its text.

The engines, the camera, the recognizer and the store word what they say (round reasons,
warnings, the outcome, what an event did, a refusal, what to fix in a photo) as
:class:`Message` values. A message *is* its English sentence (a ``str``: the JSON, the CLI and
the logs print it as they always did) and also carries the id of its template and the
parameters that filled it, so that a page can say it again in its own language with gettext:
the template is the catalog's msgid, each parameter is said first (a nested message, a list of
them, a name from a data file with its translations).

    reason = Message("round.stop", side="Aki", yaku=..., points=6)
    str(reason) == "Aki stops with Akatan 6: 6 points";  reason.kind == "round"

A sentence with a number of things in it has two English forms, singular and plural (marked
``NP_``, the catalogs' msgid and msgid_plural): its ``count`` parameter chooses, in English as
in each language by its own plural rules (a catalog's ``ngettext``): "1 point", "2 points".

Being a ``str`` is what keeps every output as it was: whatever printed, stored or compared
the English sentence still does. Code that needs to know what a sentence says tests its
``id`` or ``kind``, never a piece of its English.

This module is the mechanism only and imports nothing else of ``companion``, so that the game
package can use it. The sentences live with the layer that says them, each layer's in its
catalog module (:data:`CATALOGS`), which registers them in :data:`TEMPLATES` with the function
:func:`catalog` gives it; a layer's code imports :class:`Message` from its own catalog module,
so that its sentences are registered before it says one. A test checks that every template has
its French and Japanese translation.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "Message",
    "Listing",
    "Named",
    "CardCode",
    "TEMPLATES",
    "CATALOGS",
    "SEPARATORS",
    "N_",
    "NP_",
    "catalog",
    "load_catalogs",
    "say",
]

# The modules holding each layer's sentences: the game's (rules, engines, decks), the camera's
# (the live session, its zones), the recognizer's (taught decks, their photos) and the store's
# (the tablet's requests, a match export read back).
CATALOGS = (
    "companion.game.messages",
    "companion.detections",
    "companion.live.messages",
    "companion.recognizer.messages",
    "companion.store_messages",
)


def N_(text: str) -> str:  # noqa: N802 - the usual name for "extract me, translate later"
    """Marks an English template for the catalogs (pybabel's ``-k N_``); returns it as is."""
    return text


def NP_(singular: str, plural: str) -> tuple[str, str]:  # noqa: N802 - as N_, with a plural
    """Marks an English template with its plural form (pybabel's ``-k NP_:1,2``); returns
    both, which :func:`catalog`'s registration takes in place of one template."""
    return singular, plural


@dataclass(frozen=True)
class Template:
    english: str  # the msgid: English with %(name)s placeholders
    kind: str  # what the sentence is: "multiplier", "round", "redeal", "event"...
    # parameters that are another program's English words (a parser's, the system's): a
    # translation may leave them out rather than show English inside its own sentence
    english_only: tuple[str, ...] = ()
    catalog: str = ""  # the module that registered it, one of CATALOGS
    # a template counting something: its plural form (the msgid_plural) and the parameter
    # whose number chooses between them
    plural: str = ""
    count: str = ""

    def english_for(self, params: Mapping) -> str:
        """The English template for these parameters: the plural one unless the count is 1."""
        if self.plural and _count(params.get(self.count)) != 1:
            return self.plural
        return self.english


def _count(value) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


TEMPLATES: dict[str, Template] = {}


def catalog(module: str) -> Callable[..., None]:
    """The function with which the catalog module ``module`` (one of :data:`CATALOGS`)
    registers its templates: ``(message_id, english, kind=None, english_only=(), count="n")``,
    the kind being the id's first part unless given; ``english`` is one template (``N_``) or
    a singular and a plural one (``NP_``), the parameter ``count`` choosing between them."""
    if module not in CATALOGS:
        raise ValueError(f"{module} is not one of the message catalogs (CATALOGS).")

    def template(
        message_id: str,
        english: str | tuple[str, str],
        kind: str | None = None,
        english_only: tuple[str, ...] = (),
        count: str = "n",
    ) -> None:
        known = TEMPLATES.get(message_id)
        if known is not None and known.catalog != module:
            raise ValueError(f"The message {message_id!r} is already in {known.catalog}.")
        kind = kind or message_id.split(".")[0]
        singular, plural = (english, "") if isinstance(english, str) else english
        if plural and f"%({count})s" not in singular + plural:
            raise ValueError(f"The message {message_id!r} does not say its count {count!r}.")
        TEMPLATES[message_id] = Template(
            singular, kind, tuple(english_only), module, plural, count if plural else ""
        )

    return template


def load_catalogs() -> None:
    """Registers every layer's templates (a message rebuilt from its id alone may come from
    any of them)."""
    for module in CATALOGS:
        importlib.import_module(module)


# The separators of a Listing, said in the page's language too.
SEPARATORS = (N_(", "), N_(" and "), N_(" vs "), N_(" or "))


class _Text(str):
    """Text that carries more than its characters; immutable, so a copy is itself."""

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class Message(_Text):
    """One sentence of the engine: the English text (the ``str`` itself), the ``id`` of its
    template in :data:`TEMPLATES` and the ``params`` that filled it."""

    id: str
    params: Mapping
    capitalized: bool
    unstopped: bool

    def __new__(cls, message_id: str, /, **params) -> Message:
        if message_id not in TEMPLATES:
            load_catalogs()  # a sentence of a layer whose catalog this process has not loaded
        try:
            template = TEMPLATES[message_id]
        except KeyError:
            raise ValueError(f"No message template {message_id!r}.") from None
        text = template.english_for(params) % {k: str(v) for k, v in params.items()}
        self = super().__new__(cls, text)
        self.id = message_id
        self.params = MappingProxyType(dict(params))
        self.capitalized = False
        self.unstopped = False
        return self

    @property
    def template(self) -> str:
        """The English template, the catalogs' msgid (for these parameters: the plural form
        where the count is not 1)."""
        return TEMPLATES[self.id].english_for(self.params)

    @property
    def kind(self) -> str:
        return TEMPLATES[self.id].kind

    def with_capital(self) -> Message:
        """The same sentence starting with a capital letter (a name written in lower case
        opening it), in every language."""
        if self[:1] == self[:1].upper():
            return self
        return _rebuild(self.id, dict(self.params), True, self.unstopped)

    def without_stop(self) -> Message:
        """The same sentence without its final full stop (quoted inside another one), in
        every language."""
        return _rebuild(self.id, dict(self.params), self.capitalized, True)

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"Message({self.id!r}{args})"

    def __reduce__(self):
        return (_rebuild, (self.id, dict(self.params), self.capitalized, self.unstopped))


_STOPS = (".", "。")


def _rebuild(
    message_id: str, params: dict, capitalized: bool = False, unstopped: bool = False
) -> Message:
    message = Message(message_id, **params)
    if not (capitalized or unstopped):
        return message
    text = str(message)
    if capitalized:
        text = text[:1].upper() + text[1:]
    if unstopped and text.endswith(_STOPS):
        text = text[:-1]
    changed = str.__new__(Message, text)
    changed.__dict__.update(message.__dict__, capitalized=capitalized, unstopped=unstopped)
    return changed


class Listing(_Text):
    """Several values said one after the other: ``sep.join`` of their English in English,
    each item and the separator said in the page's language on the page."""

    items: tuple
    sep: str

    def __new__(cls, items: Iterable, sep: str = ", ") -> Listing:
        items = tuple(items)
        self = super().__new__(cls, sep.join(str(i) for i in items))
        self.items = items
        self.sep = sep
        return self

    def __repr__(self) -> str:
        return f"Listing({self.items!r}, {self.sep!r})"

    def __reduce__(self):
        return (Listing, (self.items, self.sep))


class Named(_Text):
    """A name from a data file (a yaku from a rule file): the file's own name, which the
    JSON and the CLI print, with its translations by language code (``names``)."""

    names: Mapping

    def __new__(cls, text: str, names: Mapping | None = None) -> Named:
        self = super().__new__(cls, text)
        self.names = MappingProxyType(dict(names or {}))
        return self

    def in_language(self, lang: str) -> str:
        return self.names.get(lang) or str(self)

    def __repr__(self) -> str:
        return f"Named({str(self)!r}, {dict(self.names)!r})"

    def __reduce__(self):
        return (Named, (str(self), dict(self.names)))


class CardCode(_Text):
    """A card in a sentence: its code in English; a page names it after its deck."""

    def __reduce__(self):
        return (CardCode, (str(self),))


_OPENING_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def _opens_with_a_phrase(message: Message, template: str) -> bool:
    """Whether a refusal, a sentence opening with a capital in English, opens in ``template``
    (its translation) with a phrase of the engine's ("le nom du joueur"), which then takes
    the capital; a name or a code opening it stays as it is written."""
    if message.kind != "refusal" or not message[:1].isupper():
        return False
    opening = _OPENING_PLACEHOLDER.match(template)
    return opening is not None and isinstance(message.params.get(opening.group(1)), Message)


def say(value, translate=None, lang: str = "en", name_card=None, translate_plural=None) -> str:
    """``value`` in a language: a Message by its template as ``translate`` gives it (a msgid
    to its translation: a catalog's gettext; a counting template by ``translate_plural``, the
    catalog's ngettext) filled with its parameters, each said first; a Listing item by item;
    a Named by its name in ``lang``; a card by ``name_card(code)``; anything else (a player's
    name, a number) as it is. With no ``translate``: English. French elides "de" and "que"
    before a parameter said with a vowel ("d’avril")."""
    if isinstance(value, Message):
        params = {
            k: say(v, translate, lang, name_card, translate_plural) for k, v in value.params.items()
        }
        known = TEMPLATES[value.id]
        if known.plural and translate_plural:
            count = _count(value.params.get(known.count))
            template = translate_plural(known.english, known.plural, 2 if count is None else count)
        else:
            template = translate(value.template) if translate else value.template
        if lang == "fr":
            template = elide(template, params)
        text = template % params if params else template
        if value.capitalized or _opens_with_a_phrase(value, template):
            text = text[:1].upper() + text[1:]
        if value.unstopped and text.endswith(_STOPS):
            text = text[:-1]
        return text
    if isinstance(value, Listing):
        sep = translate(value.sep) if translate and value.sep in SEPARATORS else value.sep
        return sep.join(
            say(item, translate, lang, name_card, translate_plural) for item in value.items
        )
    if isinstance(value, Named):
        return value.in_language(lang)
    if isinstance(value, CardCode) and name_card is not None:
        return name_card(str(value))
    return "" if value is None else str(value)


# French: "de" and "que" lose their vowel before a word that starts with one ("les quatre cartes
# d’avril", "qu’Aki"); an h is left alone (aspirated or not, a name cannot tell).
_ELIDED = re.compile(r"\b([dD]e|[qQ]ue) %\((\w+)\)s")
_VOWELS = "aeiouâàéèêëîïôöûüœAEIOUÂÀÉÈÊËÎÏÔÖÛÜŒ"


def elide(template: str, params: Mapping) -> str:
    """A French ``template`` with "de %(x)s" written "d’%(x)s" where ``x`` is said with a
    vowel (``params``: the parameters as said), and "que" likewise."""

    def short(match: re.Match) -> str:
        word, name = match.group(1), match.group(2)
        said = str(params.get(name, ""))
        if said[:1] and said[0] in _VOWELS:
            return f"{word[0]}’%({name})s"
        return match.group(0)

    return _ELIDED.sub(short, template)

"""The engine's (and the camera's) sentences as values: a message id and its parameters,
English as its text.

The engines word their results (round reasons, multipliers, warnings, the outcome, what an
event did) as :class:`Message` values. A message *is* its English sentence (a ``str``: the
JSON, the CLI and the logs print it as they always did) and also carries the id of its
template and the parameters that filled it, so that a page can say it again in its own
language with gettext: the template is the catalog's msgid, each parameter is said first
(a nested message, a list of them, a name from a data file with its translations).

    reason = Message("round.stop", side="Aki", yaku=..., points=6)
    str(reason) == "Aki stops with Akatan 6: 6 points";  reason.kind == "round"

Being a ``str`` is what keeps every output as it was: whatever printed, stored or compared
the English sentence still does. Code that needs to know what a sentence says tests its
``id`` or ``kind``, never a piece of its English. Every template is listed in :data:`TEMPLATES`; a test checks that each one has
its French and Japanese translation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["Message", "Listing", "Named", "CardCode", "TEMPLATES", "SEPARATORS", "N_", "say"]


def N_(text: str) -> str:  # noqa: N802 - the usual name for "extract me, translate later"
    """Marks an English template for the catalogs (pybabel's ``-k N_``); returns it as is."""
    return text


@dataclass(frozen=True)
class Template:
    english: str  # the msgid: English with %(name)s placeholders
    kind: str  # what the sentence is: "multiplier", "round", "redeal", "event"...


TEMPLATES: dict[str, Template] = {}


def _template(message_id: str, english: str, kind: str | None = None) -> None:
    TEMPLATES[message_id] = Template(english, kind or message_id.split(".")[0])


# -- Koi-Koi: multipliers (companion.game.scoring) ---------------------------------------------
_template("multiplier.seven_or_more", N_("%(n)s points, 7 or more"), "multiplier")
_template("multiplier.more_than_seven", N_("%(n)s points, more than 7"), "multiplier")
# kind "koi_calls": a multiplier counting Koi calls (the page names who called)
_template("multiplier.koi_own", N_("%(n)s Koi call(s) of the scorer"), "koi_calls")
_template("multiplier.koi_beyond_bonus", N_("%(n)s Koi calls of the scorer"), "koi_calls")
_template("multiplier.koi_all", N_("%(n)s Koi call(s) this round"), "koi_calls")
_template("multiplier.opponent_koi", N_("the opponent called Koi"), "multiplier")
_template("multiplier.field_brights", N_("%(n)s bright(s) in the dealt field"), "multiplier")
# The Koi-Koi bonus line among the yaku (koi = "bonus")
_template("yaku.koi_bonus_one", N_("Koi-Koi (%(n)s call)"), "yaku")
_template("yaku.koi_bonus", N_("Koi-Koi (%(n)s calls)"), "yaku")
_template("yaku.points", N_("%(name)s %(points)s"), "yaku")

# -- Koi-Koi: how a round ended (companion.game.engine) ----------------------------------------
_template("round.stop", N_("%(side)s stops with %(yaku)s: %(points)s points"))
_template(
    "round.stop_after_koi", N_("%(side)s stops after %(koi)s Koi with %(yaku)s: %(points)s points")
)
_template("round.with_base", N_("%(reason)s (base %(base)s x%(mult)s)"))
_template("round.declared", N_("%(side)s declares %(kind)s (%(what)s): %(points)s points"))
_template(
    "round.declared_cards",
    N_("%(side)s declares %(kind)s (%(what)s: %(cards)s): %(points)s points"),
)
_template("round.oya_scores", N_("Cards ran out: the Oya %(oya)s scores %(points)s points"))
_template(
    "round.last_yaku_maker",
    N_("Cards ran out and %(side)s (not the Oya) made the last yaku: %(yaku)s, %(points)s points"),
)
_template(
    "round.draw_oya_made_last", N_("Cards ran out, a draw: the Oya %(oya)s made the last yaku")
)
_template("round.draw_no_yaku", N_("Cards ran out, a draw: nobody made a yaku"))
_template("round.draw", N_("Cards ran out, a draw: nothing is scored"))
_template("round.entered_draw", N_("Entered by hand: a draw"))
_template("round.entered", N_("Entered by hand: %(points)s points"))
_template(
    "round.card_values_winner", N_("Cards ran out: card values %(table)s; %(winner)s has the most")
)
_template("round.card_values_tie", N_("Cards ran out: card values %(table)s; %(sides)s tie"))
# A dealt hand's kind and what it is
_template("hand.teshi", N_("teshi"), "hand_kind")
_template("hand.kuttsuki", N_("kuttsuki"), "hand_kind")
_template("hand.dealt_yaku", N_("dealt_yaku"), "hand_kind")
_template("hand.teshi_what", N_("4 cards of one month in the dealt hand"), "hand_what")
_template("hand.kuttsuki_what", N_("4 pairs in the dealt hand"), "hand_what")
_template("hand.dealt_yaku_what", N_("a complete yaku in the dealt hand"), "hand_what")

# -- Koi-Koi: warnings (kind: what the warning is about) ---------------------------------------
_template(
    "warning.redeal_month",
    N_("The dealt field holds 4 cards of one month: deal again (redeal)."),
    "redeal",
)
_template(
    "warning.redeal_pairs", N_("The dealt field holds 4 pairs: deal again (redeal)."), "redeal"
)
_template(
    "warning.unpaired_month",
    N_(
        "%(player)s holds %(n)s card(s) of month %(month)s (%(cards)s): captures come in "
        "pairs, so one may be misread."
    ),
    "unpaired_month",
)
_template(
    "warning.card_values_total",
    N_(
        "Round %(n)s: card values add up to %(total)s, not %(full)s: a capture is missing or "
        "misread."
    ),
    "card_values_total",
)

# -- Koi-Koi: the match's outcome (engine) and standing (summary) ------------------------------
_template("outcome.wins", N_("%(winner)s wins the match: %(table)s."), "outcome")
_template("outcome.tie", N_("Tie between %(sides)s: %(table)s."), "outcome")
_template("outcome.ends_in_tie", N_("The match ends in a tie: %(table)s."), "outcome")
_template("outcome.ran_out", N_("%(table)s (%(sides)s ran out of points)"), "standing")
_template("standing.points", N_("%(n)s points"), "standing")
_template("standing.rounds_won", N_("%(n)s rounds won, %(points)s points"), "standing")
_template("standing.entry", N_("%(name)s %(value)s"), "standing")
_template(
    "progress.tied", N_("Tied after %(n)s rounds: one more round decides (%(table)s)."), "progress"
)
_template("progress.in_round", N_("In progress: round %(n)s, %(table)s."), "progress")
_template("progress.next_round", N_("In progress: round %(n)s is next, %(table)s."), "progress")

# -- Koi-Koi: what each event did (the tablet's log) -------------------------------------------
_template(
    "event.match_started",
    N_("Match started: %(sides)s, %(rules)s, %(rounds)s rounds, %(oya)s is Oya"),
    "event",
)
_template(
    "event.match_started_teams",
    N_("Match started in teams: %(sides)s, %(rules)s, %(rounds)s rounds, %(oya)s is Oya"),
    "event",
)
_template("event.team", N_("%(team)s (%(members)s)"), "event")
_template("event.round_started", N_("Round started, %(oya)s is Oya"), "event")
_template("event.round_started_by_rules", N_("Round started"), "event")  # Oya left to the rules
_template(
    "event.round_started_brights",
    N_("Round started, %(oya)s is Oya, %(count)s bright(s) in the field"),
    "event",
)
_template("event.card_captured", N_("%(player)s captured %(card)s"), "event")
_template("event.capture_checked", N_("%(player)s: %(card)s checked, right as read"), "event")
_template("event.capture_corrected", N_("%(player)s: %(card)s corrected to %(new_card)s"), "event")
_template("event.capture_removed", N_("%(player)s: %(card)s removed"), "event")
_template("event.koi_called", N_("%(player)s called Koi-Koi"), "event")
_template("event.stop_called", N_("%(player)s stopped"), "event")
_template("event.koi_read", N_("%(player)s: Koi, read from the table"), "event")
_template("event.stop_read", N_("%(player)s: Stop, read from the table"), "event")
_template("event.field_dealt", N_("Dealt field read: %(cards)s"), "event")
_template("event.hand_declared", N_("%(player)s declared %(kind)s"), "event")
_template("event.field_brights_set", N_("Brights in the dealt field: %(count)s"), "event")
_template("event.cards_ran_out", N_("The cards ran out"), "event")
_template("event.round_entered_draw", N_("Round entered by hand: a draw"), "event")
_template("event.round_entered", N_("Round entered by hand: %(winner)s scored %(points)s"), "event")
_template("event.redeal", N_("Redeal: the round is dealt again"), "event")
_template("event.undo", N_("Undo"), "event")

# -- Hanamikoji (companion.game.hanamikoji) ----------------------------------------------------
_template("hanamikoji.player", N_("player %(side)s"), "player")
_template("hanamikoji.geishas", N_("%(n)s geishas"), "condition")
_template("hanamikoji.points", N_("%(n)s points"), "condition")
_template("hanamikoji.wins", N_("%(winner)s wins with %(table)s."), "outcome")
_template(
    "hanamikoji.both_conditions",
    N_(
        "Both meet a condition (%(table)s): %(winner)s has more points (%(more)s to %(less)s) "
        "and wins."
    ),
    "outcome",
)
_template(
    "hanamikoji.more_points",
    N_(
        "No condition met after round %(n)s: %(winner)s has more points (%(more)s to %(less)s) "
        "and wins."
    ),
    "outcome",
)
_template(
    "hanamikoji.tie",
    N_("No condition met after round %(n)s and %(points)s points each: a tie."),
    "outcome",
)
_template(
    "hanamikoji.next_round",
    N_("No condition met after round %(n)s: round %(next)s follows, %(starts)s starts."),
    "round",
)
_template(
    "hanamikoji.started",
    N_("Hanamikoji started: %(a)s vs %(b)s, %(starts)s starts round 1"),
    "event",
)
_template("hanamikoji.item_set", N_("%(player)s: %(n)s item before %(geisha)s"), "event")
_template("hanamikoji.items_set", N_("%(player)s: %(n)s items before %(geisha)s"), "event")
_template("hanamikoji.round_scored", N_("Round scored"), "event")
_template("hanamikoji.round_scored_counts", N_("Round scored (%(counts)s)"), "event")
_template("hanamikoji.after_round", N_("After round %(n)s: %(reason)s"), "outcome")
_template(
    "hanamikoji.after_round_both",
    N_(
        "After round %(n)s: both meet a condition (%(table)s): %(winner)s has more points "
        "(%(more)s to %(less)s) and wins."
    ),
    "outcome",
)
_template(
    "hanamikoji.in_progress",
    N_("In progress: round %(n)s of at most %(most)s, %(starts)s starts."),
    "progress",
)

# -- teaching a deck from photos (companion.recognizer.photos): what to fix in one photo ------
# %(name)s is the photo's file name, %(month)s the month's name (a Named), %(n)s a count
_template(
    "photo.unreadable",
    N_("%(name)s is not an image that can be read: save it as JPEG or PNG."),
    "photo",
)
_template(
    "photo.blurred",
    N_("%(name)s is blurred: hold the phone still and let it focus on the cards."),
    "photo",
)
_template(
    "photo.too_many",
    N_(
        "%(name)s shows %(n)s cards, not four: lay only %(month)s's four cards on a plain "
        "table, apart from each other and anything card-shaped."
    ),
    "photo",
)
_template(
    "photo.cut_and_counted",
    N_(
        "%(name)s shows %(n)s whole cards: a card is cut by the photo's edge; step back so "
        "that all four of %(month)s's cards are inside the photo."
    ),
    "photo",
)
_template(
    "photo.too_few_one",
    N_(
        "%(name)s shows 1 card, not four: lay %(month)s's four cards face up, a finger's "
        "width apart, on a table of another colour than the cards' edges."
    ),
    "photo",
)
_template(
    "photo.too_few",
    N_(
        "%(name)s shows %(n)s cards, not four: lay %(month)s's four cards face up, a finger's "
        "width apart, on a table of another colour than the cards' edges."
    ),
    "photo",
)
_template(
    "photo.cut",
    N_(
        "%(name)s: a card is cut by the photo's edge; step back so that all four of "
        "%(month)s's cards are inside the photo."
    ),
    "photo",
)
_template(
    "photo.too_small",
    N_(
        "%(name)s: the cards are too small (%(px)s px long, at least %(need)s needed); come "
        "closer, or take the photo at a higher resolution."
    ),
    "photo",
)

# the photo of the deck's back: one card lying face down
_template(
    "photo.back_unreadable",
    N_("%(name)s (the back) is not an image that can be read: save it as JPEG or PNG."),
    "photo",
)
_template(
    "photo.back_cut",
    N_(
        "%(name)s (the back): the card is cut by the photo's edge; step back so that the whole "
        "card is inside the photo."
    ),
    "photo",
)
_template(
    "photo.back_blurred",
    N_("%(name)s (the back) is blurred: hold the phone still and let it focus."),
    "photo",
)
_template(
    "photo.back_cards",
    N_(
        "%(name)s (the back) shows %(n)s cards, not one: lay one card of the deck face down, "
        "alone on a table of another colour than its edge."
    ),
    "photo",
)
_template(
    "photo.back_no_card",
    N_(
        "%(name)s (the back) shows no card: lay one card of the deck face down, alone on a "
        "table of another colour than its edge."
    ),
    "photo",
)
_template(
    "photo.back_too_small",
    N_(
        "%(name)s (the back): the card is too small (%(px)s px long, at least %(need)s "
        "needed); come closer."
    ),
    "photo",
)

_template(
    "photo.back_is_a_face",
    N_(
        "%(name)s shows the face of %(code)s, not the deck's back: photograph one card lying "
        "face down."
    ),
    "photo",
)

# -- the camera's sentences (companion.live: the session's state, the decider's proposals) -----
_template("camera.starting", N_("Starting."), "camera")
_template("camera.following", N_("Following match %(n)s."), "camera")
_template("camera.recording_ended", N_("The recording has ended."), "camera")
_template("camera.frame_failed", N_("A frame could not be processed (%(error)s)."), "camera")
_template(
    "camera.lost", N_("The camera is lost: keep score by hand, it reconnects by itself."), "camera"
)
_template("camera.connecting", N_("Connecting to the camera."), "camera")
_template(
    "camera.no_match",
    N_("Start a match on the tablet: the camera follows the latest one."),
    "camera",
)
_template("camera.next_round", N_("The table is clear: deal the next round."), "proposal")
# what the table showed against a tap (or again after an undo): shown, never recorded
_template("camera.table_shows_koi", N_("The table shows Koi for %(player)s: tap Koi or Stop."), "proposal")
_template(
    "camera.table_shows_stop", N_("The table shows Stop for %(player)s: tap Koi or Stop."), "proposal"
)
_template(
    "camera.laid_after_stop",
    N_("Cards are laid after %(player)s's Stop: if it was a Koi, undo the Stop."),
    "proposal",
)
_template(
    "camera.gathered_after_koi",
    N_("The cards are gathered after %(player)s's Koi: if it was a Stop, undo the Koi."),
    "proposal",
)

# The separators of a Listing, said in the page's language too.
SEPARATORS = (N_(", "), N_(" and "), N_(" vs "))


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

    def __new__(cls, message_id: str, /, **params) -> Message:
        try:
            template = TEMPLATES[message_id]
        except KeyError:
            raise ValueError(f"No message template {message_id!r}.") from None
        text = template.english % {k: str(v) for k, v in params.items()}
        self = super().__new__(cls, text)
        self.id = message_id
        self.params = MappingProxyType(dict(params))
        self.capitalized = False
        return self

    @property
    def template(self) -> str:
        """The English template, the catalogs' msgid."""
        return TEMPLATES[self.id].english

    @property
    def kind(self) -> str:
        return TEMPLATES[self.id].kind

    def with_capital(self) -> Message:
        """The same sentence starting with a capital letter (a name written in lower case
        opening it), in every language."""
        if self[:1] == self[:1].upper():
            return self
        return _rebuild(self.id, dict(self.params), True)

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"Message({self.id!r}{args})"

    def __reduce__(self):
        return (_rebuild, (self.id, dict(self.params), self.capitalized))


def _rebuild(message_id: str, params: dict, capitalized: bool = False) -> Message:
    message = Message(message_id, **params)
    if capitalized:
        text = str(message)
        capital = str.__new__(Message, text[:1].upper() + text[1:])
        capital.__dict__.update(message.__dict__, capitalized=True)
        return capital
    return message


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


def say(value, translate=None, lang: str = "en", name_card=None) -> str:
    """``value`` in a language: a Message by its template as ``translate`` gives it (a msgid
    to its translation: a catalog's gettext) filled with its parameters, each said first; a
    Listing item by item; a Named by its name in ``lang``; a card by ``name_card(code)``;
    anything else (a player's name, a number) as it is. With no ``translate``: English."""
    if isinstance(value, Message):
        params = {k: say(v, translate, lang, name_card) for k, v in value.params.items()}
        template = translate(value.template) if translate else value.template
        text = template % params if params else template
        return text[:1].upper() + text[1:] if value.capitalized else text
    if isinstance(value, Listing):
        sep = translate(value.sep) if translate and value.sep in SEPARATORS else value.sep
        return sep.join(say(item, translate, lang, name_card) for item in value.items)
    if isinstance(value, Named):
        return value.in_language(lang)
    if isinstance(value, CardCode) and name_card is not None:
        return name_card(str(value))
    return "" if value is None else str(value)

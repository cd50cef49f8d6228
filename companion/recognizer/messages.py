"""The recognizer's sentences: the templates of what teaching a deck from photos
(:mod:`companion.recognizer.photos`), the taught decks (:mod:`companion.recognizer.decks`) and
say (the card classes' refusal is in :mod:`companion.detections`), registered in the message catalogs
(:mod:`companion.messages`, whose :class:`Message` the recognizer takes from here).
"""

from __future__ import annotations

from companion.messages import N_, CardCode, Message, Named, catalog

__all__ = ["CardCode", "Message", "Named"]

_template = catalog(__name__)


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
    "photo.too_close",
    N_(
        "%(name)s shows %(n)s cards (%(where)s), not four: some of %(month)s's cards lie too "
        "close together to tell apart; leave a finger's width between them, or outline them "
        "on the Teach page."
    ),
    "photo",
)
_template(
    "photo.table_like_cards",
    N_(
        "%(name)s shows %(n)s cards (%(where)s), not four: the table is so like the cards' "
        "edges that it may hide where some end; lay %(month)s's four cards face up on a table "
        "of another colour (dark under light edges, light under dark ones), or tap each card's "
        "middle on the Teach page."
    ),
    "photo",
)
_template(
    "photo.busy_table",
    N_(
        "%(name)s shows %(n)s cards (%(where)s), not four: the table's pattern may hide where "
        "some cards end; lay %(month)s's four cards face up on a plain table or cloth, or tap "
        "each card's middle on the Teach page."
    ),
    "photo",
)
_template(
    "photo.unsure_like",
    N_(
        "%(name)s: the four cards (%(where)s) are found, but the table is so like their edges "
        "that not all their sides are clear: check the outlines on the Teach page, or lay the "
        "cards on a table of another colour."
    ),
    "photo",
)
_template(
    "photo.unsure_pattern",
    N_(
        "%(name)s: the four cards (%(where)s) are found, but the table's pattern runs along "
        "some of their sides: check the outlines on the Teach page, or lay the cards on a "
        "plain table or cloth."
    ),
    "photo",
)
_template(
    "photo.no_card",
    N_(
        "%(name)s shows no card: lay %(month)s's four cards face up in the middle of the "
        "photo, on a table of another colour than the cards' edges."
    ),
    "photo",
)
_template(
    "photo.unsure",
    N_(
        "%(name)s: the four cards (%(where)s) are found, but not all their edges are clear "
        "(a shadow, a glare or the table's pattern across them): check the outlines on the "
        "Teach page, or take the photo again in even light."
    ),
    "photo",
)
_template(
    "photo.taps_unsure",
    N_(
        "%(name)s: around some points tapped (%(cards)s), a card's edges are not clear: drag "
        "the corners of the outlines shown onto the cards' corners, or tap again nearer each "
        "card's middle."
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

# a taught deck kept on this machine (companion.recognizer.decks); %(reason)s: the system's
# or the reader's words, which a page may leave out
_template(
    "deck.unreadable",
    N_("The deck %(name)s in %(folder)s is unreadable (%(reason)s)."),
    "deck",
    english_only=("reason",),
)
_template(
    "deck.folder_unreadable",
    N_("Cannot read the decks folder %(folder)s: %(reason)s."),
    "deck",
    english_only=("reason",),
)
_template(
    "deck.cannot_keep",
    N_("Cannot keep the deck %(name)s in %(folder)s: %(reason)s."),
    "deck",
    english_only=("reason",),
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


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

import re
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
    # parameters that are another program's English words (a parser's, the system's): a
    # translation may leave them out rather than show English inside its own sentence
    english_only: tuple[str, ...] = ()


TEMPLATES: dict[str, Template] = {}


def _template(
    message_id: str, english: str, kind: str | None = None, english_only: tuple[str, ...] = ()
) -> None:
    TEMPLATES[message_id] = Template(english, kind or message_id.split(".")[0], english_only)


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
_template(
    "camera.table_shows_koi", N_("The table shows Koi for %(player)s: tap Koi or Stop."), "proposal"
)
_template(
    "camera.table_shows_stop",
    N_("The table shows Stop for %(player)s: tap Koi or Stop."),
    "proposal",
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


# -- the camera's zones (companion.live.zones, companion.live.layout): a calibration refused --
# %(zone)s is the zone's name as the layout writes it, quoted ('field', 'captures_A')
_template(
    "zone.too_many_corners",
    N_("Zone %(zone)s has %(n)s corners; a zone has at most %(most)s."),
    "zone",
)
_template(
    "zone.crosses_itself",
    N_("Zone %(zone)s crosses itself: drag its corners into a plain outline."),
    "zone",
)
_template(
    "zone.too_small",
    N_(
        "Zone %(zone)s covers %(share)s of the picture: too small to hold a card (at least "
        "%(least)s); drag its corners apart."
    ),
    "zone",
)
_template(
    "zone.field_too_few_cards",
    N_(
        "The camera sees %(n)s face-up card(s): deal the field (%(least)s or more cards) and "
        "try again."
    ),
    "zone",
)
_template(
    "zone.field_no_room",
    N_(
        "The dealt field leaves no room for the capture areas above and below it: move the "
        "camera up or drag the corners instead."
    ),
    "zone",
)


# -- refusals: why an event, a card or a count is refused (IllegalEvent, HanamikojiError,
# CardError, ScoringError). Their English is the error's one sentence, which the CLI prints and
# scripts match; the page says them in its language. Kind "refusal" (a whole sentence),
# "field" (what a refusal names), "action" (what needs a round under way), "phrase" (a part).
def _refusal(message_id: str, english: str) -> None:
    _template(message_id, english, "refusal")


# What a refusal names: fields of events, in the middle of a sentence.
_template("field.player_name", N_("player name"), "field")
_template("field.player", N_("player"), "field")
_template("field.first_player", N_("first player"), "field")
_template("field.rule_set_name", N_("rule set name"), "field")
_template("field.number_of_rounds", N_("number of rounds"), "field")
_template("field.first_oya", N_("first Oya"), "field")
_template("field.oya", N_("Oya"), "field")
_template("field.team_name", N_("team name"), "field")
_template("field.member_name", N_("member name"), "field")
_template("field.month", N_("month of the round"), "field")
_template("field.field_brights", N_("number of field brights"), "field")
_template("field.card", N_("card"), "field")
_template("field.field_card", N_("field card"), "field")
_template("field.alternative_card", N_("alternative card"), "field")
_template("field.new_card", N_("new card"), "field")
_template("field.hand_card", N_("hand card"), "field")
_template("field.capture_source", N_("capture source"), "field")
_template("field.event_source", N_("%(event)s source"), "field")
_template("field.winner", N_("winner"), "field")
_template("field.round_points", N_("round's points"), "field")
_template("field.title", N_("title"), "field")
# What cannot be done while no round is under way ("start round 2 before ...").
_template("action.recording_captures", N_("recording captures"), "action")
_template("action.checking_captures", N_("checking captures"), "action")
_template("action.correcting_captures", N_("correcting captures"), "action")
_template("action.removing_captures", N_("removing captures"), "action")
_template("action.calling_koi", N_("calling Koi"), "action")
_template("action.calling_stop", N_("calling Stop"), "action")
_template("action.declaring_hand", N_("declaring a dealt hand"), "action")
_template("action.setting_field_brights", N_("setting the field brights"), "action")
_template("action.ending_round", N_("ending it"), "action")
_template("action.reading_field", N_("reading the dealt field"), "action")
_template("action.dealing_again", N_("dealing it again"), "action")
# Parts of refusals
_template("phrase.none_yet", N_("none yet"), "phrase")
_template("phrase.none", N_("none"), "phrase")
_template("phrase.no_fields", N_("no fields"), "phrase")
_template("phrase.digits", N_("a number of %(n)s digits"), "phrase")
_template("phrase.an_event", N_("an event"), "phrase")
_template("phrase.a_hanamikoji_event", N_("a Hanamikoji event"), "phrase")
_template("phrase.event", N_("event"), "phrase")
_template("phrase.hanamikoji_event", N_("Hanamikoji event"), "phrase")
_template("phrase.card_label", N_("%(code)s (%(name)s)"), "phrase")
_template("phrase.deck_file", N_("The deck file %(name)s"), "phrase")
_template("phrase.deck_card", N_('%(where)s, [cards."%(code)s"]'), "phrase")
_template("phrase.items_of", N_("%(who)s %(n)s"), "phrase")
_template(
    "phrase.eight_items",
    N_(
        "each player has 8 at a round's end (1 secret, 2 from his own gift, 2 from his own "
        "exchange, 1 from the opponent's gift, 2 from the opponent's exchange)"
    ),
    "phrase",
)

# Events as data (both games)
_refusal("refusal.not_an_object", N_("%(noun)s must be an object with a 'type', not %(type)s."))
_refusal("refusal.unknown_type", N_("Unknown %(noun)s type %(type)s: expected one of %(types)s."))
_refusal("refusal.unknown_field", N_("Unknown field %(field)s for %(type)s: expected %(fields)s."))
_refusal("refusal.missing_field", N_("A %(type)s event needs a %(field)s field."))
_refusal("refusal.not_json", N_("The event is not valid JSON."))
_refusal("refusal.event_refused", N_("Event %(n)s is refused: %(reason)s"))
_refusal("refusal.nothing_to_undo", N_("Nothing to undo."))
_refusal("refusal.name_empty", N_("The %(what)s must be a non-empty name, not %(value)s."))
_refusal(
    "refusal.name_too_long", N_("The %(what)s %(value)s... is longer than %(most)s characters.")
)
_refusal("refusal.name_at_most", N_("The %(what)s must be at most %(most)s characters."))
_refusal("refusal.card_code", N_("The %(what)s must be a card code like '08-1', not %(value)s."))
_refusal("refusal.whole_number", N_("The %(what)s must be a whole number, not %(value)s."))
_refusal("refusal.between", N_("The %(what)s must be between %(low)s and %(high)s, not %(value)s."))
_refusal("refusal.players_list", N_("The players must be a list of names."))
_refusal("refusal.same_name", N_("Two players have the same name."))
_refusal("refusal.unknown_player", N_("Unknown player %(name)s: the players are %(names)s."))
_refusal("refusal.already_started", N_("The match has already started; start a new match instead."))
# Koi-Koi events and the engine (companion.game.engine)
_refusal("refusal.rules_text", N_("The rules text must be the rule file's TOML text."))
_refusal("refusal.options_map", N_("The options must map option names to on/off."))
_refusal("refusal.teams_map", N_("The teams must map each team name to its members."))
_refusal("refusal.team_members", N_("Team %(team)s must list its members."))
_refusal("refusal.field_list", N_("The field must be a list of card codes."))
_refusal("refusal.confidence", N_("The confidence must be a number from 0 to 1, not %(value)s."))
_refusal("refusal.check_flag", N_("The check flag must be true or false, not %(value)s."))
_refusal("refusal.alternatives_list", N_("The alternatives must be a list of card codes."))
_refusal("refusal.hand_kind", N_("A hand declaration needs a kind such as 'teshi' or 'kuttsuki'."))
_refusal("refusal.declared_hand_list", N_("The declared hand must be a list of card codes."))
_refusal(
    "refusal.drawn_round_points", N_("A drawn round scores no points: name its winner or enter 0.")
)
_refusal("refusal.dealt_field_list", N_("The dealt field must be a list of card codes."))
_refusal("refusal.no_match", N_("No match has started: the first event must be match_started."))
_refusal("refusal.match_over", N_("The match is over (%(outcome)s); nothing more can be recorded."))
_refusal("refusal.needs_players", N_("A match needs players."))
_refusal(
    "refusal.no_teams",
    N_("Rule set %(rules)s does not play in teams (turn the teams option on)."),
)
_refusal(
    "refusal.teams_are_players",
    N_("With teams, the players are the team names, each listed in teams."),
)
_refusal("refusal.two_teams", N_("A match in teams needs at least two teams."))
_refusal("refusal.twice_in_teams", N_("%(name)s appears twice among the players and teams."))
_refusal(
    "refusal.teams_option_on",
    N_(
        "The teams option of %(rules)s is on: give 4 players (seats 1 & 3 against 2 & 4) "
        "or list the teams."
    ),
)
_refusal(
    "refusal.player_count", N_("Rule set %(rules)s is played by %(allowed)s players, not %(n)s.")
)
_refusal("refusal.round_count", N_("Rule set %(rules)s plays %(allowed)s rounds, not %(n)s."))
_refusal("refusal.first_oya", N_("The first Oya %(oya)s is not one of the players."))
_refusal(
    "refusal.round_over", N_("Round %(n)s is over: undo its last event to change its captures.")
)
_refusal("refusal.no_round", N_("No round is in progress: start round %(n)s before %(action)s."))
_refusal(
    "refusal.round_in_progress",
    N_(
        "Round %(n)s is still in progress: end it with a Stop, a dealt-hand declaration or "
        "'cards ran out' first."
    ),
)
_refusal("refusal.field_twice", N_("The same card is listed twice in the dealt field."))
_refusal("refusal.already_holds", N_("%(side)s already holds %(card)s this round."))
_refusal(
    "refusal.held_by_other",
    N_("%(side)s cannot take it: %(owner)s already holds %(card)s this round."),
)
_refusal("refusal.no_open_check", N_("%(card)s has no open check."))
_refusal("refusal.does_not_hold", N_("%(side)s does not hold %(card)s this round."))
_refusal("refusal.same_correction", N_("The correction of %(card)s names the same card."))
_refusal(
    "refusal.no_yaku_no_koi", N_("Rule set %(rules)s has no yaku, so there is no Koi to call.")
)
_refusal(
    "refusal.no_yaku_no_stop", N_("Rule set %(rules)s has no yaku, so there is no Stop to call.")
)
_refusal(
    "refusal.whose_decision", N_("It is %(pending)s who must choose Koi or Stop, not %(side)s.")
)
_refusal("refusal.no_new_yaku", N_("%(side)s has no new yaku, so there is no Koi or Stop to call."))
_refusal(
    "refusal.no_declaration",
    N_("Rule set %(rules)s has no %(kind)s declaration (instant wins: %(names)s)."),
)
_refusal(
    "refusal.hand_after_capture",
    N_("A dealt hand is declared before the first capture of the round."),
)
_refusal(
    "refusal.needs_hand_cards",
    N_("Rule set %(rules)s needs the cards of a declared hand, to check it."),
)
_refusal("refusal.hand_twice", N_("The same card is listed twice in the declared hand."))
_refusal("refusal.hand_size", N_("A dealt hand holds %(size)s cards, not %(n)s."))
_refusal("refusal.card_in_field", N_("%(card)s lies in the dealt field, not in a hand."))
_refusal("refusal.no_teshi", N_("The hand %(cards)s holds no 4 cards of one month: no teshi."))
_refusal("refusal.no_kuttsuki", N_("The hand %(cards)s holds fewer than 4 pairs: no kuttsuki."))
_refusal("refusal.no_dealt_yaku", N_("The hand %(cards)s makes no yaku: no dealt_yaku."))
_refusal("refusal.choose_first", N_("%(side)s must choose Koi or Stop first."))
_refusal(
    "refusal.round_under_way",
    N_("Round %(n)s is under way: end or undo it before entering a round by hand."),
)
_refusal(
    "refusal.card_values_entered",
    N_(
        "Rule set %(rules)s scores every player's card values: play the round on the tablet "
        "instead of entering a winner."
    ),
)
_refusal(
    "refusal.field_after_capture", N_("The dealt field is read before the round's first capture.")
)
# Cards and decks (companion.game.cards)
_refusal("refusal.code_not_text", N_("A card code must be text like '08-1', not %(value)s."))
_refusal(
    "refusal.code_shape",
    N_("Unknown card code %(value)s: expected MM-K, month 01-12 and card 1-4 (e.g. '08-1')."),
)
_refusal(
    "refusal.code_range",
    N_("Unknown card code %(value)s: the month must be 01-12 and the card 1-4."),
)
_refusal("refusal.unknown_code", N_("Unknown card code %(value)s."))
_refusal("refusal.deck_48", N_("Deck %(deck)s must define 48 distinct cards."))
_refusal(
    "refusal.several_cards",
    N_("%(value)s names several cards of deck %(deck)s (%(codes)s): give one code."),
)
_refusal(
    "refusal.unknown_card",
    N_(
        "Unknown card %(value)s: use a code like '08-1' or a card name like %(example)s (deck %(deck)s)."
    ),
)
_refusal(
    "refusal.no_deck", N_("No deck %(value)s: known decks are %(known)s, or give a .toml path.")
)
_refusal(
    "refusal.deck_outside",
    N_(
        "The deck file %(value)s is outside its own folder: name a built-in deck or a .toml "
        "file beside the file that names it."
    ),
)
_refusal("refusal.deck_loop", N_("The deck file %(name)s is based on itself (through its base)."))
# %(reason)s: the system's words, which a page may leave out
_template(
    "refusal.deck_unreadable",
    N_("The deck file %(name)s cannot be read: %(reason)s."),
    "refusal",
    english_only=("reason",),
)
_refusal(
    "refusal.deck_key",
    N_("%(where)s has an unknown key %(key)s: a deck file has %(keys)s (%(hint)s)."),
)
_refusal("refusal.deck_text", N_("%(where)s: %(key)s must be a text, not %(value)s."))
_refusal(
    "refusal.deck_cards_tables",
    N_('%(where)s: cards must be tables like [cards."01-1"] (%(hint)s).'),
)
_refusal(
    "refusal.deck_slot",
    N_("%(where)s: %(code)s is not a card: slots run from 01-1 to 12-4 (month-card)."),
)
_refusal("refusal.deck_card_twice", N_("%(where)s names the card %(code)s names already."))
_refusal("refusal.deck_card_table", N_("%(where)s must be a table of names and roles (%(hint)s)."))
_refusal("refusal.deck_card_key", N_("%(where)s has an unknown key %(key)s: a card has %(keys)s."))
_refusal(
    "refusal.deck_names_table",
    N_('%(where)s: names must be a table like { en = "Crane", fr = "Grue" }.'),
)
_refusal(
    "refusal.deck_language", N_("%(where)s: %(language)s is not a language code like en, fr or ja.")
)
_refusal(
    "refusal.deck_name_text", N_("%(where)s: the %(language)s name must be a text, not %(value)s.")
)
_refusal(
    "refusal.deck_roles_list", N_('%(where)s: %(key)s must be a list of role names like ["tool"].')
)
_refusal(
    "refusal.deck_role",
    N_(
        "%(where)s: %(role)s is not a role name (lower-case letters, digits and _, starting "
        "with a letter)."
    ),
)
_refusal(
    "refusal.match_deck_names",
    N_("The match's deck must be a deck file's names (name, title, cards)."),
)
_refusal(
    "refusal.match_deck_key",
    N_("The match's deck has an unknown key %(key)s: it keeps names only."),
)
_refusal("refusal.match_deck_card", N_("The match's deck gives card %(code)s more than its names."))
# The match store (companion.store): what the tablet's requests can meet
_refusal("refusal.stale", N_("The match changed since this page was loaded; reload and try again."))
_refusal("refusal.no_such_match", N_("There is no match %(n)s in this database."))
_refusal("refusal.no_matches", N_("There are no matches in this database yet."))
_refusal(
    "refusal.control_characters",
    N_("A %(what)s cannot hold control characters such as %(char)s: %(text)s is refused."),
)
_refusal("refusal.request_id_length", N_("The request id must be 1 to %(most)s characters long."))
_refusal("refusal.expected_seq", N_("The expected event number must be a whole number."))
_refusal(
    "refusal.started_once", N_("A match can only be started once; create a new match instead.")
)
_refusal("refusal.nothing_to_record", N_("There is nothing to record."))
_refusal("refusal.not_a_match_number", N_("%(value)s is not a match number."))
_refusal("refusal.title_length", N_("The title must be at most %(most)s characters."))
_template(
    "phrase.deck_format", N_("see companion/game/decks/ferme-florale.toml for the format"), "phrase"
)
_refusal(
    "refusal.card_class",
    N_("Unknown card class %(value)s: expected MM-K (01-1 to 12-4) or 'back'."),
)
# Scoring (companion.game.scoring)
_refusal("refusal.card_twice", N_("Card %(card)s is listed twice; each card exists once."))
_refusal("refusal.month", N_("The month must be a whole number from 1 to 12, not %(value)s."))
_refusal(
    "refusal.count_at_least_0", N_("%(label)s must be a whole number of at least 0, not %(value)s.")
)
_refusal(
    "refusal.field_brights_most",
    N_("field_brights is %(n)s, but a deck has only %(most)s brights."),
)
# Hanamikoji (companion.game.hanamikoji)
_refusal("refusal.no_geisha", N_("There is no geisha %(value)s: the geishas are %(names)s."))
_refusal(
    "refusal.count_not_whole",
    N_("The count %(value)s before %(geisha)s (%(who)s) is not a whole number from 0."),
)
_refusal(
    "refusal.round_format",
    N_(
        "A round is given as A1,...,A7:B1,...,B7 (player A's items before the 7 geishas, a "
        "colon, then player B's), not %(value)s."
    ),
)
_refusal(
    "refusal.side_counts",
    N_("%(who)s's side lists %(n)s counts, but there are %(geishas)s geishas (%(names)s)."),
)
_refusal(
    "refusal.counts_format",
    N_("The counts are given as A1,...,A7:B1,...,B7 or as lists for A and B."),
)
_refusal(
    "refusal.too_many_items",
    N_("%(who)s has %(n)s items before %(geisha)s, but she has only %(most)s item cards."),
)
_refusal(
    "refusal.too_many_together",
    N_(
        "%(a)s and %(b)s have %(n)s items before %(geisha)s together, but she has only "
        "%(most)s item cards."
    ),
)
_refusal("refusal.items_total", N_("Items in front of the geishas: %(told)s, but %(rule)s."))
_refusal("refusal.two_names", N_("The players must be a list of two names."))
_refusal("refusal.two_players", N_("Hanamikoji is played by 2 players, not %(n)s."))
_refusal("refusal.first_player", N_("The first player %(name)s is not one of the players."))
_refusal(
    "refusal.no_hanamikoji_match",
    N_("No match has started: the first event must be hanamikoji_started."),
)
_refusal(
    "refusal.max_rounds",
    N_(
        "Hanamikoji has %(most)s rounds at most: there is no round %(n)s, even when both "
        "players meet a condition in round %(most)s."
    ),
)
_refusal(
    "refusal.decided",
    N_("The match was decided after round %(n)s (%(outcome)s): round %(next)s cannot be recorded."),
)
_refusal("refusal.already_has", N_("%(who)s already has %(n)s items before %(geisha)s."))
_refusal(
    "refusal.would_have",
    N_("%(who)s would have %(n)s items in front of the geishas, but %(rule)s."),
)

# Reading a data file (companion.game.cards.parse_toml): %(what)s is one of the phrases below
_template("phrase.the_deck_file", N_("the deck file %(name)s"), "phrase")
_template("phrase.the_preset", N_("the preset %(name)s"), "phrase")
_template("phrase.the_rule_file", N_("the rule file"), "phrase")
_template("phrase.the_zone_file", N_("the zone file"), "phrase")
_template("phrase.match_deck_file", N_("The deck file of the match"), "phrase")
_refusal("refusal.toml_invalid", N_("%(what)s is not valid TOML: %(detail)s."))
# the TOML parser's own words, then where it stopped: a page may say only where
_template(
    "phrase.toml_at",
    N_("%(problem)s (at line %(line)s, column %(column)s)"),
    "phrase",
    english_only=("problem",),
)
_template(
    "phrase.toml_at_end",
    N_("%(problem)s (at end of document)"),
    "phrase",
    english_only=("problem",),
)
_refusal("refusal.toml_too_deep", N_("%(what)s is nested too deeply to read."))
_refusal("refusal.toml_long_number", N_("%(what)s holds a number too long to read."))
# A match export read back (companion.store.import_match: the tablet's import)
_refusal("refusal.export_not_ours", N_("This is not a match exported by Hanafuda Companion."))
_refusal(
    "refusal.export_version",
    N_("This export is version %(version)s; this program reads version %(reads)s."),
)
_refusal("refusal.export_incomplete", N_("The export lacks its game, its match or its events."))
_refusal(
    "refusal.export_too_many", N_("The export holds %(n)s events; a match has at most %(most)s.")
)
_refusal(
    "refusal.export_too_deep", N_("The export nests its data too deeply to be a match export.")
)
_refusal("refusal.export_event_order", N_("The export's event %(n)s is missing or out of order."))
_refusal("refusal.export_no_event", N_("The export holds no event."))
_refusal("refusal.export_nested", N_("The export's rules or events are too deeply nested."))
_refusal("refusal.export_value", N_("The export holds a value no match has (%(detail)s)."))

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
        try:
            template = TEMPLATES[message_id]
        except KeyError:
            raise ValueError(f"No message template {message_id!r}.") from None
        text = template.english % {k: str(v) for k, v in params.items()}
        self = super().__new__(cls, text)
        self.id = message_id
        self.params = MappingProxyType(dict(params))
        self.capitalized = False
        self.unstopped = False
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


def say(value, translate=None, lang: str = "en", name_card=None) -> str:
    """``value`` in a language: a Message by its template as ``translate`` gives it (a msgid
    to its translation: a catalog's gettext) filled with its parameters, each said first; a
    Listing item by item; a Named by its name in ``lang``; a card by ``name_card(code)``;
    anything else (a player's name, a number) as it is. With no ``translate``: English."""
    if isinstance(value, Message):
        params = {k: say(v, translate, lang, name_card) for k, v in value.params.items()}
        template = translate(value.template) if translate else value.template
        text = template % params if params else template
        if value.capitalized or _opens_with_a_phrase(value, template):
            text = text[:1].upper() + text[1:]
        if value.unstopped and text.endswith(_STOPS):
            text = text[:-1]
        return text
    if isinstance(value, Listing):
        sep = translate(value.sep) if translate and value.sep in SEPARATORS else value.sep
        return sep.join(say(item, translate, lang, name_card) for item in value.items)
    if isinstance(value, Named):
        return value.in_language(lang)
    if isinstance(value, CardCode) and name_card is not None:
        return name_card(str(value))
    return "" if value is None else str(value)

"""The game's sentences: the templates of what the rules, the engines (Koi-Koi, Hanamikoji),
the decks and the data files say, registered in the message catalogs (:mod:`companion.messages`,
the mechanism, which this module re-exports for the game's modules).

Every template is the English a :class:`Message` is, and the catalogs' msgid (marked ``N_`` for
``pybabel extract``); a test checks that each one has its French and Japanese translation.
"""

from __future__ import annotations

from companion.messages import (
    N_,
    NP_,
    SEPARATORS,
    TEMPLATES,
    CardCode,
    Listing,
    Message,
    Named,
    catalog,
    say,
)

__all__ = ["Message", "Listing", "Named", "CardCode", "TEMPLATES", "SEPARATORS", "N_", "NP_", "say"]

_template = catalog(__name__)


# -- Koi-Koi: multipliers (companion.game.scoring) ---------------------------------------------
_template("multiplier.seven_or_more", N_("%(n)s points, 7 or more"), "multiplier")
_template("multiplier.more_than_seven", N_("%(n)s points, more than 7"), "multiplier")
# kind "koi_calls": a multiplier counting Koi calls (the page names who called)
_template(
    "multiplier.koi_own",
    NP_("%(n)s Koi call of the scorer", "%(n)s Koi calls of the scorer"),
    "koi_calls",
)
_template("multiplier.koi_beyond_bonus", N_("%(n)s Koi calls of the scorer"), "koi_calls")
_template(
    "multiplier.koi_all",
    NP_("%(n)s Koi call this round", "%(n)s Koi calls this round"),
    "koi_calls",
)
_template("multiplier.opponent_koi", N_("the opponent called Koi"), "multiplier")
_template(
    "multiplier.field_brights",
    NP_("%(n)s bright in the dealt field", "%(n)s brights in the dealt field"),
    "multiplier",
)
# The Koi-Koi bonus line among the yaku (koi = "bonus")
_template("yaku.koi_bonus_one", N_("Koi-Koi (%(n)s call)"), "yaku")
_template("yaku.koi_bonus", N_("Koi-Koi (%(n)s calls)"), "yaku")
_template("yaku.points", N_("%(name)s %(points)s"), "yaku")

# -- Koi-Koi: how a round ended (companion.game.engine) ----------------------------------------
# A round's points are counted: "1 point", "6 points" (count="points").
_template(
    "round.stop",
    NP_(
        "%(side)s stops with %(yaku)s: %(points)s point",
        "%(side)s stops with %(yaku)s: %(points)s points",
    ),
    count="points",
)
_template(
    "round.stop_after_koi",
    NP_(
        "%(side)s stops after %(koi)s Koi with %(yaku)s: %(points)s point",
        "%(side)s stops after %(koi)s Koi with %(yaku)s: %(points)s points",
    ),
    count="points",
)
_template("round.with_base", N_("%(reason)s (base %(base)s x%(mult)s)"))
_template(
    "round.declared",
    NP_(
        "%(side)s declares %(kind)s (%(what)s): %(points)s point",
        "%(side)s declares %(kind)s (%(what)s): %(points)s points",
    ),
    count="points",
)
_template(
    "round.declared_cards",
    NP_(
        "%(side)s declares %(kind)s (%(what)s: %(cards)s): %(points)s point",
        "%(side)s declares %(kind)s (%(what)s: %(cards)s): %(points)s points",
    ),
    count="points",
)
_template(
    "round.oya_scores",
    NP_(
        "Cards ran out: the Oya %(oya)s scores %(points)s point",
        "Cards ran out: the Oya %(oya)s scores %(points)s points",
    ),
    count="points",
)
_template(
    "round.last_yaku_maker",
    NP_(
        "Cards ran out and %(side)s (not the Oya) made the last yaku: %(yaku)s, %(points)s point",
        "Cards ran out and %(side)s (not the Oya) made the last yaku: %(yaku)s, %(points)s points",
    ),
    count="points",
)
_template(
    "round.draw_oya_made_last", N_("Cards ran out, a draw: the Oya %(oya)s made the last yaku")
)
_template("round.draw_no_yaku", N_("Cards ran out, a draw: nobody made a yaku"))
_template("round.draw", N_("Cards ran out, a draw: nothing is scored"))
_template("round.entered_draw", N_("Entered by hand: a draw"))
_template(
    "round.entered",
    NP_("Entered by hand: %(points)s point", "Entered by hand: %(points)s points"),
    count="points",
)
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
    NP_(
        "%(player)s holds %(n)s card of month %(month)s (%(cards)s): captures come in "
        "pairs, so one may be misread.",
        "%(player)s holds %(n)s cards of month %(month)s (%(cards)s): captures come in "
        "pairs, so one may be misread.",
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
_template("standing.points", NP_("%(n)s point", "%(n)s points"), "standing")
# points: a standing.points message, which counts them in its own words
_template(
    "standing.rounds_won",
    NP_("%(n)s round won, %(points)s", "%(n)s rounds won, %(points)s"),
    "standing",
)
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
    NP_(
        "Round started, %(oya)s is Oya, %(count)s bright in the field",
        "Round started, %(oya)s is Oya, %(count)s brights in the field",
    ),
    "event",
    count="count",
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
_template("hanamikoji.points", NP_("%(n)s point", "%(n)s points"), "condition")
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
_template(
    "phrase.deck_format", N_("see companion/game/decks/ferme-florale.toml for the format"), "phrase"
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

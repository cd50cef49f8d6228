"""The camera's sentences: the templates of what the live session, its capture decider, the
demos (their narration: :mod:`companion.demo`) and the zones' calibration say
(:mod:`companion.live`), registered in the message catalogs (:mod:`companion.messages`, whose
:class:`Message` the live code takes from here).
"""

from __future__ import annotations

from companion.messages import N_, NP_, Message, catalog

__all__ = ["Message"]

_template = catalog(__name__)

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
    "camera.frozen",
    N_("The camera's picture is frozen: nothing is read from the table until it moves again."),
    "camera",
)
_template(
    "camera.no_match",
    N_("Start a match on the tablet: the camera follows the latest one."),
    "camera",
)
_template("camera.next_round", N_("The table is clear: deal the next round."), "proposal")
# why a capture is slow (``LivePipeline._note_unread``)
_template(
    "camera.capture_unread",
    N_("A card in %(player)s's captures is not read yet: is a hand over it?"),
    "proposal",
)
_template(
    "camera.partner_unread",
    N_("%(player)s's capture waits for its second card: is a hand or a card over it?"),
    "proposal",
)
# the camera demo (companion.demo), asked for on a machine without card images to film
_template(
    "camera.demo_no_decks",
    N_(
        "The camera demo films card images from ../shared/decks beside the checkout (or "
        "$COMPANION_SHARED/decks), and none are here; 'companion demo' without --camera needs "
        "nothing."
    ),
    "camera",
)
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

# what the camera did not see (a dropped stream, a covered lens, a restart): asked, never read
_template(
    "camera.away_ask",
    N_("The camera was away for %(seconds)s s: did %(player)s stop or call Koi?"),
    "proposal",
)
_template(
    "camera.restart_ask",
    N_("The camera started again while %(player)s was deciding: did %(player)s stop or call Koi?"),
    "proposal",
)
_template(
    "camera.away_round_gone",
    N_(
        "The camera was away for %(seconds)s s and the round's captures are gone: end the round "
        "on the tablet."
    ),
    "proposal",
)
_template(
    "camera.away_captures_unread",
    N_(
        "The camera was away for %(seconds)s s and cannot read every card in %(player)s's "
        "captures: add the cards it missed on the tablet."
    ),
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
    NP_(
        "The camera sees %(n)s face-up card: deal the field (%(least)s or more cards) and "
        "try again.",
        "The camera sees %(n)s face-up cards: deal the field (%(least)s or more cards) and "
        "try again.",
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

# Reading the zone file (companion.live.zones, by companion.game.cards.parse_toml): what a
# refusal names
_template("phrase.the_zone_file", N_("the zone file"), "phrase")

# -- the demos' narration (companion.demo): the scripted match's story, the camera demo's -----
_template("demo.round1_deal", N_("Round 1: Aki deals."), "demo")
_template("demo.aki_crane", N_("Aki takes the Crane with a pine card."), "demo")
_template("demo.ben_sake_cup", N_("Ben takes the Sake cup."), "demo")
_template("demo.aki_curtain", N_("Aki takes the Curtain."), "demo")
_template("demo.ben_butterflies", N_("Ben takes the Butterflies."), "demo")
_template(
    "demo.misread_deer",
    N_("The camera misreads the Deer as the maple blue ribbon..."),
    "demo",
)
_template("demo.ben_fixes_deer", N_("...and Ben fixes it in two taps: it is the Deer."), "demo")
_template("demo.aki_plum_chaff", N_("Aki takes two plum chaff."), "demo")
_template(
    "demo.ben_inoshikacho",
    N_("Ben takes the Boar: Boar, Deer and Butterflies make Ino-Shika-Cho."),
    "demo",
)
_template("demo.ben_koi", N_("Ben calls Koi-Koi and plays on."), "demo")
_template("demo.aki_sanko", N_("Aki takes the Moon: Crane, Curtain and Moon make Sanko."), "demo")
_template(
    "demo.aki_stops_doubled",
    N_("Aki stops: Ben's Koi-Koi doubles Aki's score. Aki wins round 1."),
    "demo",
)
_template("demo.round2_deal", N_("Round 2: the winner, Aki, deals."), "demo")
_template("demo.ben_sake_cup_again", N_("Ben takes the Sake cup again."), "demo")
_template(
    "demo.willow_by_mistake",
    N_("A willow card still on the table is counted for Aki by mistake..."),
    "demo",
)
_template("demo.willow_removed", N_("...and removed from Aki's captures."), "demo")
_template(
    "demo.ben_hanami",
    N_("Ben takes the Curtain: with the Sake cup, that is Hanami-de-ippai."),
    "demo",
)
_template("demo.ben_stops", N_("Ben stops and wins round 2."), "demo")
_template("demo.round3_deal", N_("Round 3: Ben deals."), "demo")
_template("demo.aki_phoenix", N_("Aki takes the Phoenix."), "demo")
_template("demo.aki_rain_man", N_("Aki takes the Rain man."), "demo")
_template("demo.undo_bens", N_("Oops, that was Ben's: undo the last event."), "demo")
_template("demo.round3_draw", N_("The cards run out with no yaku: round 3 is a draw."), "demo")
_template(
    "demo.round4_your_turn",
    N_("Round 4: your turn. Add captures, call Koi or Stop, fix a card, print the summary."),
    "demo",
)
# the camera demo tells what the camera read, as it records it
_template("demo.camera_round", N_("The camera saw the deal: round %(n)s begins."), "demo")
_template("demo.camera_capture", N_("The camera saw %(player)s take %(card)s."), "demo")
_template(
    "demo.camera_koi", N_("Play went on after %(player)s's yaku: Koi, read from the table."), "demo"
)
_template(
    "demo.camera_stop", N_("%(player)s's cards were gathered: Stop, read from the table."), "demo"
)
_template("demo.camera_round_end", N_("Round %(n)s: %(reason)s"), "demo")

# -- the camera's source, as the live view's state line names it (LiveSource.describe) ---------
_template("source.camera", N_("camera %(target)s"))
_template("source.stream", N_("stream %(url)s"))
_template("source.video", N_("video %(name)s (%(fps)s fps)"))
_template("source.images", N_("images in %(path)s (%(n)s, %(fps)s fps)"))
_template("source.simulated_table", N_("simulated table (%(deck)s deck, %(fps)s fps)"))

"""The camera's sentences: the templates of what the live session, its capture decider, the
camera demo and the zones' calibration say (:mod:`companion.live`), registered in the message
catalogs (:mod:`companion.messages`, whose :class:`Message` the live code takes from here).
"""

from __future__ import annotations

from companion.messages import N_, Message, catalog

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

# Reading the zone file (companion.live.zones, by companion.game.cards.parse_toml): what a
# refusal names
_template("phrase.the_zone_file", N_("the zone file"), "phrase")

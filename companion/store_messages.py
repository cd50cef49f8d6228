"""The store's sentences: the templates of what the match store (:mod:`companion.store`) says
to the tablet's requests and to a match export read back, registered in the message catalogs
(:mod:`companion.messages`, whose :class:`Message` the store takes from here).
"""

from __future__ import annotations

from companion.messages import N_, Message, catalog

__all__ = ["Message"]

_template = catalog(__name__)


def _refusal(message_id: str, english: str) -> None:
    _template(message_id, english, "refusal")


# What a refusal names (kind "field")
_template("field.title", N_("title"), "field")
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
_refusal(
    "refusal.database_replaced",
    N_(
        "The database file was deleted or replaced while in use; nothing was recorded: restart "
        "the program (restore a backup if it was deleted)."
    ),
)
_refusal(
    "refusal.journal_held",
    N_(
        "The database's journal file was deleted while in use and another program still holds "
        "it; nothing was recorded: close the other programs using this database and restart "
        "this one."
    ),
)
_refusal(
    "refusal.read_only_database",
    N_("This database is read-only here (a copy on read-only media); nothing was recorded."),
)
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
_refusal(
    "refusal.export_duplicate_request",
    N_("The export's event %(n)s repeats the request id of event %(first)s: it is not an export."),
)
_refusal("refusal.export_nested", N_("The export's rules or events are too deeply nested."))
_refusal("refusal.export_value", N_("The export holds a value no match has (%(detail)s)."))

"""The match store: an append-only event log per match in SQLite (sqlite-utils, WAL).

Nothing is edited in place: every state shown anywhere is the engine's replay of a match's
events, and a fix is a new event (``capture_corrected``, ``undo``...). An append is one
``BEGIN IMMEDIATE`` transaction that validates the event with ``engine.apply``, checks the
request id and the expected last seq, and writes the row; UNIQUE indexes on ``(match_id, seq)``
and ``(match_id, request_id)`` make two writers racing (threads or processes) record one event.
With WAL and ``synchronous=FULL``, a crash or ``kill -9`` loses at most the event being written.

    store = MatchStore.open("companion.db")          # or ":memory:" or a sqlite_utils.Database
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=12, oya="Aki")
    store.append(match_id, event, expected_seq=store.last_seq(match_id), request_id="r-17")
    store.state(match_id)                            # engine.MatchState, the replay
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import sqlite3
import sys
import threading
import unicodedata
import urllib.parse
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import sqlite_utils
from sqlite_utils.migrations import Migrations

from companion import CompanionError
from companion.game import registry
from companion.store_messages import Message

if TYPE_CHECKING:
    # What a match's log holds and replays to, by game (``MatchStore.game``; the engines
    # themselves are the registry's).
    from companion.game import engine, hanamikoji

    Event = engine.Event | hanamikoji.Event
    MatchState = engine.MatchState | hanamikoji.HanamikojiState

APP_DIR_NAME = "hanafuda-companion"
DB_FILE_NAME = "companion.db"
MAX_REQUEST_ID_LENGTH = 200
MAX_TITLE_LENGTH = 120
# An export's bounds (``import_match``, ``load_export``): a long match is under 2,000 events,
# and nothing a program writes nests deeper than 5; far more than either is not an export.
MAX_EXPORT_BYTES = 4 * 1024 * 1024
MAX_IMPORT_EVENTS = 20_000
MAX_EXPORT_DEPTH = 16


class StoreError(CompanionError):
    """The database cannot be opened or read (not a SQLite file, unwritable folder...)."""


class UnknownMatchError(CompanionError):
    """No match has this id."""


class StaleEventError(CompanionError):
    """The match changed since the page that sent this event last saw it."""

    def __init__(self, message: str, *, expected_seq: int | None = None, last_seq: int = 0):
        super().__init__(message)
        self.expected_seq = expected_seq
        self.last_seq = last_seq


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredEvent:
    """One row of a match's log: the engine event and when/how it was recorded."""

    seq: int
    event: Event
    created_at: str
    request_id: str | None = None

    @property
    def type(self) -> str:
        return self.event.type

    def to_dict(self) -> dict:
        return {
            "seq": self.seq,
            "event": self.event.to_dict(),
            "created_at": self.created_at,
            "request_id": self.request_id,
        }


@dataclass(frozen=True)
class MatchInfo:
    """A match as listed: what it was started with and how far its log goes."""

    id: int
    title: str | None
    players: list[str]
    rules: str
    rounds: int
    oya: str
    options: dict = field(default_factory=dict)
    created_at: str = ""
    last_seq: int = 0
    finished: bool = False
    game: str = registry.KOIKOI.name  # the name of its game (``registry.GAMES``)
    archived: bool = False  # put away: listed apart, kept whole
    # the score as of ``standing["seq"]`` (``standing_of``): each side, its members and
    # total, the round it is at; None where no change was made since it was kept
    standing: dict | None = field(default=None, compare=False, repr=False)

    @property
    def current_standing(self) -> dict | None:
        """The kept score when it is the score after the last event, else None (replay)."""
        kept = self.standing
        return kept if kept is not None and kept.get("seq") == self.last_seq else None

    @property
    def label(self) -> str:
        """A one-line name for lists: the title, or the players and the date."""
        return self.title or f"{' vs '.join(self.players)} ({self.created_at[:10]})"

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "players": list(self.players),
            "rules": self.rules,
            "rounds": self.rounds,
            "oya": self.oya,
            "options": dict(self.options),
            "created_at": self.created_at,
            "last_seq": self.last_seq,
            "finished": self.finished,
            "game": self.game,
            "archived": self.archived,
        }


# ---------------------------------------------------------------------------------------------
# Schema: sqlite-utils built-in migrations (append new ones, never edit applied ones)
# ---------------------------------------------------------------------------------------------

migrations = Migrations("hanafuda-companion")


@migrations()
def m001_matches_and_events(db: sqlite_utils.Database) -> None:
    db["matches"].create(
        {
            "id": int,
            "title": str,
            "players": str,  # JSON list
            "rules": str,
            "rounds": int,
            "oya": str,
            "options": str,  # JSON object
            "created_at": str,
            "last_seq": int,
            "finished": int,
        },
        pk="id",
        not_null={"players", "rules", "rounds", "oya", "created_at", "last_seq", "finished"},
        defaults={"last_seq": 0, "finished": 0, "options": "{}"},
    )
    db["events"].create(
        {
            "id": int,
            "match_id": int,
            "seq": int,
            "type": str,
            "event": str,  # JSON of engine Event.to_dict()
            "created_at": str,
            "request_id": str,
        },
        pk="id",
        foreign_keys=[("match_id", "matches", "id")],
        not_null={"match_id", "seq", "type", "event", "created_at"},
    )
    db["events"].create_index(["match_id", "seq"], unique=True)
    # SQLite lets several NULLs through a UNIQUE index: events sent without a request id.
    db["events"].create_index(["match_id", "request_id"], unique=True)


@migrations()
def m002_match_game(db: sqlite_utils.Database) -> None:
    # Which engine replays the match: existing rows are Hanafuda (Koi-Koi engine) matches.
    db["matches"].add_column("game", str, not_null_default=registry.KOIKOI.name)


@migrations()
def m003_match_archived(db: sqlite_utils.Database) -> None:
    # Archived matches are listed apart; nothing about their log changes.
    db["matches"].add_column("archived", int, not_null_default=0)


@migrations()
def m004_match_standing(db: sqlite_utils.Database) -> None:
    # The score as listed (``standing``), written with each change, so that the match list
    # reads it instead of replaying every log; NULL until a change is made by this version.
    db["matches"].add_column("standing", str)


JOURNAL_SUFFIX = "-wal"  # SQLite's write-ahead log beside the database file

EXPORT_FORMAT = "hanafuda-companion-match"
EXPORT_VERSION = 1


# ---------------------------------------------------------------------------------------------
# Where the default database lives
# ---------------------------------------------------------------------------------------------


def default_db_path() -> Path:
    """$COMPANION_DB, else the per-user data folder (XDG_DATA_HOME on Linux)."""
    override = os.environ.get("COMPANION_DB")
    if override:
        return Path(override).expanduser()
    return data_dir() / DB_FILE_NAME


def data_dir() -> Path:
    """This user's data folder for the program (XDG_DATA_HOME on Linux): the default
    database, the zones calibrated on the tablet."""
    if sys.platform == "win32":  # pragma: no cover
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":  # pragma: no cover
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / APP_DIR_NAME


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


# ---------------------------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------------------------


class MatchStore:
    """Matches and their event logs in one SQLite database. Safe to share between threads."""

    def __init__(self, db: sqlite_utils.Database, path: Path | None = None):
        self.db = db
        self.path = path
        # One connection shared by the web server's threads: the lock serialises its use
        # (sqlite3 connections are not safe for concurrent use); other processes are kept
        # apart by SQLite's own locking.
        self._lock = threading.RLock()
        self._cache: dict[int, tuple[int, MatchState]] = {}  # match_id -> (last seq, replay)
        self._events: dict[int, list[StoredEvent]] = {}  # match_id -> parsed log, seq order
        self.damaged: str | None = None  # what the integrity check found: no writes then
        self._games: dict[int, str] = {}  # match_id -> game (never changes)
        self._identity: tuple[int, int] | None = None  # the file's (device, inode) once open
        # The write-ahead log's (device, inode): events live there until a checkpoint copies
        # them into the file, so a deleted log would take them with it.
        self._journal_identity: tuple[int, int] | None = None
        self._busy_timeout = 15.0
        self.read_only = False  # opened read-only (a copy on read-only media): no writes
        self._refused_as_read_only = False  # opening found the file or its folder read-only
        # Called as listener(match_id, last_seq) after each append made through this store
        # (the live tally wakes its followers at once instead of waiting for its next look).
        self._listeners: list[weakref.WeakMethod] = []

    # -- opening ------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path_or_db: str | os.PathLike | sqlite_utils.Database | None = None,
        *,
        busy_timeout: float = 15.0,
    ) -> MatchStore:
        """Open (creating if needed) a store: a path, ":memory:", a Database, or None (default).
        ``busy_timeout``: how long a write waits for another process's write to finish."""
        if isinstance(path_or_db, sqlite_utils.Database):
            store = cls(path_or_db)
        else:
            target = default_db_path() if path_or_db is None else path_or_db
            if str(target) == ":memory:":
                conn = sqlite3.connect(":memory:", check_same_thread=False)
                store = cls(sqlite_utils.Database(conn))
            else:
                path = Path(target).expanduser()
                try:
                    is_dir = path.is_dir()
                except OSError as exc:  # a folder this user cannot read
                    raise StoreError(f"Cannot open the database {path}: {exc.strerror}.") from None
                if is_dir:
                    raise StoreError(f"The database path {path} is a folder, not a file.")
                if _read_only_file(path):  # a copy on read-only media: read it as it is
                    return cls._open_read_only(path)
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=busy_timeout)
                except (OSError, sqlite3.Error) as exc:
                    raise StoreError(f"Cannot open the database {path}: {exc}.") from exc
                store = cls(sqlite_utils.Database(conn), path)
                store._busy_timeout = busy_timeout
                try:
                    store._prepare()
                except StoreError:
                    if not store._refused_as_read_only:
                        raise
                    store.db.conn.close()
                    return cls._open_read_only(path)  # the system refused writing: read it
                return store
        store._prepare()
        return store

    @classmethod
    def _open_read_only(cls, path: Path) -> MatchStore:
        """The database at ``path`` opened for reading only (``immutable``: SQLite then needs
        no journal files beside it); every change is refused with one sentence."""
        uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro&immutable=1"
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot open the database {path}: {exc}.") from None
        store = cls(sqlite_utils.Database(conn), path)
        store.read_only = True
        store._prepare()
        return store

    def _prepare(self) -> None:
        try:
            with self._lock:
                on_disk = bool(self.db.execute("PRAGMA database_list").fetchone()[2])
                if self.read_only:
                    self.damaged = self._integrity_problem()
                    return
                if on_disk:
                    problem = self._integrity_problem()
                    if problem:
                        # Read what can be read; never write into a damaged file.
                        self.damaged = problem
                        return
                    self.db.enable_wal()
                    with self.db.ensure_autocommit_on():
                        # FULL: an acknowledged event survives power loss too, not just kill -9.
                        self.db.execute("PRAGMA synchronous=FULL")
                self.db.execute("PRAGMA foreign_keys=ON")
                migrations.apply(self.db)
        except sqlite3.DatabaseError as exc:
            where = self.path or "the database"
            if _is_write_failure(exc):
                text = str(exc).lower()
                self._refused_as_read_only = "readonly" in text or "read-only" in text
                raise StoreError(_cannot_write(where, exc)) from None
            raise StoreError(f"{where} is not a usable match database ({exc}).") from exc
        self._identity = self._file_identity()
        self._journal_identity = self._file_identity(JOURNAL_SUFFIX)

    def _file_identity(self, suffix: str = "") -> tuple[int, int] | None:
        """The database file's (device, inode), or its write-ahead log's (``suffix`` "-wal"),
        to notice it being deleted or replaced."""
        if self.path is None:
            return None
        try:
            found = os.stat(f"{self.path}{suffix}")
        except OSError:
            return None
        return (found.st_dev, found.st_ino)

    def _journal_lost(self) -> bool:
        """Whether the write-ahead log this connection writes into is no longer the file on
        disk (deleted or replaced while in use)."""
        expected = self._journal_identity
        return expected is not None and self._file_identity(JOURNAL_SUFFIX) != expected

    def _rescue_journal(self) -> None:
        """The write-ahead log was deleted while in use: the events in it are still readable
        through this connection, so copy them all into the database file (a checkpoint) and
        reconnect, which starts a new log on disk. StoreError when they cannot all be
        copied (another program holds the log)."""
        conn = self.db.conn
        if self._file_identity() != self._identity:  # the file went too: nothing to keep it in
            raise StoreError(Message("refusal.database_replaced"))
        try:
            busy, logged, copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error:
            busy, logged, copied = 1, 0, -1
        if busy or copied != logged or _held_elsewhere(self.path):
            # Everything readable is in the file now; but another process still writes into
            # the deleted log, and two logs behind one index would garble both: no new one.
            raise StoreError(Message("refusal.journal_held"))
        conn.close()
        conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=self._busy_timeout)
        self.db.conn = conn
        with self.db.ensure_autocommit_on():
            self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.execute("SELECT count(*) FROM matches").fetchone()  # opens the new log
        self._journal_identity = self._file_identity(JOURNAL_SUFFIX)

    def _check_file_still_there(self) -> None:
        """Refuse a write once the database file has been deleted or replaced: SQLite would
        go on writing into the deleted file's pages, and every event acknowledged from then
        on would be lost when the server stops."""
        expected = self._identity
        if expected is None:
            return
        if self._file_identity() != expected:
            # no path: the tablet shows this sentence, and the path is the server's business
            raise StoreError(Message("refusal.database_replaced"))

    def _integrity_problem(self) -> str | None:
        """What SQLite's quick check finds wrong with the file (None when it is sound)."""
        try:
            rows = self.db.execute("PRAGMA quick_check(3)").fetchall()
        except sqlite3.DatabaseError as exc:  # not even its pages can be walked: refuse it
            where = self.path or "the database"
            if _is_write_failure(exc):  # a read-only place or a full disk, not a damaged file
                raise StoreError(_cannot_write(where, exc)) from None
            raise StoreError(
                f"{where} is not a usable match database: it fails its integrity check "
                f"({_short(exc)}); nothing is written to it."
            ) from None
        found = [str(r[0]) for r in rows if r and r[0] != "ok"]
        return "; ".join(found)[:200] if found else None

    @contextlib.contextmanager
    def _reading(self):
        """A read under the lock; a damaged row or page is a StoreError, not a traceback."""
        with self._lock:
            if self._journal_lost():  # noticed at the next look, not only at the next write
                with contextlib.suppress(StoreError, sqlite3.Error):
                    self._rescue_journal()  # what fails here, the next write says
            try:
                yield
            except CompanionError:
                raise
            except (sqlite3.DatabaseError, UnicodeDecodeError, ValueError, TypeError) as exc:
                where = self.path or "the database"
                raise StoreError(
                    f"{where} cannot be read ({_short(exc)}): it is damaged; restore a backup."
                ) from None

    def close(self) -> None:
        with self._lock:
            self.db.close()

    def __enter__(self) -> MatchStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def _write(self):
        """One write transaction, taken IMMEDIATE so that the check-then-insert of an append
        cannot interleave with another process's (a deferred transaction would fail its
        read-to-write upgrade instead of waiting)."""
        with self._lock:
            if self.read_only:
                raise StoreError(Message("refusal.read_only_database"))
            if self.damaged:
                where = self.path or "the database"
                raise StoreError(
                    f"{where} fails its integrity check ({self.damaged}); nothing is written "
                    "to it: restore a backup or start a new database."
                )
            self._check_file_still_there()
            if self._journal_lost():  # what was acknowledged lies in a deleted file: keep it
                self._rescue_journal()
            conn = self.db.conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                else:
                    conn.execute("COMMIT")
                    if self._journal_lost():  # deleted while writing: before acknowledging
                        self._rescue_journal()
            except sqlite3.IntegrityError:
                # Only a writer that bypassed the seq check could collide on (match_id, seq).
                raise StaleEventError(Message("refusal.stale")) from None
            except sqlite3.OperationalError as exc:
                raise StoreError(
                    f"The database cannot be written now ({exc}); nothing was recorded."
                ) from None
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                raise StoreError(
                    f"The database is damaged ({_short(exc)}); nothing was recorded."
                ) from None

    # -- matches ------------------------------------------------------------------------------

    def create_match(
        self,
        players: list[str],
        rules: str = "livret",
        rounds: int | None = None,
        options: dict | None = None,
        oya: str | None = None,
        title: str | None = None,
        teams: dict | None = None,
        deck: dict | None = None,
    ) -> int:
        """Start a Hanafuda match: checks the set-up with the engine and writes its
        ``match_started``.

        ``teams`` ({team name: [members]}, the team names being the ``players``) is for rule
        sets with the teams option on; without it, 4 players sit 1 & 3 against 2 & 4.
        ``deck``: the names of the deck the camera was taught (``cards.Deck.names_data``),
        kept in the match so that its pages and summary name the cards so."""
        _check_players(players)
        for name in [oya] if oya is not None else []:
            _check_printable(name, "field.player_name")
        for team, members in (teams or {}).items() if isinstance(teams, dict) else ():
            _check_printable(team, "field.team_name")
            for member in members if isinstance(members, list | tuple) else ():
                _check_printable(member, "field.player_name")
        return self._create(
            registry.KOIKOI,
            players,
            title,
            rules=rules,
            rounds=rounds,
            oya=oya,
            options=dict(options or {}),
            teams=teams,
            deck=deck,
        )

    def create_hanamikoji_match(
        self, players: list[str], first: str | None = None, title: str | None = None
    ) -> int:
        """Start a Hanamikoji match (seed 002): two players, ``first`` starts round 1
        (a name, "A" or "B"; the first player by default)."""
        _check_players(players)
        return self._create(registry.HANAMIKOJI, players, title, first=first)

    def _create(self, game: registry.Game, players: list[str], title: str | None, **set_up):
        """Start a match of ``game``: its start event from the set-up, checked by its engine
        (player count, rounds, unknown options...), then the match's row and that event."""
        title = _title(title)
        event = game.start(players, **set_up)
        state = game.engine.apply(None, event)
        listing = game.listing(state)
        created = _now()
        with self._lock, self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO matches (title, players, rules, rounds, oya, options, created_at,"
                " last_seq, finished, game, standing) VALUES (?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?)",
                [
                    title,
                    json.dumps(listing["players"], ensure_ascii=False),
                    listing["rules"],
                    listing["rounds"],
                    listing["oya"],
                    json.dumps(listing["options"], ensure_ascii=False, sort_keys=True),
                    created,
                    game.name,
                    _standing_json(state, 1),
                ],
            )
            match_id = cursor.lastrowid
            conn.execute(
                "INSERT INTO events (match_id, seq, type, event, created_at, request_id)"
                " VALUES (?, 1, ?, ?, ?, NULL)",
                [match_id, event.type, _event_json(state.log[0]), created],  # rounds, Oya resolved
            )
            self._cache[match_id] = (1, state)
            self._games[match_id] = game.name
        return match_id

    def game(self, match_id: int | str) -> str:
        """The name of the match's game (``registry.GAMES``: Koi-Koi for any Hanafuda rule set)."""
        match_id = _match_id(match_id)
        with self._reading():  # a damaged page is a StoreError (4xx on the page), not a 500
            game = self._games.get(match_id)
            if game is None:
                row = self.db.execute(
                    "SELECT game FROM matches WHERE id = ?", [match_id]
                ).fetchone()
                if row is None:
                    raise UnknownMatchError(Message("refusal.no_such_match", n=match_id))
                game = self._games[match_id] = registry.game(row[0]).name
            return game

    def _engine(self, match_id: int):
        """The module that replays this match (engine for Hanafuda, hanamikoji for seed 002)."""
        return registry.game(self.game(match_id)).engine

    def get_match(self, match_id: int | str) -> MatchInfo:
        match_id = _match_id(match_id)
        with self._reading():
            rows = list(self.db["matches"].rows_where("id = ?", [match_id]))
            if not rows:
                raise UnknownMatchError(Message("refusal.no_such_match", n=match_id))
            return _match_info(rows[0])

    def matches(self) -> list[MatchInfo]:
        """Every match, the most recent first."""
        with self._reading():
            rows = list(self.db["matches"].rows_where(order_by="id desc"))
            return [_match_info(row) for row in rows]

    def latest_match(self) -> MatchInfo:
        """The most recently created match (UnknownMatchError when there is none)."""
        with self._reading():
            rows = list(self.db["matches"].rows_where(order_by="id desc", limit=1))
            if not rows:
                raise UnknownMatchError(Message("refusal.no_matches"))
            return _match_info(rows[0])

    def resolve_match(self, match: int | str | None) -> MatchInfo:
        """A match id given by a user, or the most recent match when None."""
        return self.latest_match() if match in (None, "") else self.get_match(match)

    # -- keeping matches: rename, delete, export, import, backup ----------------------------

    def rename_match(self, match_id: int | str, title: str | None) -> MatchInfo:
        """Give the match a new title (None or blank: none); its log is untouched."""
        info = self.get_match(match_id)
        title = _title(title)
        with self._write() as conn:
            conn.execute("UPDATE matches SET title = ? WHERE id = ?", [title, info.id])
        return self.get_match(info.id)

    def archive_match(self, match_id: int | str, archived: bool = True) -> MatchInfo:
        """Put a match away (listed apart from the others) or bring it back."""
        info = self.get_match(match_id)
        with self._write() as conn:
            conn.execute(
                "UPDATE matches SET archived = ? WHERE id = ?", [int(bool(archived)), info.id]
            )
        return self.get_match(info.id)

    def delete_match(self, match_id: int | str) -> None:
        """Remove a match and its whole log (export it first to keep a copy)."""
        info = self.get_match(match_id)
        with self._write() as conn:
            conn.execute("DELETE FROM events WHERE match_id = ?", [info.id])
            conn.execute("DELETE FROM matches WHERE id = ?", [info.id])
        self._cache.pop(info.id, None)
        self._events.pop(info.id, None)
        self._games.pop(info.id, None)

    def export_match(self, match_id: int | str) -> dict:
        """The match as plain JSON data: how it is listed and its whole event log, each event
        with its time and request id. ``import_match`` of it gives the same match back."""
        info = self.get_match(match_id)
        return {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "game": self.game(info.id),
            "match": {k: v for k, v in info.to_dict().items() if k not in ("id", "last_seq")},
            "events": [stored.to_dict() for stored in self.events(info.id)],
        }

    def import_match(self, data) -> int:
        """Add an exported match (``export_match``'s data, or ``load_export``'s of a file) as a
        new match. It is checked as a new match is: its log is replayed by the engine (players,
        rules, rounds in the rule set's range, every event), and how it is listed (players,
        rules, rounds, Oya, options) is taken from that replay, not from what the file says;
        the title and names are checked as the new-match form's are. A damaged, edited or
        oversized file is refused with one sentence and nothing is written."""
        if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
            raise CompanionError(Message("refusal.export_not_ours"))
        if data.get("version") != EXPORT_VERSION:
            shown = data.get("version")
            shown = shown if isinstance(shown, int | float | str) else type(shown).__name__
            raise CompanionError(
                Message(
                    "refusal.export_version", version=repr(str(shown)[:20]), reads=EXPORT_VERSION
                )
            )
        game, info, rows = data.get("game"), data.get("match"), data.get("events")
        if (
            not isinstance(game, str)
            or game not in registry.GAMES
            or not isinstance(info, dict)
            or not isinstance(rows, list)
        ):
            raise CompanionError(Message("refusal.export_incomplete"))
        if len(rows) > MAX_IMPORT_EVENTS:
            raise CompanionError(
                Message("refusal.export_too_many", n=len(rows), most=MAX_IMPORT_EVENTS)
            )
        if _depth(data) > MAX_EXPORT_DEPTH:
            raise CompanionError(Message("refusal.export_too_deep"))
        engine = registry.game(game).engine
        events, times, ids = [], [], []
        if rows and isinstance(rows[0], dict):  # its names as written, before the engine's
            for name in _raw_names(rows[0].get("event")):
                _check_printable(name, "field.player_name")
        first_with: dict[str, int] = {}  # request id -> the event that first gave it
        for n, row in enumerate(rows, 1):
            rid = row.get("request_id") if isinstance(row, dict) else None
            rid = None if rid is None else str(rid)[:MAX_REQUEST_ID_LENGTH]
            if rid is not None and rid in first_with:  # two changes cannot be one request
                raise CompanionError(
                    Message("refusal.export_duplicate_request", n=n, first=first_with[rid])
                )
            first_with.setdefault(rid, n)
            ids.append(rid)
        try:
            for n, row in enumerate(rows, 1):
                if not isinstance(row, dict) or row.get("seq") != n:
                    raise CompanionError(Message("refusal.export_event_order", n=n))
                events.append(engine.Event.from_dict(row.get("event")))  # IllegalEvent
                times.append(_timestamp(row.get("created_at")))
            if not events:
                raise CompanionError(Message("refusal.export_no_event"))
            started = engine.apply(None, events[0])  # the set-up, checked as a new match's
            for name in _listed_names(started):
                _check_printable(name, "field.player_name")
            state = engine.replay(events)
        except RecursionError:  # a rule text or a value nested beyond what a program writes
            raise CompanionError(Message("refusal.export_nested")) from None
        except (OverflowError, ValueError, TypeError) as exc:
            # the refusal met inside (the engine's, a rule file's) said in the page's language
            # where the short English one is the whole of it
            detail = _short(exc)
            if isinstance(exc, CompanionError) and str(exc.sentence) == detail:
                detail = exc.sentence
            raise CompanionError(Message("refusal.export_value", detail=detail)) from None
        title = _title(info.get("title") if isinstance(info.get("title"), str) else None)
        listing = registry.game(game).listing(started)
        fields = [
            title,
            json.dumps(listing["players"], ensure_ascii=False),
            listing["rules"],
            listing["rounds"],
            listing["oya"],
            json.dumps(listing["options"], ensure_ascii=False, sort_keys=True),
            _timestamp(info.get("created_at"), times[0]),
            len(events),
            int(state.finished),
            game,
            int(info.get("archived") is True),
            _standing_json(state, len(events)),
        ]
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO matches (title, players, rules, rounds, oya, options, created_at,"
                " last_seq, finished, game, archived, standing)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                fields,
            )
            match_id = cursor.lastrowid
            conn.executemany(
                "INSERT INTO events (match_id, seq, type, event, created_at, request_id)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (match_id, n, e.type, _event_json(e), when, rid)
                    for n, (e, when, rid) in enumerate(zip(events, times, ids, strict=True), 1)
                ],
            )
        self._cache[match_id] = (len(events), state)
        self._games[match_id] = game
        return match_id

    def backup(self, target: str | os.PathLike) -> Path:
        """A consistent copy of the whole database in a new file (SQLite's online backup:
        safe while the server is running)."""
        path = Path(target).expanduser()
        try:
            if path.exists():
                raise StoreError(f"{path} already exists; give the backup a new file name.")
            path.parent.mkdir(parents=True, exist_ok=True)
            copy = sqlite3.connect(str(path))
        except OSError as exc:
            raise StoreError(f"Cannot write the backup {path}: {exc.strerror}.") from None
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot write the backup {path}: {exc}.") from None
        try:
            with self._lock:
                self.db.conn.backup(copy)
        except sqlite3.DatabaseError as exc:
            copy.close()
            path.unlink(missing_ok=True)  # never leave half a backup that looks whole
            if _is_write_failure(exc):  # the target's disk: full, read-only, failing
                raise StoreError(f"Cannot write the backup {path}: {_short(exc)}.") from None
            where = self.path or "the database"
            raise StoreError(
                f"{where} cannot be read ({_short(exc)}): it is damaged; restore a backup."
            ) from None
        finally:
            copy.close()
        return path

    # -- events -------------------------------------------------------------------------------

    def last_seq(self, match_id: int | str) -> int:
        match_id = _match_id(match_id)
        with self._reading():
            row = self.db.execute(
                "SELECT last_seq FROM matches WHERE id = ?", [match_id]
            ).fetchone()
        if row is None:
            raise UnknownMatchError(Message("refusal.no_such_match", n=match_id))
        return row[0]

    def events(self, match_id: int | str, after_seq: int = 0) -> list[StoredEvent]:
        """The match's log in order (only the events after ``after_seq`` if given).

        Parsed rows are kept per match and only the new ones are read: the log is append-only
        with seqs 1..N, so the cache can only grow (every page view of the log reads this)."""
        match_id = _match_id(match_id)
        with self._reading():
            last = self.last_seq(match_id)  # UnknownMatchError
            cached = self._events.get(match_id, [])
            if len(cached) > last:  # pragma: no cover - only if the file was rewritten
                cached = []
            if len(cached) < last:
                rows = self.db.execute(
                    "SELECT seq, event, created_at, request_id FROM events"
                    " WHERE match_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
                    [match_id, len(cached), last],
                ).fetchall()
                engine = self._engine(match_id)
                cached = cached + [
                    StoredEvent(seq, _parse_event(match_id, seq, text, engine), created, rid)
                    for seq, text, created, rid in rows
                ]
                self._events[match_id] = cached
            return cached[max(0, int(after_seq)) :]

    def state(self, match_id: int | str) -> MatchState:
        """The engine's replay of the match (cached by last seq, extended incrementally)."""
        match_id = _match_id(match_id)
        with self._reading():
            last = self.last_seq(match_id)
            engine = self._engine(match_id)
            cached = self._cache.get(match_id)
            if cached and cached[0] == last:
                return cached[1]
            if cached and cached[0] < last:
                state = cached[1]
                for stored in self.events(match_id, after_seq=cached[0]):
                    state = engine.apply(state, stored.event)
            else:
                state = engine.replay([s.event for s in self.events(match_id)])
            self._cache[match_id] = (last, state)
            return state

    def append(
        self,
        match_id: int | str,
        event: Event | dict,
        expected_seq: int | None = None,
        request_id: str | None = None,
    ) -> StoredEvent:
        """Validate ``event`` with the engine and add it to the log, all in one transaction.

        A request id seen before returns the event first recorded with it and writes nothing
        (a resent form); ``expected_seq`` other than the current last seq raises
        StaleEventError; an event the engine refuses raises its IllegalEvent. In every error
        case nothing is written.
        """
        match_id = _match_id(match_id)
        engine = self._engine(match_id)  # UnknownMatchError for an unknown match
        if isinstance(event, dict):
            event = engine.Event.from_dict(event)
        if request_id is not None:
            request_id = str(request_id)
            if not request_id or len(request_id) > MAX_REQUEST_ID_LENGTH:
                raise CompanionError(
                    Message("refusal.request_id_length", most=MAX_REQUEST_ID_LENGTH)
                )
        if expected_seq is not None:
            try:
                expected_seq = int(expected_seq)
            except (TypeError, ValueError):
                raise CompanionError(Message("refusal.expected_seq")) from None
        if registry.is_start(event.type):
            raise CompanionError(Message("refusal.started_once"))

        with self._lock:
            stored = self._append(match_id, [event], expected_seq, request_id)
        self._appended(match_id, stored[-1].seq)
        return stored[0]

    def append_many(
        self,
        match_id: int | str,
        events: list,
        expected_seq: int | None = None,
        request_id: str | None = None,
    ) -> list[StoredEvent]:
        """Append several events as one change (a turn's two captures): all are recorded, in
        order, or none. ``request_id`` names the whole change: resent, it records nothing
        and returns the events first recorded with it."""
        engine = self._engine(_match_id(match_id))  # UnknownMatchError for an unknown match
        events = [engine.Event.from_dict(e) for e in events]
        if not events:
            raise CompanionError(Message("refusal.nothing_to_record"))
        if any(registry.is_start(e.type) for e in events):
            raise CompanionError(Message("refusal.started_once"))
        if len(events) == 1:
            return [self.append(match_id, events[0], expected_seq, request_id)]
        match_id = _match_id(match_id)
        if expected_seq is not None:
            try:
                expected_seq = int(expected_seq)
            except (TypeError, ValueError):
                raise CompanionError(Message("refusal.expected_seq")) from None
        if request_id is not None and not 1 <= len(str(request_id)) <= MAX_REQUEST_ID_LENGTH - 4:
            raise CompanionError(
                Message("refusal.request_id_length", most=MAX_REQUEST_ID_LENGTH - 4)
            )
        with self._lock:
            stored = self._append(match_id, events, expected_seq, request_id)
        self._appended(match_id, stored[-1].seq)
        return stored

    def add_listener(self, listener) -> None:
        """Call the bound method ``listener(match_id, last_seq)`` after every append made
        through this store (outside its lock). Held weakly: it goes with its object. Appends
        made by other processes are not seen here; read ``last_seq`` for those."""
        with self._lock:
            self._listeners.append(weakref.WeakMethod(listener))

    def _appended(self, match_id: int, last_seq: int) -> None:
        if not self._listeners:
            return
        with self._lock:
            self._listeners = [ref for ref in self._listeners if ref() is not None]
            listeners = [ref() for ref in self._listeners]
        for listener in listeners:
            if listener is not None:
                try:
                    listener(match_id, last_seq)
                except Exception:  # noqa: BLE001 - a follower's trouble must not fail a write
                    pass

    def _append(self, match_id, events, expected_seq, request_id) -> list[StoredEvent]:
        engine = self._engine(match_id)

        # One request id per row (a UNIQUE index): the change's id, then "#2", "#3"...
        ids = [
            None if request_id is None else (request_id if k == 0 else f"{request_id}#{k + 1}")
            for k in range(len(events))
        ]
        with self._write() as conn:
            row = conn.execute("SELECT last_seq FROM matches WHERE id = ?", [match_id]).fetchone()
            if row is None:
                raise UnknownMatchError(Message("refusal.no_such_match", n=match_id))
            last = row[0]
            if request_id is not None:
                first = conn.execute(
                    "SELECT seq, event, created_at, request_id FROM events"
                    " WHERE match_id = ? AND request_id = ?",
                    [match_id, request_id],
                ).fetchone()
                if first is not None:
                    seq, text, created, rid = first
                    done = [
                        StoredEvent(seq, _parse_event(match_id, seq, text, engine), created, rid)
                    ]
                    for later in ids[1:]:
                        row = conn.execute(
                            "SELECT seq, event, created_at FROM events"
                            " WHERE match_id = ? AND request_id = ?",
                            [match_id, later],
                        ).fetchone()
                        if row is not None:
                            done.append(
                                StoredEvent(
                                    row[0],
                                    _parse_event(match_id, row[0], row[1], engine),
                                    row[2],
                                    later,
                                )
                            )
                    return done
            if expected_seq is not None and expected_seq != last:
                raise StaleEventError(
                    Message("refusal.stale"),
                    expected_seq=expected_seq,
                    last_seq=last,
                )
            new_state = self._state_in_transaction(conn, match_id, last)
            created = _now()
            stored = []
            seq = last
            for event, rid in zip(events, ids, strict=True):
                # IllegalEvent -> rollback: nothing of the change is written
                new_state = engine.apply(new_state, event)
                if event.type != "undo" and new_state.log:
                    event = new_state.log[-1]  # as the engine read it: "moon" -> "08-1"
                seq += 1
                conn.execute(
                    "INSERT INTO events (match_id, seq, type, event, created_at, request_id)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [match_id, seq, event.type, _event_json(event), created, rid],
                )
                stored.append(StoredEvent(seq, event, created, rid))
            conn.execute(
                "UPDATE matches SET last_seq = ?, finished = ?, standing = ? WHERE id = ?",
                [seq, int(new_state.finished), _standing_json(new_state, seq), match_id],
            )
        self._cache[match_id] = (seq, new_state)
        return stored

    def _state_in_transaction(self, conn, match_id: int, last: int) -> MatchState:
        """The replay up to ``last``, read inside the append's transaction."""
        engine = self._engine(match_id)
        cached = self._cache.get(match_id)
        if cached and cached[0] == last:
            return cached[1]
        start, state = cached if cached and cached[0] < last else (0, None)
        rows = conn.execute(
            "SELECT seq, event FROM events WHERE match_id = ? AND seq > ? ORDER BY seq",
            [match_id, start],
        ).fetchall()
        events = [_parse_event(match_id, seq, text, engine) for seq, text in rows]
        if state is None:
            return engine.replay(events)
        for event in events:
            state = engine.apply(state, event)
        return state


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def _parse_event(match_id: int, seq: int, text: str, engine=None) -> Event:
    """A stored row back into an engine event; a row damaged outside the app (or written by a
    newer version) is a StoreError naming it, not a stack trace."""
    if engine is None:
        from companion.game import engine
    try:
        return engine.Event.from_dict(json.loads(text))
    except (ValueError, TypeError, KeyError, CompanionError) as exc:
        raise StoreError(
            f"Match {match_id}'s log cannot be read at event {seq}: the row is damaged "
            f"or comes from a newer version ({exc})."
        ) from None


MAX_MATCH_ID = 2**63 - 1  # SQLite's largest integer


def _short(exc: BaseException) -> str:
    return str(exc).split("\n")[0][:120] or type(exc).__name__


def _match_id(value: int | str) -> int:
    text = str(value).strip()
    shown = text if len(text) <= 24 else text[:20] + "..."
    if not (text.isascii() and text.isdigit()):
        raise UnknownMatchError(Message("refusal.not_a_match_number", value=repr(shown)))
    if len(text) > 19 or not 1 <= int(text) <= MAX_MATCH_ID:
        raise UnknownMatchError(Message("refusal.no_such_match", n=shown))
    return int(text)


def load_export(raw: bytes | str) -> dict:
    """The data of an export file (``companion export``, the page's Export button), refused
    with one sentence when it cannot be one: over ``MAX_EXPORT_BYTES``, not UTF-8, not JSON
    (NaN, Infinity and numbers of thousands of digits are not JSON an export holds), or nested
    too deeply. ``MatchStore.import_match`` then checks what it says."""
    if len(raw) > MAX_EXPORT_BYTES:
        raise CompanionError(
            f"The file is larger than an export can be ({MAX_EXPORT_BYTES // (1024 * 1024)} MB)."
        )
    not_export = "The file is not a JSON export of a match."

    def finite(text: str) -> float:
        number = float(text)
        if number != number or number in (float("inf"), float("-inf")):
            raise ValueError(text)
        return number

    def refuse_constant(text: str):
        raise ValueError(text)

    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text, parse_float=finite, parse_constant=refuse_constant)
    except (UnicodeError, ValueError, RecursionError):
        raise CompanionError(not_export) from None
    if not isinstance(data, dict):
        raise CompanionError(not_export)
    return data


# Characters a name or title never holds: control characters (NUL, escape, bell...), lone
# surrogates, and the bidirectional overrides that make text read backwards. Whitespace
# (newline, tab) is not refused: it is collapsed into one space.
_BIDI_CONTROLS = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _check_players(players) -> None:
    """A new match's players: a list of printable names (its engine checks how many)."""
    if isinstance(players, str) or not isinstance(players, list | tuple):
        raise CompanionError(Message("refusal.players_list"))
    for name in players:
        _check_printable(name, "field.player_name")


def _check_printable(text, what: str) -> None:
    """Refuse control characters in a name or title (``what``: its message id, "field.title")."""
    if not isinstance(text, str):
        return  # the engine says what a name must be
    for ch in text:
        if ch.isspace():
            continue  # newlines and tabs are collapsed into one space, as the engine does
        if unicodedata.category(ch) in ("Cc", "Cs") or ch in _BIDI_CONTROLS:
            raise CompanionError(
                Message(
                    "refusal.control_characters",
                    what=Message(what),
                    char=ascii(ch),
                    text=ascii(text[:24]),
                )
            )


def _title(title) -> str | None:
    """A match title as stored: spaces collapsed, None when blank; refused when too long or
    holding control characters."""
    _check_printable(str(title or ""), "field.title")
    title = " ".join(str(title or "").split()) or None
    if title and len(title) > MAX_TITLE_LENGTH:
        raise CompanionError(Message("refusal.title_length", most=MAX_TITLE_LENGTH))
    return title


EARLIEST_YEAR = 2000  # no match was recorded by this program before


def _timestamp(value, otherwise: str | None = None) -> str:
    """An export's time (of an event, of the match) as kept: a date and time this program
    could have written, from ``EARLIEST_YEAR`` to tomorrow; else ``otherwise`` (the match's
    first event's time) or now. A number, a year 9999 or text that is no date is not a time
    to list a match by."""
    text = value if isinstance(value, str) else ""
    try:
        when = datetime.datetime.fromisoformat(text) if 0 < len(text) <= 40 else None
    except ValueError:
        when = None
    if when is not None:
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.timezone.utc)
        latest = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
        if when.year >= EARLIEST_YEAR and when <= latest and text.isprintable():
            return text
    return otherwise if otherwise is not None else _now()


def _raw_names(started) -> list[str]:
    """Every name an export's start event writes (its players, Oya, first player, teams and
    their members), as written: a name is checked before the engine reads it."""
    if not isinstance(started, dict):
        return []
    names: list = []
    for key in ("players", "oya", "first"):
        value = started.get(key)
        names += value if isinstance(value, list) else [value]
    teams = started.get("teams")
    if isinstance(teams, dict):
        for team, members in teams.items():
            names += [team, *(members if isinstance(members, list) else [])]
    return [n for n in names if isinstance(n, str)]


def _depth(value, limit: int = MAX_EXPORT_DEPTH) -> int:
    """How deeply lists and objects nest in ``value`` (counted without recursion; stops
    counting past ``limit``)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth > limit:
                return depth
            children = item.values() if isinstance(item, dict) else item
            todo.extend((child, depth + 1) for child in children)
    return deepest


def _listed_names(started) -> list[str]:
    """Every name a started match shows: its sides and, in teams, their members."""
    names = list(getattr(started, "players", ()))
    for members in (getattr(started, "teams", None) or {}).values():
        names += list(members)
    return [n for n in names if isinstance(n, str)]


def _cannot_write(where, exc: BaseException) -> str:
    text = str(exc).lower()
    if "full" in text:
        why = "the disk is full"
    elif "unable to open" in text or "readonly" in text or "read-only" in text:
        why = "its file or folder is read-only for this user"
    else:
        why = _short(exc)
    return (
        f"Cannot use the database {where}: {why} ({_short(exc)}); "
        "free some space or give a writable place with --db or COMPANION_DB."
    )


# SQLite's shared-memory index: every connection to the database holds a read lock on this
# byte of ``NAME-shm`` while it is open (os_unix.c, UNIX_SHM_DMS)
_SHM_DMS_BYTE = 128


def _held_elsewhere(path: Path) -> bool:
    """Whether another process has the database open (a read lock on its index's byte that
    every connection holds); True where this cannot be known (not Linux, no index file)."""
    if not sys.platform.startswith("linux"):
        return True
    import fcntl
    import struct

    try:
        handle = os.open(f"{path}-shm", os.O_RDWR)
    except OSError:
        return True
    try:
        # struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid (and padding)
        asked = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, _SHM_DMS_BYTE, 1, 0)
        found = fcntl.fcntl(handle, fcntl.F_GETLK, asked)
        return struct.unpack("hhqqi4x", found)[0] != fcntl.F_UNLCK
    except OSError:
        return True
    finally:
        os.close(handle)


def _read_only_file(path: Path) -> bool:
    """Whether ``path`` is a database this user may read but not change: the file, or the
    folder SQLite keeps its journal in, read-only (a backup on a CD, a locked USB stick)."""
    try:
        if not path.is_file():
            return False
    except OSError:
        return False
    folder = path.parent
    return not os.access(path, os.W_OK) or not os.access(folder, os.W_OK | os.X_OK)


def _is_write_failure(exc: BaseException) -> bool:
    """Whether SQLite failed to write (a full disk, a read-only file or folder, an I/O error)
    rather than found the data damaged."""
    text = str(exc).lower()
    return any(
        words in text
        for words in ("disk is full", "readonly", "read-only", "disk i/o", "unable to open")
    )


def _event_json(event) -> str:
    return json.dumps(event.to_dict(), ensure_ascii=False, sort_keys=True)


def standing_of(state) -> dict:
    """A match's score as the match list shows it: each side with its members and total, the
    round it is at and the rounds planned (both games' states give these)."""
    return {
        "sides": [
            [side, list(state.members(side)), state.totals.get(side, 0)] for side in state.players
        ],
        "round": state.round_number,
        "rounds": state.rounds_planned,
    }


def _standing_json(state, seq: int) -> str | None:
    try:
        return json.dumps({"seq": seq, **standing_of(state)}, ensure_ascii=False)
    except (AttributeError, TypeError, ValueError):  # a state that cannot say it: replayed
        return None


def _kept_standing(text) -> dict | None:
    """The kept score of a row, or None where it is missing or not what this version writes
    (the list then replays that match)."""
    try:
        kept = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(kept, dict) or not isinstance(kept.get("sides"), list):
        return None
    return kept


def _match_info(row: dict) -> MatchInfo:
    return MatchInfo(
        id=row["id"],
        title=row["title"],
        players=json.loads(row["players"]),
        rules=row["rules"],
        rounds=row["rounds"],
        oya=row["oya"],
        options=json.loads(row["options"] or "{}"),
        created_at=row["created_at"],
        last_seq=row["last_seq"],
        finished=bool(row["finished"]),
        game=row.get("game") or registry.KOIKOI.name,
        archived=bool(row.get("archived")),
        standing=_kept_standing(row.get("standing")),
    )

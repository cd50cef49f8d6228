"""The tally's live updates: Server-Sent Events and a long-poll (the routes are documented in
``companion/web/__init__``).

Each app has one watcher holding the last seq of the matches being followed. An append made
through the app's store (the event endpoint, the camera loop, ``demo``'s script in this process)
tells it at once, from the appending thread (``MatchStore.add_listener``): the followers wake
with no polling delay and no query. For appends made by other processes (the CLI, another server
on the same database) a watcher thread also looks at the store every ``CHECK_INTERVAL`` (one
query per followed match, however many followers); ``notify()`` makes it look at once.
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from collections import Counter

from flask import Blueprint, Response, current_app, jsonify, request, stream_with_context

from companion.web.errors import WebError
from companion.web.forms import whole_number
from companion.web.pages import store

bp = Blueprint("live", __name__, url_prefix="/matches/<int:match_id>")

CHECK_INTERVAL = 0.1  # seconds between looks for other processes' appends: inside the 0.5 s promise
KEEPALIVE_SECONDS = 10.0
DEFAULT_STREAM_SECONDS = 300
MAX_STREAM_SECONDS = 3600
MAX_POLL_SECONDS = 60

_watchers: weakref.WeakSet = weakref.WeakSet()


class SeqWatcher:
    """The last seq of each followed match, shared by all of an app's followers."""

    def __init__(self, match_store):
        self.store = match_store
        self.changed = threading.Condition()
        self.kick = threading.Event()
        self.seqs: dict[int, int] = {}
        self.followers: Counter = Counter()
        self.thread: threading.Thread | None = None
        _watchers.add(self)
        match_store.add_listener(self.appended)

    def appended(self, match_id: int, seq: int) -> None:
        """The store's word that ``match_id`` now ends at ``seq``: wake its followers now."""
        with self.changed:
            if match_id in self.followers and seq > self.seqs.get(match_id, 0):
                self.seqs[match_id] = seq
                self.changed.notify_all()

    def follow(self, match_id: int) -> int:
        seq = self.store.last_seq(match_id)  # UnknownMatchError before anything starts
        with self.changed:
            self.followers[match_id] += 1
            self.seqs[match_id] = max(seq, self.seqs.get(match_id, 0))
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="seq-watcher", daemon=True)
                self.thread.start()
            return self.seqs[match_id]

    def unfollow(self, match_id: int) -> None:
        with self.changed:
            self.followers[match_id] -= 1
            if self.followers[match_id] <= 0:
                del self.followers[match_id]

    def wait(self, match_id: int, last: int, timeout: float) -> int:
        """The match's seq once it is past ``last``, or ``last`` after ``timeout``."""
        with self.changed:
            self.changed.wait_for(lambda: self.seqs.get(match_id, last) > last, timeout)
            return max(last, self.seqs.get(match_id, last))

    def _run(self) -> None:
        while True:
            self.kick.wait(CHECK_INTERVAL)
            self.kick.clear()
            with self.changed:
                followed = list(self.followers)
                if not followed:
                    self.thread = None  # started again by the next follower
                    return
            fresh = {}
            for match_id in followed:
                try:
                    fresh[match_id] = self.store.last_seq(match_id)
                except Exception:  # noqa: BLE001 - a closed store: skip it quietly
                    continue
            with self.changed:
                grown = False
                for match_id, seq in fresh.items():
                    if seq > self.seqs.get(match_id, 0):
                        self.seqs[match_id] = seq
                        grown = True
                if grown:
                    self.changed.notify_all()


def notify() -> None:
    """Make every watcher look at the store now (called after an append made by this app)."""
    for watcher in list(_watchers):
        watcher.kick.set()


def watcher() -> SeqWatcher:
    ext = current_app.extensions
    if "companion_watcher" not in ext:
        with _create_lock:
            ext.setdefault("companion_watcher", SeqWatcher(store()))
    return ext["companion_watcher"]


_create_lock = threading.Lock()


def _seconds_arg(name: str, default: float, most: float) -> float:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        if not raw.isascii():  # float() reads "٣" as 3: a number is ASCII digits here
            raise ValueError(raw)
        value = float(raw)
    except ValueError:
        raise WebError(f"{name} must be a number of seconds.", 400) from None
    if not 0 <= value <= most:
        raise WebError(f"{name} must be between 0 and {most:g} seconds.", 400)
    return value


def _update(match_id: int, seq: int, board: str | None = None) -> str:
    data = {"match": match_id, "seq": seq}
    if board is not None:
        data["board"] = board
    return f"event: update\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


_MESSAGES_KEPT = 32  # updates with their board kept per app (as many as boards rendered)
_messages_lock = threading.Lock()


def _update_with_board(match_id: int, seq: int) -> tuple[int, str]:
    """The update for ``seq`` (or later) carrying the board, encoded once and sent as is to
    every follower that sees the same board (its marks filled in by the page itself); the
    update alone when the board cannot be rendered here (the follower then asks for it)."""
    from companion import CompanionError
    from companion.web.match import shared_board

    try:
        board_seq, key, html = shared_board(match_id, seq_hint=seq)
    except CompanionError:
        return seq, _update(match_id, seq)
    # (match, seq, language, may change...) -> the update carrying that board
    messages = current_app.extensions.setdefault("companion_live_messages", {})
    message = messages.get(key)
    if message is None:
        message = _update(match_id, board_seq, html)
        with _messages_lock:
            messages[key] = message
            while len(messages) > _MESSAGES_KEPT:
                messages.pop(next(iter(messages)), None)
    return max(seq, board_seq), message


@bp.get("/live")
def live(match_id: int):
    max_seconds = _seconds_arg("max_seconds", DEFAULT_STREAM_SECONDS, MAX_STREAM_SECONDS)
    # ?board=1: each update also carries the board fragment (the page's own follower): the
    # tablets then need no request of their own after an event.
    with_board = request.args.get("board") in ("1", "true", "yes")
    w = watcher()
    with_board = with_board and store().game(match_id) == "koikoi"  # the board it renders
    seq = w.follow(match_id)  # 404 before the stream starts

    def update(now_seq: int) -> tuple[int, str]:
        if with_board:
            return _update_with_board(match_id, now_seq)
        return now_seq, _update(match_id, now_seq)

    def stream():
        try:
            last, message = update(seq)
            yield "retry: 1000\n" + message
            deadline = time.monotonic() + max_seconds
            while (left := deadline - time.monotonic()) > 0:
                now_seq = w.wait(match_id, last, min(KEEPALIVE_SECONDS, left))
                if now_seq > last:
                    last, message = update(now_seq)
                    yield message
                elif deadline - time.monotonic() > 0:
                    yield ": keep-alive\n\n"
        finally:
            w.unfollow(match_id)

    response = Response(stream_with_context(stream()), mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"
    return response


@bp.get("/seq")
def seq(match_id: int):
    after = request.args.get("after")
    if after is None:
        current = store().last_seq(match_id)
    else:
        after_seq = whole_number(after, digits=18)  # ASCII digits only: not "٣"
        if after_seq is None:
            raise WebError("after must be an event number.", 400)
        timeout = _seconds_arg("timeout", 20, MAX_POLL_SECONDS)
        w = watcher()
        current = w.follow(match_id)
        try:
            deadline = time.monotonic() + timeout
            while current <= after_seq and (left := deadline - time.monotonic()) > 0:
                current = w.wait(match_id, current, left)
        finally:
            w.unfollow(match_id)
    response = jsonify({"match": match_id, "seq": current})
    response.headers["Cache-Control"] = "no-cache"
    return response

"""The tally's live updates: Server-Sent Events and a long-poll (the routes are documented in
``companion/web/__init__``).

The followers wait on the app's ``seq_watcher.SeqWatcher``; each update is encoded once per
seq (and with ``?board=1`` once per board) and sent as is to every follower. Under the
project's server a follower is parked in its stream hub (``companion.web.stream_hub``: no
thread each, and a budget per address for those without the join code); under any other WSGI
server the same follower is iterated, waiting in its thread.
"""

from __future__ import annotations

import json
import threading
import time

from flask import Blueprint, Response, current_app, jsonify, request, stream_with_context
from flask.globals import request_ctx
from flask_babel import gettext as _

from companion import CompanionError
from companion.web.errors import WebError
from companion.web.forms import seconds_arg, whole_number
from companion.web.games import of_match
from companion.web.match import shared_board
from companion.web.pages import store
from companion.web.seq_watcher import watcher
from companion.web.stream_hub import HUB_KEY, PARKED_KEY

bp = Blueprint("live", __name__, url_prefix="/matches/<int:match_id>")

KEEPALIVE_SECONDS = 10.0
DEFAULT_STREAM_SECONDS = 300
MAX_STREAM_SECONDS = 3600
MAX_POLL_SECONDS = 60


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


class _Follower:
    """What a live route waits for, written so that a thread can wait for it (``blocking``) and
    an event loop can drive it (``companion.web.stream_hub``)."""

    def __init__(self, match_id: int, seconds: float, trusted: bool):
        self.watcher = watcher()
        self.match_id = match_id
        self.last = self.watcher.follow(match_id)  # 404 before anything starts
        self.trusted = trusted
        self.deadline = time.monotonic() + seconds
        self.reservation = None
        self._context = None
        self._closed = False

    def park(self, hub, address: str) -> None:
        """Leave this follower to the server's hub (``PARKED_KEY``), within its budget."""
        self.reservation = hub.reserve(address, self.trusted)
        if self.reservation is None:
            self.close()
            if current_app.config.get("JOIN_CODE") and not self.trusted:
                raise WebError(
                    _(
                        "Too many live pages are open without the join code; enter it, or "
                        "close some and reload."
                    ),
                    429,
                )
            raise WebError(_("Too many live pages are open; close some and reload."), 429)
        self.watcher.add_listener(hub.grown)
        # The hub's thread renders with this request's language and rights.
        self._context = request_ctx.copy()
        request.environ[PARKED_KEY] = self

    def in_context(self, action):
        if self._context is None:  # in the request's own thread
            return action()
        with self._context:
            return action()

    def next_due(self) -> float:
        return self.deadline

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.watcher.unfollow(self.match_id)
        if self.reservation is not None:
            self.reservation.release()

    def blocking(self):
        """The body as a thread waiting for each change writes it (any WSGI server)."""
        try:
            data, done = self.start()
            if data:
                yield data
            while not done:
                left = self.next_due() - time.monotonic()
                seq = self.watcher.wait(self.match_id, self.last, max(0.0, left))
                if seq > self.last:
                    data, done = self.changed(seq)
                else:
                    data, done = self.due(time.monotonic())
                if data:
                    yield data
        finally:
            self.close()


class LiveFollower(_Follower):
    """An event stream: the first update at once, then each new seq, a keep-alive comment
    every ``KEEPALIVE_SECONDS`` and the end after ``max_seconds``."""

    def __init__(self, match_id, seconds, trusted, with_board: bool):
        super().__init__(match_id, seconds, trusted)
        self.with_board = with_board
        self.next_beat = time.monotonic() + KEEPALIVE_SECONDS

    def _message(self, seq: int) -> bytes:
        if self.with_board:
            self.last, message = self.in_context(lambda: _update_with_board(self.match_id, seq))
        else:
            self.last, message = seq, _update(self.match_id, seq)
        return message.encode("utf-8")

    def start(self) -> tuple[bytes, bool]:
        # The match may have grown between the request and now: the newest seq known.
        seq = max(self.last, self.watcher.seqs.get(self.match_id, self.last))
        return b"retry: 1000\n" + self._message(seq), False

    def changed(self, seq: int) -> tuple[bytes, bool]:
        if seq <= self.last:
            return b"", False
        self.next_beat = time.monotonic() + KEEPALIVE_SECONDS
        return self._message(seq), False

    def due(self, now: float) -> tuple[bytes, bool]:
        if now >= self.deadline:
            return b"", True
        if now >= self.next_beat:
            self.next_beat = now + KEEPALIVE_SECONDS
            return b": keep-alive\n\n", False
        return b"", False

    def next_due(self) -> float:
        return min(self.deadline, self.next_beat)


class SeqPoll(_Follower):
    """A long-poll: the match's seq as soon as it is past ``after``, or after ``timeout``."""

    def __init__(self, match_id, seconds, trusted, after: int):
        super().__init__(match_id, seconds, trusted)
        self.after = after

    def _answer(self, seq: int) -> bytes:
        body = {"match": self.match_id, "seq": seq}
        return json.dumps(body, separators=(",", ":")).encode("utf-8") + b"\n"  # as jsonify

    def start(self) -> tuple[bytes, bool]:
        # The match may have grown between the request and now: answered at once then.
        return self.changed(max(self.last, self.watcher.seqs.get(self.match_id, self.last)))

    def changed(self, seq: int) -> tuple[bytes, bool]:
        self.last = max(self.last, seq)
        return (self._answer(self.last), True) if self.last > self.after else (b"", False)

    def due(self, now: float) -> tuple[bytes, bool]:
        if self.last > self.after:
            return self._answer(self.last), True
        if now >= self.deadline:
            return self._answer(self.last), True
        return b"", False



def _trusted() -> bool:
    """Whether this request comes from a tablet the server trusts with its streams: one that
    entered the join code, or any on a server only this machine can reach."""
    from companion.web.auth import joined

    if current_app.config.get("JOIN_CODE"):
        return joined()
    return bool(current_app.config.get("LOOPBACK_ONLY"))


def _respond(follower: _Follower, mimetype: str) -> Response:
    hub = request.environ.get(HUB_KEY)
    if hub is not None and request.method == "GET":
        follower.park(hub, request.remote_addr or "?")
        body = iter(())  # the hub writes it
        response = Response(body, mimetype=mimetype)
    else:
        response = Response(stream_with_context(follower.blocking()), mimetype=mimetype)
        response.call_on_close(follower.close)  # also when it is never iterated (HEAD)
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"
    return response


@bp.get("/live")
def live(match_id: int):
    max_seconds = seconds_arg("max_seconds", DEFAULT_STREAM_SECONDS, MAX_STREAM_SECONDS)
    # ?board=1: each update also carries the board fragment (the page's own follower): the
    # tablets then need no request of their own after an event.
    with_board = request.args.get("board") in ("1", "true", "yes")
    with_board = with_board and of_match(match_id).live_board  # a board it renders
    follower = LiveFollower(match_id, max_seconds, _trusted(), with_board)  # 404 first
    return _respond(follower, "text/event-stream")


@bp.get("/seq")
def seq(match_id: int):
    after = request.args.get("after")
    if after is None:
        current = store().last_seq(match_id)
        response = jsonify({"match": match_id, "seq": current})
        response.headers["Cache-Control"] = "no-cache"
        return response
    after_seq = whole_number(after, digits=18)  # ASCII digits only: not "٣"
    if after_seq is None:
        raise WebError(_("%(name)s must be an event number.", name="after"), 400)
    timeout = seconds_arg("timeout", 20, MAX_POLL_SECONDS)
    poll = SeqPoll(match_id, timeout, _trusted(), after_seq)
    if poll.last > after_seq or timeout <= 0:  # nothing to wait for: answered at once
        poll.close()
        response = jsonify({"match": match_id, "seq": poll.last})
        response.headers["Cache-Control"] = "no-cache"
        return response
    return _respond(poll, "application/json")

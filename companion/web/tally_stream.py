"""The tally's live updates: Server-Sent Events and a long-poll (the routes are documented in
``companion/web/__init__``).

The followers wait on the app's ``seq_watcher.SeqWatcher``; each update is encoded once per
seq (and with ``?board=1`` once per board) and sent as is to every follower.
"""

from __future__ import annotations

import json
import threading
import time

from flask import Blueprint, Response, current_app, jsonify, request, stream_with_context
from flask_babel import gettext as _

from companion import CompanionError
from companion.web.errors import WebError
from companion.web.forms import seconds_arg, whole_number
from companion.web.games import of_match
from companion.web.match import shared_board
from companion.web.pages import store
from companion.web.seq_watcher import watcher

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


@bp.get("/live")
def live(match_id: int):
    max_seconds = seconds_arg("max_seconds", DEFAULT_STREAM_SECONDS, MAX_STREAM_SECONDS)
    # ?board=1: each update also carries the board fragment (the page's own follower): the
    # tablets then need no request of their own after an event.
    with_board = request.args.get("board") in ("1", "true", "yes")
    w = watcher()
    with_board = with_board and of_match(match_id).live_board  # a board it renders
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
            raise WebError(_("%(name)s must be an event number.", name="after"), 400)
        timeout = seconds_arg("timeout", 20, MAX_POLL_SECONDS)
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

"""The tally's followers wait here for a match's log to grow.

Each app has one watcher holding the last seq of the matches being followed. An append made
through the app's store (the event endpoint, the camera loop, ``demo``'s script in this process)
tells it at once, from the appending thread (``MatchStore.add_listener``): the followers wake
with no polling delay and no query. For appends made by other processes (the CLI, another server
on the same database) a watcher thread also looks at the store every ``CHECK_INTERVAL`` (one
query per followed match, however many followers); ``notify()`` makes it look at once.
Listeners (``add_listener``: the server's stream hub) hear of every growth without waiting.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter

from flask import current_app

from companion.web.pages import store

CHECK_INTERVAL = 0.1  # seconds between looks for other processes' appends: inside the 0.5 s promise

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
        self.listeners: list = []  # called with (match_id, seq) when a followed match grows
        _watchers.add(self)
        match_store.add_listener(self.appended)

    def appended(self, match_id: int, seq: int) -> None:
        """The store's word that ``match_id`` now ends at ``seq``: wake its followers now."""
        with self.changed:
            if match_id not in self.followers or seq <= self.seqs.get(match_id, 0):
                return
            self.seqs[match_id] = seq
            self.changed.notify_all()
        self._tell(match_id, seq)

    def add_listener(self, listener) -> None:
        """Call ``listener(match_id, seq)`` whenever a followed match grows (from the thread
        that saw it: it must only take note)."""
        with self.changed:
            if listener not in self.listeners:
                self.listeners.append(listener)

    def _tell(self, match_id: int, seq: int) -> None:
        for listener in list(self.listeners):
            listener(match_id, seq)

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
                grown = []
                for match_id, seq in fresh.items():
                    if seq > self.seqs.get(match_id, 0):
                        self.seqs[match_id] = seq
                        grown.append((match_id, seq))
                if grown:
                    self.changed.notify_all()
            for match_id, seq in grown:
                self._tell(match_id, seq)


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

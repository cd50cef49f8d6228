"""What the web tests share: the app served for real (waitress) on a free loopback port, the
session's CSRF token as a page carries it, and the one sentence of an error answer."""

from __future__ import annotations

import html
import re
import threading

from companion.web.serving import serve

SERVER_START_SECONDS = 10


class ServedApp:
    """``app`` under the real server on a free port of 127.0.0.1, in a thread of its own; a
    context manager (``serve``'s other options, such as ``channel_timeout``, pass through)."""

    def __init__(self, app, **serve_options):
        self.servers = []
        self._bound = threading.Event()
        self.thread = threading.Thread(
            target=serve,
            args=(app, "127.0.0.1", 0),
            kwargs={"ready": self._ready, **serve_options},
            daemon=True,
        )

    def _ready(self, server) -> None:
        self.servers.append(server)
        self._bound.set()

    def __enter__(self):
        self.thread.start()
        assert self._bound.wait(SERVER_START_SECONDS), "the server did not start"
        self.port = self.servers[0].server_port
        self.base_url = f"http://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc):
        self.servers[0].shutdown()
        self.thread.join(timeout=5)


def csrf(client) -> str:
    """The session's CSRF token: every page carries it for htmx in the body's hx-headers."""
    page = client.get("/").get_data(as_text=True)
    return re.search(r'"X-CSRF-Token": "([^"]+)"', page).group(1)


def message(response) -> str:
    """The sentence an error answer says (in the page's alert, or an error page's title)."""
    text = response.get_data(as_text=True)
    found = re.search(r"<strong>(.*?)</strong>|<h1>(.*?)</h1>", text, re.S)
    return html.unescape((found.group(1) or found.group(2)).strip() if found else text)

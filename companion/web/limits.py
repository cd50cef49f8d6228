"""How large a request body may be, refused before it is read.

A body is refused with 413 as soon as its declared length (``Content-Length``) is over the
route's limit, before a byte of it is read: the server (waitress, ``LimitedChannel``) checks it
when the headers end, and the app (``init_app``) checks it again for any other WSGI server. A
chunked body, whose length is not declared, is cut off as soon as it passes the limit.

The limits are small on purpose: a form of the page is a few hundred bytes; an exported match
is about 150 bytes an event, so ``IMPORT_MAX_BYTES`` holds a match of some 25,000 events; a
teaching photo (``PHOTO_MAX_BYTES``) is one phone photo, sent alone. A larger
limit lets a stranger on the LAN make the server write that much to its temporary folder (often
on the database's disk) for each request.
"""

from __future__ import annotations

from flask import request
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.utilities import BadRequest, ServerNotImplemented
from waitress.utilities import RequestEntityTooLarge as _TooLarge

FORM_MAX_BYTES = 64 * 1024  # every form and query of the page
IMPORT_MAX_BYTES = 4 * 1024 * 1024  # an exported match (the file alone)
IMPORT_PATH = "/matches/import"
MULTIPART_OVERHEAD = 16 * 1024  # the form's boundaries and fields around the uploaded file
# One month's photo for teaching a deck (``companion.web.teach``): a phone's JPEG of 12 to 50
# megapixels is 3 to 15 MB. More lets a stranger make the server write more for each request.
PHOTO_MAX_BYTES = 16 * 1024 * 1024
PHOTO_PATH = "/decks/teach/photo"
# One picture of a phone used as the camera (``companion.web.phone``), about 10 a second: a
# 1280x720 JPEG is 100 to 400 KB; a 4K one at most about 2 MB.
PUSH_MAX_BYTES = 2 * 1024 * 1024
PUSH_PATH = "/live/push"
# POST routes taking more than a form, and how much (their file and the form around it)
UPLOAD_LIMITS = {
    IMPORT_PATH: IMPORT_MAX_BYTES + MULTIPART_OVERHEAD,
    PHOTO_PATH: PHOTO_MAX_BYTES + MULTIPART_OVERHEAD,
    PUSH_PATH: PUSH_MAX_BYTES,
}
# The server's own ceiling: no route takes more (waitress's ``max_request_body_size``).
SERVER_MAX_BYTES = max(UPLOAD_LIMITS.values())


def body_limit(method: str, path: str) -> int:
    """The largest body a request for ``path`` may carry, in bytes."""
    if method == "POST":
        return UPLOAD_LIMITS.get(path.rstrip("/"), FORM_MAX_BYTES)
    return FORM_MAX_BYTES


def too_large_sentence(limit: int) -> str:
    return f"The request is too large: this address takes at most {limit // 1024} KB."


def init_app(app) -> None:
    """The same limits when the app runs under another server (or Flask's test client)."""
    from werkzeug.exceptions import RequestEntityTooLarge

    app.config["MAX_CONTENT_LENGTH"] = FORM_MAX_BYTES

    @app.before_request
    def refuse_large_bodies():
        limit = body_limit(request.method, request.path)
        request.max_content_length = limit  # a chunked body: cut off while it is read
        if request.content_length is not None and request.content_length > limit:
            raise RequestEntityTooLarge()
        return None


# ---------------------------------------------------------------------------------------------
# waitress: refuse when the headers end
# ---------------------------------------------------------------------------------------------


class BodyTooLarge(_TooLarge):
    """waitress's 413, with a sentence instead of its own wording."""

    def to_response(self, ident=None):
        body = (self.body + "\r\n").encode("utf-8")
        return f"{self.code} {self.reason}", [("Content-Type", "text/plain; charset=utf-8")], body


class LimitedRequestParser(HTTPRequestParser):
    """waitress's parser, refusing a body over its route's limit as soon as it is declared
    (or, chunked, as soon as it passes the limit), so that it is never read."""

    def received(self, data):
        consumed = super().received(data)
        if self.completed and self.expect_continue:
            # No body to invite: waitress would answer "100 Continue", mark the request
            # incomplete again and wait for a body that never comes (until its timeout).
            self.expect_continue = False
        if isinstance(self.error, ServerNotImplemented):
            # A transfer coding other than chunked: the client's request is wrong (4xx), not
            # a failure of this server (waitress says 501).
            self.error = BadRequest("The request's Transfer-Encoding is not one this server reads.")
            return consumed
        if type(self.error) is _TooLarge:  # waitress's own ceiling: say it in our words
            self.error = None
        elif self.completed or not self.headers_finished or self.error is not None:
            return consumed
        limit = body_limit(self.command or "", self.path or "")
        if self.content_length > limit or self.body_bytes_received > limit:
            self.error = BodyTooLarge(too_large_sentence(limit))
            self.expect_continue = False  # never invite the body with "100 Continue"
            self.completed = True
            self.connection_close = True
        return consumed


class LimitedChannel(HTTPChannel):
    parser_class = LimitedRequestParser

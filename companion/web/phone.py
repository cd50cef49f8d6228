"""A phone's browser as the camera (``companion run --phone``): the page that takes the phone's
rear camera and the route its pictures are posted to.

    GET  /phone          the page: "Use this phone as the camera", what it sends with the
                         zones over it, the server's camera state; the screen kept awake
    POST /live/push      one picture (the body: a JPEG or PNG, about 10 a second from the page),
                         for the session's ``PushedFrameSource``; 204, or one sentence (4xx)

Only a device that entered the join code may send pictures (the CSRF token and the join code
are checked for every POST, ``companion.web.auth``); a picture is at most ``PUSH_MAX_BYTES``
(``companion.web.limits``), refused before it is read. A browser lends its camera only to a
secure page: on the LAN the server speaks https (``companion.web.tls``).
"""

from __future__ import annotations

from flask import Blueprint, Response, render_template, request, url_for
from flask_babel import gettext as _

from companion import CompanionError
from companion.web.camera import camera_status, live_session, zones_for_page
from companion.web.errors import WebError

bp = Blueprint("phone", __name__)

# What the page sends: the pipeline reads a 1280x720 table well; a phone's camera gives about
# that when asked, and the page scales down anything wider.
SEND_WIDTH = 1280
SEND_HEIGHT = 720
SEND_EVERY_MS = 100  # about 10 pictures a second
JPEG_QUALITY = 0.8


def pushed_source():
    """The session's source when it takes posted pictures, else None."""
    session = live_session()
    source = getattr(session, "source", None)
    return source if callable(getattr(source, "push", None)) else None


@bp.get("/phone")
def page():
    session = live_session()
    source = pushed_source()
    problem = None
    if session is None:
        problem = _("No camera: this server was started without one; keep scoring by hand.")
    elif source is None:
        problem = _(
            "This server's camera is %(source)s: start it with 'companion run --phone' to use "
            "a phone.",
            source=camera_status()["source"],
        )
    return render_template(
        "phone.html",
        status=camera_status(),
        problem=problem,
        zones=zones_for_page(session.zones) if session is not None else [],
        send={
            "url": url_for("phone.push"),
            "width": SEND_WIDTH,
            "height": SEND_HEIGHT,
            "every_ms": SEND_EVERY_MS,
            "quality": JPEG_QUALITY,
        },
    )


@bp.post("/live/push")
def push():
    session = live_session()
    if session is None:
        raise WebError(
            _("No camera: this server was started without one; keep scoring by hand."), 404
        )
    source = pushed_source()
    if source is None:
        raise WebError(
            _(
                "This server's camera is %(source)s: start it with 'companion run --phone' to "
                "use a phone.",
                source=camera_status()["source"],
            ),
            409,
        )
    data = request.get_data(cache=False)
    if not data:
        raise WebError(_("The request carried no picture."), 400)
    try:
        source.push(data)
    except CompanionError:
        raise WebError(_("A camera picture is sent as a JPEG or PNG image."), 400) from None
    response = Response(status=204)
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.app_context_processor
def phone_for_templates():
    """``phone_invite()``: for the live view, when the camera is a phone and this device has
    joined, the QR code that takes the phone to its page (joining on the way)."""

    def phone_invite() -> dict | None:
        from flask import current_app

        from companion.web.auth import can_change, join_qr_svg

        code = current_app.config.get("JOIN_CODE")
        if pushed_source() is None or not code or not can_change():
            return None
        base = current_app.config.get("PUBLIC_URL") or request.host_url.rstrip("/")
        url = f"{base}/join?code={code}&next={url_for('phone.page')}"
        return {"url": url, "qr": join_qr_svg(url)}

    return {"phone_invite": phone_invite}

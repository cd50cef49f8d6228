"""A phone as the camera: the pushed-picture source, the phone's page and its upload route
(join code, CSRF, body limit), https on the LAN with the server's own certificate, and the
phone camera apps' streams (an address that is not a video, a stream that stops and comes
back)."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import cv2
import numpy as np
import pytest
from web_support import csrf, message

from companion.live.sources import (
    LiveSource,
    PushedFrameSource,
    SourceError,
    not_a_video_sentence,
    open_source,
)
from companion.live.zones import default_zones
from companion.web import create_app, tls

JOIN_CODE = "1234567890"


def jpeg(number: int = 0, width: int = 320, height: int = 180) -> bytes:
    image = np.full((height, width, 3), 40, np.uint8)
    cv2.putText(image, str(number), (20, height // 2), cv2.FONT_HERSHEY_SIMPLEX, 2, (255,) * 3, 3)
    ok, data = cv2.imencode(".jpg", image)
    assert ok
    return data.tobytes()


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


# -- the source ----------------------------------------------------------------------------------


def test_pushed_pictures_are_read_newest_first_and_older_ones_dropped():
    clock = Clock()
    source = PushedFrameSource(queue=3, clock=clock)
    assert source.state == "connecting" and source.read(wait=0) is None
    pictures = [jpeg(n) for n in range(5)]
    for data in pictures:
        source.push(data)
        clock.now += 0.1
    frame = source.read(wait=0)
    # the newest picture, decoded, numbered from the source's first frame, timed by arrival
    expected = cv2.imdecode(np.frombuffer(pictures[-1], np.uint8), cv2.IMREAD_COLOR)
    assert np.array_equal(frame.image, expected) and frame.index == 0 and frame.time == 0.0
    assert source.received == 5 and source.dropped == 4  # two by the full queue, two by the read
    assert source.read(wait=0) is None  # nothing new
    source.push(pictures[0])
    second = source.read(wait=0)
    assert second.index == 1 and second.time == pytest.approx(0.1)
    assert source.state == "live"


def test_a_phone_that_stops_sending_is_lost_then_live_again():
    clock = Clock()
    source = PushedFrameSource(lost_after=3.0, clock=clock)
    source.push(jpeg())
    assert source.state == "live"
    clock.now += 2.9
    assert source.state == "live"
    clock.now += 0.2
    assert source.state == "lost" and source.read(wait=0) is not None  # what came before
    assert source.read(wait=0) is None
    source.push(jpeg(1))
    assert source.state == "live"
    source.close()
    assert source.state == "ended" and source.read(wait=0) is None


def test_a_read_waits_briefly_for_the_next_picture():
    source = PushedFrameSource()
    threading.Timer(0.02, source.push, [jpeg(3)]).start()
    assert source.read(wait=2.0) is not None


def test_a_pushed_body_that_is_not_a_picture_is_refused_or_skipped():
    source = PushedFrameSource()
    with pytest.raises(SourceError, match="JPEG or PNG"):
        source.push(b"<html>not a picture</html>")
    assert source.received == 0 and source.state == "connecting"
    source.push(b"\xff\xd8\xff" + b"\x00" * 50)  # a JPEG's first bytes, then nothing readable
    assert source.read(wait=0) is None and source.unreadable == 1


# -- the page and its route ------------------------------------------------------------------------


class PhoneSession:
    """A LiveSession as the page sees it, over a real PushedFrameSource."""

    def __init__(self, source=None):
        self.source = source or PushedFrameSource()
        self.zones = default_zones(2)

    def status(self):
        return {
            "camera": self.source.state,
            "source": self.source.describe(),
            "fps": 0.0,
            "frames": 0,
            "match_id": None,
            "message": "",
        }


def joined(client) -> str:
    token = csrf(client)
    answer = client.post("/join", data={"code": JOIN_CODE, "csrf_token": token})
    assert answer.status_code in (302, 303)
    return token


def push(client, token, data, **headers):
    return client.post(
        "/live/push",
        data=data,
        headers={"X-CSRF-Token": token, "Content-Type": "image/jpeg", **headers},
    )


def test_only_a_joined_device_may_send_pictures(store):
    session = PhoneSession()
    client = create_app(store, live=session, join_code=JOIN_CODE, testing=True).test_client()
    token = csrf(client)
    refused = push(client, token, jpeg())
    assert refused.status_code == 403 and "join code" in message(refused)
    page = client.get("/phone").get_data(as_text=True)
    assert "Enter the join code first" in page and 'id="phone-start"' not in page
    token = joined(client)
    assert push(client, "not-the-token", jpeg()).status_code == 400  # CSRF
    assert session.source.received == 0
    answer = push(client, token, jpeg(7))
    assert answer.status_code == 204 and session.source.received == 1
    page = client.get("/phone").get_data(as_text=True)
    assert "Use this phone as the camera" in page and "<polygon" not in page  # drawn by script
    assert '"captures_A"' in page and '"url": "/live/push"' in page


def test_a_picture_too_large_or_not_a_picture_is_one_sentence(store):
    from companion.web.limits import PUSH_MAX_BYTES

    session = PhoneSession()
    client = create_app(store, live=session, join_code=JOIN_CODE, testing=True).test_client()
    token = joined(client)
    large = push(client, token, b"\xff\xd8\xff" + b"\x00" * PUSH_MAX_BYTES)
    assert large.status_code == 413
    wrong = push(client, token, b"GIF89a....")
    assert (
        wrong.status_code == 400
        and message(wrong) == "A camera picture is sent as a JPEG or PNG image."
    )
    empty = push(client, token, b"")
    assert empty.status_code == 400 and message(empty) == "The request carried no picture."
    assert session.source.received == 0


def test_pictures_go_to_a_phone_camera_only(store, tmp_path):
    class Webcam(PhoneSession):
        def __init__(self):
            super().__init__(LiveSource(0, opener=lambda target: None))

    client = create_app(store, live=Webcam(), testing=True).test_client()
    answer = push(client, csrf(client), jpeg())
    assert answer.status_code == 409 and "companion run --phone" in message(answer)
    assert "companion run --phone" in client.get("/phone").get_data(as_text=True)
    without = create_app(store, testing=True).test_client()
    assert push(without, csrf(without), jpeg()).status_code == 404


# -- https on the LAN ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    cert, key = tls.write_certificate(folder, tls.certificate_names(["192.168.1.20"]))
    return cert, key


def test_the_certificate_names_the_lan_and_verifies(certificate):
    cert, key = certificate
    assert (key.stat().st_mode & 0o777) == 0o600  # the key: this user's alone
    decoded = ssl._ssl._test_decode_cert(str(cert))
    named = {value for _, value in decoded["subjectAltName"]}
    assert {"localhost", "127.0.0.1", "192.168.1.20"} <= named
    assert tls.certificate_fits(cert, ["localhost", "192.168.1.20"])
    assert not tls.certificate_fits(cert, ["192.168.1.21"])  # a new address: a new certificate
    # The self-signature itself is right (a browser refuses a broken one outright).
    openssl = shutil.which("openssl")
    if openssl:
        checked = subprocess.run(
            [openssl, "verify", "-check_ss_sig", "-CAfile", str(cert), str(cert)],
            capture_output=True,
            text=True,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
    # A client trusting it reaches the server by its LAN address (TLS handshake, name checked).
    context = tls.server_context(cert, key)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def answer():
            conn, _ = listener.accept()
            with context.wrap_socket(conn, server_side=True) as secure:
                secure.sendall(b"ok")

        threading.Thread(target=answer, daemon=True).start()
        client = ssl.create_default_context(cadata=cert.read_text())
        with socket.create_connection(("127.0.0.1", port)) as raw:
            with client.wrap_socket(raw, server_hostname="192.168.1.20") as secure:
                assert secure.recv(2) == b"ok"


def test_the_lan_certificate_is_kept_and_made_again_when_it_no_longer_fits(tmp_path, monkeypatch):
    made = []
    real = tls.write_certificate

    def counted(folder, names, bits=tls.KEY_BITS):
        made.append(list(names))
        return real(folder, names, bits=1024)  # quicker; the size is not what is tested here

    monkeypatch.setattr(tls, "write_certificate", counted)
    first = tls.lan_certificate(["192.168.1.20"], tmp_path)
    again = tls.lan_certificate(["192.168.1.20"], tmp_path)
    assert first[2] is True and again[2] is False and len(made) == 1
    assert first[0].read_text() == again[0].read_text()
    moved = tls.lan_certificate(["10.0.0.5"], tmp_path)  # the machine got a new address
    assert moved[2] is True and "10.0.0.5" in made[-1]
    assert tls.certificate_fits(moved[0], ["10.0.0.5"])
    assert not tls.certificate_fits(moved[0], ["10.0.0.5"], now=time.time() + 380 * 86400)


def test_one_port_speaks_https_and_plain_http_to_this_machine(store, serve_app, certificate):
    cert, key = certificate
    session = PhoneSession()
    app = create_app(store, live=session, join_code=JOIN_CODE)
    app.config["TLS_FILES"] = (cert, key)
    served = serve_app(app)
    context = ssl.create_default_context(cadata=cert.read_text())
    secure = http.client.HTTPSConnection("127.0.0.1", served.port, context=context, timeout=10)
    secure.request("GET", "/phone")
    answer = secure.getresponse()
    page = answer.read().decode()
    assert answer.status == 200 and "Phone camera" in page
    cookie = answer.getheader("Set-Cookie").split(";")[0]
    token = re.search(r'"X-CSRF-Token": "([^"]+)"', page).group(1)
    secure.request(
        "POST",
        "/join",
        body=f"csrf_token={token}&code={JOIN_CODE}",
        headers={"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"},
    )
    answer = secure.getresponse()
    answer.read()
    cookie = (answer.getheader("Set-Cookie") or cookie).split(";")[0]
    # Pictures of a real size, one after another on one connection (TLS records larger than
    # one read are all taken in).
    picture = cv2.imencode(
        ".jpg", np.random.default_rng(1).integers(0, 255, (720, 1280, 3), np.uint8)
    )[1].tobytes()
    assert len(picture) > 500_000
    for _ in range(5):
        secure.request(
            "POST", "/live/push", body=picture,
            headers={"Cookie": cookie, "X-CSRF-Token": token, "Content-Type": "image/jpeg"},
        )  # fmt: skip
        answer = secure.getresponse()
        answer.read()
        assert answer.status == 204
    assert session.source.received == 5 and session.source.read(wait=0).size == (1280, 720)
    plain = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
    plain.request("GET", "/live/status")
    assert plain.getresponse().status == 200  # this machine's own browser, in plain HTTP
    # A client that does not accept the certificate is turned away; the server goes on.
    with pytest.raises(ssl.SSLCertVerificationError):
        stranger = http.client.HTTPSConnection(
            "127.0.0.1", served.port, context=ssl.create_default_context(), timeout=10
        )
        stranger.request("GET", "/")
    secure.request("GET", "/live/status")
    assert secure.getresponse().status == 200


def test_a_lan_client_asking_in_plain_http_is_sent_to_https():
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"page"]

    wrapped = tls.https_on_the_lan(app)

    def call(**environ):
        seen = {}
        body = b"".join(
            wrapped(environ, lambda status, headers: seen.update(s=status, h=dict(headers)))
        )
        return seen["s"], seen["h"], body

    base = {"SERVER_NAME": "0.0.0.0", "SERVER_PORT": "5000", "PATH_INFO": "/phone"}
    status, headers, _ = call(
        **base, REMOTE_ADDR="192.168.1.30", HTTP_HOST="192.168.1.20:5000",
        QUERY_STRING="lang=fr", **{"wsgi.url_scheme": "http"},
    )  # fmt: skip
    assert (
        status.startswith("308")
        and headers["Location"] == "https://192.168.1.20:5000/phone?lang=fr"
    )
    status, headers, _ = call(
        **base,
        REMOTE_ADDR="192.168.1.30",
        HTTP_HOST="evil.example/<x>:5000",
        **{"wsgi.url_scheme": "http"},
    )
    assert headers["Location"].startswith("https://0.0.0.0:5000/")  # a strange Host is not echoed
    assert call(**base, REMOTE_ADDR="192.168.1.30", **{"wsgi.url_scheme": "https"})[2] == b"page"
    assert call(**base, REMOTE_ADDR="127.0.0.1", **{"wsgi.url_scheme": "http"})[2] == b"page"


# -- phone camera apps: an address that is not a video, a stream that stops ---------------------


class CameraApp(BaseHTTPRequestHandler):
    """A phone camera app as IP Webcam serves it: its page at /, MJPEG at /video."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/video":
            self.send_response(200)
            self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
            self.end_headers()
            number = 0
            try:
                while not self.server.stopping:
                    data = jpeg(number)
                    number += 1
                    self.wfile.write(
                        b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n"
                        % len(data)
                        + data
                        + b"\r\n"
                    )
                    time.sleep(0.05)
            except OSError:
                pass
            return
        if self.path in ("/", "/status.json"):
            html = self.path == "/"
            body = b"<html><body>IP Webcam</body></html>" if html else b'{"video": true}'
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if html else "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_error(404)


def camera_app(port: int = 0):
    server = ThreadingHTTPServer(("127.0.0.1", port), CameraApp)
    server.daemon_threads = True
    server.stopping = False
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stop(server) -> None:
    server.stopping = True
    server.shutdown()
    server.server_close()


def test_an_address_that_is_not_a_video_is_one_sentence():
    server = camera_app()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(
            SourceError,
            match=r"^http://127\.0\.0\.1:\d+/ answers with a web page, not a video: .*/video\)\.$",
        ):
            open_source(f"{base}/")
        with pytest.raises(SourceError, match=r"answers 404 Not Found, not a video"):
            open_source(f"{base}/nothing")
        with pytest.raises(SourceError, match=r"answers with JSON, not a video"):
            open_source(f"{base}/status.json")
        assert not_a_video_sentence(f"{base}/video") is None
        assert isinstance(open_source(f"{base}/video"), LiveSource)
    finally:
        stop(server)
    # No answer at all (the app not started yet) is not judged: run keeps trying.
    assert not_a_video_sentence(f"{base}/video", timeout=1.0) is None


def read_until(source, wanted, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        frame = source.read()
        if wanted(frame):
            return frame
        time.sleep(0.01)
    raise AssertionError(f"still {source.state} after {seconds} s")


def test_an_mjpeg_stream_that_stops_and_comes_back_is_followed_again():
    server = camera_app()
    port = server.server_address[1]
    source = open_source(f"http://127.0.0.1:{port}/video")
    try:
        read_until(source, lambda frame: frame is not None, 15)
        assert source.state == "live"
        stop(server)  # the phone's app closed, or the phone left the Wi-Fi
        read_until(source, lambda frame: source.state == "lost", 15)
        assert source.read() is None
        server = camera_app(port)  # back on the same address
        frame = read_until(source, lambda frame: frame is not None, 15)
        assert source.state == "live" and frame.size == (320, 180) and source.failures >= 1
    finally:
        stop(server)
        source.close()


# -- the commands ----------------------------------------------------------------------------------


@pytest.fixture
def commands(tmp_path, monkeypatch):
    """``companion run``/``serve`` with the server and the model replaced: (invoke, seen), seen
    holding the app and host ``serve`` was given. The certificate is made in a data folder of
    the test's own, with a short key (its making is not what is tested here)."""
    from click.testing import CliRunner
    from test_table_cli import NoCards

    import companion.cli.live as live_cli
    from companion.cli import main
    from companion.web import serving

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(live_cli, "live_detector", lambda *args, **kwargs: NoCards())
    real_write = tls.write_certificate
    monkeypatch.setattr(
        tls, "write_certificate", lambda folder, names, bits=0: real_write(folder, names, 1024)
    )
    seen = {}

    def fake_serve(app, host, port, ready=None, **kwargs):
        seen.update(app=app, host=host)

        class Server:
            server_port = 5123

        ready(Server())

    monkeypatch.setattr(serving, "serve", fake_serve)

    def invoke(*args):
        return CliRunner().invoke(main, [*args, "--db", str(tmp_path / "run.db")])

    return invoke, seen


def test_run_phone_serves_the_lan_in_https_and_prints_the_phones_qr_code(commands, tmp_path):
    invoke, seen = commands
    result = invoke("run", "--phone")
    assert result.exit_code == 0, result.output
    app = seen["app"]
    assert seen["host"] == "0.0.0.0"
    code = app.config["JOIN_CODE"]
    session = app.extensions["companion_live"]
    assert isinstance(session.source, PushedFrameSource)
    assert "Camera: the phone's camera" in result.output
    lan = re.search(r"open (https://[^/\s]+:5123/)", result.output).group(1)
    assert f"{lan}join?code={code}&next=/phone" in result.output and "█" in result.output
    assert "Use this phone as the camera" in result.output
    cert, key = app.config["TLS_FILES"]
    assert cert.parent == tmp_path / "data" / "hanafuda-companion" / "tls" and key.is_file()
    assert "the connection is not private" in result.output
    assert tls.fingerprint(cert) in result.output
    assert "On this machine: http://127.0.0.1:5123/" in result.output
    assert app.config["PUBLIC_URL"].startswith("https://")


def test_run_phone_on_loopback_or_with_another_source_is_one_sentence(commands):
    invoke, seen = commands
    loopback = invoke("run", "--phone", "--host", "127.0.0.1")
    assert loopback.exit_code == 2 and "A phone cannot reach 127.0.0.1" in loopback.output
    both = invoke("run", "--phone", "--camera", "0")
    assert both.exit_code == 2 and "Give one source" in both.output
    assert "app" not in seen


def test_serve_on_the_lan_keeps_its_certificate_from_one_start_to_the_next(commands):
    invoke, seen = commands
    first = invoke("serve", "--host", "0.0.0.0")
    assert first.exit_code == 0, first.output
    assert "Made this server's certificate" in first.output
    assert re.search(r"Scan to join: https://\S+:5123/join\?code=\d{10}", first.output)
    again = invoke("serve", "--host", "0.0.0.0")
    assert "Made this server's certificate" not in again.output
    assert "the connection is not private" in again.output  # each new browser still warns
    local = invoke("serve")
    assert "http://127.0.0.1:5123/" in local.output and "certificate" not in local.output


def test_the_live_view_shows_a_joined_tablet_the_phones_qr_code(store):
    session = PhoneSession()
    client = create_app(store, live=session, join_code=JOIN_CODE, testing=True).test_client()
    assert 'id="phone-invite"' not in client.get("/live").get_data(as_text=True)  # not joined
    joined(client)
    page = client.get("/live").get_data(as_text=True)
    assert 'id="phone-invite"' in page and "<svg" in page
    assert f"/join?code={JOIN_CODE}&amp;next=/phone" in page


def test_run_with_no_source_reads_the_webcam_until_a_phone_sends():
    from companion.live.sources import CameraOrPhone

    class Webcam:
        state, kind, closed = "live", "camera", False

        def read(self):
            return "webcam frame"

        def describe(self):
            return "camera 0"

        def close(self):
            self.closed = True

    webcam = Webcam()
    source = CameraOrPhone(webcam)
    assert source.read() == "webcam frame" and source.describe() == "camera 0"
    assert source.kind == "camera" and source.state == "live"
    source.push(jpeg(4))  # a joined phone chose to be the camera
    frame = source.read()
    assert frame.size == (320, 180) and webcam.closed
    assert source.describe() == "the phone's camera" and source.kind == "phone"
    assert source.read() is None  # the webcam is not read again


def test_run_with_no_source_on_the_lan_offers_the_phone(commands):
    from companion.live.sources import CameraOrPhone

    invoke, seen = commands
    result = invoke("run", "--host", "0.0.0.0")
    assert result.exit_code == 0, result.output
    assert isinstance(seen["app"].extensions["companion_live"].source, CameraOrPhone)
    assert "Camera: camera 0" in result.output and "Scan to join: https://" in result.output
    explicit = invoke("run", "--camera", "0")
    assert explicit.exit_code == 0, explicit.output
    assert isinstance(seen["app"].extensions["companion_live"].source, LiveSource)


def test_the_phones_page_in_french_and_japanese(store):
    client = create_app(store, live=PhoneSession(), join_code=JOIN_CODE, testing=True).test_client()
    joined(client)
    french = client.get("/phone?lang=fr").get_data(as_text=True)
    assert "Utiliser ce téléphone comme caméra" in french and "Use this phone" not in french
    assert "images envoy" in french  # the script's words too (JSON-escaped)
    japanese = client.get("/phone?lang=ja").get_data(as_text=True)
    assert "このスマホをカメラにする" in japanese and "Use this phone" not in japanese


def test_the_live_tally_streams_in_https_as_in_plain_http(store, serve_app, certificate):
    # A tablet on the LAN follows the tally in https: the stream is handed to the stream hub,
    # which must write through the TLS connection (and wait when OpenSSL says it is full).
    cert, key = certificate
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", oya="Aki")
    app = create_app(store)
    app.config["TLS_FILES"] = (cert, key)
    served = serve_app(app)
    context = ssl.create_default_context(cadata=cert.read_text())
    follower = http.client.HTTPSConnection("127.0.0.1", served.port, context=context, timeout=10)
    follower.request("GET", f"/matches/{match_id}/live?max_seconds=2&board=1")
    reply = follower.getresponse()
    assert reply.status == 200 and reply.getheader("Content-Type").startswith("text/event-stream")
    for _ in range(3):
        store.append(match_id, {"type": "round_started"} if _ == 0 else {
            "type": "card_captured", "player": "Aki", "card": f"0{_}-1"})  # fmt: skip
    body = reply.read()  # to its end, after max_seconds: a whole chunked body over TLS
    assert body.startswith(b"retry: 1000\n") and b'"seq": 4' in body
    poll = http.client.HTTPSConnection("127.0.0.1", served.port, context=context, timeout=10)
    poll.request("GET", f"/matches/{match_id}/seq?after=4&timeout=10")
    store.append(match_id, {"type": "card_captured", "player": "Ben", "card": "03-1"})
    reply = poll.getresponse()
    assert reply.status == 200 and json.loads(reply.read()) == {"match": match_id, "seq": 5}

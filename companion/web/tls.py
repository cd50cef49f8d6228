"""HTTPS on the LAN: a certificate the server makes itself, and a waitress channel that speaks
TLS to a client that starts with a TLS handshake and plain HTTP to one that does not.

A phone's browser lends its camera only to a page of a secure origin (https, or this machine's
own loopback address), and nothing on a home LAN has a certificate a browser trusts. So the
first time the server is opened to the LAN it makes its own (``lan_certificate``: an RSA key,
SHA-256, naming this machine's addresses), kept with its key in the per-user data folder, so
that a browser told once to accept it is not asked again; it is made again when it nears its
end or an address it must name is new. Python's ``ssl`` reads certificates but cannot make one,
and neither the ``cryptography`` package nor the ``openssl`` program is a dependency: the few
DER structures of a certificate (RFC 5280) and its RSA signature (RFC 8017, PKCS #1 v1.5)
are written here.

One port serves both (``SecureChannel``): the first byte a client sends says which (a TLS
handshake starts with 0x16). Plain HTTP is answered only for this machine's own browser
(loopback); a LAN client asking in plain HTTP is sent to the same address in https
(``https_on_the_lan``), so that an old bookmark still works.
"""

from __future__ import annotations

import base64
import copy
import datetime
import hashlib
import ipaddress
import math
import os
import re
import secrets
import socket
import ssl
import threading
import time
from pathlib import Path

from companion.web.hosts import is_loopback

KEY_BITS = 2048
PUBLIC_EXPONENT = 65537
# Browsers refuse certificates valid for more than 398 days from some issuers; a shorter life
# costs nothing, as the server makes the next one itself.
VALID_DAYS = 397
RENEW_BEFORE_DAYS = 30
TLS_FOLDER = "tls"
CERT_NAME = "lan-cert.pem"
KEY_NAME = "lan-key.pem"
COMMON_NAME = "Hanafuda Companion"
TLS_HANDSHAKE = 0x16  # the first byte of a TLS ClientHello record

# -- DER ---------------------------------------------------------------------------------------


def _length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def _tlv(tag: int, body: bytes) -> bytes:
    return bytes([tag]) + _length(len(body)) + body


def _integer(n: int) -> bytes:
    raw = n.to_bytes(n.bit_length() // 8 + 1, "big")  # a leading zero byte keeps it positive
    while len(raw) > 1 and raw[0] == 0 and raw[1] < 0x80:
        raw = raw[1:]
    return _tlv(0x02, raw)


def _sequence(*items: bytes) -> bytes:
    return _tlv(0x30, b"".join(items))


def _oid(dotted: str) -> bytes:
    parts = [int(p) for p in dotted.split(".")]
    body = bytes([40 * parts[0] + parts[1]])
    for part in parts[2:]:
        chunk = [part & 0x7F]
        part >>= 7
        while part:
            chunk.append(0x80 | (part & 0x7F))
            part >>= 7
        body += bytes(reversed(chunk))
    return _tlv(0x06, body)


def _utf8(text: str) -> bytes:
    return _tlv(0x0C, text.encode("utf-8"))


def _time(moment: datetime.datetime) -> bytes:
    if moment.year < 2050:  # UTCTime until 2049, as RFC 5280 asks
        return _tlv(0x17, moment.strftime("%y%m%d%H%M%SZ").encode())
    return _tlv(0x18, moment.strftime("%Y%m%d%H%M%SZ").encode())


NULL = b"\x05\x00"
SHA256_WITH_RSA = _sequence(_oid("1.2.840.113549.1.1.11"), NULL)
RSA_ENCRYPTION = _sequence(_oid("1.2.840.113549.1.1.1"), NULL)


def _digest_info(digest: bytes) -> bytes:
    return _sequence(_sequence(_oid("2.16.840.1.101.3.4.2.1"), NULL), _tlv(0x04, digest))


# -- RSA ---------------------------------------------------------------------------------------

_SMALL_PRIMES = [p for p in range(3, 2000) if all(p % d for d in range(2, math.isqrt(p) + 1))]


def _probably_prime(n: int, rounds: int = 40) -> bool:
    if any(n % p == 0 for p in _SMALL_PRIMES):
        return n in _SMALL_PRIMES
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for _ in range(rounds):
        x = pow(secrets.randbelow(n - 3) + 2, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(bits: int) -> int:
    while True:
        # the top two bits set: the product of two such primes has exactly 2 * bits bits
        n = secrets.randbits(bits) | (0b11 << (bits - 2)) | 1
        if math.gcd(n - 1, PUBLIC_EXPONENT) == 1 and _probably_prime(n):
            return n


class RsaKey:
    def __init__(self, p: int, q: int, e: int = PUBLIC_EXPONENT):
        self.p, self.q, self.e = p, q, e
        self.n = p * q
        self.d = pow(e, -1, math.lcm(p - 1, q - 1))

    @classmethod
    def generate(cls, bits: int = KEY_BITS) -> RsaKey:
        while True:
            p, q = _prime(bits // 2), _prime(bits // 2)
            if p != q and (p * q).bit_length() == bits:
                return cls(max(p, q), min(p, q))

    def public_der(self) -> bytes:
        """SubjectPublicKeyInfo."""
        rsa = _sequence(_integer(self.n), _integer(self.e))
        return _sequence(RSA_ENCRYPTION, _tlv(0x03, b"\x00" + rsa))

    def private_der(self) -> bytes:
        """PKCS #1 RSAPrivateKey."""
        p, q, d = self.p, self.q, self.d
        return _sequence(
            *(_integer(v) for v in (0, self.n, self.e, d, p, q, d % (p - 1), d % (q - 1))),
            _integer(pow(q, -1, p)),
        )

    def sign(self, message: bytes) -> bytes:
        """RSASSA-PKCS1-v1_5 with SHA-256."""
        size = (self.n.bit_length() + 7) // 8
        info = _digest_info(hashlib.sha256(message).digest())
        block = b"\x00\x01" + b"\xff" * (size - len(info) - 3) + b"\x00" + info
        return pow(int.from_bytes(block, "big"), self.d, self.n).to_bytes(size, "big")


# -- the certificate ---------------------------------------------------------------------------


def _alt_names(names) -> bytes:
    entries = []
    for name in names:
        try:
            entries.append(_tlv(0x87, ipaddress.ip_address(name).packed))  # iPAddress
        except ValueError:
            entries.append(_tlv(0x82, name.encode("ascii")))  # dNSName
    return _sequence(*entries)


def certificate_der(key: RsaKey, names, now: datetime.datetime | None = None) -> bytes:
    now = (now or datetime.datetime.now(datetime.timezone.utc)).replace(microsecond=0)
    subject = _sequence(_tlv(0x31, _sequence(_oid("2.5.4.3"), _utf8(COMMON_NAME))))
    extensions = _sequence(
        _sequence(_oid("2.5.29.17"), _tlv(0x04, _alt_names(names))),  # subjectAltName
        _sequence(  # extKeyUsage: serverAuth
            _oid("2.5.29.37"), _tlv(0x04, _sequence(_oid("1.3.6.1.5.5.7.3.1")))
        ),
    )
    tbs = _sequence(
        _tlv(0xA0, _integer(2)),  # version 3
        _integer(secrets.randbits(120) | 1 << 120),  # serial: positive, random
        SHA256_WITH_RSA,
        subject,  # issuer: itself
        _sequence(
            _time(now - datetime.timedelta(hours=1)),
            _time(now + datetime.timedelta(days=VALID_DAYS)),
        ),
        subject,
        key.public_der(),
        _tlv(0xA3, extensions),
    )
    return _sequence(tbs, SHA256_WITH_RSA, _tlv(0x03, b"\x00" + key.sign(tbs)))


def _pem(kind: str, der: bytes) -> str:
    body = base64.b64encode(der).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----\n"


def write_certificate(folder: Path, names, bits: int = KEY_BITS) -> tuple[Path, Path]:
    """A new key and self-signed certificate for ``names`` (host names and IP addresses) in
    ``folder``; the key readable by this user alone. Returns (certificate, key)."""
    folder.mkdir(parents=True, exist_ok=True)
    key = RsaKey.generate(bits)
    cert_path, key_path = folder / CERT_NAME, folder / KEY_NAME
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(_pem("RSA PRIVATE KEY", key.private_der()))
    os.chmod(key_path, 0o600)  # a key file left by an older run keeps its own mode otherwise
    cert_path.write_text(_pem("CERTIFICATE", certificate_der(key, names)))
    return cert_path, key_path


def certificate_fits(cert_path: Path, names, now: float | None = None) -> bool:
    """Whether the certificate at ``cert_path`` names every one of ``names`` and is valid for
    ``RENEW_BEFORE_DAYS`` more days."""
    try:
        decoded = ssl._ssl._test_decode_cert(str(cert_path))  # the standard library's reader
    except (OSError, ssl.SSLError, ValueError):
        return False
    named = {_name_key(value) for _, value in decoded.get("subjectAltName", ())}
    wanted = {_name_key(name) for name in names}
    try:
        ends = ssl.cert_time_to_seconds(decoded["notAfter"])
    except (KeyError, ValueError):
        return False
    now = time.time() if now is None else now
    return wanted <= named and ends - now > RENEW_BEFORE_DAYS * 86400


def _name_key(name: str) -> str:
    """A name as compared: an address in one spelling (``::1`` is ``0:0:0:0:0:0:0:1``)."""
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name.lower()


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def certificate_names(addresses) -> list[str]:
    """What the LAN certificate names: this machine's name and loopback, and ``addresses``."""
    names = ["localhost", "127.0.0.1", "::1"]
    host = socket.gethostname().lower()
    # A name a browser could be given: ASCII letters, digits and hyphens (others are left out
    # rather than spelt two ways, which would make a new certificate at every start).
    if re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)*", host) and not _is_ip(host):
        names += [host] if host.endswith(".local") else [host, f"{host}.local"]
    return names + [a for a in addresses if a not in names]


def lan_certificate(addresses, folder: Path | None = None) -> tuple[Path, Path, bool]:
    """(certificate, key, made): the certificate kept in ``folder`` (the per-user data
    folder's ``tls``) when it still fits ``addresses``, else a new one (``made``: True, and
    browsers will warn once more)."""
    from companion.store import data_dir

    folder = folder or data_dir() / TLS_FOLDER
    names = certificate_names(addresses)
    cert_path, key_path = folder / CERT_NAME, folder / KEY_NAME
    if key_path.is_file() and certificate_fits(cert_path, names):
        return cert_path, key_path, False
    cert_path, key_path = write_certificate(folder, names)
    return cert_path, key_path, True


def server_context(cert_path, key_path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert_path), str(key_path))
    return context


def fingerprint(cert_path) -> str:
    """The certificate's SHA-256 fingerprint as browsers show it (AB:CD:...), for a player who
    wants to check that the certificate a browser warns about is this server's."""
    der = ssl.PEM_cert_to_DER_cert(Path(cert_path).read_text())
    digest = hashlib.sha256(der).hexdigest().upper()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


# -- serving: one port, TLS or plain ------------------------------------------------------------


def secure_channel(base, context: ssl.SSLContext):
    """``base`` (a waitress channel class) speaking TLS to clients that start a handshake."""

    class SecureChannel(base):
        tls_context = context

        def __init__(self, server, sock, addr, adj, map=None):
            super().__init__(server, sock, addr, adj, map)
            self.tls = None  # None until the client's first byte: True (TLS) or False (plain)
            self.handshaken = False
            self.handshake_wants_write = False
            # OpenSSL's connection object is not to be read and written at once: the loop reads
            # while a worker thread may still be flushing the last answer.
            self.tls_lock = threading.Lock()

        def _start(self) -> bool:
            """Decide TLS or plain from the first byte, without taking it; False: not yet."""
            try:
                first = self.socket.recv(1, socket.MSG_PEEK)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                self.handle_close()
                return False
            if not first:
                self.handle_close()
                return False
            self.tls = first[0] == TLS_HANDSHAKE
            if self.tls:
                # Same descriptor, so waitress's map of channels stays right.
                self.socket = self.tls_context.wrap_socket(
                    self.socket, server_side=True, do_handshake_on_connect=False
                )
                self.adj = copy.copy(self.adj)
                self.adj.url_scheme = "https"
            return True

        def _handshake(self) -> bool:
            try:
                with self.tls_lock:
                    self.socket.do_handshake()
            except ssl.SSLWantReadError:
                self.handshake_wants_write = False
                return False
            except ssl.SSLWantWriteError:
                self.handshake_wants_write = True
                return False
            except OSError:  # a browser that does not accept the certificate hangs up here
                self.handle_close()
                return False
            self.handshaken, self.handshake_wants_write = True, False
            self.last_activity = time.time()
            return True

        def writable(self):
            return self.handshake_wants_write or super().writable()

        def handle_write(self):
            if self.tls and not self.handshaken:
                self._handshake()
                return
            super().handle_write()

        def handle_read(self):
            if self.tls is None and not self._start():
                return
            if not self.tls:
                super().handle_read()
                return
            if not self.handshaken and not self._handshake():
                return
            while self.connected:
                try:
                    with self.tls_lock:
                        data = self.socket.recv(self.adj.recv_bytes)
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    return
                except OSError:  # SSLError included: a broken or closed connection
                    self.handle_close()
                    return
                if not data:
                    self.handle_close()
                    return
                self.last_activity = time.time()
                self.received(data)
                # Records already decrypted wait in OpenSSL, where poll() cannot see them.
                if not self.socket.pending():
                    return

        def send(self, data, do_close=True):
            if not self.tls:
                return super().send(data, do_close)
            try:
                with self.tls_lock:
                    return self.socket.send(data)
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                return 0

    return SecureChannel


def https_on_the_lan(app):
    """``app`` (WSGI) for a server speaking TLS: a plain-HTTP request from another machine is
    sent to the same page in https (308); this machine's own browser may use either."""

    def wsgi(environ, start_response):
        if environ.get("wsgi.url_scheme") == "https" or is_loopback(environ.get("REMOTE_ADDR")):
            return app(environ, start_response)
        from urllib.parse import quote

        from companion.web.hosts import host_name, url_host

        host = host_name(environ.get("HTTP_HOST") or "") or environ.get("SERVER_NAME", "")
        if not all(c.isalnum() or c in ".-:" for c in host):
            host = environ.get("SERVER_NAME", "localhost")
        port = environ.get("SERVER_PORT", "")
        path = quote(environ.get("PATH_INFO", "/"), safe="/;=,@!$&'()*+-._~")
        query = environ.get("QUERY_STRING", "")
        location = f"https://{url_host(host)}:{port}{path}" + (f"?{query}" if query else "")
        body = b"This server speaks https to the LAN: " + location.encode("ascii", "replace")
        start_response(
            "308 Permanent Redirect",
            [
                ("Location", location),
                ("Content-Type", "text/plain; charset=utf-8"),
                ("Content-Length", str(len(body))),
            ],
        )
        return [body]

    return wsgi


def serve_lan_in_https(app, host: str) -> tuple[Path, bool]:
    """Make (or keep) the LAN certificate for the addresses tablets reach ``host`` by and have
    ``serving.serve`` speak https with it. Returns (certificate, made): ``made`` when browsers
    will warn about a new certificate."""
    from companion.web.hosts import interface_addresses

    wildcard = host.strip("[]") in ("0.0.0.0", "::", "")
    addresses = interface_addresses() if wildcard else [host.strip("[]")]
    cert_path, key_path, made = lan_certificate(addresses)
    app.config["TLS_FILES"] = (cert_path, key_path)
    return cert_path, made


def first_visit_sentence(address: str, cert_path) -> str:
    """What a player sees the first time a browser opens the https address, and what to do."""
    return (
        "The first time, the browser warns that the connection is not private: this server "
        "made its own certificate, which no authority signed. Choose Advanced (or Show "
        f"Details), then Proceed to {address} (Safari: visit this website; Firefox: Accept "
        f"the Risk and Continue). Its SHA-256 fingerprint: {fingerprint(cert_path)}."
    )

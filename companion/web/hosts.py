"""Addresses: the name a request was sent to, whether an address only lets this machine in,
and the LAN address tablets should type (read from this machine's interfaces)."""

from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = {"localhost", "ip6-localhost", "ip6-loopback"}


def host_name(host_header: str) -> str:
    """The name in a ``Host`` header, without its port or IPv6 brackets, lower-cased.

    Werkzeug's own ``TRUSTED_HOSTS`` check cuts a bracketed IPv6 entry at its first colon, so
    ``[::1]`` never matches: the name is taken apart here instead."""
    host = (host_header or "").strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def url_host(host: str) -> str:
    """``host`` as it is written in a URL: an IPv6 address goes in brackets."""
    host = host.strip("[]")
    return f"[{host}]" if ":" in host else host


def is_loopback(host: str) -> bool:
    """True when ``host`` only accepts connections from this machine."""
    host = (host or "").strip().strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def interface_addresses() -> list[str]:
    """This machine's IPv4 addresses, read from its network interfaces (Linux), then from its
    host name; no traffic is sent. Loopback and link-local addresses are left out."""
    import socket

    found = []
    try:
        import fcntl
        import struct

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            for _, name in socket.if_nameindex():
                try:
                    packed = fcntl.ioctl(
                        probe.fileno(), 0x8915, struct.pack("256s", name[:15].encode())
                    )  # SIOCGIFADDR
                except OSError:  # an interface with no IPv4 address
                    continue
                found.append(socket.inet_ntoa(packed[20:24]))
    except (ImportError, OSError, AttributeError):  # not Linux
        pass
    try:
        found += [
            info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
        ]
    except OSError:
        pass
    usable = []
    for address in found:
        ip = ipaddress.ip_address(address)
        if not (ip.is_loopback or ip.is_link_local or ip.is_unspecified) and address not in usable:
            usable.append(address)
    # A home LAN's private address first: that is where the tablet is.
    return sorted(usable, key=lambda a: not ipaddress.ip_address(a).is_private)


def lan_address(host: str) -> str:
    """The address LAN tablets should type: ``host`` itself, or for a wildcard bind this
    machine's LAN address (a numeric one: a tablet often cannot resolve the machine's name)."""
    if host not in ("0.0.0.0", "::", ""):
        return host
    addresses = interface_addresses()
    return addresses[0] if addresses else "127.0.0.1"

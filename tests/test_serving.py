"""How the server names itself: Host headers, IPv6 URLs and the LAN address tablets join."""

from __future__ import annotations

import ipaddress

import pytest

from companion import web


@pytest.mark.parametrize(
    "header, name",
    [
        ("[::1]:5000", "::1"),
        ("[::1]", "::1"),
        ("LOCALHOST:80", "localhost"),
        ("127.0.0.1", "127.0.0.1"),
        ("rebound.example:5000", "rebound.example"),
        ("[fe80::1%eth0]:80", "fe80::1%eth0"),
    ],
)
def test_host_name_drops_the_port_and_ipv6_brackets(header, name):
    assert web.host_name(header) == name


def test_loopback_host_names_are_recognised_and_others_are_not():
    for header in ["[::1]:5000", "localhost:5000", "127.0.0.1:5000", "127.1.2.3"]:
        assert web.is_loopback(web.host_name(header)), header
    for header in ["rebound.example:5000", "192.0.2.7:5000", "[2001:db8::1]:80"]:
        assert not web.is_loopback(web.host_name(header)), header


def test_an_ipv6_address_is_bracketed_in_urls():
    assert web.url_host("::1") == "[::1]"
    assert web.url_host("[::1]") == "[::1]"
    assert web.url_host("192.0.2.7") == "192.0.2.7"
    assert web.url_host("tablet.local") == "tablet.local"


def test_a_wildcard_bind_names_a_numeric_lan_address(monkeypatch):
    monkeypatch.setattr(web, "interface_addresses", lambda: ["192.168.1.20", "203.0.113.9"])
    assert web.lan_address("0.0.0.0") == "192.168.1.20"
    assert web.lan_address("::") == "192.168.1.20"
    assert web.lan_address("192.0.2.7") == "192.0.2.7"  # an explicit address stays


def test_interface_addresses_are_usable_numeric_addresses():
    for address in web.interface_addresses():
        ip = ipaddress.ip_address(address)  # numeric, never a host name
        assert not (ip.is_loopback or ip.is_link_local or ip.is_unspecified)


def test_no_lan_address_falls_back_to_loopback_rather_than_an_unresolvable_name(monkeypatch):
    monkeypatch.setattr(web, "interface_addresses", lambda: [])
    assert web.lan_address("0.0.0.0") == "127.0.0.1"

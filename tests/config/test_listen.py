"""The --listen address (Origin's flagtypes.Addr)."""

from __future__ import annotations

import pytest

from nodehost.config.listen import ListenAddress, parse_listen


@pytest.mark.parametrize(
    ("value", "scheme", "host", "port"),
    [
        ("0.0.0.0:8443", "https", "0.0.0.0", 8443),
        ("127.0.0.1", "https", "127.0.0.1", 8443),
        ("node.example.com", "https", "node.example.com", 8443),
        ("::1", "https", "::1", 8443),
        ("[::1]:9000", "https", "::1", 9000),
        ("http://0.0.0.0", "http", "0.0.0.0", 80),
        ("https://node.example.com", "https", "node.example.com", 443),
        ("tcp://0.0.0.0:10250", "tcp", "0.0.0.0", 10250),
        ("https://user@[::1]:8443/path?q#f", "https", "::1", 8443),
        (":8443", "https", "", 8443),
    ],
)
def test_accepted_forms(value: str, scheme: str, host: str, port: int) -> None:
    address = parse_listen(value)
    assert (address.scheme, address.host, address.port) == (scheme, host, port)


def test_use_tls_follows_the_scheme() -> None:
    assert parse_listen("0.0.0.0:8443").use_tls
    assert not parse_listen("http://0.0.0.0").use_tls
    assert not parse_listen("0.0.0.0:80", default_scheme="http").use_tls


def test_provided_only_when_value_differs_from_default() -> None:
    assert not parse_listen("0.0.0.0:8443").provided
    assert parse_listen("0.0.0.0:9443").provided


def test_host_port_uses_default_only_without_port() -> None:
    assert parse_listen("0.0.0.0:8443").host_port(10250) == "0.0.0.0:8443"
    assert (
        ListenAddress("x", "tcp", "1.2.3.4", 0, provided=True).host_port(10250) == "1.2.3.4:10250"
    )
    assert parse_listen("::1").host_port(10250) == "[::1]:8443"


def test_bare_host_without_default_port_uses_the_scheme_port() -> None:
    assert parse_listen("node", default_port=0).port == 443
    assert parse_listen("node", default_scheme="http", default_port=0).port == 80


def test_network_default_port() -> None:
    address = parse_listen("0.0.0.0", default_port=10256)
    assert (address.port, address.default_port) == (10256, 10256)


def test_ipv6_host_flag() -> None:
    assert parse_listen("[::1]:80").ipv6_host
    assert not parse_listen("1.2.3.4:80").ipv6_host


def test_url_is_normalised() -> None:
    assert parse_listen("[::1]:80").url == "https://[::1]:80"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a:b:c", "not a valid host:port: address a:b:c: too many colons in address"),
        ("host:http", "not a valid port: 'http' is not a number"),
        ("host:", "not a valid port: '' is not a number"),
        ("host:70000", "not a valid port: 70000 is greater than 65535"),
        ("tcp://0.0.0.0", "no port specified"),
        ("unix:///run/x.sock", "no port specified"),
        ("https://[::1]", "not a valid host:port: address [::1]: missing port in address"),
    ],
)
def test_rejected_values_say_why(value: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_listen(value)
    assert str(error.value) == message


def test_bare_host_with_tcp_scheme_and_no_port_is_rejected() -> None:
    with pytest.raises(ValueError, match="no port specified"):
        parse_listen("node", default_scheme="tcp", default_port=0)

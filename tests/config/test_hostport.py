"""Go's net.SplitHostPort / JoinHostPort / ParseIP semantics."""

from __future__ import annotations

import pytest

from nodehost.config.hostport import (
    go_atoi,
    is_unspecified,
    join_host_port,
    parse_ip,
    split_host_port,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.0.0.0:10250", ("0.0.0.0", "10250")),
        ("host.example.com:53", ("host.example.com", "53")),
        ("[::1]:53", ("::1", "53")),
        ("[fe80::1%eth0]:80", ("fe80::1%eth0", "80")),
        (":8443", ("", "8443")),
        ("host:", ("host", "")),
        ("host:http", ("host", "http")),
    ],
)
def test_split(text: str, expected: tuple[str, str]) -> None:
    assert split_host_port(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.2.3.4", "address 1.2.3.4: missing port in address"),
        ("::1", "address ::1: too many colons in address"),
        ("a:b:c", "address a:b:c: too many colons in address"),
        ("[::1]", "address [::1]: missing port in address"),
        ("[::1", "address [::1: missing ']' in address"),
        ("[::1]x:80", "address [::1]x:80: missing port in address"),
        ("[::1]:80:90", "address [::1]:80:90: too many colons in address"),
        ("a[b:80", "address a[b:80: unexpected '[' in address"),
        ("a]b:80", "address a]b:80: unexpected ']' in address"),
    ],
)
def test_split_errors_have_gos_message(text: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        split_host_port(text)
    assert str(error.value) == message


def test_join_brackets_ipv6_hosts() -> None:
    assert join_host_port("::1", 53) == "[::1]:53"
    assert join_host_port("10.0.0.1", "53") == "10.0.0.1:53"


@pytest.mark.parametrize("text", ["10.0.0.1", "::1", "::ffff:1.2.3.4", "fe80::1"])
def test_parse_ip_accepts(text: str) -> None:
    assert parse_ip(text) is not None


@pytest.mark.parametrize(
    "text", ["", "abc", "1.2.3", "1.2.3.4.5", "fe80::1%eth0", "[::1]", " 1.2.3.4", "01.2.3.4"]
)
def test_parse_ip_refuses(text: str) -> None:
    assert parse_ip(text) is None


@pytest.mark.parametrize(
    ("text", "unspecified"),
    [("0.0.0.0", True), ("::", True), ("::ffff:0.0.0.0", True), ("10.0.0.1", False)],
)
def test_unspecified(text: str, unspecified: bool) -> None:
    ip = parse_ip(text)
    assert ip is not None
    assert is_unspecified(ip) is unspecified


@pytest.mark.parametrize(("text", "value"), [("53", 53), ("+53", 53), ("-1", -1), ("0053", 53)])
def test_atoi_accepts_what_go_accepts(text: str, value: int) -> None:
    assert go_atoi(text) == value


@pytest.mark.parametrize("text", ["", "5x", " 5", "5_0", "\u0665"])
def test_atoi_refuses_with_gos_message(text: str) -> None:
    with pytest.raises(ValueError, match=r'^strconv\.Atoi: parsing ".*": invalid syntax$'):
        go_atoi(text)

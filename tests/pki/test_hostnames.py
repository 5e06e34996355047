"""Property tests for serving-certificate hostnames: IPs, IPv6, DNS names, wildcards, case."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodehost.pki.hostnames import parse_hostnames

LABEL = st.from_regex(r"\A[a-zA-Z0-9]([a-zA-Z0-9-]{0,20}[a-zA-Z0-9])?\Z")
DNS_NAME = (
    st.lists(LABEL, min_size=1, max_size=4)
    .map(".".join)
    .filter(lambda name: not _parses_as_ip(name))
)
WILDCARD = DNS_NAME.map(lambda name: "*." + name)
IPV4 = st.ip_addresses(v=4).map(str)
IPV6 = st.ip_addresses(v=6).filter(lambda ip: ip.ipv4_mapped is None).map(lambda ip: ip.exploded)
HOSTNAME = st.one_of(DNS_NAME, WILDCARD, IPV4, IPV6)


def _parses_as_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@given(st.lists(HOSTNAME, min_size=1, max_size=8))
def test_every_entry_lands_in_exactly_one_san_kind(values: list[str]) -> None:
    hostnames = parse_hostnames(values)
    ips = {str(ip) for ip in hostnames.ip_addresses}
    assert ips.isdisjoint(hostnames.non_ip_names)
    assert ips | set(hostnames.non_ip_names) == set(hostnames.names)


@given(st.lists(HOSTNAME, min_size=1, max_size=8))
def test_names_are_sorted_and_unique(values: list[str]) -> None:
    names = parse_hostnames(values).names
    assert list(names) == sorted(set(names))


@given(st.lists(HOSTNAME, min_size=1, max_size=8))
def test_dns_sans_list_names_then_ips_as_strings(values: list[str]) -> None:
    hostnames = parse_hostnames(values)
    ip_strings = tuple(str(ip) for ip in hostnames.ip_addresses)
    assert hostnames.dns_names == hostnames.non_ip_names + ip_strings


@given(DNS_NAME)
def test_dns_names_are_lower_cased_and_upper_case_duplicates_collapse(name: str) -> None:
    hostnames = parse_hostnames([name.upper(), name.lower(), name])
    assert hostnames.names == (name.lower(),)


@given(IPV6)
def test_ipv6_is_written_canonically_and_duplicates_collapse(exploded: str) -> None:
    canonical = str(ipaddress.IPv6Address(exploded))
    hostnames = parse_hostnames([exploded, canonical, exploded.upper()])
    assert hostnames.names == (canonical,)
    assert hostnames.ip_addresses == (ipaddress.IPv6Address(exploded),)


@given(IPV4)
def test_ipv4_mapped_ipv6_is_the_ipv4_address_as_go_writes_it(ipv4: str) -> None:
    assert parse_hostnames([f"::ffff:{ipv4}"]).names == (ipv4,)


@given(WILDCARD)
def test_leading_wildcard_is_a_dns_name(name: str) -> None:
    assert parse_hostnames([name]).non_ip_names == (name.lower(),)


@given(st.lists(HOSTNAME, min_size=1, max_size=8))
def test_common_name_is_the_first_sorted_name_that_fits(values: list[str]) -> None:
    hostnames = parse_hostnames(values)
    fitting = [name for name in hostnames.names if len(name) <= 64]
    assert hostnames.common_name == (fitting[0] if fitting else "")


@pytest.mark.parametrize(
    "bad",
    [
        "bad_name",
        "has space",
        "a..b",
        "-leading.example.com",
        "trailing-.example.com",
        "*",
        "a.*.example.com",
        "node:8443",
        "fe80::1%eth0",
        "bücher.example",
        "x" * 64 + ".example.com",
        "",
    ],
)
def test_entries_that_are_neither_ip_nor_dns_name_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="is neither an IP address nor a DNS name"):
        parse_hostnames([bad])


@settings(max_examples=25, deadline=None)
@given(st.lists(HOSTNAME, min_size=1, max_size=6))
def test_a_server_certificate_covers_every_requested_hostname(values: list[str]) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec

    from nodehost.pki.certs import encode_certificates, make_ca_certificate, make_server_certificate
    from nodehost.pki.keys import encode_private_key
    from nodehost.pki.reuse import Wanted, reuse_problem

    ca_key, leaf_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca = make_ca_certificate(ca_key, "ca", 1)
    hostnames = parse_hostnames(values)
    leaf = make_server_certificate(
        ca, ca_key, leaf_key.public_key(), hostnames=hostnames, serial=2, days=1
    )
    problem = reuse_problem(
        encode_certificates([leaf]), encode_private_key(leaf_key), ca, Wanted(hostnames=hostnames)
    )
    assert problem is None

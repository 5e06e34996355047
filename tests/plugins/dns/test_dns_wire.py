"""Wire-format helpers: the hot-path cache and upstream answers copied out to clients."""

from __future__ import annotations

import contextlib
import struct

import dns.flags
import dns.message
import dns.rcode
import dns.rrset
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodehost.plugins.dns.wire import (
    ClientEdns,
    HotCache,
    UpstreamAnswer,
    WireError,
    error_response,
    question_end,
    skip_name,
)


def _question(name: str = "www.example.") -> bytes:
    wire = dns.message.make_query(name, "A").to_wire()
    return wire[12 : question_end(wire)]


def _upstream(
    name: str = "www.example.", ttl: int = 300, rcode: int = 0, soa: tuple[int, int] | None = None
) -> bytes:
    query = dns.message.make_query(name, "A", use_edns=0)
    response = dns.message.make_response(query, recursion_available=True)
    response.set_rcode(rcode)
    if rcode == 0 and soa is None:
        response.answer.append(dns.rrset.from_text(name, ttl, "IN", "A", "192.0.2.1"))
    if soa is not None:
        text = f"ns.example. host.example. 1 7200 900 1209600 {soa[1]}"
        response.authority.append(dns.rrset.from_text("example.", soa[0], "IN", "SOA", text))
    return response.to_wire()


def test_a_compression_loop_is_skipped_not_followed() -> None:
    assert skip_name(b"\x00" * 12 + b"\xc0\x0c", 12) == 14


@pytest.mark.parametrize(
    "data", [b"", b"\x00" * 11, b"\x00" * 12 + b"\x05ab", b"\x00" * 12 + b"\x40"]
)
def test_malformed_questions_raise_wire_errors(data) -> None:
    with pytest.raises(WireError):
        question_end(data)


VALID = _upstream()


@given(
    st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), max_size=6),
    st.integers(0, len(VALID)),
)
@settings(max_examples=400, deadline=None)
def test_scanning_a_mangled_answer_raises_only_wire_errors(changes, length) -> None:
    data = bytearray(VALID)
    for position, value in changes:
        data[position] = value
    with contextlib.suppress(WireError):
        UpstreamAnswer.scan(bytes(data[:length]), _question())


# --- hot cache ---------------------------------------------------------------------------------


def test_the_hot_cache_keeps_responses_without_their_id() -> None:
    cache = HotCache()
    cache.put(b"key", b"\x12\x34rest", [("svc", "a", "b")])
    assert cache.entries[b"key"] == b"rest"


def test_invalidating_a_dependency_drops_only_its_entries() -> None:
    cache = HotCache()
    cache.put(b"one", b"\0\0one", [("svc", "ns", "one"), ("ns", "ns")])
    cache.put(b"two", b"\0\0two", [("svc", "ns", "two")])
    assert cache.invalidate([("svc", "ns", "one")]) == 1
    assert set(cache.entries) == {b"two"}


def test_entries_kept_until_a_sweep_go_at_the_sweep() -> None:
    cache = HotCache()
    assert cache.put_until_sweep(b"fwd", b"\0\0a") is True
    assert cache.put_until_sweep(b"fwd2", b"\0\0b") is False
    cache.put(b"cluster", b"\0\0c", [])
    cache.sweep()
    assert set(cache.entries) == {b"cluster"}


def test_a_full_cache_starts_again_empty() -> None:
    cache = HotCache(limit=2)
    for key in (b"a", b"b", b"c"):
        cache.put(key, b"\0\0x", [])
    assert set(cache.entries) == {b"c"}


# --- upstream answers -----------------------------------------------------------------------------


def test_an_answer_for_another_question_is_rejected() -> None:
    with pytest.raises(WireError, match="another question"):
        UpstreamAnswer.scan(_upstream("other.example."), _question())


def test_a_query_is_not_an_answer() -> None:
    query = dns.message.make_query("www.example.", "A").to_wire()
    with pytest.raises(WireError):
        UpstreamAnswer.scan(query, _question())


@pytest.mark.parametrize(
    ("wire", "lifetime"),
    [
        (_upstream(ttl=300), 300),
        (_upstream(ttl=999_999), 3600),
        (_upstream(rcode=3, soa=(300, 60)), 60),
        (_upstream(rcode=0, soa=(20, 60)), 20),
        (_upstream(rcode=3), 0),
        (_upstream(rcode=2), 0),
    ],
    ids=["ttl", "capped", "nxdomain-soa-minimum", "nodata-soa-ttl", "nxdomain-no-soa", "servfail"],
)
def test_the_cache_lifetime_follows_ttls_and_rfc_2308(wire, lifetime) -> None:
    assert UpstreamAnswer.scan(wire, _question()).lifetime == lifetime


def _client_query(name: str, edns: bool, query_id: int = 0x4242) -> tuple[bytes, int]:
    query = dns.message.make_query(name, "A", use_edns=0 if edns else None)
    query.id = query_id
    query.flags |= dns.flags.CD
    wire = query.to_wire()
    return wire, question_end(wire)


def test_a_rendered_answer_has_the_clients_id_flags_case_and_aged_ttls() -> None:
    answer = UpstreamAnswer.scan(_upstream(ttl=300), _question())
    query, end = _client_query("WWW.Example.", edns=False)
    response = dns.message.from_wire(answer.render(query, end, None, age=7, limit=512))
    assert response.id == 0x4242
    assert response.question[0].name.to_text() == "WWW.Example."
    assert response.answer[0].ttl == 293
    assert response.flags & dns.flags.RA and response.flags & dns.flags.CD
    assert not response.flags & dns.flags.AA
    assert response.edns == -1


def test_a_rendered_answer_carries_our_opt_only_when_the_client_sent_one() -> None:
    answer = UpstreamAnswer.scan(_upstream(), _question())
    query, end = _client_query("www.example.", edns=True)
    response = dns.message.from_wire(answer.render(query, end, ClientEdns(4096, True), 0, 4096))
    assert (response.edns, response.payload) == (0, 1232)
    assert response.ednsflags & dns.flags.DO


def test_a_rendered_answer_too_large_for_the_client_is_truncated() -> None:
    name = "www.example."
    query = dns.message.make_query(name, "A")
    response = dns.message.make_response(query)
    addresses = [f"192.0.2.{i}" for i in range(1, 50)]
    response.answer.append(dns.rrset.from_text(name, 60, "IN", "A", *addresses))
    answer = UpstreamAnswer.scan(response.to_wire(), _question())
    client, end = _client_query(name, edns=False)
    truncated = dns.message.from_wire(answer.render(client, end, None, 0, 512))
    assert truncated.flags & dns.flags.TC
    assert truncated.answer == []


def test_error_responses_are_not_sent_for_responses_or_scraps() -> None:
    assert error_response(b"\x00" * 5, 1) is None
    response = struct.pack("!HHHHHH", 7, 0x8000, 0, 0, 0, 0)
    assert error_response(response, 1) is None
    query = struct.pack("!HHHHHH", 7, 0x0100, 0, 0, 0, 0)
    parsed = dns.message.from_wire(error_response(query, 1))
    assert (parsed.id, dns.rcode.to_text(parsed.rcode())) == (7, "FORMERR")

"""The miss path's rules (``nodehost.plugins.dns.respond``), in process: bytes in, bytes out.

Each rule of the module docstring against a zone with one service and one
headless service of many endpoints; forwarders are stand-ins (no network).
"""

from __future__ import annotations

import asyncio

import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import pytest

from nodehost.plugins.dns.forward import ForwardError
from nodehost.plugins.dns.records import (
    ClusterRecords,
    ClusterZone,
    EndpointAddress,
    Endpoints,
    EndpointSubset,
    Service,
)
from nodehost.plugins.dns.respond import Responder
from nodehost.plugins.dns.wire import HotCache

WEB = "web.default.svc.cluster.local."
MANY = "many.default.svc.cluster.local."


def zone() -> ClusterZone:
    records = ClusterRecords()
    records.set_service(("default", "web"), Service("default", "web", cluster_ip="10.0.0.5"))
    records.set_service(("default", "many"), Service("default", "many", cluster_ip="None"))
    addresses = tuple(EndpointAddress(f"10.1.0.{n}") for n in range(1, 61))
    records.set_endpoints(
        ("default", "many"), Endpoints("default", "many", (EndpointSubset(addresses),))
    )
    return ClusterZone("cluster.local", records)


def responder(forwarder=None, **options) -> Responder:
    return Responder(zone(), HotCache(100), forwarder, **options)


def ask(query: dns.message.Message | bytes, *, tcp: bool = False, forwarder=None, **options):
    data = query if isinstance(query, bytes) else query.to_wire()
    result = responder(forwarder, **options).respond(data, b"key", tcp)
    if asyncio.iscoroutine(result):
        result = asyncio.run(result)
    return None if result is None else dns.message.from_wire(result, ignore_trailing=True)


def test_bytes_that_do_not_parse_get_formerr() -> None:
    data = dns.message.make_query(WEB, "A").to_wire()[:20]
    response = ask(data)
    assert response.rcode() == dns.rcode.FORMERR and response.flags & dns.flags.QR


def test_a_response_gets_silence() -> None:
    query = dns.message.make_query(WEB, "A")
    assert ask(dns.message.make_response(query)) is None


def test_an_opcode_other_than_query_gets_notimp() -> None:
    query = dns.message.make_query(WEB, "A")
    query.set_opcode(dns.opcode.STATUS)
    assert ask(query).rcode() == dns.rcode.NOTIMP


def test_two_questions_get_formerr() -> None:
    query = dns.message.make_query(WEB, "A")
    query.question.append(dns.rrset.RRset(dns.name.from_text(MANY), dns.rdataclass.IN, 1))
    assert ask(query).rcode() == dns.rcode.FORMERR


def test_edns_above_version_0_gets_badvers() -> None:
    response = ask(dns.message.make_query(WEB, "A", use_edns=1))
    assert response.rcode() == dns.rcode.BADVERS and response.answer == []


def test_a_class_other_than_in_is_refused_without_authority() -> None:
    response = ask(dns.message.make_query(WEB, "A", rdclass=dns.rdataclass.CH))
    assert response.rcode() == dns.rcode.REFUSED
    assert not response.flags & dns.flags.AA and response.authority == []


def test_a_cluster_answer_is_authoritative_with_ra_and_copies_rd_and_cd() -> None:
    query = dns.message.make_query(WEB, "A")
    query.flags |= dns.flags.CD
    response = ask(query)
    assert response.rcode() == dns.rcode.NOERROR
    assert response.flags & dns.flags.AA and response.flags & dns.flags.RA
    assert response.flags & dns.flags.RD and response.flags & dns.flags.CD
    [answer] = response.answer
    assert (answer.name.to_text(), answer[0].to_text()) == (WEB, "10.0.0.5")
    plain = dns.message.make_query(WEB, "A")
    plain.flags &= ~dns.flags.RD
    copied = ask(plain)
    assert not copied.flags & dns.flags.RD and not copied.flags & dns.flags.CD


@pytest.mark.parametrize("do_bit", [True, False])
def test_an_edns_query_gets_our_payload_and_its_do_bit_back(do_bit) -> None:
    query = dns.message.make_query(WEB, "A", use_edns=0, payload=4096, want_dnssec=do_bit)
    response = ask(query)
    assert (response.edns, response.payload) == (0, 1232)
    assert bool(response.ednsflags & dns.flags.DO) is do_bit
    assert ask(dns.message.make_query(WEB, "A")).edns == -1


def test_a_name_the_cluster_lacks_is_nxdomain_with_the_zones_soa() -> None:
    response = ask(dns.message.make_query("nosuch.default.svc.cluster.local.", "A"))
    assert response.rcode() == dns.rcode.NXDOMAIN and response.flags & dns.flags.AA
    [soa] = response.authority
    assert soa.rdtype == dns.rdatatype.SOA and soa.name.to_text() == "cluster.local."


def test_a_udp_answer_larger_than_512_is_sent_empty_with_tc() -> None:
    response = ask(dns.message.make_query(MANY, "A"))
    assert response.flags & dns.flags.TC and response.flags & dns.flags.AA
    assert response.answer == [] and response.question[0].name.to_text() == MANY


def test_the_clients_edns_payload_and_tcp_raise_the_limit() -> None:
    edns = ask(dns.message.make_query(MANY, "A", use_edns=0, payload=4096))
    tcp = ask(dns.message.make_query(MANY, "A"), tcp=True)
    for response in (edns, tcp):
        assert not response.flags & dns.flags.TC
        assert len(response.answer[0]) == 60


def test_a_name_outside_the_cluster_is_refused_without_a_forwarder() -> None:
    response = ask(dns.message.make_query("www.example.com.", "A"))
    assert response.rcode() == dns.rcode.REFUSED and not response.flags & dns.flags.AA
    assert response.authority == []  # no SOA: the name is not ours


class Failing:
    """A forwarder with nothing cached whose every upstream fails."""

    def __init__(self) -> None:
        self.asked: list[bytes] = []

    def cached(self, question: bytes, do_bit: bool = False):
        return None

    async def resolve(self, question: bytes, do_bit: bool = False):
        self.asked.append(question)
        raise ForwardError("every upstream failed")


def test_servfail_when_every_upstream_failed_and_the_wait_is_over() -> None:
    forwarder = Failing()
    server = responder(forwarder)
    query = dns.message.make_query("WWW.Example.com.", "A")
    result = server.respond(query.to_wire(), b"k", False)
    response = dns.message.from_wire(asyncio.run(result))
    assert response.rcode() == dns.rcode.SERVFAIL and response.id == query.id
    assert forwarder.asked == [b"\x03www\x07example\x03com\x00\x00\x01\x00\x01"]
    assert server.pending == 0


def test_servfail_at_once_when_too_many_questions_wait_for_an_upstream() -> None:
    forwarder = Failing()
    server = responder(forwarder, max_pending=1)
    server.pending = 1
    result = server.respond(dns.message.make_query("www.example.com.", "A").to_wire(), b"k", False)
    assert isinstance(result, bytes)
    assert dns.message.from_wire(result).rcode() == dns.rcode.SERVFAIL
    assert forwarder.asked == []


def test_by_default_1024_questions_may_wait_for_an_upstream() -> None:
    forwarder = Failing()
    server = responder(forwarder)
    query = dns.message.make_query("www.example.com.", "A").to_wire()
    server.pending = 1024
    assert dns.message.from_wire(server.respond(query, b"k", False)).rcode() == dns.rcode.SERVFAIL
    assert forwarder.asked == []
    server.pending = 1023
    asyncio.run(server.respond(query, b"k", False))
    assert forwarder.asked == [b"\x03www\x07example\x03com\x00\x00\x01\x00\x01"]


def test_a_cluster_answer_is_kept_in_the_hot_cache_under_the_servers_key() -> None:
    server = responder()
    wire = server.respond(dns.message.make_query(WEB, "A").to_wire(), b"the-key", False)
    assert isinstance(wire, bytes)
    assert server.cache.entries[b"the-key"] == wire[2:]


class Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def debug(self, event: str, **fields) -> None:
        self.events.append((event, fields))


class Rendered:
    """A cached upstream answer: ``render`` records its arguments and returns ``wire``."""

    def __init__(self, wire: bytes) -> None:
        self.wire = wire
        self.rendered: list[tuple] = []

    def render(self, data, end, edns, age, limit) -> bytes:
        self.rendered.append((end, edns.do_bit if edns else None, age, limit))
        return self.wire


class Cached:
    """A forwarder whose cache answers every question (age 7 s)."""

    def __init__(self, answer: Rendered) -> None:
        self.answer = answer
        self.looked_up: list[tuple[bytes, bool]] = []

    def cached(self, question: bytes, do_bit: bool = False):
        self.looked_up.append((question, do_bit))
        return self.answer, 7


@pytest.mark.parametrize(
    ("edns", "do_bit", "limit"), [(None, False, 512), (0, False, 1232), (0, True, 1232)]
)
def test_a_cached_upstream_answer_is_rendered_at_once_and_kept_until_the_sweep(
    monkeypatch, edns, do_bit, limit
) -> None:
    query = (
        dns.message.make_query("www.example.com.", "A")
        if edns is None
        else dns.message.make_query(
            "www.example.com.", "A", use_edns=edns, payload=4096, want_dnssec=do_bit
        )
    )
    upstream = dns.message.make_response(query).to_wire()
    forwarder, sweeps = Cached(Rendered(upstream)), []
    server = Responder(zone(), HotCache(100), forwarder, on_sweep_due=lambda: sweeps.append(1))
    data = query.to_wire()

    def no_full_parse(*args, **kwargs):
        raise AssertionError("an ordinary query to forward takes the shortcut past the parse")

    monkeypatch.setattr(dns.message, "from_wire", no_full_parse)
    assert server.respond(data, b"k1", False) == upstream
    assert forwarder.looked_up == [(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01", do_bit)]
    assert forwarder.answer.rendered == [(33, do_bit if edns == 0 else None, 7, limit)]
    assert server.cache.entries[b"k1"] == upstream[2:]
    assert server.respond(data, b"k2", False) == upstream
    assert sweeps == [1]  # one sweep for every answer kept until it


def test_a_waiting_question_counts_as_pending_until_answered() -> None:
    seen: list[int] = []

    class Slow(Failing):
        async def resolve(self, question: bytes, do_bit: bool = False):
            seen.append(server.pending)
            return await super().resolve(question, do_bit)

    log = Log()
    server = responder(Slow(), log=log)
    server.pending = 3  # three others already wait
    result = server.respond(dns.message.make_query("example.org.", "A").to_wire(), b"k", False)
    asyncio.run(result)
    assert seen == [4] and server.pending == 3
    assert log.events == [("forwarding failed", {"error": "every upstream failed"})]


def test_an_external_name_asks_upstream_for_its_target_and_says_so_when_that_fails() -> None:
    records = ClusterRecords()
    service = Service("default", "search", type="ExternalName", external_name="WWW.example.com")
    records.set_service(("default", "search"), service)
    forwarder, log = Failing(), Log()
    server = Responder(ClusterZone("cluster.local", records), HotCache(9), forwarder, log=log)
    query = dns.message.make_query("search.default.svc.cluster.local.", "AAAA")
    response = dns.message.from_wire(asyncio.run(server.respond(query.to_wire(), b"k", False)))
    assert forwarder.asked == [b"\x03www\x07example\x03com\x00\x00\x1c\x00\x01"]
    assert [rrset.rdtype for rrset in response.answer] == [dns.rdatatype.CNAME]
    assert log.events == [
        (
            "ExternalName target not resolved",
            {"name": "www.example.com", "error": "every upstream failed"},
        )
    ]


def test_a_truncated_answer_keeps_the_header_flags_and_no_answer_carries_padding() -> None:
    query = dns.message.make_query(MANY, "A")
    query.flags |= dns.flags.CD
    truncated = ask(query)
    for flag in (dns.flags.QR, dns.flags.RA, dns.flags.RD, dns.flags.CD, dns.flags.TC):
        assert truncated.flags & flag, flag
    assert ask(dns.message.make_query(WEB, "A", use_edns=0)).options == ()


def test_the_soa_serial_is_the_start_of_the_current_hour() -> None:
    import time

    before = int(time.time())
    response = ask(dns.message.make_query("nosuch.default.svc.cluster.local.", "A"))
    serial = response.authority[0][0].serial
    assert serial % 3600 == 0 and before - 3600 < serial <= int(time.time())


def test_each_zones_soa_is_made_once() -> None:
    server = responder()
    assert server.soa_of("cluster.local") is server.soa_of("cluster.local")
    assert server.soa_of("10.in-addr.arpa") is server.soa_of("10.in-addr.arpa")
    assert server.soa_of("10.in-addr.arpa") is not server.soa_of("cluster.local")


@pytest.mark.parametrize(
    ("name", "qtype", "answer"),
    [
        ("cluster.local.", "SOA", "cluster.local."),  # the cluster domain's apex itself
        ("5.0.0.10.in-addr.arpa.", "PTR", "5.0.0.10.in-addr.arpa."),  # a service's IP
    ],
)
def test_the_cluster_answers_its_domain_and_its_ips_names_though_it_forwards(
    name, qtype, answer
) -> None:
    forwarder = Failing()
    response = ask(dns.message.make_query(name, qtype), forwarder=forwarder)
    assert response.rcode() == dns.rcode.NOERROR and response.flags & dns.flags.AA
    assert [
        (str(rrset.name), dns.rdatatype.to_text(rrset.rdtype)) for rrset in response.answer
    ] == [(answer, qtype)]
    assert forwarder.asked == []


@pytest.mark.parametrize("do_bit", [False, True])
def test_a_reverse_name_the_cluster_does_not_know_is_forwarded_with_the_askers_do_bit(
    do_bit,
) -> None:
    query = dns.message.make_query(
        "8.8.8.8.in-addr.arpa.", "PTR", use_edns=0, payload=1232, want_dnssec=do_bit
    )
    upstream = dns.message.make_response(query).to_wire()
    forwarder = Cached(Rendered(upstream))
    assert responder(forwarder).respond(query.to_wire(), b"k", False) == upstream
    assert forwarder.looked_up == [
        (b"\x018\x018\x018\x018\x07in-addr\x04arpa\x00\x00\x0c\x00\x01", do_bit)
    ]


class Fixed(ClusterZone):
    """The cluster domain, every name in it answered with ``records``."""

    def __init__(self, *records) -> None:
        super().__init__("cluster.local", ClusterRecords())
        self.records = records

    def answer(self, name: str, qtype: str):
        from nodehost.plugins.dns.records import QUERY_NAME, Answer, Record

        return Answer(answer=tuple(Record(QUERY_NAME, *record) for record in self.records))


def test_a_txt_text_is_one_string_spaces_and_all() -> None:
    server = Responder(Fixed(("TXT", "two words")), HotCache(9), None)
    wire = server.respond(dns.message.make_query(WEB, "TXT").to_wire(), b"k", False)
    [rrset] = dns.message.from_wire(wire).answer
    assert [rdata.strings for rdata in rrset] == [(b"two words",)]


def test_a_record_that_cannot_be_rendered_is_a_servfail_and_says_why() -> None:
    log = Log()
    server = Responder(Fixed(("A", "10.0.0.1"), ("A", "not-an-ip")), HotCache(9), None, log=log)
    wire = server.respond(dns.message.make_query(WEB, "A").to_wire(), b"k", False)
    response = dns.message.from_wire(wire)
    assert response.rcode() == dns.rcode.SERVFAIL and response.answer == []
    assert [event for event, _ in log.events] == ["cannot render a cluster record"]


def test_a_query_asking_for_padding_gets_none() -> None:
    import dns.edns

    padding = dns.edns.GenericOption(dns.edns.OptionType.PADDING, b"\x00" * 8)
    query = dns.message.make_query(WEB, "A", use_edns=0, options=[padding])
    assert ask(query).options == ()


class Submitting(Failing):
    """A forwarder that keeps each submitted question's ``done`` for the test to call."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting: list = []

    def submit(self, question: bytes, do_bit: bool, done) -> None:
        self.waiting.append(done)


def test_a_question_answered_through_reply_counts_as_pending_until_the_reply() -> None:
    forwarder, replies = Submitting(), []
    server = responder(forwarder)
    server.pending = 3  # three others already wait
    query = dns.message.make_query("example.org.", "A")
    for _ in range(2):
        assert server.respond(query.to_wire(), b"k", False, replies.append) is None
    assert server.pending == 5 and replies == []
    upstream = dns.message.make_response(query).to_wire()
    answer = Rendered(upstream)
    forwarder.waiting[0](answer, "")
    assert server.pending == 4 and replies == [upstream]
    assert answer.rendered == [(29, None, 0, 512)]  # a fresh answer: age 0
    forwarder.waiting[1](None, "every upstream failed")
    assert server.pending == 3
    assert dns.message.from_wire(replies[1]).rcode() == dns.rcode.SERVFAIL

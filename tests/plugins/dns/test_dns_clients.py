"""Real clients (dnspython and dig) against the running server, for every kind of name."""

from __future__ import annotations

import socket
import struct

import dns.flags
import dns.message
import dns.query
import dns.rdatatype
import pytest
from dnsrun import answer_set, ask, dig, fqdn, needs_dig, rcode

from nodehost.plugins.dns.records import fnv32a_hex

WEB = "web.default.svc.cluster.local."
DB_1_HASH = fnv32a_hex("10.128.0.6")

#: (question name, type) -> the answer section as (owner, type, rdata) triples.
ANSWERS = {
    ("web.default.svc", "A"): {(fqdn("web.default.svc"), "A", "172.30.0.10")},
    ("_http._tcp.web.default.svc", "SRV"): {
        (
            fqdn("_http._tcp.web.default.svc"),
            "SRV",
            f"10 100 80 {WEB}",
        )
    },
    ("*._udp.web.default.svc", "SRV"): {
        (
            fqdn("*._udp.web.default.svc"),
            "SRV",
            f"10 100 53 {WEB}",
        )
    },
    ("_http.*.web.default.svc", "SRV"): {
        (
            fqdn("_http.*.web.default.svc"),
            "SRV",
            f"10 100 80 {WEB}",
        )
    },
    ("db.prod.svc", "A"): {
        (fqdn("db.prod.svc"), "A", "10.128.0.5"),
        (fqdn("db.prod.svc"), "A", "10.128.0.6"),
    },
    ("db-0.db.prod.svc", "A"): {(fqdn("db-0.db.prod.svc"), "A", "10.128.0.5")},
    (f"{DB_1_HASH}.db.prod.endpoints", "A"): {
        (fqdn(f"{DB_1_HASH}.db.prod.endpoints"), "A", "10.128.0.6")
    },
    ("_pg._tcp.db.prod.svc", "SRV"): {
        (fqdn("_pg._tcp.db.prod.svc"), "SRV", "10 50 5432 db-0.db.prod.svc.cluster.local."),
        (fqdn("_pg._tcp.db.prod.svc"), "SRV", f"10 50 5432 {DB_1_HASH}.db.prod.svc.cluster.local."),
    },
    ("_endpoints.web.default.svc", "A"): {(fqdn("_endpoints.web.default.svc"), "A", "10.128.1.5")},
    ("web.default.endpoints", "A"): {(fqdn("web.default.endpoints"), "A", "10.128.1.5")},
    ("10-1-2-3.default.pod", "A"): {(fqdn("10-1-2-3.default.pod"), "A", "10.1.2.3")},
    ("openshift.default.svc", "A"): {(fqdn("openshift.default.svc"), "A", "172.30.0.1")},
    ("_endpoints.openshift.default.svc", "A"): {
        (fqdn("_endpoints.openshift.default.svc"), "A", "10.0.0.2")
    },
    ("search.default.svc", "A"): {(fqdn("search.default.svc"), "CNAME", "www.example.com.")},
    ("search.default.svc", "CNAME"): {(fqdn("search.default.svc"), "CNAME", "www.example.com.")},
    ("v6.default.svc", "AAAA"): {(fqdn("v6.default.svc"), "AAAA", "fd00::10")},
}

REVERSE = {
    "10.0.30.172.in-addr.arpa.": "web.default.svc.cluster.local.",
    "0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.": (
        "v6.default.svc.cluster.local."
    ),
}

#: Names under the domain that do not exist, and existing names without such records.
NXDOMAIN = [
    "nope.default.svc",
    "db-9.db.prod.svc",
    "x.y.pod",
    "foo",
    "a.b.other",
    "anything.web.default.svc",
]
NODATA = [("default.svc", "A"), ("svc", "A"), ("web.default.svc", "AAAA"), ("v6.default.svc", "A")]

TRANSPORTS = pytest.mark.parametrize("tcp", [False, True], ids=["udp", "tcp"])


@TRANSPORTS
@pytest.mark.parametrize(("name", "rdtype"), sorted(ANSWERS))
def test_every_name_kind_is_answered_with_ttl_30(server, name, rdtype, tcp) -> None:
    response = ask(server, fqdn(name), rdtype, tcp=tcp)
    assert rcode(response) == "NOERROR"
    assert answer_set(response) == ANSWERS[(name, rdtype)]
    assert {rrset.ttl for rrset in response.answer} == {30}


@TRANSPORTS
@pytest.mark.parametrize("name", sorted(REVERSE))
def test_cluster_ips_have_ptr_records(server, name, tcp) -> None:
    response = ask(server, name, "PTR", tcp=tcp)
    assert answer_set(response) == {(name, "PTR", REVERSE[name])}


def test_srv_answers_carry_the_targets_addresses(server) -> None:
    response = ask(server, fqdn("_pg._tcp.db.prod.svc"), "SRV")
    additional = {(r.name.to_text(), rd.to_text()) for r in response.additional for rd in r}
    assert additional == {
        ("db-0.db.prod.svc.cluster.local.", "10.128.0.5"),
        (f"{DB_1_HASH}.db.prod.svc.cluster.local.", "10.128.0.6"),
    }


@TRANSPORTS
@pytest.mark.parametrize("name", NXDOMAIN)
def test_unknown_cluster_names_are_nxdomain_with_the_soa(server, name, tcp) -> None:
    response = ask(server, fqdn(name), "A", tcp=tcp)
    assert rcode(response) == "NXDOMAIN"
    assert [rrset.name.to_text() for rrset in response.authority] == ["cluster.local."]
    assert dns.rdatatype.to_text(response.authority[0].rdtype) == "SOA"


@pytest.mark.parametrize(("name", "rdtype"), NODATA)
def test_existing_names_without_such_records_are_nodata_with_the_soa(server, name, rdtype) -> None:
    response = ask(server, fqdn(name), rdtype)
    assert rcode(response) == "NOERROR"
    assert response.answer == []
    assert dns.rdatatype.to_text(response.authority[0].rdtype) == "SOA"


def test_cluster_answers_are_authoritative_and_offer_recursion(server) -> None:
    response = ask(server, fqdn("web.default.svc"), "A")
    assert response.flags & dns.flags.AA
    assert response.flags & dns.flags.RA
    assert response.flags & dns.flags.RD  # copied from the query


def test_names_outside_the_domain_are_refused_without_upstreams(server) -> None:
    assert rcode(ask(server, "example.com.", "A")) == "REFUSED"


def test_any_questions_are_refused(server) -> None:
    assert rcode(ask(server, fqdn("web.default.svc"), "ANY")) == "REFUSED"


def test_edns_queries_get_an_opt_record_with_our_payload_and_their_do_bit(server) -> None:
    response = ask(server, fqdn("web.default.svc"), "A", use_edns=0, payload=4096, want_dnssec=True)
    assert response.edns == 0
    assert response.payload == 1232
    assert response.ednsflags & dns.flags.DO
    plain = ask(server, fqdn("web.default.svc"), "A")
    assert plain.edns == -1


def test_an_unknown_edns_version_is_badvers(server) -> None:
    response = ask(server, fqdn("web.default.svc"), "A", use_edns=1)
    assert rcode(response) == "BADVERS"


def test_a_large_answer_is_truncated_over_udp_and_complete_over_tcp(server) -> None:
    name = fqdn("many.default.svc")
    udp = ask(server, name, "A")
    assert udp.flags & dns.flags.TC
    assert udp.answer == []
    assert len(answer_set(ask(server, name, "A", tcp=True))) == 60
    assert len(answer_set(ask(server, name, "A", use_edns=0, payload=4096))) == 60


@TRANSPORTS
def test_the_question_keeps_its_case_on_a_miss_and_on_a_cached_hit(server, tcp) -> None:
    name = "WeB.DeFault.SVC.Cluster.LOCAL."
    for _ in range(2):
        response = ask(server, name, "A", tcp=tcp)
        assert response.question[0].name.to_text() == name
        assert response.answer[0].name.to_text() == name


def _raw_query(server, query_id: int) -> bytes:
    query = dns.message.make_query(fqdn("kubernetes.default.svc"), "A")
    query.id = query_id
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5)
        sock.sendto(query.to_wire(), (server.host, server.port))
        return sock.recv(4096)


def test_a_cached_answer_carries_each_querys_id(server) -> None:
    first, second = _raw_query(server, 0x1234), _raw_query(server, 0xBEEF)
    assert struct.unpack("!H", first[:2]) == (0x1234,)
    assert struct.unpack("!H", second[:2]) == (0xBEEF,)
    assert first[2:] == second[2:]


def test_tcp_clients_may_pipeline_queries_on_one_connection(server) -> None:
    names = [fqdn("web.default.svc"), fqdn("db.prod.svc"), fqdn("nope.default.svc")]
    with socket.create_connection((server.host, server.port), timeout=5) as sock:
        for index, name in enumerate(names):
            query = dns.message.make_query(name, "A")
            query.id = index + 1
            sock.sendall(query.to_wire(prepend_length=True))
        ids = set()
        for _ in names:
            (length,) = struct.unpack("!H", _receive(sock, 2))
            ids.add(dns.message.from_wire(_receive(sock, length)).id)
    assert ids == {1, 2, 3}


def _receive(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        assert chunk, "connection closed early"
        data += chunk
    return data


# --- dig ---------------------------------------------------------------------------------------

DIG_SHORT = [
    (("web.default.svc", "A"), "172.30.0.10"),
    (("_http._tcp.web.default.svc", "SRV"), f"10 100 80 {WEB}"),
    (("db-0.db.prod.svc", "A"), "10.128.0.5"),
    (("web.default.endpoints", "A"), "10.128.1.5"),
    (("10-1-2-3.default.pod", "A"), "10.1.2.3"),
    (("search.default.svc", "CNAME"), "www.example.com."),
    (("v6.default.svc", "AAAA"), "fd00::10"),
]


@needs_dig
@pytest.mark.parametrize("transport", ["+notcp", "+tcp"])
@pytest.mark.parametrize(("question", "expected"), DIG_SHORT, ids=[q[0][0] for q in DIG_SHORT])
def test_dig_gets_every_kind_of_answer(server, question, expected, transport) -> None:
    name, rdtype = question
    assert dig(server, transport, "+short", fqdn(name), rdtype).split("\n")[0] == expected


@needs_dig
@pytest.mark.parametrize("transport", ["+notcp", "+tcp"])
def test_dig_reverse_lookup_of_a_cluster_ip(server, transport) -> None:
    assert dig(server, transport, "+short", "-x", "172.30.0.10").strip() == (
        "web.default.svc.cluster.local."
    )


@needs_dig
def test_dig_sees_nxdomain_with_the_soa_in_authority(server) -> None:
    output = dig(server, "+noall", "+comments", "+authority", fqdn("nope.default.svc"))
    assert "status: NXDOMAIN" in output
    assert "flags: qr aa rd ra" in output
    assert (
        "cluster.local.\t\t30\tIN\tSOA\tns.dns.cluster.local. hostmaster.cluster.local." in output
    )


@needs_dig
def test_dig_retries_a_truncated_answer_over_tcp(server) -> None:
    output = dig(server, "+noedns", "+short", fqdn("many.default.svc"))
    assert len(output.split()) == 60

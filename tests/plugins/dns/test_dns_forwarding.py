"""Forwarding to upstream resolvers on loopback: dnsmasq, and a scripted upstream for edge cases."""

from __future__ import annotations

import socket
import time

import dns.flags
import dns.message
import pytest
from dnsrun import (
    RECORDS,
    answer_set,
    ask,
    fqdn,
    free_udp_port,
    needs_dnsmasq,
    rcode,
    write_records,
)


@pytest.fixture
def records(tmp_path):
    return write_records(tmp_path / "records.yaml", RECORDS)


@pytest.fixture
def blackhole():
    """A UDP socket that receives questions and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


def _via(upstream) -> str:
    return f"{upstream.host}:{upstream.port}"


@needs_dnsmasq
@pytest.mark.parametrize("tcp", [False, True], ids=["udp", "tcp"])
def test_names_outside_the_domain_are_answered_by_a_dnsmasq_upstream(
    records, start_server, start_dnsmasq, tcp
) -> None:
    port = free_udp_port()
    start_dnsmasq(port, ["--host-record=www.example.test,192.0.2.7", "--local-ttl=60"])
    server = start_server(records, "--upstream", f"127.0.0.1:{port}")
    response = ask(server, "www.example.test.", "A", tcp=tcp)
    assert answer_set(response) == {("www.example.test.", "A", "192.0.2.7")}
    assert response.flags & dns.flags.RA
    assert not response.flags & dns.flags.AA


@needs_dnsmasq
def test_a_cached_answer_outlives_its_upstream_with_a_decreasing_ttl(
    records, start_server, start_dnsmasq
) -> None:
    port = free_udp_port()
    dnsmasq = start_dnsmasq(port, ["--host-record=www.example.test,192.0.2.7", "--local-ttl=60"])
    server = start_server(records, "--upstream", f"127.0.0.1:{port}")
    first = ask(server, "www.example.test.", "A")
    dnsmasq.stop()
    time.sleep(1.1)
    again = ask(server, "WWW.example.TEST.", "A")
    assert answer_set(again) == {("www.example.test.", "A", "192.0.2.7")}
    assert again.question[0].name.to_text() == "WWW.example.TEST."
    assert again.answer[0].ttl < first.answer[0].ttl


def test_negative_answers_are_cached_for_the_soa_minimum(records, start_server, upstream) -> None:
    server = start_server(records, "--upstream", _via(upstream))
    for _ in range(3):
        response = ask(server, "nx-1.example.", "A")
        assert rcode(response) == "NXDOMAIN"
        assert response.authority[0].ttl <= 60
    assert upstream.count("nx-1.example.") == 1


def test_an_answer_is_asked_again_once_its_ttl_has_run_out(records, start_server, upstream) -> None:
    server = start_server(records, "--upstream", _via(upstream))
    ask(server, "short-1.example.", "A")
    ask(server, "short-1.example.", "A")
    assert upstream.count("short-1.example.") == 1
    time.sleep(2.2)
    ask(server, "short-1.example.", "A")
    assert upstream.count("short-1.example.") == 2


def test_a_truncated_upstream_answer_is_fetched_again_over_tcp(records, start_server, upstream):
    server = start_server(records, "--upstream", _via(upstream))
    response = ask(server, "tc-1.example.", "A", use_edns=0, payload=4096)
    assert len(answer_set(response)) == 40
    assert (upstream.count("tc-1.example.", "udp"), upstream.count("tc-1.example.", "tcp")) == (
        1,
        1,
    )
    small = ask(server, "tc-1.example.", "A")
    assert small.flags & dns.flags.TC


def test_an_upstream_that_refuses_connections_is_skipped(records, start_server, upstream) -> None:
    dead = f"127.0.0.1:{free_udp_port()}"
    server = start_server(records, "--upstream", dead, "--upstream", _via(upstream))
    for index in range(3):
        assert answer_set(ask(server, f"name-{index}.example.", "A")) == {
            (f"name-{index}.example.", "A", "192.0.2.1")
        }


def test_an_upstream_that_does_not_answer_times_out_and_the_next_answers(
    records, start_server, upstream, blackhole
) -> None:
    server = start_server(
        records, "--upstream", blackhole, "--upstream", _via(upstream), "--forward-timeout", "0.3"
    )
    for index in range(2):
        assert rcode(ask(server, f"name-{index}.example.", "A")) == "NOERROR"


def test_servfail_when_every_upstream_fails(records, start_server, upstream) -> None:
    dead = f"127.0.0.1:{free_udp_port()}"
    server = start_server(records, "--upstream", dead, "--upstream", _via(upstream))
    assert rcode(ask(server, "fail-1.example.", "A")) == "SERVFAIL"
    only_dead = start_server(records, "--upstream", dead)
    assert rcode(ask(only_dead, "www.example.", "A")) == "SERVFAIL"


def test_a_slow_upstream_does_not_delay_cluster_answers(records, start_server, blackhole) -> None:
    server = start_server(records, "--upstream", blackhole, "--forward-timeout", "5")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(4)
        for query_id, name in ((1, "www.example."), (2, fqdn("web.default.svc"))):
            query = dns.message.make_query(name, "A")
            query.id = query_id
            sock.sendto(query.to_wire(), (server.host, server.port))
        first = dns.message.from_wire(sock.recv(4096))
    assert first.id == 2
    assert answer_set(first) == {(fqdn("web.default.svc"), "A", "172.30.0.10")}


def test_an_external_name_is_followed_upstream(records, start_server, upstream) -> None:
    server = start_server(records, "--upstream", _via(upstream))
    response = ask(server, fqdn("search.default.svc"), "A")
    assert answer_set(response) == {
        (fqdn("search.default.svc"), "CNAME", "www.example.com."),
        ("www.example.com.", "A", "192.0.2.1"),
    }
    assert response.flags & dns.flags.AA


def test_reverse_names_of_other_ips_are_forwarded(records, start_server, upstream) -> None:
    server = start_server(records, "--upstream", _via(upstream))
    ask(server, "9.9.0.10.in-addr.arpa.", "PTR")
    assert upstream.count("9.9.0.10.in-addr.arpa.") == 1


def test_identical_questions_at_once_share_one_upstream_exchange(
    records, start_server, upstream
) -> None:
    server = start_server(records, "--upstream", _via(upstream))
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(5)]
    try:
        for index, sock in enumerate(sockets):
            query = dns.message.make_query("late-1.example.", "A")
            query.id = 100 + index
            sock.sendto(query.to_wire(), (server.host, server.port))
        for index, sock in enumerate(sockets):
            sock.settimeout(5)
            response = dns.message.from_wire(sock.recv(4096))
            assert response.id == 100 + index
            assert answer_set(response) == {("late-1.example.", "A", "192.0.2.1")}
    finally:
        for sock in sockets:
            sock.close()
    assert upstream.count("late-1.example.") == 1


def test_questions_leave_from_several_random_ports_with_random_ids(
    records, start_server, upstream
) -> None:
    server = start_server(records, "--upstream", _via(upstream))
    for index in range(40):
        assert rcode(ask(server, f"spread-{index}.example.", "A")) == "NOERROR"
    ports = {port for port, _ in upstream.sources}
    ids = [query_id for _, query_id in upstream.sources]
    assert len(ports) > 1 and server.port not in ports
    assert len(set(ids)) > len(ids) // 2 and ids != sorted(ids)  # random, not counted up

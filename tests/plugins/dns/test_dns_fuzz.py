"""Malformed input never crashes or stalls the server (fuzzing with a fixed seed)."""

from __future__ import annotations

import random
import socket
import struct

import dns.message
import pytest
from dnsrun import RECORDS, answer_set, ask, fqdn, write_records
from hypothesis import given, settings
from hypothesis import strategies as st

from nodehost.plugins.dns.records import ClusterRecords, ClusterZone
from nodehost.plugins.dns.respond import Responder
from nodehost.plugins.dns.wire import HotCache

SEED = 20261130
VALID = dns.message.make_query(fqdn("web.default.svc"), "A", use_edns=0).to_wire()


def _header(qd: int = 1, an: int = 0, ns: int = 0, ar: int = 0, flags: int = 0x0100) -> bytes:
    return struct.pack("!HHHHHH", 0x1111, flags, qd, an, ns, ar)


HOSTILE = [
    b"",
    b"\x00",
    _header()[:11],
    _header(),  # a question count with no question
    _header() + b"\x3f" + b"a" * 10,  # a label longer than the message
    _header() + b"\x40abc\x00\x00\x01\x00\x01",  # an unknown label type
    _header() + b"\xc0\x0c\x00\x01\x00\x01",  # a name pointing at itself
    _header() + b"\x01a\xc0\x0c\x00\x01\x00\x01",  # a loop through one label
    _header() + b"\xc0\xff\x00\x01\x00\x01",  # a pointer past the end
    _header(qd=65535, an=65535, ns=65535, ar=65535) + VALID[12:],  # huge counts
    _header(qd=2) + VALID[12:],  # two questions announced, one sent
    _header(qd=0),  # no question
    _header(flags=0x8000) + VALID[12:],  # a response
    _header(flags=0x2800) + VALID[12:],  # opcode UPDATE
    VALID[:-3],  # a truncated OPT record
    VALID + b"\x00" * 40,  # trailing junk
    (b"\x3f" + b"a" * 63) * 5,  # labels past 255 bytes
]


def _mutations(rng: random.Random, count: int) -> list[bytes]:
    packets = []
    for _ in range(count):
        data = bytearray(VALID)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        packets.append(bytes(data[: rng.randint(0, len(data))]))
    return packets


def _send_udp(server, packets: list[bytes]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for packet in packets:
            sock.sendto(packet, (server.host, server.port))


def test_hostile_udp_packets_leave_the_server_answering(records, start_server) -> None:
    server = start_server(records)
    rng = random.Random(SEED)
    noise = [rng.randbytes(rng.randint(0, 600)) for _ in range(300)]
    _send_udp(server, HOSTILE * 3 + noise + _mutations(rng, 600))
    assert answer_set(ask(server, fqdn("web.default.svc"), "A")) == {
        (fqdn("web.default.svc"), "A", "172.30.0.10")
    }
    returncode, errors = server.stop()
    assert (returncode, "Traceback" in errors) == (0, False), errors


def test_hostile_tcp_clients_leave_the_server_answering(records, start_server) -> None:
    server = start_server(records)
    rng = random.Random(SEED)
    address = (server.host, server.port)
    idle = [socket.create_connection(address, timeout=5) for _ in range(30)]
    try:
        for connection in idle[:10]:
            connection.sendall(b"\x01")  # half a length prefix, then silence
        for connection in idle[10:20]:
            connection.sendall(b"\x00\x40" + VALID[:10])  # a truncated frame, then silence
        for packet in HOSTILE + _mutations(rng, 100):
            with socket.create_connection(address, timeout=5) as connection:
                connection.sendall(struct.pack("!H", len(packet)) + packet)
        for frame in (b"\x00\x00", b"\xff\xff" + b"x" * 100, rng.randbytes(3000)):
            with socket.create_connection(address, timeout=5) as connection:
                connection.sendall(frame)
        assert answer_set(ask(server, fqdn("web.default.svc"), "A", tcp=True)) == {
            (fqdn("web.default.svc"), "A", "172.30.0.10")
        }
        assert answer_set(ask(server, fqdn("web.default.svc"), "A")) != set()
    finally:
        for connection in idle:
            connection.close()
    returncode, errors = server.stop()
    assert (returncode, "Traceback" in errors) == (0, False), errors


@pytest.fixture
def records(tmp_path):
    return write_records(tmp_path / "records.yaml", RECORDS)


RESPONDER = Responder(ClusterZone("cluster.local", ClusterRecords()), HotCache(limit=100), None)


@given(st.binary(max_size=300))
@settings(max_examples=500, deadline=None)
def test_the_responder_turns_any_bytes_into_a_response_or_silence(data) -> None:
    result = RESPONDER.respond(data, data[2:], False)
    assert result is None or isinstance(result, bytes)

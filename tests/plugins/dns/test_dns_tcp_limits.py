"""Idle TCP connections, however many, never lock other clients out (RFC 7766 §6.2.2).

Real sockets against the real server process; every check waits on an answer
or on the server's own close, never on a clock.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import dns.message
import dns.query
from dnsrun import answer_set, fqdn

from nodehost.plugins.dns.server import TCP_MAX_CONNECTIONS, TCP_MAX_PER_CLIENT

WEB = (fqdn("web.default.svc"), "A", "172.30.0.10")


@contextmanager
def idle_connections(server: object, source: str, count: int) -> Iterator[list[socket.socket]]:
    """``count`` TCP connections from ``source`` that never send anything."""
    with ExitStack() as stack:
        connections = []
        for _ in range(count):
            connection = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            connection.bind((source, 0))
            connection.settimeout(10)
            connection.connect((server.host, server.port))  # type: ignore[attr-defined]
            connections.append(connection)
        yield connections


def ask_tcp_from(server: object, source: str) -> set[tuple[str, str, str]]:
    query = dns.message.make_query(WEB[0], "A")
    response = dns.query.tcp(
        query,
        server.host,  # type: ignore[attr-defined]
        port=server.port,  # type: ignore[attr-defined]
        source=source,
        timeout=10,
    )
    return answer_set(response)


def is_closed_by_server(connection: socket.socket) -> bool:
    connection.setblocking(False)
    try:
        return connection.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def test_an_idle_flood_from_one_client_leaves_others_answered(server: object) -> None:
    with idle_connections(server, "127.0.0.1", TCP_MAX_CONNECTIONS + 20):
        assert WEB in ask_tcp_from(server, "127.0.0.2")


def test_idle_connections_from_many_clients_give_way_to_a_new_one(server: object) -> None:
    per_address = TCP_MAX_PER_CLIENT // 2
    addresses = [f"127.0.1.{n}" for n in range(1, TCP_MAX_CONNECTIONS // per_address + 3)]
    with ExitStack() as stack:
        for address in addresses:
            stack.enter_context(idle_connections(server, address, per_address))
        assert WEB in ask_tcp_from(server, "127.0.0.3")


def test_one_client_keeps_its_most_recent_connections(server: object) -> None:
    extra = 5
    with idle_connections(server, "127.0.0.4", TCP_MAX_PER_CLIENT + extra) as connections:
        # An answer from the same address means the server has seen every connection before it.
        assert WEB in ask_tcp_from(server, "127.0.0.4")
        closed = [is_closed_by_server(connection) for connection in connections]
    assert closed == [True] * (extra + 1) + [False] * (TCP_MAX_PER_CLIENT - 1)

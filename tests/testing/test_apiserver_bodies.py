"""The test API server reads every request's body, whatever it answers.

A body left unread (a DELETE's DeleteOptions, a refused POST's object) was read as
the next request on the connection, and the client got an error page where its
next answer should be: kubectl saw ``malformed HTTP status code "HTML>"``.
"""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import pytest

from nodehost.testing.apiserver import TestApiServer


@pytest.mark.parametrize("method", ["DELETE", "POST"])
def test_a_refused_request_with_a_body_leaves_the_connection_usable(
    tmp_path: Path, method: str
) -> None:
    body = b'{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}'
    with TestApiServer(tmp_path / "api") as api:
        context = ssl.create_default_context(cafile=str(api.ca_file))
        raw = socket.create_connection(("127.0.0.1", api.port), timeout=10)
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
            conn.sendall(
                f"{method} /api/v1/namespaces/default/configmaps/x HTTP/1.1\r\nHost: x\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
                + b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
    answers = data.split(b"HTTP/1.1 ")[1:]
    assert [answer.split()[0] for answer in answers] == [b"401", b"200"], data[:2000]
    assert b'"gitVersion"' in answers[1]

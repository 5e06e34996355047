"""The gRPC health probe the runtime's readiness uses (``nodehost.runtime.grpchealth``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from hyperframe.frame import GoAwayFrame

from nodehost.component import GrpcHealthProbe
from nodehost.runtime.grpchealth import (
    GrpcStatusError,
    HealthCheckError,
    check_health,
    grpc_message,
    serving_status,
)
from nodehost.runtime.ownership import Owner
from nodehost.runtime.probes import attempt, check


def test_a_serving_answer_is_read_from_the_grpc_frame() -> None:
    assert serving_status(grpc_message(b"\x08\x01")) == "SERVING"
    assert serving_status(grpc_message(b"\x08\x02")) == "NOT_SERVING"
    assert serving_status(grpc_message(b"")) == "UNKNOWN"


def test_a_compressed_or_truncated_answer_is_not_taken_for_a_status() -> None:
    with pytest.raises(HealthCheckError):
        serving_status(b"\x01\x00\x00\x00\x02\x08\x01")
    with pytest.raises(HealthCheckError):
        serving_status(grpc_message(b"\x08"))


def test_a_missing_socket_fails_the_probe_with_the_reason(tmp_path: Path) -> None:
    probe = GrpcHealthProbe(path=str(tmp_path / "absent.sock"))
    assert asyncio.run(check(probe)) == (False, "No such file or directory")


def test_a_server_that_refuses_the_call_fails_the_probe_saying_so(tmp_path: Path) -> None:
    path = str(tmp_path / "refusing.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()

    def answer_once() -> None:
        connection, _ = server.accept()
        connection.recv(4096)
        connection.sendall(GoAwayFrame(0).serialize())
        while connection.recv(4096):  # until the client hangs up
            pass
        connection.close()

    thread = threading.Thread(target=answer_once, daemon=True)
    thread.start()
    passed, detail = asyncio.run(check(GrpcHealthProbe(path=path, timeout=5)))
    thread.join(5)
    server.close()
    assert not passed
    assert detail == "the server refused the call (HTTP/2 GOAWAY)"


def serve_once(path: str, answer) -> threading.Thread:
    """An h2 server on ``path`` answering one call with ``answer(connection, stream_id)``."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    return answer_on(server, answer, close=True)


def answer_on(server: socket.socket, answer, *, close: bool = False) -> threading.Thread:
    """Answer one call on the listening ``server`` (closed afterwards if ``close``)."""
    from h2.config import H2Configuration
    from h2.connection import H2Connection
    from h2.events import StreamEnded

    def run() -> None:
        client, _ = server.accept()
        connection = H2Connection(H2Configuration(client_side=False))
        connection.initiate_connection()
        client.sendall(connection.data_to_send())
        with contextlib.suppress(OSError):  # the client hangs up once it has its answer
            while data := client.recv(65536):
                for event in connection.receive_data(data):
                    if isinstance(event, StreamEnded):
                        answer(connection, event.stream_id)
                client.sendall(connection.data_to_send())
        client.close()
        if close:
            server.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_an_unknown_service_is_grpc_not_found_with_the_servers_message(tmp_path: Path) -> None:
    def not_found(connection, stream: int) -> None:  # a trailers-only answer, as grpc-go sends
        headers = [(":status", "200"), ("content-type", "application/grpc"),
                   ("grpc-status", "5"), ("grpc-message", "unknown%20service")]  # fmt: skip
        connection.send_headers(stream, headers, end_stream=True)

    path = str(tmp_path / "grpc.sock")
    thread = serve_once(path, not_found)
    with pytest.raises(GrpcStatusError) as raised:
        asyncio.run(asyncio.wait_for(check_health(path, "no.such.Service"), 10))
    thread.join(5)
    assert (raised.value.code, raised.value.code_name) == (5, "NOT_FOUND")
    assert str(raised.value) == "gRPC status NOT_FOUND: unknown service"


def serving(connection, stream: int) -> None:
    """A SERVING answer: the message in a data frame, the status in trailers."""
    connection.send_headers(stream, [(":status", "200"), ("content-type", "application/grpc")])
    connection.send_data(stream, grpc_message(b"\x08\x01"))
    connection.send_headers(stream, [("grpc-status", "0")], end_stream=True)


def test_a_serving_answer_in_data_and_trailers_is_read(tmp_path: Path) -> None:
    path = str(tmp_path / "grpc.sock")
    thread = serve_once(path, serving)
    assert asyncio.run(asyncio.wait_for(check_health(path), 10)) == "SERVING"
    thread.join(5)


@pytest.mark.parametrize(("whose", "passed"), [("this process", True), ("another process", False)])
def test_serving_counts_only_when_the_owner_holds_the_socket(
    tmp_path: Path, whose: str, passed: bool
) -> None:
    """SERVING from a socket the component does not hold is a failed attempt naming the holder."""
    path = str(tmp_path / "grpc.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    thread = answer_on(server, serving)
    stranger = subprocess.Popen(["sleep", "600"])
    try:
        owner = Owner(os.getpid() if whose == "this process" else stranger.pid)
        result = asyncio.run(attempt(GrpcHealthProbe(path=path), owner))
    finally:
        stranger.kill()
        stranger.wait()
        thread.join(5)
        server.close()
    assert result.passed is passed
    if passed:
        assert result.detail == "SERVING"
    else:
        assert result.detail.startswith(f"{path} is held by pid {os.getpid()} (")

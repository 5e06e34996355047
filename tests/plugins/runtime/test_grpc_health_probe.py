"""The gRPC health probe the runtime's readiness uses (``nodehost.runtime.grpchealth``)."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path

import pytest

from nodehost.component import GrpcHealthProbe
from nodehost.runtime.grpchealth import (
    GOAWAY,
    HealthCheckError,
    frame,
    grpc_message,
    serving_status,
)
from nodehost.runtime.probes import check


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
        connection.sendall(frame(GOAWAY, 0, 0, bytes(8)))
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

"""The gRPC health probe and the CRI client the runtime's readiness uses (``nodehost.daemon``)."""

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
from nodehost.daemon.grpchealth import (
    GrpcStatusError,
    HealthCheckError,
    check_health,
    grpc_message,
    serving_status,
)
from nodehost.daemon.ownership import Owner
from nodehost.daemon.probes import attempt, check


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


# --- the CRI client (nodehost.daemon.cri) over the same unary call ---------------------------


NETWORK_NOT_READY = ("NetworkPluginNotReady", "cni config uninitialized")


def cri_answer(runtime_ready: bool, network_ready: bool):
    """One message that answers both ``Version`` and ``Status``: field 1 is Status's
    RuntimeStatus (a string Version's reader skips), 2-4 Version's name, version and API."""
    from nodehost.api.protowire import encode_field, encode_message

    conditions = b"".join(
        encode_field(1, encode_message((1, kind), (2, ready), (3, reason), (4, message)))
        for kind, ready, reason, message in (
            ("RuntimeReady", runtime_ready, "" if runtime_ready else "Broken", ""),
            ("NetworkReady", network_ready, *(("", "") if network_ready else NETWORK_NOT_READY)),
        )
    )
    payload = encode_field(1, conditions) + encode_message((2, "fake"), (3, "1.2"), (4, "v1"))

    def answer(connection, stream: int) -> None:
        connection.send_headers(stream, [(":status", "200"), ("content-type", "application/grpc")])
        connection.send_data(stream, grpc_message(payload))
        connection.send_headers(stream, [("grpc-status", "0")], end_stream=True)

    return answer


def fake_cri(path: str, answer) -> socket.socket:
    """A server on ``path`` answering two calls (``Version``, then ``Status``) with ``answer``."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    answer_on(server, answer)
    answer_on(server, answer)
    return server


def test_a_cri_status_names_the_runtime_and_both_conditions(tmp_path: Path) -> None:
    from nodehost.daemon.cri import runtime_status

    path = str(tmp_path / "cri.sock")
    server = fake_cri(path, cri_answer(True, False))
    status = asyncio.run(runtime_status(f"unix://{path}", timeout=10))
    server.close()
    assert (status.version, status.api_version) == ("fake 1.2", "v1")
    assert status.runtime_ready and not status.network_ready
    assert status.summary() == (
        "fake 1.2: RuntimeReady=true, NetworkReady=false "
        "(NetworkPluginNotReady: cni config uninitialized)"
    )


def test_a_runtime_not_ready_fails_the_cri_probe_saying_why(tmp_path: Path) -> None:
    from nodehost.component import CriProbe

    path = str(tmp_path / "cri.sock")
    server = fake_cri(path, cri_answer(False, True))
    passed, detail = asyncio.run(check(CriProbe(endpoint=f"unix://{path}", timeout=10)))
    server.close()
    assert not passed
    assert detail == (
        "fake 1.2: RuntimeReady=false (Broken), NetworkReady=true: "
        "a kubelet runs no pod until RuntimeReady is true"
    )


def test_a_runtime_ready_passes_the_cri_probe_with_its_status(tmp_path: Path) -> None:
    from nodehost.component import CriProbe

    path = str(tmp_path / "cri.sock")
    server = fake_cri(path, cri_answer(True, False))
    passed, detail = asyncio.run(check(CriProbe(endpoint=f"unix://{path}", timeout=10)))
    server.close()
    assert passed
    assert detail == (
        "fake 1.2: RuntimeReady=true, NetworkReady=false "
        "(NetworkPluginNotReady: cni config uninitialized)"
    )


def test_a_grpc_server_without_cri_is_not_cri_with_what_to_change(tmp_path: Path) -> None:
    from nodehost.daemon.cri import NotCri, runtime_status

    def unknown_service(connection, stream: int) -> None:
        headers = [(":status", "200"), ("content-type", "application/grpc"), ("grpc-status", "12"),
                   ("grpc-message", "unknown service runtime.v1.RuntimeService")]  # fmt: skip
        connection.send_headers(stream, headers, end_stream=True)

    path = str(tmp_path / "grpc.sock")
    serve_once(path, unknown_service)
    with pytest.raises(NotCri) as raised:
        asyncio.run(runtime_status(path, timeout=10))
    line = (
        f"{path} does not serve CRI (runtime.v1.RuntimeService: UNIMPLEMENTED: unknown service "
        "runtime.v1.RuntimeService): a kubelet cannot run pods on it"
    )
    assert str(raised.value) == line
    hinted = str(tmp_path / "hinted.sock")
    serve_once(hinted, unknown_service)
    with pytest.raises(NotCri) as raised:
        asyncio.run(runtime_status(hinted, timeout=10, not_cri_hint="turn its CRI on"))
    assert str(raised.value) == line.replace(path, hinted) + "; turn its CRI on"

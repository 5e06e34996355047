"""``nodehost status`` against answers nodehost's own server never gives: another version's
document (fields missing or added, control characters in names) and a server that drips."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest


def serve(handle) -> Iterator[int]:
    """A loopback server on a free port calling ``handle(connection)`` per connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                with contextlib.suppress(OSError):
                    handle(connection, stop)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    listener.close()


def answering(document: dict) -> object:
    body = json.dumps(document).encode()

    def handle(connection: socket.socket, stop: threading.Event) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        connection.sendall(head.encode() + body)

    return handle


def status(port: int, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "nodehost.cli.status", "--address", f"127.0.0.1:{port}"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=60)


OTHER_VERSION = {
    "state": "starting",
    "newField": {"x": 1},
    "components": [
        {"name": "kube\x1b[31mlet\n", "state": "running", "ready": True},
        {"name": "proxy", "details": {"certificates": [{"name": "serving", "present": True}]}},
        "not even a mapping",
    ],
}


@pytest.fixture
def other_version() -> Iterator[int]:
    yield from serve(answering(OTHER_VERSION))


def test_a_document_from_another_version_is_shown_not_a_traceback(other_version: int) -> None:
    result = status(other_version)
    assert result.returncode == 1  # no "ready": not ready
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "node: not ready (starting); nodehost pid ?, up ?"
    assert lines[2].startswith("kube\\x1b[31mlet\\n  running")
    assert "\x1b" not in result.stdout
    assert "certificate serving (proxy): expires ? (?)" in lines


def test_a_dripping_server_meets_the_overall_deadline() -> None:
    def drip(connection: socket.socket, stop: threading.Event) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\n")
        while not stop.wait(0.2):
            connection.sendall(b"X")

    for port in serve(drip):
        result = status(port, "--timeout", "1")
        assert result.returncode == 1
        assert result.stderr.strip() == (
            f"error: no whole answer from 127.0.0.1:{port} within 1s (see --timeout)"
        )


PARTIAL_CONFIGURATION = {
    "ready": True,
    "components": [],
    "configuration": {"reload": True, "last_apply": {"result": "rejected", "problems": ["a\x07"]}},
}


@pytest.fixture
def partial_configuration() -> Iterator[int]:
    yield from serve(answering(PARTIAL_CONFIGURATION))


def test_a_configuration_block_missing_fields_is_shown_as_far_as_it_goes(
    partial_configuration: int,
) -> None:
    result = status(partial_configuration)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stdout.splitlines()
    assert "config: ? (generation ?)" in lines
    assert "config rejected ? ago (generation ?, from ?)" in lines
    assert "  a\\x07" in lines


@pytest.fixture
def deeply_nested() -> Iterator[int]:
    depth = 100_000
    body = ('{"components": [], "state": ' + "[" * depth + "]" * depth + "}").encode()

    def handle(connection: socket.socket, stop: threading.Event) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        connection.sendall(head.encode() + body)

    yield from serve(handle)


@pytest.mark.parametrize("args", [(), ("--json",)])
def test_a_document_nested_too_deeply_is_one_line_not_a_traceback(
    deeply_nested: int, args: tuple[str, ...]
) -> None:
    result = status(deeply_nested, *args)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert f"127.0.0.1:{deeply_nested} answered /status" in (result.stderr + result.stdout)

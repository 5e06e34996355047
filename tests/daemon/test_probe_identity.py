"""A readiness probe counts only when the listener it reaches belongs to the component.

Real processes and real sockets: the component is a child process that
listens (or a shell whose child listens), the stranger is this test process
or another child holding the port first.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hostrun import http_get, wait_for

from nodehost.component import HttpProbe, TcpProbe, UnixProbe
from nodehost.daemon.ownership import Owner
from nodehost.daemon.probes import attempt

LISTENER = """
import socket, sys
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
server = socket.socket(family)
server.bind((sys.argv[1], 0))
server.listen(64)
print(server.getsockname()[1], flush=True)
while True:
    server.accept()[0].close()
"""


def spawn_listener(
    host: str = "127.0.0.1", *, via_shell: bool = False
) -> tuple[subprocess.Popen[str], int]:
    """A child (or a shell's child) that listens on ``host`` and accepts; ``(process, port)``."""
    argv = [sys.executable, "-c", LISTENER, host]
    if via_shell:
        argv = ["sh", "-c", '"$@"; exit 0', "sh", *argv]
    # A group of its own: the cleanup ends the shell's child with it.
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True)
    return process, int(process.stdout.readline())


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the process and what it started
        except ProcessLookupError:  # not a group leader: the process alone
            process.kill()
        process.wait()


def sleeper(children: list[subprocess.Popen[str]]) -> subprocess.Popen[str]:
    process = subprocess.Popen(["sleep", "600"], text=True)
    children.append(process)
    return process


class Recorder(BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self) -> None:
        Recorder.requests.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def stranger() -> Iterator[int]:
    """An HTTP server in this test process on a free port, answering 200 to everything."""
    Recorder.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def probe_attempt(probe, pid: int):
    return asyncio.run(attempt(probe, Owner(pid)))


def test_the_components_own_listener_counts(children: list[subprocess.Popen[str]]) -> None:
    process, port = spawn_listener()
    children.append(process)
    result = probe_attempt(TcpProbe(host="127.0.0.1", port=port), process.pid)
    assert result.passed, result.detail


def test_a_listener_in_a_descendant_counts(children: list[subprocess.Popen[str]]) -> None:
    shell, port = spawn_listener(via_shell=True)
    children.append(shell)
    listener = wait_for(lambda: next(iter(children_of(shell.pid)), None), what="the shell's child")
    assert listener != shell.pid
    assert probe_attempt(TcpProbe(host="127.0.0.1", port=port), shell.pid).passed


def children_of(pid: int) -> set[int]:
    found = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        found |= {int(p) for p in Path(f"/proc/{pid}/task/{task}/children").read_text().split()}
    return found


def test_a_listener_of_another_process_is_refused_and_named(
    children: list[subprocess.Popen[str]], stranger: int
) -> None:
    component = sleeper(children)
    result = probe_attempt(TcpProbe(host="127.0.0.1", port=stranger), component.pid)
    assert not result.passed
    assert f"127.0.0.1:{stranger} is held by pid {os.getpid()} (" in result.detail
    assert result.foreign is not None
    assert [holder.pid for holder in result.foreign.holders] == [os.getpid()]
    command = result.foreign.holders[0].command
    assert (
        command.split()[0]
        == Path(f"/proc/{os.getpid()}/cmdline").read_bytes().split(b"\0")[0].decode()
    )


def test_an_http_probe_sends_no_request_to_another_process(
    children: list[subprocess.Popen[str]], stranger: int
) -> None:
    component = sleeper(children)
    probe = HttpProbe(url=f"http://127.0.0.1:{stranger}/healthz")
    result = probe_attempt(probe, component.pid)
    assert not result.passed and "is held by pid" in result.detail
    assert Recorder.requests == []
    assert probe_attempt(probe, os.getpid()).passed  # the same server counts for its owner
    assert Recorder.requests == ["/healthz"]


def test_a_unix_listener_of_another_process_is_refused(
    children: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        component = sleeper(children)
        refused = probe_attempt(UnixProbe(path=path), component.pid)
        owned = probe_attempt(UnixProbe(path=path), os.getpid())
    assert not refused.passed
    assert f"{path} is held by pid {os.getpid()}" in refused.detail
    assert owned.passed


def test_a_wildcard_listener_counts_for_a_loopback_probe(
    children: list[subprocess.Popen[str]],
) -> None:
    process, port = spawn_listener("0.0.0.0")
    children.append(process)
    other = sleeper(children)
    assert probe_attempt(TcpProbe(host="127.0.0.1", port=port), process.pid).passed
    assert not probe_attempt(TcpProbe(host="127.0.0.1", port=port), other.pid).passed


def test_an_ipv6_listener_is_matched(children: list[subprocess.Popen[str]]) -> None:
    try:
        socket.socket(socket.AF_INET6).close()
        process, port = spawn_listener("::1")
    except (OSError, ValueError):
        pytest.skip(
            "this machine has no IPv6 loopback (its kernel or network setup, not a missing install)"
        )
    children.append(process)
    other = sleeper(children)
    assert probe_attempt(TcpProbe(host="::1", port=port), process.pid).passed
    assert not probe_attempt(TcpProbe(host="::1", port=port), other.pid).passed


def test_a_component_whose_process_exited_is_never_ready() -> None:
    """The shell exits and leaves its listening child behind: that listener is no longer
    the component's."""
    argv = ["sh", "-c", '"$@" & echo $!', "sh", sys.executable, "-c", LISTENER, "127.0.0.1"]
    shell = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    orphan = int(shell.stdout.readline())
    try:
        port = int(shell.stdout.readline())
        shell.wait()
        result = probe_attempt(TcpProbe(host="127.0.0.1", port=port), shell.pid)
        assert not result.passed
        assert f"is held by pid {orphan} (" in result.detail
    finally:
        os.kill(orphan, 9)


def test_the_host_names_the_holder_while_waiting_and_when_it_gives_up(
    host_run, stranger: int
) -> None:
    run = host_run(
        [{"name": "web", "argv": ["sleep", "600"], "ready": {"tcp": f"127.0.0.1:{stranger}"}}]
    )
    held = f"127.0.0.1:{stranger} is held by pid {os.getpid()}"
    status, text = wait_for(
        lambda: (lambda answer: answer if held in answer[1] else None)(
            http_get(run.url("/readyz?verbose"))
        ),
        what="/readyz?verbose naming the holder",
    )
    assert status == 503 and "[-]web not ready" in text
    document = http_get(run.url("/status"))[1]
    assert f'"pid": {os.getpid()}' in document and "foreign_listener" in document
    warned = run.events("readiness probe reached another process")
    assert warned and warned[0]["address"] == f"127.0.0.1:{stranger}"
    assert len(warned) == 1  # once per holder, not once per attempt
    run.signal(15)
    assert run.wait() == 0


def test_a_ready_timeout_report_names_the_holder(host_run, stranger: int) -> None:
    run = host_run(
        [{"name": "web", "argv": ["sleep", "600"], "ready": {"tcp": f"127.0.0.1:{stranger}"}}],
        "--exit-on-ready",
        "--ready-timeout",
        "0.5",
    )
    assert run.wait() == 1
    assert "component web not ready" in run.stderr()
    assert f"web's readiness probe: 127.0.0.1:{stranger} is held by pid {os.getpid()}" in (
        run.stderr()
    )

"""One attempt of each readiness probe against real loopback listeners, and the poll schedule."""

from __future__ import annotations

import asyncio
import itertools
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodehost.component import FileProbe, HttpProbe, StartedProbe, TcpProbe, UnixProbe
from nodehost.runtime.probes import STARTING_WINDOW, check, poll_delays


def attempt(probe) -> tuple[bool, str]:
    return asyncio.run(check(probe))


class OneLineServer:
    """A loopback TCP server that answers every connection with ``reply`` and records requests."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.requests: list[bytes] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.requests.append(conn.recv(4096))
                conn.sendall(self.reply)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def serve() -> Iterator:
    servers: list[OneLineServer] = []

    def start(reply: bytes) -> OneLineServer:
        servers.append(OneLineServer(reply))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.mark.parametrize(
    ("status", "passed"), [(200, True), (204, True), (299, True), (199, False), (300, False)]
)
def test_http_passes_on_2xx_only(serve, status: int, passed: bool) -> None:
    server = serve(f"HTTP/1.1 {status} X\r\n\r\n".encode())
    assert attempt(HttpProbe(url=f"http://127.0.0.1:{server.port}/healthz")) == (
        passed,
        f"HTTP {status}",
    )


def test_http_sends_the_path_query_and_host(serve) -> None:
    server = serve(b"HTTP/1.1 200 OK\r\n\r\n")
    attempt(HttpProbe(url=f"http://u:p@127.0.0.1:{server.port}/readyz?verbose=1"))
    request = server.requests[0].decode()
    assert request.startswith("GET /readyz?verbose=1 HTTP/1.1\r\n")
    assert f"\r\nHost: 127.0.0.1:{server.port}\r\n" in request
    assert "Connection: close" in request


def test_http_root_path_when_the_url_has_none(serve) -> None:
    server = serve(b"HTTP/1.1 200 OK\r\n\r\n")
    attempt(HttpProbe(url=f"http://127.0.0.1:{server.port}"))
    assert server.requests[0].startswith(b"GET / HTTP/1.1\r\n")


@pytest.mark.parametrize("reply", [b"SSH-2.0-x\r\n", b"", b"HTTP/1.1 abc\r\n"])
def test_something_that_is_not_http_fails(serve, reply: bytes) -> None:
    server = serve(reply)
    assert attempt(HttpProbe(url=f"http://127.0.0.1:{server.port}/")) == (False, "no HTTP answer")


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/", "http:///x", "nonsense"])
def test_a_url_that_is_not_http_fails_with_the_reason(url: str) -> None:
    assert attempt(HttpProbe(url=url)) == (False, f"not an http(s) URL: {url!r}")


def test_https_to_a_plain_server_fails_without_raising(serve) -> None:
    server = serve(b"HTTP/1.1 200 OK\r\n\r\n")
    passed, _ = attempt(HttpProbe(url=f"https://127.0.0.1:{server.port}/", insecure=True))
    assert passed is False


def test_tcp_passes_when_accepted_and_names_the_refusal(serve) -> None:
    server = serve(b"")
    assert attempt(TcpProbe(port=server.port)) == (True, "accepted")
    with socket.socket() as unused:  # bound, not listening: connections are refused
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        passed, detail = attempt(TcpProbe(port=port))
    assert not passed and str(port) in detail  # the OS error, naming the address


def test_unix_passes_when_accepted(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen()
    try:
        assert attempt(UnixProbe(path=path)) == (True, "accepted")
    finally:
        listener.close()
    assert attempt(UnixProbe(path=str(tmp_path / "none.sock")))[0] is False


def test_file_passes_once_the_file_exists(tmp_path: Path) -> None:
    probe = FileProbe(path=str(tmp_path / "flag"))
    assert attempt(probe) == (False, "does not exist")
    (tmp_path / "flag").write_text("")
    assert attempt(probe) == (True, "exists")


def test_a_started_probe_passes_at_once() -> None:
    assert attempt(StartedProbe()) == (True, "started")


def test_an_attempt_that_hangs_fails_at_the_timeout() -> None:
    listener = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        assert attempt(HttpProbe(url=url, timeout=0.2)) == (False, "timed out after 0.2s")
    finally:
        listener.close()


def test_polls_start_at_5_ms_and_stay_at_20_ms_while_starting() -> None:
    delays = list(itertools.islice(poll_delays(StartedProbe(interval=0.5)), 6))
    assert delays == [0.005, 0.01, 0.02, 0.02, 0.02, 0.02]


def test_after_the_starting_window_polls_double_up_to_the_interval() -> None:
    delays = poll_delays(StartedProbe(interval=0.5))
    starting = list(itertools.takewhile(lambda delay: delay <= 0.02, delays))
    assert sum(starting) >= STARTING_WINDOW
    assert list(itertools.islice(delays, 4)) == [0.08, 0.16, 0.32, 0.5]


def test_an_interval_shorter_than_the_cap_is_the_poll() -> None:
    delays = list(itertools.islice(poll_delays(StartedProbe(interval=0.01)), 4))
    assert delays == [0.005, 0.01, 0.01, 0.01]

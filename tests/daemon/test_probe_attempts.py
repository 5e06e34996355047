"""One attempt of each readiness probe against real loopback listeners, and the poll schedule."""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodehost.component import (
    CriProbe,
    FileProbe,
    GrpcHealthProbe,
    HttpProbe,
    StartedProbe,
    TcpProbe,
    UnixProbe,
)
from nodehost.daemon import probes
from nodehost.daemon.ownership import Owner
from nodehost.daemon.probes import (
    STARTING_WINDOW,
    _addresses,
    _tcp_target,
    check,
    foreign_listener,
    poll_delays,
)
from nodehost.testing import parts


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


def test_the_starting_window_is_two_seconds_of_delays() -> None:
    """5 ms, 10 ms, then a hundred 20 ms delays make the first 2.015 s; then it doubles."""
    delays = list(itertools.islice(poll_delays(StartedProbe(interval=0.5)), 103))
    assert delays[:2] == [0.005, 0.01] and set(delays[2:102]) == {0.02}
    assert delays[102] == 0.04


def test_an_interval_shorter_than_the_cap_is_the_poll() -> None:
    delays = list(itertools.islice(poll_delays(StartedProbe(interval=0.01)), 4))
    assert delays == [0.005, 0.01, 0.01, 0.01]


# --- the listener a probe would reach, named without connecting ----------------------------------


@pytest.fixture
def stranger_pid() -> Iterator[int]:
    """A process that holds no socket: a component whose probe reaches someone else's."""
    process = subprocess.Popen(["sleep", "600"])
    yield process.pid
    process.kill()
    process.wait()


def test_a_foreign_tcp_or_http_listener_is_named_with_its_holder(serve, stranger_pid) -> None:
    server = serve(b"")
    for probe in (
        TcpProbe(port=server.port),
        HttpProbe(url=f"http://127.0.0.1:{server.port}/healthz"),
    ):
        verdict = foreign_listener(probe, Owner(stranger_pid))
        assert verdict is not None, probe
        assert [holder.pid for holder in verdict.named().holders] == [os.getpid()]
        assert verdict.address == f"127.0.0.1:{server.port}"
        assert foreign_listener(probe, Owner(os.getpid())) is None  # the owner's own listener


def test_a_foreign_unix_or_grpc_listener_is_named_with_its_holder(tmp_path, stranger_pid) -> None:
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)
        listener.listen()
        for probe in (
            UnixProbe(path=path),
            GrpcHealthProbe(path=path),
            CriProbe(endpoint=f"unix://{path}"),
        ):
            verdict = foreign_listener(probe, Owner(stranger_pid))
            assert verdict is not None, probe
            assert [holder.pid for holder in verdict.named().holders] == [os.getpid()]
            assert foreign_listener(probe, Owner(os.getpid())) is None


@pytest.mark.parametrize(
    "probe",
    [
        FileProbe(path="/nonexistent"),  # no socket address at all
        StartedProbe(),
        HttpProbe(url="http://127.0.0.1:99999999/"),  # a port no socket can have
        TcpProbe(host="no-such-host.invalid", port=1),  # a name that does not resolve
    ],
)
def test_no_listener_is_named_where_the_probe_has_no_address(probe, stranger_pid) -> None:
    assert foreign_listener(probe, Owner(stranger_pid)) is None


def test_nothing_listening_names_no_one(stranger_pid) -> None:
    with socket.socket() as unused:  # bound, not listening
        unused.bind(("127.0.0.1", 0))
        probe = TcpProbe(port=unused.getsockname()[1])
        assert foreign_listener(probe, Owner(stranger_pid)) is None


@pytest.mark.parametrize(
    ("probe", "target"),
    [
        (HttpProbe(url="http://node.example/healthz"), ("node.example", 80)),
        (HttpProbe(url="https://node.example/healthz"), ("node.example", 443)),
        (HttpProbe(url="https://node.example:8443/"), ("node.example", 8443)),
        (TcpProbe(host="10.0.0.1", port=10250), ("10.0.0.1", 10250)),
        (HttpProbe(url="http:///healthz"), ("", 80)),  # no host: none is made up
    ],
)
def test_a_probe_connects_to_the_urls_port_or_the_schemes_default(probe, target) -> None:
    assert _tcp_target(probe) == target


def test_every_address_a_name_resolves_to_is_looked_at_once() -> None:
    assert _addresses("127.0.0.1", 80) == ["127.0.0.1"]
    assert _addresses("no-such-host.invalid", 80) == []


# --- https -------------------------------------------------------------------------------------


@pytest.fixture
def tls_server(tmp_path) -> Iterator[int]:
    """A loopback HTTPS server with a self-signed certificate (real openssl), answering 200."""
    import ssl

    parts.require("openssl")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "1", "-subj", "/CN=probe.test", "-keyout", str(key),
         "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(4096)
                    tls.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
            except (OSError, ssl.SSLError):
                continue  # a client that refused the certificate

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()


def test_https_passes_with_an_unverified_certificate_only_when_told_to_be_insecure(
    tls_server,
) -> None:
    url = f"https://127.0.0.1:{tls_server}/healthz"
    assert attempt(HttpProbe(url=url, insecure=True)) == (True, "HTTP 200")
    passed, detail = attempt(HttpProbe(url=url))
    assert not passed and "CERTIFICATE_VERIFY_FAILED" in detail


def owned_attempt(probe, pid: int):
    return asyncio.run(probes.attempt(probe, Owner(pid)))


def test_tcp_and_http_count_only_the_owners_listener(serve, stranger_pid) -> None:
    server = serve(b"HTTP/1.1 200 OK\r\n\r\n")
    for probe in (TcpProbe(port=server.port), HttpProbe(url=f"http://127.0.0.1:{server.port}/")):
        refused = owned_attempt(probe, stranger_pid)
        assert not refused.passed and refused.foreign is not None, probe
        assert refused.detail.startswith(f"127.0.0.1:{server.port} is held by pid {os.getpid()} (")
        assert owned_attempt(probe, os.getpid()).passed, probe
    sent = [request for request in server.requests if request]
    assert len(sent) == 1 and sent[0].startswith(b"GET / HTTP/1.1")  # only to the owner's own


def test_unix_counts_only_the_owners_listener(tmp_path, stranger_pid) -> None:
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)
        listener.listen()
        refused = owned_attempt(UnixProbe(path=path), stranger_pid)
        owned = owned_attempt(UnixProbe(path=path), os.getpid())
    assert not refused.passed and refused.detail.startswith(f"{path} is held by pid {os.getpid()}")
    assert owned == (True, "accepted", None)


def test_the_http_probe_sends_one_complete_get_and_nothing_after_it(serve) -> None:
    server = serve(b"HTTP/1.1 200 OK\r\n\r\n")
    attempt(HttpProbe(url=f"http://127.0.0.1:{server.port}/healthz"))
    assert server.requests == [
        f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        "User-Agent: nodehost-probe\r\nAccept: */*\r\nConnection: close\r\n\r\n".encode()
    ]


@pytest.mark.parametrize(
    ("reply", "status"),
    [(b"HTTP/1.1 204\r\n\r\n", 204), (b"HTTP/1.1 200 \xff\xfe bad\r\n\r\n", 200)],
    ids=["no reason phrase", "reason phrase not UTF-8"],
)
def test_the_status_code_decides_whatever_the_reason_phrase(serve, reply, status) -> None:
    server = serve(reply)
    assert attempt(HttpProbe(url=f"http://127.0.0.1:{server.port}/")) == (True, f"HTTP {status}")


def test_an_owners_listener_on_ipv6_loopback_counts() -> None:
    with socket.create_server(("::1", 0), family=socket.AF_INET6) as listener:
        probe = TcpProbe(host="::1", port=listener.getsockname()[1])
        assert owned_attempt(probe, os.getpid()) == (True, "accepted", None)


# --- the pause between attempts ------------------------------------------------------------------


@pytest.fixture
def slept(monkeypatch) -> list[float]:
    """The rests :func:`probes.pause` sleeps (not slept: recorded)."""
    rests: list[float] = []

    async def sleep(seconds: float) -> None:
        rests.append(seconds)

    monkeypatch.setattr(probes.asyncio, "sleep", sleep)
    return rests


def test_a_nudge_ends_the_pause(slept) -> None:
    async def main() -> None:
        nudged = asyncio.Event()
        loop = asyncio.get_running_loop()
        pausing = asyncio.create_task(probes.pause(3600.0, nudged, loop.time() - 1.0))
        turn = loop.create_future()
        loop.call_soon(turn.set_result, None)
        await turn  # the pause is waiting
        assert not pausing.done()
        nudged.set()
        await pausing

    asyncio.run(main())
    assert slept == []  # the last attempt began long ago: no rest after the nudge


@pytest.mark.parametrize(("delay", "rest"), [(3600.0, 0.003), (0.001, 0.001)])
def test_after_a_nudge_attempts_stay_5_ms_apart_within_the_delay(slept, delay, rest) -> None:
    """Nudged 2 ms after an attempt began: the pause lasts until 5 ms after it began, or
    until the delay's end if that is sooner (on a loop whose clock stands at 100 s)."""
    loop = asyncio.new_event_loop()
    loop.time = lambda: 100.0  # type: ignore[method-assign]
    nudged = asyncio.Event()
    nudged.set()
    try:
        loop.run_until_complete(probes.pause(delay, nudged, 99.998))
    finally:
        loop.close()
    assert slept == [pytest.approx(rest)]

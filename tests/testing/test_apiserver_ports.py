"""The test API server on several ports: one store, each port stopped and started alone."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
from pathlib import Path

from nodehost.testing.apiserver import TestApiServer


def get(api: TestApiServer, port: int, path: str) -> tuple[int, bytes]:
    """(status, body) of an anonymous ``GET path`` on ``port`` (0, b"" when refused)."""
    context = ssl.create_default_context(cafile=str(api.ca_file))
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
            conn.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
    except ConnectionRefusedError:
        return 0, b""
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_one_store_is_served_on_every_port(tmp_path: Path) -> None:
    with TestApiServer(tmp_path / "api", listeners=3) as api:
        assert len(set(api.ports)) == 3 and api.ports[0] == api.port
        assert api.urls == [f"https://127.0.0.1:{port}" for port in api.ports]
        api.put_config_map("default", "shared", {"k": "v"})
        for port in api.ports:
            code, body = get(api, port, "/readyz")
            assert (code, body) == (200, b"ok")
            assert api.connections[port] == 1


def test_a_port_stops_and_starts_alone(tmp_path: Path) -> None:
    with TestApiServer(tmp_path / "api", listeners=3) as api:
        first, second, third = api.ports
        api.go_down(second)
        assert get(api, second, "/readyz") == (0, b"")
        assert get(api, first, "/readyz")[0] == get(api, third, "/readyz")[0] == 200
        assert api.up and not api.listening(second)
        api.come_up(second)
        assert get(api, second, "/readyz")[0] == 200


def test_a_port_can_say_it_is_not_ready_and_go_on_serving(tmp_path: Path) -> None:
    with TestApiServer(tmp_path / "api", listeners=2) as api:
        first, second = api.ports
        api.set_ready(first, False)
        assert get(api, first, "/readyz")[0] == 500
        assert get(api, first, "/livez")[0] == get(api, first, "/version")[0] == 200
        assert get(api, second, "/readyz")[0] == 200


def test_standalone_prints_one_address_per_port(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "nodehost.testing.apiserver", "--dir", str(tmp_path / "api"),
         "--listeners", "2"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline().split() for _ in range(2)]
        assert [word for word, _ in lines] == ["address", "address"]
        assert len({url for _, url in lines}) == 2
    finally:
        process.terminate()
        process.wait(10)

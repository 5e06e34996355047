"""Fixtures of the DNS tests; the helpers themselves live in ``dnsrun``.

The test modules import ``dnsrun`` by name: pytest runs with
``--import-mode=importlib``, so this folder is put on ``sys.path`` here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from dnsrun import RECORDS, Dnsmasq, RunningServer, ScriptedUpstream, write_records


@pytest.fixture
def start_server() -> Iterator[Callable[..., RunningServer]]:
    """Factory: ``start_server(records_path, *extra_args)``; stopped at the end."""
    servers: list[RunningServer] = []

    def start(records: Path | None, *extra: str, bind: str = "127.0.0.1:0") -> RunningServer:
        args = ["--bind", bind, *(["--records", str(records)] if records else []), *extra]
        servers.append(RunningServer(args))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One server with :data:`RECORDS` for a whole test module (no upstreams)."""
    path = write_records(tmp_path_factory.mktemp("dns") / "records.yaml", RECORDS)
    running = RunningServer(["--bind", "127.0.0.1:0", "--records", str(path)])
    yield running
    running.stop()


@pytest.fixture
def start_dnsmasq() -> Iterator[Callable[..., Dnsmasq]]:
    """Factory: ``start_dnsmasq(port, args)``; every dnsmasq is stopped at the end."""
    started: list[Dnsmasq] = []

    def start(port: int, args: Sequence[str], address: str = "127.0.0.1") -> Dnsmasq:
        started.append(Dnsmasq(port, args, address))
        return started[-1]

    yield start
    for item in started:
        item.stop()


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    """A :class:`ScriptedUpstream` on loopback."""
    scripted = ScriptedUpstream()
    yield scripted
    scripted.close()

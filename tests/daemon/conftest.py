"""Fixtures of the runtime tests; the helpers themselves live in ``hostrun``.

The test modules import ``hostrun`` by name: pytest runs with
``--import-mode=importlib``, so this folder is put on ``sys.path`` here.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from hostrun import HostRun, NotifyReceiver


@pytest.fixture
def host_run(tmp_path: Path) -> Iterator[Callable[..., HostRun]]:
    """Factory: ``host_run(components, *args, env=None, state_dir=None)`` -> a :class:`HostRun`."""
    runs: list[HostRun] = []

    def start(
        components: list[dict[str, Any]],
        *args: str,
        env: dict[str, str] | None = None,
        state_dir: str | None = None,
    ) -> HostRun:
        directory = tmp_path / f"run{len(runs)}"
        directory.mkdir()
        run = HostRun(directory, components, list(args), env, state_dir)
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.cleanup()


@pytest.fixture
def notify_receiver(tmp_path: Path) -> Iterator[Callable[[bool], NotifyReceiver]]:
    """Factory: ``notify_receiver(abstract)`` -> a :class:`NotifyReceiver` on a fresh socket."""
    receivers: list[NotifyReceiver] = []

    def make(abstract: bool = False) -> NotifyReceiver:
        if abstract:
            address = f"@nodehost-test-{os.getpid()}-{len(receivers)}-{time.monotonic_ns()}"
        else:
            address = str(tmp_path / f"notify{len(receivers)}.sock")
        receiver = NotifyReceiver(address)
        receivers.append(receiver)
        return receiver

    yield make
    for receiver in receivers:
        receiver.close()

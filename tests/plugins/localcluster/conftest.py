"""Fixtures for the local cluster's tests: the installed executable and a short DIR."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def nodehost_bin() -> str:
    """The installed ``nodehost`` console script (as a user runs it)."""
    from nodehost.testing import parts

    parts.require("nodehost-script")
    return str(Path(sys.executable).parent / "nodehost")


@pytest.fixture
def cluster_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new DIR with a short path (containerd's socket path under DIR/state has a limit)."""
    return tmp_path_factory.mktemp("lc") / "cluster"


@pytest.fixture
def run_nodehost(nodehost_bin: str) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_nodehost(*args)``: the installed executable to its end (60 s at most)."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [nodehost_bin, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **(env or {})},
        )

    return run

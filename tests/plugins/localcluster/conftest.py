"""Fixtures for the local cluster's tests: the installed executable and a short DIR."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from nodehost.testing import noderun
from nodehost.testing.noderun import CliResult


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
def run_nodehost(nodehost_bin: str) -> Callable[..., CliResult]:
    """``run_nodehost(*args, env=...)``: the installed executable to its end (the kit's)."""
    return noderun.run_nodehost

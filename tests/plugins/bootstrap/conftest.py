"""Fixtures for bootstrap tests: the test API server and ``nodehost start`` bootstrapping.

The helpers live in ``clusterrun``; pytest runs with ``--import-mode=importlib``,
so this folder is put on ``sys.path`` here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nodehost.testing import parts
from nodehost.testing.apiserver import TestApiServer

sys.path.insert(0, str(Path(__file__).parent))

from clusterrun import CONFIG_MAP, NAMESPACE, NODE_NAME, node_config


@pytest.fixture
def api(tmp_path: Path, free_port: Callable[[], int]) -> Iterator[TestApiServer]:
    """A running test API server whose config map ``openshift-node/node-config`` holds a config
    (the stand-ins' /healthz on free ports)."""
    server = TestApiServer(tmp_path / "api")
    config = node_config(free_port(), free_port())
    server.put_config_map(
        NAMESPACE, CONFIG_MAP, {"node-config.yaml": config, "extra.conf": "hello\n"}
    )
    server.come_up()
    yield server
    server.go_down()


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

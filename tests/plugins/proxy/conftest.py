"""Fixtures for the proxy plugin tests: NodeConfigs, plan contexts, stand-in processes."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from nodehost.component import ComponentPlan, PlanContext
from nodehost.config import node_config_from_mapping
from nodehost.testing import ports

NODE = {
    "nodeName": "node1.example.com",
    "nodeIP": "10.0.0.2",
    "servingInfo": {"bindAddress": "10.0.0.2:10250"},
    "masterKubeConfig": "node.kubeconfig",
    "iptablesSyncPeriod": "45s",
    "imageConfig": {"format": "openshift/origin-${component}:${version}"},
}


@pytest.fixture
def make_config(tmp_path: Path) -> Callable[..., Any]:
    """Factory: ``make_config(**top_level_changes)`` -> a NodeConfig (paths under tmp_path/node)."""

    def make(**changes: Any) -> Any:
        raw = {**copy.deepcopy(NODE), **changes}
        config, problems = node_config_from_mapping(
            raw, source=str(tmp_path / "node-config.yaml"), base_dir=str(tmp_path / "node")
        )
        assert not [problem for problem in problems if problem.is_error], problems
        return config

    return make


@pytest.fixture
def make_context(tmp_path: Path) -> Callable[[Any], PlanContext]:
    """Factory: ``make_context(config)`` -> a PlanContext for the proxy."""

    def make(config: Any) -> PlanContext:
        from nodehost.plugins.proxy import nodehost_components

        (record,) = nodehost_components()
        return PlanContext(
            config=config,
            options=None,
            record=record,
            selected=frozenset({"proxy"}),
            state_dir=str(tmp_path / "state" / "proxy"),
            network_providers={},
            hooks=None,
        )

    return make


@pytest.fixture
def free_port() -> int:
    """A loopback TCP port that was free a moment ago."""
    return ports.free_port()


@pytest.fixture
def write_files() -> Callable[[ComponentPlan], None]:
    """Write a plan's files as the host would."""

    def write(plan: ComponentPlan) -> None:
        for spec in plan.files:
            os.makedirs(os.path.dirname(spec.path), exist_ok=True)
            Path(spec.path).write_bytes(spec.content)

    return write


class Standin:
    """The kube-proxy stand-in as a real child process."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str] | None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nodehost.plugins.proxy.standin", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )

    def wait_for(self, url: str, timeout: float = 10.0) -> int:
        """Poll ``url`` until it answers; its status (fail if the process exits first)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                out, err = self.process.communicate()
                pytest.fail(f"stand-in exited {self.process.returncode}: {out}{err}")
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    return response.status
            except urllib.error.HTTPError as error:
                return error.code
            except OSError:
                time.sleep(0.05)
        pytest.fail(f"{url} did not answer within {timeout}s")

    def stop(self) -> tuple[int, str, str]:
        self.process.send_signal(signal.SIGTERM)
        return self.finish()

    def finish(self) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=10)
        return self.process.returncode, out, err


@pytest.fixture
def start_standin() -> Iterator[Callable[..., Standin]]:
    """Factory: ``start_standin(args, env=None)``; every process is killed at the end."""
    started: list[Standin] = []

    def start(args: Sequence[str], env: Mapping[str, str] | None = None) -> Standin:
        started.append(Standin(args, env))
        return started[-1]

    yield start
    for standin in started:
        if standin.process.poll() is None:
            standin.process.kill()
            standin.process.communicate()

"""Fixtures for the kubelet plugin tests: NodeConfigs, plan contexts, stand-in processes."""

from __future__ import annotations

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
from nodehost.errors import PluginError
from nodehost.testing import ports
from nodehost.testing.nodefolder import merge

NODE = {
    "nodeName": "node1.example.com",
    "nodeIP": "10.0.0.2",
    "servingInfo": {
        "bindAddress": "0.0.0.0:10250",
        "certFile": "server.crt",
        "keyFile": "server.key",
        "clientCA": "ca.crt",
    },
    "masterKubeConfig": "node.kubeconfig",
    "dnsDomain": "cluster.local",
    "dnsIP": "10.0.0.10",
    "volumeDirectory": "volumes",
    "imageConfig": {"format": "openshift/origin-${component}:${version}"},
}


@pytest.fixture
def make_config(tmp_path: Path) -> Callable[..., Any]:
    """Factory: ``make_config(**changes)`` -> a NodeConfig (relative paths under tmp_path/node)."""

    def make(**changes: Any) -> Any:
        config, problems = node_config_from_mapping(
            merge(NODE, changes),
            source=str(tmp_path / "node-config.yaml"),
            base_dir=str(tmp_path / "node"),
        )
        assert not [problem for problem in problems if problem.is_error], problems
        return config

    return make


class FakeHooks:
    """The core's hook facade, reduced to the one call the kubelet makes."""

    def __init__(self, contributions: Mapping[str, Sequence[str]] | None = None) -> None:
        self.contributions = dict(contributions or {})
        self.calls: list[tuple[Any, frozenset[str]]] = []

    def call_each(self, hook_name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        assert hook_name == "nodehost_kubelet_arguments"
        self.calls.append((kwargs["config"], kwargs["selected"]))
        return [("contributor", dict(self.contributions))]

    def disable(self, plugin: str, error: BaseException, hook_name: str) -> None:
        """As the facade does for a built-in (or under --strict-plugins): raise."""
        raise PluginError(f"plugin {plugin!r} failed in {hook_name}: {error}")


@pytest.fixture
def make_context(tmp_path: Path) -> Callable[..., PlanContext]:
    """Factory: ``make_context(config, contributions=None)`` -> a PlanContext for the kubelet."""

    def make(config: Any, contributions: Mapping[str, Sequence[str]] | None = None) -> PlanContext:
        from nodehost.plugins.kubelet import nodehost_components

        (record,) = nodehost_components()
        return PlanContext(
            config=config,
            options=None,
            record=record,
            selected=frozenset({"kubelet"}),
            state_dir=str(tmp_path / "state" / "kubelet"),
            network_providers={},
            hooks=FakeHooks(contributions),
        )

    return make


@pytest.fixture
def free_port() -> int:
    """A loopback TCP port that was free a moment ago."""
    return ports.free_port()


@pytest.fixture
def write_files() -> Callable[[ComponentPlan], None]:
    """Write a plan's files as the host would (the host's own writer is tested elsewhere)."""

    def write(plan: ComponentPlan) -> None:
        for spec in plan.files:
            os.makedirs(os.path.dirname(spec.path), exist_ok=True)
            with open(spec.path, "wb") as handle:
                handle.write(spec.content)

    return write


#: The module of each program's stand-in (``python -m MODULE ARGS``).
STANDIN_MODULES = {
    "kubelet": "nodehost.plugins.kubelet.standin",
    "kube-proxy": "nodehost.plugins.proxy.standin",
}


class StandinProcess:
    """A stand-in started as a real child process, with its output collected."""

    def __init__(self, program: str, args: Sequence[str], env: Mapping[str, str] | None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", STANDIN_MODULES[program], *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )

    def get(self, url: str) -> int:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    def wait_for(self, url: str, timeout: float = 10.0) -> int:
        """Poll ``url`` until it answers; return its status (fail if the process exits first)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                out, err = self.process.communicate()
                pytest.fail(f"stand-in exited {self.process.returncode}: {out}{err}")
            try:
                return self.get(url)
            except OSError:
                time.sleep(0.05)
        pytest.fail(f"{url} did not answer within {timeout}s")

    def stop(self, timeout: float = 10.0) -> tuple[int, str, str]:
        """SIGTERM, then the exit status and output."""
        self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out, err

    def finish(self, timeout: float = 10.0) -> tuple[int, str, str]:
        """Wait for the process to exit by itself."""
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out, err


@pytest.fixture
def start_standin() -> Iterator[Callable[..., StandinProcess]]:
    """Factory: ``start_standin(program, args, env=None)``; every process is killed at the end."""
    started: list[StandinProcess] = []

    def start(
        program: str, args: Sequence[str], env: Mapping[str, str] | None = None
    ) -> StandinProcess:
        process = StandinProcess(program, args, env)
        started.append(process)
        return process

    yield start
    for standin in started:
        if standin.process.poll() is None:
            standin.process.kill()
            standin.process.communicate()

"""Fixtures for the sdn plugin tests: NodeConfigs with provider sections, plan contexts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nodehost import ComponentRecord
from nodehost.component import PlanContext
from nodehost.pluginhost.selection import Selection
from nodehost.plugins import sdn
from nodehost.testing.nodefolder import merge

#: What the sdn tests change in nodehost.testing's sample node.
NODE = {
    "nodeIP": "192.0.2.2",
    "dnsIP": "172.30.0.10",
    "networkConfig": {"networkPluginName": "bridge", "mtu": 1400},
}


@pytest.fixture
def cni_bin(tmp_path: Path) -> Path:
    """A CNI binary directory holding the plugins the built-in providers name.

    Planning only checks that the binaries exist; nothing here runs them.
    """
    folder = tmp_path / "cni-bin"
    folder.mkdir()
    for plugin in ("bridge", "host-local", "portmap", "loopback"):
        path = folder / plugin
        path.write_text("#!/bin/sh\nexit 1\n")
        path.chmod(0o755)
    return folder


@pytest.fixture
def make_config(
    tmp_path: Path, cni_bin: Path, sample_config: Callable[..., Any]
) -> Callable[..., Any]:
    """``make_config(provider="bridge", section={...}, **node_changes)`` -> (config, problems).

    The bridge section defaults to a valid one writing into ``tmp_path/net.d``.
    """

    def make(provider: str = "bridge", section: Any = "default", **changes: Any) -> Any:
        raw = merge(merge(NODE, changes), {"networkConfig": {"networkPluginName": provider}})
        if section == "default":
            section = {
                "podCIDR": "10.244.9.0/24",
                "cniConfDir": str(tmp_path / "net.d"),
                "cniBinDirs": [str(cni_bin)],
            }
        if section is not None:
            raw["bridgeNetwork" if provider == "bridge" else "externalNetwork"] = section
        return sample_config(**raw)

    return make


@pytest.fixture
def providers() -> dict[str, Any]:
    return {record.name: record for record in sdn.nodehost_network_providers()}


@pytest.fixture
def validate(providers) -> Callable[..., list[str]]:
    """Run the sdn plugin's validation with ``selected`` as the core passes it (knowing
    that sdn runs network providers); the rendered problems."""

    def run(config: Any, selected: frozenset[str] = frozenset({"sdn"})) -> list[str]:
        selection = Selection(selected, network_runners={"sdn"})
        problems = sdn.nodehost_validate_config(
            config=config, selected=selection, providers=providers, plugin_failures=[]
        )
        return [problem.render() for problem in problems]

    return run


@pytest.fixture
def make_context(tmp_path: Path, providers) -> Callable[[Any], PlanContext]:
    (record,) = sdn.nodehost_components()

    def make(config: Any) -> PlanContext:
        assert isinstance(record, ComponentRecord)
        return PlanContext(
            config=config,
            options=None,
            record=record,
            selected=frozenset({"sdn"}),
            state_dir=os.path.join(tmp_path, "state", "sdn"),
            network_providers=providers,
            hooks=None,
        )

    return make

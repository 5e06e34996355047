"""Fixtures for the real-CNI tests: node configs selecting a provider, ways to run ``nodehost``.

Tests here run real CNI plugins in real namespaces; they skip (with the reason)
where that is impossible.  Pod CIDRs come from 10.244.0.0/16 and are checked
against the host's addresses; namespaces and bridges get unique ``nh-t...`` names.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from nodehost.cni import hostnet
from nodehost.testing import parts
from nodehost.testing.cni import SANDBOX_PARTS, HostSnapshot, cni_sandbox
from nodehost.testing.nodefolder import merge, write_sample_config

__all__ = ["cni_sandbox"]  # the fixture, re-exported for the tests of this folder

#: What the network tests change in nodehost.testing's sample node.
NODE = {
    "nodeIP": "127.0.0.1",
    "servingInfo": {"bindAddress": "127.0.0.1:10250"},
    "networkConfig": {"mtu": 1400},
    "imageConfig": {"latest": False},
    "iptablesSyncPeriod": "30s",
    "kubeletArguments": {"fail-swap-on": ["false"]},
}


@pytest.fixture
def needs_cni() -> None:
    """Real CNI runs need root, iproute2 and the CNI plugins (skip or fail: testing.parts)."""
    parts.require(*SANDBOX_PARTS)


def unique(prefix: str = "nh-t") -> str:
    """A short unique name usable for a namespace or a link (at most 15 characters)."""
    return f"{prefix}{secrets.token_hex(4)}"


@pytest.fixture
def unique_name() -> Callable[[], str]:
    """Factory of short unique names (``nh-t`` + 8 hex digits) for namespaces and links."""
    return unique


def free_pod_cidr() -> str:
    """A /24 in 10.244.0.0/16 that no host address overlaps."""
    taken = [a.network for found in hostnet.addresses().values() for a in found]
    for _ in range(200):
        candidate = ipaddress.ip_network(f"10.244.{secrets.randbelow(250) + 2}.0/24")
        if not any(candidate.overlaps(net) for net in taken if net.version == 4):
            return str(candidate)
    raise RuntimeError("no free /24 in 10.244.0.0/16")


@dataclass
class Node:
    """A node folder whose config selects a network provider."""

    folder: Path
    conf_dir: Path
    state_dir: Path
    bridge: str
    pod_cidr: str

    @property
    def config(self) -> Path:
        return self.folder / "node-config.yaml"

    def write(self, provider: str, section: str) -> Path:
        """Write the config selecting ``provider`` with ``section`` (YAML, dedented) appended."""
        extra = yaml.safe_load(textwrap.dedent(section)) or {}
        changes = merge(NODE, {"networkConfig": {"networkPluginName": provider}, **extra})
        return write_sample_config(self.config, **changes)

    def bridge_section(self, **overrides: object) -> str:
        values = {
            "podCIDR": self.pod_cidr,
            "bridge": self.bridge,
            "cniConfDir": str(self.conf_dir),
            **overrides,
        }
        lines = [f"  {key}: {value}" for key, value in values.items() if value is not None]
        return "bridgeNetwork:\n" + "\n".join(lines) + "\n"

    def use_bridge(self, **overrides: object) -> Path:
        return self.write("bridge", self.bridge_section(**overrides))


@pytest.fixture
def node(tmp_path: Path, node_files: Callable[[Path], None]) -> Node:
    folder = tmp_path / "node"
    folder.mkdir()
    node_files(folder)
    return Node(folder, tmp_path / "net.d", tmp_path / "state", unique(), free_pod_cidr())


@pytest.fixture
def nothing_left_behind() -> Iterator[HostSnapshot]:
    """Fail the test if it leaves a namespace, a link or a changed forwarding switch."""
    before = HostSnapshot.take()
    yield before
    leftovers = before.leftovers()
    assert not leftovers, f"left behind: {', '.join(leftovers)}"


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def nodehost() -> Callable[..., Result]:
    """Run ``nodehost ARGS`` in-process."""
    from click.testing import CliRunner

    from nodehost.cli import main

    def run(*args: str) -> Result:
        runner = CliRunner()
        with runner.isolation() as streams:
            try:
                main(list(args))
                code = 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
        return Result(code, streams[0].getvalue().decode(), streams[1].getvalue().decode())

    return run


@pytest.fixture
def nodehost_exe() -> Callable[..., Result]:
    """Run the installed ``nodehost`` console script as a subprocess.

    ``prefix`` goes before it on the command line (``unshare --net --``).
    """
    executable = Path(sys.executable).parent / "nodehost"
    parts.require("nodehost-script")

    def run(
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 120,
        prefix: tuple[str, ...] = (),
        **kw,
    ) -> Result:
        done = subprocess.run(
            [*prefix, str(executable), *args],
            capture_output=True,
            text=True,
            env=env if env is not None else dict(os.environ),
            timeout=timeout,
            **kw,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    return run

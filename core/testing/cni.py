"""Run CNI chains for real from pytest: a throw-away network namespace for a provider's tests.

For network-plugin authors and nodehost's own tests.  The ``cni_sandbox``
fixture comes with nodehost's pytest plugin (:mod:`nodehost.testing.pytest_plugin`,
loaded automatically); to prove a provider's network works the way ``nodehost network check``
does -- the provider's configuration, read from a node config through the
installed plugins, run for real by the test::

    from nodehost.testing.cni import configured_network, exercise

    def test_my_network_carries_traffic(cni_sandbox, tmp_path):
        config = write_my_node_config(tmp_path)          # networkPluginName: mine
        network = configured_network(config, state_dir=tmp_path / "state")
        attachment = exercise(cni_sandbox, network)      # lo, ADD, address, gateway, CHECK, DEL
        assert attachment.addresses()[0][0] in my_pod_cidr

``cni_sandbox`` skips the test, naming what to install, where the machine
cannot run it (not root, no iproute2, no CNI plugins) -- or fails it under
``NODEHOST_REQUIRE_REAL_PARTS=1`` (:mod:`nodehost.testing.parts`) -- and afterwards fails the test
if anything is left behind: the namespace, a link, a changed forwarding
switch.  :class:`HostSnapshot` makes the same comparison for any test.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nodehost.cni import hostnet, netns
from nodehost.cni.check import exercise as _exercise
from nodehost.cni.network import CniNetwork
from nodehost.cni.plugins import DEFAULT_BIN_DIRS, find_plugin
from nodehost.cni.sandbox import Attachment, Sandbox
from nodehost.cni.sandbox import unavailable_reason as _sandbox_unavailable
from nodehost.testing import parts

#: The real parts (:data:`nodehost.testing.parts.PARTS`) a CNI sandbox needs.
SANDBOX_PARTS = ("root", "ip", "cni-plugins")

__all__ = [
    "HostSnapshot",
    "cni_sandbox",
    "configured_network",
    "exercise",
    "unavailable_reason",
]


def unavailable_reason(bin_dirs: Sequence[str] = DEFAULT_BIN_DIRS) -> str | None:
    """Why real CNI runs are impossible here, or None: root, iproute2, the reference plugins."""
    reason = _sandbox_unavailable()
    if reason:
        return reason
    if find_plugin("loopback", bin_dirs) is None:
        return (
            f"no CNI plugins in {', '.join(bin_dirs)} (apt-get install containernetworking-plugins)"
        )
    return None


@dataclass(frozen=True)
class HostSnapshot:
    """The host state CNI runs may change: named namespaces, links, forwarding switches."""

    namespaces: frozenset[str]
    links: frozenset[str]
    sysctls: hostnet.Sysctls

    @classmethod
    def take(cls) -> HostSnapshot:
        return cls(frozenset(netns.names()), frozenset(hostnet.links()), hostnet.Sysctls.snapshot())

    def leftovers(self, later: HostSnapshot | None = None) -> list[str]:
        """What exists in ``later`` (default: now) but not in this snapshot, one line each."""
        later = later or HostSnapshot.take()
        found = [f"namespace {name}" for name in sorted(later.namespaces - self.namespaces)]
        found += [f"link {name}" for name in sorted(later.links - self.links)]
        found += [
            f"sysctl {name} is {later.sysctls.values.get(name)}, was {value}"
            for name, value in self.sysctls.values.items()
            if later.sysctls.values.get(name) != value
        ]
        return found


def open_sandbox() -> Iterator[Sandbox]:
    """The body of the ``cni_sandbox`` fixture, for fixtures built on it (a generator).

    Needs the parts ``root``, ``ip`` and ``cni-plugins``
    (:func:`nodehost.testing.parts.require`).
    """
    parts.require(*SANDBOX_PARTS)
    before = HostSnapshot.take()
    sandbox = Sandbox(prefix="nh-test")
    with sandbox:
        yield sandbox
    leftovers = before.leftovers()
    assert not leftovers, f"the CNI sandbox left {', '.join(leftovers)} behind"


@pytest.fixture
def cni_sandbox() -> Iterator[Sandbox]:
    """An open :class:`~nodehost.cni.sandbox.Sandbox` with the default binary directories.

    Skips where a part is missing (naming what to install; a failure under
    ``NODEHOST_REQUIRE_REAL_PARTS=1``); after the test, fails it
    if the sandbox left a namespace, a link or a changed forwarding switch.
    (Also a fixture of nodehost's pytest plugin: no import needed.)
    """
    yield from open_sandbox()


def exercise(
    sandbox: Sandbox,
    network: CniNetwork,
    *,
    echo: Callable[[str], None] | None = None,
) -> Attachment:
    """Run ``network`` in ``sandbox`` as ``nodehost network check`` does; the detached attachment.

    Loopback (if the network says so), ADD, the interface and its addresses
    inside the namespace, then the data path by the network's topology --
    TCP to the gateway on the host, or for a layer-2 network (master link
    checked first) TCP between this pod and a second one on the same master --
    then CHECK and DEL.  Raises the first failure
    (:class:`nodehost.cni.CniError` names the failing plugin).
    """
    sandbox.bin_dirs = network.bin_dirs
    return _exercise(sandbox, network, echo or (lambda line: None))


def configured_network(
    config: str | os.PathLike[str],
    *,
    state_dir: str | os.PathLike[str],
    disable_plugins: Sequence[str] = (),
) -> CniNetwork:
    """The network ``config`` configures, resolved as ``nodehost network check`` resolves it.

    Loads the installed plugins (entry points included), reads and validates
    the config (:class:`nodehost.errors.ConfigInvalid` on errors), plans the
    network component (its environment checks run) and returns its network.
    """
    from nodehost.cli.network import NetworkTarget

    flags: dict[str, Any] = {
        "disable_plugins": tuple(disable_plugins),
        "strict_plugins": False,
        "no_plugins": False,
    }
    target = NetworkTarget.resolve(str(config), str(Path(state_dir)), flags)
    target.plan()
    return target.network()

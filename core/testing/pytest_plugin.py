"""nodehost's pytest plugin: fixtures for testing nodehost plugins (components and networks).

Installed with nodehost through the ``pytest11`` entry point ``nodehost``, so
every fixture below is available in any test run of an environment where
nodehost is installed -- no ``conftest.py`` needed (``-p no:nodehost`` turns
it off).  Importing this module costs nothing: each fixture imports what it
uses when it runs.

========================  =====================================================================
fixture                   what it gives
========================  =====================================================================
``node_ca``               a throw-away signer CA (:class:`~nodehost.testing.nodefolder.SignerCA`)
``node_folder``           a node folder signed by ``node_ca``
                          (:class:`~nodehost.testing.nodefolder.NodeFolder`: ``update()``,
                          ``load()``)
``node_config``           factory: a ``NodeConfig`` from a dict, Origin's defaults applied
``sample_config``         factory: a complete node's ``NodeConfig`` with your changes
                          (``sample_config(nodeIP="192.0.2.2", mySection={...})``)
``node_plan``             factory: what ``start --dry-run`` plans for a config, in-process
``node_run``              factory: a real ``nodehost start`` subprocess with stand-ins
                          (:class:`~nodehost.testing.noderun.NodeRun`: ``ready()``,
                          ``status()``, ``logs()``, ``stop()``); stopped after the test
``nodehost_cli``          factory: run the installed ``nodehost ARGS``: ``.code``, ``.out``,
                          ``.err``
``task_context``          a recording ``TaskContext`` for a task component's coroutine
``api_server``            the test Kubernetes API server
                          (:class:`~nodehost.testing.apiserver.TestApiServer`), running
``cni_sandbox``           a throw-away network namespace for real CNI runs; skips where
                          impossible, fails the test if anything is left behind
``master_link``           factory: a throw-away up link with an address, the master of a
                          layer-2 (macvlan, ipvlan) network; removed after the test
``free_port``             factory: a free TCP port on 127.0.0.1
========================  =====================================================================

The ``needs`` mark names the real parts a test needs (:mod:`nodehost.testing.parts`:
``containerd``, ``cni-plugins``, ``root``, ``dig``...; add your own with
:func:`~nodehost.testing.parts.add_part`)::

    @pytest.mark.needs("containerd", "busybox")
    def test_containers_survive_a_restart(): ...

Where a part is missing the test is skipped with its install line; under
``NODEHOST_REQUIRE_REAL_PARTS=1`` (set it in CI, where every part is installed) it fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.cni.sandbox import Sandbox
    from nodehost.config.schema import NodeConfig
    from nodehost.plan import Plan
    from nodehost.testing.apiserver import TestApiServer
    from nodehost.testing.links import ThrowawayLink
    from nodehost.testing.nodefolder import NodeFolder, SignerCA
    from nodehost.testing.noderun import CliResult, NodeRun
    from nodehost.testing.taskcontext import RecordingTaskContext

__all__ = [
    "api_server",
    "cni_sandbox",
    "free_port",
    "master_link",
    "node_ca",
    "node_config",
    "node_folder",
    "node_plan",
    "node_run",
    "nodehost_cli",
    "sample_config",
    "task_context",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs(*parts): real parts the test needs (nodehost.testing.parts.PARTS); missing ones "
        "skip it with the install line, or fail it under NODEHOST_REQUIRE_REAL_PARTS=1",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Apply ``@pytest.mark.needs(...)``: skip (or, when required, fail) for missing parts."""
    marks = list(item.iter_markers("needs"))
    if marks:
        from nodehost.testing import parts

        for mark in marks:
            parts.require(*mark.args)


@pytest.fixture
def node_ca(tmp_path: Path) -> SignerCA:
    """A signer CA in ``tmp_path/ca``, as ``nodehost ca create`` makes it (ECDSA key)."""
    from nodehost.testing.nodefolder import SignerCA

    return SignerCA.create(tmp_path / "ca")


@pytest.fixture
def node_folder(tmp_path: Path, node_ca: SignerCA) -> NodeFolder:
    """A node folder in ``tmp_path/node`` signed by ``node_ca``, as ``nodehost config create``
    writes it: ``node-config.yaml`` (no network provider, no DNS address), ``node.kubeconfig``,
    client and serving certificates.  Change the config with ``node_folder.update({...})``."""
    from nodehost.testing.nodefolder import NodeFolder

    return NodeFolder.create(tmp_path / "node", node_ca)


@pytest.fixture
def node_config(tmp_path: Path) -> Callable[..., NodeConfig]:
    """Factory ``node_config(data, *, strict=False) -> NodeConfig``.

    ``data`` is what ``node-config.yaml`` would hold (``apiVersion``/``kind``
    optional); Origin's v1 defaults are applied, relative paths resolve
    against ``tmp_path``, the installed plugins' sections are known.  Type
    errors raise :class:`nodehost.errors.ConfigInvalid`; validation rules are
    not applied.
    """
    from nodehost.testing.nodefolder import node_config as build

    def make(data: dict[str, Any], *, strict: bool = False) -> NodeConfig:
        return build(data, base_dir=tmp_path, strict=strict)

    return make


@pytest.fixture
def sample_config(tmp_path: Path) -> Callable[..., NodeConfig]:
    """Factory ``sample_config(**changes) -> NodeConfig``.

    ``nodehost.testing.nodefolder.SAMPLE_NODE`` (a complete node) with
    ``changes`` merged in (recursively; ``None`` deletes a key), as if it were
    ``tmp_path/node-config.yaml`` with relative paths under ``tmp_path/node``
    (``base_dir=`` another folder); built as ``node_config`` builds.
    """
    from nodehost.testing.nodefolder import sample_config as build

    def make(*, base_dir: Path | None = None, **changes: Any) -> NodeConfig:
        folder = tmp_path / "node" if base_dir is None else base_dir
        return build(folder, source=tmp_path / "node-config.yaml", **changes)

    return make


@pytest.fixture
def node_plan(tmp_path: Path) -> Callable[..., Plan]:
    """Factory ``node_plan(config_path, *, components, standins="missing", binaries=None)``.

    What ``nodehost start --config ... --components ... --dry-run`` plans,
    in-process, with the installed plugins: a :class:`nodehost.plan.Plan`
    (``plan.get(name).plan`` is the component's ``ComponentPlan``).  Invalid
    configs raise :class:`nodehost.errors.ConfigInvalid`, environment
    problems :class:`nodehost.errors.RuntimeFailure`.  Nothing is written.
    """
    from nodehost.testing.nodefolder import node_plan as plan

    def make(config: Any, *, components: str, **options: Any) -> Plan:
        return plan(config, components=components, state_dir=tmp_path / "plan-state", **options)

    return make


@pytest.fixture
def node_run(tmp_path: Path) -> Iterator[Callable[..., NodeRun]]:
    """Factory ``node_run(config_path, *, components, standins="always", args=(), env=None)``.

    Starts ``nodehost start`` as a subprocess (the installed console script,
    JSON logs, ``--state-dir`` under ``tmp_path``, the health server on a
    port the kernel picks) and returns its :class:`~nodehost.testing.noderun.NodeRun`.
    Every node still running after the test is killed with its components.
    """
    from nodehost.testing.noderun import NodeRun

    runs: list[NodeRun] = []

    def start(config: Any, *, components: str, **options: Any) -> NodeRun:
        state_dir = tmp_path / f"node-state-{len(runs)}"
        run = NodeRun.start(config, components=components, state_dir=state_dir, **options)
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.kill()


@pytest.fixture
def nodehost_cli() -> Callable[..., CliResult]:
    """Factory ``nodehost_cli(*args, env=None, timeout=60) -> CliResult``: the installed
    ``nodehost`` console script run to completion (exit ``code``, ``out``, ``err``)."""
    from nodehost.testing.noderun import run_nodehost

    return run_nodehost


@pytest.fixture
def task_context() -> RecordingTaskContext:
    """A :class:`~nodehost.testing.taskcontext.RecordingTaskContext` named ``test-component``."""
    from nodehost.testing.taskcontext import RecordingTaskContext

    return RecordingTaskContext()


@pytest.fixture
def api_server(tmp_path: Path) -> Iterator[TestApiServer]:
    """The test Kubernetes API server, running on a free loopback port with its files in
    ``tmp_path/api`` (``bootstrap_kubeconfig``, ``admin_kubeconfig``); stopped after the test."""
    from nodehost.testing.apiserver import TestApiServer

    with TestApiServer(tmp_path / "api") as server:
        yield server


@pytest.fixture
def cni_sandbox() -> Iterator[Sandbox]:
    """An open :class:`~nodehost.cni.sandbox.Sandbox` (a throw-away network namespace).

    Skips, giving the reason, where real CNI runs are impossible (not root,
    no iproute2, no CNI plugins); fails the test if the sandbox left a
    namespace, a link or a changed forwarding switch behind.  Run a network
    in it with :func:`nodehost.testing.cni.exercise`.
    """
    from nodehost.testing.cni import open_sandbox

    yield from open_sandbox()


@pytest.fixture
def master_link() -> Iterator[Callable[..., ThrowawayLink]]:
    """Factory ``master_link(address=None, *, mtu=1500) -> ThrowawayLink``.

    A throw-away link, up, holding ``address`` (default: ``.1`` of a free /24
    in 10.250.0.0/16): the master of a layer-2 network under test.  Skips
    where real CNI runs are impossible (not root, no iproute2, no CNI
    plugins), as ``cni_sandbox`` does; every link made is removed after the test.
    """
    from nodehost.testing import parts
    from nodehost.testing.cni import SANDBOX_PARTS
    from nodehost.testing.links import free_subnet
    from nodehost.testing.links import master_link as make_link

    parts.require(*SANDBOX_PARTS)
    made: list[ThrowawayLink] = []

    def make(address: str | None = None, *, mtu: int = 1500) -> ThrowawayLink:
        if address is None:
            network = free_subnet()
            address = f"{network.network_address + 1}/{network.prefixlen}"
        link = make_link(address, mtu=mtu)
        made.append(link)
        return link

    yield make
    for link in made:
        link.remove()


@pytest.fixture
def free_port() -> Callable[[], int]:
    """Factory: a TCP port on 127.0.0.1 that was free a moment ago (prefer port 0 where the
    program under test can report the port it bound)."""

    from nodehost.testing.ports import free_port as pick

    return pick

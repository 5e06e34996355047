"""Fixtures of the runtime plugin tests; helpers for a real containerd live in ``realruntime``.

The test modules import ``realruntime`` by name: pytest runs with
``--import-mode=importlib``, so this folder is put on ``sys.path`` here.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nodehost.component import PlanContext
from nodehost.pluginhost.manager import BUILTIN_PLUGINS

sys.path.insert(0, str(Path(__file__).parent))

from realruntime import NAMESPACE, NODEHOST

PLUGIN = "nodehost.plugins.runtime"
#: Places containerd 1.6 and ctr write to outside the configured folders.
OUTSIDE = ("/run/containerd", "/opt/containerd", "/etc/cni/net.d")


@pytest.fixture
def make_context(tmp_path: Path) -> Callable[..., PlanContext]:
    """Factory: a PlanContext for the runtime with the built-in network providers."""
    from nodehost.plugins.runtime import nodehost_components
    from nodehost.plugins.sdn import nodehost_network_providers

    def make(
        config: Any,
        selected: frozenset[str] = frozenset({"runtime", "kubelet"}),
        options: Any = None,
        state_dir: str | None = None,
        dependents: frozenset[str] = frozenset({"kubelet"}),
    ) -> PlanContext:
        record = nodehost_components()[0]
        return PlanContext(
            config=config,
            options=options,
            record=record,
            selected=selected,
            state_dir=state_dir or str(tmp_path / "state" / "runtime"),
            network_providers={r.name: r for r in nodehost_network_providers()},
            hooks=None,
            dependents=dependents & selected,
        )

    return make


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A fresh folder with a short path (containerd limits socket paths to 104 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="nhrt-", dir="/tmp"))
    yield folder
    if (folder / "state").is_dir():  # a failed test may have left containers running
        subprocess.run(
            [NODEHOST, "teardown", f"--state-dir={folder / 'state'}", "--grace=1s"],
            capture_output=True,
            timeout=120,
        )
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def node_folder(
    short_dir: Path, node_files: Callable[[Path], None], free_port: Callable[[], int]
) -> Callable[..., Path]:
    """Factory: write ``node/node-config.yaml`` (bridge network, CNI conf under the folder;
    the kubelet stand-in's /healthz on a free port, never the default 10248)."""
    healthz_port = free_port()

    def write(extra: str = "") -> Path:
        node = short_dir / "node"
        node.mkdir(exist_ok=True)
        node_files(node)
        config = textwrap.dedent(
            f"""\
            apiVersion: v1
            kind: NodeConfig
            nodeName: node1.example.com
            nodeIP: 127.0.0.1
            servingInfo:
              bindAddress: 127.0.0.1:10250
              certFile: server.crt
              keyFile: server.key
              clientCA: ca.crt
            masterKubeConfig: node.kubeconfig
            dnsDomain: cluster.local
            dnsIP: 10.0.0.10
            volumeDirectory: volumes
            imageConfig:
              format: openshift/origin-${{component}}:${{version}}
            kubeletArguments:
              healthz-port: ["{healthz_port}"]
            networkConfig:
              networkPluginName: bridge
            bridgeNetwork:
              podCIDR: 10.244.1.0/24
              cniConfDir: {short_dir}/net.d
            """
        )
        path = node / "node-config.yaml"
        path.write_text(config + textwrap.dedent(extra))
        return path

    return write


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    """The environment for a ``nodehost`` child that loads the runtime plugin.

    Until the plugin is a built-in, an entry point of a throw-away distribution
    (on ``PYTHONPATH``) registers it, exactly as a third-party plugin would be.
    """
    env = dict(os.environ)
    env.pop("NOTIFY_SOCKET", None)
    if PLUGIN in BUILTIN_PLUGINS:
        return env
    info = tmp_path / "dist" / "nodehost_runtime_shim-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nodehost-runtime-shim\nVersion: 0\n"
    )
    (info / "entry_points.txt").write_text(f"[nodehost]\nruntime = {PLUGIN}\n")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(info.parent), env.get("PYTHONPATH")]))
    return env


@pytest.fixture
def outside_guard() -> Iterator[None]:
    """Remove what a real-containerd test left outside its folders (and only that).

    containerd 1.6 puts its shims' sockets in /run/containerd/s whatever its
    configuration says; the tests give ctr its own FIFO and runc folders and
    no cgroup, so nothing else should appear.  Fails the test if anything other
    than /run/containerd/s appeared.
    """
    before = {path for path in OUTSIDE if os.path.exists(path)}
    cgroups_before = set(glob.glob(f"/sys/fs/cgroup/*/{NAMESPACE}")) | set(
        glob.glob("/sys/fs/cgroup/*/default")
    )
    yield
    created = [path for path in OUTSIDE if path not in before and os.path.exists(path)]
    unexpected = []
    for path in created:
        contents = sorted(os.listdir(path))
        if path != "/run/containerd" or contents not in ([], ["s"]):
            unexpected.append(f"{path}: {contents}")
        shutil.rmtree(path, ignore_errors=True)
    cgroups = (
        set(glob.glob(f"/sys/fs/cgroup/*/{NAMESPACE}")) | set(glob.glob("/sys/fs/cgroup/*/default"))
    ) - cgroups_before
    for path in cgroups:
        os.rmdir(path)
    assert not unexpected and not cgroups, (unexpected, sorted(cgroups))

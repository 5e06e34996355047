"""The kubelet stand-in toward the API server: its Node, its Lease, its Ready condition."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodehost.plugins.runtime.testing import own_containerd
from nodehost.testing.apiserver import TestApiServer
from nodehost.testing.apistore import StoreError
from nodehost.testing.wait import wait_for

NODE = "node-a.example.com"


def stored(api: TestApiServer, resource: str, name: str, namespace: str = "") -> dict | None:
    try:
        return api.store.get(resource, namespace, name)
    except StoreError:
        return None


def ready_condition(node: dict | None) -> dict | None:
    conditions = (node or {}).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Ready"), None)


def kubelet_config(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "kubelet-config.yaml"
    lines = ["apiVersion: kubelet.config.k8s.io/v1beta1", "kind: KubeletConfiguration"]
    lines += [f"{key}: {json.dumps(value)}" for key, value in fields.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def kubelet_args(api_server: TestApiServer, tmp_path: Path) -> Callable[..., list[str]]:
    def args(runtime: str, **config: Any) -> list[str]:
        # No /healthz (port 0, as the kubelet reads it): these tests wait on the API server,
        # and a port picked beforehand could be taken by a parallel test's listener.
        config.setdefault("healthzPort", 0)
        return [
            f"--config={kubelet_config(tmp_path, **config)}",
            f"--kubeconfig={api_server.node_kubeconfig(NODE)}",
            f"--hostname-override={NODE.upper()}",
            "--node-ip=192.0.2.10",
            "--node-labels=tier=gold,zone=a",
            "--register-with-taints=dedicated=infra:NoSchedule",
            f"--container-runtime-endpoint={runtime}",
        ]

    return args


def test_it_registers_its_node_as_the_kubelet_does_and_reports_why_it_is_not_ready(
    api_server: TestApiServer, start_standin, kubelet_args, tmp_path: Path
) -> None:
    runtime = f"unix://{tmp_path}/no-runtime.sock"
    start_standin("kubelet", kubelet_args(runtime, maxPods=7))
    node = wait_for(lambda: ready_condition(stored(api_server, "nodes", NODE)), what="the Node")
    node = stored(api_server, "nodes", NODE)
    assert node is not None
    labels = node["metadata"]["labels"]
    assert labels["tier"] == "gold" and labels["zone"] == "a"
    assert labels["kubernetes.io/hostname"] == NODE and labels["kubernetes.io/os"] == "linux"
    assert node["spec"]["taints"] == [
        {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
    ]
    assert node["status"]["addresses"] == [
        {"type": "InternalIP", "address": "192.0.2.10"},
        {"type": "Hostname", "address": NODE},
    ]
    capacity = node["status"]["capacity"]
    assert capacity["cpu"] == str(len(os.sched_getaffinity(0)))
    assert capacity["pods"] == "7"
    assert capacity["memory"].endswith("Ki") and int(capacity["memory"][:-2]) > 0
    ready = ready_condition(node)
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")
    assert ready["message"] == "[container runtime is down, network state unknown]"


def test_it_keeps_its_lease_renewed(api_server: TestApiServer, start_standin, kubelet_args) -> None:
    start_standin("kubelet", kubelet_args("unix:///nonexistent.sock", nodeLeaseDurationSeconds=2))
    first = wait_for(
        lambda: stored(api_server, "leases", NODE, "kube-node-lease"), what="the Lease"
    )
    assert first["spec"]["holderIdentity"] == NODE
    assert first["spec"]["leaseDurationSeconds"] == 2
    owner = first["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Node", NODE)
    renewed = wait_for(
        lambda: (
            (lease := stored(api_server, "leases", NODE, "kube-node-lease"))
            and lease["spec"]["renewTime"] != first["spec"]["renewTime"]
            and lease
        ),
        what="a renewal",
    )
    assert renewed["spec"]["renewTime"] > first["spec"]["renewTime"]


def test_with_a_bootstrap_kubeconfig_it_gets_its_certificate_first(
    api_server: TestApiServer, start_standin, kubelet_args, tmp_path: Path
) -> None:
    """No kubeconfig yet: the kubelet's TLS bootstrap (a CSR as the bootstrap user, the pair
    in --cert-dir, then the kubeconfig), and the Node registered with that identity."""
    kubeconfig, cert_dir = tmp_path / "kubelet.kubeconfig", tmp_path / "pki"
    args = [a for a in kubelet_args("unix:///nonexistent.sock") if not a.startswith("--kube")]
    start_standin("kubelet", [*args, f"--kubeconfig={kubeconfig}", f"--cert-dir={cert_dir}",
                              f"--bootstrap-kubeconfig={api_server.bootstrap_kubeconfig}"])  # fmt: skip
    wait_for(lambda: stored(api_server, "nodes", NODE), what="the Node")
    (csr,) = api_server.csrs()
    assert csr["spec"]["username"] == "system:bootstrap:abcdef"
    assert csr["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
    current = cert_dir / "kubelet-client-current.pem"
    assert current.is_symlink() and (current.stat().st_mode & 0o777) == 0o600
    subject = subprocess.run(
        ["openssl", "x509", "-noout", "-subject", "-nameopt", "compat", "-in", str(current)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert subject.stdout.strip() == f"subject=/O=system:nodes/CN=system:node:{NODE}"
    user = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]
    assert user == {"client-certificate": str(current), "client-key": str(current)}


def test_a_node_may_not_register_another_nodes_name(api_server: TestApiServer) -> None:
    """NodeRestriction: the stand-in's rights are a kubelet's, no more."""
    import asyncio

    from nodehost.api.client import ClusterClient, ClusterRefused

    async def create_other() -> None:
        async with ClusterClient(str(api_server.node_kubeconfig(NODE))) as client:
            await client.create("Node", {"metadata": {"name": "someone-else"}})

    with pytest.raises(ClusterRefused) as refused:
        asyncio.run(create_other())
    assert refused.value.code == 403


@pytest.fixture
def containerd() -> Iterator[tuple[str, Path]]:
    """A containerd with CRI (its CNI conf dir empty): (endpoint, CNI conf dir)."""
    folder = Path(tempfile.mkdtemp(prefix="nhkl-", dir="/tmp"))  # short: socket paths are limited
    try:
        with own_containerd(folder) as endpoint:
            yield endpoint, folder / "net.d"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.needs("root", "containerd")
def test_ready_follows_the_runtimes_cri_status_network_included(
    api_server: TestApiServer, start_standin, kubelet_args, containerd
) -> None:
    endpoint, conf_dir = containerd
    start_standin("kubelet", kubelet_args(endpoint))

    def message() -> str:
        ready = ready_condition(stored(api_server, "nodes", NODE))
        return ready["message"] if ready else ""

    not_ready = wait_for(lambda: "network not ready" in message() and message(), what="NotReady")
    assert not_ready.startswith(
        "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    )
    conf_dir.mkdir(exist_ok=True)
    conflist = {"cniVersion": "0.4.0", "name": "standin-test", "plugins": [{"type": "loopback"}]}
    (conf_dir / "10-test.conflist").write_text(json.dumps(conflist))
    ready = wait_for(
        lambda: (
            (found := ready_condition(stored(api_server, "nodes", NODE)))
            and found["status"] == "True"
            and found
        ),
        what="Ready after the CNI config appeared",
    )
    assert (ready["reason"], ready["message"]) == (
        "KubeletReady",
        "kubelet is posting ready status",
    )
    info = stored(api_server, "nodes", NODE)["status"]["nodeInfo"]  # type: ignore[index]
    assert info["containerRuntimeVersion"].startswith("containerd://")

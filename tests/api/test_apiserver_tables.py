"""``kubectl get`` against the test API server prints the real server's columns (its Tables)."""

from __future__ import annotations

import datetime

from nodehost.testing.apiserver import TestApiServer
from nodehost.testing.apitables import age, node_status


def node(name: str, ready: str | None, **labels: str) -> dict:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": "192.0.2.7"}],
            "nodeInfo": {"kubeletVersion": "v1.33.0", "containerRuntimeVersion": "containerd://2"},
        },
    }


def test_kubectl_get_nodes_shows_status_roles_and_version(api_server: TestApiServer, kubectl):
    api_server.store.put("nodes", node("a", "True", **{"node-role.kubernetes.io/infra": ""}))
    api_server.store.put("nodes", node("b", "False"))
    api_server.store.put("nodes", node("c", None))
    shown = kubectl("--kubeconfig", str(api_server.admin_kubeconfig), "get", "nodes")
    assert shown.returncode == 0, shown.stderr
    rows = [line.split() for line in shown.stdout.splitlines()]
    assert rows[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [(r[0], r[1], r[2], r[4]) for r in rows[1:]] == [
        ("a", "Ready", "infra", "v1.33.0"),
        ("b", "NotReady", "<none>", "v1.33.0"),
        ("c", "Unknown", "<none>", "v1.33.0"),
    ]
    wide = kubectl(
        "--kubeconfig", str(api_server.admin_kubeconfig), "get", "node", "a", "-o", "wide"
    )
    assert wide.returncode == 0, wide.stderr
    header, row = (line.split() for line in wide.stdout.splitlines())
    assert dict(zip(header, row, strict=False))["INTERNAL-IP"] == "192.0.2.7"
    assert row[-1] == "containerd://2"


def test_a_cordoned_node_says_so() -> None:
    cordoned = {**node("a", "True"), "spec": {"unschedulable": True}}
    assert node_status(cordoned) == "Ready,SchedulingDisabled"


def test_age_is_the_api_servers_human_duration() -> None:
    now = datetime.datetime(2026, 1, 3, tzinfo=datetime.UTC)
    for created, shown in (("2026-01-02T23:59:55Z", "5s"), ("2026-01-02T23:56:40Z", "3m20s"),
                           ("2026-01-02T20:00:00Z", "4h"), ("2026-01-02T03:00:00Z", "21h"),
                           ("2025-12-30T00:00:00Z", "4d"), ("2025-12-01T00:00:00Z", "33d")):  # fmt: skip
        assert age({"metadata": {"creationTimestamp": created}}, now) == shown


def test_kubectl_get_csr_shows_signer_requestor_and_condition(api_server: TestApiServer, kubectl):
    import asyncio

    from nodehost.api.client import ClusterClient
    from nodehost.pki.keys import generate_private_key
    from nodehost.testing.certrequest import csr_body

    async def file_request() -> None:
        async with ClusterClient(str(api_server.bootstrap_kubeconfig)) as client:
            await client.create(
                "CertificateSigningRequest", csr_body("n1", generate_private_key("ecdsa"))
            )

    api_server.set_approver("never")
    asyncio.run(file_request())
    admin = ("--kubeconfig", str(api_server.admin_kubeconfig))
    pending = kubectl(*admin, "get", "csr", "--no-headers")
    assert pending.stdout.split()[2:] == [
        "kubernetes.io/kube-apiserver-client-kubelet", "system:bootstrap:abcdef", "<none>", "Pending"
    ]  # fmt: skip
    name = pending.stdout.split()[0]
    assert kubectl(*admin, "certificate", "approve", name).returncode == 0
    assert (
        kubectl(*admin, "get", "csr", name, "--no-headers").stdout.split()[-1] == "Approved,Issued"
    )

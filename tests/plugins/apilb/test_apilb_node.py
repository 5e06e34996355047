"""A bootstrapped node of a cluster with three API servers (one test API server store on three
ports): stopping the one in use leaves every component working, starting it brings traffic back."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dns.message
import dns.query
import pytest
import yaml

from nodehost.testing import parts
from nodehost.testing.apiserver import TestApiServer
from nodehost.testing.noderun import NodeRun, nodehost_executable, run_nodehost
from nodehost.testing.ports import free_port

sys.path.insert(0, str(Path(__file__).parents[1] / "bootstrap"))  # the cluster tests' helpers

import clusterrun
from clusterrun import CONFIG_MAP, NAMESPACE, NODE_NAME, wait_for

COMPONENTS = "kubelet,proxy,dns,bootstrap,apilb"
WAIT = 60.0


def node_config(api: TestApiServer, dns_port: int, lb_port: int) -> dict[str, Any]:
    """The bootstrap tests' node config, with DNS and three API servers to balance."""
    config: dict[str, Any] = yaml.safe_load(clusterrun.node_config(free_port(), free_port()))
    config["dnsBindAddress"] = f"127.0.0.1:{dns_port}"
    config["dnsNameservers"] = []
    config["apiServerLoadBalancer"] = {
        "servers": api.urls[1:],
        "bindAddress": f"127.0.0.1:{lb_port}",
        "healthInterval": "200ms",
    }
    return config


class Node:
    """The running node, its API servers and its DNS server."""

    def __init__(self, api: TestApiServer, tmp_path: Path) -> None:
        self.api = api
        self.dns_port = free_port()
        self.config = node_config(api, self.dns_port, free_port())
        api.put_config_map(NAMESPACE, CONFIG_MAP, {"node-config.yaml": yaml.safe_dump(self.config)})
        self.state_dir = tmp_path / "state"
        argv = [
            nodehost_executable(), "start", f"--bootstrap-config-name={CONFIG_MAP}",
            f"--kubeconfig={api.bootstrap_kubeconfig}", f"--config-dir={tmp_path / 'node'}",
            f"--hostname={NODE_NAME}", f"--components={COMPONENTS}", "--standins=always",
            f"--state-dir={self.state_dir}", "--health-address=127.0.0.1:0", "--log-format=json",
            "--serving-cert-wait=1s", "--bootstrap-timeout=20s", "--config-rollback-after=2m",
        ]  # fmt: skip
        self.run = NodeRun(argv, self.state_dir, {})

    def lb(self) -> dict[str, Any]:
        details: dict[str, Any] = self.run.component("apilb").get("details") or {}
        return details

    def using(self) -> str | None:
        return self.lb().get("using")

    def made(self, address: str) -> int:
        return next(s["connections_total"] for s in self.lb()["servers"] if s["address"] == address)

    def resolves(self, name: str) -> list[str]:
        query = dns.message.make_query(f"{name}.default.svc.cluster.local", "A")
        try:
            answer = dns.query.udp(query, "127.0.0.1", timeout=2, port=self.dns_port)
        except (dns.exception.Timeout, OSError):
            return []
        return [item.address for rrset in answer.answer for item in rrset]

    def service(self, name: str, ip: str) -> None:
        self.api.store.put(
            "services",
            {"metadata": {"name": name, "namespace": "default"},
             "spec": {"clusterIP": ip, "ports": [{"port": 80, "protocol": "TCP"}]}},
        )  # fmt: skip

    def running(self) -> dict[str, tuple[Any, Any]]:
        """Each component's (pid, restarts)."""
        return {
            c["name"]: (c.get("pid"), c.get("restarts")) for c in self.run.status()["components"]
        }


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    parts.require("nodehost-script")
    with TestApiServer(tmp_path / "api", listeners=3) as api:
        api.store.put("nodes", {"metadata": {"name": NODE_NAME}})
        running = Node(api, tmp_path)
        try:
            running.run.ready(timeout=WAIT)
            yield running
        finally:
            running.run.stop()


def address(port: int) -> str:
    return f"127.0.0.1:{port}"


def test_every_component_reaches_the_api_through_the_balancer(node: Node) -> None:
    routed = str(node.state_dir / "apilb" / "kubeconfig")
    kubelet = Path(f"/proc/{node.run.component('kubelet')['pid']}/cmdline").read_bytes()
    assert f"--kubeconfig={routed}".encode() in kubelet.split(b"\0")
    proxy = yaml.safe_load((node.state_dir / "proxy" / "kube-proxy-config.yaml").read_text())
    assert proxy["clientConnection"]["kubeconfig"] == routed
    assert node.using() == address(node.api.ports[0])
    # the DNS source, rotation and config sync talk through it: connections were made
    wait_for(lambda: node.made(address(node.api.ports[0])) >= 2, "connections through apilb")


def test_stopping_the_server_in_use_leaves_the_node_working_and_starting_it_brings_traffic_back(
    node: Node, tmp_path: Path
) -> None:
    first, second, _ = node.api.ports
    node.service("before", "10.0.0.51")
    wait_for(lambda: node.resolves("before") == ["10.0.0.51"], "DNS to serve the first service")
    wait_for(lambda: node.api.watches_opened >= 3, "the watches of DNS and config sync")
    components = node.running()

    node.api.go_down(first)
    wait_for(lambda: node.using() == address(second), "the balancer to use the second server")
    node.service("after", "10.0.0.52")
    wait_for(lambda: node.resolves("after") == ["10.0.0.52"], "DNS to follow through another")
    assert node.running() == components  # no component restarted by the failover
    changed = {**node.config, "kubeletArguments": {**node.config["kubeletArguments"],
                                                   "max-pods": ["42"]}}  # fmt: skip
    node.api.put_config_map(NAMESPACE, CONFIG_MAP, {"node-config.yaml": yaml.safe_dump(changed)})
    last = wait_for(lambda: applied(node, 2), "config sync to apply the change")
    assert last["result"] == "applied" and last["restarted"] == ["kubelet"], last

    node.api.come_up(first)
    wait_for(lambda: node.using() == address(first), "the balancer to use the first server again")
    made = node.made(address(first))
    done = run_nodehost("status", "--address", node.run.address())
    assert f"apilb: API server {address(first)} (kubeconfig): up" in done.out, done.out
    assert f"apilb: API server {address(second)} (config): up" in done.out
    metrics = node.run.get("/metrics")[1]
    assert f'nodehost_apilb_server_in_use{{server="{address(first)}"}} 1.0' in metrics
    routed = str(node.state_dir / "apilb" / "kubeconfig")
    assert request_through(routed)
    wait_for(lambda: node.made(address(first)) > made, "a new connection to the first server")
    changes = [e["event"] for e in node.run.logs()
               if e.get("component") == "apilb" and e.get("server") == address(first)]  # fmt: skip
    assert changes == ["API server up", "API server down", "API server up"], changes
    assert node.run.process.poll() is None


def applied(node: Node, generation: int) -> dict[str, Any] | None:
    last = node.run.status()["configuration"].get("last_apply") or {}
    return last if last.get("generation") == generation else None


def request_through(kubeconfig: str) -> bool:
    """One request through the balancer with nodehost's own client (the node's identity)."""
    import asyncio

    from nodehost.api.client import ClusterClient

    async def ask() -> bool:
        async with ClusterClient(kubeconfig, timeout=5.0) as client:
            answer = await client.call("version", lambda: client.request("GET", "/version"))
        return bool(answer.get("gitVersion"))

    return asyncio.run(ask())

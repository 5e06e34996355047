"""``nodeIP`` / ``--node-ip``: chosen on the host at start, shown, checked, and followed.

The node that follows address changes runs in a network namespace the test
made (its own link and addresses), so the changes are real netlink events and
the host's own interfaces are never touched.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import wait_for

from nodehost.cni import netns
from nodehost.testing.noderun import NodeRun, nodehost_executable
from nodehost.testing.ports import free_port


def test_dry_run_shows_the_chosen_node_ip_and_how(nodehost, write_config, node_dir: Path) -> None:
    config = write_config((node_dir / "node-config.yaml").read_text())
    args = ["start", f"--config={config}", "--dry-run", "--components=kubelet"]
    result = nodehost(*args, "--standins=always", "--node-ip=iface:lo")
    assert result.code == 0, result.err
    assert "node IP: 127.0.0.1 (the first address of interface lo)" in result.out
    assert "--node-ip=127.0.0.1" in nodehost(*args[:2], "--write-flags", "--node-ip=iface:lo").out


def test_a_node_ip_on_no_local_interface_fails_naming_it_and_the_candidates(
    nodehost, node_dir: Path
) -> None:
    config = node_dir / "node-config.yaml"
    result = nodehost("start", f"--config={config}", "--dry-run", "--node-ip=203.0.113.77")
    assert result.code == 1
    assert (
        "nodeIP 203.0.113.77 is not an address of any local interface; candidates: " in result.err
    )
    assert "Traceback" not in result.err


def test_a_bad_node_ip_flag_is_a_usage_error(nodehost, node_dir: Path) -> None:
    result = nodehost("start", f"--config={node_dir / 'node-config.yaml'}", "--node-ip=iface:")
    assert result.code == 2
    assert "--node-ip" in result.err and "iface: needs an interface name" in result.err


def test_config_validate_checks_the_node_ip_syntax_only(
    nodehost, write_config, node_dir: Path
) -> None:
    text = (node_dir / "node-config.yaml").read_text()
    bad = write_config(text.replace("nodeIP: 127.0.0.1", "nodeIP: 10.0.0.1,10.0.0.2"), "bad.yaml")
    result = nodehost("config", "validate", str(bad))
    assert result.code == 255
    assert (
        '  nodeIP: Invalid value: "10.0.0.1,10.0.0.2": a dual-stack pair needs one IPv4 and one '
        "IPv6 address"
    ) in result.err
    elsewhere = write_config(text.replace("nodeIP: 127.0.0.1", "nodeIP: iface:eth9"), "ok.yaml")
    assert (
        nodehost("config", "validate", str(elsewhere)).code == 0
    )  # this host's interfaces: at start


# --- following address changes -------------------------------------------------------------


@pytest.fixture
def namespace() -> Iterator[str]:
    name = netns.unique_name("nh-host")
    netns.create(name)
    try:
        ip(name, "link", "set", "lo", "up")
        ip(name, "link", "add", "nhd0", "type", "veth", "peer", "name", "nhd0p")
        ip(name, "link", "set", "nhd0p", "up")
        ip(name, "link", "set", "nhd0", "up")
        yield name
    finally:
        netns.delete(name)


def ip(name: str, *arguments: str) -> None:
    netns.run_ip(["-n", name, *arguments], " ".join(arguments))


class NamespacedNode:
    """``nodehost start`` inside ``namespace``; its /status asked from inside too."""

    def __init__(self, namespace: str, config: Path, state_dir: Path) -> None:
        self.namespace = namespace
        self.admin_kubeconfig = Path()
        argv = [
            nodehost_executable(),
            "start",
            f"--config={config}",
            "--components=kubelet",
            "--no-exec",
            "--standins=always",
            f"--state-dir={state_dir}",
            "--health-address=127.0.0.1:0",
            "--log-format=json",
        ]
        env = {k: v for k, v in __import__("os").environ.items() if k != "NOTIFY_SOCKET"}
        self.run = NodeRun(netns.exec_argv(namespace, argv), state_dir, env)

    def status(self) -> dict[str, Any]:
        address = self.run.address()
        done = subprocess.run(
            netns.exec_argv(
                self.namespace,
                [nodehost_executable(), "status", "--json", f"--address={address}"],
            ),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.stdout, done.stderr + self.run.stderr()[-3000:]
        return json.loads(done.stdout)

    def kubelet(self) -> tuple[int, list[str]]:
        """The kubelet's pid and command line, once it runs."""
        pid = wait_for(lambda: self._kubelet_pid(), "the kubelet to run")
        return pid, Path(f"/proc/{pid}/cmdline").read_text().split("\0")

    def _kubelet_pid(self) -> int | None:
        entry = next(c for c in self.status()["components"] if c["name"] == "kubelet")
        return entry["pid"] if entry["ready"] else None

    def logged(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.run.logs() if e.get("event") == event]

    def node_events(self) -> list[tuple[str, str, str]]:
        """``(type, reason, message)`` of every Node event, asked with kubectl from inside."""
        kubectl = Path(sys.executable).parent / "kubectl"
        argv = [str(kubectl), f"--kubeconfig={self.admin_kubeconfig}", "get", "events", "-A"]
        done = subprocess.run(
            netns.exec_argv(self.namespace, [*argv, "-o", "json"]),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        items = json.loads(done.stdout)["items"]
        return [(e["type"], e["reason"], e["message"]) for e in items]


@pytest.fixture
def api_in_namespace(namespace: str, tmp_path: Path) -> Iterator[Path]:
    """The test API server inside ``namespace``; its admin kubeconfig."""
    argv = [sys.executable, "-m", "nodehost.testing.apiserver", "--dir", str(tmp_path / "api")]
    server = subprocess.Popen(netns.exec_argv(namespace, argv), stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        lines = dict(server.stdout.readline().split(" ", 1) for _ in range(2))
        yield Path(lines["admin-kubeconfig"].strip())
    finally:
        server.terminate()
        server.wait(60)


@pytest.fixture
def node_in_namespace(
    namespace: str, node_dir: Path, tmp_path: Path, api_in_namespace: Path
) -> Iterator[NamespacedNode]:
    ip(namespace, "addr", "add", "10.78.0.5/24", "dev", "nhd0")
    config = node_dir / "node-config.yaml"
    text = config.read_text().replace("nodeIP: 127.0.0.1", "nodeIP: cidr:10.78.0.0/24")
    text = text.replace(
        "masterKubeConfig: node.kubeconfig", f"masterKubeConfig: {api_in_namespace}"
    )
    config.write_text(text + f'  healthz-port: ["{free_port()}"]\n')
    node = NamespacedNode(namespace, config, tmp_path / "state")
    node.admin_kubeconfig = api_in_namespace
    try:
        yield node
    finally:
        node.run.stop() if node.run.process.poll() is None else None
        node.run.kill()


@pytest.mark.needs("root", "ip", "nodehost-script", "kubectl")
def test_the_node_follows_its_node_ip_and_restarts_only_when_it_changes(
    node_in_namespace: NamespacedNode, namespace: str
) -> None:
    node = node_in_namespace
    first, argv = node.kubelet()
    assert "--node-ip=10.78.0.5" in argv
    assert node.status()["node_ip"] == {
        "addresses": ["10.78.0.5"],
        "chosen_by": "the first local address in 10.78.0.0/24",
        "spec": "cidr:10.78.0.0/24",
        "problem": None,
    }
    # Another address inside the network, after the chosen one: the choice stays.  (A /32:
    # as a secondary of 10.78.0.5/24 the kernel would delete it with its primary.)
    ip(namespace, "addr", "add", "10.78.0.6/32", "dev", "nhd0")
    # The chosen one goes: the selector now means 10.78.0.6.
    ip(namespace, "addr", "del", "10.78.0.5/24", "dev", "nhd0")
    [changed] = wait_for(lambda: node.logged("node IP changed"), "the node IP change")
    assert (changed["old"], changed["new"], changed["restarted"]) == (
        "10.78.0.5",
        "10.78.0.6",
        ["kubelet"],
    )
    second, argv = node.kubelet()
    assert second != first and "--node-ip=10.78.0.6" in argv
    # An unrelated address changes nothing; the next event (the node IP gone) is seen after it.
    ip(namespace, "addr", "add", "10.79.0.1/24", "dev", "nhd0")
    ip(namespace, "addr", "del", "10.78.0.6/32", "dev", "nhd0")
    [gone] = wait_for(lambda: node.logged("node IP unavailable"), "the node IP to be gone")
    assert gone["node_ip"] == "10.78.0.6" and "candidates: 10.79.0.1 (nhd0)" in gone["error"]
    assert node.status()["node_ip"]["problem"] == gone["error"]
    assert node.kubelet()[0] == second  # nothing restarted for either
    assert len(node.logged("node IP changed")) == 1
    events = wait_for(lambda: len(node.node_events()) >= 2 and node.node_events(), "2 events")
    assert (
        "Normal",
        "NodeIPChanged",
        "node IP changed from 10.78.0.5 to 10.78.0.6 (the first "
        "local address in 10.78.0.0/24); restarted kubelet",
    ) in events
    assert (
        "Warning",
        "NodeIPUnavailable",
        f"node IP 10.78.0.6 unavailable: {gone['error']}",
    ) in events
    assert node.run.stop() == 0


def test_status_shows_the_node_ip_line() -> None:
    from nodehost.cli.status import render_table

    document = {
        "ready": True,
        "components": [],
        "node_ip": {"addresses": ["10.0.0.5"], "chosen_by": "nodeIP", "problem": "gone"},
    }
    assert "node IP: 10.0.0.5 (nodeIP); UNAVAILABLE: gone" in render_table(document)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))

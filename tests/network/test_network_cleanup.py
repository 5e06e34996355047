"""``nodehost network cleanup``: removes exactly what nodehost created for the pod network.

The node's network is brought up the way it happens in production: the sdn
component's planned files are written as the runtime writes them, then a
"pod" is attached and detached through the written configuration by real
CNI plugins, which leaves the bridge behind (CNI's DEL never removes it).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nodehost.cli.network import NetworkTarget
from nodehost.cni import (
    LEDGER_NAME,
    RuntimeConf,
    add_network,
    delete_network,
    hostnet,
    netns,
    read_network_file,
)
from nodehost.pki.atomic import make_directories, write_atomic
from nodehost.testing import parts

PLUGIN_FLAGS = {"disable_plugins": (), "strict_plugins": False, "no_plugins": False}


def write_planned_files(node) -> list[str]:
    """What ``nodehost start`` writes for the network component; the paths."""
    target = NetworkTarget.resolve(str(node.config), str(node.state_dir), PLUGIN_FLAGS)
    paths = []
    for spec in target.plan().files:
        make_directories(Path(spec.path).parent)
        write_atomic(Path(spec.path), spec.content, spec.mode)
        paths.append(spec.path)
    return paths


def run_a_pod(conflist_path: Path, unique_name, ipam_dir: Path) -> None:
    """ADD then DEL a pod through the configuration file, as a container runtime would."""
    conflist = read_network_file(str(conflist_path))
    conflist["plugins"][0]["ipam"]["dataDir"] = str(ipam_dir)
    name = unique_name()
    runtime = RuntimeConf(name, netns.create(name), "eth0")
    sysctls = hostnet.Sysctls.snapshot()
    try:
        result = add_network(conflist, runtime, ["/usr/lib/cni", "/opt/cni/bin"])
        delete_network(conflist, runtime, ["/usr/lib/cni", "/opt/cni/bin"], result)
    finally:
        netns.delete(name)
        sysctls.restore()


def cleanup(nodehost, node):
    return nodehost(
        "network", "cleanup", "--config", str(node.config), "--state-dir", str(node.state_dir)
    )


@pytest.fixture
def conflist_path(node) -> Path:
    return node.conf_dir / "10-nodehost-bridge.conflist"


def test_start_writes_the_marked_list_and_records_it(needs_cni, node, conflist_path) -> None:
    node.use_bridge()
    written = write_planned_files(node)
    ledger = node.state_dir / "sdn" / LEDGER_NAME
    assert written == [str(conflist_path), str(ledger)]
    assert json.loads(conflist_path.read_text())["nodehost"]["managedBy"] == "nodehost"
    recorded = json.loads(ledger.read_text())
    assert recorded["files"] == [str(conflist_path)]
    assert recorded["links"] == [{"name": node.bridge, "kind": "bridge", "created": True}]


def test_cleanup_removes_the_list_and_the_bridge_the_pods_made(
    needs_cni, nodehost, node, conflist_path, unique_name, nothing_left_behind, tmp_path
) -> None:
    node.use_bridge()
    write_planned_files(node)
    run_a_pod(conflist_path, unique_name, tmp_path / "ipam")
    assert hostnet.links()[node.bridge] == "bridge"
    result = cleanup(nodehost, node)
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        f"removed {conflist_path}",
        f"removed bridge {node.bridge}",
        f"removed {node.state_dir / 'sdn' / LEDGER_NAME} (nodehost's record of them)",
    ]
    assert not conflist_path.exists()


def test_cleanup_keeps_other_configuration_files(needs_cni, nodehost, node, conflist_path) -> None:
    node.use_bridge()
    write_planned_files(node)
    theirs = node.conf_dir / "99-theirs.conflist"
    theirs.write_text('{"cniVersion": "1.0.0", "name": "theirs", "plugins": [{"type": "ptp"}]}')
    assert cleanup(nodehost, node).code == 0
    assert theirs.exists()
    assert not conflist_path.exists()


def test_cleanup_keeps_a_file_that_lost_the_marker(
    needs_cni, nodehost, node, conflist_path
) -> None:
    node.use_bridge()
    write_planned_files(node)
    edited = json.loads(conflist_path.read_text())
    del edited["nodehost"]
    conflist_path.write_text(json.dumps(edited))
    result = cleanup(nodehost, node)
    assert result.code == 0
    assert (
        f"kept {conflist_path}: it does not carry nodehost's marker (not nodehost's)" in result.out
    )
    assert conflist_path.exists()


def test_cleanup_keeps_a_bridge_that_existed_before_nodehost(
    needs_cni, nodehost, node, unique_name
) -> None:
    node.use_bridge()
    subprocess.run(["ip", "link", "add", node.bridge, "type", "bridge"], check=True)
    try:
        write_planned_files(node)
        result = cleanup(nodehost, node)
        assert node.bridge in hostnet.links()
    finally:
        hostnet.delete_link(node.bridge)
    assert result.code == 0
    assert f"kept bridge {node.bridge}: it existed before nodehost" in result.out


def test_a_restart_keeps_what_the_first_start_recorded(
    needs_cni, node, conflist_path, unique_name, tmp_path
) -> None:
    node.use_bridge()
    write_planned_files(node)
    run_a_pod(conflist_path, unique_name, tmp_path / "ipam")
    try:
        write_planned_files(node)  # the second start sees the bridge the pods made
        ledger = json.loads((node.state_dir / "sdn" / LEDGER_NAME).read_text())
    finally:
        hostnet.delete_link(node.bridge)
    assert ledger["links"] == [{"name": node.bridge, "kind": "bridge", "created": True}]


def test_cleanup_with_nothing_created_says_so(needs_cni, nodehost, node) -> None:
    node.use_bridge()
    result = cleanup(nodehost, node)
    assert result.code == 0
    assert result.out.startswith("nothing to clean up")


def test_switching_provider_is_blocked_by_the_old_list_until_cleaned_up(
    needs_cni, nodehost, node, conflist_path
) -> None:
    parts.require("nodehost-ptp")
    node.use_bridge()
    write_planned_files(node)
    node.write("ptp", f"ptp:\n  subnet: {node.pod_cidr}\n  cniConfDir: {node.conf_dir}\n")
    start = (
        "start",
        "--config",
        str(node.config),
        "--components=sdn",
        "--dry-run",
        "--state-dir",
        str(node.state_dir),
    )
    blocked = nodehost(*start)
    assert blocked.code == 1
    assert (
        f"{conflist_path} sorts before {node.conf_dir / '10-nodehost-ptp.conflist'}, so "
        "container runtimes would use it instead; 'nodehost network cleanup' removes it"
    ) in blocked.err
    assert f"removed {conflist_path}" in cleanup(nodehost, node).out
    assert nodehost(*start).code == 0


def test_cleanup_uses_the_record_when_the_config_no_longer_validates(
    needs_cni, nodehost, node, conflist_path, unique_name, nothing_left_behind, tmp_path
) -> None:
    node.use_bridge()
    write_planned_files(node)
    run_a_pod(conflist_path, unique_name, tmp_path / "ipam")
    text = node.config.read_text().replace("networkPluginName: bridge", "networkPluginName: gone")
    node.config.write_text(text)
    result = cleanup(nodehost, node)
    assert result.code == 0, result.err
    assert "cleaning up from the record in the state directory only" in result.err
    assert f"removed {conflist_path}" in result.out
    assert f"removed bridge {node.bridge}" in result.out
    assert not conflist_path.exists()

"""``nodehost network check``: the configured chain for real in a throw-away namespace.

Every test that runs plugins also asserts that nothing is left behind: no
namespace, no link, no changed forwarding switch (``nothing_left_behind``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nodehost.cni import hostnet
from nodehost.cni.sandbox import HOST_LOCAL_DATA_DIR


def check(nodehost, node, *extra: str):
    return nodehost(
        "network", "check", "--config", str(node.config), "--state-dir", str(node.state_dir), *extra
    )


def test_check_passes_and_reports_each_step(needs_cni, nodehost, node, nothing_left_behind) -> None:
    node.use_bridge()
    result = check(nodehost, node)
    assert result.code == 0, result.out + result.err
    lines = result.out.splitlines()
    assert lines[-1] == "network check passed"
    for step in ("plugins", "loopback", "ADD", "address", "gateway", "CHECK", "DEL"):
        assert any(line.split()[:2] == [step, "ok"] for line in lines), step
    assert "ok  eth0 is up inside the namespace with 10.244." in result.out
    assert f"link {node.bridge} removed (the sandbox created it)" in result.out


def test_check_takes_no_address_from_the_live_ipam_store(
    needs_cni, nodehost, node, nothing_left_behind
) -> None:
    node.use_bridge()
    live = Path(HOST_LOCAL_DATA_DIR, "nodehost-bridge")
    before = sorted(os.listdir(live)) if live.exists() else None
    assert check(nodehost, node).code == 0
    assert (sorted(os.listdir(live)) if live.exists() else None) == before


def test_check_restores_ip_forward_that_the_bridge_plugin_turned_on(
    needs_cni, nodehost_exe, node, nothing_left_behind
) -> None:
    """Run in a network namespace of its own with forwarding off, whatever the host's is.

    (A new namespace inherits IPv4 forwarding from the host's, so it is switched
    off inside it first; the host's switch is never touched.)
    """
    node.use_bridge()
    forwarding_off = 'echo 0 > /proc/sys/net/ipv4/ip_forward && exec "$0" "$@"'
    result = nodehost_exe(
        "network", "check", "--config", str(node.config), "--state-dir", str(node.state_dir),
        prefix=("unshare", "--net", "--", "sh", "-c", forwarding_off),
    )  # fmt: skip
    assert result.code == 0, result.out + result.err
    assert "net.ipv4.ip_forward 1 -> 0 restored" in result.out


def test_check_writes_no_configuration_file(needs_cni, nodehost, node, nothing_left_behind) -> None:
    node.use_bridge()
    assert check(nodehost, node).code == 0
    assert not node.conf_dir.exists()
    assert not node.state_dir.exists()


def test_installed_executable_check_passes(
    needs_cni, nodehost_exe, node, nothing_left_behind
) -> None:
    node.use_bridge()
    result = nodehost_exe(
        "network", "check", "--config", str(node.config), "--state-dir", str(node.state_dir)
    )
    assert result.code == 0, result.out + result.err
    assert result.out.splitlines()[-1] == "network check passed"


def test_missing_plugin_binary_is_named_with_the_directories_searched(
    needs_cni, nodehost, node, nothing_left_behind, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "cni-bin"
    bin_dir.mkdir()
    for plugin in ("bridge", "host-local", "loopback"):
        os.symlink(shutil.which(plugin, path="/usr/lib/cni:/opt/cni/bin"), bin_dir / plugin)
    node.use_bridge(cniBinDirs=json.dumps([str(bin_dir)]))
    result = check(nodehost, node)
    assert result.code == 1
    assert result.err.strip() == (
        "error: component sdn (network provider bridge): CNI plugin portmap not found in "
        f"{bin_dir}; install them (Debian: apt-get install containernetworking-plugins; "
        "upstream: the release tarball in /opt/cni/bin) or point the provider's cniBinDirs at them"
    )


def test_pod_cidr_overlapping_the_service_network_is_invalid_config(
    needs_cni, nodehost, node, nothing_left_behind
) -> None:
    node.use_bridge(serviceNetworkCIDR="10.244.0.0/16")
    result = check(nodehost, node)
    assert result.code == 255
    assert (
        f'  bridgeNetwork.podCIDR: Invalid value: "{node.pod_cidr}": overlaps the service '
        "network 10.244.0.0/16 (bridgeNetwork.serviceNetworkCIDR)"
    ) in result.err.splitlines()


def test_pod_cidr_overlapping_a_host_address_is_refused(
    needs_cni, nodehost, node, nothing_left_behind, unique_name
) -> None:
    node.use_bridge()
    other = unique_name()
    address = node.pod_cidr.replace(".0/24", ".200/24")
    subprocess.run(["ip", "link", "add", other, "type", "bridge"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", address, "dev", other], check=True)
        result = check(nodehost, node)
    finally:
        hostnet.delete_link(other)
    assert result.code == 1
    assert (
        f"pod network {node.pod_cidr} overlaps this host's addresses ({address} on {other}); "
        "choose a pod CIDR no host interface uses"
    ) in result.err


def test_unwritable_configuration_directory_is_refused(
    needs_cni, nodehost, node, nothing_left_behind, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file\n")
    node.use_bridge(cniConfDir=str(blocker / "net.d"))
    result = check(nodehost, node)
    assert result.code == 1
    assert result.err.strip() == (
        "error: component sdn (network provider bridge): cannot write "
        f"{blocker}/net.d: {blocker} is not a directory"
    )


def test_plugin_failing_mid_chain_gives_its_cni_error_and_leaves_nothing(
    needs_cni, nodehost, node, nothing_left_behind, tmp_path: Path, monkeypatch
) -> None:
    """Without iptables on PATH the bridge plugin fails after making the bridge, veth and lease."""
    only_ip = tmp_path / "path"
    only_ip.mkdir()
    os.symlink(shutil.which("ip"), only_ip / "ip")
    monkeypatch.setenv("PATH", str(only_ip))
    node.use_bridge()
    result = check(nodehost, node)
    assert result.code == 1
    assert result.err.strip() == (
        "error: plugin bridge (ADD) failed: CNI error 999: failed to locate iptables: exec: "
        '"iptables": executable file not found in $PATH'
    )
    assert result.out.splitlines()[-1] == "network check failed"
    assert f"link {node.bridge} removed (the sandbox created it)" in result.out


def test_bridge_name_taken_by_another_link_fails_and_keeps_that_link(
    needs_cni, nodehost, node, nothing_left_behind, unique_name
) -> None:
    node.bridge = unique_name()
    node.use_bridge()
    subprocess.run(
        ["ip", "link", "add", node.bridge, "type", "veth", "peer", "name", f"{node.bridge}p"],
        check=True,
    )
    try:
        result = check(nodehost, node)
        assert node.bridge in hostnet.links()
    finally:
        hostnet.delete_link(node.bridge)
    assert result.code == 1
    assert result.err.startswith("error: plugin bridge (ADD) failed: ")
    assert f'"{node.bridge}" already exists but is not a bridge' in result.err


def test_external_provider_is_checked_with_the_agents_configuration(
    needs_cni, nodehost, node, nothing_left_behind
) -> None:
    node.write("external", f"externalNetwork:\n  cniConfDir: {node.conf_dir}\n")
    node.conf_dir.mkdir()
    agent_conf = {
        "cniVersion": "0.4.0",
        "name": "agent-net",
        "type": "bridge",
        "bridge": node.bridge,
        "isGateway": True,
        "ipam": {"type": "host-local", "subnet": node.pod_cidr},
    }
    (node.conf_dir / "50-agent.conf").write_text(json.dumps(agent_conf))
    result = check(nodehost, node)
    assert result.code == 0, result.out + result.err
    assert f"network agent-net (CNI 0.4.0) from {node.conf_dir}/50-agent.conf" in result.out


def test_external_provider_without_a_configuration_yet_fails_clearly(
    needs_cni, nodehost, node
) -> None:
    node.write("external", f"externalNetwork:\n  cniConfDir: {node.conf_dir}\n")
    result = check(nodehost, node)
    assert result.code == 1
    assert result.err.strip() == (
        f"error: network provider external: no CNI configuration in {node.conf_dir} yet "
        "(the agent that manages this node's network writes it)"
    )


def test_no_provider_configured_has_nothing_to_check(needs_cni, nodehost, node) -> None:
    node.write("", "")
    result = check(nodehost, node)
    assert result.code == 1
    assert "component sdn is inactive: no network provider configured" in result.err


def test_without_root_it_says_so_and_exits_1(node, monkeypatch) -> None:
    """Checked in-process as an unprivileged user id: the check refuses before touching anything."""
    from click.testing import CliRunner

    from nodehost.cli import main

    node.use_bridge()
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    runner = CliRunner()
    with runner.isolation() as (_, err, *_rest), pytest.raises(SystemExit) as exit_:
        main(["network", "check", "--config", str(node.config)])
    assert exit_.value.code == 1
    assert err.getvalue().decode().strip() == (
        "error: nodehost network check needs root (network namespaces and veth pairs need "
        "CAP_NET_ADMIN); run it as root"
    )

"""nodehost as the CNI runtime: a provider's configuration list run plugin by plugin, for real."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import pytest

from nodehost.cni import (
    CniError,
    RuntimeConf,
    add_network,
    check_network,
    delete_network,
    hostnet,
    netns,
)
from nodehost.cni.chain import plugin_config
from nodehost.cni.plugins import DEFAULT_BIN_DIRS
from nodehost.testing.cni import configured_network


def test_each_plugin_gets_the_lists_name_and_version_and_the_previous_result() -> None:
    conflist = {"cniVersion": "1.0.0", "name": "net", "plugins": [{"type": "a"}, {"type": "b"}]}
    runtime = RuntimeConf("c1", "/var/run/netns/x")
    netconf = plugin_config(conflist, conflist["plugins"][1], runtime, {"cniVersion": "1.0.0"})
    assert netconf == {
        "type": "b",
        "name": "net",
        "cniVersion": "1.0.0",
        "prevResult": {"cniVersion": "1.0.0"},
    }


def test_runtime_config_goes_only_to_plugins_declaring_the_capability() -> None:
    conflist = {
        "cniVersion": "1.0.0",
        "name": "net",
        "plugins": [
            {"type": "bridge"},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    mappings = [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]
    runtime = RuntimeConf("c1", "/x", capability_args={"portMappings": mappings, "bandwidth": {}})
    bridge, portmap = (plugin_config(conflist, p, runtime, None) for p in conflist["plugins"])
    assert "runtimeConfig" not in bridge
    assert portmap["runtimeConfig"] == {"portMappings": mappings}


def test_a_plugin_error_carries_the_specs_error_object(needs_cni) -> None:
    conflist = {"cniVersion": "1.0.0", "name": "net", "plugins": [{"type": "bridge"}]}
    runtime = RuntimeConf("c1", "/var/run/netns/nh-none", ifname="")
    with pytest.raises(CniError) as caught:
        add_network(conflist, runtime, DEFAULT_BIN_DIRS)
    error = caught.value
    assert (error.plugin, error.command, error.code) == ("bridge", "ADD", 4)
    assert "CNI_IFNAME" in error.msg
    assert str(error).startswith(
        "plugin bridge (ADD) failed: CNI error 4 (invalid necessary environment variables): "
    )


def test_a_missing_plugin_binary_is_named_with_the_directories_searched(tmp_path: Path) -> None:
    conflist = {"cniVersion": "1.0.0", "name": "net", "plugins": [{"type": "nh-no-such"}]}
    with pytest.raises(
        CniError, match=rf"plugin nh-no-such \(ADD\) failed: not found in {tmp_path}"
    ):
        add_network(conflist, RuntimeConf("c1", "/x"), [str(tmp_path)])


def test_bridge_providers_list_runs_add_check_del_in_a_namespace_the_test_made(
    needs_cni, node, nothing_left_behind, unique_name, tmp_path: Path
) -> None:
    network = configured_network(node.use_bridge(), state_dir=node.state_dir)
    conflist = dict(network.conflist)
    ipam_dir = tmp_path / "ipam"
    conflist["plugins"] = [dict(p) for p in conflist["plugins"]]
    conflist["plugins"][0]["ipam"] = dict(conflist["plugins"][0]["ipam"], dataDir=str(ipam_dir))
    name = unique_name()
    runtime = RuntimeConf(container_id=name, netns=netns.create(name), ifname="eth0")
    sysctls = hostnet.Sysctls.snapshot()
    try:
        result = add_network(conflist, runtime, network.bin_dirs)
        (entry,) = result["ips"]
        address = ipaddress.ip_interface(entry["address"])
        assert address in ipaddress.ip_network(node.pod_cidr)
        assert entry["gateway"] == str(ipaddress.ip_network(node.pod_cidr).network_address + 1)
        assert address in hostnet.addresses(name, "eth0")["eth0"]
        assert os.listdir(ipam_dir / "nodehost-bridge").count(str(address.ip)) == 1
        check_network(conflist, runtime, network.bin_dirs, result)
        delete_network(conflist, runtime, network.bin_dirs, result)
        assert str(address.ip) not in os.listdir(ipam_dir / "nodehost-bridge")
    finally:
        netns.delete(name)
        if node.bridge in hostnet.links():
            hostnet.delete_link(node.bridge)
        sysctls.restore()

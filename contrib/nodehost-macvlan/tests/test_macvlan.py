"""The macvlan provider, tested as its author tests it: nodehost's pytest fixtures only.

Real CNI (``macvlan``, ``host-local`` from the CNI plugin directory) on a
throw-away master link (``master_link``) between throw-away namespaces
(``cni_sandbox``), and the installed ``nodehost`` command (``nodehost_cli``).
"""

from __future__ import annotations

import ipaddress
import json

import pytest

from nodehost.testing import parts
from nodehost.testing.cni import configured_network, exercise


@pytest.fixture(autouse=True)
def _macvlan_package() -> None:
    """This package installed (where it is not, the test skips with the install line)."""
    parts.require("nodehost-macvlan")


def use_macvlan(node_folder, **section):
    """Select macvlan in the node folder's config with ``section`` as macvlanNetwork."""
    section.setdefault("cniConfDir", str(node_folder.path / "net.d"))
    return node_folder.update(
        {"networkConfig": {"networkPluginName": "macvlan"}, "macvlanNetwork": section}
    )


def slice_of(link, index: int = 1) -> ipaddress.IPv4Network:
    """The ``index``-th /26 of the link's network: this node's pod CIDR (.64/26 by default)."""
    return list(link.network.subnets(new_prefix=26))[index]


@pytest.fixture
def lan(master_link):
    """A master link with a /24 (address .1) and the MTU 1500."""
    return master_link()


def check(nodehost_cli, node_folder, tmp_path):
    return nodehost_cli(
        "network", "check", "--config", str(node_folder.config_path),
        "--state-dir", str(tmp_path / "state"),
    )  # fmt: skip


def test_two_pods_on_the_master_reach_each_other(cni_sandbox, lan, node_folder, tmp_path) -> None:
    pods = slice_of(lan)
    gateway = lan.network.broadcast_address - 1
    config = use_macvlan(node_folder, master=lan.name, podCIDR=str(pods), gateway=str(gateway))
    network = configured_network(config, state_dir=tmp_path / "state")
    lines: list[str] = []
    attachment = exercise(cni_sandbox, network, echo=lines.append)
    (address, given_gateway), *_ = attachment.addresses()
    assert address.ip in pods
    assert address.network == lan.network  # the pod is on the master's network, not a /26
    assert given_gateway == str(gateway)
    assert any(line.split()[:2] == ["peer", "ok"] for line in lines), lines
    assert attachment.detached


def test_network_check_proves_macvlan(nodehost_cli, lan, node_folder, tmp_path) -> None:
    use_macvlan(node_folder, master=lan.name, podCIDR=str(slice_of(lan)))
    result = check(nodehost_cli, node_folder, tmp_path)
    assert result.code == 0, result.out + result.err
    steps = [line.split()[:2] for line in result.out.splitlines()]
    for step in (["master", "ok"], ["pod-cidr", "ok"], ["ADD#2", "ok"], ["peer", "ok"]):
        assert step in steps, result.out
    assert ["gateway", "ok"] not in steps  # an L2 network's gateway is not on this host
    assert result.out.splitlines()[-1] == "network check passed"


def test_check_names_a_missing_master(nodehost_cli, lan, node_folder, tmp_path) -> None:
    use_macvlan(node_folder, master=f"{lan.name}x", podCIDR=str(slice_of(lan)))
    result = check(nodehost_cli, node_folder, tmp_path)
    assert result.code == 1
    assert f"master link {lan.name}x does not exist on this host" in result.err


def test_mtu_above_the_masters_is_refused(nodehost_cli, lan, node_folder, tmp_path) -> None:
    use_macvlan(node_folder, master=lan.name, podCIDR=str(slice_of(lan)), mtu=9000)
    result = check(nodehost_cli, node_folder, tmp_path)
    assert result.code == 1
    assert f"MTU 9000 is larger than the MTU 1500 of the master link {lan.name}" in result.err


def test_pod_cidr_outside_the_masters_network_is_refused(
    nodehost_cli, lan, node_folder, tmp_path
) -> None:
    elsewhere = ipaddress.ip_network(f"{lan.network.network_address + 256}/26")
    use_macvlan(node_folder, master=lan.name, podCIDR=str(elsewhere))
    result = check(nodehost_cli, node_folder, tmp_path)
    assert result.code == 1
    assert f"pod CIDR {elsewhere} is not inside the network of master link {lan.name}" in result.err


def test_pod_cidr_holding_the_masters_address_is_refused(
    nodehost_cli, lan, node_folder, tmp_path
) -> None:
    use_macvlan(node_folder, master=lan.name, podCIDR=str(slice_of(lan, 0)))
    result = check(nodehost_cli, node_folder, tmp_path)
    assert result.code == 1
    assert f"holds {lan.address.ip}, an address of master link {lan.name}" in result.err


def test_private_mode_proves_each_pod_alone(nodehost_cli, lan, node_folder, tmp_path) -> None:
    use_macvlan(node_folder, master=lan.name, podCIDR=str(slice_of(lan)), mode="private")
    result = check(nodehost_cli, node_folder, tmp_path)
    assert result.code == 0, result.out + result.err
    assert "peer     ok  skipped: macvlan mode private keeps pods on one master apart" in result.out


def test_plan_writes_the_marked_list(node_plan, lan, node_folder) -> None:
    gateway = str(lan.network.broadcast_address - 1)
    config = use_macvlan(node_folder, master=lan.name, podCIDR=str(slice_of(lan)), gateway=gateway)
    plan = node_plan(config, components="sdn").get("sdn").plan
    written = {spec.path: spec.content for spec in plan.files}
    conflist = json.loads(written[str(node_folder.path / "net.d" / "10-nodehost-macvlan.conflist")])
    (macvlan,) = conflist["plugins"]
    assert (macvlan["type"], macvlan["master"], macvlan["mode"]) == ("macvlan", lan.name, "bridge")
    assert conflist["nodehost"]["managedBy"] == "nodehost"
    pool = macvlan["ipam"]["ranges"][0][0]
    assert pool["subnet"] == str(lan.network)
    assert (pool["rangeStart"], pool["rangeEnd"]) == (
        str(slice_of(lan).network_address),
        str(slice_of(lan).broadcast_address),
    )


def test_section_problems_are_reported_at_their_paths(nodehost_cli, node_folder) -> None:
    use_macvlan(node_folder, podCIDR="10.250.0.64/26", gateway="10.250.0.70", mode="bridged")
    raw = node_folder.raw()
    raw["macvlanNetwork"]["mtu"] = "big"
    raw["macvlanNetwork"]["masterLink"] = "eth1"
    node_folder.update(raw)
    result = nodehost_cli("config", "validate", str(node_folder.config_path))
    assert result.code == 255
    for line in (
        "  macvlanNetwork.master: Required value",
        '  macvlanNetwork.gateway: Invalid value: "10.250.0.70": is inside podCIDR 10.250.0.64/26',
        '  macvlanNetwork.mode: Unsupported value: "bridged"',
        '  macvlanNetwork.mtu: Invalid value: "big": must be a whole number',
        '  macvlanNetwork.masterLink: Forbidden: unknown field; did you mean "master"?',
    ):
        assert line in result.err, result.err


def test_listed_with_its_topology(nodehost_cli) -> None:
    result = nodehost_cli("network", "providers", "--json")
    assert result.code == 0, result.err
    providers = {item["name"]: item for item in json.loads(result.out)}
    assert providers["macvlan"]["topology"] == "l2"
    assert providers["macvlan"]["config_section"] == "macvlanNetwork"
    assert providers["macvlan"]["distribution"].startswith("nodehost-macvlan ")


def test_schema_describes_the_section(nodehost_cli) -> None:
    schema = json.loads(nodehost_cli("config", "schema").out)
    section = schema["properties"]["macvlanNetwork"]
    assert section["required"] == ["master", "podCIDR"]
    assert set(section["properties"]) >= {"master", "podCIDR", "gateway", "mode", "mtu"}


def test_the_section_is_checked_when_another_provider_runs(nodehost_cli, node_folder) -> None:
    node_folder.update({"macvlanNetwork": {"mode": "bridged", "masterLink": "eth1"}})
    result = nodehost_cli("config", "validate", str(node_folder.config_path))
    assert result.code == 255
    assert '  macvlanNetwork.mode: Unsupported value: "bridged"' in result.err, result.err
    assert "  macvlanNetwork.master: Required value" not in result.err  # it does not run
    assert "macvlanNetwork: has no effect in nodehost: it is used only when the sdn" in result.err

"""The built-in ``bridge`` provider: its section's validation, its plan, its network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodehost.cni import HostLink
from nodehost.errors import RuntimeFailure
from nodehost.plugins import sdn
from nodehost.plugins.sdn import Sdn
from nodehost.plugins.sdn.bridge import BridgeProvider


def test_a_complete_section_has_no_problems(make_config, validate) -> None:
    assert validate(make_config()) == []


def test_the_pod_cidr_is_required(make_config, validate) -> None:
    assert validate(make_config(section=None)) == ["bridgeNetwork.podCIDR: Required value"]


def test_the_pod_cidr_must_have_no_host_bits(make_config, validate) -> None:
    (problem,) = validate(make_config(section={"podCIDR": "10.244.9.1/24"}))
    assert problem.startswith(
        'bridgeNetwork.podCIDR: Invalid value: "10.244.9.1/24": must be a CIDR such as '
        "10.244.1.0/24: 10.244.9.1/24 has host bits set"
    )


def test_the_pod_cidr_must_hold_a_gateway_and_pods(make_config, validate) -> None:
    assert validate(make_config(section={"podCIDR": "10.244.9.0/31"})) == [
        'bridgeNetwork.podCIDR: Invalid value: "10.244.9.0/31": too small: it must hold at '
        "least 4 addresses"
    ]


def test_a_pod_cidr_overlapping_the_service_network_is_an_error(make_config, validate) -> None:
    section = {"podCIDR": "172.30.4.0/24", "serviceNetworkCIDR": "172.30.0.0/16"}
    assert validate(make_config(section=section, dnsIP="")) == [
        'bridgeNetwork.podCIDR: Invalid value: "172.30.4.0/24": overlaps the service network '
        "172.30.0.0/16 (bridgeNetwork.serviceNetworkCIDR)"
    ]


def test_a_pod_cidr_holding_the_node_ip_is_an_error(make_config, validate) -> None:
    assert validate(make_config(section={"podCIDR": "192.0.2.0/24"})) == [
        'bridgeNetwork.podCIDR: Invalid value: "192.0.2.0/24": contains nodeIP 192.0.2.2; '
        "pods would take it"
    ]


def test_directories_must_be_absolute(make_config, validate) -> None:
    section = {"podCIDR": "10.244.9.0/24", "cniConfDir": "net.d", "cniBinDirs": ["/ok", "bin"]}
    assert validate(make_config(section=section)) == [
        'bridgeNetwork.cniConfDir: Invalid value: "net.d": must be an absolute path',
        "bridgeNetwork.cniBinDirs: Invalid value: \"['/ok', 'bin']\": must be absolute paths: bin",
    ]


def test_a_bridge_name_longer_than_a_link_name_is_an_error(make_config, validate) -> None:
    (problem,) = validate(make_config(section={"podCIDR": "10.244.9.0/24", "bridge": "b" * 16}))
    assert problem.startswith('bridgeNetwork.bridge: Invalid value: "bbbbbbbbbbbbbbbb": must be')


def test_an_unknown_key_is_an_error_with_a_suggestion(make_config, validate) -> None:
    assert validate(make_config(section={"podCIDR": "10.244.9.0/24", "ipmasq": False})) == [
        'bridgeNetwork.ipmasq: Forbidden: unknown field; did you mean "ipMasq"?'
    ]


def test_the_section_is_checked_only_when_the_sdn_component_runs(make_config, validate) -> None:
    assert validate(make_config(section=None), frozenset({"kubelet"})) == []


NO_EFFECT = (
    "bridgeNetwork: has no effect in nodehost: it is used only when the sdn component runs "
    "with networkConfig.networkPluginName bridge"
)


@pytest.mark.parametrize("selected", [frozenset({"sdn"}), frozenset()])
def test_the_section_is_checked_whenever_set_and_has_no_effect_for_another_provider(
    make_config, validate, selected
) -> None:
    config = make_config(provider="external", section=None, bridgeNetwork={"podCIDRR": 1})
    assert validate(config, selected) == [
        'bridgeNetwork.podCIDRR: Forbidden: unknown field; did you mean "podCIDR"?',
        NO_EFFECT,
    ]


def test_a_missing_required_value_matters_only_to_the_running_provider(
    make_config, validate
) -> None:
    config = make_config(provider="external", section=None, bridgeNetwork={})
    assert validate(config) == [NO_EFFECT]
    assert validate(make_config(provider="external", section=None)) == []


def test_an_openshift_sdn_name_without_a_provider_is_a_warning(make_config, validate) -> None:
    (problem,) = validate(make_config(provider="redhat/openshift-ovs-subnet", section=None))
    assert "is the OpenShift SDN, which nodehost does not run" in problem


def test_an_openshift_sdn_name_is_an_error_when_a_plugin_failed(make_config, providers) -> None:
    config = make_config(provider="redhat/openshift-ovs-subnet", section=None)
    failure = "plugin ovs (nodehost-ovs 1.0) failed to load: boom"
    (problem,) = sdn.nodehost_validate_config(config, frozenset({"sdn"}), providers, [failure])
    assert problem.is_error and failure in problem.detail


def test_a_misspelt_provider_gets_a_suggestion(make_config, validate) -> None:
    (problem,) = validate(make_config(provider="brige", section=None))
    assert problem.endswith("did you mean 'bridge'?")


def conflist_of(plan) -> dict:
    (spec,) = [spec for spec in plan.files if spec.path.endswith(".conflist")]
    return json.loads(spec.content)


def test_the_list_chains_bridge_with_host_local_then_portmap(make_config, make_context) -> None:
    conflist = conflist_of(BridgeProvider().plan(make_context(make_config())))
    bridge, portmap = conflist["plugins"]
    assert (conflist["cniVersion"], conflist["name"]) == ("1.0.0", "nodehost-bridge")
    assert bridge["type"] == "bridge" and bridge["bridge"] == "nodehost0"
    assert bridge["isGateway"] and bridge["ipMasq"] and bridge["hairpinMode"]
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.244.9.0/24"}]]
    assert portmap == {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True}


def test_the_mtu_comes_from_the_network_config(make_config, make_context) -> None:
    config = make_config(networkConfig={"mtu": 8950})
    assert conflist_of(BridgeProvider().plan(make_context(config)))["plugins"][0]["mtu"] == 8950


def test_the_list_carries_nodehosts_marker(make_config, make_context) -> None:
    marker = conflist_of(BridgeProvider().plan(make_context(make_config())))["nodehost"]
    assert marker["managedBy"] == "nodehost" and marker["provider"] == "bridge"


def test_the_plan_writes_the_list_and_nodehosts_record_then_is_ready(
    make_config, make_context, tmp_path: Path
) -> None:
    plan = BridgeProvider().plan(make_context(make_config()))
    assert plan.run is None and plan.inactive_reason is None
    assert [spec.path for spec in plan.files] == [
        str(tmp_path / "net.d" / "10-nodehost-bridge.conflist"),
        str(tmp_path / "state" / "sdn" / "cni-ledger.json"),
    ]
    assert {spec.mode for spec in plan.files} == {0o644}


def test_a_missing_plugin_binary_fails_the_plan(make_config, make_context, cni_bin) -> None:
    (cni_bin / "portmap").unlink()
    (cni_bin / "loopback").unlink()
    with pytest.raises(RuntimeFailure) as caught:
        BridgeProvider().plan(make_context(make_config()))
    assert str(caught.value).startswith(
        f"component sdn (network provider bridge): CNI plugins portmap, loopback not found in "
        f"{cni_bin}; install them"
    )


def test_a_plugin_that_is_not_executable_counts_as_missing(
    make_config, make_context, cni_bin
) -> None:
    (cni_bin / "bridge").chmod(0o644)
    with pytest.raises(RuntimeFailure, match="CNI plugin bridge not found"):
        BridgeProvider().plan(make_context(make_config()))


def test_a_configuration_directory_below_a_file_fails_the_plan(
    make_config, make_context, tmp_path: Path, cni_bin
) -> None:
    (tmp_path / "file").write_text("")
    section = {"podCIDR": "10.244.9.0/24", "cniConfDir": str(tmp_path / "file" / "d"),
               "cniBinDirs": [str(cni_bin)]}  # fmt: skip
    with pytest.raises(RuntimeFailure, match=f"{tmp_path}/file is not a directory"):
        BridgeProvider().plan(make_context(make_config(section=section)))


def test_a_configuration_sorting_first_fails_the_plan(
    make_config, make_context, tmp_path: Path
) -> None:
    (tmp_path / "net.d").mkdir()
    (tmp_path / "net.d" / "05-other.conflist").write_text("{}")
    with pytest.raises(RuntimeFailure) as caught:
        BridgeProvider().plan(make_context(make_config()))
    assert str(caught.value).endswith(
        f"{tmp_path}/net.d/05-other.conflist sorts before "
        f"{tmp_path}/net.d/10-nodehost-bridge.conflist, so container runtimes would use it "
        "instead; remove or rename it if it is stale"
    )


def test_later_configurations_are_noted(make_config, make_context, tmp_path: Path) -> None:
    (tmp_path / "net.d").mkdir()
    (tmp_path / "net.d" / "99-loopback.conf").write_text("{}")
    plan = BridgeProvider().plan(make_context(make_config()))
    assert f"runtimes ignore the later configurations in {tmp_path}/net.d: 99-loopback.conf" in (
        plan.notes
    )


def test_the_network_tells_runtimes_what_they_need(make_config, make_context, cni_bin) -> None:
    network = BridgeProvider().cni_network(make_context(make_config()))
    assert network.conf_path.endswith("/net.d/10-nodehost-bridge.conflist")
    assert network.bin_dirs == (str(cni_bin),)
    assert network.mtu == 1400
    assert network.loopback
    assert network.host_links == (HostLink("nodehost0", "bridge"),)


def test_the_sdn_component_delegates_to_the_configured_provider(make_config, make_context) -> None:
    context = make_context(make_config())
    plan = Sdn().plan(context)
    assert plan.notes[0] == "network provider: bridge"
    assert Sdn().cni_network(context) == BridgeProvider().cni_network(context)


def test_without_a_provider_the_sdn_component_is_inactive(make_config, make_context) -> None:
    context = make_context(make_config(provider="", section=None))
    assert Sdn().plan(context).inactive_reason.startswith("no network provider configured")
    assert Sdn().cni_network(context) is None

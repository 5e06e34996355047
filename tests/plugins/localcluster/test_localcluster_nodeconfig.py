"""The published node-config.yaml: nodehost's defaults, every component given something to do."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from nodehost.options import StartOptions
from nodehost.plugins.localcluster.layout import ClusterSettings, Layout
from nodehost.plugins.localcluster.nodeconfig import (
    bridge_name,
    host_networks,
    node_config,
    pod_cidr,
)

SETTINGS = ClusterSettings(
    apiserver_port=6443,
    dns_port=5354,
    kubelet_port=10250,
    kubelet_healthz_port=10248,
    proxy_healthz_port=10256,
    token="abcdef.0123456789abcdef",
)


def config(tmp_path: Path, bridge: bool) -> dict:
    return node_config(StartOptions(hostname="n1"), Layout(tmp_path), SETTINGS, bridge)


def test_dns_and_every_listener_are_on_loopback_at_the_chosen_ports(tmp_path: Path) -> None:
    raw = config(tmp_path, bridge=False)
    assert raw["dnsBindAddress"] == "127.0.0.1:5354"
    assert raw["servingInfo"]["bindAddress"] == "127.0.0.1:10250"
    assert raw["kubeletArguments"]["healthz-port"] == ["10248"]
    assert raw["proxyArguments"]["healthz-bind-address"] == ["127.0.0.1:10256"]
    assert raw["masterKubeConfig"] == "node.kubeconfig"


def test_origins_v1_and_protobuf_defaults_are_applied(tmp_path: Path) -> None:
    raw = config(tmp_path, bridge=False)
    assert raw["masterClientConnectionOverrides"]["qps"] == 20
    assert raw["masterClientConnectionOverrides"]["contentType"].endswith("protobuf")
    assert raw["iptablesSyncPeriod"] == "30s"
    assert raw["networkConfig"]["mtu"] == 1450


def test_no_bridge_means_no_network_provider(tmp_path: Path) -> None:
    raw = config(tmp_path, bridge=False)
    assert raw["networkConfig"]["networkPluginName"] == ""
    assert "bridgeNetwork" not in raw


def test_the_bridge_network_lives_under_dir(tmp_path: Path) -> None:
    raw = config(tmp_path, bridge=True)
    assert raw["networkConfig"]["networkPluginName"] == "bridge"
    section = raw["bridgeNetwork"]
    assert section["cniConfDir"] == str(tmp_path / "node" / "cni")
    assert section["bridge"] == bridge_name(Layout(tmp_path))
    assert ipaddress.ip_network(section["podCIDR"]).subnet_of(ipaddress.ip_network("10.244.0.0/16"))


def test_each_dir_names_its_own_bridge_within_the_link_name_limit(tmp_path: Path) -> None:
    one, two = bridge_name(Layout(tmp_path / "a")), bridge_name(Layout(tmp_path / "b"))
    assert one != two
    assert len(one) <= 15 and one.startswith("nh-")
    assert bridge_name(Layout(tmp_path / "a")) == one


def test_the_pod_cidr_avoids_every_network_the_host_routes(tmp_path: Path, monkeypatch) -> None:
    layout = Layout(tmp_path)
    preferred = pod_cidr(layout)
    routed = [preferred, ipaddress.ip_network("10.244.0.0/17")]
    monkeypatch.setattr("nodehost.plugins.localcluster.nodeconfig.host_networks", lambda: routed)
    chosen = pod_cidr(layout)
    assert not any(chosen.overlaps(network) for network in routed)


def test_host_networks_reads_the_route_table(tmp_path: Path) -> None:
    table = tmp_path / "route"
    table.write_text(
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"
        "eth0\t00000000\t0102A8C0\t0003\t0\t0\t0\t00000000\n"
        "eth0\t0000F40A\t00000000\t0001\t0\t0\t0\t0000FFFF\n"
    )
    networks = host_networks(str(table))
    assert ipaddress.ip_network("10.244.0.0/16") in networks
    assert ipaddress.ip_network("0.0.0.0/0") not in networks

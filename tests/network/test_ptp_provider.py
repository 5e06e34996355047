"""The third-party ``ptp`` provider (contrib/nodehost-ptp), tested as its author would test it.

Through ``nodehost.testing.cni``: the provider's network, read from a node
config through the installed plugins, runs for real in the ``cni_sandbox``.
"""

from __future__ import annotations

import ipaddress

import pytest

from nodehost.testing.cni import configured_network, exercise

pytestmark = pytest.mark.needs("nodehost-ptp")


@pytest.fixture
def ptp_config(node):
    return node.write("ptp", f"ptp:\n  subnet: {node.pod_cidr}\n  cniConfDir: {node.conf_dir}\n")


def test_ptp_network_carries_traffic_in_a_sandbox(cni_sandbox, node, ptp_config) -> None:
    network = configured_network(ptp_config, state_dir=node.state_dir)
    lines: list[str] = []
    attachment = exercise(cni_sandbox, network, echo=lines.append)
    (address, gateway), *_ = attachment.addresses()
    assert address in ipaddress.ip_network(node.pod_cidr)
    assert gateway == str(ipaddress.ip_network(node.pod_cidr).network_address + 1)
    assert any(line.startswith("  gateway  ok  TCP from") for line in lines), lines
    assert attachment.detached


def test_ptp_network_uses_the_configured_mtu(needs_cni, node, ptp_config) -> None:
    network = configured_network(ptp_config, state_dir=node.state_dir)
    assert network.mtu == 1400
    assert network.conflist["plugins"][0]["mtu"] == 1400


def test_network_check_passes_with_ptp(
    needs_cni, nodehost, node, ptp_config, nothing_left_behind
) -> None:
    result = nodehost(
        "network", "check", "--config", str(ptp_config), "--state-dir", str(node.state_dir)
    )
    assert result.code == 0, result.out + result.err
    assert "network check: provider ptp" in result.out


def test_ptp_reports_unknown_keys_with_a_suggestion(nodehost, node) -> None:
    config = node.write("ptp", f"ptp:\n  subnet: {node.pod_cidr}\n  ipmasq: false\n")
    result = nodehost("config", "validate", str(config))
    assert result.code == 255
    assert '  ptp.ipmasq: Forbidden: unknown field; did you mean "ipMasq"?' in result.err

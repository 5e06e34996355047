"""The throw-away sandbox behind ``network check`` and ``nodehost.testing.cni``."""

from __future__ import annotations

import ipaddress
import json
import subprocess
from pathlib import Path

from nodehost.cni import Sandbox, hostnet


def bridge_list(bridge: str, subnet: str, data_dir: Path) -> dict:
    return {
        "cniVersion": "1.0.0",
        "name": "nh-sandbox-test",
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge,
                "isGateway": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": subnet}]],
                    "dataDir": str(data_dir),
                },
            }
        ],
    }


def test_an_address_a_pod_holds_is_never_handed_out(cni_sandbox, node, tmp_path: Path) -> None:
    live = tmp_path / "live" / "nh-sandbox-test"
    live.mkdir(parents=True)
    held = str(ipaddress.ip_network(node.pod_cidr).network_address + 2)
    (live / held).write_text("a-running-pod\neth0")
    attachment = cni_sandbox.attach(bridge_list(node.bridge, node.pod_cidr, tmp_path / "live"))
    ((address, _),) = attachment.addresses()
    assert str(address.ip) != held
    cni_sandbox.detach(attachment)
    assert sorted(p.name for p in live.iterdir()) == [held]


def test_closing_deletes_what_is_still_attached(cni_sandbox, node, tmp_path: Path) -> None:
    attachment = cni_sandbox.attach(bridge_list(node.bridge, node.pod_cidr, tmp_path / "live"))
    assert node.bridge in hostnet.links()
    cni_sandbox.close()
    assert attachment.detached
    assert node.bridge not in hostnet.links()
    assert f"link {node.bridge} removed (the sandbox created it)" in cni_sandbox.cleanup_report


def test_a_bridge_that_existed_before_is_kept(needs_cni, node, tmp_path: Path) -> None:
    subprocess.run(["ip", "link", "add", node.bridge, "type", "bridge"], check=True)
    try:
        with Sandbox(prefix="nh-test") as sandbox:
            sandbox.detach(sandbox.attach(bridge_list(node.bridge, node.pod_cidr, tmp_path)))
        assert hostnet.links()[node.bridge] == "bridge"
    finally:
        hostnet.delete_link(node.bridge)


def test_the_result_lists_the_pod_address_inside_the_namespace(cni_sandbox, node, tmp_path) -> None:
    attachment = cni_sandbox.attach(bridge_list(node.bridge, node.pod_cidr, tmp_path))
    ((address, gateway),) = attachment.addresses()
    assert cni_sandbox.addresses("eth0")[0] == address
    assert json.dumps(attachment.result)  # a plain JSON value, as runtimes cache it
    assert gateway == str(ipaddress.ip_network(node.pod_cidr).network_address + 1)

"""Teardown removes what the pods' network put on the host, and nothing the host had before.

The pods' network is made by the real CNI plugins (bridge with masquerade,
host-local, portmap) in a network namespace the test made, as containerd's CRI
makes it (see ``teardownscene``); then ``nodehost teardown`` runs there.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodehost.testing.nodefolder import NodeFolder

SCENE = Path(__file__).with_name("teardownscene.py")

pytestmark = pytest.mark.needs("mount-namespace", "cni-plugins", "ip", "nodehost-script")


@pytest.fixture
def scene(node_folder: NodeFolder, tmp_path: Path) -> dict[str, Any]:
    return run_scene(node_folder, tmp_path)


@pytest.fixture
def scene_alone(node_folder: NodeFolder, tmp_path: Path) -> dict[str, Any]:
    """The scene without another nodehost's pod in libcni's cache."""
    return run_scene(node_folder, tmp_path, "alone")


def run_scene(node_folder: NodeFolder, tmp_path: Path, *extra: str) -> dict[str, Any]:
    config = node_folder.update(
        {
            "networkConfig": {"networkPluginName": "bridge"},
            "bridgeNetwork": {"podCIDR": "10.244.31.0/24", "cniConfDir": str(tmp_path / "net.d")},
            "nodeIP": "127.0.0.1",  # the scene's namespace has loopback and no default route
        }
    )
    done = subprocess.run(
        ["unshare", "-m", "-n", "--propagation", "private", sys.executable, str(SCENE),
         str(tmp_path), str(config), *extra],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def chains(save: str) -> set[str]:
    return set(re.findall(r"^:(\S+)", save, re.MULTILINE))


def test_teardown_deletes_the_pods_attachments_through_the_plugins(scene: dict[str, Any]) -> None:
    before, after = scene["before"], scene["after"]
    assert scene["code"] == 0, scene["out"] + scene["err"]
    # The scene made what a running node's pods make.
    assert any(name.startswith("CNI-DN-") for name in chains(before["nat"]))
    assert sum(1 for link in before["links"] if link.startswith("veth")) == 2
    assert len(before["reservations"]) > 2 and len(before["netns"]) == 2
    # Teardown removed it all: per-pod chains and rules, veths, namespaces, reservations.
    per_pod = {c for c in chains(after["nat"]) if re.fullmatch(r"CNI-(DN-)?[0-9a-f]{24}", c)}
    assert per_pod == set()
    assert 'id: "0101' not in after["nat"] and 'id: "0202' not in after["nat"]
    assert not [link for link in after["links"] if link.startswith("veth")]
    assert after["netns"] == []
    assert [r for r in after["reservations"] if re.fullmatch(r"[0-9.]+", r)] == []
    assert "removed pod network attachment 010101010101" in scene["out"]
    assert "removed network namespace /var/run/netns/cni-nhlife-1" in scene["out"]


def test_teardown_removes_the_bridge_the_network_created(scene: dict[str, Any]) -> None:
    assert "nodehost0" in scene["before"]["links"]
    assert "nodehost0" not in scene["after"]["links"]


def test_what_the_host_had_before_survives(scene: dict[str, Any]) -> None:
    after = scene["after"]
    assert after["links"].get("nh-keep0") == "bridge"
    assert "NH-LIFE-KEEP" in chains(after["nat"])
    assert "-A POSTROUTING -s 10.99.0.0/16 -j NH-LIFE-KEEP" in after["nat"]
    # Another network's cache entry, and another nodehost's pod on a network of the same name.
    assert after["cache"] == sorted(["other-net-abc-eth0", f"nodehost-bridge-{'ff' * 32}-eth0"])


def test_portmaps_shared_chains_stay_while_another_pod_may_use_them(scene: dict[str, Any]) -> None:
    """Another nodehost's pod, made with a list holding portmap, is in the cache."""
    assert {"CNI-HOSTPORT-DNAT", "CNI-HOSTPORT-MASQ"} <= chains(scene["after"]["nat"])


def test_portmaps_shared_chains_go_once_idle(scene_alone: dict[str, Any]) -> None:
    after = scene_alone["after"]
    assert scene_alone["code"] == 0, scene_alone["out"] + scene_alone["err"]
    assert {c for c in chains(after["nat"]) if c.startswith("CNI-")} == set()
    assert "CNI-HOSTPORT" not in after["nat"]  # the jumps from PREROUTING, OUTPUT, POSTROUTING
    assert "-A POSTROUTING -s 10.99.0.0/16 -j NH-LIFE-KEEP" in after["nat"]
    assert "removed portmap's idle chains" in scene_alone["out"]

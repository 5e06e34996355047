"""A node's pod network with two pods, made by the real CNI plugins, then ``nodehost teardown``.

Run as a script inside a private mount and network namespace (the test does
``unshare -m -n``): ``/var/lib/cni`` and ``/run/netns`` are bind-mounted from the
test's folder first, so libcni's cache, host-local's reservations and the
pods' namespaces are the test's own, and every link and iptables rule is made
in the test's network namespace.  Prints one JSON object: the host's state
before and after the teardown, and the teardown's output.

Usage: ``python teardownscene.py FOLDER CONFIG [alone]`` (``alone``: no other nodehost's
pod in libcni's cache).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

from nodehost.cni import hostnet
from nodehost.cni.chain import add_network
from nodehost.cni.invoke import RuntimeConf
from nodehost.testing.nodefolder import node_plan

#: What the host had before: a bridge, a chain with a rule, a foreign cache entry.
PLANTED_LINK = "nh-keep0"
PLANTED_CHAIN = "NH-LIFE-KEEP"
FOREIGN_CACHE = "other-net-abc-eth0"
NEIGHBOUR = "ff" * 32


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def isolate(folder: Path) -> None:
    """The test's own ``/var/lib`` (``/var/lib/cni`` may not exist on the host) and ``/run/netns``."""
    for target, source in (("/var/lib", folder / "var-lib"), ("/run/netns", folder / "netns")):
        source.mkdir(parents=True, exist_ok=True)
        sh("mount", "--bind", str(source), target)
    (folder / "var-lib" / "cni" / "results").mkdir(parents=True)
    sh("ip", "link", "set", "lo", "up")


def plant(folder: Path) -> None:
    sh("ip", "link", "add", PLANTED_LINK, "type", "bridge")
    sh("iptables", "-t", "nat", "-N", PLANTED_CHAIN)
    sh("iptables", "-t", "nat", "-A", "POSTROUTING", "-s", "10.99.0.0/16", "-j", PLANTED_CHAIN)
    (folder / "var-lib" / "cni" / "results" / FOREIGN_CACHE).write_text(
        json.dumps({"kind": "cniCacheV1", "networkName": "other-net"})
    )


def write_network(config: str, state_dir: Path) -> tuple[dict, tuple[str, ...], bytes]:
    """Write the sdn component's files as ``start`` would; its marked conflist, its plugin dirs."""
    plan = node_plan(config, components="sdn", state_dir=state_dir).get("sdn").plan
    conflist = None
    for spec in plan.files:
        Path(spec.path).parent.mkdir(parents=True, exist_ok=True)
        Path(spec.path).write_bytes(spec.content)
        if spec.path.endswith(".conflist"):
            conflist = spec.content
    assert conflist is not None
    ledger = json.loads((state_dir / "sdn" / "cni-ledger.json").read_text())
    return json.loads(conflist), tuple(ledger["networks"][0]["bin_dirs"]), conflist


def start_pod(number: int, conflist: dict, raw: bytes, bin_dirs: tuple[str, ...]) -> None:
    """What containerd's CRI does for a pod: a pinned namespace, ADD, libcni's cache entry."""
    name = f"cni-nhlife-{number}"
    sh("ip", "netns", "add", name)
    container = f"{number:02d}" * 32
    args = {"IgnoreUnknown": "1", "K8S_POD_NAMESPACE": "default", "K8S_POD_NAME": f"pod{number}"}
    ports = {"portMappings": [{"hostPort": 18080 + number, "containerPort": 80, "protocol": "tcp"}]}
    runtime = RuntimeConf(container, f"/var/run/netns/{name}", "eth0", args, ports)
    result = add_network(conflist, runtime, bin_dirs)
    cache(conflist["name"], container, raw, result, args, ports)


def plant_neighbour(conflist: dict, raw: bytes) -> None:
    """Another nodehost's pod on a network of the same name (its own list: another subnet)."""
    other = raw.replace(b"10.244.31.0/24", b"10.244.32.0/24")
    assert other != raw
    cache(conflist["name"], NEIGHBOUR, other, {"cniVersion": "1.0.0", "interfaces": [], "ips": []})


def cache(
    network: str, container: str, raw: bytes, result: dict, args: dict | None = None,
    capabilities: dict | None = None,
) -> None:  # fmt: skip
    """libcni's cache entry for an attachment made with the list ``raw`` (``cniCacheV1``)."""
    entry = {
        "kind": "cniCacheV1",
        "containerId": container,
        "config": base64.b64encode(raw).decode(),
        "ifName": "eth0",
        "networkName": network,
        "cniArgs": [[key, value] for key, value in (args or {}).items()],
        "capabilityArgs": capabilities or {},
        "result": result,
    }
    path = Path("/var/lib/cni/results") / f"{network}-{container}-eth0"
    path.write_text(json.dumps(entry))


def host_state(network: str) -> dict:
    reservations = Path("/var/lib/cni/networks") / network
    return {
        "nat": sh("iptables-save", "-t", "nat"),
        "filter": sh("iptables-save", "-t", "filter"),
        "links": hostnet.links(),
        "netns": sorted(os.listdir("/run/netns")),
        "cache": sorted(os.listdir("/var/lib/cni/results")),
        "reservations": sorted(os.listdir(reservations)) if reservations.exists() else [],
    }


def main() -> None:
    folder, config = Path(sys.argv[1]), sys.argv[2]
    isolate(folder)
    plant(folder)
    state_dir = folder / "state"
    conflist, bin_dirs, raw = write_network(config, state_dir)
    if sys.argv[3:] != ["alone"]:
        plant_neighbour(conflist, raw)
    for number in (1, 2):
        start_pod(number, conflist, raw, bin_dirs)
    before = host_state(conflist["name"])
    nodehost = str(Path(sys.executable).parent / "nodehost")
    done = subprocess.run(
        [nodehost, "teardown", "--state-dir", str(state_dir)], capture_output=True, text=True
    )
    after = host_state(conflist["name"])
    print(
        json.dumps(
            {
                "before": before,
                "after": after,
                "code": done.returncode,
                "out": done.stdout,
                "err": done.stderr,
                "network": conflist["name"],
            }
        )
    )


if __name__ == "__main__":
    main()

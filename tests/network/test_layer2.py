"""Layer-2 networks (``Topology.L2``): the master link's checks and a pod-to-pod data path.

A hand-built macvlan network on a throw-away master link (``master_link``),
run for real in throw-away namespaces; no provider package needed.
"""

from __future__ import annotations

import dataclasses
import ipaddress

import pytest

from nodehost import Topology
from nodehost.cni import CniNetwork
from nodehost.cni.conflist import ipam_pools
from nodehost.cni.layer2 import check_master, check_pods_on_master, master_network
from nodehost.cni.netns import run_ip
from nodehost.cni.provider import check_placement
from nodehost.errors import RuntimeFailure
from nodehost.testing.cni import exercise


def macvlan(link, pods: str, *, mtu: int = 1400, mode: str = "bridge", **fields) -> CniNetwork:
    network = ipaddress.ip_network(pods)
    conflist = {
        "cniVersion": "1.0.0",
        "name": "nh-test-macvlan",
        "plugins": [
            {
                "type": "macvlan",
                "master": link.name,
                "mode": mode,
                "mtu": mtu,
                "ipam": {
                    "type": "host-local",
                    "ranges": [
                        [
                            {
                                "subnet": str(link.network),
                                "rangeStart": str(network.network_address),
                                "rangeEnd": str(network.broadcast_address),
                                "gateway": str(link.network.broadcast_address - 1),
                            }
                        ]
                    ],
                },
            }
        ],
    }
    return CniNetwork(
        provider="test-l2",
        conflist=conflist,
        file_name="10-test.conflist",
        mtu=mtu,
        master=link.name,
        topology=Topology.L2,
        **fields,
    )


def pods_of(link, index: int = 1) -> str:
    return str(list(link.network.subnets(new_prefix=26))[index])


def test_a_layer2_network_needs_a_master() -> None:
    with pytest.raises(ValueError, match="needs its master link"):
        CniNetwork(provider="x", topology=Topology.L2)


def test_two_pods_on_one_master_reach_each_other(cni_sandbox, master_link) -> None:
    link = master_link()
    lines: list[str] = []
    attachment = exercise(cni_sandbox, macvlan(link, pods_of(link)), echo=lines.append)
    steps = [line.split()[:2] for line in lines]
    assert ["master", "ok"] in steps and ["ADD#2", "ok"] in steps and ["DEL#2", "ok"] in steps
    peer = next(line for line in lines if line.split()[:2] == ["peer", "ok"])
    (address, _), *_ = attachment.addresses()
    assert f"to {address.ip} across {link.name}" in peer
    assert ["gateway", "ok"] not in steps


def test_isolating_modes_prove_each_pod_alone(cni_sandbox, master_link) -> None:
    link = master_link()
    network = macvlan(link, pods_of(link), mode="private", isolation="pods are kept apart")
    lines: list[str] = []
    exercise(cni_sandbox, network, echo=lines.append)
    assert "  peer     ok  skipped: pods are kept apart" in lines
    assert not any(line.split()[:1] == ["ADD#2"] for line in lines)


def test_master_checks_name_the_problem(master_link) -> None:
    link = master_link(mtu=1400)
    assert check_master(macvlan(link, pods_of(link)), "who").mtu == 1400
    with pytest.raises(RuntimeFailure, match="MTU 1500 is larger than the MTU 1400"):
        check_master(macvlan(link, pods_of(link), mtu=1500), "who")
    run_ip(["link", "set", link.name, "down"], "take the master down")
    with pytest.raises(RuntimeFailure, match=f"master link {link.name} is down"):
        check_master(macvlan(link, pods_of(link)), "who")
    gone = macvlan(link, pods_of(link))
    link.remove()
    with pytest.raises(RuntimeFailure, match=f"master link {link.name} does not exist"):
        check_master(gone, "who")


def test_pods_must_be_on_the_masters_network_and_spare_its_address(master_link) -> None:
    link = master_link()
    (line,) = check_pods_on_master(macvlan(link, pods_of(link)), "who")
    assert line.endswith(f"on {link.name} ({link.address})")
    with pytest.raises(RuntimeFailure, match=f"holds {link.address.ip}, an address of"):
        check_pods_on_master(macvlan(link, pods_of(link, 0)), "who")
    other = master_link()
    elsewhere = dataclasses.replace(macvlan(other, pods_of(other)), master=link.name)
    with pytest.raises(RuntimeFailure, match="is not inside the network of master link"):
        check_pods_on_master(elsewhere, "who")


def test_placement_follows_the_topology(master_link) -> None:
    link = master_link()
    # Through the host, a pod range on the link's network overlaps a host address ...
    host = macvlan(link, pods_of(link))
    host_topology = dataclasses.replace(host, topology=Topology.HOST, master=None)
    with pytest.raises(RuntimeFailure, match="overlaps this host's addresses"):
        check_placement(host_topology, "who")
    # ... while on layer 2 that is the point.
    check_placement(host, "who")


def test_master_network_finds_the_lan_holding_the_pod_cidr(master_link) -> None:
    link = master_link()
    assert master_network(link.name, ipaddress.ip_network(pods_of(link)), "who") == link.address
    with pytest.raises(RuntimeFailure, match="not inside the network of master link"):
        master_network(link.name, ipaddress.ip_network("192.0.2.0/26"), "who")


def test_ipam_pools_fill_host_locals_defaults() -> None:
    conflist = {"plugins": [{"type": "x", "ipam": {"type": "host-local", "subnet": "10.1.0.0/24"}}]}
    (pool,) = ipam_pools(conflist)
    assert (str(pool.start), str(pool.end), str(pool.gateway)) == (
        "10.1.0.1",
        "10.1.0.254",
        "10.1.0.1",
    )
    assert ipaddress.ip_address("10.1.0.9") in pool
    assert ipaddress.ip_address("10.1.0.255") not in pool

"""Checks for layer-2 networks (macvlan, ipvlan): the master link and the pods' place on it.

A layer-2 network (:attr:`nodehost.Topology.L2`) puts its pods on the
segment of a *master* link of the host.  What must hold before a pod is
attached, checked by :func:`~nodehost.cni.conflist_plan` at plan time and by
``nodehost network check`` before its ADD:

* the master link exists and is up, and its MTU is at least the pods' MTU;
* every host-local subnet lies in the network of an address on the master
  (the pods are on the master's network by design), and no address of the
  master is in a range host-local hands out.

:func:`master_network` is what a provider uses to find that network when it
writes its configuration list.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodehost.cni import hostnet
from nodehost.cni.conflist import IPNetwork, ipam_pools
from nodehost.cni.network import CniNetwork
from nodehost.errors import RuntimeFailure


def check_master(network: CniNetwork, who: str) -> hostnet.LinkState:
    """The master link's state; :class:`RuntimeFailure` unless it exists, is up and fits the MTU."""
    master = _master(network)
    state = hostnet.link_state(master)
    if state is None:
        raise RuntimeFailure(
            f"{who}: master link {master} does not exist on this host; name an existing "
            "interface (ip -br link)"
        )
    if not state.up:
        raise RuntimeFailure(f"{who}: master link {master} is down; bring it up first")
    if network.mtu is not None and network.mtu > state.mtu:
        raise RuntimeFailure(
            f"{who}: the pods' MTU {network.mtu} is larger than the MTU {state.mtu} of the "
            f"master link {master}"
        )
    return state


def check_pods_on_master(network: CniNetwork, who: str) -> list[str]:
    """Every host-local pool fits the master's network and spares its addresses.

    Returns one line per pool (``<range> on <master address>``) for reports;
    raises :class:`RuntimeFailure` naming the pool and the master's addresses.
    """
    master = _master(network)
    _, conflist = network.current()
    own = hostnet.addresses(device=master).get(master, [])
    lines = []
    for pool in ipam_pools(conflist):
        holder = _holder(pool.subnet, own)
        if holder is None:
            found = ", ".join(map(str, own)) or "no address"
            raise RuntimeFailure(
                f"{who}: pod network {pool.subnet} is not inside the network of master link "
                f"{master} (it has {found}); a layer-2 network's pods live on the master's network"
            )
        taken = [address for address in own if address.ip in pool]
        if taken:
            raise RuntimeFailure(
                f"{who}: the pod range {pool.describe()} holds {taken[0].ip}, an address of "
                f"master link {master}; pods would take it"
            )
        lines.append(f"{pool.describe()} on {master} ({holder})")
    return lines


def master_network(master: str, pod_cidr: IPNetwork, who: str) -> hostnet.IPInterface:
    """The address of ``master`` whose network holds ``pod_cidr`` (its ``.network`` is the LAN).

    :class:`RuntimeFailure` when the link does not exist or has no such address.
    """
    try:
        own = hostnet.addresses(device=master).get(master, [])
    except RuntimeFailure:
        raise RuntimeFailure(
            f"{who}: master link {master} does not exist on this host; name an existing "
            "interface (ip -br link)"
        ) from None
    holder = _holder(pod_cidr, own)
    if holder is None:
        found = ", ".join(map(str, own)) or "no address"
        raise RuntimeFailure(
            f"{who}: pod CIDR {pod_cidr} is not inside the network of master link {master} "
            f"(it has {found}); choose a pod CIDR on the master's network"
        )
    return holder


def _holder(
    subnet: IPNetwork, addresses: Sequence[hostnet.IPInterface]
) -> hostnet.IPInterface | None:
    for address in addresses:
        if address.version == subnet.version and subnet.subnet_of(address.network):  # type: ignore[arg-type]
            return address
    return None


def _master(network: CniNetwork) -> str:
    if not network.master:
        raise RuntimeFailure(
            f"network provider {network.provider}: a layer-2 network names no master link"
        )
    return network.master

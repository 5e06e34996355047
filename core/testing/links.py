"""Throw-away host links for network tests: a master link for a layer-2 network.

A macvlan or ipvlan network needs a *master* link on the host.  Tests must not
use the host's real interfaces, so :func:`master_link` makes one of its own --
a ``dummy`` link where the kernel has the dummy driver, else one end of a
``veth`` pair (its peer stays on the host, up, so the master has carrier) --
gives it an address and brings it up; :meth:`ThrowawayLink.remove` deletes
it (and its peer).  Names are unique (``nhm`` + 8 hex digits); :func:`free_subnet`
picks a network no host address overlaps.  Needs root.
"""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass

from nodehost.cni import netns
from nodehost.cni.netns import run_ip
from nodehost.errors import RuntimeFailure


@dataclass(frozen=True)
class ThrowawayLink:
    """A link a test made: its name, kind (``dummy`` or ``veth``) and address on it."""

    name: str
    kind: str
    address: ipaddress.IPv4Interface | ipaddress.IPv6Interface
    mtu: int

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        """The link's network (the layer-2 segment pods of a macvlan on it live in)."""
        return self.address.network

    def remove(self) -> None:
        """Delete the link (a veth's peer goes with it); nothing if it is already gone."""
        from nodehost.cni import hostnet

        if self.name in hostnet.links():
            hostnet.delete_link(self.name)


def master_link(address: str, *, mtu: int = 1500) -> ThrowawayLink:
    """Make an up link holding ``address`` (``10.250.3.1/24``) with ``mtu``; see the module doc."""
    interface = ipaddress.ip_interface(address)
    name = netns.unique_name("nh-m").replace("-", "")[:15]
    kind = "dummy"
    try:
        run_ip(["link", "add", name, "mtu", str(mtu), "type", "dummy"], f"add dummy link {name}")
    except RuntimeFailure:
        kind = "veth"
        run_ip(
            ["link", "add", name, "mtu", str(mtu), "type", "veth", "peer", "name", f"{name}p"],
            f"add veth pair {name}",
        )
    link = ThrowawayLink(name, kind, interface, mtu)
    try:
        if kind == "veth":
            run_ip(["link", "set", f"{name}p", "up"], f"bring up {name}p")
        run_ip(["addr", "add", str(interface), "dev", name], f"address {name}")
        run_ip(["link", "set", name, "up"], f"bring up {name}")
    except BaseException:
        link.remove()
        raise
    return link


def free_subnet(within: str = "10.250.0.0/16", prefixlen: int = 24) -> ipaddress.IPv4Network:
    """A random ``/prefixlen`` inside ``within`` that no host address overlaps.

    Random rather than first-free, so parallel test runs rarely pick the same
    one; :class:`RuntimeFailure` when 200 tries find none.
    """
    from nodehost.cni import hostnet

    outer = ipaddress.IPv4Network(within)
    taken = [a.network for found in hostnet.addresses().values() for a in found if a.version == 4]
    choices = list(outer.subnets(new_prefix=prefixlen))
    for _ in range(200):
        candidate = choices[secrets.randbelow(len(choices))]
        if not any(candidate.overlaps(network) for network in taken):
            return candidate
    raise RuntimeFailure(f"no free /{prefixlen} in {within}")

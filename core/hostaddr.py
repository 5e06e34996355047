"""This host's IPv4 addresses, read from the kernel (nothing is sent on the network).

Thin views of :mod:`nodehost.nodeip`, which reads them over netlink.
"""

from __future__ import annotations


def local_ipv4_addresses() -> list[str]:
    """The IPv4 address of every local interface that has one (loopback included), sorted."""
    from nodehost.nodeip import local_addresses

    found = {a.address for a in local_addresses() if a.address.version == 4}
    return [str(address) for address in sorted(found)]


def default_local_ipv4() -> str:
    """The source address of the IPv4 default route ("" if there is none)."""
    from nodehost.nodeip import default_route_sources

    try:
        return default_route_sources().get(4, "")
    except OSError:
        return ""

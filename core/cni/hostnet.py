"""Reading and changing the host's network state that CNI plugins touch.

Links and addresses come from iproute2's JSON output (``ip -j``); the
forwarding switches plugins flip (``isGateway`` sets ``net.ipv4.ip_forward``)
are read and restored through ``/proc/sys``.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodehost.cni.netns import run_ip
from nodehost.errors import RuntimeFailure
from nodehost.fileread import STATE_LIMIT, read_text
from nodehost.frozen import frozen

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPInterface = ipaddress.IPv4Interface | ipaddress.IPv6Interface

#: Host-wide switches CNI plugins set; a throw-away check puts them back.
FORWARDING_SYSCTLS = ("net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding")


def _ip_json(arguments: Sequence[str], what: str) -> list[dict[str, Any]]:
    output = run_ip(["-j", *arguments], what)
    return json.loads(output) if output.strip() else []


def links(netns: str | None = None) -> dict[str, str]:
    """Every link of the host (or of namespace ``netns``): name -> kind (``bridge``, "")."""
    prefix = ["-n", netns] if netns else []
    found = {}
    for link in _ip_json([*prefix, "-d", "link", "show"], "list network links"):
        kind = (link.get("linkinfo") or {}).get("info_kind", "")
        found[link["ifname"]] = kind
    return found


def delete_link(name: str) -> None:
    """Delete host link ``name`` (:class:`~nodehost.errors.RuntimeFailure` if that fails)."""
    run_ip(["link", "delete", name], f"delete link {name}")


def addresses(netns: str | None = None, device: str | None = None) -> dict[str, list[IPInterface]]:
    """Addresses per link (of the host, or of ``netns``; only ``device`` if given)."""
    arguments = ["-n", netns] if netns else []
    arguments += ["addr", "show"] + (["dev", device] if device else [])
    found: dict[str, list[IPInterface]] = {}
    for link in _ip_json(arguments, "list addresses"):
        found[link["ifname"]] = [
            ipaddress.ip_interface(f"{info['local']}/{info['prefixlen']}")
            for info in link.get("addr_info", ())
            if "local" in info
        ]
    return found


@frozen
class LinkState:
    """One host link as iproute2 reports it: kind, administrative state, carrier, MTU."""

    name: str
    kind: str
    up: bool
    carrier: bool
    mtu: int


def link_state(name: str, netns: str | None = None) -> LinkState | None:
    """The state of link ``name`` (on the host, or in ``netns``), or None when it does not exist."""
    prefix = ["-n", netns] if netns else []
    try:
        found = _ip_json([*prefix, "-d", "link", "show", "dev", name], f"show link {name}")
    except RuntimeFailure:
        if name not in links(netns):
            return None
        raise
    for link in found:
        flags = link.get("flags", ())
        return LinkState(
            name=name,
            kind=(link.get("linkinfo") or {}).get("info_kind", ""),
            up="UP" in flags,
            carrier="LOWER_UP" in flags,
            mtu=int(link.get("mtu", 0)),
        )
    return None


def link_is_up(name: str, netns: str | None = None) -> bool:
    """Whether link ``name`` is administratively up."""
    prefix = ["-n", netns] if netns else []
    for link in _ip_json([*prefix, "link", "show", "dev", name], f"show link {name}"):
        return "UP" in link.get("flags", ())
    return False


def overlapping_addresses(
    subnets: Iterable[IPNetwork],
    *,
    ignore_links: Iterable[str] = (),
    ignore_addresses: Iterable[ipaddress.IPv4Address | ipaddress.IPv6Address] = (),
) -> list[tuple[str, IPInterface]]:
    """Host addresses whose network overlaps one of ``subnets``: ``(link, address)`` pairs.

    Addresses on ``ignore_links`` (the network's own bridge) and the addresses
    in ``ignore_addresses`` (gateways CNI plugins put on host-side links) do
    not count.
    """
    subnets = list(subnets)
    skipped_links = set(ignore_links)
    skipped = set(ignore_addresses)
    clashes = []
    for link, found in addresses().items():
        if link in skipped_links:
            continue
        for address in found:
            if address.ip in skipped or address.ip.is_loopback:
                continue
            if any(
                address.network.version == subnet.version and address.network.overlaps(subnet)
                for subnet in subnets
            ):
                clashes.append((link, address))
    return clashes


@frozen
class Sysctls:
    """Values of some ``/proc/sys`` switches at one moment (missing ones are left out)."""

    values: Mapping[str, str]

    @classmethod
    def snapshot(cls, names: Sequence[str] = FORWARDING_SYSCTLS) -> Sysctls:
        values = {}
        for name in names:
            try:
                values[name] = read_text(f"/proc/sys/{name}", STATE_LIMIT).strip()
            except OSError:
                continue
        return cls(values)

    def restore(self) -> list[str]:
        """Put back every switch that changed since the snapshot; ``name now -> was`` each."""
        restored = []
        current = Sysctls.snapshot(tuple(self.values))
        for name, value in self.values.items():
            now = current.values.get(name)
            if now is not None and now != value:
                with open(f"/proc/sys/{name}", "w") as handle:
                    handle.write(value)
                restored.append(f"{name.replace('/', '.')} {now} -> {value}")
        return restored

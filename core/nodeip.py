"""The node IP: what ``nodeIP`` / ``--node-ip`` may say, and the address it means on this host.

The API other parts of nodehost (``start``, ``nodehost check``) call:

* :func:`parse_node_ip` -- the syntax alone (for validation, no host access):
  ``""`` (unset), an address (``10.0.0.5``, ``fd00::5``), a dual-stack pair
  ``V4,V6`` (one address of each family, either order), or a selector,
  ``iface:NAME`` or ``cidr:A.B.C.D/N`` (IPv6 networks too).  Raises
  :class:`NodeIPSyntaxError` with a message fit for ``nodeIP: Invalid value``.
* :func:`local_addresses` -- every address of every local interface, read from
  the kernel over a ``NETLINK_ROUTE`` socket (nothing is sent on the network);
  tentative (IPv6 DAD in progress) and DAD-failed addresses are left out.
* :func:`default_route_sources` -- per family, the source address the kernel
  uses for the default route of the main table (the route's ``src``, else the
  first usable address on its interface): what the kubelet picks when it has
  no ``--node-ip`` (``ChooseHostInterface`` in
  ``k8s.io/apimachinery/pkg/util/net/interface.go``).
* :func:`resolve_node_ip` -- the :class:`NodeIP` a spec means here, or
  :class:`NodeIPError` whose message names the address (or selector) and lists
  the candidates.  Unset means the IPv4 default route's source (the IPv6 one when
  there is no IPv4 default route); ``iface:NAME`` the interface's first IPv4
  address that is not link-local, else its first such IPv6 one (loopback included:
  ``iface:lo`` is 127.0.0.1); ``cidr:NET`` the first
  local address inside ``NET``.  Every chosen address must be on a local interface.

Watching for changes is :mod:`nodehost.daemon.addresswatch`'s.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from collections.abc import Sequence

from nodehost import netlink
from nodehost.frozen import frozen
from nodehost.netlink import NETLINK_ROUTE

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

INTERFACE_PREFIX = "iface:"
CIDR_PREFIX = "cidr:"

# --- netlink (linux/netlink.h, linux/rtnetlink.h, linux/if_addr.h) -------------------
RTM_GETADDR, RTM_GETROUTE = 22, 26
IFA_ADDRESS, IFA_LOCAL, IFA_FLAGS = 1, 2, 8
IFA_F_DADFAILED, IFA_F_TENTATIVE = 0x08, 0x40
RTA_OIF, RTA_PRIORITY, RTA_PREFSRC, RTA_TABLE = 4, 6, 7, 15
RT_TABLE_MAIN, RTN_UNICAST = 254, 1
_IFADDRMSG = struct.Struct("=BBBBI")
_RTMSG = struct.Struct("=BBBBBBBBI")


class NodeIPSyntaxError(ValueError):
    """``nodeIP`` / ``--node-ip`` does not parse; the message says why."""


class NodeIPError(Exception):
    """The node IP cannot be chosen on this host; the message names it and the candidates."""


@frozen
class NodeIPSpec:
    """What ``nodeIP`` says: ``kind`` is ``default``, ``address``, ``interface`` or ``cidr``.

    ``addresses`` (kind ``address``: one, or a dual-stack pair), ``interface``
    and ``network`` hold the parsed value; ``text`` is the value as written.
    """

    kind: str
    text: str = ""
    addresses: tuple[IPAddress, ...] = ()
    interface: str = ""
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None

    @property
    def follows_host(self) -> bool:
        """Whether the chosen address may change while the host runs (not a literal)."""
        return self.kind != "address"


@frozen
class LocalAddress:
    """One address of a local interface (``interface`` is its name, ``prefix`` its length)."""

    interface: str
    address: IPAddress
    prefix: int

    def __str__(self) -> str:
        return f"{self.address} ({self.interface})"


@frozen
class NodeIP:
    """The chosen node IP: its ``addresses`` (IPv4 first in a pair), how they were chosen.

    ``value`` is what the kubelet's ``--node-ip`` takes (``V4,V6`` for a pair).
    """

    addresses: tuple[str, ...]
    chosen_by: str
    spec: str = ""

    @property
    def value(self) -> str:
        return ",".join(self.addresses)

    @property
    def first(self) -> str:
        return self.addresses[0]

    def as_dict(self) -> dict[str, object]:
        return {"addresses": list(self.addresses), "chosen_by": self.chosen_by, "spec": self.spec}


# --- syntax -----------------------------------------------------------------------------


def parse_node_ip(text: str) -> NodeIPSpec:
    """The spec ``text`` says (see the module docstring); :class:`NodeIPSyntaxError` if none."""
    text = text.strip()
    if not text:
        return NodeIPSpec("default")
    if text.startswith(INTERFACE_PREFIX):
        name = text[len(INTERFACE_PREFIX) :]
        if not name or len(name) > 15 or "/" in name or any(c.isspace() for c in name):
            raise NodeIPSyntaxError("iface: needs an interface name (1-15 characters, no '/')")
        return NodeIPSpec("interface", text, interface=name)
    if text.startswith(CIDR_PREFIX):
        try:
            network = ipaddress.ip_network(text[len(CIDR_PREFIX) :], strict=False)
        except ValueError:
            raise NodeIPSyntaxError("cidr: needs a network such as 10.0.0.0/8") from None
        return NodeIPSpec("cidr", text, network=network)
    return NodeIPSpec("address", text, addresses=_literal_addresses(text))


def _literal_addresses(text: str) -> tuple[IPAddress, ...]:
    parts = text.split(",")
    if len(parts) > 2:
        raise NodeIPSyntaxError("at most two addresses, one IPv4 and one IPv6")
    addresses = []
    for part in parts:
        try:
            address = ipaddress.ip_address(part.strip())
        except ValueError:
            raise NodeIPSyntaxError("must be a valid IP") from None
        if address.is_unspecified:
            raise NodeIPSyntaxError("cannot be an unspecified IP")
        addresses.append(address)
    if len(addresses) == 2 and addresses[0].version == addresses[1].version:
        raise NodeIPSyntaxError("a dual-stack pair needs one IPv4 and one IPv6 address")
    return tuple(sorted(addresses, key=lambda a: a.version))


def literal_first(text: str) -> str | None:
    """The first address of a literal ``nodeIP`` (IPv4 of a pair); None for anything else."""
    try:
        spec = parse_node_ip(text)
    except NodeIPSyntaxError:
        return None
    return str(spec.addresses[0]) if spec.kind == "address" else None


# --- the host ------------------------------------------------------------------------------


def local_addresses() -> list[LocalAddress]:
    """Every usable address of every local interface, in the kernel's order (see module doc)."""
    found = []
    for payload in netlink.dump(
        NETLINK_ROUTE, RTM_GETADDR, _IFADDRMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
    ):
        family, prefix, flags, _, index = _IFADDRMSG.unpack_from(payload)
        attributes = dict(netlink.attributes(payload, _IFADDRMSG.size))
        if IFA_FLAGS in attributes:
            flags = struct.unpack_from("=I", attributes[IFA_FLAGS])[0]
        raw = attributes.get(IFA_LOCAL) or attributes.get(IFA_ADDRESS)
        if raw is None or flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED):
            continue
        address = _address(family, raw)
        if address is not None:
            found.append(LocalAddress(_interface_name(index), address, prefix))
    return found


def default_route_sources(addresses: Sequence[LocalAddress] | None = None) -> dict[int, str]:
    """Per IP version (4, 6): the source address of the main table's default route."""
    addresses = local_addresses() if addresses is None else addresses
    best: dict[int, tuple[int, str]] = {}
    for payload in netlink.dump(
        NETLINK_ROUTE, RTM_GETROUTE, _RTMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0, 0, 0, 0, 0)
    ):
        family, dst_len, _, _, table, _, _, kind, _ = _RTMSG.unpack_from(payload)
        attributes = dict(netlink.attributes(payload, _RTMSG.size))
        if RTA_TABLE in attributes:
            table = struct.unpack_from("=I", attributes[RTA_TABLE])[0]
        if dst_len or kind != RTN_UNICAST or table != RT_TABLE_MAIN:
            continue
        version = 4 if family == socket.AF_INET else 6
        metric = struct.unpack_from("=I", attributes.get(RTA_PRIORITY, b"\0\0\0\0"))[0]
        source = _route_source(family, attributes, addresses, version)
        if source and (version not in best or metric < best[version][0]):
            best[version] = (metric, source)
    return {version: source for version, (_, source) in best.items()}


def _route_source(
    family: int, attributes: dict[int, bytes], addresses: Sequence[LocalAddress], version: int
) -> str | None:
    preferred = attributes.get(RTA_PREFSRC)
    if preferred is not None:
        address = _address(family, preferred)
        return None if address is None else str(address)
    if RTA_OIF not in attributes:
        return None
    interface = _interface_name(struct.unpack_from("=I", attributes[RTA_OIF])[0])
    usable = [a for a in _usable(addresses) if a.interface == interface]
    return next((str(a.address) for a in usable if a.address.version == version), None)


def _usable(addresses: Sequence[LocalAddress]) -> list[LocalAddress]:
    """The addresses a node could be reached at: not loopback, not link-local."""
    return [a for a in addresses if not (a.address.is_loopback or a.address.is_link_local)]


# --- resolution -------------------------------------------------------------------------------


def resolve_node_ip(
    spec: str | NodeIPSpec,
    addresses: Sequence[LocalAddress] | None = None,
    default_sources: dict[int, str] | None = None,
) -> NodeIP:
    """The node IP ``spec`` means on this host (module docstring); raises :class:`NodeIPError`.

    ``addresses`` and ``default_sources`` are read from the kernel when not given.
    A :class:`NodeIPSyntaxError` is raised for a ``spec`` text that does not parse.
    """
    parsed = parse_node_ip(spec) if isinstance(spec, str) else spec
    addresses = local_addresses() if addresses is None else list(addresses)
    if parsed.kind == "address":
        return _literal(parsed, addresses)
    if parsed.kind == "default":
        sources = default_route_sources(addresses) if default_sources is None else default_sources
        chosen = sources.get(4) or sources.get(6)
        if chosen is None:
            raise NodeIPError(
                "nodeIP is unset and this host has no default route to take it from; "
                f"set nodeIP or --node-ip to one of: {_candidates(addresses)}"
            )
        return NodeIP((chosen,), "the source address of the default route", "")
    matching = _selected(parsed, addresses)
    if not matching:
        raise NodeIPError(f"nodeIP {parsed.text} matches no local address; {_listing(addresses)}")
    return NodeIP((str(matching[0].address),), _describe(parsed), parsed.text)


def _literal(parsed: NodeIPSpec, addresses: Sequence[LocalAddress]) -> NodeIP:
    local = {a.address for a in addresses}
    for address in parsed.addresses:
        if address not in local:
            raise NodeIPError(
                f"nodeIP {address} is not an address of any local interface; " + _listing(addresses)
            )
    return NodeIP(tuple(str(a) for a in parsed.addresses), "nodeIP", parsed.text)


def _selected(parsed: NodeIPSpec, addresses: Sequence[LocalAddress]) -> list[LocalAddress]:
    if parsed.kind == "interface":
        own = [
            a for a in addresses if a.interface == parsed.interface and not a.address.is_link_local
        ]
        return sorted(own, key=lambda a: a.address.version)  # stable: IPv4 first
    assert parsed.network is not None
    return [a for a in addresses if a.address in parsed.network]


def _describe(parsed: NodeIPSpec) -> str:
    if parsed.kind == "interface":
        return f"the first address of interface {parsed.interface}"
    return f"the first local address in {parsed.network}"


def _candidates(addresses: Sequence[LocalAddress]) -> str:
    usable = _usable(addresses)
    return ", ".join(str(a) for a in usable) if usable else "none (no non-loopback address)"


def _listing(addresses: Sequence[LocalAddress]) -> str:
    return f"candidates: {_candidates(addresses)}"


def _address(family: int, raw: bytes) -> IPAddress | None:
    if family == socket.AF_INET and len(raw) == 4:
        return ipaddress.IPv4Address(raw)
    if family == socket.AF_INET6 and len(raw) == 16:
        return ipaddress.IPv6Address(raw)
    return None


def _interface_name(index: int) -> str:
    try:
        return socket.if_indextoname(index)
    except OSError:
        return f"if{index}"

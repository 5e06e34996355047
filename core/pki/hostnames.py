"""The names and IP addresses a serving certificate is for (``--hostnames``).

Origin's rules (``IPAddressesDNSNames``, :ref:`origin-node-certificates`): the hostnames form a
set, sorted; the common name is the first; every entry that parses as an IP
is an IP SAN; the DNS SANs are the other entries followed by the IPs written
as strings (for clients that only look at DNS SANs).

nodehost adds checks Origin lacked: every entry must be an IPv4/IPv6 address
or a DNS name (RFC 1123 labels, optionally a leading ``*.`` wildcard).  DNS
names are compared case-insensitively, so they are lower-cased; IPs are
written canonically (``::0001`` -> ``::1``, ``::ffff:10.0.0.1`` -> ``10.0.0.1``
as Go does); duplicates after that collapse.  No ``cryptography`` here.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from nodehost.config.hostport import IPAddress, is_dns1123_label, parse_ip
from nodehost.frozen import frozen

_MAX_DNS_NAME = 253
#: X.509's upper bound for a common name (RFC 5280 ub-common-name).
MAX_COMMON_NAME = 64


@frozen
class Hostnames:
    """A checked, normalized, sorted set of hostnames for a serving certificate."""

    names: tuple[str, ...]

    @property
    def ip_addresses(self) -> tuple[IPAddress, ...]:
        """The entries that are IP addresses, in sorted-name order (the IP SANs)."""
        return tuple(ipaddress.ip_address(name) for name in self.names if _is_ip(name))

    @property
    def non_ip_names(self) -> tuple[str, ...]:
        """The entries that are DNS names, sorted."""
        return tuple(name for name in self.names if not _is_ip(name))

    @property
    def dns_names(self) -> tuple[str, ...]:
        """The DNS SANs: the non-IP entries, then the IPs as strings (Origin's order)."""
        return self.non_ip_names + tuple(str(ip) for ip in self.ip_addresses)

    @property
    def common_name(self) -> str:
        """Origin's CN: the first name in sorted order.

        X.509 limits a CN to 64 characters, so a longer first name is skipped
        for the next one that fits; if none fits the subject has no CN (the
        SANs alone identify the server, as RFC 6125 requires of clients).
        """
        return next((name for name in self.names if len(name) <= MAX_COMMON_NAME), "")


def parse_hostnames(values: Iterable[str]) -> Hostnames:
    """Check and normalize ``values``; raise ``ValueError`` naming the first bad entry."""
    normalized = {normalize_hostname(value) for value in values}
    return Hostnames(names=tuple(sorted(normalized)))


def normalize_hostname(value: str) -> str:
    """The canonical form of one hostname, or ``ValueError`` if it is neither IP nor DNS name."""
    text = value.strip()
    ip = _parse_ip(text)
    if ip is not None:
        return str(ip)
    name = text.lower()
    if _is_dns_name(name):
        return name
    raise ValueError(f"{value!r} is neither an IP address nor a DNS name")


def _parse_ip(text: str) -> IPAddress | None:
    """Go's ``ParseIP`` (no zones), with IPv4-mapped IPv6 written as IPv4 as Go does."""
    ip = parse_ip(text)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _is_ip(name: str) -> bool:
    return _parse_ip(name) is not None


def _is_dns_name(name: str) -> bool:
    if not name or len(name) > _MAX_DNS_NAME or not name.isascii():
        return False
    labels = name.split(".")
    if labels[0] == "*" and len(labels) > 1:
        labels = labels[1:]
    return all(is_dns1123_label(label) for label in labels)

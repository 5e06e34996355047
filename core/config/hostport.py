"""Go's ``net.SplitHostPort``/``JoinHostPort``/``ParseIP`` semantics, with Go-like messages."""

from __future__ import annotations

import ipaddress
import re

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_ATOI = re.compile(r"^[+-]?[0-9]+$")
_INT64_MAX = (1 << 63) - 1


def _address_error(address: str, why: str) -> ValueError:
    return ValueError(f"address {address}: {why}")


def split_host_port(text: str) -> tuple[str, str]:
    """Split ``host:port``, ``[ipv6]:port`` or ``:port`` exactly as Go's ``net.SplitHostPort``.

    The port is returned as text, unchecked (``"host:"`` gives ``("host", "")``).
    Raises ``ValueError`` with Go's message, e.g.
    ``address 1.2.3.4: missing port in address``.
    """
    colon = text.rfind(":")
    if colon < 0:
        raise _address_error(text, "missing port in address")
    start, end_of_host = 0, 0
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise _address_error(text, "missing ']' in address")
        if end + 1 == len(text):
            raise _address_error(text, "missing port in address")
        if end + 1 != colon:
            if text[end + 1] == ":":
                raise _address_error(text, "too many colons in address")
            raise _address_error(text, "missing port in address")
        host = text[1:end]
        start, end_of_host = 1, end + 1
    else:
        host = text[:colon]
        if ":" in host:
            raise _address_error(text, "too many colons in address")
    if "[" in text[start:]:
        raise _address_error(text, "unexpected '[' in address")
    if "]" in text[end_of_host:]:
        raise _address_error(text, "unexpected ']' in address")
    return host, text[colon + 1 :]


def join_host_port(host: str, port: int | str) -> str:
    """Join like Go's ``net.JoinHostPort`` (brackets around hosts containing ':')."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_ip(text: str) -> IPAddress | None:
    """The IP address ``text`` denotes for Go's ``net.ParseIP``, or ``None``.

    Dotted IPv4 and IPv6 (with an embedded IPv4 tail) are accepted; zones
    (``fe80::1%eth0``), brackets and surrounding spaces are not.
    """
    if not text or "%" in text or text.strip() != text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def is_unspecified(ip: IPAddress) -> bool:
    """Go's ``IP.IsUnspecified``: ``0.0.0.0``, ``::`` or ``::ffff:0.0.0.0``."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_unspecified
    return ip.is_unspecified


def go_atoi(text: str) -> int:
    """Go's ``strconv.Atoi`` on a 64-bit platform; ``ValueError`` with Go's message."""
    if not _ATOI.match(text):
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if not -_INT64_MAX - 1 <= value <= _INT64_MAX:
        raise ValueError(f'strconv.Atoi: parsing "{text}": value out of range')
    return value


def is_valid_port(port: int) -> bool:
    """Kubernetes' ``IsValidPortNum``: 1..65535."""
    return 1 <= port <= 65535


PORT_RANGE_MESSAGE = "must be between 1 and 65535, inclusive"


#: A DNS-1123 label; compiled on first use (``re``'s cache), not at import.
_DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


def is_dns1123_label(label: str) -> bool:
    """Kubernetes' ``IsDNS1123Label``: lower-case alphanumerics and '-', at most 63."""
    return len(label) <= 63 and re.match(_DNS1123_LABEL, label) is not None

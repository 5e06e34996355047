"""Who would stop a component from binding ``ip:port``: the processes already listening.

The listeners come from :mod:`nodehost.daemon.listeners` and their holders
from :mod:`nodehost.daemon.ownership` -- the same lookup readiness uses, so
``nodehost check`` names the holder (pid and command) as ``/status`` would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodehost.daemon.listeners import canonical, tcp_listeners
from nodehost.daemon.ownership import Holder, find_holders

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.check import Check

WILDCARDS = ("0.0.0.0", "::")


def bind_conflicts(ip: str, port: int) -> tuple[Holder, ...]:
    """The holders of listening TCP sockets that make a bind of ``ip:port`` fail.

    A wildcard bind conflicts with every listener of its family on the port (``::``
    with IPv4 ones too, as a dual-stack socket); an address conflicts with a
    listener on it or on its family's wildcard (or a dual-stack ``::``).
    Empty when the port is free for that address.
    """
    ip = canonical(ip or "0.0.0.0")
    v6 = ":" in ip
    inodes = set()
    for listener in tcp_listeners(port):
        theirs_v6 = ":" in listener.address
        if ip in WILDCARDS:
            clash = ip == "::" or not theirs_v6 or listener.address == "::"
        else:
            clash = listener.address in (ip, "::" if v6 else "0.0.0.0", "::")
        if clash:
            inodes.add(listener.inode)
    return find_holders(inodes) if inodes else ()


def describe_holders(holders: tuple[Holder, ...]) -> str:
    return ", ".join(holder.describe() for holder in holders)


def udp_in_use(ip: str, port: int) -> bool | None:
    """Whether a UDP bind of ``ip:port`` fails with ``EADDRINUSE`` (tried, then closed at once);
    None when the bind is not allowed here (a port below 1024 without root)."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind((ip, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return True
            if error.errno == errno.EACCES:
                return None
            raise
    return False


def port_check(name: str, ip: str, port: int, *, udp: bool = False) -> Check:
    """``ok`` when ``ip:port`` can be bound (TCP, and UDP with ``udp``), else ``error``
    naming who holds it."""
    from nodehost.check import Check

    holders = bind_conflicts(ip, port)
    if holders:
        return Check.error(
            name,
            f"{ip}:{port} is held by {describe_holders(holders)}",
            "stop that process, or move the port in the config",
        )
    if udp:
        used = udp_in_use(ip, port)
        if used:
            return Check.error(
                name,
                f"UDP {ip}:{port} is in use by another process",
                "find it with ss -ulpn, stop it, or move the port in the config",
            )
        if used is None:
            return Check.ok(name, f"{ip}:{port} is free for TCP (UDP not tried: needs root)")
    return Check.ok(name, f"{ip}:{port} is free")

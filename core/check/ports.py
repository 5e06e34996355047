"""Who would stop a component from binding ``ip:port``: the processes already listening.

The listeners come from :mod:`nodehost.runtime.listeners` and their holders
from :mod:`nodehost.runtime.ownership` -- the same lookup readiness uses, so
``nodehost check`` names the holder (pid and command) as ``/status`` would.
"""

from __future__ import annotations

from nodehost.runtime.listeners import canonical, tcp_listeners
from nodehost.runtime.ownership import Holder, find_holders

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

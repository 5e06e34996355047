"""The host's listening sockets: which socket inode a connection to an address lands on.

TCP listeners come from the kernel's ``sock_diag`` netlink interface (what
``ss -ltn sport = :PORT`` uses), asked for ``LISTEN`` sockets on one port:
the kernel walks its listening table alone and copies out only the matches,
so the answer costs a fraction of a millisecond however many sockets the
host has.  ``/proc/net/tcp`` and ``tcp6``,
which hold the same entries, are read only where netlink is refused: the
kernel builds them by walking every socket, ~25 ms with a few thousand
``TIME_WAIT`` entries.  Unix listeners come from ``/proc/net/unix``.

Everything is seen from the host's network namespace, which is where
readiness probes connect from.
"""

from __future__ import annotations

import os
import socket
import struct

from nodehost import netlink
from nodehost.frozen import frozen

#: ``struct inet_diag_req_v2``'s ``idiag_states`` bit and ``/proc/net/tcp``'s ``st`` for LISTEN.
TCP_LISTEN = 10
#: ``Flags`` bit of a listening unix socket in ``/proc/net/unix`` (``__SO_ACCEPTCON``).
UNIX_ACCEPTING = 0x10000

SOCK_DIAG_BY_FAMILY = 20
INET_DIAG_REQ_BYTECODE = 1
INET_DIAG_BC_S_EQ = 11
_SOCKID_SIZE = 48  # struct inet_diag_sockid
_INODE_OFFSET = 68  # of idiag_inode in struct inet_diag_msg


@frozen
class Listener:
    """One listening TCP socket: ``address`` as ``inet_ntop`` writes it (``0.0.0.0``, ``::``)."""

    address: str
    port: int
    inode: int


def tcp_listeners(port: int) -> list[Listener]:
    """Every TCP socket listening on ``port``, IPv4 and IPv6."""
    try:
        found = _diag_listeners(socket.AF_INET, port) + _diag_listeners(socket.AF_INET6, port)
    except OSError:
        found = _proc_listeners("tcp", socket.AF_INET) + _proc_listeners("tcp6", socket.AF_INET6)
    return [listener for listener in found if listener.port == port]


def landing_inodes(ip: str, port: int) -> set[int]:
    """Inodes of the sockets a connection to ``ip:port`` can land on.

    The most specific tier wins, as in the kernel's lookup: the exact address
    (or its IPv4-mapped form), then the family's wildcard, then a dual-stack
    ``::`` for IPv4.  Several inodes in a tier are ``SO_REUSEPORT`` siblings.
    """
    ip = canonical(ip.partition("%")[0])  # a zone does not appear in the tables
    mapped = ip[7:] if ip.startswith("::ffff:") and "." in ip else None
    v4 = mapped or (ip if ":" not in ip else None)
    tiers = [{v4, "::ffff:" + v4}, {"0.0.0.0"}, {"::"}] if v4 is not None else [{ip}, {"::"}]
    listeners = tcp_listeners(port)
    for tier in tiers:
        inodes = {listener.inode for listener in listeners if listener.address in tier}
        if inodes:
            return inodes
    return set()


def canonical(ip: str) -> str:
    """``ip`` as ``inet_ntop`` writes it (``::1``, ``::ffff:127.0.0.1``); unchanged if invalid."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    try:
        return socket.inet_ntop(family, socket.inet_pton(family, ip))
    except OSError:
        return ip


def unix_listeners(path: str) -> set[int]:
    """Inodes of the unix sockets listening on ``path`` (an abstract name starts with NUL)."""
    names = {"@" + path[1:]} if path.startswith("\0") else {path, os.path.realpath(path)}
    inodes = set()
    for line in _read_text("/proc/net/unix").splitlines()[1:]:
        parts = line.split(None, 7)
        if len(parts) < 8 or parts[7] not in names:
            continue
        if int(parts[3], 16) & UNIX_ACCEPTING and parts[5] == "01":
            inodes.add(int(parts[6]))
    return inodes


# --- sock_diag ----------------------------------------------------------------------------


def _diag_listeners(family: int, port: int) -> list[Listener]:
    """One ``SOCK_DIAG_BY_FAMILY`` dump of ``family``'s TCP sockets listening on ``port``.

    The port is matched by the kernel (an ``INET_DIAG_BC_S_EQ`` filter), so
    only matching sockets are copied out.
    """
    request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN)
    request += bytes(_SOCKID_SIZE) + _port_filter(port)
    size = 16 if family == socket.AF_INET6 else 4
    return [
        Listener(
            address=socket.inet_ntop(family, body[8 : 8 + size]),
            port=int.from_bytes(body[4:6], "big"),
            inode=struct.unpack_from("=I", body, _INODE_OFFSET)[0],
        )
        for body in netlink.dump(netlink.NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, request)
        if len(body) >= _INODE_OFFSET + 4
    ]


def _port_filter(port: int) -> bytes:
    """An ``INET_DIAG_REQ_BYTECODE`` attribute: accept a socket whose source port is ``port``.

    One ``S_EQ`` operation and its operand: true jumps to the end (accept),
    false jumps 4 bytes past it (reject), as ``ss`` builds it.
    """
    code = struct.pack("=BBH", INET_DIAG_BC_S_EQ, 8, 12) + struct.pack("=BBH", 0, 0, port)
    return struct.pack("=HH", 4 + len(code), INET_DIAG_REQ_BYTECODE) + code


# --- /proc/net ----------------------------------------------------------------------------


def _proc_listeners(table: str, family: int) -> list[Listener]:
    """The listening sockets of ``/proc/net/<table>`` (``tcp``: IPv4, ``tcp6``: IPv6)."""
    found = []
    for line in _read_text(f"/proc/net/{table}").splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != f"{TCP_LISTEN:02X}":
            continue
        address, _, port = fields[1].partition(":")
        words = bytes.fromhex(address)
        # The address is printed as 32-bit words in host byte order.
        packed = b"".join(
            struct.pack("=I", int.from_bytes(words[i : i + 4], "big"))
            for i in range(0, len(words), 4)
        )
        found.append(Listener(socket.inet_ntop(family, packed), int(port, 16), int(fields[9])))
    return found


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""

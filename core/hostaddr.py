"""This host's IPv4 addresses, read from the kernel (nothing is sent on the network)."""

from __future__ import annotations

import fcntl
import socket
import struct

from nodehost.fileread import PROC_LIMIT, read_text

_SIOCGIFADDR = 0x8915


def interface_ipv4(sock: socket.socket, name: str) -> str | None:
    """The IPv4 address of interface ``name`` (None when it has none)."""
    request = struct.pack("256s", name[:15].encode())
    try:
        answer = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, request)
    except OSError:
        return None
    return socket.inet_ntoa(answer[20:24])


def local_ipv4_addresses() -> list[str]:
    """The IPv4 address of every local interface that has one (loopback included), sorted."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        found = (interface_ipv4(sock, name) for _, name in socket.if_nameindex())
        return sorted({address for address in found if address})


def default_local_ipv4() -> str:
    """The IPv4 address of the interface that holds the default route ("" if none)."""
    try:
        lines = read_text("/proc/net/route", PROC_LIMIT).splitlines()[1:]
    except OSError:
        return ""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for line in lines:
            fields = line.split()
            if len(fields) > 2 and fields[1] == "00000000":
                address = interface_ipv4(sock, fields[0])
                if address:
                    return address
    return ""

"""Netlink dump requests and message parsing (``linux/netlink.h``), shared by the
node-IP choice (``NETLINK_ROUTE``) and the listening-socket lookup (``NETLINK_SOCK_DIAG``).

Only what a ``NLM_F_DUMP`` request needs: send one request, read every answer
until ``NLMSG_DONE``, raise the kernel's ``NLMSG_ERROR`` as :class:`OSError`.
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Iterator

NETLINK_ROUTE = 0
NETLINK_SOCK_DIAG = 4
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
#: ``struct nlmsghdr``: length, type, flags, sequence, port id.
HEADER = struct.Struct("=IHHII")
_ATTRIBUTE = struct.Struct("=HH")  # struct rtattr / struct nlattr
#: The largest answer read at once; the kernel splits bigger dumps across reads.
_RECEIVE = 65536


def dump(protocol: int, message_type: int, body: bytes) -> Iterator[bytes]:
    """The payload of every message a ``NLM_F_DUMP`` request of ``message_type`` answers.

    Raises :class:`OSError` when the socket cannot be opened or the kernel
    answers with an error (its errno).
    """
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, protocol) as sock:
        sock.bind((0, 0))
        request = HEADER.pack(
            HEADER.size + len(body), message_type, NLM_F_REQUEST | NLM_F_DUMP, 1, 0
        )
        sock.sendall(request + body)
        while data := sock.recv(_RECEIVE):
            for kind, payload in messages(data):
                if kind == NLMSG_DONE:
                    return
                if kind == NLMSG_ERROR:
                    code = -struct.unpack_from("=i", payload)[0]
                    if code:
                        raise OSError(code, os.strerror(code))
                    return
                yield payload


def messages(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(type, payload)`` of each netlink message in ``data`` (one read)."""
    offset = 0
    while offset + HEADER.size <= len(data):
        length, kind, _, _, _ = HEADER.unpack_from(data, offset)
        if length < HEADER.size:
            return
        yield kind, data[offset + HEADER.size : offset + length]
        offset += (length + 3) & ~3


def attributes(payload: bytes, offset: int) -> Iterator[tuple[int, bytes]]:
    """``(type, value)`` of each attribute in ``payload`` from ``offset`` (flag bits cleared)."""
    while offset + _ATTRIBUTE.size <= len(payload):
        length, kind = _ATTRIBUTE.unpack_from(payload, offset)
        if length < _ATTRIBUTE.size:
            return
        yield kind & 0x3FFF, payload[offset + _ATTRIBUTE.size : offset + length]
        offset += (length + 3) & ~3

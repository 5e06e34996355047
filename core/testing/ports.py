"""Picking a loopback port for a test."""

from __future__ import annotations

import collections
import socket

#: The ports :func:`free_port` handed out lately in this process, never handed out again
#: while they are here: the kernel may give the same free port to two binds in a row, and
#: a test asking for several ports needs them distinct.
_HANDED_OUT: collections.deque[int] = collections.deque(maxlen=512)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago and that this process was not
    handed lately (prefer port 0 where the program under test can report the port it
    bound)."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind((host, 0))
            port = int(probe.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.append(port)
            return port
    raise RuntimeError(f"the kernel offered only ports handed out lately on {host}")

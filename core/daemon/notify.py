"""The systemd notification protocol (sd_notify), sender side, stdlib only.

``Notifier.from_environ()`` reads ``$NOTIFY_SOCKET``: a path or an abstract
socket (``@name``).  When it is unset every call is a no-op, so callers never
check.  The host sends ``STATUS=`` lines while it waits ("waiting for kubelet:
GET http://..."), ``READY=1`` once when every component is ready,
``RELOADING=1`` then ``READY=1`` around a configuration reload,
``STOPPING=1`` when shutting down, and ``WATCHDOG=1`` every half
``$WATCHDOG_USEC`` while every component is healthy (see
:meth:`Notifier.watchdog_interval`).

Children never see these variables: :data:`SYSTEMD_ONLY_VARIABLES` are removed
from their environment.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping

#: Variables that speak to the service manager about *this* process only.
SYSTEMD_ONLY_VARIABLES = (
    "NOTIFY_SOCKET",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
    "LISTEN_FDS",
    "LISTEN_PID",
    "LISTEN_FDNAMES",
)


def socket_address(value: str) -> str | bytes:
    """``$NOTIFY_SOCKET`` as an AF_UNIX address: ``@name`` is the abstract ``\\0name``."""
    if value.startswith("@"):
        return b"\0" + value[1:].encode()
    return value


class Notifier:
    """Sends notifications to the service manager; silent when there is none.

    Send errors are swallowed: a vanished service manager must not bring the
    node down.
    """

    def __init__(self, address: str | None, watchdog_usec: int | None = None) -> None:
        self.address = address
        self.watchdog_usec = watchdog_usec
        self.sent: list[str] = []  # the last messages, newest last (for /status and tests)
        self._socket: socket.socket | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Notifier:
        """Build from ``NOTIFY_SOCKET``, ``WATCHDOG_USEC`` and ``WATCHDOG_PID``."""
        environ = os.environ if environ is None else environ
        address = environ.get("NOTIFY_SOCKET") or None
        return cls(address, _watchdog_usec(environ))

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def watchdog_interval(self) -> float | None:
        """Seconds between ``WATCHDOG=1`` messages (half the timeout), or None."""
        if not self.enabled or not self.watchdog_usec:
            return None
        return self.watchdog_usec / 2_000_000

    def send(self, *lines: str) -> bool:
        """Send ``lines`` as one datagram; True if it was sent."""
        if self.address is None or not lines:
            return False
        message = "\n".join(lines)
        try:
            if self._socket is None:
                self._socket = socket.socket(
                    socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC
                )
            self._socket.sendto(message.encode(), socket_address(self.address))
        except OSError:
            return False
        self.sent = [*self.sent[-19:], message]
        return True

    def ready(self, status: str) -> bool:
        return self.send("READY=1", f"STATUS={status}")

    def reloading(self, status: str) -> bool:
        """``RELOADING=1`` and the monotonic time (systemd's reload protocol); then ``READY=1``."""
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        return self.send("RELOADING=1", f"MONOTONIC_USEC={now}", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.send(f"STATUS={status}")

    def stopping(self, status: str = "stopping") -> bool:
        return self.send("STOPPING=1", f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


def _watchdog_usec(environ: Mapping[str, str]) -> int | None:
    """``WATCHDOG_USEC`` if it is meant for this process (``WATCHDOG_PID`` unset or ours)."""
    value = environ.get("WATCHDOG_USEC", "")
    target = environ.get("WATCHDOG_PID", "")
    if not value.isdigit() or int(value) == 0:
        return None
    if target and (not target.isdigit() or int(target) != os.getpid()):
        return None
    return int(value)

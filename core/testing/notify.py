"""The service manager's end of sd_notify, for tests and users' CI.

Bind a :class:`NotifyReceiver`, point ``NOTIFY_SOCKET`` at its ``address``
when starting ``nodehost start``, and read what nodehost told "systemd"::

    receiver = NotifyReceiver("/tmp/notify.sock")   # or "@abstract-name"
    env = {**os.environ, "NOTIFY_SOCKET": receiver.address}
    ...
    assert "READY=1" in receiver.lines()
    receiver.close()
"""

from __future__ import annotations

import os
import socket
import threading

from nodehost.daemon.notify import socket_address


class NotifyReceiver:
    """A service manager's side of sd_notify: a DGRAM socket read by a thread.

    Like systemd it accepts SCM_RIGHTS file descriptors (``systemd-notify``'s
    ``BARRIER=1``) and closes them at once, which releases the sender.
    """

    def __init__(self, address: str) -> None:
        self.address = address
        self.messages: list[str] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(socket_address(address))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.settimeout(0.2)
        self.running = True
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        fd_space = socket.CMSG_SPACE(16 * 4)
        cred_space = socket.CMSG_SPACE(12)
        while self.running:
            try:
                data, ancillary, _, _ = self.sock.recvmsg(65536, fd_space + cred_space)
            except TimeoutError:
                continue
            except OSError:
                return
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    count = len(payload) // 4
                    for fd in memoryview(payload)[: count * 4].cast("i"):
                        os.close(fd)
            self.messages.append(data.decode())

    def lines(self) -> list[str]:
        return [line for message in list(self.messages) for line in message.split("\n")]

    def close(self) -> None:
        self.running = False
        self.thread.join(2)
        self.sock.close()

"""Following the node IP while the node runs: kernel notifications, not polling.

The host opens a ``NETLINK_ROUTE`` socket subscribed to address changes
(``RTMGRP_IPV4_IFADDR``, ``RTMGRP_IPV6_IFADDR``) and, because an unset
``nodeIP`` means the default route's source, route changes
(``RTMGRP_IPV4_ROUTE``, ``RTMGRP_IPV6_ROUTE``).  After each burst of
notifications it chooses the node IP again from the same spec
(:func:`nodehost.nodeip.resolve_node_ip`, in a worker thread) and:

* **same address** -- nothing happens (nothing restarts, nothing is logged);
* **another address** (a selector now matches another one, the default route
  moved) -- the running configuration is planned again
  (:meth:`~nodehost.daemon.reconfigure.ConfigApplier.follow_host`) and the
  components whose plan changed (those that were given the node IP: the
  kubelet's ``--node-ip``, a DNS server on it, ...) are restarted through
  the reconfiguration path; one log line (``node IP changed``: old, new, how
  chosen, restarted) and a Node event (``NodeIPChanged``);
* **no address** (the address left its interface, the selector matches
  nothing) -- one log line (``node IP unavailable``, with the candidates) and a
  Warning Node event (``NodeIPUnavailable``), once per distinct reason; the
  components keep running as planned, and ``/status`` shows the problem
  (``node_ip.problem``) until the address is back (``node IP available again``).

Events are posted with the node's kubeconfig (``masterKubeConfig``), best
effort: a failure is a warning line.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nodehost.daemon.reconfigure import REJECTED
from nodehost.netlink import NETLINK_ROUTE

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.daemon.host import Host
    from nodehost.nodeip import NodeIP

RTMGRP_IPV4_IFADDR = 0x10
RTMGRP_IPV4_ROUTE = 0x40
RTMGRP_IPV6_IFADDR = 0x100
RTMGRP_IPV6_ROUTE = 0x400
GROUPS = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE
_RECEIVE = 65536


class AddressEvents:
    """A netlink socket subscribed to :data:`GROUPS`; ``changed()`` after each readable burst.

    A receive-buffer overflow (``ENOBUFS``: notifications were lost) counts as a change.
    """

    def __init__(self, changed: Callable[[], None]) -> None:
        self.changed = changed
        self.sock: socket.socket | None = None

    def open(self, loop: asyncio.AbstractEventLoop) -> None:
        """Subscribe; raises :class:`OSError` when the kernel refuses the socket."""
        flags = socket.SOCK_RAW | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC
        sock = socket.socket(socket.AF_NETLINK, flags, NETLINK_ROUTE)
        try:
            sock.bind((0, GROUPS))
        except OSError:
            sock.close()
            raise
        self.sock = sock
        loop.add_reader(sock.fileno(), self._readable)

    def _readable(self) -> None:
        assert self.sock is not None
        while True:
            try:
                if not self.sock.recv(_RECEIVE):
                    break
            except BlockingIOError:
                break
            except OSError:  # ENOBUFS: some notifications were dropped; look again
                break
        self.changed()

    def close(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.sock is not None:
            loop.remove_reader(self.sock.fileno())
            self.sock.close()
            self.sock = None


class NodeIPFollower:
    """Chooses the node IP again after every address change; see the module docstring."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.log = host.log
        self.events = AddressEvents(self._changed)
        self.problem: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self._posts: set[asyncio.Task[Any]] = set()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Follow the plan's node IP (nothing when the plan chose none)."""
        if self.host.plan.node_ip is None:
            return
        try:
            self.events.open(loop)
        except OSError as error:
            self.log.warning("node IP not followed: no netlink socket", error=str(error))

    async def close(self) -> None:
        self.events.close(asyncio.get_running_loop())
        tasks = [t for t in (self._task, *self._posts) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def status(self) -> dict[str, Any] | None:
        """``/status``'s ``node_ip``: the chosen address, how, and the current problem."""
        node_ip = self.host.plan.node_ip
        return None if node_ip is None else {**node_ip.as_dict(), "problem": self.problem}

    # --- following --------------------------------------------------------------------

    def _changed(self) -> None:
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.create_task(self._follow())

    async def _follow(self) -> None:
        self._again = True
        while self._again and not self.host.shutdown.is_set():
            self._again = False
            await self._check()

    async def _check(self) -> None:
        from nodehost.nodeip import NodeIPError, resolve_node_ip  # loaded by the plan that chose it

        current = self.host.plan.node_ip
        assert current is not None
        try:
            chosen = await asyncio.to_thread(resolve_node_ip, current.spec)
        except (NodeIPError, OSError) as error:
            self._unavailable(current, str(error))
            return
        if chosen.addresses == current.addresses:
            self._available(current)
            return
        await self._move(current, chosen)

    async def _move(self, old: NodeIP, new: NodeIP) -> None:
        origin = f"node IP {old.value} -> {new.value}"
        result = await self.host.applier.follow_host(origin)
        if result.result == REJECTED:
            self._unavailable(old, "; ".join(result.problems))
            return
        self.problem = None
        self.log.warning(
            "node IP changed",
            old=old.value,
            new=new.value,
            chosen_by=new.chosen_by,
            restarted=list(result.restarted),
            problems=list(result.problems),
        )
        restarted = ", ".join(result.restarted) or "nothing"
        message = f"node IP changed from {old.value} to {new.value} ({new.chosen_by}); "
        self._post("NodeIPChanged", message + f"restarted {restarted}", "Normal")

    def _unavailable(self, current: NodeIP, why: str) -> None:
        if why == self.problem:
            return
        self.problem = why
        self.log.error("node IP unavailable", node_ip=current.value, error=why)
        self._post("NodeIPUnavailable", f"node IP {current.value} unavailable: {why}", "Warning")

    def _available(self, current: NodeIP) -> None:
        if self.problem is None:
            return
        self.problem = None
        self.log.info("node IP available again", node_ip=current.value)

    def _post(self, reason: str, message: str, kind: str) -> None:
        node = self.host.plan.node_name
        if not node:
            return
        from nodehost.api.events import node_event, post_node_event

        event = node_event(node, reason, message, kind)
        task = asyncio.create_task(post_node_event(self.host.plan.kubeconfig, event, self.log))
        self._posts.add(task)
        task.add_done_callback(self._posts.discard)

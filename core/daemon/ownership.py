"""Who holds a listening socket: the proof behind a readiness probe.

A probe that connects proves only that *something* listens on the address.
The host counts it for a component only when the listening socket belongs to
that component (design: "Readiness"):

* **the listener** -- the listening TCP sockets for the address the probe
  reached, the most specific first as the kernel picks them (the exact
  address, then the family's wildcard, then a dual-stack ``::``), from the
  kernel's ``sock_diag`` (``/proc/net/tcp``/``tcp6`` where that is refused);
  for a unix socket, the listening entries of ``/proc/net/unix`` bound to
  the probe's path (:mod:`nodehost.daemon.listeners`);
* **the component** -- its process and every descendant
  (``/proc/<pid>/task/*/children``), plus the adopted orphans its
  :class:`Owner` names; an in-loop task's owner is the host's own process;
* **belongs** -- a process of the component has the listener's socket inode
  among its open files (``/proc/<pid>/fd/*`` -> ``socket:[<inode>]``).

The component's processes are searched first and the search stops at the
first process that holds every listener, so a component that owns its port
costs one netlink dump of the listeners and the reads of its own file
descriptors.  When a listener is not the component's, :func:`find_holders`
scans every process's open files to name the holder (pid and command line).
Where a socket was found (pid and descriptor) is remembered, and checked
first the next time, while that descriptor still is that socket.

Everything is read from the host's own ``/proc`` view, which is the network
namespace the probe connects from.  A process nodehost cannot see (another
pid namespace, no permission) is reported as an unknown holder.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import field, replace

from nodehost.daemon import listeners, proc
from nodehost.frozen import frozen

#: Longest command line quoted for a holder.
COMMAND_LIMIT = 160
#: How many socket locations (inode -> pid and fd) are remembered.
LOCATION_MEMO_SIZE = 256

_seen_at: dict[int, tuple[int, int]] = {}


@frozen
class Owner:
    """Whose listeners count: ``pid``'s process tree, plus ``adopted()`` and their trees.

    ``adopted`` is called only when ``pid``'s tree does not hold the listener
    (the host's adopted orphans of the component: a daemon that left the tree).
    """

    pid: int
    adopted: Callable[[], Iterable[int]] = field(default=lambda: (), compare=False)


@frozen
class Holder:
    """A process that holds a listening socket; pid 0 is one nodehost cannot see."""

    pid: int
    command: str

    def describe(self) -> str:
        if self.pid == 0:
            return "a process nodehost cannot see"
        return f"pid {self.pid} ({self.command})"

    def as_dict(self) -> dict[str, object]:
        return {"pid": self.pid or None, "command": self.command or None}


@frozen
class Ownership:
    """Whether the listener at ``address`` is the owner's.

    When it is not: ``foreign`` are the inodes of the listeners the owner does
    not hold, and ``holders`` the processes holding them once :meth:`named`.
    """

    owned: bool
    address: str
    holders: tuple[Holder, ...] = ()
    reason: str = ""
    foreign: frozenset[int] = frozenset()

    def named(self) -> Ownership:
        """This verdict with the holders of its foreign listeners found (may scan /proc)."""
        if self.owned or not self.foreign or self.holders:
            return self
        return replace(self, holders=find_holders(set(self.foreign)))

    def describe(self) -> str:
        """One phrase: why the listener does not count (``""`` when it does)."""
        if self.owned:
            return ""
        if self.holders:
            who = ", ".join(holder.describe() for holder in self.holders)
            return f"{self.address} is held by {who}, not by the component"
        return f"{self.address}: {self.reason}"

    def as_dict(self) -> dict[str, object]:
        return {
            "address": self.address,
            "holders": [holder.as_dict() for holder in self.holders],
            "reason": self.describe(),
        }


# --- the verdicts -----------------------------------------------------------------------


def tcp_ownership(ip: str, port: int, owner: Owner) -> Ownership:
    """Whether the socket a TCP connection to ``ip:port`` lands on is ``owner``'s.

    Cheap when it is; a foreign verdict names no holder until :meth:`Ownership.named`.
    """
    address = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
    return _verdict(address, listeners.landing_inodes(ip, port), owner)


def unix_ownership(path: str, owner: Owner) -> Ownership:
    """Whether the socket listening on the unix ``path`` is ``owner``'s."""
    return _verdict(path, listeners.unix_listeners(path), owner)


def _verdict(address: str, inodes: set[int], owner: Owner) -> Ownership:
    if not inodes:
        return Ownership(False, address, reason="no listening socket found for it on this host")
    held = tree_holds(_tree_roots(owner), inodes) if proc.is_alive(owner.pid) else set()
    if held >= inodes:
        return Ownership(True, address)
    foreign = frozenset(inodes - held)
    return Ownership(False, address, reason="held by another process", foreign=foreign)


def _tree_roots(owner: Owner) -> Iterator[int]:
    yield owner.pid
    yield from owner.adopted()


# --- holders ----------------------------------------------------------------------------


def socket_inodes(pid: int) -> Iterator[tuple[int, int]]:
    """``(fd, inode)`` of every socket ``pid`` has open (nothing if it is gone).

    The host's own descriptors are ``fstat``-ed (a socket's ``st_ino`` is its
    inode), another process's read as ``socket:[<inode>]`` links.
    """
    if pid == os.getpid():
        yield from _own_socket_inodes()
        return
    try:
        folder = os.open(f"/proc/{pid}/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        for name in os.listdir(folder):
            try:
                target = os.readlink(name, dir_fd=folder)
            except OSError:  # closed meanwhile
                continue
            if target.startswith("socket:["):
                yield int(name), int(target[8:-1])
    finally:
        os.close(folder)


def _own_socket_inodes() -> Iterator[tuple[int, int]]:
    for name in os.listdir("/proc/self/fd"):
        try:
            status = os.fstat(int(name))
        except OSError:  # the listing's own descriptor, or one closed meanwhile
            continue
        if stat.S_ISSOCK(status.st_mode):
            yield int(name), status.st_ino


def tree_holds(roots: Iterable[int], inodes: set[int]) -> set[int]:
    """Which of ``inodes`` the processes of ``roots``' trees hold (stops once all are found)."""
    held: set[int] = set()
    seen: set[int] = set()
    pending = list(roots)
    while pending:
        pid = pending.pop(0)
        if pid in seen:
            continue
        seen.add(pid)
        held |= _holds(pid, inodes - held)
        if held >= inodes:
            break
        pending.extend(proc.children(pid))
    return held


def _holds(pid: int, inodes: set[int]) -> set[int]:
    """Which of ``inodes`` ``pid`` holds: where each was last seen first, else all its files."""
    remembered = {inode for inode in inodes if _location(inode) == pid}
    if remembered >= inodes:
        return remembered
    found = set()
    for fd, inode in socket_inodes(pid):
        if inode in inodes:
            found.add(inode)
            _remember(inode, pid, fd)
    return found


def find_holders(inodes: set[int]) -> tuple[Holder, ...]:
    """A process holding each of ``inodes``, lowest pid first (usually the parent of
    processes sharing it); a scan of ``/proc`` unless each was seen before."""
    pids = set()
    missing = set()
    for inode in inodes:
        pid = _location(inode)
        if pid is None:
            missing.add(inode)
        else:
            pids.add(pid)
    for pid in proc.all_pids() if missing else ():
        for fd, inode in socket_inodes(pid):
            if inode in missing:
                pids.add(pid)
                missing.discard(inode)
                _remember(inode, pid, fd)
        if not missing:
            break
    if not pids:
        return (Holder(0, ""),)
    return tuple(Holder(pid, command_line(pid)) for pid in sorted(pids))


def _location(inode: int) -> int | None:
    """The pid that held ``inode`` when last seen, if it still holds it at the same fd."""
    entry = _seen_at.get(inode)
    if entry is None:
        return None
    pid, fd = entry
    try:
        if pid == os.getpid():
            status = os.fstat(fd)
            still = stat.S_ISSOCK(status.st_mode) and status.st_ino == inode
        else:
            still = os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]"
    except OSError:
        still = False
    if not still:
        del _seen_at[inode]
        return None
    return pid


def _remember(inode: int, pid: int, fd: int) -> None:
    if inode not in _seen_at and len(_seen_at) >= LOCATION_MEMO_SIZE:
        del _seen_at[next(iter(_seen_at))]
    _seen_at[inode] = (pid, fd)


def command_line(pid: int) -> str:
    """``pid``'s command line, space-joined and shortened (its ``comm`` if that is empty)."""
    data = proc.read_file(f"/proc/{pid}/cmdline") or b""
    text = " ".join(part.decode(errors="replace") for part in data.split(b"\0") if part)
    if not text:
        text = (proc.read_file(f"/proc/{pid}/comm") or b"?").decode(errors="replace").strip()
    return text if len(text) <= COMMAND_LIMIT else text[: COMMAND_LIMIT - 3] + "..."

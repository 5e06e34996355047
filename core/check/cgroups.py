"""What the host's cgroups offer: v2, v1 or both, and the controllers a subtree has.

Read from ``/proc/self/mountinfo`` and the cgroup files, never guessed from
the kernel version (the usual false "cgroup v2 missing" comes from looking
in the wrong place: a v2 tree mounted at ``/sys/fs/cgroup/unified`` beside
v1 hierarchies, or a systemd-delegated subtree whose controllers differ from
the root's).

* **v2**: only ``cgroup2`` is mounted (``/sys/fs/cgroup``); a process's
  controllers are those listed in ``cgroup.controllers`` of its own cgroup
  (what its parent delegates to it: systemd's ``Delegate=``, or the parent's
  ``cgroup.subtree_control``);
* **hybrid**: v1 hierarchies carry the controllers, an empty ``cgroup2``
  tree (``unified``) only tracks processes -- a v1 host for the agents;
* **v1**: only v1 hierarchies;
* **none**: no cgroup file system at all.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from nodehost.daemon.cgroups import cgroup2_mount, cgroup_of
from nodehost.frozen import frozen

MOUNTINFO = "/proc/self/mountinfo"


@frozen
class CgroupHost:
    """The cgroup mode, where v2 is mounted, the subtree in use and its controllers.

    ``subtree`` is the process's own v2 cgroup folder (None without v2);
    ``controllers`` what can be used there: the v2 subtree's controllers in
    ``v2`` mode, the mounted v1 controllers otherwise.
    """

    mode: str
    v2_mount: str | None
    subtree: str | None
    controllers: frozenset[str]

    def describe(self) -> str:
        if self.mode == "v2":
            return f"cgroup v2 at {self.v2_mount}, subtree {self.subtree}"
        if self.mode == "hybrid":
            return f"cgroup v1 (hybrid: an empty cgroup v2 tree at {self.v2_mount})"
        return "cgroup v1" if self.mode == "v1" else "no cgroup file system mounted"


def read_cgroup_host(mountinfo: str = MOUNTINFO, pid: int | str = "self") -> CgroupHost:
    """The host's cgroups as process ``pid`` sees them."""
    v2 = cgroup2_mount(mountinfo)
    v1 = v1_controllers(mountinfo)
    if v2 is not None and not v1:
        own = cgroup_of(pid) or "/"
        subtree = os.path.join(v2, own.lstrip("/")).rstrip("/") or v2
        return CgroupHost("v2", v2, subtree, subtree_controllers(subtree))
    mode = "hybrid" if v2 is not None else ("v1" if v1 else "none")
    return CgroupHost(mode, v2, None, v1)


def subtree_controllers(directory: str | os.PathLike[str]) -> frozenset[str]:
    """The controllers listed in ``directory/cgroup.controllers`` (empty if unreadable)."""
    with contextlib.suppress(OSError):
        return frozenset((Path(directory) / "cgroup.controllers").read_text().split())
    return frozenset()


def missing(available: Iterable[str], wanted: Iterable[str]) -> list[str]:
    """The ``wanted`` controllers not in ``available``, in ``wanted``'s order."""
    have = set(available)
    return [name for name in wanted if name not in have]


def v1_controllers(mountinfo: str = MOUNTINFO) -> frozenset[str]:
    """The controllers of the mounted cgroup v1 hierarchies (``blkio`` is v1's ``io``)."""
    found: set[str] = set()
    with contextlib.suppress(OSError):
        for line in Path(mountinfo).read_text().splitlines():
            _, _, after = line.partition(" - ")
            fields = after.split()
            if len(fields) >= 3 and fields[0] == "cgroup":
                options = fields[2].split(",")
                found.update(o for o in options if o not in _V1_NON_CONTROLLERS and "=" not in o)
    return frozenset({"io" if name == "blkio" else name for name in found})


_V1_NON_CONTROLLERS = frozenset(
    {"rw", "ro", "noprefix", "clone_children", "xattr", "cpuset_v2_mode"}
)

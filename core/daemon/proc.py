"""What Linux tells us about processes: ``/proc`` reads and the two ``prctl`` calls we need.

Every reader returns None (or an empty value) for a process that is gone or
not readable by us, so callers treat "cannot tell" as "not ours".
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterable, Iterator

from nodehost import fileread

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

_libc = ctypes.CDLL(None, use_errno=True)


def prctl(option: int, value: int) -> None:
    """Call ``prctl(option, value)``; raise OSError on failure."""
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def set_child_subreaper(enabled: bool = True) -> None:
    """Make orphaned descendants of this process re-parent to it (and not to init)."""
    prctl(PR_SET_CHILD_SUBREAPER, 1 if enabled else 0)


def set_parent_death_signal(signum: int) -> None:
    """Ask for ``signum`` when the parent *thread* dies (call in the child before exec)."""
    prctl(PR_SET_PDEATHSIG, signum)


def read_file(path: str) -> bytes | None:
    """The contents of a ``/proc`` file, or None if it cannot be read."""
    try:
        return fileread.read_file(path, fileread.PROC_LIMIT)
    except OSError:
        return None


def executable(pid: int) -> str | None:
    """``/proc/<pid>/exe``, without the " (deleted)" suffix of a replaced binary."""
    try:
        target = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
    return target.removesuffix(" (deleted)")


def environment(pid: int) -> dict[str, str]:
    """The environment ``pid`` was started with (empty if unreadable)."""
    data = read_file(f"/proc/{pid}/environ")
    if not data:
        return {}
    entries = (item.decode(errors="replace") for item in data.split(b"\0") if b"=" in item)
    return dict(entry.split("=", 1) for entry in entries)


def stat_fields(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` split into fields; field 0 is the pid, field 1 the state.

    The command name (which may hold spaces) is dropped, so index ``i`` here is
    field ``i + 2`` of proc(5) minus one: state=0, ppid=1, pgrp=2, starttime=19.
    """
    data = read_file(f"/proc/{pid}/stat")
    if data is None:
        return None
    return data[data.rfind(b")") + 2 :].decode().split()


def start_time(pid: int) -> int | None:
    """The process start time in clock ticks since boot (identifies a pid's owner)."""
    fields = stat_fields(pid)
    return int(fields[19]) if fields else None


def is_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def processes_with(variable: str, value: str) -> list[int]:
    """The live processes whose environment holds ``variable=value`` (one ``/proc`` scan).

    One read per process: its environment is matched as bytes, and only a match
    has its ``stat`` read (a zombie's environment is empty anyway).
    """
    entry = os.fsencode(f"{variable}={value}")
    found = []
    for pid in all_pids():
        data = read_file(f"/proc/{pid}/environ")
        if data and entry in data.split(b"\0") and is_alive(pid):
            found.append(pid)
    return found


def all_pids() -> Iterator[int]:
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                yield int(name)


def own_children() -> set[int]:
    """Direct children of this process, adopted orphans included (all threads)."""
    return children("self")


def children(pid: int | str) -> set[int]:
    """Direct children of ``pid`` (every thread's; empty if it is gone)."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            data = read_file(f"/proc/{pid}/task/{task}/children") or b""
            found.update(int(child) for child in data.split())
    return found


def subtree(roots: Iterable[int]) -> set[int]:
    """``roots`` and every live descendant of theirs (by parent pid; one ``/proc`` scan)."""
    children: dict[int, list[int]] = {}
    for pid in all_pids():
        fields = stat_fields(pid)
        if fields is not None and len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(pid)
    found: set[int] = set()
    pending = list(roots)
    while pending:
        pid = pending.pop()
        if pid not in found:
            found.add(pid)
            pending.extend(children.get(pid, ()))
    return found


def group_exists(pgid: int) -> bool:
    """True while any process (a zombie too) is in process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

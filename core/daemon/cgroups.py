"""Agents in cgroups: one cgroup per agent, a workload cgroup, and a guardian.

When nodehost can use cgroup v2 -- a writable ``cgroup2`` mount with
``cgroup.kill`` (Linux 5.14+), as root or in a delegated subtree
(``Delegate=yes``) -- the host makes, below its own cgroup::

    <own cgroup>/nodehost-<id>/          <id>: a digest of the state directory
        agents/<component>/              each process component's whole tree
        workloads/                       what an agent hands over (containerd's shims)

and records the base path in ``<state-dir>/run/cgroup``, so the next start
and ``nodehost teardown`` find it from anywhere.  A child is moved into its
agent cgroup right after the spawn, from a worker thread (the kernel may hold
the first move after a quiet while for an RCU grace period, 10-20 ms; the
other components start meanwhile), in practice while it still runs the
launcher (``setpriv`` or the pre-exec step), before its own program starts a
process of its own; it counts as started once it is in.  A stop SIGKILLs the
whole cgroup (``cgroup.kill``) after the grace period and is complete when the
cgroup is empty.

The guardian (:class:`Guardian`) is ``sh`` reading a pipe whose only writer
is the host: when the host dies, even by SIGKILL, the read ends and the
guardian writes ``cgroup.kill`` of ``agents/`` -- every agent and everything
below it dies, workloads are untouched.  Its pid file
(``nodehost.guardian.pid``) makes a guardian left by a killed host a leftover
that the next start ends before it starts anything.

Where cgroups are not available (cgroup v1 only, read-only, no
``cgroup.kill``, or ``NODEHOST_CGROUPS=0``) :func:`open_cgroups` returns
None with the reason and the host keeps to pid files, marker variables and
the parent-death signal (:mod:`nodehost.daemon.pidfiles`); ``/status`` says
which is in force.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from nodehost.daemon.variables import WORKLOAD_CGROUP_VARIABLE
from nodehost.fileread import STATE_LIMIT, read_text
from nodehost.frozen import frozen
from nodehost.pki.atomic import write_atomic

RECORD_FILE = "cgroup"
AGENTS = "agents"
WORKLOADS = "workloads"
GUARDIAN = "nodehost.guardian"
#: ``NODEHOST_CGROUPS=0`` keeps the host to pid files even where cgroups work.
SWITCH_VARIABLE = "NODEHOST_CGROUPS"
#: The guardian: wait for the end of the host's pipe (stdin), then kill the agents.
GUARDIAN_SCRIPT = 'read -r _ ; echo 1 > "$1/cgroup.kill"'


def cgroup2_mount(mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup``, or ``.../unified``)."""
    with contextlib.suppress(OSError):
        for line in Path(mountinfo).read_text().splitlines():
            fields = line.split()
            if " - " in line and line.split(" - ", 1)[1].split()[0] == "cgroup2":
                return fields[4]
    return None


def cgroup_of(pid: int | str = "self") -> str | None:
    """The cgroup v2 path of ``pid`` (``0::/a/b`` -> ``/a/b``), None if unknown."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:].split(" ", 1)[0]
    return None


def base_name(state_dir: str) -> str:
    """``nodehost-<12 hex>``: the base cgroup's name for ``state_dir`` (same dir, same name)."""
    import hashlib

    digest = hashlib.sha256(os.path.realpath(state_dir).encode()).hexdigest()[:12]
    return f"nodehost-{digest}"


def record_path(state_dir: str) -> Path:
    return Path(state_dir) / "run" / RECORD_FILE


def recorded_base(state_dir: str) -> Path | None:
    """The base cgroup an earlier run recorded for ``state_dir``, if it still exists."""
    try:
        text = read_text(record_path(state_dir), STATE_LIMIT, follow_symlinks=False).strip()
    except OSError:
        return None
    path = Path(text)
    return path if text.startswith("/") and (path / "cgroup.procs").is_file() else None


@frozen
class AgentCgroups:
    """The base cgroup of one state directory and its ``agents``/``workloads`` children."""

    base: Path

    @property
    def agents(self) -> Path:
        return self.base / AGENTS

    @property
    def workloads(self) -> Path:
        return self.base / WORKLOADS

    def agent(self, component: str) -> Path:
        """The cgroup of ``component`` (made when its child moves in: :func:`move`)."""
        return self.agents / component

    def child_environment(self) -> dict[str, str]:
        """What every agent is told: where a workload it starts moves itself."""
        return {WORKLOAD_CGROUP_VARIABLE: str(self.workloads)}

    def describe(self) -> dict[str, str]:
        return {"mechanism": "cgroup", "cgroup": str(self.base)}


def expected_base(state_dir: str) -> tuple[Path | None, str]:
    """Where this process would make the base cgroup of ``state_dir``; ``(None, why not)``."""
    if os.environ.get(SWITCH_VARIABLE, "").lower() in ("0", "off", "false", "no"):
        return None, f"turned off by {SWITCH_VARIABLE}={os.environ[SWITCH_VARIABLE]}"
    mount = cgroup2_mount()
    if mount is None:
        return None, "no cgroup v2 hierarchy is mounted"
    own = cgroup_of()
    if own is None:
        return None, "this process is in no cgroup v2 cgroup"
    return Path(mount) / own.lstrip("/") / base_name(state_dir), ""


def open_cgroups(state_dir: str) -> tuple[AgentCgroups | None, str]:
    """Make (or reuse) the cgroups of ``state_dir``; ``(None, why not)`` when unavailable."""
    base, reason = expected_base(state_dir)
    if base is None:
        return None, reason
    try:
        for folder in (base, base / AGENTS, base / WORKLOADS):
            folder.mkdir(exist_ok=True)
    except OSError as error:
        return None, f"cannot create {base}: {error.strerror or error}"
    if not (base / AGENTS / "cgroup.kill").exists():
        return None, "the kernel has no cgroup.kill (Linux 5.14 or later needed)"
    if not os.access(base / WORKLOADS / "cgroup.procs", os.W_OK):
        return None, f"{base} is not writable"
    record = record_path(state_dir)
    record.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(record, f"{base}\n".encode(), 0o644, sync_directory=False)  # no symlink followed
    return AgentCgroups(base), ""


def move(pid: int, cgroup: Path) -> None:
    """Put process ``pid`` into ``cgroup``, made if missing (OSError if it cannot be moved
    or is gone).

    Blocking: the kernel may wait for an RCU grace period (10-20 ms here) before
    it moves the first process after a while; the host calls it from a worker thread.
    """
    cgroup.mkdir(exist_ok=True)
    with open(cgroup / "cgroup.procs", "w") as handle:
        handle.write(str(pid))


def kill(cgroup: Path) -> None:
    """SIGKILL every process in ``cgroup`` and below (nothing if it is gone)."""
    with contextlib.suppress(FileNotFoundError), open(cgroup / "cgroup.kill", "w") as handle:
        handle.write("1")


def populated(cgroup: Path) -> bool:
    """True while a process is in ``cgroup`` or below it."""
    try:
        text = (cgroup / "cgroup.events").read_text()
    except OSError:
        return False
    return "populated 1" in text


def pids(cgroup: Path) -> list[int]:
    """The processes in ``cgroup`` and every cgroup below it."""
    found: list[int] = []
    for folder in walk(cgroup):
        with contextlib.suppress(OSError, ValueError):
            found.extend(int(line) for line in (folder / "cgroup.procs").read_text().split())
    return found


def walk(cgroup: Path) -> Iterator[Path]:
    """``cgroup`` and its descendants, deepest first (the order ``rmdir`` needs)."""
    children = _children(cgroup)
    if children is None:
        return
    for name in children:
        yield from walk(cgroup / name)
    yield cgroup


def _children(cgroup: Path) -> list[str] | None:
    """The names of ``cgroup``'s child cgroups, sorted; None if it is gone."""
    try:
        with os.scandir(cgroup) as entries:  # file types from the listing: no stat per file
            return sorted(entry.name for entry in entries if entry.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return None


def remove_empty(cgroup: Path) -> list[Path]:
    """Remove ``cgroup`` and its descendants that hold no process; return those removed,
    deepest first.

    A cgroup goes with one ``rmdir`` when it can (no child cgroup, no process): only
    one that refuses is listed, its children removed first and the ``rmdir`` tried
    again -- the N agents' cgroups of a stopped node are not listed one by one.
    """
    try:
        cgroup.rmdir()
        return [cgroup]
    except OSError:
        pass
    removed = []
    for name in _children(cgroup) or ():
        removed.extend(remove_empty(cgroup / name))
    with contextlib.suppress(OSError):
        cgroup.rmdir()
        removed.append(cgroup)
    return removed


class Guardian:
    """The process that kills the agents' cgroup when the host dies (module docstring)."""

    def __init__(self, cgroups: AgentCgroups, state_dir: str) -> None:
        self.cgroups = cgroups
        self.state_dir = state_dir
        self.popen: subprocess.Popen[bytes] | None = None
        self._write_end: int | None = None

    def start(self) -> int:
        """Start the guardian; return its pid.  The pipe's write end stays in this process only."""
        from nodehost.daemon.pidfiles import marker_environment, write_pid_file

        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        environment = {"PATH": os.environ.get("PATH", os.defpath)}
        environment.update(marker_environment(self.state_dir, GUARDIAN))
        try:
            self.popen = subprocess.Popen(
                ["sh", "-c", GUARDIAN_SCRIPT, GUARDIAN, str(self.cgroups.agents)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=environment,
                start_new_session=True,
            )
        finally:
            os.close(read_end)
        self._write_end = write_end
        write_pid_file(self.state_dir, GUARDIAN, self.popen.pid)
        return self.popen.pid

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen is not None else None

    def close(self) -> None:
        """Release the guardian after a clean stop: it kills the (empty) agents and exits.

        The caller waits for the pid to be gone (the host's reaper collects it).
        """
        from nodehost.daemon.pidfiles import remove_pid_file

        if self._write_end is not None:
            os.close(self._write_end)
            self._write_end = None
        remove_pid_file(self.state_dir, GUARDIAN)

"""Teardown: end everything nodehost started for a state directory, workloads included.

A stop ends the agents and leaves the workloads (containers and their shims)
running; a teardown -- ``nodehost teardown``, or ``start --exit-on-ready`` on
its way out -- ends both, like k3s's ``k3s-killall.sh``:

1. agents left by a killed host: pid files and marker variables
   (:mod:`nodehost.daemon.pidfiles`), the agents' cgroup and a leftover guardian;
2. workloads: every process carrying ``NODEHOST_WORKLOAD=<state-dir>`` or in
   the workload cgroup, and every process below them (the containers) --
   SIGTERM, ``grace`` seconds, then SIGKILL;
3. the cgroups those processes ran in, once empty, if only they were in them,
   and nodehost's own cgroups of the state directory;
4. what each component recorded in its :class:`~nodehost.component.TeardownSpec`
   (``kube-proxy --cleanup`` where kube-proxy is installed; the mounts below the
   kubelet's root: pod volumes, unmounted, their data left), then every mount
   below the state directory (containers' root filesystems), then the temporary
   files a killed run left (:func:`pidfiles.remove_temporaries`);
5. the pods' attachments to the networks recorded in the state directory, by CNI
   DEL from libcni's cache (:mod:`nodehost.cni.attachments`: veths, IPAM
   reservations, the plugins' iptables rules and chains, the pods' network
   namespaces) and portmap's shared host-port chains once idle
   (:mod:`nodehost.cni.portmapchains`), then what the record names (as
   ``nodehost network cleanup``).

Each step reports one line per thing it ended or removed.  The caller holds
the state directory's lock: no host runs while a teardown does.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from nodehost.cni import LEDGER_NAME
from nodehost.daemon import cgroups, pidfiles, proc
from nodehost.daemon.workloads import workload_roots

MNT_DETACH = 2


@dataclass
class TeardownReport:
    """What a teardown ended and removed (``done``) and what it could not (``left``)."""

    done: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


async def tear_down(state_dir: str, grace: float, ledgers_too: bool = True) -> TeardownReport:
    """Run the steps of the module docstring for ``state_dir``; see :class:`TeardownReport`."""
    report = TeardownReport()
    base = cgroups.recorded_base(state_dir)
    await _end_agents(state_dir, base, grace, report)
    await _end_workloads(state_dir, base, grace, report)
    if base is not None:
        removed = cgroups.remove_empty(base)
        if removed:
            report.done.append(f"removed nodehost's cgroups {base}")
    _undo_recorded(state_dir, report)
    unmount_below(state_dir, report)
    for path in pidfiles.remove_temporaries(state_dir):
        report.done.append(f"removed {path} (a killed run's temporary file)")
    ledgers = sorted(Path(state_dir).glob(f"*/{LEDGER_NAME}"))
    if ledgers:  # without one, no cached attachment is nodehost's: nothing to DEL or clean
        attachments_removed = _remove_attachments(ledgers, report)
        if ledgers_too and attachments_removed:
            _clean_networks(ledgers, report)
    _check_nothing_left(state_dir, base, report)
    return report


async def _end_agents(
    state_dir: str, base: Path | None, grace: float, report: TeardownReport
) -> None:
    verified, pids = pidfiles.find_leftovers(state_dir)
    for record in verified:
        report.done.append(
            f"ended agent {record.component} (pid {record.pid}, {record.executable})"
        )
    others = sorted(set(pids) - {record.pid for record in verified})
    if others:
        report.done.append(f"ended {len(others)} process(es) below agents: {_pid_list(others)}")
    if base is not None:
        cgroup_pids = sorted(set(cgroups.pids(base / cgroups.AGENTS)) - set(pids))
        if cgroup_pids:
            report.done.append(f"ended {len(cgroup_pids)} process(es) in the agents' cgroup")
        pids = sorted({*pids, *cgroup_pids})
    await pidfiles.end_processes(pids, grace)
    if base is not None:
        cgroups.kill(base / cgroups.AGENTS)
        await pidfiles.wait_gone(cgroups.pids(base / cgroups.AGENTS), pidfiles.KILL_WAIT)
    pidfiles.clear_pid_files(state_dir)


async def _end_workloads(
    state_dir: str, base: Path | None, grace: float, report: TeardownReport
) -> None:
    roots = set(workload_roots(state_dir))
    if base is not None:
        roots.update(cgroups.pids(base / cgroups.WORKLOADS))
    if not roots:
        return
    everything = proc.subtree(roots)
    owned = _cgroups_only_of(everything)
    for pid in sorted(roots):
        report.done.append(f"ended workload {_command(pid)} (pid {pid})")
    below = everything - roots
    if below:
        report.done.append(f"ended {len(below)} process(es) below workloads: {_pid_list(below)}")
    await pidfiles.end_processes(sorted(everything), grace)
    for folder in owned:
        with contextlib.suppress(OSError):
            folder.rmdir()
            report.done.append(f"removed cgroup {folder}")


def _cgroups_only_of(pids: set[int]) -> list[Path]:
    """The cgroup folders of ``pids`` that hold no other process, deepest first."""
    folders = {folder for pid in pids for folder in cgroup_folders(pid)}
    own = set(cgroup_folders(os.getpid()))
    owned = []
    for folder in folders - own:
        try:
            members = {int(line) for line in (folder / "cgroup.procs").read_text().split()}
        except (OSError, ValueError):
            continue
        if members <= pids:
            owned.append(folder)
    return sorted(owned, key=lambda path: len(path.parts), reverse=True)


def cgroup_folders(pid: int) -> list[Path]:
    """The folders of every cgroup (v1 and v2) that ``pid`` is in, hierarchy roots excluded."""
    mounts = _cgroup_mounts()
    folders = []
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            mount = mounts.get(controllers.split(",")[0])
            if mount is None or path in ("", "/"):
                continue
            mount_point, root = mount
            relative = os.path.relpath(path, root)
            if not relative.startswith(".."):
                folders.append(Path(mount_point) / relative)
    return folders


def _cgroup_mounts() -> dict[str, tuple[str, str]]:
    """A controller (``cpu``, ``name=systemd``; ``""`` for v2) -> (mount point, mounted root)."""
    found: dict[str, tuple[str, str]] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields, _, tail = line.partition(" - ")
            parts, kind = fields.split(), tail.split()
            if kind[0] == "cgroup2":
                found.setdefault("", (parts[4], parts[3]))
            elif kind[0] == "cgroup":
                for option in kind[2].split(","):
                    found.setdefault(option, (parts[4], parts[3]))
    return found


def mounts_below(folder: str) -> list[str]:
    """Mount points at or below ``folder``, deepest first."""
    root = os.path.realpath(folder)
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].encode().decode("unicode_escape")
            if point == root or point.startswith(root + "/"):
                found.append(point)
    return sorted(set(found), key=lambda path: path.count("/"), reverse=True)


def _undo_recorded(state_dir: str, report: TeardownReport) -> None:
    """Each component's :class:`~nodehost.component.TeardownSpec`: its commands, its mounts."""
    import json

    from nodehost.component import TEARDOWN_FILE
    from nodehost.fileread import TEXT_LIMIT, read_file

    for record in sorted(Path(state_dir).glob(f"*/{TEARDOWN_FILE}")):
        try:
            data = json.loads(read_file(record, TEXT_LIMIT, follow_symlinks=False))
            commands = [[str(word) for word in argv] for argv in data.get("commands", ())]
            folders = [str(folder) for folder in data.get("unmount_below", ())]
        except (OSError, ValueError, TypeError, AttributeError) as error:
            report.left.append(f"{record}: unreadable ({error}); its teardown steps were skipped")
            continue
        for argv in commands:
            _run_recorded(argv, report)
        for folder in folders:
            unmount_below(folder, report)


#: How long a recorded teardown command may run.
COMMAND_TIMEOUT = 120.0


def _run_recorded(argv: list[str], report: TeardownReport) -> None:
    """Run ``argv`` if its program is on ``PATH`` (silently skipped if not installed)."""
    import subprocess

    from nodehost.binaries import which

    program = which(argv[0]) if argv else None
    if program is None:
        return
    command = " ".join(argv)
    try:
        done = subprocess.run(
            [program, *argv[1:]],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        report.left.append(f"{command}: {error}")
        return
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        report.left.append(f"{command} failed: {last}")
        return
    report.done.append(f"ran {command} ({program})")


def unmount_below(folder: str, report: TeardownReport) -> None:
    """Unmount every mount at or below ``folder``, deepest first; lazily (``MNT_DETACH``) when
    one is busy, so that it goes once its last user does.  One line per mount in ``report``."""
    libc = ctypes.CDLL(None, use_errno=True)
    for point in mounts_below(folder):
        if libc.umount2(point.encode(), 0) == 0:
            report.done.append(f"unmounted {point}")
            continue
        error = ctypes.get_errno()
        if error == errno.EBUSY and libc.umount2(point.encode(), MNT_DETACH) == 0:
            report.done.append(f"unmounted {point} (lazily: it was busy)")
            continue
        error = ctypes.get_errno() if error == errno.EBUSY else error
        report.left.append(f"mount {point}: cannot unmount ({os.strerror(error)})")


def _remove_attachments(ledgers: list[Path], report: TeardownReport) -> bool:
    """DEL the pods' attachments to the networks ``ledgers`` record; False if one failed."""
    from nodehost.cni.attachments import cache_uses, remove_attachments
    from nodehost.cni.ledger import LedgerNetwork, read_ledger
    from nodehost.errors import RuntimeFailure

    networks: list[LedgerNetwork] = []
    for ledger in ledgers:
        try:
            networks.extend(read_ledger(str(ledger)).networks)
        except RuntimeFailure as error:
            report.left.append(str(error))
    removed = remove_attachments(networks)
    report.done.extend(removed.done)
    report.left.extend(removed.failed)
    if networks and not removed.failed and not cache_uses("portmap"):
        from nodehost.cni.portmapchains import remove_idle_chains

        done, failed = remove_idle_chains()
        report.done.extend(done)
        report.left.extend(failed)
    return not removed.failed


def _clean_networks(ledgers: list[Path], report: TeardownReport) -> None:
    from nodehost.cni.ledger import clean_up
    from nodehost.errors import RuntimeFailure

    for ledger in ledgers:
        try:
            report.done.extend(clean_up(str(ledger)))
        except RuntimeFailure as error:
            report.left.append(str(error))


def _check_nothing_left(state_dir: str, base: Path | None, report: TeardownReport) -> None:
    _, pids = pidfiles.find_leftovers(state_dir)
    alive = sorted({*pids, *workload_roots(state_dir)})
    if base is not None:
        alive = sorted({*alive, *cgroups.pids(base)})
    if alive:
        report.left.append(f"processes still alive: {_pid_list(alive)}")


def _command(pid: int) -> str:
    with contextlib.suppress(OSError):
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        return " ".join(word.decode(errors="replace") for word in words[:3] if word)
    return "?"


def _pid_list(pids: Iterable[int]) -> str:
    return ", ".join(str(pid) for pid in sorted(pids))

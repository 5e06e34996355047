"""Pid files, the state-directory lock, and the leftovers of an earlier run.

Every child gets two marker variables: ``NODEHOST_MANAGED=<state-dir>`` and
``NODEHOST_COMPONENT=<name>``.  Its pid file ``<state-dir>/run/<name>.pid``
holds three lines: the pid, the executable (``/proc/<pid>/exe`` right after
start) and the start time (clock ticks since boot, ``/proc/<pid>/stat``); the
first line alone is a conventional pid file.  A clean stop removes it.

At start, a pid file left behind means the earlier host died without
stopping.  Its process is a leftover -- and is ended -- only if it is alive,
its executable and start time match the record and its environment holds
the marker for this state directory: a recycled pid belonging to anything
else is never touched.  Processes of those components that carry both
markers (descendants in or out of the process group, which have no pid file
of their own) are ended too.  Pid files are written with a rename but without
fsync: after a power loss no process survives to be found anyway.

Root writes here, so nothing in ``run/`` is opened through a symlink (the
lock file with ``O_NOFOLLOW``, a pid file's temporary with ``O_EXCL``), pid
files are read without following one, and a state directory (or ``run``
folder) that is a symlink or writable by group or others is refused (exit 1),
as is an entry of ``run/`` nodehost writes that is a directory, FIFO, socket
or device.  The temporaries a killed run left are removed at the next start
and by a teardown (:func:`remove_temporaries`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import stat
from pathlib import Path

from nodehost.daemon import proc
from nodehost.daemon.variables import COMPONENT_VARIABLE, MARKER_VARIABLE
from nodehost.errors import RuntimeFailure
from nodehost.fileread import STATE_LIMIT, file_kind, read_file
from nodehost.frozen import frozen
from nodehost.pki.atomic import make_directories

RUN_DIRECTORY = "run"
#: How long to wait for SIGKILLed processes to disappear.
KILL_WAIT = 10.0
LOCK_FILE = "host.lock"
STATE_DIRECTORY_MODE = 0o755


def run_directory(state_dir: str) -> Path:
    return Path(state_dir) / RUN_DIRECTORY


def pid_file(state_dir: str, component: str) -> Path:
    return run_directory(state_dir) / f"{component}.pid"


def marker_environment(state_dir: str, component: str) -> dict[str, str]:
    """The variables that mark a child as this host's (see the module docstring)."""
    return {MARKER_VARIABLE: state_dir, COMPONENT_VARIABLE: component}


@frozen
class PidRecord:
    """What a pid file says about a child."""

    component: str
    pid: int
    executable: str | None
    start_time: int | None


def write_pid_file(state_dir: str, component: str, pid: int) -> PidRecord:
    """Record ``pid`` (read from /proc now) for ``component``; return the record.

    Written to a temporary file and renamed into place, so a reader never sees a
    half-written record, but not fsynced: spawning stays cheap (it is on every
    start and restart) and a pid file only describes processes of this boot.
    """
    record = PidRecord(component, pid, proc.executable(pid), proc.start_time(pid))
    path = str(pid_file(state_dir, component))
    temporary = f"{path}.tmp"
    lines = [str(pid), record.executable or "", str(record.start_time or "")]
    fd = _create_exclusive(temporary)
    try:
        os.write(fd, ("\n".join(lines) + "\n").encode())
    finally:
        os.close(fd)
    os.replace(temporary, path)
    return record


def _create_exclusive(path: str) -> int:
    """A new file at ``path`` (0644), never through a symlink or into an existing file.

    A leftover temporary file of a killed host is removed first (``unlink``
    removes a symlink itself, not its target); if something appears at
    ``path`` again before the create, ``FileExistsError`` is raised.
    """
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags, 0o644)


def remove_pid_file(state_dir: str, component: str) -> None:
    pid_file(state_dir, component).unlink(missing_ok=True)


def read_pid_files(state_dir: str) -> list[PidRecord]:
    """Every readable pid file in the run directory (malformed ones are skipped)."""
    records: list[PidRecord] = []
    folder = run_directory(state_dir)
    if not folder.is_dir():
        return records
    for path in sorted(folder.glob("*.pid")):
        with contextlib.suppress(OSError, ValueError, IndexError):
            data = read_file(path, STATE_LIMIT, follow_symlinks=False)
            lines = data.decode("utf-8").splitlines()
            executable = lines[1] if len(lines) > 1 and lines[1] else None
            started = int(lines[2]) if len(lines) > 2 and lines[2] else None
            records.append(PidRecord(path.stem, int(lines[0]), executable, started))
    return records


def is_recorded_process(record: PidRecord, state_dir: str) -> bool:
    """True only if ``record.pid`` is still the very process the record describes."""
    if record.pid <= 1 or record.pid == os.getpid() or not proc.is_alive(record.pid):
        return False
    if record.executable is None or proc.executable(record.pid) != record.executable:
        return False
    if record.start_time is not None and proc.start_time(record.pid) != record.start_time:
        return False
    return proc.environment(record.pid).get(MARKER_VARIABLE) == state_dir


def find_leftovers(state_dir: str) -> tuple[list[PidRecord], list[int]]:
    """The live processes an earlier run left: ``(verified pid records, all pids to end)``."""
    records = read_pid_files(state_dir)
    if not records:
        return [], []
    verified = [record for record in records if is_recorded_process(record, state_dir)]
    recorded_pids = {record.pid for record in records}
    components = {record.component for record in records}
    pids = {record.pid for record in verified}
    for pid in proc.all_pids():
        if pid in recorded_pids or pid == os.getpid() or not proc.is_alive(pid):
            continue
        environment = proc.environment(pid)
        if (
            environment.get(MARKER_VARIABLE) == state_dir
            and environment.get(COMPONENT_VARIABLE) in components
        ):
            pids.add(pid)
    return verified, sorted(pids)


async def end_processes(pids: list[int], grace: float) -> list[int]:
    """SIGTERM ``pids``, SIGKILL those alive after ``grace`` seconds; return the killed ones."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    alive = await wait_gone(pids, grace)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    await wait_gone(alive, KILL_WAIT)
    return alive


async def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Wait until none of ``pids`` is alive or ``timeout`` passed; return those still alive."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    delay = 0.002
    alive = [pid for pid in pids if proc.is_alive(pid)]
    while alive and loop.time() < deadline:
        await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
        delay = min(delay * 2, 0.1)
        alive = [pid for pid in alive if proc.is_alive(pid)]
    return alive


#: How deep below the state directory a killed run's temporaries are looked for: every
#: folder nodehost writes files in (``run``, ``kubelet``, ``runtime/bin`` ...).
TEMPORARY_DEPTH = 2


def remove_temporaries(state_dir: str) -> list[Path]:
    """Remove the temporary files (``.<name>.tmp-XXXXXXXX``) a killed run left in the state
    directory and its folders down to :data:`TEMPORARY_DEPTH`; return them.

    Call it holding the state directory's lock.  No symlink is followed and no
    mount point entered (a container's root filesystem is not nodehost's).
    """
    from nodehost.pki.atomic import remove_temporaries as remove_in

    base = Path(os.path.abspath(state_dir))
    removed = remove_in(base)
    folders = [base]
    for _ in range(TEMPORARY_DEPTH):
        folders = [child for folder in folders for child in _subfolders(folder)]
        for folder in folders:
            removed.extend(remove_in(folder))
    return removed


def _subfolders(folder: Path) -> list[Path]:
    """The real folders in ``folder`` (no symlinks, no mount points)."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False) and not os.path.ismount(entry.path):
                found.append(Path(entry.path))
    return found


def clear_pid_files(state_dir: str) -> None:
    """Remove every pid file, and the temporary a kill left beside one."""
    for pattern in ("*.pid", "*.pid.tmp"):
        for path in run_directory(state_dir).glob(pattern):
            path.unlink(missing_ok=True)


class UnsafeStateDirectory(Exception):
    """The state directory (or its ``run`` folder) could be changed by another user."""


def check_state_directory(state_dir: str | Path) -> None:
    """Raise :class:`UnsafeStateDirectory` unless root could trust what it writes there.

    nodehost writes pid files and component files there as root, so the
    directory must belong to root or this user and not be writable by group
    or others, and it and its ``run`` folder must be real directories (not
    symlinks); the entries of ``run`` nodehost writes must be files
    (:func:`check_run_entries`).
    """
    base = Path(os.path.abspath(state_dir))  # no trailing slash: lstat sees the link itself
    run = base / RUN_DIRECTORY
    for path in (base, run):
        _check_folder(path, os.lstat(path))
    check_run_entries(base)


#: The entries of ``run/`` that nodehost writes: each must be a regular file when present.
OWN_RUN_ENTRIES = ("*.pid", "*.tmp", LOCK_FILE, "health.address", "cgroup")


def check_run_entries(state_dir: str | Path) -> None:
    """Raise :class:`UnsafeStateDirectory` naming the first entry of ``run/`` that nodehost
    writes (:data:`OWN_RUN_ENTRIES`) and that is a directory, a FIFO, a socket or a device:
    nodehost would fail on it half-way, so it refuses before acting.  A symlink passes
    here: it is never followed (removed, replaced or refused where it is used)."""
    run = Path(state_dir) / RUN_DIRECTORY
    for pattern in OWN_RUN_ENTRIES:
        for path in sorted(run.glob(pattern)):
            with contextlib.suppress(FileNotFoundError):
                kind = file_kind(os.lstat(path).st_mode)
                if kind is not None and not path.is_symlink():  # symlinks: never followed
                    raise UnsafeStateDirectory(
                        f"state directory: {path} is {kind}, not a file nodehost wrote: remove it"
                    )


def _check_folder(path: Path, info: os.stat_result) -> None:
    """Raise :class:`UnsafeStateDirectory` unless ``info`` (from ``lstat``) is a real
    directory of root or this user that neither group nor others may write."""
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeStateDirectory(
            f"state directory: {path} is a symbolic link; nodehost writes there as root and "
            "follows none: remove it"
        )
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeStateDirectory(f"state directory: {path} is not a directory")
    if info.st_uid not in (0, os.geteuid()):
        raise UnsafeStateDirectory(
            f"state directory {path} belongs to another user (uid {info.st_uid}); "
            "choose another --state-dir"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeStateDirectory(
            f"state directory {path} is writable by group or others "
            f"(mode {stat.S_IMODE(info.st_mode):04o}); run 'chmod go-w {path}' or choose "
            "another --state-dir"
        )


def make_state_folder(state_dir: str | Path, folder: str | Path) -> bool:
    """Make ``folder`` inside ``state_dir`` (mode 0755), never through a symlink.

    The state directory is made if missing and checked as by
    :func:`check_state_directory`; each folder below it down to ``folder`` is looked at with
    ``lstat``, made if missing, and must pass the state directory's own rules
    (:func:`check_state_directory`): a symlink, a folder of another user or one
    writable by group or others raises :class:`UnsafeStateDirectory` naming it.
    Returns False, doing nothing, when ``folder`` is not inside ``state_dir``.
    """
    base = Path(os.path.abspath(state_dir))
    try:
        parts = Path(os.path.abspath(folder)).relative_to(base).parts
    except ValueError:
        return False
    make_directories(base, STATE_DIRECTORY_MODE)
    _check_folder(base, os.lstat(base))  # the state directory itself, as check_state_directory
    current = base
    for part in parts:
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(current, STATE_DIRECTORY_MODE)
            info = os.lstat(current)
            if stat.S_ISDIR(info.st_mode):
                os.chmod(current, STATE_DIRECTORY_MODE)  # whatever the umask
                info = os.lstat(current)
        _check_folder(current, info)
    return True


def last_holder(state_dir: str) -> int | None:
    """The pid ``host.lock`` names: the nodehost that holds, or last held, the state
    directory (read without following a symlink); None if there is none."""
    path = run_directory(state_dir) / LOCK_FILE
    try:
        text = read_file(path, STATE_LIMIT, follow_symlinks=False).decode("ascii").strip()
    except (OSError, ValueError):
        return None
    return int(text) if text.isdigit() else None


class StateLock:
    """An exclusive ``flock`` on ``<state-dir>/run/host.lock``: one host per state directory."""

    def __init__(self, state_dir: str) -> None:
        self.path = run_directory(state_dir) / LOCK_FILE
        self.fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise :class:`RuntimeFailure` naming the holder (or the OS error).

        The state directory is checked first (:func:`check_state_directory`,
        which refuses a lock file that is not a regular file); the lock file is
        never opened through a symlink, nor waits on whatever it is.
        """
        state_dir = self.path.parent.parent
        try:
            make_state_folder(state_dir, self.path.parent)  # nothing made through a symlink
            check_state_directory(state_dir)
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
            fd = os.open(self.path, flags, 0o644)
        except UnsafeStateDirectory as error:
            raise RuntimeFailure(str(error)) from None
        except OSError as error:
            reason = error.strerror or str(error)
            if error.errno == errno.ELOOP:
                reason = f"{self.path} is a symbolic link; remove it"
            raise RuntimeFailure(
                f"cannot use state directory {state_dir}: {reason} (see --state-dir)"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RuntimeFailure(
                f"another nodehost (pid {holder}) is running with state directory "
                f"{self.path.parent.parent}; stop it or use another --state-dir"
            ) from None
        try:
            kind = file_kind(os.fstat(fd).st_mode)
            if kind is not None:  # it was replaced after the check
                raise OSError(errno.EINVAL, f"{self.path} is {kind}; remove it")
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as error:
            os.close(fd)
            raise RuntimeFailure(
                f"cannot use state directory {state_dir}: {error.strerror or error} "
                "(see --state-dir)"
            ) from None
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

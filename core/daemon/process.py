"""Child processes: spawn, reap, stop -- with no orphans.

Layers, each covering what the one before misses:

* every child starts in its own session and process group
  (``start_new_session``), with ``PR_SET_PDEATHSIG=SIGKILL``: if the host is
  killed with SIGKILL, the kernel kills its children;
* the host is a child subreaper, so a descendant whose parent dies is
  re-parented to the host (not to init): :class:`Reaper` reaps every child,
  adopted or not, from one SIGCHLD handler;
* a stop signals the whole process group, waits the grace period, SIGKILLs
  the group, and then also kills adopted descendants that carry the
  component's marker variables (they left the group with ``setsid``); the
  stop is complete only when none of them is left;
* where cgroups are available each child runs in its own cgroup, which a
  stop empties with ``cgroup.kill`` and a guardian kills when the host dies
  (:mod:`nodehost.daemon.cgroups`);
* pid files let the next start end what a killed host left (see
  :mod:`nodehost.daemon.pidfiles`).

What a child hands over as a *workload* (it leaves the marker variables
behind and moves to the workload cgroup, as containerd's shims do through
:mod:`nodehost.daemon.workloads`) is not the child's and is left running.

How the parent-death signal is set (:class:`Launcher`): with util-linux
``setpriv --pdeathsig KILL`` when it is installed -- the child is then started
with ``vfork`` and the host does not wait for a copy of itself to run Python
code (about four times faster per child) -- else by a ``preexec_fn`` that calls
``prctl`` and exits if the host already died.  Either way the signal follows
the thread that started the child, which is always the event-loop thread.
With ``setpriv``, a host killed in the millisecond between the spawn and
``setpriv``'s ``prctl`` leaves that child running (the next start ends it).

Because the host reaps with ``waitpid(-1)``, code running in the host's
event loop must not wait for its own subprocesses (``subprocess.run``,
``asyncio.create_subprocess_exec``): their exit status may be taken by the
reaper.  An in-process component that needs a short program runs it with
``TaskContext.run_program`` (:mod:`nodehost.daemon.oneshot`), which takes the
exit status from the reaper.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nodehost.binaries import which
from nodehost.daemon import cgroups, proc
from nodehost.daemon.output import ComponentOutput, PipeReader
from nodehost.daemon.pidfiles import write_pid_file
from nodehost.daemon.variables import COMPONENT_VARIABLE, MARKER_VARIABLE

#: How long a stop waits for SIGKILLed processes to disappear before it gives up.
KILL_WAIT = 10.0
#: How long the pid-file writer waits for a child to leave the setpriv wrapper.
EXEC_WAIT = 2.0


class Reaper:
    """Reaps every child of the host from SIGCHLD and dispatches exit statuses by pid.

    Exits of unregistered pids (adopted orphans) are reaped and forgotten.
    """

    def __init__(self) -> None:
        self.callbacks: dict[int, Callable[[int], None]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        loop.add_signal_handler(signal.SIGCHLD, self.reap)

    def uninstall(self) -> None:
        if self.loop is not None:
            self.loop.remove_signal_handler(signal.SIGCHLD)
            self.loop = None

    def register(self, pid: int, on_exit: Callable[[int], None]) -> None:
        """Call ``on_exit(returncode)`` when ``pid`` exits (negative: killed by a signal)."""
        self.callbacks[pid] = on_exit

    def reap(self) -> None:
        """Collect every exited child now (never blocks)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            callback = self.callbacks.pop(pid, None)
            if callback is not None:
                callback(os.waitstatus_to_exitcode(status))


def child_environment(
    base: Mapping[str, str], extra: Mapping[str, str], markers: Mapping[str, str]
) -> dict[str, str]:
    """``base`` without the service manager's variables, plus ``extra``, plus ``markers``."""
    from nodehost.daemon.notify import SYSTEMD_ONLY_VARIABLES

    environment = {k: v for k, v in base.items() if k not in SYSTEMD_ONLY_VARIABLES}
    environment.update(extra)
    environment.update(markers)
    return environment


def _child_setup(host_pid: int) -> Callable[[], None]:
    def setup() -> None:  # runs in the child between fork and exec
        proc.set_parent_death_signal(signal.SIGKILL)
        if os.getppid() != host_pid:  # the host died before the line above
            os._exit(127)

    return setup


def _setpriv_with_pdeathsig() -> str | None:
    """The path of a ``setpriv`` that knows ``--pdeathsig`` (util-linux >= 2.33), or None."""
    path = which("setpriv")
    if path is None:
        return None
    try:
        result = subprocess.run(
            [path, "--help"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "--pdeathsig" in result.stdout else None


def resolve_program(program: str, env: Mapping[str, str]) -> str:
    """``program`` as an executable path (``PATH`` of ``env``); OSError if there is none."""
    if "/" in program:
        if not os.path.exists(program):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if not os.access(program, os.X_OK) or os.path.isdir(program):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        return program
    found = which(program, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    return found


class Launcher:
    """Starts children in their own session with ``PR_SET_PDEATHSIG=SIGKILL``.

    ``use_setpriv`` None means: use ``setpriv`` if a suitable one is installed.
    """

    def __init__(self, use_setpriv: bool | None = None) -> None:
        self.setpriv = _setpriv_with_pdeathsig() if use_setpriv in (None, True) else None
        self.settler = Settler(self.setpriv)
        self._devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    def close(self) -> None:
        os.close(self._devnull)

    def popen(
        self, argv: tuple[str, ...], env: dict[str, str], cwd: str | None, stdout: int, stderr: int
    ) -> subprocess.Popen[bytes]:
        """Start ``argv``; raise OSError (naming the program) if it cannot be executed."""
        options: dict[str, Any] = {
            "env": env,
            "cwd": cwd,
            "stdin": self._devnull,
            "stdout": stdout,
            "stderr": stderr,
            "start_new_session": True,
        }
        if self.setpriv is not None:
            resolve_program(argv[0], env)  # a clear error now, not exit 127 from setpriv
            wrapped = [self.setpriv, "--pdeathsig", "KILL", "--", *argv]
            return subprocess.Popen(wrapped, **options)
        return subprocess.Popen(list(argv), preexec_fn=_child_setup(os.getpid()), **options)


def _enter_cgroup(pid: int, cgroup: Path) -> None:
    """Move the new child ``pid`` into ``cgroup``; kill it and raise OSError if that fails."""
    try:
        cgroups.move(pid, cgroup)
    except OSError as error:
        if not proc.is_alive(pid):
            return  # it already exited: its exit status tells the rest
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        raise OSError(
            error.errno, f"cannot move it into cgroup {cgroup}: {error.strerror}"
        ) from None


class _Settling:
    """One child waiting for a :class:`Settler`: where it goes, and its two futures."""

    __slots__ = ("cgroup", "component", "moved", "pid", "recorded", "state_dir")

    def __init__(self, pid: int, cgroup: Path | None, state_dir: str, component: str) -> None:
        loop = asyncio.get_running_loop()
        self.pid, self.cgroup = pid, cgroup
        self.state_dir, self.component = state_dir, component
        self.moved: asyncio.Future[None] = loop.create_future()
        self.recorded: asyncio.Future[None] = loop.create_future()


#: Futures to complete in the loop: each with None (a result) or the error to raise.
_Outcomes = list[tuple[asyncio.Future[None], BaseException | None]]


class Settler:
    """Settles the children spawned in one event-loop iteration together, in one job of
    the loop's default executor (instead of two jobs per child, each a thread hand-off).

    The job moves each child into its cgroup (the kernel serialises the moves anyway)
    and completes every child's *moved* future -- with the child's own error if its
    move failed (the child killed; it then gets no pid file) -- then writes the pid
    file of each child that moved once it left the ``wrapper`` (``setpriv``; for at
    most :data:`EXEC_WAIT` seconds), completing that child's *recorded* future as soon
    as its file is written: a slow child holds up no other's.  A child with no cgroup
    to enter is *moved* at once, in the loop, without waiting for the job.
    """

    def __init__(self, wrapper: str | None) -> None:
        self.wrapper = wrapper
        self._waiting: list[_Settling] = []
        #: The loop whose hand-over of :attr:`_waiting` is scheduled, if one is.
        self._handing_over: asyncio.AbstractEventLoop | None = None

    def settle(
        self, pid: int, cgroup: Path | None, state_dir: str, component: str
    ) -> tuple[asyncio.Future[None], asyncio.Future[None]]:
        """Queue child ``pid`` for this iteration's job; its ``(moved, recorded)`` futures
        (*moved* done at once when there is no cgroup to enter)."""
        item = _Settling(pid, cgroup, state_dir, component)
        if cgroup is None:
            item.moved.set_result(None)
        loop = asyncio.get_running_loop()
        if self._handing_over is not loop:  # none yet, or one of a loop that closed first
            self._waiting = []
            self._handing_over = loop
            loop.call_soon(self._hand_over)
        self._waiting.append(item)
        return item.moved, item.recorded

    def _hand_over(self) -> None:
        batch, self._waiting, self._handing_over = self._waiting, [], None
        loop = asyncio.get_running_loop()
        try:
            loop.run_in_executor(None, self._settle_all, loop, batch)
        except RuntimeError as error:  # the executor shut down: no child is left waiting
            _complete([outcome for item in batch for outcome in _refused(item, error)])

    def _settle_all(self, loop: asyncio.AbstractEventLoop, batch: list[_Settling]) -> None:
        """The worker-thread job: every move, then every pid file."""
        outcomes: _Outcomes = []
        moved: list[_Settling] = []
        for item in batch:
            try:
                if item.cgroup is not None:
                    _enter_cgroup(item.pid, item.cgroup)
            except BaseException as error:
                outcomes += _refused(item, error)
            else:
                outcomes.append((item.moved, None))
                moved.append(item)
        _complete_from_thread(loop, outcomes)
        self._record_all(loop, moved)

    def _record_all(self, loop: asyncio.AbstractEventLoop, pending: list[_Settling]) -> None:
        """Write each child's pid file once it runs its own program (all polled together
        every 0.5 ms), completing the *recorded* futures of those written in each round."""
        give_up = time.monotonic() + EXEC_WAIT
        while pending:
            waiting: list[_Settling] = []
            written: _Outcomes = []
            for item in pending:
                if self._in_wrapper(item.pid, give_up):
                    waiting.append(item)
                else:
                    error = _record_pid(item.state_dir, item.component, item.pid)
                    written.append((item.recorded, error))
            _complete_from_thread(loop, written)
            pending = waiting
            if pending:
                time.sleep(0.0005)

    def _in_wrapper(self, pid: int, give_up: float) -> bool:
        """True while ``pid`` still runs the wrapper (until ``give_up``)."""
        return (
            self.wrapper is not None
            and time.monotonic() < give_up
            and proc.executable(pid) == self.wrapper
        )


def _refused(item: _Settling, error: BaseException) -> _Outcomes:
    """``item``'s outcomes when it cannot be settled: its move fails, no pid file comes."""
    return [(item.moved, error), (item.recorded, None)]


def _record_pid(state_dir: str, component: str, pid: int) -> BaseException | None:
    """Write ``component``'s pid file if ``pid`` is alive; the error, if that failed."""
    try:
        if proc.is_alive(pid):
            write_pid_file(state_dir, component, pid)
    except BaseException as error:
        return error
    return None


def _complete_from_thread(loop: asyncio.AbstractEventLoop, outcomes: _Outcomes) -> None:
    """Complete ``outcomes``' futures in ``loop`` (from a worker thread; nothing once the
    loop is closed)."""
    if not outcomes:
        return
    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
        loop.call_soon_threadsafe(_complete, outcomes)


def _complete(outcomes: _Outcomes) -> None:
    """Complete each future with its outcome (in the loop); one already done -- its
    waiter was cancelled -- is left as it is."""
    for future, error in outcomes:
        if future.done():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


#: The host's children as last read, valid until the event loop's next iteration.
_children_read: set[int] | None = None


def own_children_this_iteration() -> set[int]:
    """The host's direct children (adopted orphans included), read once per loop iteration.

    The components that stop together (all N of them when the node stops) ask in
    the same iteration, so they share one read of ``/proc/self/task/*/children``
    instead of N; the next iteration reads again.  Outside a running loop: a read.
    """
    global _children_read
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return proc.own_children()
    if _children_read is None:
        _children_read = proc.own_children()
        loop.call_soon(_forget_children_read)
    return _children_read


def _forget_children_read() -> None:
    global _children_read
    _children_read = None


class ChildProcess:
    """One run of a process component: the child, its group, its output pipes.

    ``recorded`` completes once the pid file is written (in a worker thread).
    """

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        readers: list[PipeReader],
        component: str,
        state_dir: str,
        cgroup: Path | None = None,
        *,
        settler: Settler,
    ) -> None:
        self.popen = popen
        self.cgroup = cgroup
        self.pid = popen.pid
        self.pgid = popen.pid
        self.readers = readers
        self.component = component
        self.state_dir = state_dir
        self.returncode: int | None = None
        self.exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.recorded: asyncio.Future[None] | None = None
        self.reaper: Reaper | None = None
        self.settler = settler
        self.doomed: dict[int, int] = {}

    @classmethod
    def spawn(
        cls,
        argv: tuple[str, ...],
        env: Mapping[str, str],
        cwd: str | None,
        launcher: Launcher,
        reaper: Reaper,
        output: ComponentOutput,
        component: str,
        state_dir: str,
        cgroup: Path | None = None,
    ) -> ChildProcess:
        """Start ``argv`` (from the event-loop thread), registered with ``reaper``; raise
        OSError if it cannot be executed.  :meth:`settle` puts it into ``cgroup``."""
        loop = asyncio.get_running_loop()
        out_read, out_write = os.pipe2(os.O_CLOEXEC)
        err_read, err_write = os.pipe2(os.O_CLOEXEC)
        try:
            popen = launcher.popen(argv, dict(env), cwd, out_write, err_write)
        except BaseException:
            os.close(out_read)
            os.close(err_read)
            raise
        finally:
            os.close(out_write)
            os.close(err_write)
        readers = [
            PipeReader(loop, out_read, "stdout", output),
            PipeReader(loop, err_read, "stderr", output),
        ]
        child = cls(popen, readers, component, state_dir, cgroup, settler=launcher.settler)
        child.reaper = reaper
        reaper.register(child.pid, child._on_exit)
        return child

    async def settle(self) -> None:
        """Move the child into its cgroup (in a worker thread: the loop goes on with other
        components meanwhile), then record its pid file in the background -- together
        with the other children spawned in the same loop iteration (:class:`Settler`).

        Raises OSError -- the child killed -- if it cannot be moved.  Call it right after
        :meth:`spawn`; until it returns the child may still run outside its cgroup.
        """
        moved, self.recorded = self.settler.settle(
            self.pid, self.cgroup, self.state_dir, self.component
        )
        await moved

    async def forget_pid_file(self) -> None:
        """Remove the pid file (after its writer finished, so it cannot come back)."""
        from nodehost.daemon.pidfiles import remove_pid_file

        if self.recorded is not None:
            with contextlib.suppress(Exception):
                await self.recorded
        remove_pid_file(self.state_dir, self.component)

    def _on_exit(self, returncode: int) -> None:
        self.returncode = returncode
        self.popen.returncode = returncode  # keeps subprocess from polling it again
        if not self.exited.done():
            self.exited.set_result(returncode)

    @property
    def running(self) -> bool:
        return self.returncode is None

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signum)

    def adopted_descendants(self) -> list[int]:
        """Adopted orphans carrying this component's markers, and everything below them.

        A daemon that escaped the group (containerd's shims) carries the marker;
        what it started (a container's processes) may not, and is reparented to
        the host once the daemon dies -- so every process seen below a marked
        orphan is remembered (with its start time, against pid reuse) until it
        is gone.
        """
        orphans = self._marked_orphans()
        for pid in proc.subtree(orphans) if orphans else ():
            start = proc.start_time(pid)
            if pid not in self.doomed and start is not None:
                self.doomed[pid] = start
        alive = [pid for pid, start in self.doomed.items() if proc.start_time(pid) == start]
        self.doomed = {pid: self.doomed[pid] for pid in alive}
        return alive

    def _marked_orphans(self) -> list[int]:
        found = []
        known = self.reaper.callbacks if self.reaper is not None else {}
        for pid in own_children_this_iteration():
            if pid == self.pid or pid in known:  # components' own children are not orphans
                continue
            environment = proc.environment(pid)
            if (
                environment.get(COMPONENT_VARIABLE) == self.component
                and environment.get(MARKER_VARIABLE) == self.state_dir
            ):
                found.append(pid)
        return found

    def descendants_left(self) -> bool:
        return (
            self.running
            or proc.group_exists(self.pgid)
            or (self.cgroup is not None and cgroups.populated(self.cgroup))
            or bool(self.adopted_descendants())
        )

    def kill_all(self) -> None:
        """SIGKILL the group, the adopted descendants and the whole cgroup."""
        self.signal_group(signal.SIGKILL)
        if self.cgroup is not None:
            cgroups.kill(self.cgroup)
        for pid in self.adopted_descendants():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    async def terminate(self, stop_signal: int, grace: float, force: asyncio.Event) -> bool:
        """The stop protocol; True if everything was gone within the grace period.

        Sends ``stop_signal`` to the group and to every adopted descendant,
        waits up to ``grace`` seconds (less if ``force`` is set) for all of them,
        then SIGKILLs whatever is left and waits for it to go.
        """
        if not self.descendants_left():
            self.close_output()
            return True
        self.signal_group(stop_signal)
        for pid in self.adopted_descendants():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, stop_signal)
        graceful = await self._wait_gone(grace, force)
        if not graceful:  # a graceful wait ended on "nothing left": no second look needed
            await self._kill_until_gone()
        self.close_output()
        return graceful

    async def _kill_until_gone(self) -> None:
        """SIGKILL whatever is left, again while something is, for at most ``KILL_WAIT``
        seconds per round; give up after a round that did not empty it."""
        while self.descendants_left():
            self.kill_all()
            if not await self._wait_gone(KILL_WAIT, None):
                break

    async def _wait_gone(self, timeout: float, force: asyncio.Event | None) -> bool:
        """Wait until nothing of the run is left (:meth:`descendants_left` just said so:
        True) or ``timeout`` passed or ``force`` is set (False)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if self.running:
            waiters: set[asyncio.Future[Any]] = {self.exited}
            force_wait = None
            if force is not None:
                force_wait = asyncio.ensure_future(force.wait())
                waiters.add(force_wait)
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if force_wait is not None:
                force_wait.cancel()
        delay = 0.001
        while self.descendants_left():
            if loop.time() >= deadline or (force is not None and force.is_set()):
                return False
            await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
            delay = min(delay * 2, 0.05)
        return True

    def close_output(self) -> None:
        for reader in self.readers:
            reader.close()

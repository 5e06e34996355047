"""One component at run time: prepare, start, probe, watch, restart, stop.

A :class:`ComponentSupervisor` runs the lifecycle of one planned component,
process or in-loop task alike, under one restart policy and one readiness
model.  Its states (``status()["state"]``):

``pending``   waiting for the components it starts after to be ready;
``starting``  running, readiness probe not passed yet;
``ready``     running and ready;
``backoff``   exited on its own, restarting after a delay (``crash_looping``
              once two quick exits came in a row);
``failed``    past the restart budget, or cannot be started at all -- the
              node fails;
``stopping``, ``stopped``; ``inactive`` (planned with an ``inactive_reason``:
nothing to do, ready at once).  A plan with files but nothing to run is
written once its dependencies are ready and is ready when the files are.

A process whose ``reload_files`` changed (:meth:`ComponentSupervisor.files_changed`)
gets its ``reload_signal``, or is restarted on purpose: stopped with its grace
period and started again at once -- ``starting`` until its probe passes, with
no backoff and no step towards the crash-loop limit.  A new plan for the
component (:meth:`ComponentSupervisor.replan`, a new configuration) takes the
same way: the run ends, the new plan's files are written and it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterable
from typing import Any, Protocol

from nodehost.component import ProcessSpec, ReportedProbe, StartedProbe, TaskSpec
from nodehost.daemon import ownership, pidfiles, probes
from nodehost.daemon.cgroups import AgentCgroups
from nodehost.daemon.output import ComponentOutput
from nodehost.daemon.process import ChildProcess, Launcher, Reaper, child_environment
from nodehost.daemon.reconfigure import ApplyResult
from nodehost.daemon.restart import RestartTracker
from nodehost.daemon.settings import HostSettings
from nodehost.daemon.task import HostTaskContext, TaskRun
from nodehost.plan import PlannedComponent

PENDING = "pending"
STARTING = "starting"
READY = "ready"
BACKOFF = "backoff"
FAILED = "failed"
STOPPING = "stopping"
STOPPED = "stopped"
INACTIVE = "inactive"


class HostServices(Protocol):
    """What a supervisor needs from the host that runs it."""

    settings: HostSettings
    state_dir: str
    reaper: Reaper
    launcher: Launcher
    hooks: Any
    log: Any
    force: asyncio.Event
    cgroups: AgentCgroups | None

    def supervisor(self, name: str) -> ComponentSupervisor: ...
    def changed(self, supervisor: ComponentSupervisor) -> None: ...
    def component_failed(self, supervisor: ComponentSupervisor) -> None: ...
    def files_changed(self, paths: Iterable[str]) -> None: ...
    async def apply_config(self, content: bytes, origin: str) -> ApplyResult: ...
    def call_hook(self, hook: str, **kwargs: Any) -> None: ...


def describe_exit(code: int | None, cause: str | None = None) -> str:
    """``exit code 1``, ``killed by SIGKILL``, or for a task that raised its ``cause``
    (``ValueError: boom``; ``raised an exception`` without one)."""
    if code is None:
        return cause or "raised an exception"
    if code < 0:
        return f"killed by {_signal_name(-code)}"
    return f"exit code {code}"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class ComponentSupervisor:
    """Runs one :class:`~nodehost.plan.PlannedComponent` under the host's policy."""

    def __init__(self, planned: PlannedComponent, host: HostServices) -> None:
        self.planned = planned
        self.name = planned.name
        self.spec = planned.plan.run
        self.host = host
        self.inactive = planned.plan.inactive_reason is not None
        self.state = INACTIVE if self.inactive else PENDING
        self.reason = planned.plan.inactive_reason or "" if self.inactive else ""
        self.run: ChildProcess | TaskRun | None = None
        self.task: asyncio.Task[None] | None = None
        self.tracker = RestartTracker(host.settings.restart)
        self.nudged = asyncio.Event()  # set by each line of output: probe again soon
        self.output = ComponentOutput(
            self.name, host.log, host.settings.tail_lines, host.settings.log_output, self.nudged
        )
        self.first_ready = asyncio.Event()
        self.restarts = 0
        self.ever_started = False
        self.started_at: float | None = None
        self.ready_at: float | None = None
        self.start_latency: float | None = None
        self.backoff_until: float | None = None
        self.last_exit: tuple[int | None, float, str] | None = None
        self.failure: str | None = None
        self.foreign: ownership.Ownership | None = None
        self.restart_wanted = asyncio.Event()
        self.next_plan: PlannedComponent | None = None
        if self.inactive:
            self.first_ready.set()

    # --- what others read ---------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.state in (READY, INACTIVE) and not self.problems

    @property
    def problems(self) -> tuple[str, ...]:
        """What a running task reported as wrong (see ``HostTaskContext.report``)."""
        run = self.run
        return run.context.problems if isinstance(run, TaskRun) and run.running else ()

    @property
    def pid(self) -> int | None:
        run = self.run
        return run.pid if run is not None and run.running else None

    @property
    def crash_looping(self) -> bool:
        return self.state == BACKOFF and self.tracker.crash_looping

    @property
    def healthy(self) -> bool:
        """Not failed and not crash looping (gates the systemd watchdog)."""
        return self.state != FAILED and not self.crash_looping

    def waiting_for(self) -> str:
        """A short phrase for ``STATUS=``: what this component is waiting for."""
        if self.state == PENDING:
            return f"{self.name} waits for {', '.join(self._unready_dependencies()) or 'start'}"
        if self.state == STARTING and self.spec is not None:
            return f"waiting for {self.name}: {self.spec.readiness.describe()}"
        if self.state == BACKOFF:
            return f"{self.name} restarting ({self.reason})"
        return f"{self.name} {self.state}"

    def status(self) -> dict[str, Any]:
        """The JSON-ready status of this component (``/status``)."""
        now = time.monotonic()
        until = self.backoff_until
        backoff = max(0.0, until - now) if self.state == BACKOFF and until is not None else None
        last_exit = None
        if self.last_exit is not None:
            code, when, description = self.last_exit
            last_exit = {
                "code": code,
                "description": description,
                "seconds_ago": round(now - when, 3),
            }
        return {
            "name": self.name,
            "state": self.state,
            "ready": self.ready,
            "up": self.run is not None and self.run.running,
            "pid": self.pid,
            "restarts": self.restarts,
            "crash_looping": self.crash_looping,
            "backoff_remaining_seconds": None if backoff is None else round(backoff, 3),
            "last_exit": last_exit,
            "readiness": self.spec.readiness.describe() if self.spec is not None else None,
            "reason": self.reason,
            "start_latency_seconds": self.start_latency,
            "uptime_seconds": (
                round(now - self.started_at, 3)
                if self.started_at is not None and self.pid_or_task_running()
                else None
            ),
            "after": list(self.planned.after),
            "foreign_listener": None if self.foreign is None else self.foreign.as_dict(),
            "details": self._details(),
        }

    def _details(self) -> dict[str, Any]:
        """What the task reports, else the expiry of the certificates its plan names
        (:attr:`ComponentPlan.certificates`)."""
        if isinstance(self.run, TaskRun) and self.run.context.details:
            return dict(self.run.context.details)
        sources = self.planned.plan.certificates
        if not sources:
            return {}
        from nodehost.pki.certs import certificate_expiry

        return {"certificates": [certificate_expiry(s.name, s.path, s.pem) for s in sources]}

    def pid_or_task_running(self) -> bool:
        return self.run is not None and self.run.running

    def failure_report(self) -> str:
        """The message for a failed node: the component, why, and its last output lines."""
        lines = [f"component {self.name} failed: {self.failure or self.reason}"]
        foreign = self.foreign or self._foreign_listener_now()
        if foreign is not None:
            lines.append(f"{self.name}'s readiness probe: {foreign.describe()}")
        tail = self.output.last_lines()
        if tail:
            lines.append(f"last output of {self.name}:")
            lines.extend(f"  {line}" for line in tail)
        else:
            lines.append(f"{self.name} printed nothing")
        return "\n".join(lines)

    def _foreign_listener_now(self) -> ownership.Ownership | None:
        """Who other than this component holds its probe's address now (None: nobody)."""
        spec, run = self.spec, self.run
        if spec is None:
            return None
        found = probes.foreign_listener(spec.readiness, self._owner(run))
        return found.named() if found is not None else None

    def _owner(self, run: ChildProcess | TaskRun | None) -> ownership.Owner:
        """Whose listeners count for this component: its process tree (a task's: the host's)."""
        if isinstance(run, ChildProcess):
            return ownership.Owner(run.pid, run.adopted_descendants)
        return ownership.Owner(os.getpid())

    # --- the lifecycle ------------------------------------------------------------

    def start(self) -> None:
        """Begin supervising (in the running loop)."""
        self.task = asyncio.create_task(self._supervise(), name=f"nodehost-{self.name}")
        self.task.add_done_callback(self._supervise_ended)

    def _supervise_ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        error = task.exception()
        self.host.log.error(
            "supervisor crashed", component=self.name, error=repr(error), exc_info=error
        )
        self._fail(f"internal error in the supervisor: {error!r}")

    async def _supervise(self) -> None:
        if self.inactive:
            self.host.changed(self)
            return
        await self._wait_for_dependencies()
        if not await self._write_files():
            return
        if self.spec is None:
            self.started_at = time.monotonic()
            self._mark_ready()
            return
        while True:
            if not await self._start_run():
                return
            code, run_seconds = await self._watch_run()
            if self.restart_wanted.is_set():
                self.restart_wanted.clear()
                self.restarts += 1
                if self.next_plan is not None:
                    self._adopt_next_plan()
                    return
                continue
            verdict = self.tracker.on_exit(run_seconds)
            self.host.call_hook(
                "component_exited", name=self.name, returncode=code, restarting=verdict.restart
            )
            if not verdict.restart:
                self._fail(
                    f"exited {verdict.consecutive_failures} times in a row, each run shorter "
                    f"than {self.host.settings.restart.stable_period:g}s "
                    f"(last: {self._last_exit_description()}); giving up"
                )
                return
            self._enter_backoff(verdict.delay)
            await asyncio.sleep(verdict.delay)
            self.restarts += 1

    async def _wait_for_dependencies(self) -> None:
        waiting = self._unready_dependencies()
        if waiting:
            self.reason = f"waiting for {', '.join(waiting)} to be ready"
            self.host.changed(self)
        for name in self.planned.after:
            await self.host.supervisor(name).first_ready.wait()

    def _unready_dependencies(self) -> list[str]:
        return [n for n in self.planned.after if not self.host.supervisor(n).first_ready.is_set()]

    async def _write_files(self) -> bool:
        """Write the plan's files atomically with their modes; fail the component on error.

        In a worker thread: their fsyncs do not hold up the other components' starts.
        """
        from nodehost.daemon.files import FileWriteError, write_plan_files

        files = self.planned.plan.files
        try:
            if files:
                await asyncio.to_thread(write_plan_files, files, self.host.state_dir)
        except FileWriteError as error:
            self._fail(str(error))
            return False
        return True

    async def _start_run(self) -> bool:
        spec = self.spec
        try:
            if isinstance(spec, ProcessSpec):
                child = self._spawn(spec)
                self.run = child  # from here a stop ends it, even during the settling
                await child.settle()
            else:
                assert isinstance(spec, TaskSpec)
                context = HostTaskContext(
                    self.name,
                    self.host.log,
                    self._task_status,
                    self.host.files_changed,
                    self.host.apply_config,
                    self.host.reaper,
                )
                self.run = TaskRun(spec, context, self.host.log)
        except OSError as error:
            program = spec.argv[0] if isinstance(spec, ProcessSpec) else self.name
            self._fail(f"cannot start {program}: {error.strerror or error}")
            return False
        self.ever_started = True
        self.started_at = time.monotonic()
        self.ready_at = None
        self.state = STARTING
        self.reason = f"waiting for {spec.readiness.describe()}"
        self.output.new_run(self.run.pid, self.restarts, self.tracker.crash_looping)
        self.host.log.info(
            "component started", component=self.name, pid=self.run.pid, restarts=self.restarts
        )
        self.host.call_hook("component_started", name=self.name, pid=self.run.pid)
        self.host.changed(self)
        return True

    def _spawn(self, spec: ProcessSpec) -> ChildProcess:
        state_dir = self.host.state_dir
        markers = pidfiles.marker_environment(state_dir, self.name)
        cgroups = self.host.cgroups
        if cgroups is not None:
            markers.update(cgroups.child_environment())
        environment = child_environment(os.environ, spec.env, markers)
        return ChildProcess.spawn(
            spec.argv,
            environment,
            spec.cwd,
            self.host.launcher,
            self.host.reaper,
            self.output,
            self.name,
            state_dir,
            cgroups.agent(self.name) if cgroups is not None else None,
        )

    def _task_status(self, message: str) -> None:
        self.reason = message
        self.host.changed(self)

    async def _watch_run(self) -> tuple[int | None, float]:
        """Wait for the run to end on its own or for a wanted restart (``restart_wanted``
        set: the run is stopped here); clean up what it left; ``(code, seconds)``."""
        run = self.run
        assert run is not None and self.started_at is not None
        probing = asyncio.create_task(self._probe_until_ready(run))
        restart = asyncio.create_task(self.restart_wanted.wait())
        try:
            await asyncio.wait({run.exited, restart}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            probing.cancel()
            restart.cancel()
        run_seconds = time.monotonic() - self.started_at
        if self.restart_wanted.is_set():
            await self._end_run(run)
            return run.returncode, run_seconds
        code = run.exited.result()
        self.last_exit = (code, time.monotonic(), describe_exit(code, _cause(run)))
        self.host.log.warning(
            "component exited",
            component=self.name,
            pid=run.pid,
            exit=self.last_exit[2],
            run_seconds=round(run_seconds, 3),
        )
        await self._end_run(run)
        return code, run_seconds

    async def _end_run(self, run: ChildProcess | TaskRun) -> None:
        """Make sure nothing of ``run`` is left (its group, adopted descendants; a task ended)."""
        if isinstance(run, ChildProcess):
            await run.terminate(self._stop_signal(), self._stop_grace(), self.host.force)
            await run.forget_pid_file()
            self._remove_leaves()
        else:
            await run.terminate(self._stop_grace(), self.host.force)

    def _remove_leaves(self) -> None:
        """Remove what the ended process left (:attr:`ProcessSpec.leaves`), never following
        a symlink; a directory, or a path already gone, is left alone."""
        if not isinstance(self.spec, ProcessSpec):
            return
        for path in self.spec.leaves:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
                os.unlink(path)

    async def _probe_until_ready(self, run: ChildProcess | TaskRun) -> None:
        assert self.spec is not None
        probe = self.spec.readiness
        detail = ""
        if isinstance(probe, ReportedProbe) and isinstance(run, TaskRun):
            await run.context.reported.wait()
        elif not isinstance(probe, (StartedProbe, ReportedProbe)):
            owner = self._owner(run)
            loop = asyncio.get_running_loop()
            for delay in probes.poll_delays(probe):
                began = loop.time()
                self.nudged.clear()
                passed, detail, foreign = await probes.attempt(probe, owner)
                self._note_foreign(foreign)
                if passed:
                    break
                self.reason = f"waiting for {probe.describe()} ({detail})"
                await probes.pause(delay, self.nudged, began)
        if run.running and not self.restart_wanted.is_set():  # else it exited or is stopping
            self._mark_ready()
            if probe.refresh > 0:
                await self._refresh_detail(run, detail)

    async def _refresh_detail(self, run: ChildProcess | TaskRun, detail: str) -> None:
        """Keep the ready component's detail current (``Probe.refresh``) until the run ends."""
        assert self.spec is not None
        probe = self.spec.readiness
        owner = self._owner(run)
        while True:
            reason = f"ready: {detail}"
            if reason != self.reason:
                self.reason = reason
                self.host.changed(self)
            await asyncio.sleep(probe.refresh)
            passed, detail, _ = await probes.attempt(probe, owner)
            if not passed:
                detail = f"last check failed: {detail}"

    def _note_foreign(self, foreign: ownership.Ownership | None) -> None:
        """Remember (and log once per holder) a probe answered by another process."""
        if foreign is not None and (self.foreign is None or foreign != self.foreign):
            self.host.log.warning(
                "readiness probe reached another process",
                component=self.name,
                address=foreign.address,
                holders=[holder.describe() for holder in foreign.holders],
            )
        self.foreign = foreign

    def _mark_ready(self) -> None:
        assert self.started_at is not None
        self.ready_at = time.monotonic()
        self.start_latency = round(self.ready_at - self.started_at, 6)
        self.state = READY
        self.reason = "ready"
        self.first_ready.set()
        self.host.log.info(
            "component ready", component=self.name, seconds=round(self.start_latency, 3)
        )
        self.host.call_hook("component_ready", name=self.name, seconds=self.start_latency)
        self.host.changed(self)

    def _last_exit_description(self) -> str:
        return self.last_exit[2] if self.last_exit is not None else "not started"

    def _enter_backoff(self, delay: float) -> None:
        self.state = BACKOFF
        self.backoff_until = time.monotonic() + delay
        loop = "crash loop, " if self.tracker.crash_looping else ""
        self.reason = (
            f"{loop}{self._last_exit_description()}, restart {self.restarts + 1} in {delay:.3g}s "
            f"({self.tracker.consecutive_failures} quick exit(s) in a row)"
        )
        self.host.log.info(
            "component restarting",
            component=self.name,
            delay=round(delay, 4),
            consecutive_failures=self.tracker.consecutive_failures,
        )
        self.host.changed(self)

    # --- changed files ------------------------------------------------------------

    def reads_any(self, changed: set[str]) -> list[str]:
        """The running process's ``reload_files`` among ``changed`` (see :func:`path_forms`)."""
        spec = self.spec
        if not isinstance(spec, ProcessSpec) or not isinstance(self.run, ChildProcess):
            return []
        return [path for path in spec.reload_files if path_forms(path) & changed]

    def files_changed(self, paths: list[str]) -> None:
        """Signal or restart the running process because ``paths`` (its reload files) changed.

        Nothing happens unless the process runs (``starting`` or ``ready``):
        one waiting or in backoff reads the new files when it starts.  Calls
        during a restart join it.
        """
        spec, run = self.spec, self.run
        if self.state not in (STARTING, READY) or not isinstance(run, ChildProcess):
            return
        assert isinstance(spec, ProcessSpec)
        if not run.running or self.restart_wanted.is_set():
            return
        if spec.reload_signal is not None:
            self.host.log.info(
                "files changed: signalling",
                component=self.name,
                files=paths,
                signal=_signal_name(spec.reload_signal),
                pid=run.pid,
            )
            run.signal_group(spec.reload_signal)
            return
        self.host.log.info("files changed: restarting", component=self.name, files=paths)
        self._want_restart(f"restarting: {', '.join(paths)} changed")

    def _want_restart(self, reason: str) -> None:
        """Have the supervising loop stop the current run and start again (not a failure)."""
        self.state = STARTING
        self.ready_at = None
        self.reason = reason
        self.restart_wanted.set()
        self.host.changed(self)

    # --- a new plan -----------------------------------------------------------------

    def replan(self, planned: PlannedComponent) -> None:
        """Run ``planned`` from now on (a new configuration); returns at once.

        A running process or task is restarted as for changed reload files
        (its stop protocol, then the new plan's files and a new start; no
        backoff, no step towards the crash-loop limit).  A component that is
        waiting, in backoff, failed, inactive or done writing its files starts
        over with the new plan.  The restart tracker starts afresh; the
        component is ``starting`` (or ``inactive``) until it is ready again.
        Calls while the host stops do nothing.
        """
        if self.state in (STOPPING, STOPPED):
            return
        self.next_plan = planned
        looping = self.task is not None and not self.task.done()
        self.host.log.info("new plan: restarting", component=self.name, state=self.state)
        if looping and self.state in (STARTING, READY):  # a run to end: the loop does it
            self._want_restart("restarting: its configuration changed")
            return
        if looping:
            assert self.task is not None
            self.task.cancel()  # waiting for dependencies, or in backoff: no run to end
        if self.ever_started:
            self.restarts += 1
        self._adopt_next_plan()

    def _adopt_next_plan(self) -> None:
        """Take ``next_plan`` as the plan and supervise it from the start (a new loop)."""
        planned, self.next_plan = self.next_plan, None
        assert planned is not None
        self.planned, self.spec = planned, planned.plan.run
        self.inactive = planned.plan.inactive_reason is not None
        self.tracker = RestartTracker(self.host.settings.restart)
        self.failure, self.backoff_until, self.ready_at = None, None, None
        self.state = INACTIVE if self.inactive else PENDING
        self.reason = planned.plan.inactive_reason or "" if self.inactive else "new plan"
        self.start()

    def _fail(self, message: str) -> None:
        if self.state == FAILED:
            return
        self.state = FAILED
        self.failure = message
        self.reason = message
        self.output.flush_suppressed()
        self.host.log.error("component failed", component=self.name, reason=message)
        self.host.component_failed(self)

    def _stop_grace(self) -> float:
        override = self.host.settings.stop_grace
        assert self.spec is not None
        return self.spec.stop_grace if override is None else override

    def _stop_signal(self) -> int:
        spec = self.spec
        return spec.stop_signal if isinstance(spec, ProcessSpec) else signal.SIGTERM

    async def stop(self) -> None:
        """Stop supervising and end the run; returns when every descendant is gone."""
        self.restart_wanted.clear()
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        run = self.run
        if run is not None:
            if self.state != FAILED:
                self.state = STOPPING
                self.reason = "stopping"
                self.host.changed(self)
            if isinstance(run, ChildProcess):
                graceful = await run.terminate(
                    self._stop_signal(), self._stop_grace(), self.host.force
                )
                await run.forget_pid_file()
                self._remove_leaves()
            else:
                graceful = await run.terminate(self._stop_grace(), self.host.force)
            if not graceful and self.host.force.is_set():
                self.host.log.warning("component killed: the stop was forced", component=self.name)
            elif not graceful:
                self.host.log.warning(
                    "component did not stop within its grace period; killed",
                    component=self.name,
                    grace=self._stop_grace(),
                )
        self.output.flush_suppressed()
        if self.state != FAILED:
            self.state = INACTIVE if self.inactive else STOPPED
            self.reason = self.reason if self.inactive else "stopped"
        if self.ever_started:
            self.host.log.info("component stopped", component=self.name)
            self.host.call_hook("component_stopped", name=self.name)
        self.host.changed(self)


def path_forms(path: str) -> set[str]:
    """``path`` absolute as written and with every symlink resolved: two changed-file
    names match when these sets meet (a link and its target name the same file)."""
    return {os.path.abspath(path), os.path.realpath(path)}


def _cause(run: ChildProcess | TaskRun) -> str | None:
    return run.failure if isinstance(run, TaskRun) else None

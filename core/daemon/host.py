"""The host: runs a :class:`~nodehost.plan.Plan` as a graph of supervised components.

Start: every component starts as soon as each component it names in
``after`` is ready, so independent components start together.  The node is
ready when every component is; then ``READY=1`` goes to systemd (once), and
in exit-on-ready mode the readiness summary is printed and the host stops.

Stop (SIGTERM, SIGINT, exit-on-ready, or a failed component): ``STOPPING=1``,
then each component stops once every component that starts after it has
stopped -- reverse order, independent ones in parallel.  A SIGINT during a
stop (a second SIGINT, or one after SIGTERM) forces: every remaining process
group is killed at once, each logged as killed because the stop was forced.

Before anything starts the host takes ``<state-dir>/run/host.lock`` (one host
per state directory), becomes a child subreaper, opens the agents' cgroups
and starts their guardian where it can (:mod:`nodehost.daemon.cgroups`), and
ends the leftover agents of an earlier run (:mod:`nodehost.daemon.pidfiles`).
Workloads (what an agent handed over, like containerd's shims and their
containers) are left running by a stop; ``nodehost teardown`` ends them.

A new configuration (SIGHUP re-reads the config file; a task may hand one
over with ``apply_config``) is validated, written and applied to the
components whose plan changed, and rolled back if they do not become ready
(:mod:`nodehost.daemon.reconfigure`).  Once the components are started the
host follows the node IP (:mod:`nodehost.daemon.nodeipwatch`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any, Protocol, TextIO

from nodehost.daemon import cgroups, pidfiles, proc
from nodehost.daemon.nodeipwatch import NodeIPFollower
from nodehost.daemon.notify import Notifier
from nodehost.daemon.process import Launcher, Reaper
from nodehost.daemon.reconfigure import ApplyResult, ConfigApplier, Replanner
from nodehost.daemon.settings import HostSettings
from nodehost.daemon.supervisor import ComponentSupervisor, path_forms
from nodehost.errors import EXIT_FAILURE, EXIT_OK, PluginError, RuntimeFailure
from nodehost.pki.atomic import write_atomic
from nodehost.plan import Plan

#: Grace period for ending an earlier run's leftovers (unless a stop grace is set).
LEFTOVER_GRACE = 10.0
#: How often a released guardian's pid is looked for while its exit is awaited.
GUARDIAN_RECHECK = 0.1
HEALTH_ADDRESS_FILE = "health.address"


class LifecycleHooks(Protocol):
    """The run-time hooks the host calls (the plugin facade has these methods).

    Called from the event loop with keyword arguments; they must not block.
    An exception is logged and the host carries on.
    """

    def component_started(self, *, name: str, pid: int | None) -> None: ...
    def component_ready(self, *, name: str, seconds: float) -> None: ...
    def component_exited(self, *, name: str, returncode: int | None, restarting: bool) -> None: ...
    def component_stopped(self, *, name: str) -> None: ...
    def node_ready(
        self, *, seconds: float, status_address: str | None, keeps_running: bool = True
    ) -> None: ...
    def metrics_collectors(self) -> list[tuple[str, Any]]: ...
    def plugin_failures(self) -> list[dict[str, Any]]: ...


class NoHooks:
    """Lifecycle hooks that do nothing."""

    def component_started(self, *, name: str, pid: int | None) -> None:
        """Nothing."""

    def component_ready(self, *, name: str, seconds: float) -> None:
        """Nothing."""

    def component_exited(self, *, name: str, returncode: int | None, restarting: bool) -> None:
        """Nothing."""

    def component_stopped(self, *, name: str) -> None:
        """Nothing."""

    def node_ready(
        self, *, seconds: float, status_address: str | None, keeps_running: bool = True
    ) -> None:
        """Nothing."""

    def metrics_collectors(self) -> list[tuple[str, Any]]:
        """None."""
        return []

    def plugin_failures(self) -> list[dict[str, Any]]:
        """None."""
        return []


class Host:
    """Runs one plan to its end; see the module docstring."""

    def __init__(
        self,
        plan: Plan,
        hooks: LifecycleHooks | None,
        settings: HostSettings,
        log: Any,
        out: TextIO | None = None,
        replanner: Replanner | None = None,
    ) -> None:
        self.plan = plan
        self.hooks = hooks if hooks is not None else NoHooks()
        self.settings = settings
        self.log = log
        self.out = out if out is not None else sys.stdout
        self.state_dir = plan.state_dir
        self.reaper = Reaper()
        self.launcher: Any = None
        self.force = asyncio.Event()
        self.shutdown = asyncio.Event()
        self.notifier = Notifier.from_environ() if settings.notify else Notifier(None)
        self.supervisors = {c.name: ComponentSupervisor(c, self) for c in plan.components}
        self.started_at = time.monotonic()
        self.node_ready_at: float | None = None
        self.phase = "starting"
        self.failures: list[str] = []
        self.exit_code = EXIT_OK
        self.stop_reason = ""
        self.health_address: tuple[str, int] | None = None
        self._status_text = ""
        self._check_scheduled = False
        self._timers: list[asyncio.TimerHandle] = []
        self._background: list[asyncio.Task[Any]] = []
        self.server: Any = None
        self.extra_servers: list[Any] = []
        self.profile_mode: str | None = None
        self.cgroups: cgroups.AgentCgroups | None = None
        self.cgroups_reason = "not opened yet"
        self.guardian: cgroups.Guardian | None = None
        self._guardian_gone: asyncio.Future[int] | None = None
        self._state_changed = asyncio.Event()
        self.applier = ConfigApplier(self, replanner, settings.config_rollback_after, log)
        self.node_ip = NodeIPFollower(self)

    # --- HostServices for the supervisors -------------------------------------------

    def supervisor(self, name: str) -> ComponentSupervisor:
        return self.supervisors[name]

    def call_hook(self, hook: str, **kwargs: Any) -> None:
        """Call a lifecycle hook; a plugin failure made fatal (``--strict-plugins``) fails
        the node, anything else is logged and the host carries on."""
        try:
            getattr(self.hooks, hook)(**kwargs)
        except PluginError as error:
            self.failures.append(str(error))
            self.request_stop(f"plugin failed in {hook}", EXIT_FAILURE)
        except Exception as error:
            self.log.error("lifecycle hook failed", hook=hook, error=repr(error), **kwargs)

    def changed(self, supervisor: ComponentSupervisor) -> None:
        """A component changed state: re-check the node on the next loop turn (once per turn)."""
        if not self._check_scheduled:
            self._check_scheduled = True
            asyncio.get_running_loop().call_soon(self._check_node)

    def _check_node(self) -> None:
        """Update ``STATUS=`` and see whether the node became ready."""
        self._check_scheduled = False
        if self.phase == "starting" and self.node_ready:
            self._node_became_ready()
        self._publish_status()
        self._state_changed.set()
        self._state_changed = asyncio.Event()

    async def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds -- checked whenever a component changes state --
        for at most ``timeout`` seconds; its value then."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not predicate():
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._state_changed.wait(), remaining)
        return True

    def component_failed(self, supervisor: ComponentSupervisor) -> None:
        if self.applier.absorbs(supervisor.name):  # a new configuration broke it: roll back
            self.changed(supervisor)
            return
        self.failures.append(supervisor.failure_report())
        self.request_stop(f"component {supervisor.name} failed", EXIT_FAILURE)

    def files_changed(self, paths: Iterable[str]) -> None:
        """Route changed files to every running process that lists one in ``reload_files``."""
        if self.shutdown.is_set():
            return
        changed: set[str] = set()
        for path in paths:
            changed |= path_forms(path)
        for supervisor in self.supervisors.values():
            reads = supervisor.reads_any(changed)
            if reads:
                supervisor.files_changed(reads)

    # --- state --------------------------------------------------------------------

    @property
    def node_ready(self) -> bool:
        return all(s.ready for s in self.supervisors.values())

    @property
    def healthy(self) -> bool:
        return all(s.healthy for s in self.supervisors.values())

    def _recent_lines(self, name: str) -> list[str] | None:
        supervisor = self.supervisors.get(name)
        return None if supervisor is None else supervisor.output.recent_lines()

    def status_document(self) -> dict[str, Any]:
        """The status of the host and every component (``/status``)."""
        from nodehost import __version__

        return {
            "ready": self.node_ready and self.phase == "running",
            "state": self.phase,
            "pid": os.getpid(),
            "version": __version__,
            "uptime_seconds": round(time.monotonic() - self.started_at, 3),
            "ready_after_seconds": (
                None
                if self.node_ready_at is None
                else round(self.node_ready_at - self.started_at, 6)
            ),
            "config": self.plan.config_source,
            "configuration": self.applier.status(),
            "node_ip": self.node_ip.status(),
            "state_dir": self.state_dir,
            "agents": self.agent_tracking(),
            "components": [s.status() for s in self.supervisors.values()],
            "plugin_failures": self.hooks.plugin_failures(),
        }

    def agent_tracking(self) -> dict[str, Any]:
        """How agents are kept from outliving the host (``/status``: ``agents``)."""
        if self.cgroups is None:
            return {"mechanism": "pid-files", "reason": self.cgroups_reason}
        guardian = self.guardian.pid if self.guardian is not None else None
        return {**self.cgroups.describe(), "guardian_pid": guardian}

    def status_text(self) -> str:
        """One line for ``STATUS=``: what the node is doing or waiting for."""
        if self.phase == "stopping":
            return f"stopping: {self.stop_reason}"
        waiting = [s for s in self.supervisors.values() if not s.ready]
        if not waiting:
            return f"ready: {len(self.supervisors)} component(s)"
        text = "; ".join(s.waiting_for() for s in waiting[:3])
        return text + (f"; and {len(waiting) - 3} more" if len(waiting) > 3 else "")

    def _publish_status(self) -> None:
        if not self.notifier.enabled:
            return
        text = self.status_text()
        if text != self._status_text:
            self._status_text = text
            self.notifier.status(text)

    # --- run ------------------------------------------------------------------------

    async def run(self) -> int:
        """Run the plan until stopped; return the exit code or raise :class:`RuntimeFailure`."""
        lock = pidfiles.StateLock(self.state_dir)
        lock.acquire()
        loop = asyncio.get_running_loop()
        try:
            self._remove_temporaries()
            self._make_state_folders()
            earlier = cgroups.recorded_base(self.state_dir)
            await self._look_around()
            try:
                self._install(loop)
                await self._prepare(earlier)
                self._start_components()
                self._apply_deferred_hangup()
                self.node_ip.start(loop)
                await self.shutdown.wait()
                await self.node_ip.close()
                await self._stop_components()
                await self._release_guardian()
                if self.settings.exit_on_ready:
                    await self._tear_down()
            finally:
                await self._uninstall(loop)
        finally:
            lock.release()
        if self.failures:
            raise RuntimeFailure("\n".join(self.failures))
        return self.exit_code

    def _remove_temporaries(self) -> None:
        """Remove the temporary files a killed run left in the state directory, saying so."""
        removed = pidfiles.remove_temporaries(self.state_dir)
        if removed:
            self.log.info(
                "removed temporary files a killed run left", files=[str(p) for p in removed]
            )

    def _make_state_folders(self) -> None:
        """Make every folder the plan writes in the state directory before anything starts;
        one that is unsafe (:func:`pidfiles.make_state_folder`) is a RuntimeFailure naming it."""
        for supervisor in self.supervisors.values():
            for spec in supervisor.planned.plan.files:
                try:
                    pidfiles.make_state_folder(self.state_dir, os.path.dirname(spec.path))
                except pidfiles.UnsafeStateDirectory as error:
                    raise RuntimeFailure(str(error)) from None
                except OSError as error:
                    raise RuntimeFailure(
                        f"cannot write {spec.path}: {error.strerror or error}"
                    ) from None

    async def _look_around(self) -> None:
        """Side by side in worker threads, before anything is installed: the launcher (it
        may run ``setpriv --help``, so before the reaper takes SIGCHLD) and the agents'
        cgroups (made and recorded: an fsync)."""
        launcher, opened = await asyncio.gather(
            asyncio.to_thread(Launcher),
            asyncio.to_thread(cgroups.open_cgroups, self.state_dir),
            return_exceptions=True,
        )
        if isinstance(launcher, BaseException):
            raise launcher
        if isinstance(opened, BaseException):
            launcher.close()
            raise opened
        self.launcher = launcher
        self.cgroups, self.cgroups_reason = opened

    def _install(self, loop: asyncio.AbstractEventLoop) -> None:
        proc.set_child_subreaper(True)
        self.reaper.install(loop)
        loop.add_signal_handler(signal.SIGTERM, self._on_sigterm)
        loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        loop.add_signal_handler(signal.SIGHUP, self._on_sighup)

    async def _uninstall(self, loop: asyncio.AbstractEventLoop) -> None:
        await self.node_ip.close()
        for timer in self._timers:
            timer.cancel()
        await self._release_guardian()
        if self.cgroups is not None:
            cgroups.remove_empty(self.cgroups.base)
        if self.server is not None:
            await self.server.close()
            (pidfiles.run_directory(self.state_dir) / HEALTH_ADDRESS_FILE).unlink(missing_ok=True)
        for server in self.extra_servers:
            await server.close()
        loop.remove_signal_handler(signal.SIGTERM)
        loop.remove_signal_handler(signal.SIGINT)
        loop.remove_signal_handler(signal.SIGHUP)
        self.reaper.reap()
        self.reaper.uninstall()
        if self.launcher is not None:
            self.launcher.close()
        with contextlib.suppress(OSError):
            proc.set_child_subreaper(False)
        self.notifier.close()

    async def _prepare(self, earlier: Path | None) -> None:
        """End what an earlier run left (its agents' cgroup ``earlier`` too), start the
        guardian and the servers."""
        await self._end_leftovers()
        await self._end_leftover_agent_cgroups(earlier)
        if self.cgroups is not None:
            self._start_guardian()
        else:
            self.log.info("agents tracked by pid files", reason=self.cgroups_reason)
        if self.settings.health_address is not None:
            await self._start_health_server(*self.settings.health_address)
        if self.profile_mode == "web":
            await self._start_profile_server()
        interval = self.notifier.watchdog_interval() if self.settings.watchdog else None
        if interval:
            self._background.append(asyncio.create_task(self._watchdog(interval)))
        if self.settings.ready_timeout is not None:
            loop = asyncio.get_running_loop()
            self._timers.append(loop.call_later(self.settings.ready_timeout, self._ready_timeout))

    async def _end_leftovers(self) -> None:
        """End what a killed earlier run left, saying so (which pids, how long it may take)
        before the wait, not only after it."""
        verified, pids = pidfiles.find_leftovers(self.state_dir)
        if pids:
            for record in verified:
                self.log.warning(
                    "ending a leftover of an earlier run",
                    component=record.component,
                    pid=record.pid,
                    executable=record.executable,
                )
            grace = LEFTOVER_GRACE if self.settings.stop_grace is None else self.settings.stop_grace
            below = sorted(set(pids) - {record.pid for record in verified})
            self.log.warning(
                "ending what an earlier run left: SIGTERM, then SIGKILL after the grace period",
                pids=pids,
                below_agents=below,
                processes=[f"{pid} ({proc.executable(pid) or '?'})" for pid in pids],
                grace=grace,
            )
            killed = await pidfiles.end_processes(pids, grace)
            self.log.warning("leftovers ended", pids=pids, killed=killed)
        pidfiles.clear_pid_files(self.state_dir)

    async def _end_leftover_agent_cgroups(self, earlier: Any) -> None:
        """Kill whatever is left in the agents' cgroups (this run's and the recorded one)."""
        bases = {base for base in (earlier, self.cgroups and self.cgroups.base) if base}
        for base in bases:
            agents = base / cgroups.AGENTS
            if not cgroups.populated(agents):
                continue
            self.log.warning(
                "ending leftover agents", cgroup=str(agents), pids=sorted(cgroups.pids(agents))
            )
            cgroups.kill(agents)
            await pidfiles.wait_gone(cgroups.pids(agents), pidfiles.KILL_WAIT)

    def _start_guardian(self) -> None:
        assert self.cgroups is not None
        self.guardian = cgroups.Guardian(self.cgroups, self.state_dir)
        pid = self.guardian.start()
        gone: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._guardian_gone = gone
        self.reaper.register(pid, lambda returncode: self._guardian_exited(returncode, gone))
        self.log.info("agents in cgroups", cgroup=str(self.cgroups.base), guardian=pid)

    def _guardian_exited(self, returncode: int, gone: asyncio.Future[int]) -> None:
        """A guardian exited (``gone`` completes): after a release that is all; while the
        host runs, say so and start another."""
        if not gone.done():
            gone.set_result(returncode)
        if self.guardian is None or self.shutdown.is_set():
            return
        self.guardian.close()
        self.log.warning("the agents' guardian exited; starting another", returncode=returncode)
        self._start_guardian()

    async def _tear_down(self) -> None:
        """Exit-on-ready leaves nothing behind: end the workloads too (``nodehost teardown``)."""
        from nodehost.daemon.teardown import tear_down

        grace = self.settings.stop_grace
        report = await tear_down(self.state_dir, LEFTOVER_GRACE if grace is None else grace)
        for line in report.done:
            self.log.info("teardown", done=line)
        for line in report.left:
            self.log.error("teardown incomplete", left=line)

    async def _release_guardian(self) -> None:
        """Release the guardian and wait for its exit; meanwhile the stopped components'
        empty cgroups are removed (the guardian empties and needs only their parent, the
        agents' cgroup, which :func:`cgroups.remove_empty` of the base removes later)."""
        guardian, self.guardian = self.guardian, None
        if guardian is None or guardian.pid is None:
            return
        guardian.close()
        self._remove_components_cgroups()
        await self._guardian_exit(guardian.pid)
        self.reaper.reap()

    def _remove_components_cgroups(self) -> None:
        """Remove each component's cgroup that holds no process (one that does stays, for
        the guardian's kill and :func:`cgroups.remove_empty` of the base after it)."""
        assert self.cgroups is not None  # a guardian runs only with the agents' cgroups
        for name in self.supervisors:
            cgroups.remove_empty(self.cgroups.agent(name))

    async def _guardian_exit(self, pid: int) -> None:
        """Wait for the released guardian's exit: the reaper's word for it, or -- should
        something else have reaped it -- its pid gone from ``/proc`` (checked every
        :data:`GUARDIAN_RECHECK` s), for at most ``KILL_WAIT`` seconds."""
        gone = self._guardian_gone
        loop = asyncio.get_running_loop()
        deadline = loop.time() + pidfiles.KILL_WAIT
        while gone is not None and not gone.done() and proc.is_alive(pid):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            await asyncio.wait({gone}, timeout=min(remaining, GUARDIAN_RECHECK))

    async def _start_health_server(self, host: str, port: int) -> None:
        from nodehost.daemon.endpoints import health_routes
        from nodehost.daemon.server import HttpServer

        collectors = self.hooks.metrics_collectors()
        routes = health_routes(self.status_document, collectors, self.log, self._recent_lines)
        self.server = HttpServer(routes, self.log)
        try:
            self.health_address = await self.server.start(host, port)
        except OSError as error:
            self.server = None
            raise RuntimeFailure(
                f"cannot serve health and status on {host}:{port}: "
                f"{error.strerror or error} (choose another --health-address, or "
                "--health-address=none)"
            ) from None
        bound = f"{self.health_address[0]}:{self.health_address[1]}"
        address_file = pidfiles.run_directory(self.state_dir) / HEALTH_ADDRESS_FILE
        try:
            write_atomic(address_file, f"{bound}\n".encode(), 0o644, sync_directory=False)
        except OSError as error:
            raise RuntimeFailure(
                f"cannot write {address_file}: {error.strerror or error} (see --state-dir)"
            ) from None
        self.log.info("serving health and status", address=bound)

    async def _start_profile_server(self) -> None:
        from nodehost.daemon.profile import debug_routes, web_address
        from nodehost.daemon.server import HttpServer

        host, port = web_address()
        server = HttpServer(debug_routes(), self.log)
        try:
            await server.start(host, port)
        except OSError as error:
            raise RuntimeFailure(
                f"NODEHOST_PROFILE=web: cannot listen on {host}:{port}: {error.strerror or error}"
            ) from None
        self.extra_servers.append(server)
        self.log.info("serving profiling pages", url=f"http://{host}:{port}/debug/pprof/")

    def _start_components(self) -> None:
        self.phase = "starting"
        self.log.info("starting node", components=list(self.supervisors), state_dir=self.state_dir)
        for supervisor in self.supervisors.values():
            supervisor.start()
        if self.node_ready:  # nothing to wait for (no component, or all inactive)
            self._node_became_ready()
        self._publish_status()

    def _node_became_ready(self) -> None:
        self.node_ready_at = time.monotonic()
        self.phase = "running"
        for timer in self._timers:
            timer.cancel()
        seconds = self.node_ready_at - self.started_at
        self.log.info("node ready", seconds=round(seconds, 3))
        self.notifier.ready(f"ready: {len(self.supervisors)} component(s)")
        self._status_text = ""
        self.call_hook(
            "node_ready",
            seconds=seconds,
            status_address=self.status_address(),
            keeps_running=not self.settings.exit_on_ready,
        )
        if self.settings.exit_on_ready:
            self.out.write(self.readiness_summary())
            self.out.flush()
            self.request_stop("exit on ready", EXIT_OK)

    def status_address(self) -> str | None:
        """``host:port`` of the bound health server (``nodehost status --address``), or None."""
        if self.health_address is None:
            return None
        from nodehost.config.hostport import join_host_port

        return join_host_port(self.health_address[0], str(self.health_address[1]))

    def readiness_summary(self) -> str:
        """The exit-on-ready report: each component and its time to ready."""
        assert self.node_ready_at is not None
        from nodehost.table import format_table

        rows = [("COMPONENT", "READY AFTER", "RESTARTS")]
        for name, supervisor in self.supervisors.items():
            ready_at = supervisor.ready_at
            after = "inactive" if ready_at is None else f"{ready_at - self.started_at:.3f}s"
            rows.append((name, after, str(supervisor.restarts)))
        table = "\n".join(f"  {line}" for line in format_table(rows).splitlines())
        return f"node ready after {self.node_ready_at - self.started_at:.3f}s\n{table}\n"

    def _ready_timeout(self) -> None:
        if self.phase != "starting":
            return
        timeout = self.settings.ready_timeout
        reports = [
            s.failure_report() for s in self.supervisors.values() if not s.ready and not s.failure
        ]
        self.failures.append(f"node not ready after {timeout:g}s")
        self.failures.extend(report.replace(" failed: ", " not ready: ", 1) for report in reports)
        self.request_stop("ready timeout", EXIT_FAILURE)

    async def _watchdog(self, interval: float) -> None:
        while True:
            if self.healthy and self.phase in ("starting", "running"):
                self.notifier.watchdog()
            await asyncio.sleep(interval)

    # --- a new configuration ------------------------------------------------------------

    def _on_sighup(self) -> None:
        """SIGHUP (``systemctl reload``): apply the config file as it is now."""
        if self.shutdown.is_set():
            return
        self.log.info("SIGHUP: re-reading the config file", file=self.plan.config_source)
        self._in_background(self.applier.apply(None, "SIGHUP"))

    def _apply_deferred_hangup(self) -> None:
        """A SIGHUP that came before the handler was installed (:mod:`.hangup`), now."""
        from nodehost.daemon import hangup

        if hangup.take():
            self.log.info("SIGHUP came while starting; applying the config file now")
            self._on_sighup()

    async def apply_config(self, content: bytes, origin: str) -> ApplyResult:
        """Apply ``content`` as the config file (see :mod:`nodehost.daemon.reconfigure`).

        The apply runs in a task of the host's own: cancelling the caller (a
        component restarted by this very apply) does not cancel it.
        """
        return await asyncio.shield(self._in_background(self.applier.apply(content, origin)))

    def _in_background(self, work: Coroutine[Any, Any, ApplyResult]) -> asyncio.Task[ApplyResult]:
        """``work`` as a task of the host's own (cancelled when it stops); finished ones dropped."""
        self._background = [task for task in self._background if not task.done()]
        task = asyncio.create_task(work)
        self._background.append(task)
        return task

    def notify_reloading(self, status: str) -> bool:
        """``RELOADING=1`` to systemd, once the node has been ready; whether it was sent."""
        if self.node_ready_at is None or not self.notifier.enabled:
            return False
        return self.notifier.reloading(status)

    def notify_reloaded(self) -> None:
        self.notifier.ready(self.status_text())

    # --- stop -----------------------------------------------------------------------------

    def _on_sigterm(self) -> None:
        self.request_stop("SIGTERM", EXIT_OK)

    def _on_sigint(self) -> None:
        """The first SIGINT stops the node; one during a stop (after SIGINT, SIGTERM or
        any other reason) forces it: every component is killed now, exit 1."""
        if not self.shutdown.is_set():
            self.request_stop("SIGINT", EXIT_OK)
            return
        if self.force.is_set():
            return
        first = (
            "second SIGINT" if self.stop_reason == "SIGINT" else f"SIGINT after {self.stop_reason}"
        )
        self.log.warning(f"{first}: forcing the stop, killing every component now")
        self.exit_code = EXIT_FAILURE
        self.force.set()

    def request_stop(self, reason: str, exit_code: int) -> None:
        """Begin the ordered stop (the first request's reason and exit code win)."""
        if self.shutdown.is_set():
            return
        self.stop_reason = reason
        self.exit_code = exit_code
        self.shutdown.set()

    async def _stop_components(self) -> None:
        self.phase = "stopping"
        self.log.info("stopping node", reason=self.stop_reason)
        self.notifier.stopping(f"stopping: {self.stop_reason}")
        for task in self._background:
            task.cancel()
        starting_after = self._starting_after()
        stops: dict[str, asyncio.Task[None]] = {}
        for name in reversed(list(self.supervisors)):
            dependants = [stops[other] for other in starting_after.get(name, ()) if other in stops]
            stops[name] = asyncio.create_task(self._stop_after(name, dependants))
        await asyncio.gather(*stops.values())
        self.phase = "stopped" if not self.failures else "failed"
        self.log.info("node stopped", reason=self.stop_reason)

    def _starting_after(self) -> dict[str, list[str]]:
        """For each component, the components that name it in ``after``, in plan order
        (one pass over the plan: asking every component about every other was N*N)."""
        starting_after: dict[str, list[str]] = {}
        for other, supervisor in self.supervisors.items():
            for name in dict.fromkeys(supervisor.planned.after):
                starting_after.setdefault(name, []).append(other)
        return starting_after

    async def _stop_after(self, name: str, dependants: list[asyncio.Task[None]]) -> None:
        if dependants:
            await asyncio.gather(*dependants)
        try:
            await self.supervisors[name].stop()
        except Exception as error:
            self.log.error("stopping a component failed", component=name, error=repr(error))

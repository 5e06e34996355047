"""In-loop components: a :class:`~nodehost.component.TaskSpec` coroutine as one run.

A task run looks like a process run to the supervisor: it has an exit
(``exited``), a readiness report (``reported``) and a stop (cancel, then wait
the grace period).  A task that returns exits with code 0; one that raises
exits with code None and its exception as ``Type: message`` in ``failure``
(the traceback is logged only at debug verbosity, ``-v 4`` and up).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nodehost.component import TaskSpec

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.daemon.oneshot import OneshotResult
    from nodehost.daemon.process import Reaper
    from nodehost.daemon.reconfigure import ApplyResult

ApplyConfig = Callable[[bytes, str], Awaitable["ApplyResult"]]


class HostTaskContext:
    """The :class:`~nodehost.component.TaskContext` the host gives a task."""

    def __init__(
        self,
        name: str,
        log: Any,
        on_status: Callable[[str], None],
        on_files_changed: Callable[[list[str]], None] | None = None,
        on_apply_config: ApplyConfig | None = None,
        reaper: Reaper | None = None,
    ) -> None:
        self.name = name
        self._reaper = reaper
        self.log = log
        self.reported = asyncio.Event()
        self._on_status = on_status
        self._on_files_changed = on_files_changed
        self._on_apply_config = on_apply_config
        self.details: dict[str, Any] = {}
        self.problems: tuple[str, ...] = ()

    def ready(self) -> None:
        self.reported.set()

    def status(self, message: str) -> None:
        self._on_status(message)

    def files_changed(self, paths: Iterable[str]) -> None:
        """Hand ``paths`` to the host, which signals or restarts the processes that read them."""
        if self._on_files_changed is not None:
            self._on_files_changed([str(path) for path in paths])

    async def apply_config(self, content: bytes, origin: str) -> ApplyResult:
        """Have the host apply ``content`` as the node's config file; how it ended.

        See :mod:`nodehost.daemon.reconfigure`.  Raises :class:`RuntimeError`
        when this context has no host behind it.
        """
        if self._on_apply_config is None:
            raise RuntimeError("this task context cannot apply a configuration")
        return await self._on_apply_config(content, origin)

    async def run_program(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        stdin: int | None = None,
        stdout: int | None = None,
    ) -> OneshotResult:
        """Run ``argv`` and wait for it, the exit status from the host's reaper
        (:mod:`nodehost.daemon.oneshot`)."""
        from nodehost.daemon.oneshot import run_oneshot

        return await run_oneshot(
            argv, reaper=self._reaper, timeout=timeout, stdin=stdin, stdout=stdout
        )

    def report(
        self, details: Mapping[str, Any] | None = None, problems: Sequence[str] = ()
    ) -> None:
        """Publish extra status and the component's current problems.

        ``details`` (JSON-ready) appear as the component's ``details`` in
        ``/status``; a ``certificates`` entry (a list of certificate statuses,
        see :func:`nodehost.daemon.metrics.certificate_metrics`) also
        becomes metrics.  While ``problems`` is not empty the component
        counts as not ready (``/readyz`` names the problems); an empty
        sequence clears them.
        """
        if details is not None:
            self.details = dict(details)
        self.problems = tuple(problems)
        self._on_status("; ".join(self.problems) if self.problems else "ready")


class TaskRun:
    """One run of a task component."""

    pid = None

    def __init__(self, spec: TaskSpec, context: HostTaskContext, log: Any) -> None:
        self.context = context
        self.log = log
        self.returncode: int | None = None
        self.failure: str | None = None
        self.exited: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self._run(spec), name=f"nodehost-task-{context.name}")

    async def _run(self, spec: TaskSpec) -> None:
        code: int | None = 0
        try:
            await spec.run(self.context)
        except asyncio.CancelledError:
            code = 0
            raise
        except Exception as error:
            code = None
            self.failure = f"{type(error).__name__}: {error}"
            self._log_traceback(error)
        finally:
            self.returncode = code
            if not self.exited.done():
                self.exited.set_result(code)

    def _log_traceback(self, error: Exception) -> None:
        """The traceback, at debug verbosity only: the exit description names the cause."""
        from nodehost.log import DEBUG_VERBOSITY, verbosity

        if verbosity() >= DEBUG_VERBOSITY:
            self.log.debug("component task raised", component=self.context.name, exc_info=error)

    @property
    def running(self) -> bool:
        return not self.task.done()

    async def terminate(self, grace: float, force: asyncio.Event) -> bool:
        """Cancel the task and wait up to ``grace`` seconds; True if it ended in time."""
        if self.task.done():
            return True
        self.task.cancel()
        force_wait = asyncio.ensure_future(force.wait())
        await asyncio.wait({self.task, force_wait}, timeout=grace, return_when="FIRST_COMPLETED")
        force_wait.cancel()
        if not self.task.done():
            self.log.warning(
                "component task did not end within its stop grace period; left behind",
                component=self.context.name,
                grace=grace,
            )
            return False
        return True

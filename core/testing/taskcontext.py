"""A :class:`~nodehost.component.TaskContext` that records what a task tells the host.

For testing a :class:`~nodehost.component.TaskSpec` coroutine without a host::

    context = RecordingTaskContext("my-component")
    task = asyncio.create_task(plan.run.run(context))
    await asyncio.wait_for(context.wait_ready(), 10)
    assert context.problems == ()
    assert context.statuses[-1] == "ready"

It behaves like the host's context: ``report()`` replaces the details (when
given) and the problems, and publishes a status line (the problems joined by
``; ``, or ``ready``); ``files_changed()`` is recorded, nothing restarts;
``apply_config()`` is recorded and answered ``applied`` with the next
generation, as a host answers a valid configuration.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.daemon.reconfigure import ApplyResult


class RecordingTaskContext:
    """Records ``ready()``, ``status()``, ``report()`` and ``files_changed()`` calls.

    ``log`` is a structlog logger bound to ``component=<name>`` (as the host's).
    """

    def __init__(self, name: str = "test-component") -> None:
        import structlog

        self.name = name
        self.log = structlog.get_logger("nodehost").bind(component=name)
        self.is_ready = False
        self.statuses: list[str] = []
        self.details: dict[str, Any] = {}
        self.problems: tuple[str, ...] = ()
        self.reports: list[tuple[dict[str, Any], tuple[str, ...]]] = []
        self.changed_files: list[str] = []
        self.applied_configs: list[tuple[bytes, str]] = []
        self.generation = 1
        self._ready = asyncio.Event()

    def ready(self) -> None:
        self.is_ready = True
        self._ready.set()

    def status(self, message: str) -> None:
        self.statuses.append(message)

    def report(
        self, details: Mapping[str, Any] | None = None, problems: Sequence[str] = ()
    ) -> None:
        if details is not None:
            self.details = dict(details)
        self.problems = tuple(problems)
        self.reports.append((dict(self.details), self.problems))
        self.status("; ".join(self.problems) if self.problems else "ready")

    def files_changed(self, paths: Iterable[str]) -> None:
        self.changed_files.extend(str(path) for path in paths)

    async def apply_config(self, content: bytes, origin: str) -> ApplyResult:
        """Record ``(content, origin)`` in ``applied_configs``; ``applied``, one generation on."""
        import time

        from nodehost.daemon.reconfigure import APPLIED, ApplyResult

        self.applied_configs.append((content, origin))
        self.generation += 1
        return ApplyResult(APPLIED, origin, self.generation, time.time())

    async def run_program(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        stdin: int | None = None,
        stdout: int | None = None,
    ) -> Any:
        """Run ``argv`` and wait for it (no host, so no reaper: it waits for the child); a
        ``nodehost.daemon.oneshot.OneshotResult``."""
        from nodehost.daemon.oneshot import run_oneshot

        return await run_oneshot(argv, reaper=None, timeout=timeout, stdin=stdin, stdout=stdout)

    async def wait_ready(self) -> None:
        """Return once the task called :meth:`ready` (bound it with ``asyncio.wait_for``)."""
        await self._ready.wait()

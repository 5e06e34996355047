"""Waiting for an external container runtime (CRI-O, a containerd nodehost does not run).

The ``runtime`` component then runs :func:`wait_task`: it asks the runtime
CRI's ``Version`` and ``Status`` (:class:`~nodehost.component.CriProbe`, the
check the managed containerd's readiness uses) until ``RuntimeReady`` is
true, publishing a ``STATUS=`` line per attempt that names the endpoint and
what it answered (a missing socket, a containerd whose CRI plugin is
disabled, ``RuntimeReady=false``), and reports ready; from then on the
status line shows both conditions, checked again every ``refresh`` seconds.
Past ``waitTimeout`` it logs one error naming the endpoint, the setting
that chose it and the last answer, and the run ends; the restart policy
starts the wait again, so the kubelet (which starts after ``runtime``)
never starts against a runtime it could not use, and the log always says why.
"""

from __future__ import annotations

import asyncio
import time

from nodehost.component import CriProbe, TaskContext
from nodehost.frozen import frozen
from nodehost.plugins.runtime import containerd
from nodehost.plugins.runtime.settings import External

POLL_INTERVAL = 0.5


def wait_task(external: External) -> WaitTask:
    """The wait (see the module docstring), as a value: equal for equal settings."""
    return WaitTask(external)


@frozen
class WaitTask:
    """The coroutine of the wait for ``external``'s socket."""

    external: External

    async def __call__(self, context: TaskContext) -> None:
        from nodehost.daemon.probes import check

        external = self.external
        probe = CriProbe(
            endpoint=external.endpoint, timeout=2.0, not_cri_hint=containerd.NOT_CRI_HINT
        )
        started = time.monotonic()
        while True:
            passed, detail = await check(probe)
            if passed:
                context.ready()
                await _show_status(context, probe, detail)  # ready for good; stop cancels
            waited = time.monotonic() - started
            if waited >= external.wait_timeout:
                context.log.error(
                    "container runtime is not ready for a kubelet",
                    component=context.name,
                    socket=external.socket,
                    setting=external.source,
                    timeout=f"{external.wait_timeout:g}s",
                    detail=detail,
                )
                return
            context.status(
                f"waiting for the container runtime at {external.endpoint} "
                f"({external.source}): {detail} ({waited:.0f}s of {external.wait_timeout:g}s)"
            )
            await asyncio.sleep(POLL_INTERVAL)


async def _show_status(context: TaskContext, probe: CriProbe, detail: str) -> None:
    """Keep the status line on what the runtime answers, every ``probe.refresh`` seconds."""
    from nodehost.daemon.probes import check

    while True:
        context.status(f"ready: {detail}")
        await asyncio.sleep(probe.refresh)
        passed, detail = await check(probe)
        if not passed:
            detail = f"last check failed: {detail}"

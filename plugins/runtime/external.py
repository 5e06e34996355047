"""Waiting for an external container runtime (CRI-O, a containerd nodehost does not run).

The ``runtime`` component then runs :func:`wait_task`: it polls the socket
until it accepts a connection, publishing a ``STATUS=`` line per attempt
that names the socket and why it is not there yet, and reports ready.
Past ``waitTimeout`` it logs one error naming the socket and the setting
that chose it, and the run ends; the restart policy starts the wait again,
so the kubelet (which starts after ``runtime``) never starts against a
runtime that is not there, and the log always says which socket is missing.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from nodehost.component import TaskContext, UnixProbe
from nodehost.plugins.runtime.settings import External

POLL_INTERVAL = 0.5


def wait_task(external: External) -> WaitTask:
    """The wait (see the module docstring), as a value: equal for equal settings."""
    return WaitTask(external)


@dataclass(frozen=True)
class WaitTask:
    """The coroutine of the wait for ``external``'s socket."""

    external: External

    async def __call__(self, context: TaskContext) -> None:
        from nodehost.runtime.probes import check

        external = self.external
        probe = UnixProbe(path=external.socket, timeout=2.0)
        started = time.monotonic()
        while True:
            passed, detail = await check(probe)
            if passed:
                context.status(f"container runtime {external.endpoint} accepts connections")
                context.ready()
                await asyncio.Event().wait()  # ready for good; stop cancels
            waited = time.monotonic() - started
            if waited >= external.wait_timeout:
                context.log.error(
                    "container runtime socket did not answer in time",
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

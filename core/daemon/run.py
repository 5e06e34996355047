"""``run_plan``: the synchronous entry into the host."""

from __future__ import annotations

import asyncio
from typing import TextIO

from nodehost.daemon.host import Host, LifecycleHooks
from nodehost.daemon.reconfigure import Replanner
from nodehost.daemon.settings import HostSettings
from nodehost.plan import Plan


def run_plan(
    plan: Plan,
    hooks: LifecycleHooks | None = None,
    settings: HostSettings | None = None,
    *,
    out: TextIO | None = None,
    replanner: Replanner | None = None,
) -> int:
    """Run ``plan`` until the node is stopped; return the exit code.

    Returns 0 after a stop by SIGTERM/SIGINT or, with ``exit_on_ready``, once
    every component was ready (the summary goes to ``out``, default stdout);
    1 after a forced stop (a second SIGINT).  Raises
    :class:`~nodehost.errors.RuntimeFailure` -- after everything is stopped --
    when a component failed past its restart budget or could not be started,
    or the node was not ready within ``ready_timeout``: its message names the
    component, the cause and the component's last output lines.  Also raises
    it when another host holds the state directory or the health address is
    taken.  Must be called from the main thread (signal handlers).

    ``replanner`` lets the host take a new configuration while it runs
    (SIGHUP, a component's ``apply_config``); without one every attempt is
    rejected.
    """
    import gc

    from nodehost.daemon.profile import profiling
    from nodehost.log import get_logger

    gc.enable()  # off while the console script loaded (nodehost.entry); a node runs for long
    settings = settings if settings is not None else HostSettings()
    log = get_logger("nodehost")
    with profiling(log) as mode:
        return asyncio.run(_run(plan, hooks, settings, log, out, mode, replanner))


async def _run(
    plan: Plan,
    hooks: LifecycleHooks | None,
    settings: HostSettings,
    log: object,
    out: TextIO | None,
    profile_mode: str | None,
    replanner: Replanner | None,
) -> int:
    host = Host(plan, hooks, settings, log, out, replanner)
    host.profile_mode = profile_mode
    return await host.run()

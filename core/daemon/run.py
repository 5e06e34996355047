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
    from nodehost.daemon.profile import profiling
    from nodehost.log import get_logger

    start_collecting()
    settings = settings if settings is not None else HostSettings()
    log = get_logger("nodehost")
    with profiling(log) as mode:
        return asyncio.run(_run(plan, hooks, settings, log, out, mode, replanner))


def start_collecting() -> None:
    """Turn the cyclic garbage collector on for a node that runs for long, the objects made
    so far counted as old.

    The console script loads with the collector off (:mod:`nodehost.entry`), so every
    object its imports made (about 50,000 for a node) is still in the youngest generation;
    switched on as they are, the first collections walk them all, and again as they move
    up (about 20 M instructions of ``start --exit-on-ready``).  Moved to the oldest
    generation first (``gc.freeze`` then ``gc.unfreeze``), they are walked by full
    collections only, and the garbage among them is freed there as before.  Nothing is
    moved when something is frozen already (an embedding program's, or an earlier run's
    in the same process): unfreezing would thaw it too.
    """
    import gc

    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
    gc.enable()


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

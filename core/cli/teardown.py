"""``nodehost teardown``: end everything nodehost started for a state directory.

A stop (SIGTERM, ``systemctl stop``) ends nodehost's agents and leaves the
workloads -- containers and their shims -- running, so that a new start
reconnects to them; this command is the explicit end of everything, as
``k3s-killall.sh`` is for k3s.  The steps are :mod:`nodehost.daemon.teardown`'s.
"""

from __future__ import annotations

from typing import Any

import click

from nodehost.cli.options import plugin_options

_GRACE_HELP = "How long processes get between SIGTERM and SIGKILL (Go syntax: 10s, 1m)."


@click.command()
@click.option(
    "--state-dir",
    metavar="DIR",
    help="nodehost's state directory, as for 'start' (env NODEHOST_STATE_DIR).",
)
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    help="The node config: also remove the CNI files of its network, as 'network cleanup' does.",
)
@click.option("--grace", default="10s", show_default=True, metavar="DURATION", help=_GRACE_HELP)
@plugin_options
def teardown(
    state_dir: str | None, config_path: str | None, grace: str, **plugin_flags: Any
) -> None:
    """End everything nodehost started for a state directory, containers included.

    Ends the agents a killed nodehost left, then the workloads (containerd's
    shims and every container below them: SIGTERM, the grace period, SIGKILL),
    removes the cgroups they emptied, unmounts what is mounted below the state
    directory and removes the CNI state nodehost recorded (with --config, as
    'nodehost network cleanup' does).  Prints one line per thing ended or
    removed.  Exit 0 when nothing is left, 1 when something could not be ended
    or nodehost is running on the state directory (stop it first).
    """
    import asyncio
    import os

    from nodehost.config.goduration import flag_duration
    from nodehost.daemon.pidfiles import StateLock
    from nodehost.daemon.teardown import tear_down
    from nodehost.errors import RuntimeFailure
    from nodehost.plan import default_state_dir

    seconds = flag_duration(grace, "--grace") or 0.0
    state = default_state_dir(state_dir)
    if os.path.lexists(state) and not os.path.isdir(state):
        from nodehost.errors import UsageError

        raise UsageError(f"{state} is not a directory", "--state-dir")
    if not os.path.isdir(state):
        click.echo(f"nothing to tear down: {state} does not exist")
        return
    if not state_dir and not os.environ.get("NODEHOST_STATE_DIR"):
        click.echo(_default_notice(state))
    lock = StateLock(state)
    lock.acquire()
    try:
        report = asyncio.run(tear_down(state, seconds, ledgers_too=config_path is None))
        if config_path is not None:
            from nodehost.cli.network import cleanup_lines

            report.done.extend(cleanup_lines(config_path, state_dir, plugin_flags))
    finally:
        lock.release()
    for line in report.done or [f"nothing was running for {state}"]:
        click.echo(line)
    if report.left:
        raise RuntimeFailure("teardown incomplete: " + "; ".join(report.left))


def _default_notice(state: str) -> str:
    """Say, before acting, that ``state`` is the machine-wide default and whose it is."""
    from nodehost.daemon import proc
    from nodehost.daemon.pidfiles import last_holder

    holder = last_holder(state)
    if holder is None:
        owner = "no nodehost has held it"
    elif proc.is_alive(holder):
        owner = f"its lock names pid {holder} ({proc.executable(holder) or '?'})"
    else:
        owner = f"last used by nodehost pid {holder}, which is not running"
    return (
        f"tearing down {state}: the default state directory (no --state-dir or "
        f"NODEHOST_STATE_DIR given); {owner}"
    )

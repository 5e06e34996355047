"""``nodehost debug``: helping a maintainer see what happened on a node."""

from __future__ import annotations

import os
from typing import Any

import click

from nodehost.cli.options import plugin_options


@click.group()
def debug() -> None:
    """Collect what a maintainer needs to debug a node."""


@debug.command()
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write the bundle here (default: nodehost-debug-<host>-<UTC time>.tar.gz).",
)
@click.option(
    "--config",
    "config_path",
    envvar="NODEHOST_CONFIG",
    metavar="FILE",
    help="The node config, as for 'start' (env NODEHOST_CONFIG).",
)
@click.option(
    "--state-dir",
    envvar="NODEHOST_STATE_DIR",
    metavar="DIR",
    help="As for 'start' (env NODEHOST_STATE_DIR).",
)
@click.option(
    "--health-address",
    envvar="NODEHOST_HEALTH_ADDRESS",
    metavar="HOST:PORT",
    help="Where the running nodehost serves /status; 'none' to skip (default, and with "
    "port 0: the address it recorded in the state directory, else the default of 'start').",
)
@plugin_options
def bundle(
    output: str | None,
    config_path: str | None,
    state_dir: str | None,
    health_address: str | None,
    **plugin_flags: Any,
) -> None:
    """Write one tar.gz of what a maintainer needs, every secret redacted.

    Versions (nodehost, Python, kernel, distribution, the plan's programs),
    'nodehost check --json', /status,
    /metrics and each component's recent output (from the running nodehost),
    the effective config, its plan and the files it writes, the kubeconfig it
    names, addresses, routes, links, the CNI and KUBE iptables chains and the
    node's cgroup tree.  Tokens, passwords, private keys, bootstrap
    credentials and registry auth are replaced by <redacted>.  What cannot be
    collected is listed in the bundle's README.txt.  Exit 0 when written; 2
    when FILE exists; 1 when it cannot be written.
    """
    from nodehost.bundle.collect import BundleSources, collect, write_bundle
    from nodehost.errors import RuntimeFailure, UsageError
    from nodehost.plan import default_state_dir

    path, top = _output(output)
    if os.path.lexists(path):
        raise UsageError(f"{path} exists; choose another file", "-o")
    state = default_state_dir(state_dir)
    sources = BundleSources(config_path, state, _health(health_address, state), plugin_flags)
    collected = collect(sources)
    try:
        write_bundle(collected, path, top)
    except OSError as error:
        raise RuntimeFailure(f"cannot write {path}: {error.strerror or error}") from None
    missing = f"; {len(collected.notes)} not collected, see README.txt" if collected.notes else ""
    click.echo(f"wrote {path} ({len(collected.entries)} entries{missing})")


def _output(output: str | None) -> tuple[str, str]:
    """The bundle's path and the folder its entries sit in."""
    import socket
    import time

    top = f"nodehost-debug-{socket.gethostname()}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    if output is None:
        return os.path.abspath(f"{top}.tar.gz"), top
    return os.path.abspath(output), top


def _health(given: str | None, state_dir: str) -> tuple[str, int] | None:
    """``--health-address``, else (or with port 0, which ``start`` makes the kernel pick) the
    address the running host recorded, else ``start``'s default."""
    from nodehost.cli.options import parse_address_flag
    from nodehost.daemon.host import HEALTH_ADDRESS_FILE
    from nodehost.daemon.pidfiles import run_directory
    from nodehost.daemon.settings import DEFAULT_HEALTH_ADDRESS

    if given is not None:
        if given.strip().lower() in ("none", "off", ""):
            return None
        address = parse_address_flag(given, "--health-address")
        if address[1] != 0:
            return address
    recorded = run_directory(state_dir) / HEALTH_ADDRESS_FILE
    try:
        text = recorded.read_text().strip()
    except OSError:
        text = DEFAULT_HEALTH_ADDRESS
    return parse_address_flag(text, "--health-address")

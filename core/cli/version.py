"""``nodehost version``: nodehost's version; with a config, every program its plan would run.

``nodehost version`` alone is answered by :mod:`nodehost.entry` without
loading anything.  With ``--config`` (or ``NODEHOST_CONFIG``, as the service
has it) or ``--json`` it also reports Python, the kernel and the distribution,
and -- when there is a config -- plans the node as ``start`` would and asks
each program for its version (:mod:`nodehost.versions`).
"""

from __future__ import annotations

import json
from typing import Any

import click

from nodehost.cli.options import load_inventory, plugin_options


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.option(
    "--config",
    "config_path",
    envvar="NODEHOST_CONFIG",
    metavar="FILE",
    help="The node config whose programs to report, as for 'start' (env NODEHOST_CONFIG).",
)
@click.option(
    "--binary",
    "binaries",
    multiple=True,
    envvar="NODEHOST_BINARY",
    metavar="NAME=PATH",
    help="As for 'start': run PATH for program NAME (env NODEHOST_BINARY).",
)
@click.option(
    "--standins",
    type=click.Choice(["never", "missing", "always"]),
    default="never",
    envvar="NODEHOST_STANDINS",
    help="As for 'start' (env NODEHOST_STANDINS).",
)
@click.option("--state-dir", envvar="NODEHOST_STATE_DIR", metavar="DIR", help="As for 'start'.")
@plugin_options
def version(
    as_json: bool,
    config_path: str | None,
    binaries: tuple[str, ...],
    standins: str,
    state_dir: str | None,
    **plugin_flags: Any,
) -> None:
    """Print nodehost's version, and with a config those of the programs it would run.

    With --config FILE (or NODEHOST_CONFIG): nodehost, Python, kernel and
    distribution, then one line per program the node's plan runs (kubelet,
    kube-proxy, containerd, ...) and per program those run (runc, the CNI
    plugins), found as 'start' finds them (--binary, PATH, --standins), with
    the first line each prints for --version.  A program that cannot be found
    is reported, not fatal.  Exit 0; 255 for an invalid config.
    """
    from nodehost.entry import version_line
    from nodehost.versions import as_dict, host_versions

    if not as_json and config_path is None:
        click.echo(version_line())
        return
    host = host_versions()
    programs = None
    failures: list[str] = []
    if config_path is not None:
        programs, failures = _programs(config_path, binaries, standins, state_dir, plugin_flags)
    if as_json:
        document = as_dict(host, programs)
        document["unplanned"] = failures
        click.echo(json.dumps(document, indent=2))
        return
    for name, value in host.items():
        click.echo(f"{name}: {value}")
    for program in programs or []:
        click.echo(program.render())
    for failure in failures:
        click.echo(f"not planned: {failure}")


def _programs(
    config_path: str,
    binaries: tuple[str, ...],
    standins: str,
    state_dir: str | None,
    plugin_flags: dict[str, Any],
) -> tuple[list[Any], list[str]]:
    """The plan's programs with their versions, and each component left out of the plan (why)."""
    import os

    from nodehost.binaries import parse_binary_overrides
    from nodehost.errors import RuntimeFailure
    from nodehost.options import StartOptions
    from nodehost.plan import build_plan, default_state_dir
    from nodehost.resolve import resolve_config, selection_for
    from nodehost.versions import plan_programs

    inventory = load_inventory(**plugin_flags)
    options = StartOptions(
        config=config_path,
        config_dir=os.path.dirname(os.path.abspath(config_path)),
        state_dir=state_dir,
    )
    resolved = resolve_config(options, inventory, selection_for(options, inventory))
    failures: list[RuntimeFailure] = []
    plan = build_plan(
        inventory,
        resolved,
        options,
        state_dir=default_state_dir(state_dir),
        overrides={},
        resolve_programs=False,
        require_active=False,
        host_failures=failures,
    )
    overrides = parse_binary_overrides(binaries)
    programs = plan_programs(plan, inventory, overrides, standins)  # type: ignore[arg-type]
    return programs, [str(failure) for failure in failures]

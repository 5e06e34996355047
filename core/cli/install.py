"""``nodehost install`` and ``nodehost uninstall``: the node as a systemd service.

``install`` takes ``start``'s own options (the same click objects, so help,
types and checks are one definition) except those that make ``start`` stop
early, and writes the ones given on the command line as ``NODEHOST_*``
variables.  The work is :mod:`nodehost.install`'s.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from nodehost.cli.pluginoptions import PluginOption, PluginOptionsCommand
from nodehost.cli.start import start

#: ``start`` options that make no sense for a service (they make ``start`` stop early).
NOT_FOR_A_SERVICE = frozenset(
    {"dry_run", "as_json", "write_config", "write_flags", "exit_on_ready", "extra_args"}
)
#: The plugin-loading options are read from these variables, not ``NODEHOST_<FLAG>``.
PLUGIN_VARIABLES = {
    "disable_plugins": "NODEHOST_DISABLE_PLUGINS",
    "no_plugins": "NODEHOST_NO_PLUGINS",
    "strict_plugins": "NODEHOST_STRICT_PLUGINS",
}
#: ``start``'s own options for a service; the plugins' follow (:class:`PluginOptionsCommand`).
SERVICE_OPTIONS = [
    param
    for param in start.host_params
    if isinstance(param, click.Option) and param.name not in NOT_FOR_A_SERVICE
]


@click.command(cls=PluginOptionsCommand, params=list(SERVICE_OPTIONS))
@click.option(
    "--dry-run",
    "print_only",
    is_flag=True,
    help="Print the unit and environment file, write nothing.",
)
@click.option("--now", is_flag=True, help="Also start the service (where systemd runs).")
@click.option("--force", is_flag=True, help="Overwrite a unit or environment file changed locally.")
@click.pass_context
def install(ctx: click.Context, print_only: bool, now: bool, force: bool, **flags: Any) -> None:
    """Install nodehost as a systemd service started with START's flags.

    Writes /etc/systemd/system/nodehost.service (the unit in contrib/systemd,
    running this nodehost) and /etc/default/nodehost (the flags given here as
    NODEHOST_* variables), then, where systemd is the init system, runs
    'systemctl daemon-reload' and 'systemctl enable' (--now: and starts it).
    Elsewhere it writes the files and says how to enable them.  Running it
    again with the same flags changes nothing; a file changed since nodehost
    wrote it is kept unless --force.  Exit 0 done, 1 failure, 2 usage error.
    """
    from nodehost.install import ENVIRONMENT_PATH, UNIT_PATH
    from nodehost.install.files import environment_text, unit_text

    _check_as_start_would(ctx, flags)
    try:
        environment = environment_text(_variables(ctx, flags))
    except ValueError as error:
        from nodehost.errors import UsageError

        raise UsageError(str(error)) from None
    unit = unit_text(_nodehost_executable())
    if print_only:
        click.echo(f"# {UNIT_PATH}\n{unit}\n# {ENVIRONMENT_PATH}\n{environment}", nl=False)
        return
    _install(unit, environment, now, force)


def _install(unit: str, environment: str, now: bool, force: bool) -> None:
    from nodehost.errors import RuntimeFailure
    from nodehost.install import ENVIRONMENT_PATH, UNIT_NAME, UNIT_PATH
    from nodehost.install.files import write_owned_file
    from nodehost.install.systemd import init_name, systemctl, systemd_running

    written = [
        write_owned_file(
            UNIT_PATH,
            unit,
            0o644,
            force,
            "keep local changes in a drop-in ('systemctl edit nodehost')",
        ),
        write_owned_file(
            ENVIRONMENT_PATH,
            environment,
            0o600,
            force,
            "give the flags to 'nodehost install' instead",
        ),
    ]
    for result in written:
        click.echo(f"{result.outcome} {result.path}")
    changed = any(result.outcome != "unchanged" for result in written)
    if not systemd_running():
        click.echo(
            f"systemd is not the init system here (PID 1 is {init_name()}): {UNIT_NAME} is "
            "written but not enabled; where systemd runs: "
            "systemctl daemon-reload && systemctl enable --now nodehost"
        )
        return
    steps: list[tuple[str, ...]] = [("daemon-reload",)] if changed else []
    steps.append(("enable", "--now", UNIT_NAME) if now else ("enable", UNIT_NAME))
    for step in steps:
        failure = systemctl(*step)
        if failure is not None:
            raise RuntimeFailure(failure)
        click.echo("systemctl " + " ".join(step))
    if changed and systemctl("is-active", "--quiet", UNIT_NAME) is None:
        click.echo(f"{UNIT_NAME} is running: 'systemctl restart nodehost' applies the change")


def _check_as_start_would(ctx: click.Context, flags: dict[str, Any]) -> None:
    """Refuse what ``start`` would refuse at once (a usage error, exit 2), before any file."""
    from nodehost.cli.start import _host_settings, start_options
    from nodehost.options import check_start_options

    complete = {
        "dry_run": False,
        "as_json": False,
        "write_config": None,
        "write_flags": False,
        "exit_on_ready": False,
        "extra_args": (),
        **flags,
    }
    check_start_options(start_options(ctx, complete))
    _host_settings(complete)


def _variables(ctx: click.Context, flags: dict[str, Any]) -> dict[str, str]:
    """The options given on the command line as ``NODEHOST_*`` variables ``start`` reads."""
    variables = {}
    plugins = [param for param in ctx.command.params if isinstance(param, PluginOption)]
    for param in [*SERVICE_OPTIONS, *plugins]:
        name = param.name or ""
        source = ctx.get_parameter_source(name)
        if source is not click.core.ParameterSource.COMMANDLINE:
            continue
        variable = PLUGIN_VARIABLES.get(name) or param.envvar
        assert isinstance(variable, str), name  # start gives each option its variable
        variables[variable] = _value(param, flags[name], name)
    return variables


def _value(param: click.Option, value: Any, name: str) -> str:
    from nodehost.errors import UsageError

    flag = max(param.opts, key=len)
    if param.is_flag:
        return "1" if value else "0"
    if param.multiple:
        if name in PLUGIN_VARIABLES:
            return ",".join(value)
        if any(not item or len(item.split()) != 1 for item in value):
            raise UsageError("a value of a repeated flag cannot hold spaces in a service", flag)
        return " ".join(str(item) for item in value)
    return str(value)


def _nodehost_executable() -> str:
    """The ``nodehost`` program beside this Python (a virtualenv's), else the one on PATH."""
    from nodehost.binaries import which

    beside = os.path.join(os.path.dirname(sys.executable), "nodehost")
    if os.access(beside, os.X_OK):
        return beside
    found = which("nodehost")
    if found is None:
        from nodehost.errors import RuntimeFailure

        raise RuntimeFailure("cannot find the nodehost program for the unit's ExecStart")
    return os.path.abspath(found)


@click.command()
@click.option("--purge", is_flag=True, help="Also remove the state directory and node folder.")
@click.option(
    "--purge-volumes",
    is_flag=True,
    help="Also delete the pod volume data under the kubelet root (kept otherwise).",
)
@click.option(
    "--grace",
    default="10s",
    show_default=True,
    metavar="DURATION",
    help="How long processes get between SIGTERM and SIGKILL (Go syntax: 10s, 1m).",
)
def uninstall(purge: bool, purge_volumes: bool, grace: str) -> None:
    """Stop and remove the nodehost service and tear the node down.

    Stops and disables the service, ends everything nodehost started (as
    'nodehost teardown'), unmounts what is mounted under the kubelet root and
    removes the unit and /etc/default/nodehost.  --purge also removes the state
    directory and the node folder.  Pod volume data under the kubelet root is
    kept unless --purge-volumes.  Prints what it removed, what it kept and why.
    Safe to run again after a failed or interrupted run.  Exit 0 done, 1 when
    something could not be removed (the lines say what).
    """
    from nodehost.config.goduration import flag_duration
    from nodehost.errors import RuntimeFailure
    from nodehost.install.uninstall import UninstallOptions
    from nodehost.install.uninstall import uninstall as run_uninstall

    options = UninstallOptions(
        purge=purge, purge_volumes=purge_volumes, grace=flag_duration(grace, "--grace")
    )
    report = run_uninstall(options)
    for line in report.removed or ["nothing to remove: nodehost is not installed here"]:
        click.echo(line)
    for line in report.kept:
        click.echo(f"kept: {line}" if not line.startswith(("pod volume", "/")) else line)
    if report.failed:
        raise RuntimeFailure("uninstall incomplete (run it again): " + "; ".join(report.failed))

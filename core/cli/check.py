"""``nodehost check``: is this host fit to run the selected components?

Takes ``start``'s config sources and selection flags (:func:`config_options`,
the same options, variables and defaults), resolves and validates the config
and builds the plan as ``start`` does -- without effects: a config generated
from flags is generated in memory, nothing is written or started -- then
prints every plugin's checks (``nodehost_checks``; :mod:`nodehost.check`).
A config that ``start`` obtains (bootstrap, ``--local-cluster``) is judged
as an earlier start left it in ``--config-dir``; before any, one ``config``
line says it cannot be checked yet.

Exit 0 without errors (warnings allowed), 1 with any error, 2 for usage
errors and 255 for an invalid config; with ``--json`` those are a JSON
document too (``{"checks": [], "error": {...}}``).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import click

from nodehost.cli.options import echo_warnings, logging_options, plugin_options
from nodehost.cli.pluginoptions import PluginOptionsCommand
from nodehost.cli.start import (
    ENVIRONMENT_PREFIX,
    config_options,
    show_environment_variables,
    start_options,
)

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.check import Check

#: The file a bootstrap leaves in ``--config-dir``: what a later ``check`` judges.


@click.command(
    cls=PluginOptionsCommand, context_settings={"auto_envvar_prefix": ENVIRONMENT_PREFIX}
)
@config_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (errors too).")
@plugin_options
@logging_options
@click.pass_context
def check(ctx: click.Context, as_json: bool, **flags: Any) -> None:
    """Check that this host can run the selected components.

    One line per check: its name, ok/warning/error/skipped, what was found
    and the fix.  Each check comes from the plugin of the component that
    needs it.  `nodehost start` runs the checks that can make it fail before
    it starts anything (see --ignore-preflight-errors).

    Exit 0 without errors, 1 with any error, 2 usage error, 255 invalid config.
    """
    from nodehost.errors import NodehostError

    try:
        checks = _run_checks(ctx, flags, quiet=as_json)
    except NodehostError as error:
        if not as_json:
            raise
        failure = {"exit_code": error.exit_code, "message": error.render()}
        click.echo(json.dumps({"checks": [], "error": failure}, indent=2))
        raise click.exceptions.Exit(error.exit_code) from None
    _echo(checks, as_json)
    raise click.exceptions.Exit(1 if any(check.is_error for check in checks) else 0)


show_environment_variables(check)


def _run_checks(ctx: click.Context, flags: dict[str, Any], *, quiet: bool) -> list[Check]:
    """The config resolved with no effects, the plan, and every check."""
    import dataclasses

    from nodehost.check.run import host_checks, plan_for_checks
    from nodehost.cli.start import load_for_start
    from nodehost.options import check_start_options
    from nodehost.pki.nodeconfig import NODE_CONFIG_FILE
    from nodehost.resolve import resolve_config

    options = start_options(ctx, flags)
    check_start_options(options)
    options, overrides, inventory, selected = load_for_start(options, flags)
    unobtained = inventory.host.hooks.describe_config(options)
    if unobtained is not None:
        earlier = os.path.join(options.config_dir, NODE_CONFIG_FILE)
        if not os.path.isfile(earlier):
            return [_unobtained(unobtained)]
        options = dataclasses.replace(options, config=earlier)
    # The node IP is chosen by its own check (a line, not a failure before every check).
    resolved = resolve_config(
        dataclasses.replace(options, dry_run=True), inventory, selected, choose_ip=False
    )
    if not quiet:
        echo_warnings(resolved.config.source, resolved.warnings)
    plan, lines = plan_for_checks(
        inventory, resolved, options, overrides, options.standins or "never"
    )
    return lines + host_checks(inventory, resolved, options, plan, preflight=False)


def _unobtained(actions: list[str]) -> Check:
    """The one line for a config that only ``start`` obtains (bootstrap): nothing to check."""
    import dataclasses

    from nodehost.check import Check

    line = Check.skipped(
        "config",
        "the config is obtained at start, so no check can run before: " + "; ".join(actions),
    )
    return dataclasses.replace(line, plugin="nodehost")


def _echo(checks: list[Check], as_json: bool) -> None:
    from nodehost.check.run import as_document, render_table, summary_line
    from nodehost.table import terminal_width

    if as_json:
        click.echo(json.dumps(as_document(checks), indent=2))
        return
    if checks:
        click.echo(render_table(checks, terminal_width()))
    click.echo(summary_line(checks))

"""``nodehost components`` and ``nodehost plugins``: what is installed and who provides it."""

from __future__ import annotations

import json
from typing import Any

import click

from nodehost.cli.options import inventory_options, load_inventory
from nodehost.table import format_table, terminal_width


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@inventory_options
def components(as_json: bool, **plugin_flags: Any) -> None:
    """List every known component: default, groups, order, provider."""
    from nodehost.pluginhost.manager import unique

    inventory = load_inventory(**plugin_flags)
    rows: list[dict[str, Any]] = []
    for item in sorted(unique(inventory.components), key=lambda item: item.record.name):
        record = item.record
        rows.append(
            {
                "name": record.name,
                "default": record.default,
                "auto": record.enable_if is not None,
                "groups": sorted({*record.groups, "all"}),
                "aliases": list(record.aliases),
                "after": list(record.after),
                "before": list(record.before),
                "requires": list(record.requires),
                "plugin": item.plugin,
                "distribution": item.distribution or "nodehost (built-in)",
                "summary": record.summary,
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    header = ("NAME", "DEFAULT", "GROUPS", "AFTER", "PLUGIN", "DISTRIBUTION")
    table = [header]
    for row in rows:
        default = (
            "auto" if row["auto"] and not row["default"] else ("on" if row["default"] else "off")
        )
        name = row["name"] + (f" ({', '.join(row['aliases'])})" if row["aliases"] else "")
        table.append(
            (
                name,
                default,
                ",".join(row["groups"]),
                _order(row),
                row["plugin"],
                row["distribution"],
            )
        )
    click.echo(format_table(table, terminal_width()))
    _echo_failures(inventory)


def _order(row: dict[str, Any]) -> str:
    """The AFTER column: what it starts after, and what it starts before if it says so."""
    after = ",".join(row["after"]) or "-"
    return after + (f" (before {','.join(row['before'])})" if row["before"] else "")


def _echo_failures(inventory: Any) -> None:
    """After a table: the plugins that failed (their components and hooks are missing)."""
    failures = inventory.host.failures()
    if failures:
        click.echo("\nfailed plugins (left out; -v 4 shows the tracebacks):")
        for info in failures:
            click.echo(f"  {info.failure_line()}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@inventory_options
def plugins(as_json: bool, **plugin_flags: Any) -> None:
    """List plugins: name, distribution, version, status and the hooks they implement."""
    inventory = load_inventory(**plugin_flags)
    infos = sorted(
        inventory.host.infos.values(), key=lambda info: (info.kind != "builtin", info.name)
    )
    if as_json:
        click.echo(json.dumps([info.as_dict() for info in infos], indent=2))
        return
    table = [("NAME", "DISTRIBUTION", "VERSION", "STATUS", "HOOKS")]
    for info in infos:
        status = info.status
        if info.error is not None:
            status += f" in {info.hook}: {info.error}" if info.hook else f": {info.error}"
        hooks = ",".join(hook.removeprefix("nodehost_") for hook in info.hooks) or "-"
        table.append((info.name, *_distribution_and_version(info), status, hooks))
    click.echo(format_table(table, terminal_width()))


def _distribution_and_version(info: Any) -> tuple[str, str]:
    """A plugin's distribution and version columns (a built-in's version is nodehost's)."""
    if info.distribution is None and info.kind == "builtin":
        from nodehost import __version__

        return "nodehost (built-in)", __version__
    return info.distribution or "-", info.version or "-"

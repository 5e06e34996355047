"""``nodehost config``: validate, show, create and describe NodeConfig files."""

from __future__ import annotations

import json
from typing import Any

import click

from nodehost.cli import LazyGroup
from nodehost.cli.options import echo_warnings, inventory_options, load_inventory

SUBCOMMANDS = {
    "create": (
        "nodehost.cli.config_create:create",
        "Generate a node folder: certificates, kubeconfig, node-config.yaml.",
    ),
}


@click.group(cls=LazyGroup, lazy=SUBCOMMANDS)
def config() -> None:
    """Validate, show, create or describe a NodeConfig (Origin's v1 node-config.yaml)."""


@config.command()
@click.argument("file")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object for machines.")
@click.option("--strict-config", is_flag=True, help="Unknown keys are errors, not warnings.")
@click.option(
    "--components",
    metavar="LIST",
    help="Validate for these components only (default: every known component).",
)
@inventory_options
def validate(
    file: str, as_json: bool, strict_config: bool, components: str | None, **plugin_flags: Any
) -> None:
    """Check FILE and print every error and warning at once.

    Exit 0 when FILE is valid (warnings allowed), 255 when it has any error.
    """
    from nodehost.errors import ConfigError, ConfigInvalid

    inventory = load_inventory(**plugin_flags)
    try:
        _, errors, warnings = judge(file, inventory, strict_config, components)
    except ConfigError as error:
        if not as_json:
            raise
        _echo_json(file, [{"path": "", "severity": "error", "message": str(error)}], [])
        raise click.exceptions.Exit(error.exit_code) from error
    if as_json:
        _echo_json(file, [p.as_dict() for p in errors], [p.as_dict() for p in warnings])
    else:
        echo_warnings(file, warnings)
    if errors:
        if as_json:
            raise click.exceptions.Exit(ConfigInvalid.exit_code)
        raise ConfigInvalid(file, errors)
    if not as_json:
        suffix = (
            f" ({len(warnings)} warning{'s' if len(warnings) != 1 else ''})" if warnings else ""
        )
        click.echo(f"{file}: valid NodeConfig{suffix}")


def judge(
    file: str, inventory: Any, strict_config: bool, components: str | None = None
) -> tuple[Any, list[Any], list[Any]]:
    """``(config, errors, warnings)`` of FILE as ``start`` judges it: every command that
    reports on a config file reports this one set of problems.  Raises
    :class:`~nodehost.errors.ConfigError` when FILE cannot be loaded at all."""
    from nodehost.options import StartOptions
    from nodehost.resolve import check_config, plan_problems, selection_for

    names = components or ",".join(inventory.catalog.names)
    options = StartOptions(config=file, components=names, strict_config=strict_config)
    selected = selection_for(options, inventory)
    node_config, scope, errors, warnings = check_config(options, inventory, selected)
    if not errors:
        errors = plan_problems(node_config, scope, options, inventory)
    return node_config, errors, warnings


def _echo_json(file: str, errors: list[dict[str, Any]], warnings: list[dict[str, Any]]) -> None:
    result = {"file": file, "valid": not errors, "errors": errors, "warnings": warnings}
    click.echo(json.dumps(result, indent=2))


@config.command()
@click.argument("file")
@click.option("--strict-config", is_flag=True, help="Unknown keys are errors, not warnings.")
@inventory_options
def show(file: str, strict_config: bool, **plugin_flags: Any) -> None:
    """Print FILE resolved: defaults applied, paths absolute, as YAML.

    An invalid FILE exits 255 with the same problems ``validate`` lists.
    """
    from nodehost.config.dump import dump_node_config
    from nodehost.errors import ConfigInvalid

    node_config, errors, warnings = judge(file, load_inventory(**plugin_flags), strict_config)
    echo_warnings(file, warnings)
    if errors:
        raise ConfigInvalid(file, errors)
    click.echo(dump_node_config(node_config), nl=False)


@config.command()
@inventory_options
def schema(**plugin_flags: Any) -> None:
    """Print a JSON Schema of NodeConfig (for editors: the YAML language server).

    Origin's keys plus every installed plugin's section, as its record describes it.
    """
    from nodehost.config.jsonschema import node_config_schema

    sections = load_inventory(**plugin_flags).section_schemas()
    click.echo(json.dumps(node_config_schema(sections), indent=2))

"""``nodehost network``: list providers, prove the pod network works, remove what nodehost created.

* ``providers`` -- every network provider the installed plugins offer;
* ``check`` -- in a throw-away namespace, run the configured CNI chain for
  real (ADD, CHECK, DEL), verify the interface, its addresses and the way to
  the gateway, clean up everything, print a report (:mod:`nodehost.cni.check`);
* ``cleanup`` -- remove the CNI configuration files and bridges nodehost
  created, as recorded in the state directory (:mod:`nodehost.cni.ledger`).

Both read the config exactly as ``start`` does (plugins, their sections,
validation) and find the network through the component that describes it
(``cni_network``), never through a provider's name.
"""

from __future__ import annotations

import os
from typing import Any

import click

from nodehost.cli.options import echo_warnings, inventory_options, load_inventory
from nodehost.errors import RuntimeFailure

_CONFIG_HELP = "The node config, read as 'nodehost start --config' reads it."
_STATE_HELP = "nodehost's state directory, as for 'start' (env NODEHOST_STATE_DIR)."


@click.group()
def network() -> None:
    """List network providers, check the pod network (CNI), or remove what nodehost made."""


@network.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@inventory_options
def providers(as_json: bool, **plugin_flags: Any) -> None:
    """List the network providers networkConfig.networkPluginName can name.

    For each: name and aliases, topology (host: routed or bridged through
    the host; l2: on a master link's layer 2), the config section it owns,
    the plugin and distribution that provide it, and its summary.
    """
    import json

    from nodehost.pluginhost.manager import unique
    from nodehost.table import format_table, terminal_width

    inventory = load_inventory(**plugin_flags)
    rows: list[dict[str, Any]] = [
        {
            "name": item.record.name,
            "aliases": list(item.record.aliases),
            "topology": item.record.topology.value,
            "config_section": item.record.config_section,
            "plugin": item.plugin,
            "distribution": item.distribution or "nodehost (built-in)",
            "summary": item.record.summary,
        }
        for item in sorted(unique(inventory.providers), key=lambda item: item.record.name)
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = [("NAME", "TOPOLOGY", "SECTION", "PLUGIN", "DISTRIBUTION", "SUMMARY")]
    for row in rows:
        name = row["name"] + (f" ({', '.join(row['aliases'])})" if row["aliases"] else "")
        section = row["config_section"] or "-"
        table.append(
            (name, row["topology"], section, row["plugin"], row["distribution"], row["summary"])
        )
    click.echo(format_table(table, terminal_width()))


@network.command()
@click.option("--config", "config_path", required=True, metavar="FILE", help=_CONFIG_HELP)
@click.option("--state-dir", metavar="DIR", help=_STATE_HELP)
@inventory_options
def check(config_path: str, state_dir: str | None, **plugin_flags: Any) -> None:
    """Prove the pod network works (needs root).

    Runs the configured CNI chain in a throw-away network namespace -- ADD,
    then CHECK, then DEL, as a container runtime does for a pod; the
    interface, its addresses and a TCP connection to the gateway are verified.
    Everything it creates is removed again.  Exit 0 when the network works, 1
    with the failing plugin's error otherwise (or without root).
    """
    from nodehost.cni.check import run_check
    from nodehost.cni.sandbox import unavailable_reason

    reason = unavailable_reason()
    if reason:
        raise RuntimeFailure(f"nodehost network check {reason}; run it as root")
    target = NetworkTarget.resolve(config_path, state_dir, plugin_flags)
    target.plan()
    pod_network = target.network()
    click.echo(f"network check: provider {pod_network.provider}, config {config_path}")
    try:
        run_check(pod_network, click.echo)
    except RuntimeFailure:
        click.echo("network check failed")
        raise
    click.echo("network check passed")


@network.command()
@click.option("--config", "config_path", required=True, metavar="FILE", help=_CONFIG_HELP)
@click.option("--state-dir", metavar="DIR", help=_STATE_HELP)
@inventory_options
def cleanup(config_path: str, state_dir: str | None, **plugin_flags: Any) -> None:
    """Remove the CNI files and bridge nodehost made.

    Removes what nodehost created for the pod network and nothing else: the
    files it recorded in the state directory and those in the configured CNI
    directory, only while they carry nodehost's marker; a bridge only if it did
    not exist before nodehost first wrote its configuration.  Stop the node
    first: attached pods lose their network.  When the config no longer
    validates (its provider's plugin was removed, say), the record in the state
    directory alone is used.
    """
    report = cleanup_lines(config_path, state_dir, plugin_flags)
    for line in report:
        click.echo(line)


def cleanup_lines(
    config_path: str, state_dir: str | None, plugin_flags: dict[str, Any]
) -> list[str]:
    """Do ``network cleanup`` and return its report lines (one saying so when nothing was left)."""
    from nodehost.cni import LEDGER_NAME
    from nodehost.cni.conflist import is_marked, network_files
    from nodehost.cni.ledger import clean_up
    from nodehost.errors import ConfigInvalid

    try:
        target = NetworkTarget.resolve(config_path, state_dir, plugin_flags)
    except ConfigInvalid as error:
        click.echo(
            f"warning: {error} ({len(error.errors)} problem(s): {error.errors[0].render()}); "
            "cleaning up from the record in the state directory only",
            err=True,
        )
        ledger, marked = _recorded_ledger(state_dir, plugin_flags), []
    else:
        ledger = os.path.join(target.context.state_dir, LEDGER_NAME)
        pod_network = target.network(required=False)
        conf_dir = pod_network.conf_dir if pod_network is not None else None
        marked = [path for path in network_files(conf_dir) if is_marked(path)] if conf_dir else []
    report = clean_up(ledger, marked)
    return report or [
        f"nothing to clean up (no CNI files or bridge of nodehost's; record: {ledger})"
    ]


class NetworkTarget:
    """The resolved config, the component that describes the network, and its plan context."""

    def __init__(self, inventory: Any, resolved: Any, options: Any, name: str, state_dir: str):
        from nodehost.plan import plan_context, plan_shared

        self.inventory = inventory
        self.resolved = resolved
        self.options = options
        self.name = name
        self.state_dir = state_dir
        shared = plan_shared(inventory, resolved, state_dir)
        self.context = plan_context(inventory, resolved, options, name, state_dir, shared)

    @classmethod
    def resolve(
        cls, config_path: str, state_dir: str | None, plugin_flags: dict[str, Any]
    ) -> NetworkTarget:
        """Load plugins and the config as ``start`` does; validate as ``start network`` does."""
        from nodehost.options import StartOptions
        from nodehost.plan import default_state_dir
        from nodehost.pluginhost.records import ValidationScope
        from nodehost.resolve import resolve_config, selection_for

        inventory = load_inventory(**plugin_flags)
        name = network_component(inventory)
        options = StartOptions(
            config=config_path,
            components=name,
            config_dir=os.path.dirname(os.path.abspath(config_path)),
            state_dir=state_dir,
        )
        selected = selection_for(options, inventory)
        resolved = resolve_config(
            options, inventory, selected, ValidationScope.NETWORK, choose_ip=False
        )
        echo_warnings(resolved.config.source, resolved.warnings)
        state = default_state_dir(state_dir)
        return cls(inventory, resolved, options, name, state)

    def plan(self) -> Any:
        """The component's plan, built as ``start`` builds it (its environment checks run)."""
        from nodehost.plan import build_plan

        plan = (
            build_plan(
                self.inventory,
                self.resolved,
                self.options,
                state_dir=self.state_dir,
                overrides={},
                resolve_programs=False,
                require_active=False,
            )
            .get(self.name)
            .plan
        )
        if plan.inactive_reason:
            raise RuntimeFailure(f"component {self.name} is inactive: {plan.inactive_reason}")
        return plan

    def network(self, *, required: bool = True) -> Any:
        """The configured network (:class:`nodehost.cni.CniNetwork`); None only if not required."""
        component = self.inventory.catalog.records[self.name].component
        described = component.cni_network(self.context)
        if described is None and required:
            provider = self.resolved.config.network_config.network_plugin_name or "none"
            raise RuntimeFailure(
                f"network provider {provider!r} describes no CNI network; nothing to check"
            )
        return described


def _recorded_ledger(state_dir: str | None, plugin_flags: dict[str, Any]) -> str:
    """The ledger path of the network component, from the state directory alone."""
    from nodehost.cni import LEDGER_NAME
    from nodehost.plan import default_state_dir

    inventory = load_inventory(**plugin_flags)
    root = default_state_dir(state_dir)
    return os.path.join(root, network_component(inventory), LEDGER_NAME)


def network_component(inventory: Any) -> str:
    """The component that describes the pod network: the first (by name) with ``cni_network``."""
    names = sorted(
        name
        for name, record in inventory.catalog.records.items()
        if callable(getattr(record.component, "cni_network", None))
    )
    if not names:
        raise RuntimeFailure(
            "no component describes the pod network (none has cni_network); "
            "is the plugin that provides it disabled?"
        )
    return names[0]

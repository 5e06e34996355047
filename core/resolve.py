"""Resolve a node's configuration: obtain it, apply the CLI overrides, validate it.

Origin's ``RunNode`` steps 1-5 (reference §1.7) as one pure-ish function of
the start options and the inventory:

1. obtain a NodeConfig: ``--config FILE``, or a folder generated from the flags
   and the signer CA (``--write-config`` / no ``--config``), or one a plugin
   obtains (``nodehost_obtain_config``: bootstrap);
2. ``--listen`` given -> ``servingInfo.bindAddress``;
3. ``dnsIP: 0.0.0.0`` -> the node IP, else the default local IPv4 address;
4. pick the validation scope (:func:`scope_for`): only for exactly the
   network-only selection the node name falls back to ``--hostname``,
   ``masterKubeConfig`` becomes ``--kubeconfig`` ("" means the in-cluster
   service account) and the in-cluster rules apply;
5. validate with the core's rules and every plugin's; any error raises
   :class:`~nodehost.errors.ConfigInvalid` listing all of them.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nodehost.errors import ConfigInvalid, UsageError
from nodehost.hostaddr import default_local_ipv4
from nodehost.records import Problem, ValidationScope
from nodehost.selection import SelectionRequest, select

IN_CLUSTER = ValidationScope.IN_CLUSTER

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.config.schema import NodeConfig
    from nodehost.inventory import Inventory
    from nodehost.options import StartOptions


@dataclass(frozen=True)
class ResolvedConfig:
    """A validated configuration and what it was validated for."""

    config: NodeConfig
    selected: frozenset[str]
    scope: ValidationScope
    warnings: tuple[Problem, ...]


def selection_for(options: StartOptions, inventory: Inventory) -> frozenset[str]:
    """The selected component names (``UsageError`` with Origin's messages)."""
    request = SelectionRequest(options.components, options.enable, options.disable)
    return select(inventory.catalog, request, options, unknown_hint=inventory.host.failure_hint)


def scope_for(inventory: Inventory, selected: frozenset[str]) -> ValidationScope:
    """Origin's validation choice (reference §1.7 step 4).

    ``IN_CLUSTER`` when the selection is exactly the network-only set -- every
    component that declares ``IN_CLUSTER`` (``dns``, ``sdn``, ``proxy``), plus
    any that declare ``NETWORK`` (nodehost's own helpers, which have no say)
    and none that needs ``NODE``; ``NODE`` (the full ``ValidateNodeConfig``)
    for every other selection, ``--components=proxy`` or ``--components=dns``
    included.
    """
    records = inventory.catalog.records
    network_only = {name for name, r in records.items() if r.validation_scope is IN_CLUSTER}
    chosen = {records[name].validation_scope for name in selected}
    if network_only and network_only <= selected and max(chosen) <= IN_CLUSTER:
        return IN_CLUSTER
    return ValidationScope.NODE


def load_config_file(
    path: str, inventory: Inventory, *, strict: bool
) -> tuple[NodeConfig, list[Problem]]:
    """Read and build ``path`` with plugins' sections known and their adjust hook applied."""
    from nodehost.config.load import load_node_config

    config, problems = load_node_config(
        path,
        known_sections=inventory.known_sections(),
        strict=strict,
        adjust=inventory.host.hooks.adjust_config,
    )
    return config, _explain_unknown_sections(problems, inventory)


def _explain_unknown_sections(problems: list[Problem], inventory: Inventory) -> list[Problem]:
    """Unknown top-level keys, when plugins are disabled or failed: say which (one may own it)."""
    missing = inventory.host.missing_summary()
    if not missing:
        return problems
    return [
        dataclasses.replace(problem, detail=f"{problem.detail}; no loaded plugin owns it{missing}")
        if "." not in problem.path and problem.detail.startswith("unknown field")
        else problem
        for problem in problems
    ]


def validate(
    config: NodeConfig,
    scope: ValidationScope,
    selected: frozenset[str],
    inventory: Inventory,
    problems: list[Problem],
) -> tuple[list[Problem], list[Problem]]:
    """Every problem, core's and plugins', split into (errors, warnings)."""
    from nodehost.config.validate import validate_node_config

    everything = [
        *problems,
        *validate_node_config(config, scope),
        *inventory.host.hooks.validate_config(
            config=config,
            scope=scope,
            selected=selected,
            providers=inventory.provider_records(),
            in_play=lambda plugin: inventory.in_play(plugin, selected, config),
        ),
    ]
    everything += unchecked_keys(config, inventory)
    errors = [problem for problem in everything if problem.is_error]
    warnings = [problem for problem in everything if not problem.is_error]
    return errors, warnings


def unchecked_keys(config: NodeConfig, inventory: Inventory) -> list[Problem]:
    """A warning per key of :data:`~nodehost.config.validate.PLUGIN_CHECKED_KEYS` set in
    ``config`` that no loaded plugin claims: its rules did not run, and why."""
    from nodehost.config.validate import PLUGIN_CHECKED_KEYS
    from nodehost.inventory import is_set

    claimed = inventory.known_sections()
    why = "no loaded plugin checks it" + inventory.host.missing_summary()
    return [
        Problem.not_checked(key, why)
        for key in PLUGIN_CHECKED_KEYS
        if key not in claimed and is_set(config, key)
    ]


def resolve_config(
    options: StartOptions,
    inventory: Inventory,
    selected: frozenset[str],
    scope: ValidationScope | None = None,
) -> ResolvedConfig:
    """Steps 1-5 of the module docstring; raises ``ConfigInvalid`` on any error.

    ``scope`` overrides step 4's choice (``nodehost network`` validates as
    Origin's ``start network`` does: ``NETWORK``).
    """
    config, problems = obtain_config(options, inventory)
    config = apply_overrides(config, options)
    scope = scope_for(inventory, selected) if scope is None else scope
    if scope < ValidationScope.NODE:
        config = apply_in_cluster_fallbacks(config, options)
    errors, warnings = validate(config, scope, selected, inventory, problems)
    if errors:
        raise ConfigInvalid(config.source, errors)
    return ResolvedConfig(config, selected, scope, tuple(warnings))


def obtain_config(options: StartOptions, inventory: Inventory) -> tuple[NodeConfig, list[Problem]]:
    """Step 1: the NodeConfig a plugin obtains (bootstrap), else ``--config``, else generated."""
    path = inventory.host.hooks.obtain_config(options)
    if path is not None:
        return load_config_file(path, inventory, strict=options.strict_config)
    if options.bootstrapping:
        hint = inventory.host.failure_hint("")
        raise UsageError(
            "--bootstrap-config-name needs a plugin that bootstraps the node, and none is active"
            + (f": {hint}" if hint else "")
        )
    if options.config:
        return load_config_file(options.config, inventory, strict=options.strict_config)
    from nodehost.generate import generate_node_folder

    path = generate_node_folder(options)
    return load_config_file(path, inventory, strict=options.strict_config)


def apply_overrides(config: NodeConfig, options: StartOptions) -> NodeConfig:
    """Steps 2-3: ``--listen``, ``--recursive-resolv-conf`` and the ``dnsIP: 0.0.0.0`` rule.

    ``--recursive-resolv-conf`` fills ``dnsRecursiveResolvConf`` of a config built
    from flags (Origin's ``BuildSerializeableNodeConfig``); with ``--config``
    the file's own setting stands, as with every other config flag.
    """
    if options.listen_provided:
        from nodehost.config.listen import parse_listen

        listen = parse_listen(options.listen)
        serving = dataclasses.replace(
            config.serving_info, bind_address=listen.host_port(listen.default_port)
        )
        config = dataclasses.replace(config, serving_info=serving)
    if options.recursive_resolv_conf and not options.config:
        resolv_conf = os.path.abspath(options.recursive_resolv_conf)
        config = dataclasses.replace(config, dns_recursive_resolv_conf=resolv_conf)
    if config.dns_ip == "0.0.0.0":
        config = dataclasses.replace(config, dns_ip=config.node_ip or default_local_ipv4())
    return config


def apply_in_cluster_fallbacks(config: NodeConfig, options: StartOptions) -> NodeConfig:
    """Step 4 below ``NODE`` scope: node name from ``--hostname``, ``--kubeconfig``."""
    changes: dict[str, Any] = {"master_kube_config": options.kubeconfig}
    if not config.node_name:
        changes["node_name"] = options.hostname
    return dataclasses.replace(config, **changes)

"""Resolve a node's configuration: obtain it, apply the CLI overrides, validate it.

Origin's ``RunNode`` steps 1-5 (reference §1.7) as one pure-ish function of
the start options and the inventory:

1. obtain a NodeConfig: ``--config FILE``, or a folder generated from the flags
   and the signer CA (``--write-config`` / no ``--config``), or one a plugin
   obtains (``nodehost_obtain_config``: bootstrap);
2. ``--listen`` given -> ``servingInfo.bindAddress``;
3. ``dnsIP: 0.0.0.0`` -> the node IP, else the default local IPv4 address;
4. pick the validation scope from the selected components' records; below
   ``NODE`` the node name falls back to ``--hostname`` and
   ``masterKubeConfig`` becomes ``--kubeconfig`` (Origin's in-cluster rules);
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
    """The highest validation scope any selected component asks for."""
    return max(inventory.catalog.records[name].validation_scope for name in selected)


def load_config_file(
    path: str, inventory: Inventory, *, strict: bool
) -> tuple[NodeConfig, list[Problem]]:
    """Read and build ``path`` with plugins' sections known and their adjust hook applied."""
    from nodehost.config.load import load_node_config

    return load_node_config(
        path,
        known_sections=inventory.known_sections(),
        strict=strict,
        adjust=inventory.host.hooks.adjust_config,
    )


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
        ),
    ]
    errors = [problem for problem in everything if problem.is_error]
    warnings = [problem for problem in everything if not problem.is_error]
    return errors, warnings


def resolve_config(
    options: StartOptions,
    inventory: Inventory,
    selected: frozenset[str],
    *,
    path: str | None = None,
) -> ResolvedConfig:
    """Steps 1-5 of the module docstring; raises ``ConfigInvalid`` on any error.

    With ``path`` step 1 loads that file instead (a running node's new config).
    """
    if path is None:
        config, problems = obtain_config(options, inventory)
    else:
        config, problems = load_config_file(path, inventory, strict=options.strict_config)
    config = apply_overrides(config, options)
    scope = scope_for(inventory, selected)
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

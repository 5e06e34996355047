"""Resolve a node's configuration: obtain it, apply the CLI overrides, validate it.

Origin's ``RunNode`` steps 1-5 (:ref:`origin-run-node`) as one pure-ish function of
the start options and the inventory:

1. obtain a NodeConfig: ``--config FILE``, or a folder generated from the flags
   and the signer CA (``--write-config`` / no ``--config``), or one a plugin
   obtains (``nodehost_obtain_config``: bootstrap);
2. ``--listen`` given -> ``servingInfo.bindAddress``;
3. ``--node-ip`` given -> ``nodeIP``; plugins' own options change what they
   own (``nodehost_override_config``: the kubelet's ``--node-label`` and
   ``--node-taint`` join ``kubeletArguments``); ``dnsIP: 0.0.0.0`` -> the node IP, else the default
   local IPv4 address;
4. pick the validation scope (:func:`scope_for`): only for exactly the
   network-only selection the node name falls back to ``--hostname``,
   ``masterKubeConfig`` becomes ``--kubeconfig`` ("" means the in-cluster
   service account) and the in-cluster rules apply;
5. validate with the core's rules and every plugin's; any error raises
   :class:`~nodehost.errors.ConfigInvalid` listing all of them;
6. (``start``, ``--dry-run``, ``--write-flags`` and a running node's re-plan only,
   :func:`resolve_config`) choose the node IP on this host
   (:func:`nodehost.nodeip.resolve_node_ip`): ``nodeIP`` becomes the chosen
   address (``V4,V6`` for a pair), and ``dnsIP: 0.0.0.0`` its first address.  An
   address that is not on a local interface, or a selector that matches none, is a
   :class:`~nodehost.errors.RuntimeFailure` naming it and listing the candidates:
   a fact of this host, not of the file, so ``config validate`` checks only the syntax.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from nodehost.errors import ConfigInvalid, UsageError
from nodehost.frozen import frozen
from nodehost.pluginhost.records import Problem, ValidationScope
from nodehost.pluginhost.selection import SelectionRequest, select

IN_CLUSTER = ValidationScope.IN_CLUSTER

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Sequence

    from nodehost.config.schema import NodeConfig
    from nodehost.nodeip import NodeIP
    from nodehost.options import StartOptions
    from nodehost.pluginhost.inventory import Inventory


@frozen
class ResolvedConfig:
    """A validated configuration and what it was validated for."""

    config: NodeConfig
    selected: frozenset[str]
    scope: ValidationScope
    warnings: tuple[Problem, ...]
    actions: tuple[str, ...] = ()  # what a dry run did not do (nodehost.dryrun)
    node_ip: NodeIP | None = None  # step 6's choice (None before it)


def selection_for(options: StartOptions, inventory: Inventory) -> frozenset[str]:
    """The selected component names (``UsageError`` with Origin's messages)."""
    request = SelectionRequest(options.components, options.enable, options.disable)
    return select(inventory.catalog, request, options, unknown_hint=inventory.host.failure_hint)


def scope_for(inventory: Inventory, selected: frozenset[str]) -> ValidationScope:
    """Origin's validation choice (:ref:`origin-validation-choice`).

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
    path: str, inventory: Inventory, *, strict: bool, settings: Sequence[str] = ()
) -> tuple[NodeConfig, list[Problem]]:
    """Read and build ``path`` with plugins' sections known, ``settings`` (``--set``) and
    then their adjust hook applied."""
    from nodehost.config.load import load_node_config

    config, problems = load_node_config(
        path,
        known_sections=inventory.known_sections(),
        strict=strict,
        adjust=_adjusting(inventory, settings),
    )
    return config, _explain_unknown_sections(problems, inventory)


def _adjusting(inventory: Inventory, settings: Sequence[str]) -> Callable[[Any, str], None]:
    """What edits a raw config before it is typed: ``--set``, then every plugin."""
    if not settings:
        return inventory.host.hooks.adjust_config

    def adjust(raw: Any, source: str) -> None:
        from nodehost.config.setflags import apply_settings

        apply_settings(raw, settings)
        inventory.host.hooks.adjust_config(raw, source)

    return adjust


def generated_settings(options: StartOptions, inventory: Inventory) -> tuple[str, ...]:
    """``--set`` for a config generated from flags, each section checked (``UsageError``
    naming one that neither NodeConfig nor a loaded plugin has); none for a file."""
    if options.config or not options.settings:
        return ()
    from nodehost.config.schema import NodeConfig, yaml_keys
    from nodehost.config.setflags import check_sections

    check_sections(options.settings, {*yaml_keys(NodeConfig), *inventory.known_sections()})
    return options.settings


def refuse_settings(options: StartOptions) -> None:
    """``UsageError`` when ``--set`` is given for a config a plugin obtains (not generated)."""
    if options.settings:
        raise UsageError("sets keys of a config generated from flags, not one obtained", "--set")


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
    """Every problem, core's and plugins', split into (errors, warnings).

    ``problems`` are the loader's; a rule's problem about a field the loader already
    refused (a wrong type: the rule saw the default) is dropped, so each field has one.
    """
    from nodehost.config.validate import validate_node_config

    ruled = [
        *validate_node_config(config, scope),
        *inventory.host.hooks.validate_config(
            config=config,
            scope=scope,
            selected=selected,
            providers=inventory.provider_records(),
            in_play=lambda plugin: inventory.in_play(plugin, selected, config),
        ),
        *unchecked_keys(config, inventory),
    ]
    refused = [problem.path for problem in problems if problem.is_error and problem.path]
    everything = [*problems, *(problem for problem in ruled if not _under(problem, refused))]
    errors = [problem for problem in everything if problem.is_error]
    warnings = [problem for problem in everything if not problem.is_error]
    return errors, warnings


def _under(problem: Problem, paths: list[str]) -> bool:
    """Whether ``problem`` is about one of ``paths`` (or inside one): a value the loader
    refused already has its one problem; the rules saw the field's default instead."""
    return any(
        problem.path == path or problem.path.startswith((f"{path}.", f"{path}[")) for path in paths
    )


def unchecked_keys(config: NodeConfig, inventory: Inventory) -> list[Problem]:
    """A warning per key of :data:`~nodehost.config.validate.PLUGIN_CHECKED_KEYS` set in
    ``config`` that no loaded plugin claims: its rules did not run, and why; and one for a
    ``networkPluginName`` that no loaded component can run
    (:func:`nodehost.cni.network.unrun_provider`)."""
    from nodehost.cni.network import unrun_provider
    from nodehost.config.validate import PLUGIN_CHECKED_KEYS
    from nodehost.pluginhost.inventory import is_set

    claimed = inventory.known_sections()
    why = "no loaded plugin checks it" + inventory.host.missing_summary()
    problems = [
        Problem.not_checked(key, why)
        for key in PLUGIN_CHECKED_KEYS
        if key not in claimed and is_set(config, key)
    ]
    provider = unrun_provider(config, inventory.catalog.network_runners)
    if provider:
        problems.append(
            Problem.not_checked(
                "networkConfig.networkPluginName",
                f"the configured provider {provider!r} will not run: no loaded plugin provides "
                "a component that runs network providers" + inventory.host.missing_summary(),
            )
        )
    return problems


def plan_problems(
    config: NodeConfig, scope: ValidationScope, options: StartOptions, inventory: Inventory
) -> list[Problem]:
    """What the components refuse when planning ``config`` (``config validate``'s last step).

    The same plan stage as ``start`` (programs not looked up, nothing written),
    so every problem ``start`` or ``--dry-run`` would find in the file is found
    here too (each component's :class:`~nodehost.errors.InvalidSetting`).  What
    only this host lacks (a component's :class:`~nodehost.errors.RuntimeFailure`:
    a missing CNI plugin, no service account) is ``start``'s to report, not the file's.
    """
    from nodehost.plan import build_plan, default_state_dir

    selected = selection_for(options, inventory)
    try:
        build_plan(
            inventory,
            ResolvedConfig(config, selected, scope, ()),
            options,
            state_dir=default_state_dir(options.state_dir),
            overrides={},
            resolve_programs=False,
            require_active=False,
            host_failures=[],
        )
    except ConfigInvalid as error:
        return error.errors
    return []


def resolve_config(
    options: StartOptions,
    inventory: Inventory,
    selected: frozenset[str],
    scope: ValidationScope | None = None,
    *,
    path: str | None = None,
    choose_ip: bool = True,
) -> ResolvedConfig:
    """Steps 1-6 of the module docstring; raises ``ConfigInvalid`` on any error, and
    ``RuntimeFailure`` when the node IP cannot be chosen on this host.  Without
    ``choose_ip`` step 6 is left out (``nodehost network``: the pod network alone).

    ``scope`` overrides step 4's choice (``nodehost network`` validates as
    Origin's ``start network`` does: ``NETWORK``).  With ``path`` step 1 loads
    that file instead (a running node's new config).
    """
    if path is None:
        obtained = obtain_config(options, inventory)
    else:
        settings = generated_settings(options, inventory)
        loaded = load_config_file(path, inventory, strict=options.strict_config, settings=settings)
        obtained = Obtained(*loaded)
    config, scope, errors, warnings = check_obtained(obtained, options, inventory, selected, scope)
    if errors:
        raise ConfigInvalid(config.source, errors)
    node_ip = choose_node_ip(config) if choose_ip else None
    if node_ip is not None:
        dns_from_node = obtained.config.dns_ip == "0.0.0.0"
        config = with_node_ip(config, node_ip, dns_from_node=dns_from_node)
    actions = tuple(obtained.actions)
    return ResolvedConfig(config, selected, scope, tuple(warnings), actions, node_ip)


def choose_node_ip(config: NodeConfig) -> NodeIP:
    """Step 6: the node IP ``config.node_ip`` means here; ``RuntimeFailure`` saying why not."""
    from nodehost.errors import RuntimeFailure
    from nodehost.nodeip import NodeIPError, resolve_node_ip

    try:
        return resolve_node_ip(config.node_ip)
    except (NodeIPError, OSError) as error:
        raise RuntimeFailure(f"{config.source}: {error}") from None


def with_node_ip(config: NodeConfig, node_ip: NodeIP, *, dns_from_node: bool) -> NodeConfig:
    """``config`` with ``nodeIP`` the chosen address (and ``dnsIP`` when it was 0.0.0.0)."""
    dns_ip = node_ip.first if dns_from_node else config.dns_ip
    return dataclasses.replace(config, node_ip=node_ip.value, dns_ip=dns_ip)


def check_config(
    options: StartOptions, inventory: Inventory, selected: frozenset[str]
) -> tuple[NodeConfig, ValidationScope, list[Problem], list[Problem]]:
    """Steps 1-5 without raising: ``(config, scope, errors, warnings)``.

    ``start`` and ``config validate`` both come here, so they judge a file alike.
    """
    return check_obtained(obtain_config(options, inventory), options, inventory, selected)


def check_obtained(
    obtained: Obtained,
    options: StartOptions,
    inventory: Inventory,
    selected: frozenset[str],
    scope: ValidationScope | None = None,
) -> tuple[NodeConfig, ValidationScope, list[Problem], list[Problem]]:
    """Steps 2-5 for an obtained config; problems with files it would write are dropped."""
    config = apply_overrides(obtained.config, options, inventory)
    scope = scope_for(inventory, selected) if scope is None else scope
    if scope < ValidationScope.NODE:
        config = apply_in_cluster_fallbacks(config, options)
    errors, warnings = validate(config, scope, selected, inventory, obtained.problems)
    errors = [problem for problem in errors if not _about(problem, obtained.pending)]
    return config, scope, errors, warnings


def _about(problem: Problem, paths: frozenset[str]) -> bool:
    return problem.has_value and isinstance(problem.value, str) and problem.value in paths


@frozen
class Obtained:
    """Step 1's result: the config and its load problems.

    ``pending`` holds the files a dry run would have written (absent yet) and
    ``actions`` says what it did not do.
    """

    config: NodeConfig
    problems: list[Problem]
    pending: frozenset[str] = frozenset()
    actions: tuple[str, ...] = ()


def obtain_config(options: StartOptions, inventory: Inventory) -> Obtained:
    """Step 1: the NodeConfig a plugin obtains (bootstrap), else ``--config``, else generated.

    A dry run asks no plugin to obtain it (the CLI prints what the plugin
    would do, ``nodehost_describe_config``) and generates the folder in
    memory only (:mod:`nodehost.dryrun`).
    """
    strict = options.strict_config
    settings = generated_settings(options, inventory)
    if not options.dry_run:
        path = inventory.host.hooks.obtain_config(options)
        if path is not None:
            refuse_settings(options)
            return Obtained(*load_config_file(path, inventory, strict=strict))
    if options.config:
        return Obtained(*load_config_file(options.config, inventory, strict=strict))
    if options.dry_run:
        return _generated_unwritten(options, inventory, settings)
    from nodehost.generate import generate_node_folder

    path = generate_node_folder(options)
    return Obtained(*load_config_file(path, inventory, strict=strict, settings=settings))


def _generated_unwritten(
    options: StartOptions, inventory: Inventory, settings: Sequence[str]
) -> Obtained:
    from nodehost.config.load import build_node_config
    from nodehost.dryrun import generated_raw_config

    document, pending, actions = generated_raw_config(options)
    _adjusting(inventory, settings)(document.data, document.source)
    config, problems = build_node_config(
        document, known_sections=inventory.known_sections(), strict=options.strict_config
    )
    return Obtained(config, problems, pending, tuple(actions))


def apply_overrides(
    config: NodeConfig, options: StartOptions, inventory: Inventory | None = None
) -> NodeConfig:
    """Steps 2-3: ``--listen``, ``--recursive-resolv-conf``, ``--node-ip``, then every
    plugin's own options (``nodehost_override_config``), then ``dnsIP: 0.0.0.0``.

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
    if options.node_ip is not None:
        config = dataclasses.replace(config, node_ip=options.node_ip)
    if inventory is not None:
        config = inventory.host.hooks.override_config(config, options)
    if config.dns_ip == "0.0.0.0":
        from nodehost.hostaddr import default_local_ipv4
        from nodehost.nodeip import literal_first

        dns_ip = literal_first(config.node_ip) or default_local_ipv4()
        config = dataclasses.replace(config, dns_ip=dns_ip)
    return config


def apply_in_cluster_fallbacks(config: NodeConfig, options: StartOptions) -> NodeConfig:
    """Step 4 below ``NODE`` scope: node name from ``--hostname``, ``--kubeconfig``."""
    changes: dict[str, Any] = {"master_kube_config": options.kubeconfig}
    if not config.node_name:
        changes["node_name"] = options.hostname
    return dataclasses.replace(config, **changes)

"""``nodehost start``: Origin's ``start node`` flags, plus component selection and CI modes.

Thin by design: it turns flags into :class:`~nodehost.options.StartOptions`
and runs the stages -- resolve and validate the config, build the plan, run
the host -- each a function of the previous stage's output.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from nodehost.cli.options import (
    F,
    echo_warnings,
    load_inventory,
    logging_options,
    parse_address_flag,
    plugin_options,
)
from nodehost.cli.pluginoptions import PluginOptionsCommand, plugin_values
from nodehost.daemon.settings import DEFAULT_HEALTH_ADDRESS
from nodehost.options import (
    DEFAULT_CONFIG_DIR,
    DEFAULT_EXPIRE_DAYS,
    DEFAULT_IMAGE_FORMAT,
    DEFAULT_LISTEN,
    DEFAULT_MASTER_CERT_DIR,
    DEFAULT_VOLUME_DIR,
    StartOptions,
    check_start_options,
)

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.component import ComponentPlan
    from nodehost.daemon import HostSettings
    from nodehost.daemon.reconfigure import Replanner
    from nodehost.plan import Plan
    from nodehost.pluginhost.inventory import Inventory
    from nodehost.resolve import ResolvedConfig


def _given(ctx: click.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


#: Every ``start`` flag can be set as ``NODEHOST_<FLAG>`` (``--state-dir``:
#: ``NODEHOST_STATE_DIR``), as systemd's ``EnvironmentFile`` gives them; a flag wins.
ENVIRONMENT_PREFIX = "NODEHOST"


#: The options that say where the config comes from, how it is generated, what is selected
#: and which programs run: ``start``'s, and ``check``'s (:func:`config_options`).
CONFIG_OPTIONS = [
    click.option(
        "--config",
        metavar="FILE",
        help="Run from this node config; other config flags are ignored.",
    ),
    click.option(
        "--components",
        metavar="LIST",
        help="Components to run: names or groups, comma separated (kubelet,proxy).",
    ),
    click.option("--enable", metavar="LIST", help="Origin's name for --components."),
    click.option(
        "--disable", metavar="LIST", default="", help="Components to leave out (names or groups)."
    ),
    click.option("--hostname", help="Name of this node (default: lower-cased `uname -n`)."),
    click.option(
        "--listen",
        default=DEFAULT_LISTEN,
        show_default=True,
        metavar="ADDR",
        help="Serving address, [scheme://]host[:port].",
    ),
    click.option(
        "--node-ip",
        metavar="ADDR",
        help="The node IP, over the config's nodeIP: an address, a pair V4,V6, iface:NAME or "
        "cidr:NET (default: the source address of the default route).",
    ),
    click.option(
        "--volume-dir",
        default=DEFAULT_VOLUME_DIR,
        show_default=True,
        help="Volume storage directory.",
    ),
    click.option(
        "--network-plugin", default="", help="Network plugin (provider) name for pod networking."
    ),
    click.option(
        "--recursive-resolv-conf",
        default="",
        metavar="FILE",
        help="resolv.conf of upstream resolvers for the node DNS.",
    ),
    click.option(
        "--images",
        default=DEFAULT_IMAGE_FORMAT,
        show_default=True,
        help="Image name template for system components.",
    ),
    click.option(
        "--latest-images", is_flag=True, help="Use the 'latest' tag instead of the release version."
    ),
    click.option("--kubernetes", hidden=True, help="Removed; use --kubeconfig."),
    click.option(
        "--kubeconfig",
        default="",
        metavar="FILE",
        help="kubeconfig for API requests (bootstrap credentials with --bootstrap-config-name).",
    ),
    click.option(
        "--expire-days",
        type=int,
        default=DEFAULT_EXPIRE_DAYS,
        show_default=True,
        help="Validity of generated certificates, in days.",
    ),
    click.option(
        "--master-cert-dir",
        default=DEFAULT_MASTER_CERT_DIR,
        show_default=True,
        help="Signer CA folder used to generate the node folder.",
    ),
    click.option(
        "--config-dir",
        default=DEFAULT_CONFIG_DIR,
        show_default=True,
        help="Node folder generated when --config is not given.",
    ),
    click.option(
        "--set",
        "settings",
        multiple=True,
        metavar="SECTION.KEY=VALUE",
        help="Set a key of the config generated from flags (VALUE is YAML: true, 1500, "
        "'x'); repeatable; validated like the file.",
    ),
    click.option(
        "--strict-config", is_flag=True, help="Unknown config keys are errors, not warnings."
    ),
    click.option(
        "--state-dir",
        metavar="DIR",
        help="Runtime state: pid files, generated component files.",
    ),
    click.option(
        "--binary",
        "binaries",
        multiple=True,
        metavar="NAME=PATH",
        help="Run PATH for program NAME; repeatable.",
    ),
    click.option(
        "--standins",
        type=click.Choice(["never", "missing", "always"]),
        default="never",
        show_default=True,
        help="Use stand-ins (nodehost.testing's, or a component's own) for missing programs "
        "(or always): CI smoke runs (with --local-cluster: missing unless given).",
    ),
]


def config_options(command: F) -> F:
    """Apply :data:`CONFIG_OPTIONS` (in their order) to ``command``; read the flags back with
    :func:`start_options`."""
    for option in reversed(CONFIG_OPTIONS):
        command = option(command)
    return command


@click.command(
    cls=PluginOptionsCommand,
    context_settings={"ignore_unknown_options": False, "auto_envvar_prefix": ENVIRONMENT_PREFIX},
)
@config_options
@click.option(
    "--dry-run", is_flag=True, help="Resolve and validate the config, print the plan, exit 0."
)
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: print the plan as JSON.")
@click.option("--write-config", metavar="DIR", help="Generate the node folder into DIR and exit.")
@click.option("--write-flags", is_flag=True, help="Print the kubelet's arguments and exit.")
@click.option(
    "--config-rollback-after",
    default="2m",
    show_default=True,
    metavar="DURATION",
    help="A new config (SIGHUP, config map) whose restarted components are not ready "
    "within DURATION is rolled back.",
)
@click.option(
    "--exit-on-ready",
    is_flag=True,
    help="CI smoke mode: once every component is ready, print a summary, stop cleanly, exit 0.",
)
@click.option(
    "--ready-timeout",
    metavar="DURATION",
    help="Fail (exit 1) unless every component is ready within DURATION (Go syntax: 60s, 2m).",
)
@click.option(
    "--health-address",
    default=DEFAULT_HEALTH_ADDRESS,
    show_default=True,
    envvar="NODEHOST_HEALTH_ADDRESS",
    metavar="HOST:PORT",
    help="Serve /healthz, /readyz, /metrics, /status here; 'none' disables.",
)
@click.option(
    "--crash-loop-limit",
    type=click.IntRange(0),
    default=5,
    show_default=True,
    help="Consecutive quick failures after which a component fails the node; 0 never gives up.",
)
@click.option(
    "--ignore-preflight-errors",
    metavar="NAME[,NAME...]",
    default="",
    help="Start despite these preflight errors (check names, or 'all'): logged as warnings.",
)
@click.option(
    "--no-exec",
    is_flag=True,
    help="When the kubelet is the only component, supervise it instead of exec'ing it.",
)
@plugin_options
@logging_options
@click.argument("extra_args", nargs=-1)
@click.pass_context
def start(ctx: click.Context, **flags: Any) -> None:
    """Start the node: resolve and validate its config, then run its components.

    The config comes from --config FILE, or is generated from the flags and the
    signer CA in --master-cert-dir, or is obtained by bootstrapping against an
    API server (--bootstrap-config-name).

    --local-cluster DIR runs the whole node on this machine: nodehost's test
    API server (an in-memory stand-in for kube-apiserver, for trying,
    developing and CI -- not a production API server) runs from DIR as the
    first component, and the node bootstraps against it.

    Invalid configs exit 255 with every problem listed; usage errors exit 2;
    runtime failures exit 1.
    """
    from nodehost.daemon import hangup

    hangup.defer()  # first: a reload while starting (or bootstrapping) must not kill it
    options = start_options(ctx, flags)
    check_start_options(options)
    settings = _host_settings(flags)
    options, overrides, inventory, selected = load_for_start(options, flags)
    from nodehost.resolve import refuse_settings, resolve_config

    if options.dry_run:
        described = inventory.host.hooks.describe_config(options)
        if described is not None:
            refuse_settings(options)
            _echo_actions(described, flags["as_json"])
            return
    if options.write_config is not None:
        from nodehost.generate import generate_node_folder

        path = generate_node_folder(options)
        click.echo(f"Wrote node config to {path}")
        return
    resolved = resolve_config(options, inventory, selected)
    if not (options.write_flags or options.dry_run):
        from nodehost.log import messages_follow_events

        messages_follow_events()  # the node runs: its events and messages share stderr
    echo_warnings(resolved.config.source, resolved.warnings)
    if options.write_flags:
        click.echo(_flags_line(inventory, resolved, options))
        return
    plan = _plan(inventory, resolved, options, overrides)
    if options.dry_run:
        if flags["as_json"]:
            document = {"actions": list(resolved.actions), **plan_as_dict(plan)}
            click.echo(json.dumps(document, indent=2))
        else:
            click.echo("\n".join([*resolved.actions, render_plan(plan)]))
        return
    from nodehost.check.preflight import parse_ignored, preflight

    preflight(inventory, resolved, options, plan, parse_ignored(flags["ignore_preflight_errors"]))
    replanner = _replanner(inventory, options, selected, overrides)
    health_set = _given(ctx, "health_address")
    raise click.exceptions.Exit(
        _run(plan, inventory, settings, flags["no_exec"], replanner, health_set=health_set)
    )


def _echo_actions(actions: list[str], as_json: bool) -> None:
    """A dry run's description of what it did not do (no plan follows)."""
    click.echo(json.dumps({"actions": actions}, indent=2) if as_json else "\n".join(actions))


def environment_variable(option: click.Option) -> str:
    """``NODEHOST_`` and the option's long name: ``--state-dir`` -> ``NODEHOST_STATE_DIR``."""
    longest = max(option.opts, key=len).lstrip("-")
    return f"{ENVIRONMENT_PREFIX}_{longest.replace('-', '_').upper()}"


def show_environment_variables(command: click.Command) -> None:
    """Give each of the host's options its ``NODEHOST_*`` variable and name it in ``--help``
    (the plugins' options have theirs already)."""
    own = command.host_params if isinstance(command, PluginOptionsCommand) else command.params
    for param in own:
        if isinstance(param, click.Option) and param.allow_from_autoenv:
            param.show_envvar = True
            if param.envvar is None:
                param.envvar = environment_variable(param)


show_environment_variables(start)


def start_options(ctx: click.Context, flags: dict[str, Any]) -> StartOptions:
    """The :class:`StartOptions` of :func:`config_options`'s flags (and ``start``'s own)."""
    optional = {} if flags["hostname"] is None else {"hostname": flags["hostname"].strip().lower()}
    return StartOptions(
        config=flags["config"],
        components=flags["components"],
        enable=flags["enable"],
        disable=flags["disable"],
        dry_run=flags.get("dry_run", False),
        write_config=flags.get("write_config"),
        write_flags=flags.get("write_flags", False),
        listen=flags["listen"],
        listen_provided=_given(ctx, "listen") and flags["listen"] != DEFAULT_LISTEN,
        volume_dir=flags["volume_dir"],
        volume_dir_provided=_given(ctx, "volume_dir"),
        network_plugin=flags["network_plugin"],
        recursive_resolv_conf=flags["recursive_resolv_conf"],
        images=flags["images"],
        latest_images=flags["latest_images"],
        kubernetes=flags["kubernetes"],
        kubeconfig=flags["kubeconfig"],
        expire_days=flags["expire_days"],
        master_cert_dir=flags["master_cert_dir"],
        config_dir=flags["config_dir"] if not flags["config"] else _dirname(flags["config"]),
        strict_config=flags["strict_config"],
        state_dir=flags["state_dir"],
        extra_args=tuple(flags.get("extra_args", ())),
        standins=flags["standins"] if _given(ctx, "standins") else None,
        node_ip=flags["node_ip"],
        settings=tuple(flags["settings"]),
        plugin_values=plugin_values(ctx.command.params, flags),
        **optional,
    )


def load_for_start(
    options: StartOptions, flags: dict[str, Any]
) -> tuple[StartOptions, dict[str, str], Inventory, frozenset[str]]:
    """What ``start`` and ``check`` do with checked options before the config: ``--binary``
    parsed, logging set up, plugins loaded, the options plugins imply, the selection."""
    from nodehost.binaries import parse_binary_overrides
    from nodehost.log import configure_logging
    from nodehost.resolve import selection_for

    overrides = parse_binary_overrides(flags["binaries"])
    configure_logging(flags["loglevel"], flags["log_format"])
    inventory = load_inventory(
        flags["disable_plugins"], flags["strict_plugins"], flags["no_plugins"]
    )
    options = implied_options(options, inventory)
    return options, overrides, inventory, selection_for(options, inventory)


def implied_options(options: StartOptions, inventory: Inventory) -> StartOptions:
    """The options with what plugins derive from them (``nodehost_start_options``), checked
    again."""
    known = frozenset(inventory.catalog.records)
    derived = inventory.host.hooks.start_options(options, known)
    check_start_options(derived)
    return derived


def _dirname(path: str) -> str:
    import os

    return os.path.dirname(os.path.abspath(path))


def _plan(
    inventory: Inventory,
    resolved: ResolvedConfig,
    options: StartOptions,
    overrides: dict[str, str],
) -> Plan:
    """The plan of ``resolved``; stand-ins as ``options`` say once plugins derived them
    (``--local-cluster`` implies ``missing``), else ``never``."""
    from nodehost.plan import build_plan, default_state_dir

    return build_plan(
        inventory,
        resolved,
        options,
        state_dir=default_state_dir(options.state_dir),
        overrides=overrides,
        standins=options.standins or "never",
    )


def _replanner(
    inventory: Inventory,
    options: StartOptions,
    selected: frozenset[str],
    overrides: dict[str, str],
) -> Replanner:
    """What the running host calls to plan a new config: the stages above, from a file."""

    def replan(path: str, source: str) -> tuple[Plan, tuple[str, ...]]:
        import dataclasses

        from nodehost.resolve import resolve_config

        resolved = resolve_config(options, inventory, selected, path=path)
        config = dataclasses.replace(resolved.config, source=source)
        resolved = dataclasses.replace(resolved, config=config)
        warnings = tuple(problem.render() for problem in resolved.warnings)
        return _plan(inventory, resolved, options, overrides), warnings

    return replan


def _flags_line(inventory: Inventory, resolved: ResolvedConfig, options: StartOptions) -> str:
    """Origin's ``--write-flags``: the arguments of the components that print flags.

    A component prints ``flag_arguments(context)`` when it has that method (every
    setting as a flag, no files needed), else the arguments of its planned process.
    """
    from nodehost.errors import UsageError
    from nodehost.flagsline import format_flags_line
    from nodehost.plan import default_state_dir, plan_context, plan_shared

    printers = sorted(
        name for name in resolved.selected if inventory.catalog.records[name].write_flags
    )
    if not printers:
        raise UsageError("none of the selected components has arguments to print", "--write-flags")
    state_dir = default_state_dir(options.state_dir)
    shared = plan_shared(inventory, resolved, state_dir)
    lines = []
    for name in printers:
        component = inventory.catalog.records[name].component
        context = plan_context(inventory, resolved, options, name, state_dir, shared)
        if hasattr(component, "flag_arguments"):
            arguments = component.flag_arguments(context)
        else:
            run = component.plan(context).run
            arguments = run.argv[1:] if run is not None and hasattr(run, "argv") else ()
        lines.append(format_flags_line(arguments))
    return "\n".join(lines)


def render_plan(plan: Plan) -> str:
    """The human-readable plan printed by ``--dry-run``."""
    lines = [f"Plan for {plan.config_source} (state in {plan.state_dir}):"]
    if plan.node_ip is not None:
        lines.append(f"node IP: {plan.node_ip.value} ({plan.node_ip.chosen_by})")
    for index, component in enumerate(plan.components, 1):
        origin = component.plugin + (
            f" ({component.distribution})" if component.distribution else ""
        )
        after = ", ".join(component.after) or "-"
        lines.append(f"{index:>3}. {component.name:<12} after: {after:<20} plugin: {origin}")
        lines.extend(_plan_details(component.plan))
    return "\n".join(lines)


def _plan_details(plan: ComponentPlan) -> list[str]:
    pad = " " * 8
    if plan.inactive_reason:
        return [f"{pad}inactive: {plan.inactive_reason}"]
    if plan.run is None:
        lines = [f"{pad}run: nothing to keep running", f"{pad}ready: once its files are written"]
    else:
        lines = [f"{pad}run: {plan.run.describe()}", f"{pad}ready: {plan.run.readiness.describe()}"]
    lines += [f"{pad}writes: {spec.path} ({spec.mode:04o})" for spec in plan.files]
    lines += [f"{pad}note: {note}" for note in plan.notes]
    return lines


def plan_as_dict(plan: Plan) -> dict[str, Any]:
    """The plan as a JSON-ready mapping (``--dry-run --json``)."""
    components = []
    for component in plan.components:
        run = component.plan.run
        components.append(
            {
                "name": component.name,
                "plugin": component.plugin,
                "distribution": component.distribution,
                "after": list(component.after),
                "run": None if run is None else run.describe(),
                "argv": list(getattr(run, "argv", ())) or None,
                "ready": None if run is None else run.readiness.describe(),
                "files": [{"path": f.path, "mode": f"{f.mode:04o}"} for f in component.plan.files],
                "inactive": component.plan.inactive_reason,
                "notes": list(component.plan.notes),
                "standin": component.standin,
            }
        )
    node_ip = None if plan.node_ip is None else plan.node_ip.as_dict()
    return {
        "config": plan.config_source,
        "state_dir": plan.state_dir,
        "node_ip": node_ip,
        "components": components,
    }


def _run(
    plan: Plan,
    inventory: Inventory,
    settings: HostSettings,
    no_exec: bool,
    replanner: Replanner,
    *,
    health_set: bool = False,
) -> int:
    """Run the plan under the host (or exec the kubelet alone, as Origin did).

    ``health_set``: ``--health-address`` was given; exec mode serves nothing, so it
    warns that the address is not served.
    """
    from nodehost.component import ProcessSpec
    from nodehost.daemon import can_exec, exec_single, run_plan
    from nodehost.log import get_logger

    for component in plan.components:
        run = component.plan.run
        if component.standin and isinstance(run, ProcessSpec):
            get_logger().warning(
                "STAND-IN: this is not a real node; the component runs nodehost.testing's stand-in",
                component=component.name,
                program=run.argv[0],
            )
    if len(plan.components) == 1 and not (no_exec or settings.exit_on_ready):
        only = plan.components[0]
        if can_exec(only):
            if health_set and settings.health_address is not None:
                get_logger().warning(
                    "exec mode: no health server runs, --health-address is not served "
                    "(use --no-exec to keep nodehost supervising and serving)",
                    component=only.name,
                )
            exec_single(only, plan.state_dir)
    return run_plan(plan, inventory.host.hooks, settings, replanner=replanner)


def _host_settings(flags: dict[str, Any]) -> HostSettings:
    """The host's settings from the flags, checked before anything is loaded or planned."""
    from nodehost.config.goduration import flag_duration
    from nodehost.daemon import HostSettings, RestartPolicy
    from nodehost.daemon.profile import check_profile_environment

    check_profile_environment()

    address = flags["health_address"].strip()
    health = (
        None
        if address.lower() in {"none", "off", ""}
        else parse_address_flag(address, "--health-address")
    )
    return HostSettings(
        restart=RestartPolicy(crash_loop_limit=flags["crash_loop_limit"]),
        health_address=health,
        exit_on_ready=flags["exit_on_ready"],
        ready_timeout=_optional_duration(flags["ready_timeout"], "--ready-timeout"),
        config_rollback_after=flag_duration(
            flags["config_rollback_after"], "--config-rollback-after"
        ),
    )


def _optional_duration(text: str | None, flag: str) -> float | None:
    from nodehost.config.goduration import flag_duration

    return None if text is None else flag_duration(text, flag)

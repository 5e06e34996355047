"""The plan: the selected components as an ordered graph, a plain printable value.

``build_plan`` is a pure function of the component records, the selection and
the components' own plans; the host (:mod:`nodehost.daemon`) executes a
:class:`Plan` and ``nodehost start --dry-run`` prints one.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nodehost.binaries import StandinMode, check_overrides_used, resolve_program
from nodehost.component import ComponentPlan, PlanContext, ProcessSpec
from nodehost.errors import (
    ConfigInvalid,
    InvalidSetting,
    NodehostError,
    PluginError,
    RuntimeFailure,
    UsageError,
)
from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.nodeip import NodeIP
    from nodehost.options import StartOptions
    from nodehost.pluginhost.inventory import Inventory
    from nodehost.pluginhost.manager import Provided
    from nodehost.pluginhost.records import ApiRoute, ComponentRecord
    from nodehost.resolve import ResolvedConfig


@frozen
class PlannedComponent:
    """One selected component, ready to run.

    ``after``  the selected components it waits for (must be ready first);
    ``plugin`` the name of the plugin that provides it;
    ``distribution`` the ``name version`` of that plugin's distribution, if any;
    ``standin`` true when its program is a ``nodehost.testing`` stand-in.
    """

    name: str
    summary: str
    plugin: str
    after: tuple[str, ...]
    plan: ComponentPlan
    distribution: str | None = None
    standin: bool = False


@frozen
class Plan:
    """The components to run, in a valid start order (dependencies first).

    ``state_dir`` is where the host keeps pid files and components keep their
    generated files; ``config_source`` names the NodeConfig the plan came from;
    ``node_ip`` is the node IP chosen on this host (:mod:`nodehost.nodeip`),
    None when the plan was made without choosing one (``config validate``);
    ``node_name`` and ``kubeconfig`` (the config's ``masterKubeConfig``) are whom
    the host's own Node events are about and how it posts them.
    """

    components: tuple[PlannedComponent, ...]
    state_dir: str
    config_source: str
    node_ip: NodeIP | None = None
    node_name: str = ""
    kubeconfig: str = ""

    def get(self, name: str) -> PlannedComponent:
        for component in self.components:
            if component.name == name:
                return component
        raise KeyError(name)


def build_plan(
    inventory: Inventory,
    resolved: ResolvedConfig,
    options: StartOptions,
    *,
    state_dir: str,
    overrides: Mapping[str, str],
    standins: StandinMode = "never",
    resolve_programs: bool = True,
    require_active: bool = True,
    host_failures: list[RuntimeFailure] | None = None,
) -> Plan:
    """Ask every selected component for its plan, in start order, and resolve programs.

    Raises :class:`~nodehost.errors.ConfigInvalid` listing the problems of
    every component that refused the config (:class:`~nodehost.errors.InvalidSetting`).

    With ``resolve_programs=False`` the programs stay as the components named them
    (``--write-flags`` prints arguments without needing the binaries).  Unless
    ``require_active`` is false, a plan in which every component is inactive is
    Origin's usage error (:func:`check_active`).  With a ``host_failures`` list, a
    component that cannot run on this host (:class:`~nodehost.errors.RuntimeFailure`)
    is left out and its failure appended (a program that cannot be found too), so judging a
    file does not depend on the host.
    """
    from nodehost.pluginhost.selection import start_order  # planning only, never a host

    order = start_order(inventory.catalog, resolved.selected)
    shared = plan_shared(inventory, resolved, state_dir)
    made, refusals = [], []
    for name, after in order:
        provided = inventory.components[name]
        context = plan_context(inventory, resolved, options, name, state_dir, shared)
        try:
            made.append((name, after, provided, _component_plan(provided, context)))
        except InvalidSetting as error:
            refusals.extend(error.problems)
        except RuntimeFailure as error:
            if host_failures is None:
                raise
            host_failures.append(error)
    if refusals:
        raise ConfigInvalid(resolved.config.source, refusals)
    if resolve_programs:
        programs = [p.run.argv[0] for *_, p in made if isinstance(p.run, ProcessSpec)]
        check_overrides_used(overrides, programs)
    planned = []
    for name, after, provided, plan in made:
        standin = False
        if resolve_programs:
            try:
                plan, standin = _resolve_program(
                    name, plan, overrides, standins, provided.record.standins
                )
            except RuntimeFailure as error:
                if host_failures is None:
                    raise
                host_failures.append(error)
                continue
        planned.append(
            PlannedComponent(
                name=name,
                summary=provided.record.summary,
                plugin=provided.plugin,
                after=after,
                plan=plan,
                distribution=provided.distribution,
                standin=standin,
            )
        )
    config = resolved.config
    result = Plan(
        tuple(planned),
        state_dir,
        config.source,
        resolved.node_ip,
        config.node_name,
        config.master_kube_config,
    )
    if require_active:
        check_active(result, inventory.catalog.names)
    return result


def check_active(plan: Plan, allowed: Sequence[str]) -> None:
    """Origin's ``ValidateRuntime``: raise ``UsageError`` when no component would do anything.

    The first line is Origin's text (with every known component name); one
    line per selected component says why it is inactive.
    """
    if any(component.plan.inactive_reason is None for component in plan.components):
        return
    lines = [f"at least one node component must be enabled ({', '.join(sorted(allowed))})"]
    lines += [f"  {c.name} is inactive: {c.plan.inactive_reason}" for c in plan.components]
    raise UsageError("\n".join(lines))


@frozen
class PlanShared:
    """What the contexts of one plan's components share, found once per plan.

    ``route`` is the route of the node's API clients (``nodehost_api_route``) or None;
    ``starts_after`` maps each selected component to every component it waits for
    (:meth:`~nodehost.pluginhost.selection.Catalog.starts_after`).
    """

    route: ApiRoute | None
    starts_after: Mapping[str, frozenset[str]]

    def dependents(self, name: str) -> frozenset[str]:
        """The selected components that wait for ``name`` (their ``after`` or ``requires``
        name it, or its ``before`` names them)."""
        return frozenset(other for other, waits in self.starts_after.items() if name in waits)


def plan_shared(inventory: Inventory, resolved: ResolvedConfig, state_dir: str) -> PlanShared:
    """The :class:`PlanShared` of a plan of ``resolved`` in ``state_dir``, for
    :func:`plan_context`."""
    catalog = inventory.catalog
    return PlanShared(
        route=inventory.host.hooks.api_route(resolved.config, resolved.selected, state_dir),
        starts_after={name: frozenset(catalog.starts_after(name)) for name in resolved.selected},
    )


def plan_context(
    inventory: Inventory,
    resolved: ResolvedConfig,
    options: StartOptions,
    name: str,
    state_dir: str,
    shared: PlanShared,
) -> PlanContext:
    """The context component ``name`` plans in (its files go under ``state_dir/name``).

    ``shared`` is :func:`plan_shared`'s for the same config and ``state_dir``: when a
    plugin routes the node's API clients through a component, every other component sees
    that route's kubeconfig as ``masterKubeConfig``.
    """
    config = resolved.config
    route = shared.route
    if route is not None and route.component != name:
        config = dataclasses.replace(config, master_kube_config=route.kubeconfig)
    else:
        route = None
    return PlanContext(
        config=config,
        options=options,
        record=inventory.components[name].record,
        selected=resolved.selected,
        state_dir=os.path.join(state_dir, name),
        network_providers=inventory.provider_records(),
        hooks=inventory.host.hooks,
        node_state_dir=state_dir,
        dependents=shared.dependents(name),
        api_route=route,
    )


def _component_plan(provided: Provided[ComponentRecord], context: PlanContext) -> ComponentPlan:
    try:
        plan = provided.record.component.plan(context)
    except NodehostError:
        raise
    except Exception as error:
        raise PluginError(
            f"component {provided.record.name} ({provided.source()}) failed to plan: "
            f"{type(error).__name__}: {error}"
        ) from error
    if not isinstance(plan, ComponentPlan):
        raise PluginError(
            f"component {provided.record.name} ({provided.source()}) returned "
            f"{type(plan).__name__} from plan(), not a ComponentPlan"
        )
    return plan


def _resolve_program(
    name: str,
    plan: ComponentPlan,
    overrides: Mapping[str, str],
    standins: StandinMode,
    standin_scripts: Mapping[str, str],
) -> tuple[ComponentPlan, bool]:
    """The plan with its program's path, and whether that program is a stand-in."""
    if not isinstance(plan.run, ProcessSpec):
        return plan, False
    program = resolve_program(
        name,
        plan.run.argv[0],
        overrides=overrides,
        standins=standins,
        standin_scripts=standin_scripts,
    )
    run = dataclasses.replace(plan.run, argv=(program.path, *plan.run.argv[1:]))
    notes = plan.notes
    if program.standin:
        notes = (*notes, f"STAND-IN: {plan.run.argv[0]} is replaced by {program.path}")
    return dataclasses.replace(plan, run=run, notes=notes), program.standin


def default_state_dir(given: str | None = None) -> str:
    """``--state-dir`` (``given``) made absolute, else ``$NODEHOST_STATE_DIR``, else
    ``/var/lib/nodehost`` as root, else the XDG state dir."""
    configured = given or os.environ.get("NODEHOST_STATE_DIR")
    if configured:
        return os.path.abspath(configured)
    if os.geteuid() == 0:
        return "/var/lib/nodehost"
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(base, "nodehost")

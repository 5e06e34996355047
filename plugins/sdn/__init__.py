"""The ``sdn`` component: sets up the node's pod network through a network provider.

Origin's ``plugins`` component.  ``networkConfig.networkPluginName`` names the
provider (matched case-insensitively against every provider record, built-in
or third-party); the component delegates its plan to that provider.

Every name Origin 3.x gave a meaning keeps it (:ref:`origin-network-plugins`), unless an installed
provider claims the name:

``""``
    no SDN; the component is inactive.
``cni``
    what openshift-ansible wrote for Calico, Flannel, Kuryr, Nuage and Contiv:
    Origin started no SDN and passed ``--network-plugin=cni`` to the kubelet,
    so pods got the network another agent's CNI configuration describes.  The
    component is inactive; a current kubelet has no ``--network-plugin`` (CNI
    moved into the container runtime, which reads ``/etc/cni/net.d``).
``redhat/openshift-ovs-subnet``, ``-multitenant``, ``-networkpolicy``
    the OpenShift SDN, which Origin ran itself (since 3.10 in the
    ``openshift-sdn`` DaemonSet, not in the node process) with the kubelet on
    CNI.  nodehost has no OVS SDN: without a provider of that name the
    component is inactive and validation warns that the pod network must come
    from another agent.

Built-in providers: ``bridge`` (:mod:`.bridge`, writes a CNI bridge
configuration) and ``external`` (:mod:`.external`, waits for another agent's).
Each validates its own config section here, only when the sdn component is
selected and it is the configured provider.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nodehost import (
    ComponentRecord,
    NetworkProviderRecord,
    Problem,
    Severity,
    ValidationScope,
    hookimpl,
)
from nodehost.cni import CniNetwork, node_network, provider_section_problems
from nodehost.component import ComponentPlan, PlanContext
from nodehost.errors import InvalidSetting
from nodehost.plugins.sdn import bridge, external

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.check import Check, CheckContext
    from nodehost.config.schema import NodeConfig

PATH = "networkConfig.networkPluginName"

#: Origin's OpenShift SDN plugin names (:ref:`origin-network-plugins`); nodehost has no built-in for
#: them.
OPENSHIFT_SDN_NAMES = (
    "redhat/openshift-ovs-subnet",
    "redhat/openshift-ovs-multitenant",
    "redhat/openshift-ovs-networkpolicy",
)

#: The name with which Origin ran no SDN and put the kubelet on CNI (another agent's network).
CNI = "cni"

#: Why the component is inactive for the names Origin gave a meaning, when no provider has them.
_CNI_REASON = (
    "networkPluginName cni: the pod network is another agent's CNI configuration, as in "
    "Origin, which started no SDN (the container runtime reads /etc/cni/net.d)"
)
_OPENSHIFT_SDN_WARNING = (
    "{name!r} is the OpenShift SDN, which nodehost does not run: the kubelet uses CNI (as "
    "Origin's did) and the pod network must come from another agent, as Origin 3.10+'s "
    "openshift-sdn DaemonSet provided it; install a plugin package that provides {name!r} "
    "to run it here"
)

BUILTIN_PROVIDERS = (bridge.BridgeProvider(), external.ExternalProvider())


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name="sdn",
            summary="Pod network: the provider named by networkConfig.networkPluginName.",
            component=Sdn(),
            aliases=("plugins",),
            groups=("network",),
            validation_scope=ValidationScope.IN_CLUSTER,
            runs_network_providers=True,
        )
    ]


@hookimpl
def nodehost_network_providers() -> list[NetworkProviderRecord]:
    bridge_provider, external_provider = BUILTIN_PROVIDERS
    return [
        NetworkProviderRecord(
            name=bridge.NAME,
            summary=bridge.SUMMARY,
            provider=bridge_provider,
            config_section=bridge.SECTION,
            config_schema=bridge.SCHEMA,
        ),
        NetworkProviderRecord(
            name=external.NAME,
            summary=external.SUMMARY,
            provider=external_provider,
            config_section=external.SECTION,
            config_schema=external.SCHEMA,
        ),
    ]


@hookimpl
def nodehost_validate_config(
    config: NodeConfig,
    selected: frozenset[str],
    providers: Mapping[str, NetworkProviderRecord],
    plugin_failures: Sequence[str],
) -> list[Problem]:
    """The provider name; a built-in provider's section when it is the configured one, and
    the content of every other built-in provider's section set in the file."""
    name = configured_provider(config) if "sdn" in selected else ""
    record = providers.get(name.lower()) if name else None
    return _idle_sections(config, selected, record, providers) + _configured_problems(
        config, name, record, providers, plugin_failures
    )


def _idle_sections(
    config: Any,
    selected: frozenset[str],
    configured: NetworkProviderRecord | None,
    providers: Mapping[str, Any],
) -> list[Problem]:
    """Problems of the built-in providers' sections set in the file for a provider that
    will not run (:func:`~nodehost.config.sections.idle_section_problems`)."""
    problems: list[Problem] = []
    for record in {id(record): record for record in providers.values()}.values():
        builtin = any(record.provider is provider for provider in BUILTIN_PROVIDERS)
        if not builtin or record is configured or not record.config_section:
            continue
        provider: Any = record.provider
        problems += provider_section_problems(
            config, selected, record.name, record.config_section, provider.problems(config)
        )
    return problems


def _configured_problems(
    config: Any,
    name: str,
    record: NetworkProviderRecord | None,
    providers: Mapping[str, NetworkProviderRecord],
    plugin_failures: Sequence[str],
) -> list[Problem]:
    """The configured provider's name, and a built-in provider's own section."""
    if not name:
        return []
    if record is None and name.lower() == CNI:
        return []
    if record is None and name.lower() in OPENSHIFT_SDN_NAMES and not plugin_failures:
        detail = _OPENSHIFT_SDN_WARNING.format(name=name)
        return [Problem.invalid(PATH, name, detail, severity=Severity.WARNING)]
    if record is None:
        return [
            Problem.invalid(PATH, name, unknown_provider_detail(name, providers, plugin_failures))
        ]
    if any(record.provider is provider for provider in BUILTIN_PROVIDERS):
        builtin: Any = record.provider  # a built-in provider checks its own section
        return builtin.problems(config)
    return []


def configured_provider(config: object) -> str:
    """The provider name the config selects ("" for none)."""
    return (config.network_config.network_plugin_name or "").strip()  # type: ignore[attr-defined]


def unknown_provider_detail(
    name: str, providers: Mapping[str, NetworkProviderRecord], plugin_failures: Sequence[str]
) -> str:
    """Why ``name`` is not usable: installed providers, a suggestion, failed plugins."""
    installed = sorted({record.name for record in providers.values()})
    listing = ", ".join(installed) if installed else "none"
    if name.lower() in OPENSHIFT_SDN_NAMES:
        detail = (
            f"the OpenShift SDN {name!r} is not built into nodehost; a plugin package must "
            f"provide it (installed providers: {listing})"
        )
    else:
        detail = f"no network provider is named {name!r} (installed: {listing}, or {CNI!r} for "
        detail += "another agent's CNI network)"
        from nodehost.suggest import closest

        suggestion = closest(name.lower(), [*providers, CNI])
        if suggestion is not None:
            shown = providers[suggestion].name if suggestion in providers else CNI
            detail += f"; did you mean {shown!r}?"
    if plugin_failures:
        detail += "; " + "; ".join(plugin_failures)
    return detail


class Sdn:
    """Delegates planning to the configured network provider."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        name = configured_provider(context.config)
        if not name:
            return ComponentPlan(
                inactive_reason="no network provider configured (networkConfig.networkPluginName)"
            )
        record = context.network_providers.get(name.lower())
        if record is None and name.lower() == CNI:
            return ComponentPlan(inactive_reason=_CNI_REASON)
        if record is None and name.lower() in OPENSHIFT_SDN_NAMES:
            return ComponentPlan(inactive_reason=_OPENSHIFT_SDN_WARNING.format(name=name))
        if record is None:
            raise InvalidSetting(
                Problem.not_supported("networkConfig.networkPluginName", name,
                                      sorted(context.network_providers))
            )  # fmt: skip
        plan = record.provider.plan(context)
        return ComponentPlan(
            run=plan.run,
            files=plan.files,
            inactive_reason=plan.inactive_reason,
            notes=(f"network provider: {record.name}", *plan.notes),
        )

    def cni_network(self, context: PlanContext) -> CniNetwork | None:
        """The configured provider's CNI network (see :func:`nodehost.cni.node_network`)."""
        return node_network(context)


@hookimpl
def nodehost_checks(context: CheckContext) -> list[Check]:
    """The pod network's host checks (:mod:`nodehost.plugins.sdn.checks`), if it is selected
    and active (its module is not loaded to answer "none")."""
    if context.planned("sdn") is None:
        return []
    from nodehost.plugins.sdn.checks import sdn_checks

    return sdn_checks(context)

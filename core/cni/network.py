"""The node's pod network as a container runtime needs to know it: :class:`CniNetwork`.

A network provider describes its network through the optional
``cni_network(context)`` method of :class:`nodehost.component.NetworkProvider`;
:func:`node_network` finds the provider the configuration selects and asks it.
``nodehost network check`` and container-runtime components use that
description, never a provider's name.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nodehost.cni.conflist import ConflistError, as_conflist, first_network
from nodehost.cni.plugins import DEFAULT_BIN_DIRS
from nodehost.errors import RuntimeFailure
from nodehost.frozen import frozen
from nodehost.pluginhost.records import Topology
from nodehost.pluginhost.selection import Selection

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.component import PlanContext
    from nodehost.pluginhost.records import NetworkProviderRecord, Problem

DEFAULT_CONF_DIR = "/etc/cni/net.d"

#: JSON Schema of the two directory keys every CNI provider section has.
CNI_DIRS_SCHEMA: dict[str, Any] = {
    "cniConfDir": {
        "type": "string",
        "default": DEFAULT_CONF_DIR,
        "description": "Where container runtimes read CNI configurations (absolute).",
    },
    "cniBinDirs": {
        "type": "array",
        "items": {"type": "string"},
        "default": list(DEFAULT_BIN_DIRS),
        "description": "Where the CNI plugin binaries are, searched in order (absolute paths).",
    },
}


@frozen
class HostLink:
    """A host link the network's plugins create on first use (the bridge): name and kind."""

    name: str
    kind: str = "bridge"


@frozen
class CniNetwork:
    """One node's CNI network.

    ``provider``   the provider's name (for messages).
    ``conf_dir``   where runtimes look for network configurations.
    ``bin_dirs``   where they look for plugin binaries (``CNI_PATH``), in order.
    ``conflist``   the configuration list the provider writes, or None when
                   another agent writes it (then :meth:`current` reads ``conf_dir``).
    ``file_name``  the file in ``conf_dir`` the provider writes it to.
    ``mtu``        the pod interfaces' MTU, if the provider sets one.
    ``loopback``   whether the runtime brings each pod's ``lo`` up with the
                   ``loopback`` plugin (CNI treats loopback as a network of its own).
    ``host_links`` links the plugins create on the host (nodehost removes them
                   on ``network cleanup`` when they did not exist before it).
    ``master``     for a layer-2 network: the host link the pods' interfaces
                   hang off (macvlan's and ipvlan's ``master``).
    ``isolation``  for a layer-2 network whose pods on one master cannot reach
                   each other (macvlan ``private``/``vepa``/``passthru``): why,
                   in a few words; the checks then prove each pod alone.
    ``topology``   filled in by nodehost from the provider record's
                   :class:`~nodehost.Topology` (:func:`node_network`,
                   :func:`~nodehost.cni.conflist_plan`); set it yourself only
                   when you build a network by hand for a test.
    """

    provider: str
    conf_dir: str = DEFAULT_CONF_DIR
    bin_dirs: tuple[str, ...] = DEFAULT_BIN_DIRS
    conflist: Mapping[str, Any] | None = None
    file_name: str | None = None
    mtu: int | None = None
    loopback: bool = True
    host_links: tuple[HostLink, ...] = ()
    master: str | None = None
    isolation: str | None = None
    topology: Topology = Topology.HOST

    def __post_init__(self) -> None:
        if (self.conflist is None) != (self.file_name is None):
            raise ValueError("CniNetwork needs both conflist and file_name, or neither")
        if self.conflist is not None:
            as_conflist(self.conflist, f"network provider {self.provider}")
        if self.topology is Topology.L2 and not self.master:
            raise ValueError(
                f"network provider {self.provider}: a layer-2 network needs its master link "
                "(CniNetwork.master)"
            )

    @property
    def conf_path(self) -> str | None:
        """Where the provider writes its list (None if it writes none)."""
        return None if self.file_name is None else os.path.join(self.conf_dir, self.file_name)

    def current(self) -> tuple[str, dict[str, Any]]:
        """``(source, conflist)``: the provider's list, else the first valid file in ``conf_dir``.

        Raises :class:`RuntimeFailure` when the provider writes none and
        ``conf_dir`` holds no valid configuration.
        """
        if self.conflist is not None:
            assert self.conf_path is not None
            return self.conf_path, as_conflist(self.conflist, self.conf_path)
        found = first_network(self.conf_dir)
        if found is None:
            raise RuntimeFailure(
                f"network provider {self.provider}: no CNI configuration in {self.conf_dir} yet "
                "(the agent that manages this node's network writes it)"
            )
        return found


def node_network(context: PlanContext) -> CniNetwork | None:
    """The network of the provider ``networkConfig.networkPluginName`` names.

    None when no provider is configured, the name is unknown, or the provider
    has no ``cni_network`` method (its network is not CNI, or not described).
    Works from any component's context: providers describe their network from
    the configuration alone.
    """
    record = configured_record(context)
    if record is None:
        return None
    describe = getattr(record.provider, "cni_network", None)
    if describe is None:
        return None
    network = describe(context)
    if network is None:
        return None
    if not isinstance(network, CniNetwork):
        raise RuntimeFailure(
            f"network provider {record.name}: cni_network() returned {type(network).__name__}, "
            "not a nodehost.cni.CniNetwork"
        )
    return with_topology(network, record)


def configured_provider_name(config: Any) -> str:
    """``networkConfig.networkPluginName`` as providers are matched: stripped, lower case."""
    return str(config.network_config.network_plugin_name or "").strip().lower()


def unrun_provider(config: Any, runners: frozenset[str]) -> str:
    """The provider ``networkPluginName`` names when no loaded component can run it
    (``runners``, :attr:`~nodehost.pluginhost.selection.Catalog.network_runners`, is empty:
    the plugin that provides one is disabled or failed); "" otherwise."""
    name = str(config.network_config.network_plugin_name or "").strip()
    return name if name and not runners else ""


def selects_provider(config: Any, selected: frozenset[str], name: str) -> bool:
    """Whether the pod network runs provider ``name``: a selected component runs network
    providers (:class:`~nodehost.pluginhost.selection.Selection`) and the config names it.

    What a provider's ``nodehost_validate_config`` asks before checking its section,
    passing on the ``selected`` it was given.
    """
    runs = isinstance(selected, Selection) and selected.runs_network_providers
    return runs and configured_provider_name(config) == name.lower()


def provider_section_problems(
    config: Any, selected: frozenset[str], name: str, section: str, problems: list[Problem]
) -> list[Problem]:
    """What a provider's ``nodehost_validate_config`` returns for its ``section``.

    ``problems`` are every problem of the section (its reader's): all of them
    when the pod network runs provider ``name`` (:func:`selects_provider`);
    otherwise a section set in the file is still checked -- its bad content is
    an error, and a warning says it has no effect unless the provider runs
    (:func:`nodehost.config.sections.idle_section_problems`).
    """
    if selects_provider(config, selected, name):
        return problems
    from nodehost.config.sections import idle_section_problems

    runs_when = f"{_runner_words(selected)} runs with networkConfig.networkPluginName {name}"
    return idle_section_problems(config, section, problems, runs_when)


def _runner_words(selected: frozenset[str]) -> str:
    """The components that run network providers, for a message: "the X component"."""
    runners = sorted(selected.network_runners) if isinstance(selected, Selection) else []
    if not runners:
        return "a component that runs network providers"
    return f"the {' or '.join(runners)} component"


def configured_record(context: PlanContext) -> NetworkProviderRecord | None:
    """The record of the provider ``networkConfig.networkPluginName`` names (None: none/unknown)."""
    name = configured_provider_name(context.config)
    return context.network_providers.get(name) if name else None


def with_topology(network: CniNetwork, record: NetworkProviderRecord | None) -> CniNetwork:
    """``network`` with the topology its provider's record declares (unchanged without a record).

    Raises :class:`RuntimeFailure` when the record declares a layer-2
    topology and the network names no master link.
    """
    if record is None or network.topology is record.topology:
        return network
    try:
        return dataclasses.replace(network, topology=record.topology)
    except ValueError as error:
        raise RuntimeFailure(str(error)) from None


__all__ = [
    "CNI_DIRS_SCHEMA",
    "DEFAULT_CONF_DIR",
    "CniNetwork",
    "ConflistError",
    "HostLink",
    "configured_provider_name",
    "configured_record",
    "node_network",
    "provider_section_problems",
    "selects_provider",
    "with_topology",
]

"""Which component runs network providers is its record's ``runs_network_providers``.

A provider's section is in effect only while such a component is selected; core
finds it through the selection it hands to ``nodehost_validate_config``
(:class:`~nodehost.pluginhost.selection.Selection`), never by a component's name,
so a third party's component that runs providers counts as sdn does.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from nodehost.cni import provider_section_problems, selects_provider
from nodehost.cni.network import unrun_provider
from nodehost.component import ComponentPlan
from nodehost.pluginhost.records import ComponentRecord
from nodehost.pluginhost.selection import Catalog, Selection, SelectionRequest, select


class Nothing:
    def plan(self, context: object) -> ComponentPlan:
        return ComponentPlan()


def record(name: str, **fields: Any) -> ComponentRecord:
    return ComponentRecord(name=name, summary=name, component=Nothing(), **fields)


#: A catalog whose network runner is a third party's "podnet", not the built-in sdn.
CATALOG = Catalog(
    {"kubelet": record("kubelet"), "podnet": record("podnet", runs_network_providers=True)}
)


def config(provider: str, **extra: Any) -> Any:
    """What the helpers read of a NodeConfig: networkPluginName and the extra sections."""
    return SimpleNamespace(
        network_config=SimpleNamespace(network_plugin_name=provider), extra=extra
    )


def test_the_selection_knows_the_components_that_run_providers() -> None:
    selected = select(CATALOG, SelectionRequest())
    assert isinstance(selected, Selection)
    assert (selected.network_runners, selected.runs_network_providers) == ({"podnet"}, True)
    alone = select(CATALOG, SelectionRequest(components="kubelet"))
    assert (alone.network_runners, alone.runs_network_providers) == ({"podnet"}, False)


def test_a_provider_is_selected_only_while_a_component_that_runs_providers_is() -> None:
    assert selects_provider(config(" PTP "), select(CATALOG, SelectionRequest()), "ptp")
    assert not selects_provider(
        config("ptp"), select(CATALOG, SelectionRequest(disable="podnet")), "ptp"
    )
    assert not selects_provider(config("bridge"), select(CATALOG, SelectionRequest()), "ptp")


def test_a_name_alone_does_not_run_providers() -> None:
    assert not selects_provider(config("ptp"), frozenset({"sdn", "podnet"}), "ptp")


def test_an_idle_provider_section_names_the_component_that_would_run_it() -> None:
    selected = select(CATALOG, SelectionRequest(components="kubelet"))
    (problem,) = provider_section_problems(config("ptp", ptp={}), selected, "ptp", "ptp", [])
    assert problem.render() == (
        "ptp: has no effect in nodehost: it is used only when the podnet component runs "
        "with networkConfig.networkPluginName ptp"
    )


def test_a_provider_is_unrun_when_no_loaded_component_runs_providers() -> None:
    assert unrun_provider(config("ptp"), CATALOG.network_runners) == ""
    assert unrun_provider(config("ptp"), frozenset()) == "ptp"
    assert unrun_provider(config(""), frozenset()) == ""

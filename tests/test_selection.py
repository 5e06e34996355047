"""Component selection: Origin's --enable/--disable algebra over component records."""

from __future__ import annotations

from typing import Any

import pytest

from nodehost.component import ComponentPlan
from nodehost.errors import PluginError, UsageError
from nodehost.pluginhost.records import ComponentRecord
from nodehost.pluginhost.selection import Catalog, SelectionRequest, select, start_order


class Nothing:
    def plan(self, context: object) -> ComponentPlan:
        return ComponentPlan()


def record(name: str, **kwargs: object) -> ComponentRecord:
    return ComponentRecord(name=name, summary=name, component=Nothing(), **kwargs)


@pytest.fixture
def origin() -> Catalog:
    """Origin's node components: network = proxy + plugins (sdn); dns not in network."""
    return Catalog(
        {
            "kubelet": record("kubelet", after=("sdn",)),
            "sdn": record("sdn", aliases=("plugins",), groups=("network",)),
            "proxy": record("proxy", groups=("network",)),
            "dns": record("dns"),
            "bootstrap": record("bootstrap", default=False, enable_if=lambda o: bool(o)),
        }
    )


def sel(catalog: Catalog, options: object = None, **request: object) -> set[str]:
    return set(select(catalog, SelectionRequest(**request), options))


def test_default_is_every_default_component(origin: Catalog) -> None:
    assert sel(origin) == {"kubelet", "sdn", "proxy", "dns"}


def test_enable_if_adds_a_component_to_the_default(origin: Catalog) -> None:
    assert "bootstrap" in sel(origin, options=True)


def test_components_selects_exactly_the_named(origin: Catalog) -> None:
    assert sel(origin, components="kubelet,proxy") == {"kubelet", "proxy"}


def test_group_expands_to_its_members(origin: Catalog) -> None:
    assert sel(origin, components="network") == {"sdn", "proxy"}


def test_all_group_selects_everything(origin: Catalog) -> None:
    assert sel(origin, components="all") == set(origin.records)


def test_origin_alias_plugins_means_sdn(origin: Catalog) -> None:
    assert sel(origin, enable="plugins") == {"sdn"}


def test_disable_subtracts_from_the_default(origin: Catalog) -> None:
    assert sel(origin, disable="kubelet") == {"sdn", "proxy", "dns"}


def test_disable_group_subtracts_its_members(origin: Catalog) -> None:
    assert sel(origin, disable="network") == {"kubelet", "dns"}


def test_spaces_around_names_are_ignored(origin: Catalog) -> None:
    assert sel(origin, components="kubelet, proxy") == {"kubelet", "proxy"}


def test_unknown_enabled_name_lists_the_known_ones(origin: Catalog) -> None:
    with pytest.raises(UsageError) as raised:
        sel(origin, enable="kubelet,bogus,zz")
    assert str(raised.value).startswith("the following components are not recognized: bogus, zz")
    assert "known: bootstrap, dns, kubelet, proxy, sdn" in str(raised.value)
    assert raised.value.param == "--enable"


def test_unknown_disabled_name_is_an_error(origin: Catalog) -> None:
    with pytest.raises(UsageError, match="not recognized: nope") as raised:
        sel(origin, disable="nope")
    assert raised.value.param == "--disable"


def test_both_enabled_and_disabled_is_an_error_when_enable_is_explicit(origin: Catalog) -> None:
    with pytest.raises(UsageError, match="can't be both disabled and enabled: proxy"):
        sel(origin, enable="kubelet,proxy", disable="proxy")


def test_disabling_a_default_component_is_not_a_conflict(origin: Catalog) -> None:
    assert sel(origin, disable="proxy") == {"kubelet", "sdn", "dns"}


def test_empty_selection_is_an_error_listing_allowed_names(origin: Catalog) -> None:
    with pytest.raises(UsageError) as raised:
        sel(origin, disable="all")
    assert str(raised.value) == (
        "at least one node component must be enabled (bootstrap, dns, kubelet, proxy, sdn)"
    )


def test_components_and_enable_together_are_refused(origin: Catalog) -> None:
    with pytest.raises(UsageError, match="mean the same"):
        sel(origin, components="kubelet", enable="proxy")


def test_unknown_hint_is_appended(origin: Catalog) -> None:
    request = SelectionRequest(components="flannel")
    with pytest.raises(UsageError, match="plugin 'flannel' failed to load"):
        select(origin, request, unknown_hint=lambda name: f"plugin {name!r} failed to load")


def test_missing_requirement_is_an_error() -> None:
    catalog = Catalog({"a": record("a", requires=("b",)), "b": record("b")})
    with pytest.raises(UsageError, match="'a' requires b, which is not selected"):
        select(catalog, SelectionRequest(components="a"))


def test_start_order_puts_dependencies_first(origin: Catalog) -> None:
    order = start_order(origin, {"kubelet", "sdn", "proxy"})
    assert [name for name, _ in order] == ["proxy", "sdn", "kubelet"]
    assert dict(order)["kubelet"] == ("sdn",)


def test_after_an_unselected_component_is_ignored(origin: Catalog) -> None:
    assert start_order(origin, {"kubelet"}) == [("kubelet", ())]


def test_dependency_cycle_is_an_error() -> None:
    catalog = Catalog({"a": record("a", after=("b",)), "b": record("b", after=("a",))})
    with pytest.raises(PluginError, match="a, b wait for each other"):
        start_order(catalog, {"a", "b"})


def test_expand_keeps_unknown_names(origin: Catalog) -> None:
    assert origin.expand("network,xyz") == {"sdn", "proxy", "xyz"}
    assert origin.expand("") == set()


def test_a_plan_asks_each_component_once_what_it_starts_after(
    node_folder: Any, node_plan: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The components' contexts take who waits for them from one table per plan, not from
    asking every component again for each of them."""
    asked: list[str] = []
    ask = Catalog.starts_after

    def counted(self: Catalog, name: str) -> set[str]:
        asked.append(name)
        return ask(self, name)

    monkeypatch.setattr(Catalog, "starts_after", counted)
    plan = node_plan(node_folder.config_path, components="kubelet,proxy,bootstrap,apilb")
    assert len(plan.components) == 4
    assert sorted(asked) == sorted(2 * [c.name for c in plan.components])  # the order, the table

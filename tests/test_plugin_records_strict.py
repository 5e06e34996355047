"""Records are checked strictly when a plugin loads, and a bad record fails only its plugin.

Each defect below was once accepted: ``after="proxy"`` read as the components
p, r, o, x, y; ``config_sections="badStr"`` as seven sections; a ``requires``
naming a component nobody provides broke ``config validate`` for every file; a
third-party section took over ``bridgeNetwork`` or Origin's ``networkConfig``.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodehost import ComponentRecord, NetworkProviderRecord, OptionRecord, hookimpl
from nodehost.component import ComponentPlan
from nodehost.pluginhost.inventory import Inventory
from nodehost.pluginhost.manager import LoadOptions, PluginHost


class Nothing:
    def plan(self, context: Any) -> ComponentPlan:
        return ComponentPlan()


def with_plugins(*plugins: tuple[str, object]) -> Inventory:
    host = PluginHost().load(LoadOptions(entry_points=False))
    for name, plugin in plugins:
        host.register(plugin, name, kind="entrypoint")
    return Inventory.from_host(host)


def giving(**fields: Any) -> object:
    """A plugin whose one component record is built, inside its hook, with ``fields``."""

    class Plugin:
        @hookimpl
        def nodehost_components(self) -> list[ComponentRecord]:
            return [ComponentRecord(fields.pop("name", "widget"), "", Nothing(), **fields)]

    return Plugin()


def providing(**fields: Any) -> object:
    class Plugin:
        @hookimpl
        def nodehost_network_providers(self) -> list[NetworkProviderRecord]:
            return [NetworkProviderRecord(fields.pop("name", "ipvlan2"), "", Nothing(), **fields)]

    return Plugin()


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"after": "proxy"}, "after must be a tuple of names, not the string 'proxy'"),
        ({"before": "kubelet"}, "before must be a tuple of names, not the string 'kubelet'"),
        ({"requires": "dns"}, "requires must be a tuple of names, not the string 'dns'"),
        ({"groups": "network"}, "groups must be a tuple of names, not the string 'network'"),
        ({"aliases": "wid"}, "aliases must be a tuple of names, not the string 'wid'"),
        ({"config_sections": "badStr"}, "config_sections must be a tuple of names, not the str"),
        ({"after": ["proxy"]}, "after must be a tuple, not list"),
        ({"after": ("proxy", 3)}, "after holds 3, not a non-empty string"),
        ({"config_schema": ["x"]}, "config_schema must be a mapping keyed by strings"),
        ({"standins": {1: "x"}}, "standins must be a mapping keyed by strings"),
        ({"validation_scope": 3}, "validation_scope must be a nodehost.ValidationScope"),
        ({"runs_network_providers": "yes"}, "runs_network_providers must be True or False"),
        ({"default": None}, "default must be True or False"),
    ],
)
def test_a_wrongly_typed_record_field_fails_its_plugin_alone(
    fields: dict[str, Any], error: str
) -> None:
    inventory = with_plugins(("bad", giving(**fields)), ("good", giving(name="gadget")))
    bad = inventory.host.infos["bad"]
    assert (bad.status, bad.hook) == ("failed", "nodehost_components")
    assert error in bad.error
    assert "widget" not in inventory.catalog.records
    assert inventory.host.infos["good"].status == "active"
    assert "gadget" in inventory.catalog.records


def test_a_provider_record_with_a_string_for_aliases_fails_alone() -> None:
    inventory = with_plugins(("bad", providing(aliases="ipv")))
    assert "aliases must be a tuple of names" in inventory.host.infos["bad"].error
    assert "ipvlan2" not in inventory.providers


@pytest.mark.parametrize("field_name", ["requires", "after", "before"])
def test_naming_an_unknown_component_fails_that_plugin_alone(field_name: str) -> None:
    inventory = with_plugins(
        ("bad", giving(**{field_name: ("kubelet", "nosuch")})),
        ("good", giving(name="gadget", after=("kubelet",), before=("all",))),
    )
    bad = inventory.host.infos["bad"]
    assert bad.status == "failed"
    assert bad.error == (f"component 'widget' names unknown component(s) in {field_name}: 'nosuch'")
    assert inventory.host.infos["good"].status == "active"
    assert {"kubelet", "gadget"} <= set(inventory.catalog.records)


def test_a_plugin_left_without_its_requirement_by_another_failure_fails_too() -> None:
    inventory = with_plugins(
        ("base", giving(name="base", after="kubelet")),  # fails: a string
        ("leaf", giving(name="leaf", requires=("base",))),
    )
    assert inventory.host.infos["base"].status == "failed"
    assert inventory.host.infos["leaf"].error == (
        "component 'leaf' names unknown component(s) in requires: 'base'"
    )


@pytest.mark.parametrize(
    ("plugin", "error"),
    [
        (giving(config_sections=("bridgeNetwork",)), "built-in plugin 'sdn'"),
        (giving(config_sections=("containerRuntime",)), "built-in plugin 'runtime'"),
        (giving(config_sections=("networkConfig",)), "nodehost (as a NodeConfig key)"),
        (providing(config_section="servingInfo"), "nodehost (as a NodeConfig key)"),
        (providing(config_section="kubeletArguments"), "built-in plugin 'kubelet'"),
    ],
)
def test_a_section_owned_elsewhere_fails_the_claimant_alone(plugin: object, error: str) -> None:
    inventory = with_plugins(("bad", plugin))
    info = inventory.host.infos["bad"]
    assert info.status == "failed"
    assert "is already taken by " + error in info.error
    assert "widget" not in inventory.catalog.records and "ipvlan2" not in inventory.providers
    assert inventory.known_sections() >= {"bridgeNetwork", "containerRuntime", "kubeletArguments"}


def test_two_third_party_plugins_claiming_one_section_both_fail() -> None:
    inventory = with_plugins(
        ("one", giving(config_sections=("ipvlanNetwork",))),
        ("two", providing(config_section="ipvlanNetwork")),
    )
    assert inventory.host.infos["one"].status == inventory.host.infos["two"].status == "failed"
    assert "disable one of them with --disable-plugin" in inventory.host.infos["one"].error


def test_a_component_and_a_provider_of_one_plugin_may_share_their_section() -> None:
    class Both:
        @hookimpl
        def nodehost_components(self) -> list[ComponentRecord]:
            return [ComponentRecord("ipvlan-agent", "", Nothing(), config_sections=("ipvlan",))]

        @hookimpl
        def nodehost_network_providers(self) -> list[NetworkProviderRecord]:
            return [NetworkProviderRecord("ipvlan2", "", Nothing(), config_section="ipvlan")]

    inventory = with_plugins(("both", Both()))
    assert inventory.host.infos["both"].status == "active"


def test_ordering_after_a_blocked_plugins_component_is_no_failure() -> None:
    host = PluginHost().load(LoadOptions(entry_points=False, disabled=frozenset({"proxy"})))
    host.register(giving(after=("proxy",), requires=("kubelet",)), "ordered", kind="entrypoint")
    inventory = Inventory.from_host(host)
    assert inventory.host.infos["ordered"].status == "active"
    assert "widget" in inventory.catalog.records


def declaring(*records: OptionRecord) -> object:
    class Plugin:
        @hookimpl
        def nodehost_options(self) -> list[OptionRecord]:
            return list(records)

    return Plugin()


def test_two_third_party_plugins_declaring_one_variable_both_fail() -> None:
    one = declaring(OptionRecord("--one", "One.", envvar="NODEHOST_SHARED"))
    two = declaring(OptionRecord("--two", "Two.", envvar="NODEHOST_SHARED"))
    inventory = with_plugins(("one", one), ("two", two), ("fine", declaring()))
    assert [info.status for info in map(inventory.host.infos.get, ("one", "two", "fine"))] == [
        "failed",
        "failed",
        "active",
    ]
    assert "environment variable 'NODEHOST_SHARED' is already taken by plugin 'two'" in (
        inventory.host.infos["one"].error or ""
    )
    assert not {item.plugin for item in inventory.options} & {"one", "two"}


def test_an_option_clashing_with_a_builtins_fails_the_third_party_plugin() -> None:
    inventory = with_plugins(("late", declaring(OptionRecord("--bootstrap-timeout", "Mine."))))
    assert inventory.host.infos["late"].status == "failed"
    assert "taken by built-in plugin 'bootstrap'" in (inventory.host.infos["late"].error or "")
    assert "late" not in {item.plugin for item in inventory.options}


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"name": "widget"}, "option name 'widget' must be '--' and lower-case words"),
        ({"name": "--Widget"}, "option name '--Widget' must be"),
        ({"help": ""}, "help must be a non-empty string"),
        ({"type": list}, "type must be one of str, int, float, bool"),
        ({"choices": "ab"}, "choices must be a tuple of names, not the string 'ab'"),
        ({"type": int, "choices": ("a",)}, "choices need type str"),
        ({"type": int, "default": "3"}, "default '3' is not a int"),
        ({"multiple": True, "default": ["a"]}, "the default of a multiple option must be a tuple"),
        ({"envvar": "WIDGET"}, "envvar 'WIDGET' must be NODEHOST_"),
    ],
)
def test_a_wrong_option_record_fails_its_plugin_alone(fields: dict[str, Any], error: str) -> None:
    arguments = {"name": "--widget", "help": "A widget.", **fields}

    class Plugin:
        @hookimpl
        def nodehost_options(self) -> list[OptionRecord]:
            return [OptionRecord(**arguments)]

    inventory = with_plugins(("bad", Plugin()), ("good", declaring(OptionRecord("--good", "G."))))
    assert inventory.host.infos["bad"].status == "failed"
    assert error in (inventory.host.infos["bad"].error or "")
    assert [item.record.name for item in inventory.options if item.plugin == "good"] == ["--good"]

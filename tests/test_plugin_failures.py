"""A plugin fails alone: clashes, raising hooks and misspelt hooks take down that plugin only.

``nodehost-rogue 3.0`` (``tests/data/rogue_dists``) misbehaves in every hook;
every other plugin, built-in or not, must keep working.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodehost import ComponentRecord, NetworkProviderRecord, hookimpl
from nodehost.component import ComponentPlan
from nodehost.errors import PluginError
from nodehost.pluginhost.inventory import Inventory
from nodehost.pluginhost.manager import BUILTIN_PLUGINS, LoadOptions, PluginHost

BUILTINS = [module.rsplit(".", 1)[-1] for module in BUILTIN_PLUGINS]


def load(**options: Any) -> Inventory:
    return Inventory.from_host(PluginHost().load(LoadOptions(**options)))


class Nothing:
    def plan(self, context: Any) -> ComponentPlan:
        return ComponentPlan()


def with_plugin(plugin: object, name: str = "local") -> Inventory:
    """The built-ins plus ``plugin`` registered as a third-party plugin."""
    host = PluginHost().load(LoadOptions(entry_points=False))
    host.register(plugin, name, kind="entrypoint")
    return Inventory.from_host(host)


def components(*records: ComponentRecord) -> object:
    class Plugin:
        @hookimpl
        def nodehost_components(self) -> list[ComponentRecord]:
            return list(records)

    return Plugin()


def test_a_clash_with_a_builtin_fails_only_the_third_party_plugin(rogue_dists: object) -> None:
    inventory = load()
    clash = inventory.host.infos["rogueclash"]
    assert (clash.status, clash.hook) == ("failed", "nodehost_components")
    assert clash.error == "component name 'kubelet' is already taken by built-in plugin 'kubelet'"
    assert inventory.component("kubelet").plugin == "kubelet"
    assert "sidecar" not in inventory.catalog.records  # the whole plugin is out
    assert inventory.host.infos["fakegood"].status == "active"
    assert "echo" in inventory.catalog.records


def test_an_alias_a_group_and_all_are_names_too() -> None:
    alias = with_plugin(components(ComponentRecord("x", "", Nothing(), aliases=("plugins",))))
    assert alias.host.infos["local"].error == (
        "component alias 'plugins' is already taken by built-in plugin 'sdn'"
    )
    group = with_plugin(components(ComponentRecord("network", "", Nothing())))
    assert "component name 'network' is already taken by built-in plugin" in (
        group.host.infos["local"].error
    )
    every = with_plugin(components(ComponentRecord("all", "", Nothing())))
    assert "component name 'all' is already taken by nodehost" in every.host.infos["local"].error


def test_a_shared_group_is_no_clash() -> None:
    inventory = with_plugin(components(ComponentRecord("x", "", Nothing(), groups=("network",))))
    assert inventory.host.infos["local"].status == "active"
    assert inventory.catalog.expand("network") == {"sdn", "proxy", "x"}


def test_provider_names_clash_case_insensitively() -> None:
    class Provider:
        @hookimpl
        def nodehost_network_providers(self) -> list[NetworkProviderRecord]:
            return [NetworkProviderRecord("BRIDGE", "", Nothing())]

    inventory = with_plugin(Provider())
    info = inventory.host.infos["local"]
    assert (info.status, info.hook) == ("failed", "nodehost_network_providers")
    assert "network provider name 'bridge' is already taken by built-in plugin 'sdn'" in info.error


def test_a_misspelt_hook_gets_a_did_you_mean(rogue_dists: object) -> None:
    info = load().host.infos["roguetypo"]
    assert info.status == "failed"
    assert info.error == (
        "implements an unknown hook nodehost_validate_conifg "
        "(did you mean nodehost_validate_config?)"
    )


def test_a_raising_addhooks_unregisters_the_plugin(rogue_dists: object) -> None:
    inventory = load()
    info = inventory.host.infos["rogueaddhooks"]
    assert (info.status, info.hook) == ("failed", "nodehost_addhooks")
    assert "ImportError: rogue hookspecs are missing" in info.error
    assert not inventory.host.pm.has_plugin("rogueaddhooks")


def test_a_raising_adjust_hook_leaves_no_half_made_edit(rogue_dists: object) -> None:
    inventory = load()
    raw = {"nodeName": "node1"}
    inventory.host.hooks.adjust_config(raw, "node-config.yaml")
    assert raw == {"nodeName": "node1"}
    info = inventory.host.infos["rogueadjust"]
    assert (info.status, info.hook) == ("failed", "nodehost_adjust_config")
    assert not inventory.host.pm.has_plugin("rogueadjust")


def test_a_raising_kubelet_arguments_hook_contributes_nothing() -> None:
    from nodehost.component import PlanContext
    from nodehost.plugins.kubelet import contributed_arguments

    class Arguments:
        @hookimpl
        def nodehost_kubelet_arguments(self, config: Any) -> dict[str, list[str]]:
            raise OSError("no CNI here")

    class NotAList:
        @hookimpl
        def nodehost_kubelet_arguments(self) -> dict[str, str]:
            return {"network-plugin": "cni"}

    class Good:
        @hookimpl
        def nodehost_kubelet_arguments(self) -> dict[str, list[str]]:
            return {"max-pods": ["42"]}

    host = PluginHost().load(LoadOptions(entry_points=False))
    host.register(Arguments(), "raising", kind="entrypoint")
    host.register(NotAList(), "scalar", kind="entrypoint")
    host.register(Good(), "good", kind="entrypoint")
    context = PlanContext(None, None, None, frozenset(), "/tmp/kubelet", {}, host.hooks)  # type: ignore[arg-type]
    merged = contributed_arguments(context)
    assert merged["max-pods"] == ["42"] and "network-plugin" not in merged
    assert host.infos["raising"].error == "OSError: no CNI here"
    assert (
        host.infos["scalar"].error == "TypeError: gave kubelet argument 'network-plugin' a non-list"
    )
    assert host.infos["good"].status == "active"


def test_a_raising_lifecycle_hook_disables_the_plugin_and_others_still_hear(
    rogue_dists: object,
) -> None:
    heard = []

    class Listener:
        @hookimpl
        def nodehost_component_ready(self, name: str) -> None:
            heard.append(name)

    inventory = load()
    inventory.host.register(Listener(), "listener")
    inventory.host.hooks.component_ready(name="kubelet", seconds=0.1)
    inventory.host.hooks.component_ready(name="proxy", seconds=0.1)
    assert heard == ["kubelet", "proxy"]
    info = inventory.host.infos["roguelife"]
    assert (info.status, info.hook) == ("failed", "nodehost_component_ready")


def test_strict_plugins_makes_a_hook_failure_fatal() -> None:
    class Raising:
        @hookimpl
        def nodehost_component_stopped(self) -> None:
            raise RuntimeError("boom")

    host = PluginHost().load(LoadOptions(entry_points=False, strict=True))
    host.register(Raising(), "raising", kind="entrypoint")
    with pytest.raises(PluginError, match=r"'raising'.*failed in hook nodehost_component_stopped"):
        host.hooks.component_stopped(name="kubelet")


def test_a_builtin_that_fails_is_a_bug_not_a_disabled_plugin() -> None:
    host = PluginHost().load(LoadOptions(entry_points=False))
    with pytest.raises(PluginError, match="built-in plugin 'kubelet' failed in hook x"):
        host.disable_failed("kubelet", RuntimeError("bug"), "x")


WRONG_RESULTS = [
    # (hook, wrong result, what the failure says, how the facade calls it)
    (
        "nodehost_components",
        "notalist",
        "returned str, not a list of ComponentRecord",
        "components",
    ),
    ("nodehost_components", ["x"], "item 0 is str ('x'), not ComponentRecord", "components"),
    ("nodehost_network_providers", 7, "returned int, not a list of Network", "network_providers"),
    ("nodehost_adjust_config", {"nodeName": "x"}, "returned dict", "adjust_config"),
    ("nodehost_obtain_config", 42, "returned int (42), not a path", "obtain_config"),
    ("nodehost_describe_config", "one line", "returned str, not a list of str", "describe_config"),
    ("nodehost_component_started", "yes", "this hook returns None", "component_started"),
    ("nodehost_component_ready", 1, "this hook returns None", "component_ready"),
    ("nodehost_component_exited", [], "this hook returns None", "component_exited"),
    ("nodehost_component_stopped", {}, "this hook returns None", "component_stopped"),
]

FACADE_CALLS: dict[str, Any] = {
    "components": lambda hooks: hooks.components(),
    "network_providers": lambda hooks: hooks.network_providers(),
    "adjust_config": lambda hooks: hooks.adjust_config({}, "node-config.yaml"),
    "obtain_config": lambda hooks: hooks.obtain_config(None),
    "describe_config": lambda hooks: hooks.describe_config(None),
    "component_started": lambda hooks: hooks.component_started("kubelet", 1),
    "component_ready": lambda hooks: hooks.component_ready("kubelet", 0.1),
    "component_exited": lambda hooks: hooks.component_exited("kubelet", 0, False),
    "component_stopped": lambda hooks: hooks.component_stopped("kubelet"),
}


def returning(hook: str, value: object) -> object:
    """A plugin object whose ``hook`` takes no argument and returns ``value``."""

    def implementation(self: object) -> object:
        return value

    implementation.__name__ = hook
    return type("Wrong", (), {hook: hookimpl(implementation)})()


@pytest.mark.parametrize(("hook", "value", "message", "call"), WRONG_RESULTS)
def test_a_wrong_result_type_fails_the_plugin_as_raising_would(
    hook: str, value: object, message: str, call: str
) -> None:
    host = PluginHost().load(LoadOptions(entry_points=False))
    host.register(returning(hook, value), "wrong", kind="entrypoint")
    FACADE_CALLS[call](host.hooks)
    info = host.infos["wrong"]
    assert (info.status, info.hook) == ("failed", hook)
    assert message in (info.error or "")
    assert not host.pm.has_plugin("wrong")


def test_a_wrong_component_list_leaves_the_inventory_working() -> None:
    inventory = with_plugin(returning("nodehost_components", ["x"]), "wrong")
    assert inventory.host.infos["wrong"].status == "failed"
    assert "kubelet" in inventory.catalog.records


def test_a_validation_hook_returning_non_problems_is_its_plugin_problem() -> None:
    from nodehost.pluginhost.records import ValidationScope

    host = PluginHost().load(LoadOptions(entry_points=False, disabled=frozenset(BUILTINS)))
    host.register(
        returning("nodehost_validate_config", ["a string", 42]), "wrong", kind="entrypoint"
    )
    problems = host.hooks.validate_config(None, ValidationScope.NODE, frozenset(), {})  # type: ignore[arg-type]
    assert [problem.detail for problem in problems] == [
        f"plugin 'wrong' (-, entry point wrong = {__name__}): "
        "nodehost_validate_config returned a list whose item 0 is str ('a string'), not Problem; "
        "its rules were not checked (-v 4 shows the traceback)"
    ]
    assert host.infos["wrong"].hook == "nodehost_validate_config"


def test_metrics_collectors_without_collect_give_none() -> None:
    class Collector:
        def collect(self) -> list[object]:
            return []

    good = Collector()
    host = PluginHost().load(LoadOptions(entry_points=False))
    host.register(returning("nodehost_metrics_collectors", [object()]), "wrong", kind="entrypoint")
    host.register(returning("nodehost_metrics_collectors", [good]), "good", kind="entrypoint")
    collected = [item for item in host.hooks.metrics_collectors() if item[0] in {"good", "wrong"}]
    assert collected == [("good", good)]


def test_a_builtin_returning_the_wrong_type_is_a_bug() -> None:
    host = PluginHost().load(LoadOptions(entry_points=False))
    host.register(returning("nodehost_components", "x"), "odd", kind="builtin")
    with pytest.raises(PluginError, match="built-in plugin 'odd' failed in hook nodehost_comp"):
        host.hooks.components()


def test_an_override_naming_no_config_field_or_raising_fails_its_plugin_alone() -> None:
    """``nodehost_override_config``: a bad answer changes nothing; a good one still applies."""
    from nodehost.options import StartOptions
    from nodehost.testing.nodefolder import sample_config

    class Unknown:
        @hookimpl
        def nodehost_override_config(self) -> dict[str, object]:
            return {"no_such_field": 1}

    class Raising:
        @hookimpl
        def nodehost_override_config(self) -> None:
            raise OSError("no config here")

    class Good:
        @hookimpl
        def nodehost_override_config(self) -> dict[str, object]:
            return {"node_name": "overridden"}

    host = PluginHost().load(LoadOptions(entry_points=False))
    for plugin, name in ((Unknown(), "unknown"), (Raising(), "raising"), (Good(), "good")):
        host.register(plugin, name, kind="entrypoint")
    config = host.hooks.override_config(sample_config(), StartOptions())
    assert config.node_name == "overridden"
    assert host.infos["unknown"].error == "ValueError: not fields of NodeConfig: no_such_field"
    assert host.infos["raising"].error == "OSError: no config here"
    assert host.infos["good"].status == "active"

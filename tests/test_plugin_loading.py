"""Loading plugins: built-ins, entry points (good, broken, blocked, bad hook), clashes."""

from __future__ import annotations

import os

import pytest

from nodehost import hookimpl
from nodehost.errors import PluginError
from nodehost.pluginhost.inventory import Inventory
from nodehost.pluginhost.manager import BUILTIN_PLUGINS, LoadOptions, PluginHost

BUILTIN_NAMES = {module.rsplit(".", 1)[-1] for module in BUILTIN_PLUGINS}


def load(**options: object) -> PluginHost:
    return PluginHost().load(LoadOptions(**options))


def test_builtins_register_as_plugins_with_hooks() -> None:
    host = load(entry_points=False)
    for name in BUILTIN_NAMES:
        info = host.infos[name]
        assert (info.kind, info.status) == ("builtin", "active")
        assert "nodehost_components" in info.hooks


def test_builtin_components_are_all_known() -> None:
    inventory = Inventory.from_host(load(entry_points=False))
    assert set(inventory.catalog.records) == {
        "kubelet",
        "sdn",
        "proxy",
        "dns",
        "bootstrap",
        "runtime",
        "images",
        "mirror-rewrite",
        "localcluster",
        "apilb",
    }
    assert inventory.component("plugins").record.name == "sdn"


def test_good_entry_point_is_active_with_its_distribution(fake_dists: object) -> None:
    info = load().infos["fakegood"]
    assert (info.kind, info.status) == ("entrypoint", "active")
    assert (info.distribution, info.version) == ("nodehost-fake", "1.0")
    assert "nodehost_network_providers" in info.hooks


def test_broken_entry_point_is_recorded_not_raised(
    fake_dists: object, capsys: pytest.CaptureFixture[str]
) -> None:
    host = load()
    info = host.infos["fakebroken"]
    assert info.status == "failed"
    assert "ModuleNotFoundError" in info.error
    assert "nodehost_this_dependency_is_not_installed" in info.error
    logged = capsys.readouterr().err
    assert (
        "plugin failed to load" in logged and "fakebroken" in logged and "nodehost-fake" in logged
    )


def test_other_plugins_still_load_after_a_broken_one(fake_dists: object) -> None:
    host = load()
    assert host.infos["fakegood"].status == "active"
    assert host.pm.has_plugin("fakegood")


def test_strict_plugins_makes_a_broken_plugin_fatal(fake_dists: object) -> None:
    with pytest.raises(PluginError, match=r"fakebroken.*nodehost-fake 1\.0.*ModuleNotFoundError"):
        load(strict=True)


def test_blocked_plugin_is_never_imported(fake_dists: object) -> None:
    host = load(disabled=frozenset({"fakeblocked"}))
    assert host.infos["fakeblocked"].status == "blocked"
    assert "NODEHOST_FAKE_BLOCKED_IMPORTED" not in os.environ


def test_unblocked_plugin_is_imported(fake_dists: object) -> None:
    load()
    assert os.environ.get("NODEHOST_FAKE_BLOCKED_IMPORTED") == "1"


def test_environment_blocks_plugins_before_import(
    fake_dists: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NODEHOST_DISABLE_PLUGINS", "fakeblocked, fakebroken")
    host = PluginHost().load(LoadOptions.from_environment())
    assert host.infos["fakeblocked"].status == "blocked"
    assert host.infos["fakebroken"].status == "blocked"
    assert "NODEHOST_FAKE_BLOCKED_IMPORTED" not in os.environ


def test_no_plugins_loads_only_builtins(
    fake_dists: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NODEHOST_NO_PLUGINS", "1")
    host = PluginHost().load(LoadOptions.from_environment())
    assert set(host.infos) == BUILTIN_NAMES


def test_builtin_plugin_can_be_blocked(fake_dists: object) -> None:
    inventory = Inventory.from_host(load(disabled=frozenset({"dns"}), entry_points=False))
    assert inventory.host.infos["dns"].status == "blocked"
    assert "dns" not in inventory.catalog.records


def test_plugin_implementing_an_unknown_hook_is_unregistered_and_failed(fake_dists: object) -> None:
    host = load()
    info = host.infos["fakebadhook"]
    assert info.status == "failed"
    assert "nodehost_no_such_hook" in info.error
    assert not host.pm.has_plugin("fakebadhook")


def test_third_party_component_and_provider_are_indexed(fake_dists: object) -> None:
    inventory = Inventory.from_host(load())
    echo = inventory.component("echo")
    assert (echo.plugin, echo.distribution) == ("fakegood", "nodehost-fake 1.0")
    assert inventory.providers["flat"].plugin == "fakegood"


def test_two_third_party_plugins_claiming_one_name_both_fail_naming_each_other(
    twin_dists: object,
) -> None:
    inventory = Inventory.from_host(load())
    good, twin = inventory.host.infos["fakegood"], inventory.host.infos["faketwin"]
    assert (good.status, twin.status) == ("failed", "failed")
    assert good.hook == twin.hook == "nodehost_components"
    assert "'echo' is already taken by plugin 'faketwin' (nodehost-fake-twin 2.0)" in good.error
    assert "'echo' is already taken by plugin 'fakegood' (nodehost-fake 1.0)" in twin.error
    assert "echo" not in inventory.catalog.records and "flat" not in inventory.providers
    assert "kubelet" in inventory.catalog.records


def test_a_clash_is_fatal_under_strict_plugins(twin_dists: object) -> None:
    with pytest.raises(PluginError, match=r"'echo' is already taken by plugin"):
        Inventory.from_host(load(strict=True, disabled=frozenset({"fakebroken", "fakebadhook"})))


def test_disabling_one_twin_resolves_the_clash(twin_dists: object) -> None:
    inventory = Inventory.from_host(load(disabled=frozenset({"faketwin"})))
    assert inventory.component("echo").plugin == "fakegood"


def test_failure_hint_names_the_failed_plugin(fake_dists: object) -> None:
    host = load()
    hint = host.failure_hint("fakebroken")
    assert "fakebroken" in hint and "nodehost-fake 1.0" in hint and "failed to load" in hint


def test_registration_hook_that_raises_disables_a_third_party_plugin() -> None:
    from nodehost import hookimpl

    class Exploding:
        @hookimpl
        def nodehost_components(self) -> list[object]:
            raise RuntimeError("boom")

    host = load(entry_points=False)
    host.register(Exploding(), "exploding", kind="entrypoint")
    inventory = Inventory.from_host(host)
    assert host.infos["exploding"].status == "failed"
    assert "RuntimeError: boom" in host.infos["exploding"].error
    assert "kubelet" in inventory.catalog.records


def test_contributors_to_the_kubelets_hook_load_without_the_kubelet_plugin() -> None:
    host = load(entry_points=False, disabled=frozenset({"kubelet"}))
    host.pm.check_pending()
    assert host.infos["runtime"].status == "active"
    assert host.hooks.call_each("nodehost_kubelet_arguments", config=None) == []


def test_a_hook_a_plugin_added_is_called_through_the_facade_disabling_a_failing_plugin() -> None:
    class Broken:
        @hookimpl(optionalhook=True)
        def nodehost_kubelet_arguments(self) -> dict[str, list[str]]:
            raise ValueError("no socket")

    host = load(entry_points=False)
    host.register(Broken(), "broken")
    results = host.hooks.call_each(
        "nodehost_kubelet_arguments", config=None, selected=frozenset(), state_dir=""
    )
    assert "broken" not in [plugin for plugin, _ in results]
    info = host.infos["broken"]
    assert (info.status, info.hook, info.error) == (
        "failed",
        "nodehost_kubelet_arguments",
        "ValueError: no socket",
    )

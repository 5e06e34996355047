"""The hookspec module is the plugin author's reference: every hook states its contract."""

from __future__ import annotations

import inspect

import pytest

from nodehost import hookspecs

SECTIONS = ("**When**", "**Arguments**", "**Returns**", "**Kind**", "**Errors**")
HOOKS = [name for name in dir(hookspecs) if name.startswith("nodehost_")]


def test_there_are_hooks() -> None:
    assert {"nodehost_components", "nodehost_network_providers", "nodehost_validate_config"} <= set(
        HOOKS
    )


@pytest.mark.parametrize("name", HOOKS)
def test_every_hook_documents_its_contract(name: str) -> None:
    doc = inspect.getdoc(getattr(hookspecs, name)) or ""
    missing = [section for section in SECTIONS if section not in doc]
    assert not missing, f"{name} lacks {missing}"


@pytest.mark.parametrize("name", HOOKS)
def test_every_hook_has_a_facade_method(name: str) -> None:
    from nodehost.pluginhost.manager import Hooks

    assert hasattr(Hooks, name.removeprefix("nodehost_"))


def test_builtins_pass_check_pending() -> None:
    from nodehost.pluginhost.manager import LoadOptions, PluginHost

    host = PluginHost().load(LoadOptions(entry_points=False))
    host.pm.check_pending()

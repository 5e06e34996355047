"""The hookspec module is the plugin author's reference: every hook states its contract."""

from __future__ import annotations

import inspect
from typing import Any

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


#: Every hookspec module: the core's and those the built-in plugins add.
SPEC_MODULES = (
    "nodehost.hookspecs",
    "nodehost.plugins.kubelet.hookspecs",
    "nodehost.plugins.dns.hookspecs",
)


def hookspec_functions() -> dict[str, Any]:
    import importlib

    found: dict[str, Any] = {}
    for module_name in SPEC_MODULES:
        module = importlib.import_module(module_name)
        found.update({name: value for name, value in vars(module).items() if _hook(name, value)})
    return found


def _hook(name: str, value: Any) -> bool:
    return name.startswith("nodehost_") and inspect.isfunction(value)


@pytest.mark.parametrize("name", sorted(hookspec_functions()))
def test_every_hook_parameter_is_typed_not_any(name: str) -> None:
    """A plugin author reads the types from the spec: ``NodeConfig``, the context types."""
    spec = hookspec_functions()[name]
    annotations = inspect.get_annotations(spec)
    for parameter in inspect.signature(spec).parameters:
        assert annotations.get(parameter) not in (None, "Any"), f"{name}({parameter})"
    assert annotations.get("return") not in (None, "Any"), name


def builtin_hookimpls() -> list[tuple[str, str, Any]]:
    import importlib

    from nodehost.pluginhost.manager import BUILTIN_PLUGINS

    specs = hookspec_functions()
    found = []
    for module_name in BUILTIN_PLUGINS:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if _hook(name, value) and name in specs and value.__module__ == module_name:
                found.append((module_name, name, value))
    return found


@pytest.mark.parametrize(
    ("module_name", "name", "implementation"),
    builtin_hookimpls(),
    ids=[f"{module}:{name}" for module, name, _ in builtin_hookimpls()],
)
def test_a_builtin_hookimpl_takes_the_types_its_spec_names(
    module_name: str, name: str, implementation: Any
) -> None:
    """The built-ins are the examples authors copy: each parameter has its spec's type."""
    spec = inspect.get_annotations(hookspec_functions()[name])
    own = inspect.get_annotations(implementation)
    for parameter in inspect.signature(implementation).parameters:
        assert own.get(parameter) == spec[parameter], f"{module_name}.{name}({parameter})"

"""Finding a plugin module's hook implementations: what pluggy finds, looking closely only at
the functions ``hookimpl`` marks (``nodehost.pluginhost.manager``)."""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import types
from typing import Any

import pluggy
import pytest

from nodehost import PROJECT_NAME, hookimpl, hookspecs
from nodehost.pluginhost.manager import BUILTIN_PLUGINS, _new_manager


def edge_cases() -> types.ModuleType:
    """A module holding every kind of attribute a plugin module may hold."""
    module = types.ModuleType("nodehost_discovery_edges")

    @hookimpl(specname="nodehost_components")
    def listed_under_another_name() -> list[Any]:
        return []

    @hookimpl
    def nodehost_node_ready() -> None:
        pass

    def nodehost_node_stopping() -> None:  # named like a hook, not marked: not one
        pass

    class Holder:
        @hookimpl
        def nodehost_components(self) -> list[Any]:  # a class's, not the module's
            return []

    module.__dict__.update(
        listed_under_another_name=listed_under_another_name,
        nodehost_node_ready=nodehost_node_ready,
        nodehost_node_stopping=nodehost_node_stopping,
        wrapped=functools.wraps(nodehost_node_ready)(lambda: None),  # copies the marker
        marked_static=staticmethod(hookimpl(lambda: None)),
        partial=functools.partial(nodehost_node_ready),
        builtin=os.getpid,
        cached=functools.lru_cache(nodehost_node_ready),  # a marked callable, no function
        Holder=Holder,
        nothing=None,
        served=None,
    )

    def served(name: str) -> Any:  # a hook the module serves through __getattr__
        if name == "nodehost_options":
            return hookimpl(lambda: None)
        raise AttributeError(name)

    module.__getattr__ = served  # type: ignore[method-assign]
    module.__dir__ = lambda: [*module.__dict__, "nodehost_options"]  # type: ignore[method-assign]
    del module.__dict__["served"]
    return module


def found(manager: pluggy.PluginManager, plugin: object) -> set[tuple[str, str]]:
    """(hook, function name) of every implementation ``manager`` registers from ``plugin``."""
    manager.register(plugin, name=getattr(plugin, "__name__", "probe"))
    return {
        (caller.name, impl.function.__name__)
        for caller in manager.get_hookcallers(plugin) or ()
        for impl in caller.get_hookimpls()
        if impl.plugin is plugin
    }


def plain_pluggy() -> pluggy.PluginManager:
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    return manager


@pytest.mark.parametrize("name", BUILTIN_PLUGINS)
def test_a_builtin_has_the_implementations_pluggy_finds(name: str) -> None:
    module = importlib.import_module(name)
    assert found(_new_manager(), module) == found(plain_pluggy(), module)


def test_every_kind_of_module_attribute_is_judged_as_pluggy_judges_it() -> None:
    module = edge_cases()
    ours = found(_new_manager(), module)
    assert ours == found(plain_pluggy(), module)
    assert ("nodehost_components", "listed_under_another_name") in ours
    assert ("nodehost_node_stopping", "nodehost_node_stopping") not in ours


def test_only_marked_functions_are_resolved_when_the_builtins_register(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pluggy resolves a name with ``inspect.getattr_static``; the built-in modules hold
    hundreds of names, of which a few dozen are hook implementations, each resolved once
    (by pluggy's registration; the manager reads a function's marker itself)."""
    resolved: list[str] = []
    resolve = inspect.getattr_static

    def counted(owner: object, name: str, *default: object) -> object:
        resolved.append(name)
        return resolve(owner, name, *default)

    manager = _new_manager()
    monkeypatch.setattr(inspect, "getattr_static", counted)
    implementations = sum(
        len(found(manager, importlib.import_module(name))) for name in BUILTIN_PLUGINS
    )
    assert len(resolved) <= implementations


SPEC_MODULES = (
    "nodehost.hookspecs",
    "nodehost.plugins.kubelet.hookspecs",
    "nodehost.plugins.dns.hookspecs",
)


def specifications(manager: pluggy.PluginManager) -> dict[str, tuple[Any, ...]]:
    """Each hook ``manager`` knows a specification of: its options and argument names."""
    return {
        name: (caller.spec.opts, caller.spec.argnames, caller.spec.namespace)
        for name, caller in vars(manager.hook).items()
        if isinstance(caller, pluggy.HookCaller) and caller.spec is not None
    }


def test_the_hookspec_modules_declare_the_specifications_pluggy_finds() -> None:
    ours, plain = _new_manager(), plain_pluggy()  # both with nodehost.hookspecs
    for name in SPEC_MODULES[1:]:
        ours.add_hookspecs(importlib.import_module(name))
        plain.add_hookspecs(importlib.import_module(name))
    assert specifications(ours) == specifications(plain)
    assert len(specifications(ours)) >= 20


def test_only_names_that_are_no_functions_are_resolved_when_the_hookspecs_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hookspec module's functions are its hooks: the manager reads their markers."""
    resolved: list[str] = []
    resolve = inspect.getattr_static

    def counted(owner: object, name: str, *default: object) -> object:
        resolved.append(name)
        return resolve(owner, name, *default)

    monkeypatch.setattr(inspect, "getattr_static", counted)
    manager = _new_manager()
    for name in SPEC_MODULES[1:]:
        manager.add_hookspecs(importlib.import_module(name))
    functions = {
        name
        for module in map(importlib.import_module, SPEC_MODULES)
        for name, value in vars(module).items()
        if isinstance(value, types.FunctionType)
    }
    assert functions & set(resolved) == set()

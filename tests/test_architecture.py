"""Core is the host and the shared libraries; a component's logic lives in its plugin."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nodehost import hookspecs

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core"

#: The built-in components and the parts and programs named after them.
COMPONENT_WORDS = ("kubelet", "proxy", "dns", "sdn", "bootstrap", "rotation", "containerd")

CORE_MODULES = sorted(CORE.rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of the file."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", CORE_MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_core_module_is_named_after_a_component(path: Path) -> None:
    parts = path.relative_to(CORE).with_suffix("").parts
    assert not [word for part in parts for word in COMPONENT_WORDS if word in part]


def test_no_core_hook_is_named_after_a_component() -> None:
    hooks = [name for name in dir(hookspecs) if name.startswith("nodehost_")]
    assert hooks
    assert not [hook for hook in hooks for word in COMPONENT_WORDS if word in hook]


@pytest.mark.parametrize("path", CORE_MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_core_never_imports_a_plugin(path: Path) -> None:
    assert not [name for name in imported_modules(path) if name.startswith("nodehost.plugins")]

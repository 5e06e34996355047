"""Core is the host and the shared libraries; a component's logic lives in its plugin.

Checked on the syntax tree of every module of ``core/``: no module or hook is
named after a component, no module imports ``nodehost.plugins``, and no code
names a built-in component or the program it runs -- in an identifier, in a
string that is a component's name, or in a name-like string (one without
spaces: a flag, a file name, a module path).  Prose (docstrings, messages,
help text) may speak of the kubelet; code may not act on it.

Not component knowledge, and so allowed: Origin's NodeConfig keys and their
attribute names (``kubeletArguments``, ``kubelet_arguments``: core owns
Origin's format, read from :mod:`nodehost.config.schema`), and Kubernetes API
names (``kubernetes.io/kubelet-serving``: the API's, not a component's).
Everything else is in :data:`ALLOWED`, each with its reason; an entry that no
longer matches fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodehost import hookspecs
from nodehost.config import schema

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core"

#: The programs the built-in components run, and the components whose names are words of
#: their own: found inside any identifier or name-like string.
PROGRAM_WORDS = ("kubelet", "kube-proxy", "kube_proxy", "kubeproxy", "containerd", "sdn")
#: The built-in components' names: a string that *is* one names that component
#: (``if name == "dns"``); inside other names they are ordinary words (``dns_names``).
COMPONENT_NAMES = (
    "kubelet",
    "proxy",
    "sdn",
    "dns",
    "bootstrap",
    "runtime",
    "localcluster",
    "apilb",
)
#: The words core modules and hooks may not be named after.
MODULE_WORDS = ("kubelet", "proxy", "dns", "sdn", "bootstrap", "rotation", "containerd")

#: Core modules that name a component or program, by path, with the names they may use and why.
ALLOWED: dict[str, tuple[frozenset[str], str]] = {
    "core/pluginhost/manager.py": (
        frozenset({"nodehost.plugins.kubelet", "nodehost.plugins.sdn"}),
        "the one list of built-in plugin modules, loaded by name as entry points are",
    ),
    "core/pki/nodefiles.py": (
        frozenset({"kubelet-client", "kubelet-server"}),
        "the node's certificate files carry upstream's names (client-go FileStore prefixes); "
        "bootstrap writes them and the kubelet reads them",
    ),
    "core/testing/parts.py": (
        frozenset({"containerd", "containerd-shim-runc-v2"}),
        "the real parts tests need, by their Debian package and program names",
    ),
    "core/testing/cri.py": (
        frozenset({"io.containerd.image.name"}),
        "an image archive for ``ctr images import`` names its image with containerd's "
        "annotation (a containerd of a test's own is the runtime plugin's testing module)",
    ),
    "core/testing/apitables.py": (
        frozenset({"kubeletVersion"}),
        "kubectl's Node table shows the Node API's nodeInfo.kubeletVersion",
    ),
}

CORE_MODULES = sorted(CORE.rglob("*.py"))
_NAME_LIKE_TOKEN = re.compile(r"[A-Za-z0-9_.\-]+")


def origin_names() -> frozenset[str]:
    """Every NodeConfig key and its attribute name, at any depth of the schema."""
    names: set[str] = set()
    for value in vars(schema).values():
        if isinstance(value, type) and dataclasses.is_dataclass(value):
            for field, spec in schema.field_specs(value):
                names.update((field, spec.key))
    return frozenset(names)


ORIGIN_NAMES = origin_names()


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree``: prose, not code."""
    found = set()
    for node in ast.walk(tree):
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, kinds) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def identifiers(node: ast.AST) -> list[str]:
    """The names ``node`` binds or uses, modules it imports included."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.name, *([node.asname] if node.asname else [])]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module]
    return []


def names_a_program(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in PROGRAM_WORDS)


def is_name_like(text: str) -> bool:
    return bool(text) and not any(character.isspace() for character in text.strip())


def string_names_a_component(text: str) -> bool:
    """A component's name, or a name-like string naming a program outside an Origin key
    or a Kubernetes API name."""
    if text in COMPONENT_NAMES:
        return True
    if not is_name_like(text) or "kubernetes.io/" in text:
        return False
    tokens = (token.strip(".-") for token in _NAME_LIKE_TOKEN.findall(text))
    return any(names_a_program(token) for token in tokens if token not in ORIGIN_NAMES)


def component_names(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, name)`` for each identifier or string of ``path`` naming a component."""
    tree = ast.parse(path.read_text(), str(path))
    prose = docstrings(tree)
    for node in ast.walk(tree):
        for name in identifiers(node):
            if name not in ORIGIN_NAMES and names_a_program(name):
                yield node.lineno, name
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and id(node) not in prose and string_names_a_component(text):
            yield node.lineno, text


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of the file."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", CORE_MODULES, ids=relative)
def test_core_code_names_no_component_or_program(path: Path) -> None:
    allowed, _ = ALLOWED.get(relative(path), (frozenset(), ""))
    assert [f"{line}: {name}" for line, name in component_names(path) if name not in allowed] == []


@pytest.mark.parametrize("path", sorted(ALLOWED), ids=str)
def test_every_allowed_name_is_still_used(path: str) -> None:
    allowed, reason = ALLOWED[path]
    assert reason
    used = {name for _, name in component_names(ROOT / path)}
    assert sorted(allowed - used) == []


@pytest.mark.parametrize("path", CORE_MODULES, ids=relative)
def test_no_core_module_is_named_after_a_component(path: Path) -> None:
    parts = path.relative_to(CORE).with_suffix("").parts
    assert not [word for part in parts for word in MODULE_WORDS if word in part]


def test_no_core_hook_is_named_after_a_component() -> None:
    hooks = [name for name in dir(hookspecs) if name.startswith("nodehost_")]
    assert hooks
    assert not [hook for hook in hooks for word in MODULE_WORDS if word in hook]


@pytest.mark.parametrize("path", CORE_MODULES, ids=relative)
def test_core_never_imports_a_plugin(path: Path) -> None:
    assert not [name for name in imported_modules(path) if name.startswith("nodehost.plugins")]


@pytest.mark.parametrize(
    "source",
    [
        'if name == "dns": pass',
        "KUBELET_PORT = 10250",
        'FLAG = "--kube-proxy-mode"',
        "def containerd_socket(): pass",
        "from nodehost.plugins.kubelet.flags import KUBELET_FLAGS",
    ],
)
def test_the_check_finds_component_knowledge(source: str, tmp_path: Path) -> None:
    module = tmp_path / "offender.py"
    module.write_text(source + "\n")
    found = list(component_names(module)) or [
        (0, name) for name in imported_modules(module) if name.startswith("nodehost.plugins")
    ]
    assert found


@pytest.mark.parametrize(
    "source",
    [
        '"""The kubelet reads this."""',
        'raise ValueError("the kubelet refuses it")',
        'path = "kubeletArguments." + key',
        "arguments = config.kubelet_arguments",
        'SIGNER = "kubernetes.io/kubelet-serving"',
        "names = certificate.dns_names",
    ],
)
def test_the_check_leaves_prose_origin_keys_and_api_names(source: str, tmp_path: Path) -> None:
    module = tmp_path / "fine.py"
    module.write_text(source + "\n")
    assert list(component_names(module)) == []

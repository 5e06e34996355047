"""Sphinx configuration of nodehost's documentation.

Built with ``sphinx-build -W --keep-going -n -b html docs docs/_build/html`` (and
``-b man`` for ``nodehost(1)``): every warning and every unresolved reference
fails the build.  Nothing is fetched at build time (no intersphinx), so names
from the standard library and other projects cannot resolve; they are ignored
by pattern in :data:`nitpick_ignore_regex`, each with its reason.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

from nodehost import __version__

project = "nodehost"
author = "the nodehost authors"
copyright = "the nodehost authors"
release = version = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx_click",
    "nodehost_docs",
]

exclude_patterns = ["_build"]
html_theme = "furo"
html_title = f"nodehost {release}"
pygments_style = "sphinx"
# Quotes stay as typed: commands, flags and messages are copied from these pages.
smartquotes = False

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": False}
# The code's own docstrings are reStructuredText with ``literal`` spans; a bare
# `name` is nothing to resolve.
default_role = "literal"

man_pages = [
    ("reference/cli", "nodehost", "bring up a Kubernetes node and keep it up", [author], 1),
]

nitpicky = True
_STDLIB = (
    r"collections\.abc|typing|types|pathlib|asyncio|enum|datetime|ipaddress|os|socket|"
    r"subprocess|contextlib|concurrent\.futures|logging|threading|io"
)
_OTHERS = "pluggy|click|_pytest|pytest|cryptography|structlog|yaml|h11|h2|prometheus_client|dns"
_SHORT = (
    "Path|Any|Callable|Mapping|Sequence|Iterator|Iterable|Awaitable|PluginManager|Enum|"
    "IntEnum|StrEnum|Protocol|NoneType|ellipsis"
)
nitpick_ignore_regex = [
    # No intersphinx (the build never goes to the network): the standard library's,
    # pluggy's, click's and the other dependencies' names cannot resolve here.
    ("py:class", rf"({_STDLIB})\..*"),
    ("py:class", rf"({_OTHERS})\..*"),
    ("py:class", rf"({_SHORT})"),
    (
        "py:(class|obj|data)",
        r"(int|str|float|bool|bytes|dict|list|tuple|set|frozenset|object|None)",
    ),
    # The internals docstrings name to point a maintainer at the code (the daemon,
    # plugin loading's parts, the CNI library): the docs present the API a plugin
    # uses and the commands, not every module.
    (
        "py:(class|func|mod|meth|data|attr|exc)",
        r"nodehost\.(daemon|cni|cli|kube|nodeip|pluginhost\.(manager|clashes|inventory|entrypoints)"
        r"|testing\.(parts|cni|apiserver\.(TestCA|Misbehaviour))|plan\.PlannedComponent"
        r"|plugins\.dns\.sources)(\..*)?",
    ),
    # The same internals where a type hint names them bare (imported under TYPE_CHECKING).
    (
        "py:(class|data|exc)",
        r"(Hooks|StandinMode|PlannedComponent|NodeIP|ApplyResult|CniError|MISBEHAVIOURS)",
    ),
    # The NodeConfig reference documents every key (reference/config); the classes that
    # hold a section's keys in Python are not presented one by one.
    ("py:class", r"nodehost\.config\.schema\..*"),
    # Sphinx splits ``tuple[str, ...]`` in a dataclass's signature at the comma.
    ("py:class", r"tuple\[str"),
    # Hidden removed flags (``start --kubernetes``): sphinx-click lists their environment
    # variable but not the hidden option it points to.
    ("option", r"--kubernetes"),
]

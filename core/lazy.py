"""Lazy package attributes: a package names what it exports, modules load on first use.

Used by packages whose import must stay cheap (``nodehost`` itself, so that
``nodehost --help`` stays fast, and ``nodehost.config``, ``nodehost.daemon``,
``nodehost.cni``)::

    _LAZY = {"run_plan": "nodehost.daemon.run"}
    __getattr__ = lazy_attributes(__name__, _LAZY)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``table[name]`` and returns its ``name``.

    The value is cached in the package's namespace, so each attribute is
    resolved once; unknown names raise ``AttributeError`` as usual.
    """

    def lazy_getattr(name: str) -> Any:
        module_name = table.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        setattr(sys.modules[package], name, value)
        return value

    return lazy_getattr

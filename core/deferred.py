"""Deferred modules: a library's module that another imports without needing it yet.

:func:`defer_module` puts a module in ``sys.modules`` whose code runs on its
first use instead of at its import, for an import made only in case (see
:mod:`nodehost.plugins.dns.features`).  :mod:`nodehost.lazy` is the same idea
for nodehost's own packages' attributes.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from typing import Any


def defer_module(name: str) -> None:
    """Make ``name`` a deferred module: importing it binds it, its code runs on first use.

    The module object put in ``sys.modules`` (and on its parent package) is the
    one every importer gets; its code runs in it, once, when a name it does not
    hold yet is first looked up (:class:`DeferredModule`).  Unlike the standard
    library's ``LazyLoader`` on Python 3.11, an ``import`` statement does not
    run it: the import system reads only ``__spec__``, which it already holds.
    Nothing changes when ``name`` is already imported or cannot be found.
    """
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    module.__class__ = DeferredModule
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


class DeferredModule(types.ModuleType):
    """A module whose code has not run yet (:func:`defer_module`).

    The first lookup of a name it does not hold runs its code, under a lock:
    another thread's lookup waits for it, a lookup by the module's own code
    while it runs misses as in any module being imported.  If the code raises,
    the module leaves ``sys.modules`` and the error propagates, as from a
    failed import.
    """

    def __getattr__(self, name: str) -> Any:
        with _LOCK:
            if type(self) is DeferredModule and self.__name__ not in _RUNNING:
                _run(self)
        if type(self) is DeferredModule:  # its own code looks itself up while it runs
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        return getattr(self, name)


def _run(module: types.ModuleType) -> None:
    """Run ``module``'s code in it; then it is a plain module."""
    _RUNNING.add(module.__name__)
    try:
        module.__spec__.loader.exec_module(module)  # type: ignore[union-attr]
    except BaseException:
        sys.modules.pop(module.__name__, None)
        raise
    finally:
        _RUNNING.discard(module.__name__)
    module.__class__ = types.ModuleType


_LOCK = threading.RLock()
#: Names of the deferred modules whose code is running now.
_RUNNING: set[str] = set()

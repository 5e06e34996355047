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

    The first lookup of a name (other than a ``__dunder__`` the import system reads)
    runs its code, once, under a lock: another thread's lookup waits until it has run,
    as it would wait for a module another thread imports; a lookup by the module's own
    code while it runs sees what is defined so far, as in any module being imported.
    If the code raises, the error propagates, as from a failed import: the module leaves
    ``sys.modules`` and its package, and every later lookup on this object raises
    ImportError (a new import finds the module afresh).
    """

    def __getattribute__(self, name: str) -> Any:
        lookup = types.ModuleType.__getattribute__  # ``self`` is plain once its code ran
        if name.startswith("__"):
            return lookup(self, name)
        module_name = lookup(self, "__name__")
        with _LOCK:
            if id(self) in _FAILED:
                raise ImportError(f"module {module_name!r} failed to run when first used")
            if type(self) is DeferredModule and module_name not in _RUNNING:
                _run(self)
        return lookup(self, name)


def _run(module: types.ModuleType) -> None:
    """Run ``module``'s code in it (holding ``_LOCK``); then it is a plain module."""
    _RUNNING.add(module.__name__)
    try:
        module.__spec__.loader.exec_module(module)  # type: ignore[union-attr]
    except BaseException:
        _FAILED.add(id(module))
        _forget(module)
        raise
    finally:
        _RUNNING.discard(module.__name__)
    module.__class__ = types.ModuleType


def _forget(module: types.ModuleType) -> None:
    """Take a module whose code failed out of ``sys.modules`` and off its package."""
    if sys.modules.get(module.__name__) is module:
        del sys.modules[module.__name__]
    parent, _, child = module.__name__.rpartition(".")
    package = sys.modules.get(parent) if parent else None
    if package is not None and package.__dict__.get(child) is module:
        delattr(package, child)


_LOCK = threading.RLock()
#: Names of the deferred modules whose code is running now.
_RUNNING: set[str] = set()
#: ``id()`` of the deferred modules whose code failed (they stay failed: never run twice).
_FAILED: set[int] = set()

"""``nodehost.deferred.defer_module``: importing binds a module, its first use runs it, once."""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodehost.deferred import DeferredModule, defer_module


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package ``deferred_pkg`` whose ``sub`` module counts its runs (:func:`runs`)."""
    folder = tmp_path / "deferred_pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "helper.py").write_text("VALUE = 7\n")
    (folder / "sub.py").write_text(
        "import builtins, sys\n"
        "builtins.deferred_runs = getattr(builtins, 'deferred_runs', 0) + 1\n"
        "FIRST = 6\n"
        "assert sys.modules[__name__].FIRST == 6  # its own lookup while it runs\n"
        "hold = getattr(builtins, 'deferred_hold', None)\n"
        "if hold is not None:  # a test makes other threads look it up while it runs\n"
        "    hold()\n"
        "from deferred_pkg import helper\n"
        "ANSWER = helper.VALUE * 6\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "deferred_pkg.sub"
    for name in [name for name in sys.modules if name.startswith("deferred_pkg")]:
        del sys.modules[name]
    import builtins

    builtins.__dict__.pop("deferred_runs", None)
    builtins.__dict__.pop("deferred_hold", None)


def runs() -> int:
    import builtins

    return getattr(builtins, "deferred_runs", 0)


def test_an_import_statement_binds_the_module_without_running_it(package: str) -> None:
    defer_module(package)
    module = importlib.import_module(package)
    from deferred_pkg import sub

    assert sub is module is sys.modules[package]
    assert isinstance(module, DeferredModule)
    assert runs() == 0


def test_the_first_lookup_runs_it_once_in_the_same_module_object(package: str) -> None:
    defer_module(package)
    module = sys.modules[package]
    assert module.ANSWER == 42
    assert module.ANSWER == 42
    assert runs() == 1
    assert type(module) is type(sys)
    assert sys.modules[package] is module
    assert sys.modules["deferred_pkg"].sub is module


class CountingLock:
    """The deferred modules' lock, counting the threads that came to take it."""

    def __init__(self, lock: Any) -> None:
        self.lock = lock
        self.arrived = 0
        self.changed = threading.Condition()

    def __enter__(self) -> None:
        with self.changed:
            self.arrived += 1
            self.changed.notify_all()
        self.lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.lock.__exit__(*exc)

    def wait_for(self, count: int) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.arrived >= count, timeout=30)


def test_lookups_from_other_threads_wait_for_the_one_run(
    package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight threads look the module up while its code runs in a ninth: all get its
    names once it has run, and it runs once (without the lock it would run nine times)."""
    import builtins

    import nodehost.deferred

    lock = CountingLock(nodehost.deferred._LOCK)
    monkeypatch.setattr(nodehost.deferred, "_LOCK", lock)
    running, others = threading.Event(), 8
    # the package fixture removes it
    # The running thread takes the lock twice (its lookup, then its code's own lookup of
    # FIRST): all eight others have come to it when it has been asked for 2 + 8 times.
    builtins.deferred_hold = lambda: (running.set(), lock.wait_for(2 + others))  # type: ignore[attr-defined]
    defer_module(package)
    module = sys.modules[package]
    answers: list[int] = []
    first = threading.Thread(target=lambda: answers.append(module.ANSWER))
    first.start()
    assert running.wait(30), "the module's code did not start running"
    threads = [
        threading.Thread(target=lambda: answers.append(module.ANSWER)) for _ in range(others)
    ]
    for thread in threads:
        thread.start()
    for thread in [first, *threads]:
        thread.join()
    assert lock.arrived >= 2 + others
    assert answers == [42] * (1 + others)
    assert runs() == 1


def test_a_module_that_fails_to_run_leaves_sys_modules_and_raises(package: str) -> None:
    folder = Path(importlib.import_module("deferred_pkg").__path__[0])
    (folder / "broken.py").write_text("raise ImportError('deferred: broken on purpose')\n")
    defer_module("deferred_pkg.broken")
    module = sys.modules["deferred_pkg.broken"]
    with pytest.raises(ImportError, match="broken on purpose"):
        module.anything  # noqa: B018
    assert "deferred_pkg.broken" not in sys.modules
    assert "broken" not in vars(sys.modules["deferred_pkg"])
    with pytest.raises(ImportError) as raised:
        module.anything  # noqa: B018  -- never run a second time, detached
    assert str(raised.value) == "module 'deferred_pkg.broken' failed to run when first used"
    assert "deferred_pkg.broken" not in sys.modules


def test_a_failure_still_propagates_when_the_package_no_longer_holds_the_module(
    package: str,
) -> None:
    folder = Path(importlib.import_module("deferred_pkg").__path__[0])
    (folder / "broken.py").write_text("raise ImportError('deferred: broken on purpose')\n")
    defer_module("deferred_pkg.broken")
    module = sys.modules["deferred_pkg.broken"]
    delattr(sys.modules["deferred_pkg"], "broken")
    with pytest.raises(ImportError, match="broken on purpose"):
        module.anything  # noqa: B018
    assert "deferred_pkg.broken" not in sys.modules


def test_a_module_already_imported_or_missing_is_left_alone(package: str) -> None:
    module = importlib.import_module(package)
    defer_module(package)
    assert sys.modules[package] is module and type(module) is type(sys)
    defer_module("deferred_pkg.missing")
    assert "deferred_pkg.missing" not in sys.modules

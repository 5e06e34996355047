"""``nodehost.deferred.defer_module``: importing binds a module, its first use runs it, once."""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

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
        "import builtins, time\n"
        "builtins.deferred_runs = getattr(builtins, 'deferred_runs', 0) + 1\n"
        "time.sleep(0.05)  # other threads look it up while it runs\n"
        "from deferred_pkg import helper\n"
        "ANSWER = helper.VALUE * 6\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "deferred_pkg.sub"
    for name in [name for name in sys.modules if name.startswith("deferred_pkg")]:
        del sys.modules[name]
    import builtins

    builtins.__dict__.pop("deferred_runs", None)


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


def test_lookups_from_other_threads_wait_for_the_one_run(package: str) -> None:
    defer_module(package)
    module = sys.modules[package]
    answers: list[int] = []
    threads = [threading.Thread(target=lambda: answers.append(module.ANSWER)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [42] * 8
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
    with pytest.raises(ImportError, match="failed to run when first used"):
        module.anything  # noqa: B018  -- never run a second time, detached
    assert "deferred_pkg.broken" not in sys.modules


def test_a_module_already_imported_or_missing_is_left_alone(package: str) -> None:
    module = importlib.import_module(package)
    defer_module(package)
    assert sys.modules[package] is module and type(module) is type(sys)
    defer_module("deferred_pkg.missing")
    assert "deferred_pkg.missing" not in sys.modules

"""``nodehost plugin new NAME`` writes a package whose own tests pass once installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodehost.cli.plugin import package_files, write_package


@pytest.mark.needs("nodehost-script")
def test_the_new_package_installs_and_its_tests_pass(nodehost_exe, tmp_path: Path) -> None:
    result = nodehost_exe("plugin", "new", "hello-world", "--directory", str(tmp_path / "pkg"))
    assert result.code == 0, result.err
    installed = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(installed), str(tmp_path / "pkg")],
        check=True, capture_output=True,
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(installed)}
    env.pop("NODEHOST_DISABLE_PLUGINS", None)
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "pkg")],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "3 passed" in tests.stdout


def test_names_shape_the_package() -> None:
    files = package_files("hello-world")
    assert set(files) == {
        "pyproject.toml",
        "setup.cfg",
        "nodehost_hello_world/__init__.py",
        "tests/test_hello_world.py",
    }
    assert "hello-world = nodehost_hello_world" in files["setup.cfg"]
    assert 'SECTION = "helloWorld"' in files["nodehost_hello_world/__init__.py"]
    assert "class HelloWorld:" in files["nodehost_hello_world/__init__.py"]


def test_an_existing_folder_is_never_written_into(nodehost, tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "mine.txt").write_text("keep")
    result = nodehost("plugin", "new", "x", "--directory", str(target))
    assert result.code == 2
    assert f"error: invalid value for --directory: {target} exists; nothing was written" in (
        result.err
    )
    assert [p.name for p in target.iterdir()] == ["mine.txt"]


def test_an_empty_existing_folder_is_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileExistsError):
        write_package(tmp_path / "empty", {"a.txt": "x"})
    assert list((tmp_path / "empty").iterdir()) == []
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]  # no staging folder left


def test_a_bad_name_is_a_usage_error(nodehost, tmp_path: Path) -> None:
    result = nodehost("plugin", "new", "Bad_Name", "--directory", str(tmp_path / "p"))
    assert result.code == 2
    assert "invalid value for NAME: component name 'Bad_Name' must be" in result.err
    assert not (tmp_path / "p").exists()

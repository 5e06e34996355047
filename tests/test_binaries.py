"""``nodehost.binaries.which``: what ``shutil.which`` answers, without importing ``shutil``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nodehost.binaries import which


@pytest.fixture
def folders(tmp_path: Path) -> Path:
    """``a`` holds a runnable ``tool``, ``b`` one and a non-runnable ``plain``, ``c`` a
    folder named ``tool`` and a runnable ``only-c``; the folder itself (the tests' working
    folder) a runnable ``tool`` too, which an empty search path must not find."""
    for folder, name, mode in (
        (".", "tool", 0o755),
        ("a", "tool", 0o755),
        ("b", "tool", 0o755),
        ("b", "plain", 0o644),
        ("c", "only-c", 0o755),
    ):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / name).write_text("#!/bin/sh\n")
        (tmp_path / folder / name).chmod(mode)
    (tmp_path / "c" / "tool").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    "program, search",
    [
        ("tool", "a:b"),
        ("tool", "b:a"),
        ("tool", "c:a"),  # a folder of that name is passed over
        ("plain", "b"),  # not runnable
        ("only-c", "a:a:c"),  # a folder named twice
        ("tool", ""),
        ("tool", "missing:a"),
        ("only-c", "a::c"),  # an empty entry: the working folder
        ("tool", None),  # $PATH
        ("a/tool", "b"),  # a folder in the name: that file alone
        ("b/plain", "a"),
        ("c/tool", "a"),
        ("nowhere", "a:b:c"),
        ("to\0ol", "a"),  # a NUL byte names no file
        ("a/to\0ol", "a"),
    ],
)
def test_which_answers_as_shutil_which(
    folders: Path, program: str, search: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(folders)
    monkeypatch.setenv("PATH", f"{folders / 'b'}{os.pathsep}/bin")
    if search is not None:
        search = os.pathsep.join(str(folders / f) if f else "" for f in search.split(":"))
    assert which(program, path=search) == shutil.which(program, path=search)


def test_an_empty_path_variable_finds_nothing(
    folders: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``PATH=`` is a search path with nothing in it (not the system's default)."""
    monkeypatch.chdir(folders)
    monkeypatch.setenv("PATH", "")
    assert which("sh") is shutil.which("sh") is None
    assert which("tool") is shutil.which("tool") is None


def test_which_without_path_uses_the_system_search_path(
    folders: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PATH")
    assert which("sh") == shutil.which("sh") is not None


def test_finding_a_program_imports_no_compressors() -> None:
    """``shutil`` imports ``bz2``, ``lzma`` and ``zlib`` as it loads."""
    probe = "import sys, nodehost.binaries as b; b.which('sh'); print(sorted({'shutil', 'bz2', 'lzma', 'zlib'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr

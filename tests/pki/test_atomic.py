"""Atomic writes: exact modes from creation, no replacement of keys, nothing half-written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nodehost.pki.atomic import (
    create_files,
    make_directories,
    remove_empty_directories,
    write_atomic,
)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_077():
    previous = os.umask(0o077)
    yield
    os.umask(previous)


def test_written_file_has_exact_mode_despite_umask(tmp_path: Path, umask_077: None) -> None:
    write_atomic(tmp_path / "server.crt", b"cert", 0o644)
    assert mode_of(tmp_path / "server.crt") == 0o644


def test_key_is_0600_and_holds_the_data(tmp_path: Path) -> None:
    write_atomic(tmp_path / "server.key", b"secret", 0o600, replace=False)
    assert mode_of(tmp_path / "server.key") == 0o600
    assert (tmp_path / "server.key").read_bytes() == b"secret"


def test_temporary_file_is_created_with_final_mode(tmp_path: Path, monkeypatch) -> None:
    seen: list[int] = []
    real_open = os.open

    def spy_open(path, flags, mode=0o777, *args, **kwargs):
        if flags & os.O_CREAT:
            seen.append(mode)
        return real_open(path, flags, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy_open)
    write_atomic(tmp_path / "a.key", b"k", 0o600, replace=False)
    assert seen == [0o600]


def test_replace_false_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "a.key").write_bytes(b"old")
    with pytest.raises(FileExistsError):
        write_atomic(tmp_path / "a.key", b"new", 0o600, replace=False)
    assert (tmp_path / "a.key").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.key"]


def test_replace_true_swaps_content(tmp_path: Path) -> None:
    (tmp_path / "a.crt").write_bytes(b"old")
    write_atomic(tmp_path / "a.crt", b"new", 0o644)
    assert (tmp_path / "a.crt").read_bytes() == b"new"


def test_failed_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch) -> None:
    def broken_write(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", broken_write)
    with pytest.raises(OSError, match="No space"):
        write_atomic(tmp_path / "a.crt", b"data", 0o644)
    assert list(tmp_path.iterdir()) == []


def test_create_files_writes_each_with_its_mode_and_flushes_each(tmp_path, monkeypatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    create_files(tmp_path, [("a.crt", b"cert", 0o644), ("a.key", b"key", 0o600)])
    assert (mode_of(tmp_path / "a.crt"), mode_of(tmp_path / "a.key")) == (0o644, 0o600)
    assert (tmp_path / "a.key").read_bytes() == b"key"
    assert len(synced) == 2


@pytest.mark.parametrize("where", ["write", "fsync"])
def test_create_files_failing_midway_leaves_none_of_them(tmp_path, monkeypatch, where) -> None:
    real = getattr(os, where)
    calls = {"count": 0}

    def failing(*args):
        calls["count"] += 1
        if calls["count"] == 2:
            raise OSError(28, "No space left on device")
        return real(*args)

    monkeypatch.setattr(os, where, failing)
    with pytest.raises(OSError, match="No space"):
        create_files(tmp_path, [("a.crt", b"c", 0o644), ("a.key", b"k", 0o600), ("b", b"b", 0o644)])
    assert list(tmp_path.iterdir()) == []


def test_make_directories_reports_created_folders_outermost_first(tmp_path: Path) -> None:
    created = make_directories(tmp_path / "a" / "b" / "c")
    assert created == [tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"]
    assert all(mode_of(path) == 0o755 for path in created)


def test_remove_empty_directories_keeps_non_empty_ones(tmp_path: Path) -> None:
    created = make_directories(tmp_path / "a" / "b")
    (tmp_path / "a" / "keep").write_text("x")
    remove_empty_directories(created)
    assert not (tmp_path / "a" / "b").exists()
    assert (tmp_path / "a" / "keep").exists()


def test_an_obstacle_is_named_not_the_temporary_file(tmp_path: Path) -> None:
    dangling = tmp_path / "ca.serial.txt"
    dangling.symlink_to(tmp_path / "nowhere" / "x")
    with pytest.raises(FileExistsError) as raised:
        write_atomic(dangling, b"01\n", 0o644, replace=False)
    assert raised.value.filename == str(dangling)
    assert raised.value.strerror == "File exists (a dangling symbolic link)"
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as raised_dir:
        write_atomic(folder, b"x", 0o644)
    assert raised_dir.value.filename == str(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ca.serial.txt", "folder"]


def test_ca_create_names_a_dangling_symlink_in_its_way(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "ca.serial.txt").symlink_to(tmp_path / "nowhere" / "x")
    done = subprocess.run(
        [sys.executable, "-m", "nodehost", "ca", "create", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: cannot write CA into {tmp_path}: File exists (a dangling symbolic link): "
        f"{tmp_path / 'ca.serial.txt'}"
    )

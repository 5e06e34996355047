"""Bounded reads: one helper refuses what is not a small regular file, without blocking."""

from __future__ import annotations

import errno
import os
import socket
import tracemalloc
from pathlib import Path

import pytest

from nodehost.fileread import MiB, UnusableFile, check_file, read_file


def test_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "a.pem"
    path.write_bytes(b"x" * 1000)
    assert read_file(path, 1000) == b"x" * 1000


def test_file_one_byte_over_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.pem"
    path.write_bytes(b"x" * 1001)
    with pytest.raises(UnusableFile) as error:
        read_file(path, 1000)
    assert error.value.errno == errno.EFBIG
    assert error.value.strerror == "larger than the 1000 bytes limit"


def test_sparse_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.kubeconfig"
    with path.open("wb") as handle:
        handle.truncate(300 * MiB)
    tracemalloc.start()
    try:
        with pytest.raises(UnusableFile, match="larger than the 1 MiB limit"):
            read_file(path, MiB)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MiB


@pytest.mark.parametrize(
    ("path", "kind"), [("/dev/zero", "a character device"), ("/dev/null", "a character device")]
)
def test_devices_are_refused(path: str, kind: str) -> None:
    with pytest.raises(UnusableFile) as error:
        read_file(path, MiB)
    assert error.value.strerror == f"not a regular file ({kind})"


def test_fifo_with_a_silent_writer_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        with pytest.raises(UnusableFile, match=r"not a regular file \(a named pipe\)"):
            read_file(fifo, MiB)
        with pytest.raises(UnusableFile, match=r"a named pipe"):
            check_file(str(fifo), MiB)
    finally:
        os.close(writer)


def test_socket_and_directory_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(UnusableFile, match=r"a socket"):
            check_file(str(path), MiB)
    with pytest.raises(UnusableFile, match="is a directory"):
        read_file(tmp_path, MiB)
    check_file(str(tmp_path), MiB, directory_ok=True)


def test_symlink_is_refused_when_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("x")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert read_file(link, 10) == b"x"
    with pytest.raises(OSError) as error:
        read_file(link, 10, follow_symlinks=False)
    assert error.value.errno == errno.ELOOP


def test_nul_in_the_path_is_an_os_error() -> None:
    with pytest.raises(UnusableFile, match="NUL byte"):
        read_file("a\x00b", 10)
    with pytest.raises(UnusableFile, match="NUL byte"):
        check_file("a\x00b", 10)

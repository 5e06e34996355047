"""A hostile host: what sits in the state directory, or a full disk, is one line, never a
traceback -- for ``start`` (the host) and ``nodehost teardown`` alike."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hostrun import PID_FILES_ONLY

SLEEPER = [{"name": "sleeper", "argv": ["sleep", "600"]}]


def teardown(state_dir: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "nodehost", "teardown", "--state-dir", str(state_dir)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def assert_one_line(text: str, expected: str) -> None:
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {expected}"], text


def _pid_file_directory(run: Path) -> tuple[Path, str]:
    (run / "sleeper.pid").mkdir()
    return run / "sleeper.pid", "a directory"


def _lock_fifo(run: Path) -> tuple[Path, str]:
    os.mkfifo(run / "host.lock")
    return run / "host.lock", "a FIFO"


MAKERS: dict[str, Callable[[Path], tuple[Path, str]]] = {
    "pid-file-directory": _pid_file_directory,
    "lock-fifo": _lock_fifo,
}


@pytest.mark.parametrize("kind", list(MAKERS))
def test_an_odd_entry_in_run_is_one_line_for_start_and_teardown(
    host_run, tmp_path: Path, kind: str
) -> None:
    state_dir = tmp_path / "state"
    (state_dir / "run").mkdir(parents=True)
    path, what = MAKERS[kind](state_dir / "run")
    expected = f"state directory: {path} is {what}, not a file nodehost wrote: remove it"
    run = host_run(SLEEPER, state_dir=str(state_dir))
    assert run.wait() == 1
    assert_one_line(run.stderr(), expected)
    torn = teardown(state_dir)
    assert torn.returncode == 1
    assert_one_line(torn.stderr, expected)


def test_a_symlinked_state_directory_is_refused_and_nothing_made_through_it(
    host_run, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "state"
    link.symlink_to(target)
    expected = (
        f"state directory: {link} is a symbolic link; nodehost writes there as root and "
        "follows none: remove it"
    )
    run = host_run(SLEEPER, state_dir=str(link))
    assert run.wait() == 1
    assert_one_line(run.stderr(), expected)
    torn = teardown(link)
    assert torn.returncode == 1
    assert_one_line(torn.stderr, expected)
    assert list(target.iterdir()) == []


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs of the test's own (unmounted after)."""
    mount_point = tmp_path / "tmpfs"
    mount_point.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", f"nodehost-test-{tmp_path.name}",
         str(mount_point)],
        check=True,
    )  # fmt: skip
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(folder: Path) -> None:
    """Write a file into ``folder`` until its file system has no block left."""
    with contextlib.suppress(OSError), open(folder / "filler", "wb") as handle:
        while True:
            handle.write(b"\0" * 4096)
            handle.flush()


@pytest.mark.needs("root")
def test_a_full_disk_at_the_health_address_is_one_line(host_run, full_disk: Path) -> None:
    state_dir = full_disk / "state"
    first = host_run(SLEEPER, "--exit-on-ready", state_dir=str(state_dir), env=PID_FILES_ONLY)
    assert first.wait() == 0, first.stderr()
    fill(full_disk)
    run = host_run(SLEEPER, state_dir=str(state_dir), env=PID_FILES_ONLY)
    assert run.wait() == 1
    address_file = state_dir / "run" / "health.address"
    assert_one_line(
        run.stderr(), f"cannot write {address_file}: No space left on device (see --state-dir)"
    )
    assert sorted(path.name for path in (state_dir / "run").iterdir()) == ["host.lock"]

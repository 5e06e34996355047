"""The state directory: nothing root writes there follows a symlink; an unsafe one is refused."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from nodehost.daemon import pidfiles
from nodehost.errors import RuntimeFailure

SLEEPER = [{"name": "sleeper", "argv": ["sleep", "600"]}]


def state_dir_of(tmp_path: Path) -> Path:
    state_dir = tmp_path / "state"
    (state_dir / "run").mkdir(parents=True)
    return state_dir


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file a symlink in the state directory points at; it must never change."""
    path = tmp_path / "victim"
    path.write_text("precious\n")
    return path


def test_a_symlinked_lock_file_is_refused_and_its_target_untouched(
    host_run, tmp_path: Path, victim: Path
) -> None:
    state_dir = state_dir_of(tmp_path)
    (state_dir / "run" / "host.lock").symlink_to(victim)
    run = host_run(SLEEPER, state_dir=str(state_dir))
    assert run.wait() == 1
    assert "host.lock is a symbolic link; remove it" in run.stderr()
    assert victim.read_text() == "precious\n"


def test_a_symlinked_pid_temporary_is_replaced_not_followed(tmp_path: Path, victim: Path) -> None:
    state_dir = state_dir_of(tmp_path)
    temporary = state_dir / "run" / "sleeper.pid.tmp"
    temporary.symlink_to(victim)
    record = pidfiles.write_pid_file(str(state_dir), "sleeper", os.getpid())
    assert victim.read_text() == "precious\n"
    assert not temporary.is_symlink()
    assert pidfiles.read_pid_files(str(state_dir)) == [record]


def test_a_symlinked_pid_file_is_not_read(tmp_path: Path) -> None:
    state_dir = state_dir_of(tmp_path)
    elsewhere = tmp_path / "elsewhere.pid"
    elsewhere.write_text(f"{os.getpid()}\n")
    (state_dir / "run" / "sleeper.pid").symlink_to(elsewhere)
    assert pidfiles.read_pid_files(str(state_dir)) == []


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
def test_a_state_directory_writable_by_others_is_refused(
    host_run, tmp_path: Path, mode: int
) -> None:
    state_dir = state_dir_of(tmp_path)
    state_dir.chmod(mode)
    run = host_run(SLEEPER, state_dir=str(state_dir))
    assert run.wait() == 1
    assert f"error: state directory {state_dir} is writable by group or others" in run.stderr()
    assert "Traceback" not in run.stderr()
    assert not (state_dir / "run" / "host.lock").exists()


def test_a_symlinked_run_folder_is_refused(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (state_dir / "run").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RuntimeFailure, match=r"run is a symbolic link"):
        pidfiles.StateLock(str(state_dir)).acquire()
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_new_state_directory_is_made_private_to_root_writes(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        lock = pidfiles.StateLock(str(tmp_path / "fresh" / "state"))
        lock.acquire()
        lock.release()
    finally:
        os.umask(old)
    for folder in (
        tmp_path / "fresh",
        tmp_path / "fresh" / "state",
        tmp_path / "fresh" / "state" / "run",
    ):
        assert folder.stat().st_mode & 0o777 == 0o755


@pytest.mark.needs("root")  # only root can give a folder away
def test_a_state_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    state_dir = state_dir_of(tmp_path)
    os.chown(state_dir, 4321, 4321)
    with pytest.raises(RuntimeFailure, match=r"belongs to another user \(uid 4321\)"):
        pidfiles.StateLock(str(state_dir)).acquire()


@pytest.mark.needs("cgroups")
def test_the_cgroup_record_is_written_and_read_without_following_a_symlink(
    tmp_path: Path, victim: Path
) -> None:
    from nodehost.daemon import cgroups

    state_dir = state_dir_of(tmp_path)
    record = cgroups.record_path(str(state_dir))
    record.symlink_to(victim)
    assert cgroups.recorded_base(str(state_dir)) is None  # a planted record is not read
    made, why = cgroups.open_cgroups(str(state_dir))
    assert made is not None, why
    try:
        assert victim.read_text() == "precious\n"
        assert not record.is_symlink()
        assert cgroups.recorded_base(str(state_dir)) == made.base
    finally:
        cgroups.remove_empty(made.base)


def unsafe_folder(state_dir: Path, folder: str, how: str, elsewhere: Path) -> Path:
    """Make ``state_dir/folder`` unsafe ``how``: a symlink, another user's, or mode 0777."""
    path = state_dir / folder
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "symlink":
        path.symlink_to(elsewhere)
        return path
    path.mkdir()
    if how == "foreign":
        os.chown(path, 65534, 65534)
        path.chmod(0o755)
    else:
        path.chmod(0o777)
    return path


def unsafe_state(tmp_path: Path, folder: str, how: str) -> tuple[Path, Path, Path]:
    """(state dir, the folder a symlink points at, ``folder`` made unsafe ``how``)."""
    if how == "foreign" and os.geteuid() != 0:
        pytest.skip("only root can give a folder away")
    state_dir = state_dir_of(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return state_dir, elsewhere, unsafe_folder(state_dir, folder, how, elsewhere)


UNSAFE = {
    "symlink": "is a symbolic link",
    "foreign": "belongs to another user (uid 65534)",
    "writable": "is writable by group or others (mode 0777)",
}


@pytest.mark.parametrize("how", sorted(UNSAFE))
@pytest.mark.parametrize("folder", ["runtime/bin", "kubelet", "proxy"])
def test_an_unsafe_subfolder_a_component_writes_is_refused_before_anything_starts(
    host_run, tmp_path: Path, folder: str, how: str
) -> None:
    state_dir, elsewhere, path = unsafe_state(tmp_path, folder, how)
    launcher = {"path": str(path / "launcher"), "content": "#!/bin/sh\n", "mode": "0755"}
    run = host_run([{**SLEEPER[0], "files": [launcher]}], state_dir=str(state_dir))
    assert run.wait() == 1
    errors = [line for line in run.stderr().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"{path} {UNSAFE[how]}" in errors[0], run.stderr()
    assert "Traceback" not in run.stderr()
    assert list(elsewhere.iterdir()) == [] and not (path / "launcher").exists()


@pytest.mark.parametrize("how", sorted(UNSAFE))
def test_plan_files_are_never_written_through_an_unsafe_state_folder(
    tmp_path: Path, how: str
) -> None:
    """Exec mode and a component's restart write through :func:`write_plan_files` alone."""
    from nodehost.component import FileSpec
    from nodehost.daemon.files import FileWriteError, write_plan_files

    state_dir, elsewhere, path = unsafe_state(tmp_path, "kubelet/sub", how)
    target = path / "config.yaml"
    with pytest.raises(FileWriteError, match=re.escape(f"{path} {UNSAFE[how]}")):
        write_plan_files([FileSpec(str(target), b"x")], str(state_dir))
    assert list(elsewhere.iterdir()) == []


def test_plan_files_make_missing_state_folders_0755(tmp_path: Path) -> None:
    from nodehost.component import FileSpec
    from nodehost.daemon.files import write_plan_files

    state_dir = state_dir_of(tmp_path)
    old = os.umask(0o077)
    try:
        write_plan_files([FileSpec(str(state_dir / "a" / "b" / "f"), b"x")], str(state_dir))
    finally:
        os.umask(old)
    assert (state_dir / "a").stat().st_mode & 0o777 == 0o755
    assert (state_dir / "a" / "b" / "f").read_bytes() == b"x"

"""A hostile host: what sits in the state directory, or a full disk, is one line, never a
traceback -- for ``start`` (the host) and ``nodehost teardown`` alike."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hostrun import PID_FILES_ONLY, http_get, marked_processes

from nodehost.daemon.server import MAX_CONNECTIONS
from nodehost.testing.parts import find_program

SLEEPER = [{"name": "sleeper", "argv": ["sleep", "600"]}]


def teardown(state_dir: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "nodehost", "teardown", "--state-dir", str(state_dir)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def assert_one_line(text: str, expected: str) -> None:
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {expected}"], text


def assert_refused_by_start_and_teardown(host_run, state_dir: Path, expected: str) -> None:
    """``start`` (the host) and ``teardown`` on ``state_dir`` both exit 1 with ``expected``."""
    run = host_run(SLEEPER, state_dir=str(state_dir))
    assert run.wait() == 1
    assert_one_line(run.stderr(), expected)
    torn = teardown(state_dir)
    assert torn.returncode == 1
    assert_one_line(torn.stderr, expected)


def _pid_file_directory(run: Path) -> tuple[Path, str]:
    (run / "sleeper.pid").mkdir()
    return run / "sleeper.pid", "a directory"


def _lock_fifo(run: Path) -> tuple[Path, str]:
    os.mkfifo(run / "host.lock")
    return run / "host.lock", "a named pipe"


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
    assert_refused_by_start_and_teardown(host_run, state_dir, expected)


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
    assert_refused_by_start_and_teardown(host_run, link, expected)
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


STRACE = find_program("strace")
RENAMES = "rename,renameat,renameat2"
KILLED = -9
MAX_KILL_POINTS = 40


def planhost(plan: Path, *args: str, kill_at: int | None = None) -> subprocess.CompletedProcess:
    """``planhost PLAN --exit-on-ready``, SIGKILLed by strace at its ``kill_at``-th rename."""
    command = [sys.executable, "-m", "nodehost.testing.planhost", str(plan), "--exit-on-ready",
               "--health-address", "127.0.0.1:0", *args]  # fmt: skip
    if kill_at is not None:
        assert STRACE is not None
        command = [STRACE, "-f", "-qq", "-o", "/dev/null", "-e", f"trace={RENAMES}",
                   "-e", f"inject={RENAMES}:signal=SIGKILL:when={kill_at}", *command]  # fmt: skip
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # no .pyc renames to count
    env.pop("NOTIFY_SOCKET", None)
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def leftovers(state_dir: Path) -> list[str]:
    """Temporary files anywhere in the state directory."""
    return sorted(str(p) for p in state_dir.rglob("*") if ".tmp" in p.name)


@pytest.mark.needs("strace")
@pytest.mark.parametrize("then", ["start", "teardown"])
def test_a_start_killed_at_each_rename_leaves_temporaries_the_next_run_removes(
    tmp_path: Path, then: str
) -> None:
    """The shim launchers (``runtime/bin/.containerd-shim-*.tmp-*``) and every other file a
    start writes by rename: what a kill leaves, the next start or a teardown removes."""
    state_dir = tmp_path / "state"
    launcher = state_dir / "runtime" / "bin" / "containerd-shim-runc-v1"
    sleeper = {**SLEEPER[0], "files": [{"path": str(launcher), "content": "#!/bin/sh\n"}]}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"state_dir": str(state_dir), "components": [sleeper]}))
    left_something = 0
    for kill_at in range(1, MAX_KILL_POINTS):
        killed = planhost(plan, kill_at=kill_at)
        if killed.returncode == 0:
            break
        assert killed.returncode == KILLED, killed.stderr
        left_something += bool(leftovers(state_dir))
        if then == "start":
            again = planhost(plan)
            assert again.returncode == 0, again.stderr
        else:
            torn = teardown(state_dir)
            assert torn.returncode == 0, torn.stderr
            assert "Traceback" not in torn.stderr
        assert leftovers(state_dir) == []
        assert not marked_processes(str(state_dir))
    else:
        pytest.fail(f"still killed after {MAX_KILL_POINTS} renames")
    assert left_something, "no kill left a temporary file: the fault injection did not work"


IDLE_CLIENTS = 2000
DESCRIPTOR_LIMIT = 1024


@contextlib.contextmanager
def descriptors_for_the_test(count: int) -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(count, hard)), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_thousands_of_idle_health_clients_neither_exhaust_descriptors_nor_lock_a_probe_out(
    host_run,
) -> None:
    run = host_run(SLEEPER)
    run.wait_ready()
    resource.prlimit(run.pid, resource.RLIMIT_NOFILE, (DESCRIPTOR_LIMIT, DESCRIPTOR_LIMIT))
    host, _, port = run.address().rpartition(":")
    clients: list[socket.socket] = []
    with descriptors_for_the_test(IDLE_CLIENTS + 256):
        try:
            for _ in range(IDLE_CLIENTS):
                clients.append(socket.create_connection((host, int(port)), timeout=10))
            # accepted in order: once this one is answered, every idle one was accepted
            assert http_get(run.url("/healthz")) == (200, "ok")
            descriptors = len(os.listdir(f"/proc/{run.pid}/fd"))
        finally:
            for client in clients:
                client.close()
    assert descriptors < MAX_CONNECTIONS + 64, descriptors
    events = [event.get("event", "") for event in run.logs()]
    assert len([e for e in events if "connection limit reached" in e]) == 1
    assert not [e for e in events if "out of system resource" in e]
    assert "Traceback" not in run.stderr()


@pytest.fixture
def default_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The machine-wide default state directory, moved to ``tmp_path`` for the test."""
    import nodehost.plan

    state_dir = tmp_path / "default-state"
    (state_dir / "run").mkdir(parents=True)
    monkeypatch.delenv("NODEHOST_STATE_DIR", raising=False)
    monkeypatch.setattr(
        nodehost.plan, "default_state_dir", lambda given=None: given or str(state_dir)
    )
    return state_dir


def teardown_in_process(*args: str) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from nodehost.cli import main

    with CliRunner().isolation() as (out, err, _):
        try:
            main(["teardown", *args])
            code = 0
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        return code, out.getvalue().decode(), err.getvalue().decode()


def test_teardown_of_the_default_state_directory_says_which_and_whose_first(
    default_state_dir: Path,
) -> None:
    (default_state_dir / "run" / "host.lock").write_text("999999999\n")
    code, out, err = teardown_in_process()
    assert code == 0, err
    assert out.splitlines()[0] == (
        f"tearing down {default_state_dir}: the default state directory (no --state-dir or "
        "NODEHOST_STATE_DIR given); last used by nodehost pid 999999999, which is not running"
    )
    given = teardown_in_process(f"--state-dir={default_state_dir}")
    assert "the default state directory" not in given[1]


def test_teardown_of_the_default_state_directory_refuses_a_running_nodehost_naming_it(
    host_run, default_state_dir: Path
) -> None:
    run = host_run(SLEEPER, state_dir=str(default_state_dir))
    run.wait_ready()
    code, out, err = teardown_in_process()
    assert code == 1
    assert f"its lock names pid {run.pid} (" in out.splitlines()[0]
    assert_one_line(
        err,
        f"another nodehost (pid {run.pid}) is running with state directory "
        f"{default_state_dir}; stop it or use another --state-dir",
    )
    assert run.process.poll() is None  # untouched

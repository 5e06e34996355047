"""Leftovers of an earlier run: ended only when pid file, executable and marker all agree."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hostrun import alive, http_get, wait_for

from nodehost.daemon import pidfiles

SLEEPER = [{"name": "sleeper", "argv": ["sleep", "600"]}]


@pytest.fixture
def spawned():
    """Start long sleeps the test owns; every one is killed and reaped afterwards."""
    children: list[subprocess.Popen[bytes]] = []

    def spawn(env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(["sleep", "600"], env=env)
        children.append(child)
        return child

    yield spawn
    for child in children:
        child.kill()
        child.wait()


def state_dir_of(tmp_path: Path) -> str:
    state_dir = str(tmp_path / "state")
    (Path(state_dir) / "run").mkdir(parents=True)
    return state_dir


def test_a_verified_leftover_is_ended(host_run, spawned, tmp_path: Path) -> None:
    state_dir = state_dir_of(tmp_path)
    leftover = spawned({**os.environ, **pidfiles.marker_environment(state_dir, "old")})
    pidfiles.write_pid_file(state_dir, "old", leftover.pid)
    run = host_run(SLEEPER, "--exit-on-ready", "--stop-grace", "2", state_dir=state_dir)
    assert run.wait() == 0, run.stderr()
    assert leftover.wait(5) == -15  # ended by SIGTERM
    [event] = run.events("ending a leftover of an earlier run")
    assert (event["component"], event["pid"]) == ("old", leftover.pid)
    assert not (Path(state_dir) / "run" / "old.pid").exists()


def test_an_unrelated_process_with_the_recorded_pid_is_not_touched(
    host_run, spawned, tmp_path: Path
) -> None:
    state_dir = state_dir_of(tmp_path)
    unrelated = spawned()  # same executable, no marker: a recycled pid
    pidfiles.write_pid_file(state_dir, "old", unrelated.pid)
    run = host_run(SLEEPER, "--exit-on-ready", state_dir=state_dir)
    assert run.wait() == 0, run.stderr()
    assert alive(unrelated.pid) and unrelated.poll() is None
    assert run.events("ending a leftover of an earlier run") == []


def test_a_marked_process_with_another_executable_is_not_touched(
    host_run, spawned, tmp_path: Path
) -> None:
    state_dir = state_dir_of(tmp_path)
    marked = spawned({**os.environ, **pidfiles.marker_environment(state_dir, "old")})
    path = pidfiles.pid_file(state_dir, "old")
    record = pidfiles.write_pid_file(state_dir, "old", marked.pid)
    path.write_text(f"{marked.pid}\n/usr/bin/some-other-program\n{record.start_time}\n")
    run = host_run(SLEEPER, "--exit-on-ready", state_dir=state_dir)
    assert run.wait() == 0, run.stderr()
    assert marked.poll() is None


def test_a_marked_process_started_after_the_record_is_not_touched(spawned, tmp_path: Path):
    state_dir = state_dir_of(tmp_path)
    marked = spawned({**os.environ, **pidfiles.marker_environment(state_dir, "old")})
    record = pidfiles.write_pid_file(state_dir, "old", marked.pid)
    stale = pidfiles.PidRecord("old", marked.pid, record.executable, (record.start_time or 0) - 1)
    # the new image's environment becomes readable a moment after exec returns
    wait_for(lambda: pidfiles.is_recorded_process(record, state_dir), what="the record to match")
    assert not pidfiles.is_recorded_process(stale, state_dir)


def test_a_second_host_on_the_same_state_directory_is_refused(host_run, tmp_path: Path) -> None:
    first = host_run(SLEEPER)
    first.wait_ready()
    second = host_run(SLEEPER, state_dir=first.state_dir)
    assert second.wait() == 1
    assert f"error: another nodehost (pid {first.pid}) is running" in second.stderr()
    assert http_get(first.url("/readyz")) == (200, "ok")  # the first one was not disturbed


def test_an_unusable_state_directory_is_a_clear_error(host_run, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    run = host_run(SLEEPER, state_dir=str(blocker / "state"))
    assert run.wait() == 1
    assert f"error: cannot use state directory {blocker / 'state'}: Not a directory" in run.stderr()
    assert "Traceback" not in run.stderr()

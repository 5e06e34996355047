"""The way in: the blocking steps of a component's start leave the event loop free.

A plan file's fsyncs and the move into a cgroup (the kernel may wait for an RCU
grace period) run in worker threads, so independent components start side by
side.  The host runs in the test process (``run_plan``); nothing here measures time.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest

from nodehost.component import ComponentPlan, FileSpec, ProcessSpec
from nodehost.daemon import HostSettings, cgroups, files, pidfiles, proc, run_plan
from nodehost.errors import RuntimeFailure
from nodehost.plan import Plan, PlannedComponent

from .hostrun import needs_cgroups


def sleeper(tmp_path: Path, name: str) -> PlannedComponent:
    written = FileSpec(path=str(tmp_path / "state" / name / "config"), content=b"x\n", mode=0o644)
    plan = ComponentPlan(run=ProcessSpec(argv=("sleep", "600")), files=(written,))
    return PlannedComponent(name, name, "test", (), plan)


def settings() -> HostSettings:
    return HostSettings(health_address=None, exit_on_ready=True, notify=False)


@needs_cgroups
def test_file_writes_and_cgroup_moves_run_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: dict[str, list[str]] = {"write": [], "move": []}
    write_plan_files, move = files.write_plan_files, cgroups.move

    def recorded_write(*args, **kwargs):
        threads["write"].append(threading.current_thread().name)
        return write_plan_files(*args, **kwargs)

    def recorded_move(pid: int, cgroup: Path) -> None:
        threads["move"].append(threading.current_thread().name)
        move(pid, cgroup)

    monkeypatch.setattr(files, "write_plan_files", recorded_write)
    monkeypatch.setattr(cgroups, "move", recorded_move)
    plan = Plan((sleeper(tmp_path, "a"), sleeper(tmp_path, "b")), str(tmp_path / "state"), "t")
    assert run_plan(plan, None, settings(), out=io.StringIO()) == 0
    main = threading.main_thread().name
    assert len(threads["write"]) == 2 and main not in threads["write"]
    assert len(threads["move"]) == 2 and main not in threads["move"]
    assert (tmp_path / "state" / "a" / "config").read_bytes() == b"x\n"


@needs_cgroups
def test_a_child_that_cannot_be_moved_is_killed_and_fails_its_component(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []
    move = cgroups.move

    def refuse(pid: int, cgroup: Path) -> None:
        if cgroup.name == "a":
            started.append(pid)
            raise PermissionError(1, "Operation not permitted")
        move(pid, cgroup)

    monkeypatch.setattr(cgroups, "move", refuse)
    plan = Plan((sleeper(tmp_path, "a"),), str(tmp_path / "state"), "t")
    with pytest.raises(RuntimeFailure, match="cannot start sleep: cannot move it into cgroup"):
        run_plan(plan, None, settings(), out=io.StringIO())
    assert len(started) == 1 and not proc.is_alive(started[0])
    assert not pidfiles.pid_file(str(tmp_path / "state"), "a").exists()


def test_the_launcher_and_the_cgroups_are_readied_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nodehost.daemon import process

    threads: dict[str, str] = {}
    check, open_cgroups = process._setpriv_with_pdeathsig, cgroups.open_cgroups

    def recorded_check() -> str | None:
        threads["setpriv"] = threading.current_thread().name
        return check()

    def recorded_open(state_dir: str):
        threads["cgroups"] = threading.current_thread().name
        return open_cgroups(state_dir)

    monkeypatch.setattr(process, "_setpriv_with_pdeathsig", recorded_check)
    monkeypatch.setattr(cgroups, "open_cgroups", recorded_open)
    plan = Plan((sleeper(tmp_path, "a"),), str(tmp_path / "state"), "t")
    assert run_plan(plan, None, settings(), out=io.StringIO()) == 0
    assert set(threads) == {"setpriv", "cgroups"}
    assert threading.main_thread().name not in threads.values()

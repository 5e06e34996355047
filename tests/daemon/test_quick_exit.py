"""The way out of exit-on-ready waits on events, and its ``/proc`` scans read little.

The host runs in the test process (``run_plan``); nothing here measures time.
"""

from __future__ import annotations

import io
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from nodehost.component import ComponentPlan, ProcessSpec
from nodehost.daemon import HostSettings, cgroups, host, pidfiles, proc, run_plan
from nodehost.daemon.variables import WORKLOAD_VARIABLE
from nodehost.daemon.workloads import workload_roots
from nodehost.plan import Plan, PlannedComponent

from .hostrun import needs_cgroups


@needs_cgroups
def test_the_released_guardian_is_awaited_on_its_exit_not_polled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    guardians: list[int] = []
    start = cgroups.Guardian.start

    def remember(guardian: cgroups.Guardian) -> int:
        guardians.append(start(guardian))
        return guardians[-1]

    looked_at: list[int] = []
    is_alive = proc.is_alive

    def counted(pid: int) -> bool:
        looked_at.append(pid)
        return is_alive(pid)

    monkeypatch.setattr(cgroups.Guardian, "start", remember)
    monkeypatch.setattr(proc, "is_alive", counted)
    # However slow the machine, the fallback look must not come round during the wait.
    monkeypatch.setattr(host, "GUARDIAN_RECHECK", pidfiles.KILL_WAIT)
    spec = ProcessSpec(argv=("sleep", "600"))
    component = PlannedComponent("sleeper", "sleeper", "test", (), ComponentPlan(run=spec))
    plan = Plan((component,), str(tmp_path / "state"), "test")
    settings = HostSettings(health_address=None, exit_on_ready=True, notify=False)
    assert run_plan(plan, None, settings, out=io.StringIO()) == 0
    assert len(guardians) == 1
    # Looked for once when released; after that its exit (SIGCHLD, reaped) ends the wait.
    assert looked_at.count(guardians[0]) <= 1
    assert not is_alive(guardians[0])


def test_processes_are_found_by_one_exact_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    value = f"/state-{uuid.uuid4().hex}"
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    marked = subprocess.Popen(["sleep", "600"], env={**env, WORKLOAD_VARIABLE: value})
    longer = subprocess.Popen(["sleep", "600"], env={**env, WORKLOAD_VARIABLE: value + "x"})
    other = subprocess.Popen(["sleep", "600"], env={**env, "OTHER": value})
    zombie = subprocess.Popen(["true"], env={**env, WORKLOAD_VARIABLE: value})
    read: list[str] = []
    read_file = proc.read_file

    def recorded(path: str) -> bytes | None:
        read.append(path)
        return read_file(path)

    try:
        os.waitid(os.P_PID, zombie.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
        monkeypatch.setattr(proc, "read_file", recorded)
        assert proc.processes_with(WORKLOAD_VARIABLE, value) == [marked.pid]
        # One read of each environment; a status only for the one that matched.
        assert [path for path in read if not path.endswith("/environ")] == [
            f"/proc/{marked.pid}/stat"
        ]
        monkeypatch.undo()
        assert workload_roots(value) == [marked.pid]
    finally:
        for process in (marked, longer, other):
            process.kill()
            process.wait()
        zombie.wait()
    assert workload_roots(value) == []

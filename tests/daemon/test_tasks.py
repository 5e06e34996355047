"""In-loop components (TaskSpec) share the lifecycle of processes: ready, restart, stop.

These run the host in the test process itself (``run_plan`` from the main thread).
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from nodehost.component import ComponentPlan, ProcessSpec, TaskSpec
from nodehost.daemon import HostSettings, RestartPolicy, run_plan
from nodehost.errors import RuntimeFailure
from nodehost.plan import Plan, PlannedComponent


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def component_started(self, *, name, pid):
        self.calls.append(("started", name, pid))

    def component_ready(self, *, name, seconds):
        self.calls.append(("ready", name))

    def component_exited(self, *, name, returncode, restarting):
        self.calls.append(("exited", name, returncode, restarting))

    def component_stopped(self, *, name):
        self.calls.append(("stopped", name))

    def node_ready(self, *, seconds, status_address, keeps_running=True):
        self.calls.append(("node ready", status_address))


def planned(name: str, run, after=()) -> PlannedComponent:
    return PlannedComponent(name, name, "test", tuple(after), ComponentPlan(run=run))


def settings(**overrides) -> HostSettings:
    values = {"health_address": None, "exit_on_ready": True, "notify": False}
    values.update(overrides)
    return HostSettings(**values)


def test_a_task_that_reports_ready_makes_the_node_ready_and_is_cancelled_on_stop(
    tmp_path: Path,
) -> None:
    seen: list[str] = []

    async def serve(context) -> None:
        context.status("warming up")
        context.ready()
        try:
            await asyncio.Event().wait()
        finally:
            seen.append("cancelled")

    hooks = Recorder()
    plan = Plan(
        (
            planned("sleeper", ProcessSpec(argv=("sleep", "600"))),
            planned("dns", TaskSpec(run=serve), after=["sleeper"]),
        ),
        str(tmp_path),
        "test",
    )
    out = io.StringIO()
    assert run_plan(plan, hooks, settings(), out=out) == 0
    assert seen == ["cancelled"]
    assert ("started", "dns", None) in hooks.calls
    assert hooks.calls.index(("ready", "sleeper")) < hooks.calls.index(("started", "dns", None))
    assert [c for c in hooks.calls if c[0] == "stopped"] == [
        ("stopped", "dns"),
        ("stopped", "sleeper"),
    ]
    assert "dns" in out.getvalue()


def test_a_task_that_keeps_raising_fails_the_node(tmp_path: Path) -> None:
    async def broken(context) -> None:
        raise ValueError("boom")

    hooks = Recorder()
    plan = Plan((planned("dns", TaskSpec(run=broken)),), str(tmp_path), "test")
    policy = RestartPolicy(initial_backoff=0.001, crash_loop_limit=3)
    with pytest.raises(RuntimeFailure) as failure:
        run_plan(plan, hooks, settings(restart=policy))
    assert "component dns failed: exited 3 times in a row" in str(failure.value)
    assert "(last: ValueError: boom); giving up" in str(failure.value)
    assert [c for c in hooks.calls if c[0] == "exited"] == [
        ("exited", "dns", None, True),
        ("exited", "dns", None, True),
        ("exited", "dns", None, False),
    ]


def test_an_unstartable_program_fails_the_node_at_once(tmp_path: Path) -> None:
    plan = Plan(
        (planned("ghost", ProcessSpec(argv=(str(tmp_path / "no-such-program"),))),),
        str(tmp_path),
        "test",
    )
    with pytest.raises(
        RuntimeFailure, match=r"component ghost failed: cannot start .*no-such-program"
    ):
        run_plan(plan, None, settings())


def test_ready_timeout_names_the_component_that_is_not_ready(tmp_path: Path) -> None:
    from nodehost.component import FileProbe

    gate = tmp_path / "never"
    plan = Plan(
        (
            planned(
                "slow",
                ProcessSpec(
                    argv=("sh", "-c", "echo warming; exec sleep 600"),
                    readiness=FileProbe(path=str(gate), interval=0.05),
                ),
            ),
        ),
        str(tmp_path),
        "test",
    )
    with pytest.raises(RuntimeFailure) as failure:
        run_plan(plan, None, settings(ready_timeout=0.5))
    message = str(failure.value)
    assert message.startswith("node not ready after 0.5s")
    assert f"component slow not ready: waiting for file {gate} (does not exist)" in message
    assert "  stdout: warming" in message


def test_an_inactive_component_counts_as_ready(tmp_path: Path) -> None:
    inactive = PlannedComponent(
        "dns", "dns", "test", (), ComponentPlan(run=None, inactive_reason="no dnsBindAddress")
    )
    out = io.StringIO()
    assert run_plan(Plan((inactive,), str(tmp_path), "test"), None, settings(), out=out) == 0
    assert "inactive" in out.getvalue()

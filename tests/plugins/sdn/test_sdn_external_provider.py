"""The built-in ``external`` provider: nodehost writes nothing and waits for another agent's list."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from nodehost.component import ReportedProbe, TaskSpec
from nodehost.errors import RuntimeFailure
from nodehost.plugins.sdn.external import ConfigurationWatcher, ExternalProvider

AGENT_LIST = {"cniVersion": "1.0.0", "name": "agent", "plugins": [{"type": "bridge"}]}


class RecordingTask:
    """A :class:`~nodehost.component.TaskContext` that records what the task reports."""

    name = "sdn"

    def __init__(self) -> None:
        self.statuses: list[str] = []
        self.events: list[tuple[str, str, dict]] = []
        self.is_ready = asyncio.Event()
        self.log = self

    def ready(self) -> None:
        self.is_ready.set()

    def status(self, message: str) -> None:
        self.statuses.append(message)

    def info(self, event: str, **fields: object) -> None:
        self.events.append(("info", event, fields))

    def warning(self, event: str, **fields: object) -> None:
        self.events.append(("warning", event, fields))


async def run_until_ready(watcher: ConfigurationWatcher, task: RecordingTask, action) -> None:
    """Run the watcher, do ``action`` (in the loop) after 50 ms, wait for ready, stop it."""
    running = asyncio.create_task(watcher(task))
    await asyncio.sleep(0.05)
    action()
    await asyncio.wait_for(task.is_ready.wait(), 5)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


def external_config(make_config, conf_dir: Path, **section: object):
    return make_config(provider="external", section={"cniConfDir": str(conf_dir), **section})


def test_the_plan_writes_nothing_and_waits_in_a_task(make_config, make_context, tmp_path) -> None:
    plan = ExternalProvider().plan(make_context(external_config(make_config, tmp_path / "net.d")))
    assert plan.files == ()
    assert isinstance(plan.run, TaskSpec) and isinstance(plan.run.readiness, ReportedProbe)
    assert plan.run.describe() == f"wait for a CNI configuration in {tmp_path}/net.d"


def test_it_is_ready_once_a_configuration_appears_and_says_what_it_waits_for(
    tmp_path: Path,
) -> None:
    conf_dir = tmp_path / "net.d"
    task = RecordingTask()
    watcher = ConfigurationWatcher(str(conf_dir), timeout=30, poll_interval=0.01)

    def agent_writes() -> None:
        conf_dir.mkdir()
        (conf_dir / "10-agent.conflist").write_text(json.dumps(AGENT_LIST))

    asyncio.run(run_until_ready(watcher, task, agent_writes))
    assert task.statuses[0] == f"waiting for a CNI configuration in {conf_dir} (30s left)"
    assert task.events[0][:2] == ("info", "CNI configuration found")
    assert task.events[0][2]["file"] == str(conf_dir / "10-agent.conflist")


def test_a_half_written_file_is_not_taken_for_a_configuration(tmp_path: Path) -> None:
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    (conf_dir / "10-agent.conflist").write_text('{"cniVersion": "1.0.0", "na')
    task = RecordingTask()
    watcher = ConfigurationWatcher(str(conf_dir), timeout=30, poll_interval=0.01)

    async def scenario() -> None:
        running = asyncio.create_task(watcher(task))
        await asyncio.sleep(0.1)
        assert not task.is_ready.is_set()
        (conf_dir / "10-agent.conflist").write_text(json.dumps(AGENT_LIST))
        await asyncio.wait_for(task.is_ready.wait(), 5)
        running.cancel()

    asyncio.run(scenario())


def test_without_a_configuration_it_fails_after_the_timeout(tmp_path: Path) -> None:
    watcher = ConfigurationWatcher(str(tmp_path / "net.d"), timeout=0.2, poll_interval=0.01)
    with pytest.raises(RuntimeFailure) as caught:
        asyncio.run(watcher(RecordingTask()))
    assert str(caught.value) == (
        f"no CNI configuration appeared in {tmp_path}/net.d within 0.2s; the agent that "
        "manages this node's network has not written one"
    )


def test_once_ready_it_reports_a_removed_configuration(tmp_path: Path) -> None:
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    path = conf_dir / "10-agent.conflist"
    path.write_text(json.dumps(AGENT_LIST))
    task = RecordingTask()
    watcher = ConfigurationWatcher(str(conf_dir), timeout=30, poll_interval=0.01)

    async def scenario() -> None:
        running = asyncio.create_task(watcher(task))
        await asyncio.wait_for(task.is_ready.wait(), 5)
        path.unlink()
        await asyncio.sleep(0.1)
        running.cancel()

    asyncio.run(scenario())
    removed = [event for event in task.events if event[1] == "CNI configuration removed"]
    assert len(removed) == 1 and removed[0][0] == "warning"
    assert task.statuses[-1] == f"no CNI configuration in {conf_dir} any more"


def test_the_timeout_is_a_go_duration(make_config, validate, tmp_path) -> None:
    config = external_config(make_config, tmp_path, readyTimeout="soon")
    (problem,) = validate(config)
    assert problem.startswith('externalNetwork.readyTimeout: Invalid value: "soon": must be a dur')


def test_the_section_is_optional(make_config, validate) -> None:
    assert validate(make_config(provider="external", section=None)) == []


def test_the_real_host_starts_dependants_once_the_configuration_appears(
    make_config, make_context, tmp_path: Path
) -> None:
    from nodehost.daemon import HostSettings, run_plan
    from nodehost.plan import Plan, PlannedComponent

    conf_dir = tmp_path / "net.d"
    config = external_config(make_config, conf_dir)
    planned = PlannedComponent("sdn", "pod network", "sdn", (), ExternalProvider().plan(
        make_context(config)
    ))  # fmt: skip
    plan = Plan((planned,), str(tmp_path / "state"), "test")

    def agent_writes() -> None:
        conf_dir.mkdir()
        (conf_dir / "10-agent.conflist").write_text(json.dumps(AGENT_LIST))

    timer = threading.Timer(0.3, agent_writes)
    timer.start()
    out = tmp_path / "summary.txt"
    with out.open("w") as stream:
        settings = HostSettings(exit_on_ready=True, ready_timeout=20, health_address=None,
                                notify=False, watchdog=False)  # fmt: skip
        code = run_plan(plan, settings=settings, out=stream)
    timer.join()
    assert code == 0
    sdn_line = [line for line in out.read_text().splitlines() if line.split()[:1] == ["sdn"]]
    (line,) = sdn_line
    assert float(line.split()[1].rstrip("s")) >= 0.3

"""A running host takes a new config: only what changed restarts; bad ones are rejected or
rolled back.  The host runs in this process; a task component asks for the applies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nodehost.component import ComponentPlan, FileProbe, FileSpec, ProcessSpec, TaskSpec
from nodehost.daemon import HostSettings, RestartPolicy, run_plan
from nodehost.daemon.reconfigure import changed_components
from nodehost.errors import ConfigInvalid
from nodehost.plan import Plan, PlannedComponent
from nodehost.pluginhost.records import Problem

SLEEP = (sys.executable, "-c", "import time; time.sleep(120)")


@dataclass(frozen=True)
class Driver:
    """A task that applies each content in turn, records what the host said, then stops it."""

    contents: tuple[bytes, ...]
    seen: list[dict[str, Any]] = field(default_factory=list, compare=False)

    async def __call__(self, context: Any) -> None:
        context.ready()
        for content in self.contents:
            result = await context.apply_config(content, "test")
            self.seen.append({"result": result, "starts": dict(STARTS)})
        os.kill(os.getpid(), signal.SIGTERM)


#: How often each component was started (the lifecycle hook counts).
STARTS: dict[str, int] = {}


class Counter:
    """Lifecycle hooks that count each component's starts into :data:`STARTS`."""

    def component_started(self, *, name: str, pid: int | None) -> None:
        STARTS[name] = STARTS.get(name, 0) + 1

    def component_ready(self, *, name: str, seconds: float) -> None:
        """Nothing."""

    def component_exited(self, *, name: str, returncode: int | None, restarting: bool) -> None:
        """Nothing."""

    def component_stopped(self, *, name: str) -> None:
        """Nothing."""

    def metrics_collectors(self) -> list[Any]:
        return []

    def plugin_failures(self) -> list[Any]:
        return []


def process(name: str, *, env: dict[str, str] | None = None, probe: Any = None) -> PlannedComponent:
    spec = ProcessSpec(argv=SLEEP, env=env or {}, stop_grace=2.0)
    if probe is not None:
        spec = ProcessSpec(argv=SLEEP, env=env or {}, stop_grace=2.0, readiness=probe)
    return PlannedComponent(name, name, "test", (), ComponentPlan(run=spec))


def plan(config: Path, state_dir: Path, driver: Driver, *components: PlannedComponent) -> Plan:
    after = tuple(component.name for component in components)  # it drives a started node
    driving = PlannedComponent(
        "driver", "driver", "test", after, ComponentPlan(run=TaskSpec(driver))
    )
    return Plan((*components, driving), str(state_dir), str(config))


def run(
    tmp_path: Path,
    plans: dict[bytes, Callable[[Driver], Plan]],
    contents: tuple[bytes, ...],
    **settings: Any,
) -> Driver:
    """Run the host on ``plans[b"v1"]``; the driver applies ``contents``; the driver back."""
    config = tmp_path / "node-config.yaml"
    config.write_bytes(b"v1")
    driver = Driver(contents)

    def replanner(path: str, source: str) -> tuple[Plan, tuple[str, ...]]:
        content = Path(path).read_bytes()
        assert source == str(config) and Path(path).parent == config.parent
        if content not in plans:
            raise ConfigInvalid(source, [Problem.invalid("nodeIP", "x", "must be a valid IP")])
        return plans[content](driver), ()

    STARTS.clear()
    code = run_plan(
        plans[b"v1"](driver),
        Counter(),
        HostSettings(health_address=None, notify=False, **settings),
        replanner=replanner,
    )
    assert code == 0
    return driver


@pytest.fixture
def paths(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "node-config.yaml", tmp_path / "state"


def test_only_the_component_whose_plan_changed_restarts(tmp_path: Path, paths) -> None:
    config, state = paths
    plans = {
        b"v1": lambda d: plan(config, state, d, process("a"), process("b")),
        b"v2": lambda d: plan(config, state, d, process("a", env={"X": "2"}), process("b")),
    }
    driver = run(tmp_path, plans, (b"v2",))
    [seen] = driver.seen
    result = seen["result"]
    assert (result.result, result.restarted, result.generation) == ("applied", ("a",), 2)
    assert config.read_bytes() == b"v2"
    assert (tmp_path / "node-config.yaml.prev").read_bytes() == b"v1"


def test_the_unchanged_components_keep_their_processes(tmp_path: Path, paths) -> None:
    config, state = paths
    plans = {
        b"v1": lambda d: plan(config, state, d, process("a"), process("b")),
        b"v2": lambda d: plan(config, state, d, process("a", env={"X": "2"}), process("b")),
    }
    driver = run(tmp_path, plans, (b"v1", b"v2"))  # v1 runs already: unchanged
    unchanged, applied = driver.seen
    assert unchanged["result"].result == "unchanged"
    assert unchanged["starts"] == {"a": 1, "b": 1, "driver": 1}
    assert applied["starts"] == {"a": 2, "b": 1, "driver": 1}


def test_an_invalid_config_is_rejected_and_nothing_is_written(tmp_path: Path, paths) -> None:
    config, state = paths
    plans = {b"v1": lambda d: plan(config, state, d, process("a"))}
    driver = run(tmp_path, plans, (b"bad",))
    result = driver.seen[0]["result"]
    assert result.result == "rejected"
    assert result.problems == ('nodeIP: Invalid value: "x": must be a valid IP',)
    assert result.generation == 1
    assert config.read_bytes() == b"v1"
    assert not (tmp_path / "node-config.yaml.prev").exists()
    assert not list(tmp_path.glob(".*candidate"))


def test_a_component_not_ready_in_time_is_rolled_back(tmp_path: Path, paths) -> None:
    config, state = paths
    never = FileProbe(path=str(tmp_path / "never"), interval=0.05)
    plans = {
        b"v1": lambda d: plan(config, state, d, process("a"), process("b")),
        b"v2": lambda d: plan(config, state, d, process("a", probe=never), process("b")),
    }
    driver = run(tmp_path, plans, (b"v2",), config_rollback_after=0.5)
    result = driver.seen[0]["result"]
    assert (result.result, result.restarted, result.generation) == ("rolled back", ("a",), 3)
    [problem] = result.problems  # "a" restarted and was ready before: said once
    assert problem.startswith("a not ready within 0.5s: waiting for file ")
    assert config.read_bytes() == b"v1"
    assert (tmp_path / "node-config.yaml.rolled-back").read_bytes() == b"v2"


def test_a_component_that_fails_is_rolled_back_and_the_node_goes_on(tmp_path: Path, paths) -> None:
    config, state = paths
    never = FileProbe(path=str(tmp_path / "never"), interval=0.05)
    spec = ProcessSpec(argv=("false",), readiness=never)
    failing = PlannedComponent("a", "a", "test", (), ComponentPlan(run=spec))
    plans = {
        b"v1": lambda d: plan(config, state, d, process("a")),
        b"v2": lambda d: plan(config, state, d, failing),
    }
    driver = run(
        tmp_path,
        plans,
        (b"v2",),
        config_rollback_after=60.0,
        restart=RestartPolicy(crash_loop_limit=2, initial_backoff=0.01),
    )
    result = driver.seen[0]["result"]
    assert result.result == "rolled back"
    assert result.problems[0].startswith("a failed: exited 2 times in a row")
    assert driver.seen[0]["starts"]["a"] >= 3  # the failing plan's runs, then the old plan


def test_a_component_that_becomes_active_starts(tmp_path: Path, paths) -> None:
    config, state = paths
    idle = PlannedComponent("a", "a", "test", (), ComponentPlan(inactive_reason="nothing to do"))
    plans = {
        b"v1": lambda d: plan(config, state, d, idle),
        b"v2": lambda d: plan(config, state, d, process("a")),
    }
    driver = run(tmp_path, plans, (b"v2",))
    assert driver.seen[0]["result"].restarted == ("a",)
    assert driver.seen[0]["starts"]["a"] == 1


def test_changed_files_are_a_change(tmp_path: Path) -> None:
    def with_file(content: bytes) -> Plan:
        files = (FileSpec(str(tmp_path / "a.conf"), content),)
        a = PlannedComponent(
            "a", "a", "test", (), ComponentPlan(run=ProcessSpec(SLEEP), files=files)
        )
        return Plan((a, process("b")), str(tmp_path), "x")

    assert changed_components(with_file(b"1"), with_file(b"1")) == []
    assert changed_components(with_file(b"1"), with_file(b"2")) == ["a"]


def test_plans_with_other_components_cannot_be_compared(tmp_path: Path) -> None:
    one = Plan((process("a"),), str(tmp_path), "x")
    two = Plan((process("a"), process("b")), str(tmp_path), "x")
    with pytest.raises(ValueError, match="changes which components run"):
        changed_components(one, two)


def acting(name: str, action: str, tmp_path: Path) -> PlannedComponent:
    """A component whose process does ``action`` (Python, ``os``/``signal`` imported; ``HOST``
    is this process's pid) and is never ready."""
    never = FileProbe(path=str(tmp_path / "never"), interval=0.05)
    code = f"import os, signal, time; {action}; time.sleep(120)"
    spec = ProcessSpec(
        argv=(sys.executable, "-c", code),
        env={"HOST": str(os.getpid())},
        stop_grace=2.0,
        readiness=never,
    )
    return PlannedComponent(name, name, "test", (), ComponentPlan(run=spec))


def test_a_rollback_leaves_a_file_edited_during_the_apply_and_the_edit_is_applied_next(
    tmp_path: Path, paths
) -> None:
    config, state = paths
    edit = f"open({str(config)!r}, 'wb').write(b'v3'); os.kill(int(os.environ['HOST']), 1)"
    plans = {
        b"v1": lambda d: plan(config, state, d, process("a")),
        b"v2": lambda d: plan(config, state, d, acting("a", edit, tmp_path)),
        b"v3": lambda d: plan(config, state, d, process("a", env={"X": "3"})),
    }
    # The edit's SIGHUP queues behind the v2 apply; the driver's v3 comes after it.
    driver = run(tmp_path, plans, (b"v2", b"v3"), config_rollback_after=0.5)
    rolled_back, after = (seen["result"] for seen in driver.seen)
    assert rolled_back.result == "rolled back"
    assert after.result == "unchanged"  # the SIGHUP read v3 (not v1 written over it)
    assert config.read_bytes() == b"v3"


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs (a disk that fills up), unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_rollback_that_cannot_write_the_file_is_reported_as_failing(
    tmp_path: Path, tiny_disk: Path
) -> None:
    config, state = tiny_disk / "node-config.yaml", tmp_path / "state"
    filler = tiny_disk / "filler"
    fill = f"os.system('dd if=/dev/zero of={filler} bs=64k count=64 2>/dev/null')"
    plans = {
        b"v1": lambda d: plan(config, state, d, process("a")),
        b"v2": lambda d: plan(config, state, d, acting("a", fill, tmp_path)),
    }
    driver = run(tiny_disk, plans, (b"v2",), config_rollback_after=0.5)
    result = driver.seen[0]["result"]
    assert result.result == "rollback failed"
    assert result.problems[0].startswith("a not ready within 0.5s")
    assert "No space left on device" in result.problems[1]
    assert len(result.problems) == 2


def test_a_file_too_large_is_refused_in_the_words_of_the_loader(tmp_path: Path, paths) -> None:
    """SIGHUP's read of the file (content None) says what a config map's apply says."""
    config, state = paths
    grow = f"open({str(config)!r}, 'ab').write(b'#' * (5 << 20))"
    plans = {
        b"v1": lambda d: plan(config, state, d, process("a")),
        b"v2": lambda d: plan(config, state, d, acting("a", grow, tmp_path)),
    }
    driver = run(tmp_path, plans, (b"v2", None), config_rollback_after=0.5)  # type: ignore[arg-type]
    rolled_back, reread = (seen["result"] for seen in driver.seen)
    assert rolled_back.result == "rolled back"
    assert reread.result == "rejected"
    assert reread.problems == (
        f'could not load config file "{config}" due to an error: the file is larger than the '
        "limit of 4 MiB (4194304 bytes)",
    )


def test_the_log_lists_a_rollbacks_problems_once(tmp_path: Path, paths, capfd) -> None:
    config, state = paths
    never = FileProbe(path=str(tmp_path / "never"), interval=0.05)
    plans = {
        b"v1": lambda d: plan(config, state, d, process("a")),
        b"v2": lambda d: plan(config, state, d, process("a", probe=never)),
    }
    run(tmp_path, plans, (b"v2",), config_rollback_after=0.5)
    logged = capfd.readouterr().err
    assert logged.count("a not ready within 0.5s") == 1, logged

"""A real host runs real children: start, restart, crash loop, stop, and no orphans."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from hostrun import (
    PID_FILES_ONLY,
    alive,
    exists,
    healthz_component,
    http_get,
    marked_processes,
    needs_cgroups,
    standin,
    wait_for,
)

from nodehost.daemon import cgroups


def test_exit_on_ready_prints_the_summary_and_exits_0(host_run) -> None:
    run = host_run(
        [healthz_component("kubelet"), {"name": "sleeper", "argv": ["sleep", "600"]}],
        "--exit-on-ready",
    )
    assert run.wait() == 0, run.stderr()
    summary = run.stdout().splitlines()
    assert summary[0].startswith("node ready after ")
    assert [line.split()[0] for line in summary[2:]] == ["kubelet", "sleeper"]
    assert marked_processes(run.state_dir) == []


def test_files_are_written_with_their_modes_before_the_start(host_run, tmp_path: Path) -> None:
    secret = tmp_path / "conf" / "secret.conf"
    public = tmp_path / "conf" / "public.conf"
    seen = tmp_path / "seen"
    component = {
        "name": "reader",
        "argv": ["sh", "-c", f"stat -c %a {secret} {public} > {seen}; cat {secret} >> {seen}"],
        "files": [
            {"path": str(secret), "content": "s3cret\n", "mode": "0600"},
            {"path": str(public), "content": "hello\n", "mode": "0644"},
        ],
    }
    run = host_run([component], "--crash-loop-limit", "1")
    assert run.wait() == 1  # the component exits on its own: with a limit of 1 the node fails
    assert seen.read_text().split() == ["600", "644", "s3cret"]
    assert sorted(p.name for p in secret.parent.iterdir()) == ["public.conf", "secret.conf"]


def test_children_get_the_marker_but_not_notify_socket(host_run, tmp_path: Path) -> None:
    dump = tmp_path / "env"
    # Written beside and renamed into place: the file probe never sees it half-written.
    script = (
        f"import os; open({str(dump)!r} + '.tmp', 'w').write(repr(dict(os.environ))); "
        f"os.rename({str(dump)!r} + '.tmp', {str(dump)!r})"
    )
    component = {
        "name": "envdump",
        "argv": [sys.executable, "-c", script + "; import time; time.sleep(600)"],
        "ready": {"file": str(dump)},
        "env": {"EXTRA": "yes"},
    }
    run = host_run(
        [component],
        "--exit-on-ready",
        env={"NOTIFY_SOCKET": str(tmp_path / "nobody.sock"), "WATCHDOG_USEC": "0"},
    )
    assert run.wait() == 0, run.stderr()
    environment = eval(dump.read_text())  # our own repr of a dict of strings
    assert "NOTIFY_SOCKET" not in environment
    assert "WATCHDOG_USEC" not in environment
    assert environment["NODEHOST_MANAGED"] == run.state_dir
    assert environment["NODEHOST_COMPONENT"] == "envdump"
    assert environment["EXTRA"] == "yes"


def test_crashed_component_is_restarted_with_growing_backoff(host_run, tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    component = healthz_component(
        "kubelet",
        env={
            "NODEHOST_STANDIN_CRASH_TIMES": "2",
            "NODEHOST_STANDIN_CRASH_AFTER": "0.05",
            "NODEHOST_STANDIN_STARTS_FILE": str(starts),
        },
    )
    run = host_run([component], "--initial-backoff", "0.2")
    third = run.wait_hook("component_started", "kubelet", count=3)
    wait_for(
        lambda: any(
            e["hook"] == "component_ready" and e["time"] > third["time"] for e in run.hooks()
        ),
        what="ready after the second restart",
    )
    exits = [e for e in run.hooks() if e["hook"] == "component_exited"]
    assert [(e["returncode"], e["restarting"]) for e in exits] == [(1, True), (1, True)]
    restarts = run.events("component restarting")
    delays = [event["delay"] for event in restarts]
    assert len(delays) == 2 and delays[1] > delays[0]
    started = [e for e in run.hooks() if e["hook"] == "component_started"]
    for exited, next_start, delay in zip(exits, started[1:], delays, strict=True):
        assert next_start["time"] - exited["time"] >= delay * 0.99
    assert len(set(starts.read_text().split())) == 3
    run.signal(signal.SIGTERM)
    assert run.wait() == 0


def test_crash_loop_fails_the_node_with_the_component_and_its_last_lines(host_run) -> None:
    component = {
        "name": "flappy",
        "argv": standin("flappy"),
        "env": {"NODEHOST_STANDIN_CRASH_AFTER": "0:3"},
    }
    run = host_run(
        [component, {"name": "steady", "argv": ["sleep", "600"]}], "--crash-loop-limit", "3"
    )
    assert run.wait() == 1
    err = run.stderr()
    assert "error: component flappy failed: exited 3 times in a row" in err
    assert "(last: exit code 3); giving up" in err
    assert "last output of flappy:" in err
    assert "  stderr: flappy: crashing with exit code 3" in err
    assert "Traceback" not in err
    assert sorted(run.hook_names("component_stopped")) == ["flappy", "steady"]
    assert marked_processes(run.state_dir) == []


def test_crash_loop_repeated_lines_are_suppressed(host_run) -> None:
    component = {
        "name": "flappy",
        "argv": standin("flappy"),
        "env": {"NODEHOST_STANDIN_CRASH_AFTER": "0:3"},
    }
    run = host_run([component], "--crash-loop-limit", "5")
    assert run.wait() == 1
    crash_lines = [e for e in run.logs() if e.get("event") == "flappy: crashing with exit code 3"]
    suppressed = run.events("repeated output of a crash-looping component suppressed")
    assert len(crash_lines) < 5
    assert sum(e["lines"] for e in suppressed) + len(crash_lines) == 5


def test_sigterm_stops_in_reverse_order_and_exits_0(host_run) -> None:
    components = [
        healthz_component("base"),
        healthz_component("middle", after=["base"]),
        healthz_component("top", after=["middle"]),
    ]
    run = host_run(components)
    run.wait_ready()
    pids = [e["pid"] for e in run.hooks() if e["hook"] == "component_started"]
    run.signal(signal.SIGTERM)
    assert run.wait() == 0, run.stderr()
    assert run.hook_names("component_stopped") == ["top", "middle", "base"]
    assert not any(alive(pid) for pid in pids)
    assert marked_processes(run.state_dir) == []
    assert not list((Path(run.state_dir) / "run").glob("*.pid"))


def test_sigint_stops_cleanly_too(host_run) -> None:
    run = host_run([healthz_component("kubelet")])
    run.wait_ready()
    run.signal(signal.SIGINT)
    assert run.wait() == 0
    assert run.hook_names("component_stopped") == ["kubelet"]


@pytest.mark.parametrize(
    ("first", "said"),
    [
        (signal.SIGINT, "second SIGINT: forcing the stop, killing every component now"),
        (signal.SIGTERM, "SIGINT after SIGTERM: forcing the stop, killing every component now"),
    ],
)
def test_sigint_during_a_stop_forces_it_and_says_so(host_run, first, said) -> None:
    component = healthz_component(
        "stubborn", env={"NODEHOST_STANDIN_IGNORE_SIGTERM": "1"}, stop_grace=600
    )
    run = host_run([component])
    run.wait_ready()
    pid = run.hooks()[0]["pid"]
    run.signal(first)
    wait_for(lambda: run.events("stopping node"), what="stop to begin")
    run.signal(signal.SIGINT)
    assert run.wait() == 1
    assert not alive(pid)
    assert run.events(said)
    killed = run.events("component killed: the stop was forced")
    assert [event["component"] for event in killed] == ["stubborn"]
    assert not run.events("component did not stop within its grace period; killed")


def test_child_ignoring_sigterm_is_killed_after_the_grace_period(host_run) -> None:
    component = healthz_component(
        "stubborn", env={"NODEHOST_STANDIN_IGNORE_SIGTERM": "1"}, stop_grace=0.5
    )
    run = host_run([component])
    run.wait_ready()
    pid = run.hooks()[0]["pid"]
    run.signal(signal.SIGTERM)
    assert run.wait() == 0
    assert not alive(pid)
    warnings = run.events("component did not stop within its grace period; killed")
    assert [w["component"] for w in warnings] == ["stubborn"]


def test_stop_waits_for_a_grandchild_in_the_process_group(host_run, tmp_path: Path) -> None:
    grandchild_file = tmp_path / "grandchild"
    component = healthz_component(
        "forker",
        env={
            "NODEHOST_STANDIN_FORK_GRANDCHILD": "1",
            "NODEHOST_STANDIN_GRANDCHILD_PID_FILE": str(grandchild_file),
        },
        stop_grace=0.5,
    )
    run = host_run([component])
    run.wait_ready()
    grandchild = int(grandchild_file.read_text())
    assert alive(grandchild)
    run.signal(signal.SIGTERM)
    assert run.wait() == 0
    assert not exists(grandchild)  # killed and reaped by the host, no zombie left


def test_grandchild_that_left_the_group_is_reaped_after_a_crash(host_run, tmp_path: Path) -> None:
    grandchild_file = tmp_path / "grandchild"
    component = healthz_component(
        "forker",
        env={
            "NODEHOST_STANDIN_FORK_GRANDCHILD": "setsid",
            "NODEHOST_STANDIN_GRANDCHILD_PID_FILE": str(grandchild_file),
            "NODEHOST_STANDIN_CRASH_TIMES": "1",
            "NODEHOST_STANDIN_CRASH_AFTER": "0.3",
            "NODEHOST_STANDIN_STARTS_FILE": str(tmp_path / "starts"),
        },
        stop_grace=0.5,
    )
    run = host_run([component])
    run.wait_hook("component_started", "forker", count=1)
    grandchild = wait_for(lambda: grandchild_file.exists() and int(grandchild_file.read_text()))
    run.wait_hook("component_started", "forker", count=2)
    # the crashed run's session-escaped grandchild was adopted by the host, killed and reaped
    assert not exists(grandchild)
    assert run.process.poll() is None
    run.signal(signal.SIGTERM)
    assert run.wait() == 0
    assert marked_processes(run.state_dir) == []


def test_kill_9_of_the_host_leaves_no_component_running(host_run) -> None:
    components = [healthz_component("kubelet"), {"name": "sleeper", "argv": ["sleep", "600"]}]
    run = host_run(components)
    run.wait_ready()
    pids = [e["pid"] for e in run.hooks() if e["hook"] == "component_started"]
    assert all(alive(pid) for pid in pids)
    run.signal(signal.SIGKILL)
    run.wait()
    wait_for(lambda: not any(alive(pid) for pid in pids), what="components to die with the host")


def forker(grandchild_file: Path) -> dict[str, Any]:
    """A stand-in component that starts a grandchild (no parent-death signal of its own)."""
    return healthz_component(
        "forker",
        env={
            "NODEHOST_STANDIN_FORK_GRANDCHILD": "1",
            "NODEHOST_STANDIN_GRANDCHILD_PID_FILE": str(grandchild_file),
        },
        stop_grace=0.5,
    )


@needs_cgroups
def test_the_guardian_ends_an_agents_grandchild_when_the_host_is_killed(
    host_run, tmp_path: Path
) -> None:
    grandchild_file = tmp_path / "grandchild"
    run = host_run([forker(grandchild_file)])
    run.wait_ready()
    status = json.loads(http_get(run.url("/status"))[1])
    assert status["agents"]["mechanism"] == "cgroup"
    guardian = status["agents"]["guardian_pid"]
    grandchild = int(wait_for(grandchild_file.read_text, what="the grandchild"))
    assert cgroups.cgroup_of(grandchild).endswith("/agents/forker")
    run.signal(signal.SIGKILL)
    run.wait()
    wait_for(lambda: not alive(grandchild), what="the guardian to end the grandchild")
    wait_for(lambda: not alive(guardian), what="the guardian to exit")


def test_next_start_ends_what_a_killed_host_left_behind(host_run, tmp_path: Path) -> None:
    """The pid-file fallback (no cgroups): the grandchild lives until the next start."""
    grandchild_file = tmp_path / "grandchild"
    first = host_run([forker(grandchild_file)], env=PID_FILES_ONLY)
    first.wait_ready()
    first.signal(signal.SIGKILL)
    first.wait()
    grandchild = int(grandchild_file.read_text())
    assert alive(grandchild)  # the parent-death signal reaches children only
    second = host_run(
        [{"name": "sleeper", "argv": ["sleep", "600"]}],
        "--exit-on-ready",
        "--stop-grace",
        "0.5",
        state_dir=first.state_dir,
        env=PID_FILES_ONLY,
    )
    assert second.wait() == 0, second.stderr()
    assert not alive(grandchild)
    assert second.events("leftovers ended")[0]["pids"] == [grandchild]
    # said before the wait (up to the grace period), not only once it is over
    said = [event["event"] for event in second.logs()]
    before = "ending what an earlier run left: SIGTERM, then SIGKILL after the grace period"
    assert said.index(before) < said.index("leftovers ended")
    [announced] = second.events(before)
    assert (announced["pids"], announced["below_agents"], announced["grace"]) == (
        [grandchild],
        [grandchild],
        0.5,
    )


def test_status_names_the_pid_file_mechanism_and_why_when_cgroups_are_off(host_run) -> None:
    run = host_run([{"name": "sleeper", "argv": ["sleep", "600"]}], env=PID_FILES_ONLY)
    run.wait_ready()
    agents = json.loads(http_get(run.url("/status"))[1])["agents"]
    assert agents == {"mechanism": "pid-files", "reason": "turned off by NODEHOST_CGROUPS=0"}
    run.signal(signal.SIGTERM)
    assert run.wait() == 0


@needs_cgroups
def test_a_stop_empties_and_removes_the_agents_cgroups(host_run) -> None:
    run = host_run([{"name": "sleeper", "argv": ["sleep", "600"]}])
    run.wait_ready()
    agents = json.loads(http_get(run.url("/status"))[1])["agents"]
    base = Path(agents["cgroup"])
    [pid] = [e["pid"] for e in run.hooks() if e["hook"] == "component_started"]
    assert cgroups.cgroup_of(pid).endswith("/agents/sleeper")
    run.signal(signal.SIGTERM)
    assert run.wait() == 0
    assert not base.exists() and not alive(agents["guardian_pid"])

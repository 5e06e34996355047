"""A real containerd as the ``runtime`` component, under ``nodehost start``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from realruntime import (
    IMAGE,
    NODEHOST,
    alive,
    busybox_rootfs,
    ctr,
    managed_pids,
    needs_containerd,
    oci_image_tar,
    task_pids,
    wait_for,
)

from nodehost.daemon.grpchealth import GrpcStatusError, check_health
from nodehost.daemon.teardown import mounts_below
from nodehost.daemon.workloads import workload_roots

pytestmark = [needs_containerd, pytest.mark.usefixtures("outside_guard")]

BASE = ("--components=runtime,kubelet", "--standins=always", "--health-address=127.0.0.1:0")


def start(config: Path, state: Path, env: dict[str, str], *extra: str, **kwargs):
    argv = [NODEHOST, "start", f"--config={config}", f"--state-dir={state}", *BASE, *extra]
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kwargs
    )


def events(stderr: str) -> list[dict]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def pid_of(state: Path, component: str) -> int | None:
    try:
        return int((state / "run" / f"{component}.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def test_exit_on_ready_starts_the_kubelet_only_after_containerd_answers(
    node_folder, short_dir, plugin_env
) -> None:
    state = short_dir / "state"
    host = start(node_folder(), state, plugin_env, "--exit-on-ready", "--ready-timeout=30s")
    out, err = host.communicate(timeout=60)
    assert host.returncode == 0, err[-3000:]
    assert [line.split()[0] for line in out.splitlines()[2:4]] == ["runtime", "kubelet"]
    order = [
        (event.get("component"), event["event"])
        for event in events(err)
        if event["event"] in ("component ready", "component started")
    ]
    assert order.index(("runtime", "component ready")) < order.index(
        ("kubelet", "component started")
    )
    kubelet_config = (state / "kubelet" / "kubelet-config.yaml").read_text()
    assert f"containerRuntimeEndpoint: unix://{state}/runtime/containerd.sock" in kubelet_config
    assert f"imageServiceEndpoint: unix://{state}/runtime/containerd.sock" in kubelet_config
    assert managed_pids(state) == []
    # a clean stop leaves no socket (containerd leaves its ttrpc one: nodehost removes it)
    assert sorted((state / "runtime").glob("containerd.sock*")) == []
    # containerd logs at warn by default: not its ~60 "loading plugin" lines on every start
    runtime_lines = [
        e["event"] for e in events(err) if e.get("stream") and e.get("component") == "runtime"
    ]
    assert not [line for line in runtime_lines if "loading plugin" in line], runtime_lines[:5]


def test_a_running_node_runs_containers_restarts_containerd_and_stops_without_leftovers(
    node_folder, short_dir, plugin_env
) -> None:
    state = short_dir / "state"
    socket = state / "runtime" / "containerd.sock"
    host = start(node_folder(), state, plugin_env)
    try:
        wait_for(lambda: pid_of(state, "kubelet"), what="the kubelet stand-in to start")
        version = ctr(socket, "version")
        assert version.returncode == 0 and "Server:" in version.stdout, version.stderr
        assert asyncio.run(check_health(str(socket))) == "SERVING"
        with pytest.raises(GrpcStatusError) as unknown:
            asyncio.run(check_health(str(socket), "no.such.Service"))
        assert unknown.value.code_name == "NOT_FOUND"

        rootfs = busybox_rootfs(short_dir)
        run = ctr(
            socket, "run", "--rm", "--rootfs", "--cgroup", "", "--fifo-dir",
            str(short_dir / "fifo"), "--runc-root", str(short_dir / "runc"),
            str(rootfs), "nh-test-1", "/bin/sh", "-c", "echo ok",
        )  # fmt: skip
        assert (run.returncode, run.stdout.strip()) == (0, "ok"), run.stderr

        first, kubelet = pid_of(state, "runtime"), pid_of(state, "kubelet")
        assert first is not None
        os.kill(first, signal.SIGKILL)
        second = wait_for(
            lambda: pid_of(state, "runtime") not in (None, first) and pid_of(state, "runtime"),
            what="containerd to be restarted",
        )
        wait_for(lambda: ctr(socket, "version").returncode == 0, what="containerd to answer")
        kubelet_now = pid_of(state, "kubelet")
        assert second in managed_pids(state)
    finally:
        host.send_signal(signal.SIGTERM)
        _, err = host.communicate(timeout=60)
    assert host.returncode == 0, err[-3000:]
    assert kubelet_now == kubelet, err[-6000:]  # the kubelet reconnects; not restarted
    assert managed_pids(state) == []
    assert not socket.exists()
    assert not socket.with_name("containerd.sock.ttrpc").exists()


def test_containerd_that_cannot_start_fails_the_node_naming_the_component_and_cause(
    node_folder, short_dir, plugin_env
) -> None:
    state = short_dir / "state"
    (state / "runtime").mkdir(parents=True)
    (state / "runtime" / "root").write_text("a file where containerd's root folder belongs\n")
    host = start(node_folder(), state, plugin_env, "--exit-on-ready", "--ready-timeout=30s")
    _, err = host.communicate(timeout=60)
    assert host.returncode == 1
    assert "component runtime failed: exited 5 times in a row" in err
    assert "root: not a directory" in err
    assert managed_pids(state) == []


def test_a_state_directory_too_long_for_the_socket_is_refused_before_anything_starts(
    node_folder, short_dir, plugin_env
) -> None:
    state = short_dir / ("s" * 90)
    host = start(node_folder(), state, plugin_env, "--exit-on-ready")
    _, err = host.communicate(timeout=60)
    assert host.returncode == 1
    assert "component runtime: the socket path" in err
    assert "longer than containerd allows" in err


def run_detached(socket: Path, short_dir: Path, *image_name_command: str):
    """``ctr run -d IMAGE NAME COMMAND...`` (``--rootfs DIR`` for IMAGE), with ctr's FIFOs
    and runc's state in the test's folder."""
    return ctr(
        socket, "run", "-d", "--cgroup", "", "--fifo-dir", str(short_dir / "fifo"),
        "--runc-root", str(short_dir / "runc"), *image_name_command,
    )  # fmt: skip


def test_a_container_outlives_a_restart_and_a_killed_host_and_ends_only_at_teardown(
    node_folder, short_dir, plugin_env
) -> None:
    state = short_dir / "state"
    socket = state / "runtime" / "containerd.sock"
    config = node_folder()
    host = start(config, state, plugin_env)
    try:
        wait_for(lambda: pid_of(state, "kubelet"), what="the kubelet stand-in to start")
        imported = ctr(socket, "image", "import", str(oci_image_tar(short_dir)))
        assert imported.returncode == 0, imported.stderr
        run = run_detached(socket, short_dir, IMAGE, "nh-survivor", "/bin/busybox", "sleep", "4243")
        assert run.returncode == 0, run.stderr
        pid, status = task_pids(socket)["nh-survivor"]
        assert status == "RUNNING"
        first_containerd = pid_of(state, "runtime")
    finally:
        host.send_signal(signal.SIGTERM)
        _, err = host.communicate(timeout=60)
    assert host.returncode == 0, err[-3000:]
    assert alive(pid) and not alive(first_containerd)
    assert managed_pids(state) == []  # the agents are gone, the workload is not

    again = start(config, state, plugin_env)
    try:
        wait_for(lambda: pid_of(state, "kubelet"), what="the second kubelet stand-in")
        assert task_pids(socket)["nh-survivor"] == (pid, "RUNNING")
        containerd = pid_of(state, "runtime")
    finally:
        again.kill()  # SIGKILL: the agents die with the host, the workload does not
        again.communicate(timeout=60)
    wait_for(lambda: not alive(containerd), what="containerd to die with the host")
    assert alive(pid)

    ended = subprocess.run(
        [NODEHOST, "teardown", f"--state-dir={state}", "--grace=1s"],
        capture_output=True, text=True, env=plugin_env, timeout=60,
    )  # fmt: skip
    assert ended.returncode == 0, ended.stderr
    assert "ended workload /usr/bin/containerd-shim-runc-v2" in ended.stdout
    assert not alive(pid)
    assert workload_roots(str(state)) == [] and managed_pids(state) == []
    assert mounts_below(str(state)) == []
    again = subprocess.run(
        [NODEHOST, "teardown", f"--state-dir={state}"], capture_output=True, text=True, timeout=60
    )
    assert (again.returncode, again.stdout.strip()) == (0, f"nothing was running for {state}")


def test_exit_on_ready_tears_down_the_containers_an_earlier_run_left(
    node_folder, short_dir, plugin_env
) -> None:
    state = short_dir / "state"
    socket = state / "runtime" / "containerd.sock"
    config = node_folder()
    host = start(config, state, plugin_env)
    try:
        wait_for(lambda: pid_of(state, "kubelet"), what="the kubelet stand-in to start")
        rootfs = busybox_rootfs(short_dir)
        run = run_detached(
            socket, short_dir, "--rootfs", str(rootfs), "nh-left", "/bin/busybox", "sleep", "99"
        )
        assert run.returncode == 0, run.stderr
        pid, _ = task_pids(socket)["nh-left"]
    finally:
        host.send_signal(signal.SIGTERM)
        host.communicate(timeout=60)
    assert alive(pid)
    smoke = start(config, state, plugin_env, "--exit-on-ready", "--ready-timeout=60s")
    _, err = smoke.communicate(timeout=120)
    assert smoke.returncode == 0, err[-3000:]
    assert not alive(pid)
    done = [e["done"] for e in events(err) if e["event"] == "teardown"]
    assert any(line.startswith("ended workload") for line in done), done
    assert workload_roots(str(state)) == [] and managed_pids(state) == []


def test_teardown_refuses_while_nodehost_runs_on_the_state_directory(
    node_folder, short_dir, plugin_env
) -> None:
    state = short_dir / "state"
    host = start(node_folder(), state, plugin_env)
    try:
        wait_for(lambda: pid_of(state, "kubelet"), what="the kubelet stand-in to start")
        refused = subprocess.run(
            [NODEHOST, "teardown", f"--state-dir={state}"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        host.send_signal(signal.SIGTERM)
        host.communicate(timeout=60)
    assert refused.returncode == 1
    assert f"another nodehost (pid {host.pid}) is running" in refused.stderr

"""Exec mode replaces nodehost with the program; NODEHOST_PROFILE leaves a profile behind."""

from __future__ import annotations

import json
import os
import pstats
import subprocess
import sys
import textwrap
from pathlib import Path

from hostrun import free_port, http_get, wait_for

EXEC_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from nodehost.component import ComponentPlan, FileSpec, ProcessSpec
    from nodehost.errors import NodehostError
    from nodehost.plan import PlannedComponent
    from nodehost.daemon import exec_single

    folder, allowed = sys.argv[1], sys.argv[2] == "yes"
    secret = os.path.join(folder, "conf", "secret")
    spec = ProcessSpec(
        argv=("sh", "-c", f'echo "pid=$$ mode=$(stat -c %a {secret}) text=$(cat {secret})"'),
        exec_allowed=allowed,
    )
    plan = ComponentPlan(run=spec, files=(FileSpec(secret, b"s3cret", 0o600),))
    print(f"python={os.getpid()}", flush=True)
    try:
        exec_single(PlannedComponent("kubelet", "kubelet", "test", (), plan))
    except NodehostError as error:
        print(error.render(), file=sys.stderr)
        sys.exit(error.exit_code)
    """
)


def test_exec_single_writes_the_files_and_becomes_the_program(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", EXEC_SCRIPT, str(tmp_path), "yes"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    python_line, program_line = result.stdout.splitlines()
    pid = python_line.removeprefix("python=")
    assert program_line == f"pid={pid} mode=600 text=s3cret"


def test_exec_single_refuses_a_component_that_does_not_allow_it(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", EXEC_SCRIPT, str(tmp_path), "no"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == "error: component kubelet cannot replace nodehost (exec mode)"


def run_planhost(tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "state_dir": str(tmp_path / "state"),
                "components": [{"name": "sleeper", "argv": ["sleep", "600"]}],
            }
        )
    )
    return subprocess.Popen(
        [sys.executable, "-m", "nodehost.testing.planhost", str(plan), "--exit-on-ready"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_profile_cpu_writes_a_pstats_file(tmp_path: Path) -> None:
    host = run_planhost(
        tmp_path, {"NODEHOST_PROFILE": "cpu", "NODEHOST_PROFILE_DIR": str(tmp_path)}
    )
    _, err = host.communicate(timeout=60)
    assert host.returncode == 0, err
    profile = tmp_path / f"nodehost-cpu-{host.pid}.prof"
    stats = pstats.Stats(str(profile))
    assert stats.total_calls > 0


def test_profile_web_serves_the_asyncio_tasks(tmp_path: Path) -> None:
    port = free_port()
    gate = tmp_path / "gate"
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "state_dir": str(tmp_path / "state"),
                "components": [
                    {"name": "gated", "argv": ["sleep", "600"], "ready": {"file": str(gate)}}
                ],
            }
        )
    )
    host = subprocess.Popen(
        [sys.executable, "-m", "nodehost.testing.planhost", str(plan), "--exit-on-ready"],
        env={**os.environ, "NODEHOST_PROFILE": "web", "NODEHOST_PROFILE_PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def tasks_page():
            try:
                return http_get(f"http://127.0.0.1:{port}/debug/pprof/tasks", timeout=2)
            except OSError:
                return None

        code, body = wait_for(tasks_page, what="the profiling page")
        assert code == 200
        assert "nodehost-gated" in body
        gate.touch()
        host.communicate(timeout=60)
        assert host.returncode == 0
    finally:
        host.kill()
        host.wait()

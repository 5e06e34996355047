"""``nodehost start`` running a node for real: the installed executable, stand-ins, systemd."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from clirun import WAIT, wait_for

from nodehost.testing import parts
from nodehost.testing.notify import NotifyReceiver
from nodehost.testing.ports import free_port


def standin_pids(within: Path) -> set[int]:
    """Every running stand-in process whose command line names a path in ``within``
    (other test runs on this machine have stand-ins of their own)."""
    pids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            standin = b"nodehost-standin" in cmdline or b"nodehost.testing.fake_" in cmdline
            if standin and str(within).encode() in cmdline:
                pids.add(int(entry))
    return pids


@pytest.fixture
def start_args(node_dir: Path, tmp_path: Path):
    executable = Path(sys.executable).parent / "nodehost"
    parts.require("nodehost-script")
    config = node_dir / "node-config.yaml"
    kubelet_port, proxy_port = free_port(), free_port()
    config.write_text(
        config.read_text().replace(
            'kubeletArguments:\n  fail-swap-on: ["false"]\n',
            f'kubeletArguments:\n  fail-swap-on: ["false"]\n  healthz-port: ["{kubelet_port}"]\n'
            f'proxyArguments:\n  healthz-port: ["{proxy_port}"]\n',
        )
    )

    def args(*extra: str, health: int | None = None) -> list[str]:
        health_address = f"127.0.0.1:{health}" if health else "none"
        return [
            str(executable),
            "start",
            f"--config={node_dir / 'node-config.yaml'}",
            "--components=kubelet,proxy",
            "--standins=always",
            f"--state-dir={tmp_path / 'state'}",
            f"--health-address={health_address}",
            "--log-format=json",
            *extra,
        ]

    return args


def test_exit_on_ready_runs_the_lifecycle_and_exits_zero(start_args, tmp_path: Path) -> None:
    before = standin_pids(tmp_path)
    done = subprocess.run(
        start_args("--exit-on-ready"), capture_output=True, text=True, timeout=WAIT
    )
    assert done.returncode == 0, done.stderr
    assert "node ready after" in done.stdout
    assert {"kubelet", "proxy"} <= {line.split()[0] for line in done.stdout.splitlines()[2:]}
    assert "STAND-IN" in done.stderr
    assert standin_pids(tmp_path) <= before


def test_crash_loop_exits_one_naming_the_component(start_args) -> None:
    env = {**os.environ, "NODEHOST_STANDIN_KUBELET_CRASH_AFTER": "0:3"}
    done = subprocess.run(
        start_args("--crash-loop-limit=2"), capture_output=True, text=True, env=env, timeout=WAIT
    )
    assert done.returncode == 1
    events = [json.loads(line) for line in done.stderr.splitlines()]  # JSON mode: every line
    final = events[-1]
    assert (final["level"], final["exit_code"]) == ("error", 1)
    assert final["event"].startswith("error:") and "kubelet" in final["event"]
    assert "last output of kubelet:" in final["lines"]  # the child's last lines, as JSON too
    assert "Traceback" not in done.stderr


def test_ready_timeout_fails_and_stops_everything(start_args, tmp_path: Path) -> None:
    before = standin_pids(tmp_path)
    env = {**os.environ, "NODEHOST_STANDIN_KUBE_PROXY_READY_DELAY": "60"}
    # 5s, not 1s: the stand-in must have started and printed before the timeout for its
    # output to be shown, and a Python start takes over a second on a loaded machine.
    done = subprocess.run(
        start_args("--exit-on-ready", "--ready-timeout=5s"),
        capture_output=True,
        text=True,
        env=env,
        timeout=WAIT,
    )
    assert done.returncode == 1
    assert "error: node not ready after 5s" in done.stderr
    assert "component proxy not ready: waiting for GET http://127.0.0.1:" in done.stderr
    assert "last output of proxy:" in done.stderr
    assert standin_pids(tmp_path) <= before


def test_systemd_sees_ready_then_stopping_and_sigterm_stops_cleanly(
    start_args, tmp_path: Path
) -> None:
    receiver = NotifyReceiver(str(tmp_path / "notify.sock"))
    health = free_port()
    env = {**os.environ, "NOTIFY_SOCKET": receiver.address}
    process = subprocess.Popen(
        start_args(health=health),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: "READY=1" in receiver.lines(), "READY=1")
        base = f"http://127.0.0.1:{health}"
        with urllib.request.urlopen(f"{base}/readyz?verbose", timeout=5) as response:
            assert response.status == 200
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as response:
            assert 'component="kubelet"' in response.read().decode()
        with urllib.request.urlopen(f"{base}/status", timeout=5) as response:
            status = json.loads(response.read())
        assert status["ready"] is True
        exe = start_args()[0]
        table = subprocess.run(
            [exe, "status", f"--address=127.0.0.1:{health}"], capture_output=True, text=True
        )
        assert table.returncode == 0 and "kubelet" in table.stdout
        children = (
            {c["pid"] for c in status["components"].values()}
            if isinstance(status["components"], dict)
            else {c["pid"] for c in status["components"]}
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait(WAIT) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
        receiver.close()
    assert "STOPPING=1" in receiver.lines()
    assert not any(os.path.exists(f"/proc/{pid}") for pid in children if pid)


def test_kill_9_of_nodehost_leaves_no_component_running(start_args, tmp_path: Path) -> None:
    receiver = NotifyReceiver(str(tmp_path / "notify.sock"))
    env = {**os.environ, "NOTIFY_SOCKET": receiver.address}
    before = standin_pids(tmp_path)
    process = subprocess.Popen(
        start_args(), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: "READY=1" in receiver.lines(), "READY=1")
        started = standin_pids(tmp_path) - before
        assert started
        process.kill()
        process.wait(WAIT)
        wait_for(
            lambda: not (standin_pids(tmp_path) & started), "the stand-ins to die with nodehost"
        )
    finally:
        if process.poll() is None:
            process.kill()
        receiver.close()


def _run_into_journal(argv: list[str], path: Path, journal: bool = True, env=None) -> list[str]:
    """Run ``argv`` with stderr in ``path``, announced as journald's stream when ``journal``."""
    with open(path, "w") as stderr:
        status = os.fstat(stderr.fileno())
        environment = {**(env or os.environ)}
        environment["JOURNAL_STREAM"] = (
            f"{status.st_dev}:{status.st_ino}" if journal else f"{status.st_dev}:1"
        )
        subprocess.run(
            argv, stdout=subprocess.DEVNULL, stderr=stderr, env=environment, timeout=WAIT
        )
    return path.read_text().splitlines()


def test_under_journald_every_line_carries_its_priority(start_args, node_dir, tmp_path) -> None:
    config = node_dir / "node-config.yaml"
    config.write_text(config.read_text() + "unknownTopLevelKey: 1\n")
    lines = _run_into_journal(start_args("--exit-on-ready"), tmp_path / "journal")
    priorities = {"<4>": "warning", "<6>": "info", "<3>": "error", "<7>": "debug"}
    assert lines and all(line[:3] in priorities for line in lines), lines
    warning = next(line for line in lines if "unknownTopLevelKey" in line)
    assert warning.startswith("<4>")
    for line in lines:
        assert json.loads(line[3:])["level"] == priorities[line[:3]]  # JSON after the prefix

    env = {**os.environ, "NODEHOST_STANDIN_KUBELET_CRASH_AFTER": "0:3"}
    argv = [a for a in start_args("--crash-loop-limit=1") if a != "--log-format=json"]
    console = _run_into_journal([*argv, "--log-format=console"], tmp_path / "console", env=env)
    assert all(line.startswith(("<3>", "<4>", "<6>")) for line in console), console
    assert any(line.startswith("<3>error: component kubelet failed") for line in console)


def test_a_stream_that_is_not_journald_gets_no_prefix(start_args, tmp_path) -> None:
    lines = _run_into_journal(start_args("--exit-on-ready"), tmp_path / "file", journal=False)
    assert lines and all(line.startswith("{") for line in lines)


def test_a_foreign_listener_on_the_kubelets_healthz_port_is_not_ready(
    start_args, node_dir: Path
) -> None:
    """Another process answers on the kubelet's healthz port: the stand-in cannot bind it,
    nodehost never calls the kubelet ready, and the failure names the port and its holder."""
    import re
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    class Ok(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    config = (node_dir / "node-config.yaml").read_text()
    port = int(re.search(r'healthz-port: \["(\d+)"\]', config).group(1))
    server = ThreadingHTTPServer(("127.0.0.1", port), Ok)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = subprocess.run(
            start_args(
                "--exit-on-ready",
                "--crash-loop-limit=2",
                f"--ignore-preflight-errors=kubelet.port-{port}",
            ),
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 1, done.stdout
    assert "node ready" not in done.stdout
    holder = f"127.0.0.1:{port} is held by pid {os.getpid()} ("
    assert f"kubelet's readiness probe: {holder}" in done.stderr
    assert "Traceback" not in done.stderr

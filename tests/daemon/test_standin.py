"""The generic stand-in (nodehost.testing.standin) behaves as its docstring promises."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from hostrun import WAIT, alive, free_port, http_get, standin, wait_for

from nodehost.testing.standin import Behaviour, BehaviourError


def start(program: str, port: int | None, **env: str) -> subprocess.Popen[str]:
    return spawn(standin(program, port), **env)


def spawn(argv: list[str], **env: str) -> subprocess.Popen[str]:
    """``argv`` with output piped, in this environment without its stand-in behaviours but
    ``env``."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NODEHOST_STANDIN_")}
    environment.update(env)
    return subprocess.Popen(
        argv,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_healthz(port: int, status: int = 200) -> str:
    def answered() -> str | None:
        try:
            code, body = http_get(f"http://127.0.0.1:{port}/healthz", timeout=1)
        except OSError:
            return None
        return body if code == status else None

    return wait_for(answered, what=f"healthz {status} on {port}")


def test_serves_healthz_and_exits_0_on_sigterm() -> None:
    port = free_port()
    child = start("kubelet", port)
    assert wait_healthz(port) == "ok"
    child.send_signal(signal.SIGTERM)
    out, _ = child.communicate(timeout=WAIT)
    assert child.returncode == 0
    assert f"kubelet: started pid={child.pid}" in out
    assert "kubelet: stopping on SIGTERM" in out


def test_other_paths_are_404() -> None:
    port = free_port()
    child = start("proxy", port)
    try:
        wait_healthz(port)
        assert http_get(f"http://127.0.0.1:{port}/metrics")[0] == 404
    finally:
        child.kill()
        child.wait()


def test_ready_delay_answers_503_first() -> None:
    port = free_port()
    child = start("kubelet", port, NODEHOST_STANDIN_READY_DELAY="60")
    try:
        assert wait_healthz(port, 503).startswith("not ready")
    finally:
        child.kill()
        child.wait()


def test_crash_after_exits_with_the_given_code() -> None:
    child = start("kubelet", None, NODEHOST_STANDIN_CRASH_AFTER="0.1:7")
    _, err = child.communicate(timeout=WAIT)
    assert child.returncode == 7
    assert "kubelet: crashing with exit code 7" in err


def test_program_specific_variable_wins_over_the_generic_one() -> None:
    child = start(
        "kube-proxy",
        None,
        NODEHOST_STANDIN_CRASH_AFTER="0:3",
        NODEHOST_STANDIN_KUBE_PROXY_CRASH_AFTER="0:4",
    )
    child.communicate(timeout=WAIT)
    assert child.returncode == 4


def test_crash_times_crashes_only_the_first_starts(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    env = {"NODEHOST_STANDIN_CRASH_TIMES": "1", "NODEHOST_STANDIN_STARTS_FILE": str(starts)}
    first = start("kubelet", None, **env)
    first.communicate(timeout=WAIT)
    second = start("kubelet", None, **env)
    try:
        wait_for(lambda: len(starts.read_text().split()) == 2, what="second start recorded")
        time.sleep(0.2)
        assert second.poll() is None
    finally:
        second.kill()
        second.wait()
    assert first.returncode == 1


def test_ignore_sigterm_survives_sigterm_but_not_sigkill() -> None:
    port = free_port()
    child = start("kubelet", port, NODEHOST_STANDIN_IGNORE_SIGTERM="1")
    wait_healthz(port)
    child.send_signal(signal.SIGTERM)
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(0.3)
    child.kill()
    assert child.wait(WAIT) == -signal.SIGKILL


def test_hang_on_stop_waits_then_exits_0() -> None:
    port = free_port()
    child = start("kubelet", port, NODEHOST_STANDIN_HANG_ON_STOP="0.3")
    wait_healthz(port)
    child.send_signal(signal.SIGTERM)
    out, _ = child.communicate(timeout=WAIT)
    assert child.returncode == 0
    assert "kubelet: hanging on stop" in out


@pytest.mark.parametrize("mode", ["1", "setsid"])
def test_fork_grandchild_outlives_the_standin(tmp_path: Path, mode: str) -> None:
    pid_file = tmp_path / "grandchild.pid"
    port = free_port()
    child = start(
        "kubelet",
        port,
        NODEHOST_STANDIN_FORK_GRANDCHILD=mode,
        NODEHOST_STANDIN_GRANDCHILD_PID_FILE=str(pid_file),
    )
    wait_healthz(port)
    grandchild = int(pid_file.read_text())
    try:
        same_group = os.getpgid(grandchild) == os.getpgid(child.pid)
        assert same_group == (mode == "1")
        os.kill(grandchild, signal.SIGTERM)
        child.send_signal(signal.SIGTERM)
        assert child.wait(WAIT) == 0
        time.sleep(0.1)
        assert alive(grandchild)
    finally:
        os.kill(grandchild, signal.SIGKILL)
        child.kill()
        child.wait()


def test_malformed_behaviour_exits_2_naming_the_variable() -> None:
    child = start("kubelet", None, NODEHOST_STANDIN_READY_DELAY="soon")
    _, err = child.communicate(timeout=WAIT)
    assert child.returncode == 2
    assert "NODEHOST_STANDIN_READY_DELAY" in err
    assert "Traceback" not in err


def test_taken_healthz_port_exits_1() -> None:
    port = free_port()
    first = start("kubelet", port)
    try:
        wait_healthz(port)
        second = start("kubelet", port)
        _, err = second.communicate(timeout=WAIT)
        assert second.returncode == 1
        assert f"cannot listen on 127.0.0.1:{port}" in err
    finally:
        first.kill()
        first.wait()


def test_behaviour_crash_times_needs_a_starts_file() -> None:
    with pytest.raises(BehaviourError, match="STARTS_FILE"):
        Behaviour.from_environ("kubelet", {"NODEHOST_STANDIN_CRASH_TIMES": "2"})


def serving_address(child: subprocess.Popen[str], program: str) -> str:
    """The ``HOST:PORT`` of the stand-in's ``<program>: serving /healthz on HOST:PORT`` line
    (read up to it); fails with its stderr if it exits first."""
    assert child.stdout is not None
    prefix = f"{program}: serving /healthz on "
    for line in child.stdout:
        if line.startswith(prefix):
            return line[len(prefix) :].strip()
    child.wait()
    raise AssertionError(f"{program} exited {child.returncode}: {child.stderr.read()}")


def test_healthz_port_serves_on_a_port_the_kernel_picks_keeping_the_host() -> None:
    child = start("kubelet", 10248, NODEHOST_STANDIN_HEALTHZ_PORT="0")
    try:
        host, _, port = serving_address(child, "kubelet").rpartition(":")
        assert host == "127.0.0.1"
        assert int(port) != 10248
        assert wait_healthz(int(port)) == "ok"
    finally:
        child.kill()
        child.wait()


def test_behaviour_healthz_port_must_be_a_port() -> None:
    with pytest.raises(BehaviourError, match="NODEHOST_STANDIN_HEALTHZ_PORT"):
        Behaviour.from_environ("kubelet", {"NODEHOST_STANDIN_HEALTHZ_PORT": "65536"})
    assert Behaviour.from_environ("kubelet", {}).healthz_port is None


@pytest.mark.parametrize(
    ("program", "flags", "url_host"),
    [
        ("kubelet", ["--healthz-bind-address=::1", "--healthz-port=10248"], "[::1]"),
        ("kubelet", ["--healthz-bind-address=::", "--healthz-port=10248"], "127.0.0.1"),
        ("kube-proxy", ["--healthz-bind-address=[::]:10256"], "[::1]"),
        ("kube-proxy", ["--healthz-bind-address=[::1]:10256"], "[::1]"),
    ],
)
def test_the_program_stand_ins_bind_ipv6_as_the_real_ones_do(
    program: str, flags: list[str], url_host: str
) -> None:
    """``::`` is both families (dual stack, as Go binds it), ``::1`` IPv6 loopback.

    The port is the kernel's pick (``HEALTHZ_PORT=0``): a port picked by the
    test beforehand may be taken by another test's listener before the
    stand-in binds it, or be free on IPv6 but not IPv4, which the dual-stack
    bind needs too (the stand-in then exits 1).
    """
    import shutil
    import sys

    script = Path(sys.executable).parent / f"nodehost-standin-{program}"
    if shutil.which(str(script)) is None:
        pytest.skip(f"{script} is not installed")
    child = spawn([str(script), *flags], NODEHOST_STANDIN_HEALTHZ_PORT="0")
    try:
        port = int(serving_address(child, program).rpartition(":")[2])

        def answered() -> str | None:
            try:
                code, body = http_get(f"http://{url_host}:{port}/healthz", timeout=1)
            except OSError:
                return None if child.poll() is None else f"exited {child.returncode}"
            return body if code == 200 else None

        assert wait_for(answered, what=f"{program} healthz on {port}") == "ok"
    finally:
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=WAIT)
    assert "Address family" not in err, err

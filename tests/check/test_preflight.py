"""The preflight: ``start`` runs the checks that can make it fail before it starts anything."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from checkrun import BIN

pytestmark = pytest.mark.needs("nodehost-script")


@pytest.fixture
def start(check_node, tmp_path: Path):
    """``start(*args, env=None)``: ``nodehost start`` of the kubelet stand-in until ready."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        argv = [
            str(BIN / "nodehost"), "start", f"--config={check_node.config_path}",
            "--components=kubelet", "--standins=always", f"--state-dir={tmp_path / 'state'}",
            "--health-address=none", "--log-format=json", "--exit-on-ready", *args,
        ]  # fmt: skip
        return subprocess.run(
            argv, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=60
        )

    return run


def _events(stderr: str, event: str) -> list[dict[str, str]]:
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == event]


def test_an_error_stops_the_start_before_anything_starts(start, check_node) -> None:
    check_node.update({"nodeName": "Node_1"})
    done = start()
    assert done.returncode == 1
    assert "preflight failed" in done.stderr
    assert "kubelet.node-name  error" in done.stderr
    assert "--ignore-preflight-errors=NAME[,NAME...] (or all)" in done.stderr
    assert not _events(done.stderr, "component started")
    assert "node ready" not in done.stdout


def test_ignoring_the_error_by_name_lets_the_start_through_with_a_warning(
    start, check_node
) -> None:
    check_node.update({"nodeName": "Node_1"})
    done = start("--ignore-preflight-errors=kubelet.port-1,kubelet.node-name")
    assert done.returncode == 0, done.stderr
    [warning] = [e for e in _events(done.stderr, "preflight") if e["check"] == "kubelet.node-name"]
    assert warning["level"] == "warning"
    assert warning["fix"].startswith("ignored (--ignore-preflight-errors); set nodeName")
    [unknown] = _events(
        done.stderr, "--ignore-preflight-errors: no preflight check of that name ran"
    )
    assert unknown["names"] == "kubelet.port-1"


def test_all_in_the_environment_ignores_every_error(start, check_node) -> None:
    check_node.update({"nodeName": "Node_1"})
    done = start(env={"NODEHOST_IGNORE_PREFLIGHT_ERRORS": "all"})
    assert done.returncode == 0, done.stderr


def test_a_warning_is_logged_once(start, check_node, tmp_path) -> None:
    stub = tmp_path / "resolv.conf"
    stub.write_text("nameserver 127.0.0.53\n")
    check_node.update({"kubeletArguments": {"resolv-conf": [str(stub)]}})
    done = start()
    assert done.returncode == 0, done.stderr
    warnings = [e for e in _events(done.stderr, "preflight") if e["check"] == "kubelet.resolv-conf"]
    assert len(warnings) == 1 and "127.0.0.53" in warnings[0]["found"]


@pytest.mark.needs("containerd")  # the runtime's checks ask containerd's plan
def test_the_preflight_runs_no_program_and_calls_no_server(check_node, tmp_path, monkeypatch):
    """The expensive checks (versions, link probes, the API server) are ``nodehost check``'s."""
    import asyncio

    from nodehost.check.run import host_checks, plan_for_checks
    from nodehost.options import StartOptions
    from nodehost.resolve import resolve_config, selection_for
    from nodehost.testing.nodefolder import installed_inventory

    inventory = installed_inventory()
    options = StartOptions(
        config=str(check_node.config_path),
        components="kubelet,proxy,runtime",
        state_dir=str(tmp_path / "state"),
        standins="missing",
    )
    resolved = resolve_config(options, inventory, selection_for(options, inventory))
    plan, _ = plan_for_checks(inventory, resolved, options, {}, "missing")
    everything = {
        check.name for check in host_checks(inventory, resolved, options, plan, preflight=False)
    }

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"the preflight ran {args[:1]}")

    monkeypatch.setattr(subprocess, "run", forbidden)
    monkeypatch.setattr(subprocess, "Popen", forbidden)
    monkeypatch.setattr(asyncio, "run", forbidden)
    preflight = {
        check.name for check in host_checks(inventory, resolved, options, plan, preflight=True)
    }
    expensive = {"kubelet.program", "runtime.containerd", "proxy.version-skew"}
    expensive |= {"bootstrap.api-server", "bootstrap.certificates", "bootstrap.clock"}
    assert expensive <= everything
    assert not expensive & preflight
    assert {"kubelet.node-name", "kubelet.resolv-conf", "runtime.runc"} <= preflight


def test_a_dry_run_runs_no_preflight(start, check_node) -> None:
    check_node.update({"nodeName": "Node_1"})
    done = start("--dry-run")
    assert done.returncode == 0, done.stderr
    assert "preflight" not in done.stderr

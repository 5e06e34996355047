"""SIGHUP (``systemctl reload``) makes a running ``nodehost start --config FILE`` apply the file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clirun import WAIT, wait_for

from nodehost.testing.notify import NotifyReceiver
from nodehost.testing.ports import free_port


@dataclass
class Running:
    """A ``nodehost start --config`` process, its health address, config file and log."""

    process: subprocess.Popen[bytes]
    base: str
    config: Path
    log: Path
    notify: NotifyReceiver

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.base}/status", timeout=5) as response:
            return json.loads(response.read())

    def pid(self, name: str) -> int | None:
        return next(c["pid"] for c in self.status()["components"] if c["name"] == name)

    def ready(self) -> bool:
        try:
            return bool(self.status()["ready"])
        except OSError:
            return False

    def reload(self, text: str | None = None) -> None:
        """Write ``text`` into the config file (if given), then SIGHUP nodehost."""
        if text is not None:
            self.config.write_text(text)
        self.process.send_signal(signal.SIGHUP)

    def last_apply(self, generation: int) -> dict[str, Any]:
        def settled() -> dict[str, Any] | None:
            last = self.status()["configuration"]["last_apply"]
            return last if last and last["generation"] == generation else None

        return wait_for(settled, f"an apply ending at generation {generation}")

    def logged(self, event: str) -> list[dict[str, Any]]:
        lines = self.log.read_text().splitlines()
        return [e for e in map(json.loads, lines) if e.get("event") == event]


@pytest.fixture
def running(node_dir: Path, tmp_path: Path) -> Iterator[Running]:
    executable = Path(sys.executable).parent / "nodehost"
    if not executable.exists():
        pytest.skip("the nodehost console script is not installed next to this interpreter")
    config = node_dir / "node-config.yaml"
    config.write_text(
        config.read_text()
        + f'  healthz-port: ["{free_port()}"]\n'
        + f'proxyArguments:\n  healthz-port: ["{free_port()}"]\n'
    )
    port = free_port()
    notify = NotifyReceiver(str(tmp_path / "notify.sock"))
    log = tmp_path / "nodehost.log"
    with open(log, "wb") as stderr:
        process = subprocess.Popen(
            [
                str(executable),
                "start",
                f"--config={config}",
                "--components=kubelet,proxy",
                "--standins=always",
                f"--state-dir={tmp_path / 'state'}",
                f"--health-address=127.0.0.1:{port}",
                "--log-format=json",
                "--config-rollback-after=2m",  # a slow machine's kubelet is not rolled back
            ],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "NOTIFY_SOCKET": notify.address},
        )
    node = Running(process, f"http://127.0.0.1:{port}", config, log, notify)
    try:
        wait_for(lambda: node.ready() or process.poll() is not None, "the node to be ready")
        assert process.poll() is None, log.read_text()[-4000:]
        yield node
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.wait(WAIT)
        notify.close()


def test_sighup_applies_the_edited_file_to_the_kubelet_alone(running: Running) -> None:
    kubelet, proxy = running.pid("kubelet"), running.pid("proxy")
    before = running.config.read_text()
    running.reload(before.replace('["false"]', '["false"]\n  max-pods: ["42"]'))
    last = running.last_apply(generation=2)
    assert (last["result"], last["origin"], last["restarted"]) == ("applied", "SIGHUP", ["kubelet"])
    wait_for(running.ready, "the node to be ready again")
    assert running.pid("kubelet") not in (None, kubelet)
    assert running.pid("proxy") == proxy
    assert (running.config.parent / "node-config.yaml.prev").read_text() == before


def test_sighup_with_an_invalid_file_rejects_it_and_runs_on(running: Running) -> None:
    kubelet = running.pid("kubelet")
    bad = running.config.read_text().replace("nodeIP: 127.0.0.1", "nodeIP: not-an-ip")
    running.reload(bad)
    last = running.last_apply(generation=1)
    assert last["result"] == "rejected"
    assert last["problems"] == ['nodeIP: Invalid value: "not-an-ip": must be a valid IP']
    assert running.ready() and running.pid("kubelet") == kubelet
    assert running.config.read_text() == bad  # the operator's file is left as written
    [logged] = running.logged("config rejected")
    assert logged["problems"] == last["problems"] and logged["origin"] == "SIGHUP"


def test_sighup_with_the_file_as_it_runs_restarts_nothing(running: Running) -> None:
    kubelet = running.pid("kubelet")
    running.reload()
    wait_for(lambda: running.logged("config unchanged"), "the unchanged apply")
    assert running.status()["configuration"]["last_apply"] is None
    assert running.pid("kubelet") == kubelet


def test_a_reload_tells_systemd_reloading_then_ready(running: Running) -> None:
    wait_for(lambda: "READY=1" in running.notify.lines(), "READY=1")
    before = len(running.notify.lines())
    running.reload(running.config.read_text().replace('["false"]', '["false"]\n  max-pods: ["9"]'))
    running.last_apply(generation=2)
    # The apply is recorded before READY=1 is sent: wait for the message itself.
    wait_for(lambda: "READY=1" in running.notify.lines()[before:], "READY=1 after the reload")
    after = running.notify.lines()[before:]
    assert "RELOADING=1" in after
    assert any(line.startswith("MONOTONIC_USEC=") for line in after)
    assert after.index("RELOADING=1") < len(after) - 1 - after[::-1].index("READY=1")

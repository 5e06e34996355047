"""End to end: ``nodehost start`` with the bridge provider and the kubelet stand-in.

The kubelet starts after the sdn component, and the sdn component is ready
once the CNI configuration is written, so the configuration must exist before
the kubelet is started; stopping leaves it in place, a teardown removes it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from nodehost.testing.ports import free_port


def events(stderr: str) -> list[dict]:
    """The JSON log events among the lines of ``stderr``."""
    found = []
    for line in stderr.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and "event" in event:
            found.append(event)
    return found


def node_with_kubelet_port(node) -> Path:
    config = node.use_bridge()
    text = config.read_text().replace(
        'fail-swap-on: ["false"]', f'fail-swap-on: ["false"]\n  healthz-port: ["{free_port()}"]'
    )
    config.write_text(text)
    return config


def test_kubelet_starts_only_after_the_network_configuration_is_written(
    needs_cni, nodehost_exe, node
) -> None:
    config = node_with_kubelet_port(node)
    argv = [str(Path(sys.executable).parent / "nodehost"), "start", "--config", str(config),
            "--components=sdn,kubelet", "--standins=always", "--state-dir", str(node.state_dir),
            "--log-format", "json", "--health-address", "none"]  # fmt: skip
    host = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    assert host.stderr is not None
    seen = []
    for line in host.stderr:  # until the node is ready
        seen.append(line)
        if '"event": "node ready"' in line:
            break
    host.send_signal(signal.SIGTERM)
    _, rest = host.communicate(timeout=60)
    assert host.returncode == 0, "".join(seen) + rest
    conflist = node.conf_dir / "10-nodehost-bridge.conflist"
    assert conflist.exists(), "stop must leave the CNI configuration in place"
    written = os.stat(conflist).st_mtime
    (started,) = [
        e for e in events("".join(seen))
        if e["event"] == "component started" and e.get("component") == "kubelet"
    ]  # fmt: skip
    assert datetime.fromisoformat(started["timestamp"]).timestamp() >= written
    assert json.loads(conflist.read_text())["plugins"][0]["bridge"] == node.bridge

    ended = nodehost_exe("teardown", "--state-dir", str(node.state_dir))
    assert ended.code == 0, ended.err
    assert f"removed {conflist}" in ended.out
    assert not conflist.exists()


def test_a_network_that_cannot_work_starts_nothing(nodehost_exe, node, tmp_path: Path) -> None:
    config = node_with_kubelet_port(node)
    config.write_text(config.read_text() + f"  cniBinDirs: [{tmp_path / 'no-plugins'}]\n")
    result = nodehost_exe(
        "start",
        "--config", str(config),
        "--components=sdn,kubelet",
        "--standins=always",
        "--state-dir", str(node.state_dir),
        "--log-format", "json",
        "--health-address", "none",
    )  # fmt: skip
    assert result.code == 1
    assert "CNI plugins bridge, portmap, host-local, loopback not found in" in result.err
    assert not [e for e in events(result.err) if e["event"] == "component started"]
    assert not node.conf_dir.exists()

"""A third-party plugin's component graph through the installed CLI: order, parallel start,
reverse stop -- observed in nodehost's own log events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodehost.testing import parts

GRAPH_DISTS = Path(__file__).resolve().parent.parent / "data" / "graph_dists"
NAMES = ("g-root", "g-left", "g-right", "g-join", "g-solo")


@pytest.fixture
def events(node_dir: Path, tmp_path: Path) -> list[tuple[str, str]]:
    """(event, component) of every lifecycle log line of one --exit-on-ready run, in order."""
    executable = Path(sys.executable).parent / "nodehost"
    parts.require("nodehost-script")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(GRAPH_DISTS), os.environ.get("PYTHONPATH")])
        ),
        # root and the two branches are slow to get ready, so overlaps are observable
        "NODEHOST_STANDIN_G_ROOT_READY_DELAY": "0.4",
        "NODEHOST_STANDIN_G_LEFT_READY_DELAY": "0.3",
        "NODEHOST_STANDIN_G_RIGHT_READY_DELAY": "0.3",
    }
    done = subprocess.run(
        [
            str(executable),
            "start",
            f"--config={node_dir / 'node-config.yaml'}",
            f"--components={','.join(NAMES)}",
            "--exit-on-ready",
            "--health-address=none",
            f"--state-dir={tmp_path / 'state'}",
            "--log-format=json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    found = []
    for line in done.stderr.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("event") in ("component started", "component ready", "component stopped"):
                found.append((record["event"].split()[1], record["component"]))
    return found


def position(events: list[tuple[str, str]], event: str, name: str) -> int:
    return events.index((event, name))


def test_a_component_starts_only_after_what_it_waits_for_is_ready(events) -> None:
    assert position(events, "started", "g-left") > position(events, "ready", "g-root")
    assert position(events, "started", "g-right") > position(events, "ready", "g-root")
    assert position(events, "started", "g-join") > position(events, "ready", "g-left")
    assert position(events, "started", "g-join") > position(events, "ready", "g-right")


def test_independent_components_start_together(events) -> None:
    assert position(events, "started", "g-solo") < position(events, "ready", "g-root")
    assert position(events, "started", "g-left") < position(events, "ready", "g-right")
    assert position(events, "started", "g-right") < position(events, "ready", "g-left")


def test_stop_runs_in_reverse_order(events) -> None:
    assert position(events, "stopped", "g-join") < position(events, "stopped", "g-left")
    assert position(events, "stopped", "g-join") < position(events, "stopped", "g-right")
    assert position(events, "stopped", "g-left") < position(events, "stopped", "g-root")
    assert position(events, "stopped", "g-right") < position(events, "stopped", "g-root")
    assert {name for event, name in events if event == "stopped"} == set(NAMES)

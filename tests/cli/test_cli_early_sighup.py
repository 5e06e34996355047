"""A SIGHUP while ``start`` is still loading is remembered, not fatal (docs/operating/running.rst:
taking a new configuration).  strace delivers it at a chosen step: when click is opened, before any
of ``start``'s own code runs."""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
from pathlib import Path

import click
import pytest

from nodehost.testing.parts import find_program

pytestmark = pytest.mark.needs("strace")


def test_a_sighup_while_click_loads_does_not_end_start(node_dir: Path, tmp_path: Path) -> None:
    strace = find_program("strace")
    assert strace is not None
    compiled = importlib.util.cache_from_source(click.__file__)
    assert Path(compiled).exists()  # what the import opens
    nodehost = str(Path(sys.executable).parent / "nodehost")
    command = [
        strace, "-qq", "-o", "/dev/null", "-P", compiled, "-e", "trace=openat",
        "-e", "inject=openat:signal=SIGHUP:when=1",
        nodehost, "start", "--config", str(node_dir / "node-config.yaml"), "--dry-run",
        f"--state-dir={tmp_path / 'state'}", "--health-address=none", "--standins=always",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode not in (-signal.SIGHUP, 128 + signal.SIGHUP), done.stderr
    assert done.returncode == 0, done.stderr

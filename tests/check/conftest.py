"""Fixtures for the host checks: a node folder on free ports, and ``nodehost check`` runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from checkrun import BIN, CheckRun

from nodehost.testing import parts
from nodehost.testing.nodefolder import NodeFolder
from nodehost.testing.ports import free_port


@pytest.fixture
def check_node(node_folder: NodeFolder) -> NodeFolder:
    """The test node folder with the kubelet's ports moved to free ones (other runs on this
    machine may hold the defaults) and swap allowed."""
    serving, healthz, proxy = free_port(), free_port(), free_port()
    node_folder.update(
        {
            "servingInfo": {"bindAddress": f"127.0.0.1:{serving}"},
            "kubeletArguments": {"fail-swap-on": ["false"], "healthz-port": [str(healthz)]},
            "proxyArguments": {"healthz-port": [str(proxy)]},
        }
    )
    return node_folder


@pytest.fixture
def run_check(tmp_path: Path) -> Callable[..., CheckRun]:
    """``run_check(node, *args, prefix=(), env=None, command="check")``: the installed
    ``nodehost COMMAND --config NODE ... ARGS --json`` as a subprocess; its JSON read back."""
    parts.require("nodehost-script")

    def run(
        node: NodeFolder,
        *args: str,
        prefix: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> CheckRun:
        argv = [
            *prefix,
            str(BIN / "nodehost"),
            "check",
            f"--config={node.config_path}",
            f"--state-dir={tmp_path / 'state'}",
            "--json",
            *args,
        ]
        environment = {**os.environ, **(env or {})}
        done = subprocess.run(argv, capture_output=True, text=True, env=environment, timeout=120)
        try:
            document = json.loads(done.stdout)
        except ValueError:
            raise AssertionError(f"not JSON: {done.stdout!r} {done.stderr}") from None
        return CheckRun(done.returncode, document, done.stderr)

    return run

"""Fixtures for the host checks: a node folder on free ports, and ``nodehost check`` runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
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
        state_dir: Path | None = None,
    ) -> CheckRun:
        argv = [
            *prefix,
            str(BIN / "nodehost"),
            "check",
            f"--config={node.config_path}",
            f"--state-dir={state_dir or tmp_path / 'state'}",
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


@pytest.fixture
def listener() -> Iterator[Callable[..., tuple[int, int]]]:
    """``listener(kind="tcp")``: another process holding a kernel-picked 127.0.0.1 port
    (listening for TCP, or bound for UDP): ``(pid, port)``; ended after the test."""
    held: list[subprocess.Popen[str]] = []

    def hold(kind: str = "tcp") -> tuple[int, int]:
        kind_flag = "SOCK_DGRAM" if kind == "udp" else "SOCK_STREAM"
        listen = "" if kind == "udp" else "s.listen(); "
        code = (
            f"import socket, sys; s = socket.socket(socket.AF_INET, socket.{kind_flag}); "
            f"s.bind(('127.0.0.1', 0)); {listen}print(s.getsockname()[1], flush=True); "
            "sys.stdin.read()"
        )
        process = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        held.append(process)
        assert process.stdout is not None
        return process.pid, int(process.stdout.readline())

    yield hold
    for process in held:
        process.kill()
        process.wait()


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs, filled up: a state directory with no room (needs root to mount)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; a full file system cannot be made otherwise")
    mount = tmp_path / "full"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True)
    try:
        try:
            with open(mount / "fill", "wb") as file:
                while True:
                    file.write(b"\0" * 4096)
                    file.flush()
        except OSError:  # ENOSPC: full, as wanted
            pass
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)

"""docs/getting-started/first-node.rst, run as a newcomer would: every ``$`` command of
the page, in order, from an empty folder to a node started, asked and stopped.

Only what a shared test machine needs is added: the ports the page fixes or leaves
at their defaults are moved to free ones (the page says how).
"""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from docsbuild import DOCS

from nodehost.testing.noderun import nodehost_executable
from nodehost.testing.parts import find_program
from nodehost.testing.ports import free_port
from nodehost.testing.wait import wait_for

PAGE = DOCS / "getting-started" / "first-node.rst"
EXAMPLE_PORT = "37145"
EXAMPLE_ADDRESS = f"https://127.0.0.1:{EXAMPLE_PORT}"


def page_commands() -> list[list[str]]:
    """Every ``$ ...`` line of the page (with its ``\\`` continuations), split as a shell would."""
    commands: list[str] = []
    pending: str | None = None
    for line in PAGE.read_text().splitlines():
        text = line.strip()
        if pending is None and not text.startswith("$ "):
            continue
        body = text[2:] if pending is None else f"{pending} {text}"
        pending = body.removesuffix("\\").strip() if body.endswith("\\") else None
        if pending is None:
            commands.append(body)
    return [shlex.split(command) for command in commands]


class Walkthrough:
    """Runs the page's commands in one folder, with real programs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = str(free_port())
        self.address = f"https://127.0.0.1:{self.port}"
        kubectl = find_program("kubectl") or str(Path(sys.executable).parent / "kubectl")
        self.programs = {"nodehost": nodehost_executable(), "python": sys.executable}
        self.programs["kubectl"] = kubectl
        self.started: list[subprocess.Popen[str]] = []

    def argv(self, words: list[str], *extra: str) -> list[str]:
        words = [w.replace("$PWD", str(self.folder)) for w in words]
        words = [w.replace(EXAMPLE_ADDRESS, self.address) for w in words]
        words = [self.port if w == EXAMPLE_PORT else w for w in words]  # --port 37145
        return [self.programs.get(words[0], words[0]), *words[1:], *extra]

    def run(self, words: list[str], *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(words, *extra),
            cwd=self.folder,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    def spawn(self, words: list[str], *extra: str) -> tuple[subprocess.Popen[str], Path]:
        """Start a command that runs until stopped, its output going to a file (never a
        pipe nobody reads); the fixture ends what is left."""
        log = self.folder / f"{len(self.started)}.log"
        with log.open("w") as output:
            process = subprocess.Popen(
                self.argv(words, *extra),
                cwd=self.folder,
                stdout=output,
                stderr=subprocess.STDOUT,
                text=True,
            )
        self.started.append(process)
        return process, log


def first_line(log: Path) -> str:
    """The first complete line of ``log``, or "" while there is none."""
    text = log.read_text()
    return text.partition("\n")[0] if "\n" in text else ""


def move_default_ports(config: Path) -> None:
    """What the page tells a machine whose default ports are taken to do."""
    text = config.read_text().replace("0.0.0.0:10250", f"127.0.0.1:{free_port()}")
    text += f'kubeletArguments:\n  healthz-port: ["{free_port()}"]\n'
    text += f'proxyArguments:\n  healthz-bind-address: ["127.0.0.1:{free_port()}"]\n'
    config.write_text(text)


@pytest.fixture
def walkthrough(tmp_path: Path) -> Iterator[Walkthrough]:
    walk = Walkthrough(tmp_path)
    yield walk
    for process in reversed(walk.started):
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=60)


@pytest.mark.needs("root", "containerd", "kubectl")
def test_the_first_node_page_runs_as_written(walkthrough: Walkthrough) -> None:
    ca, api, create, validate, dry_run, start, status, nodes, teardown = page_commands()
    assert [ca[:3], api[:3], create[:3], validate[:3]] == [
        ["nodehost", "ca", "create"],
        ["python", "-m", "nodehost.testing.apiserver"],
        ["nodehost", "config", "create"],
        ["nodehost", "config", "validate"],
    ]
    assert "--dry-run" in dry_run
    assert [dry_run[:2], start[:2], status[:2], nodes[0], teardown[:2]] == [
        ["nodehost", "start"],
        ["nodehost", "start"],
        ["nodehost", "status"],
        "kubectl",
        ["nodehost", "teardown"],
    ]

    assert walkthrough.run(ca).returncode == 0
    _, server_log = walkthrough.spawn(api)
    printed = wait_for(lambda: first_line(server_log), "the API server's address")
    assert printed == f"address {walkthrough.address}"  # the --port the page fixed
    done = walkthrough.run(create)
    assert done.returncode == 0, done.stderr
    done = walkthrough.run(validate)
    assert (done.returncode, done.stdout.strip()) == (0, "node1/node-config.yaml: valid NodeConfig")
    done = walkthrough.run(dry_run)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Plan for node1/node-config.yaml"), done.stdout
    assert "STAND-IN: kubelet" in done.stdout

    move_default_ports(walkthrough.folder / "node1" / "node-config.yaml")
    health = f"127.0.0.1:{free_port()}"
    node, _ = walkthrough.spawn(start, "--health-address", health)
    wait_for(lambda: walkthrough.run(status, "--address", health).returncode == 0, "node ready")
    wait_for(lambda: "node1" in walkthrough.run(nodes).stdout, "the node registered")

    node.send_signal(signal.SIGINT)  # Ctrl-C
    assert node.wait(timeout=60) == 0
    done = walkthrough.run(teardown)
    assert done.returncode == 0, done.stdout + done.stderr

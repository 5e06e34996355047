"""Real hosts, real children, real sockets: what the runtime tests drive and observe.

:class:`HostRun` is ``python -m nodehost.testing.planhost`` on a JSON plan in a
subprocess (so signals, ``kill -9`` and the subreaper act on a real host);
:class:`NotifyReceiver` (from :mod:`nodehost.testing.notify`) is the service
manager's end of sd_notify.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from nodehost.daemon import cgroups
from nodehost.testing.notify import NotifyReceiver
from nodehost.testing.ports import free_port
from nodehost.testing.wait import wait_for

__all__ = ["PID_FILES_ONLY", "HostRun", "NotifyReceiver", "free_port", "needs_cgroups", "wait_for"]

WAIT = 20.0  # generous: only ever a limit for waiting, never an assertion about speed


#: Agents in cgroups: the ``cgroups`` part (:mod:`nodehost.testing.parts`).
needs_cgroups = pytest.mark.needs("cgroups")
#: The environment that keeps a host to the pid-file mechanism.
PID_FILES_ONLY = {cgroups.SWITCH_VARIABLE: "0"}


def remove_cgroups(state_dir: str) -> None:
    """Remove the state directory's cgroups a killed host left (once their processes died)."""
    base, _ = cgroups.expected_base(state_dir)
    if base is not None and base.is_dir():
        cgroups.kill(base)
        wait_for(lambda: not cgroups.populated(base), what=f"{base} to empty")
        cgroups.remove_empty(base)


def standin(program: str, port: int | None = None) -> list[str]:
    argv = [sys.executable, "-m", "nodehost.testing.standin", "--program", program]
    return argv + (["--healthz", f"127.0.0.1:{port}"] if port is not None else [])


def healthz_component(name: str, **fields: Any) -> dict[str, Any]:
    """A stand-in component with an HTTP readiness probe on a free port."""
    port = free_port()
    entry = {
        "name": name,
        "argv": standin(name, port),
        "ready": {"http": f"http://127.0.0.1:{port}/healthz"},
    }
    entry.update(fields)
    return entry


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def exists(pid: int) -> bool:
    """True if ``/proc/<pid>`` exists at all (a zombie too)."""
    return os.path.exists(f"/proc/{pid}")


def marked_processes(state_dir: str) -> list[int]:
    """Live processes whose environment carries this state directory's marker."""
    marker = f"NODEHOST_MANAGED={state_dir}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                entries = handle.read().split(b"\0")
        except OSError:
            continue
        if marker in entries and alive(int(name)):
            found.append(int(name))
    return found


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


class HostRun:
    """One ``planhost`` subprocess and what it leaves: hooks log, JSON log lines, state dir."""

    def __init__(
        self,
        directory: Path,
        components: list[dict[str, Any]],
        args: list[str],
        env: dict[str, str] | None,
        state_dir: str | None = None,
    ) -> None:
        self.directory = directory
        self.state_dir = state_dir or str(directory / "state")
        self.plan_path = directory / "plan.json"
        self.hooks_path = directory / "hooks.jsonl"
        self.stderr_path = directory / "host.stderr"
        self.stdout_path = directory / "host.stdout"
        self.plan_path.write_text(
            json.dumps({"state_dir": self.state_dir, "components": components})
        )
        argv = [
            sys.executable,
            "-m",
            "nodehost.testing.planhost",
            str(self.plan_path),
            "--hooks-log",
            str(self.hooks_path),
            "--health-address",
            "127.0.0.1:0",
            *args,
        ]
        environment = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
        environment.update(env or {})
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(argv, stdout=out, stderr=err, env=environment)

    @property
    def pid(self) -> int:
        return self.process.pid

    def hooks(self) -> list[dict[str, Any]]:
        if not self.hooks_path.exists():
            return []
        lines = self.hooks_path.read_text().splitlines()
        return [json.loads(line) for line in lines if line.endswith("}")]

    def hook_names(self, hook: str) -> list[str]:
        return [entry["name"] for entry in self.hooks() if entry["hook"] == hook]

    def wait_hook(self, hook: str, name: str, count: int = 1) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            matches = [e for e in self.hooks() if e["hook"] == hook and e["name"] == name]
            return matches[count - 1] if len(matches) >= count else None

        return wait_for(found, what=f"{hook} #{count} of {name}\n{self.stderr()}")

    def logs(self) -> list[dict[str, Any]]:
        events = []
        for line in self.stderr().splitlines():
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
        return events

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def events(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.logs() if event.get("event") == name]

    def address(self) -> str:
        path = Path(self.state_dir) / "run" / "health.address"
        return wait_for(lambda: path.exists() and path.read_text().strip(), what="health address")

    def url(self, path: str) -> str:
        return f"http://{self.address()}{path}"

    def wait_ready(self) -> None:
        wait_for(
            lambda: self.events("node ready") or self.process.poll() is not None,
            what="node ready",
        )
        assert self.process.poll() is None, f"host exited:\n{self.stderr()}"

    def signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def wait(self, timeout: float = WAIT) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"host did not exit within {timeout}s:\n{self.stderr()}")

    def cleanup(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pid in marked_processes(self.state_dir):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        remove_cgroups(self.state_dir)

"""A real ``nodehost start`` in a subprocess, for tests: :class:`NodeRun`.

The node runs exactly as a user runs it -- the installed console script,
the installed plugins, stand-ins for the programs that have one
(``--standins``), JSON logs -- with its own state directory and a health
server on a port the kernel picks (``--health-address 127.0.0.1:0``; the
bound address is read from ``<state-dir>/run/health.address``), so parallel
test runs never collide::

    run = NodeRun.start(config_path, components="node-exporter", state_dir=tmp_path / "state")
    run.ready()                       # waits for /readyz, or fails with the node's log
    run.status()["components"]        # the /status document
    run.logs()                        # JSON log events (list of dicts)
    assert run.stop() == 0            # SIGTERM, wait, exit code

Waits are bounded (``timeout`` seconds, generous) and end on the event
itself, never on a sleep.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: How long the handle waits for an event before giving up (a limit, never a speed claim).
DEFAULT_TIMEOUT = 60.0


class NodeRunError(AssertionError):
    """The node did not do what a test waited for; the message carries its last log lines."""


def nodehost_executable() -> str:
    """The ``nodehost`` console script beside this interpreter, else on ``PATH``."""
    beside = Path(sys.executable).parent / "nodehost"
    if beside.exists():
        return str(beside)
    found = shutil.which("nodehost")
    if found is None:
        raise NodeRunError("the nodehost console script is not installed (pip install nodehost)")
    return found


@dataclass(frozen=True)
class CliResult:
    """What one ``nodehost`` command did: exit code, stdout, stderr."""

    code: int
    out: str
    err: str


def run_nodehost(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT
) -> CliResult:
    """Run the installed ``nodehost ARGS`` to completion; ``env`` adds to this environment."""
    environment = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
    environment.update(env or {})
    done = subprocess.run(
        [nodehost_executable(), *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=timeout,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


class NodeRun:
    """One ``nodehost start`` subprocess and what it leaves: stderr (JSON logs), stdout, state."""

    def __init__(self, argv: Sequence[str], state_dir: Path, env: Mapping[str, str]) -> None:
        self.argv = list(argv)
        self.state_dir = state_dir
        state_dir.mkdir(parents=True, exist_ok=True)
        self.stdout_path = state_dir.parent / f"{state_dir.name}.stdout"
        self.stderr_path = state_dir.parent / f"{state_dir.name}.stderr"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                self.argv, stdout=out, stderr=err, env=dict(env), start_new_session=True
            )

    @classmethod
    def start(
        cls,
        config: str | os.PathLike[str],
        *,
        components: str,
        state_dir: str | os.PathLike[str],
        standins: str = "always",
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> NodeRun:
        """Start ``nodehost start --config CONFIG --components COMPONENTS`` with stand-ins.

        ``standins`` is ``--standins`` (``always``: stand-ins wherever one
        exists; ``missing``: real programs where installed); ``args`` are
        further ``start`` flags; ``env`` is added to this process's environment
        (``NOTIFY_SOCKET`` is removed).
        """
        argv = [
            nodehost_executable(),
            "start",
            "--config",
            str(config),
            f"--components={components}",
            f"--standins={standins}",
            "--state-dir",
            str(state_dir),
            "--health-address",
            "127.0.0.1:0",
            "--log-format",
            "json",
            *args,
        ]
        environment = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
        environment.update(env or {})
        return cls(argv, Path(state_dir).absolute(), environment)

    # --- what the node says ------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def logs(self) -> list[dict[str, Any]]:
        """The node's JSON log events so far (nodehost's own and its children's output lines)."""
        events = []
        for line in self.stderr().splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict):
                    events.append(event)
        return events

    def address(self, timeout: float = DEFAULT_TIMEOUT) -> str:
        """``host:port`` of the node's health server, once it listens."""
        return self._wait(self._address_now, timeout, "the health server listened")

    def _address_now(self) -> str | None:
        path = self.state_dir / "run" / "health.address"
        return path.read_text().strip() or None if path.exists() else None

    def url(self, path: str) -> str:
        return f"http://{self.address()}{path}"

    def get(self, path: str, timeout: float = 10.0) -> tuple[int, str]:
        """``GET path`` on the health server: ``(status, body)``."""
        return self._get(self.url(path), timeout)

    @staticmethod
    def _get(url: str, timeout: float = 10.0) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def status(self) -> dict[str, Any]:
        """The node's ``/status`` document (components, states, pids, readiness)."""
        code, body = self.get("/status")
        if code != 200:
            raise NodeRunError(f"/status answered {code}: {body}\n{self._tail()}")
        return json.loads(body)

    def component(self, name: str) -> dict[str, Any]:
        """One component's entry of ``/status`` (state, pid, restarts, readiness, details)."""
        for entry in self.status()["components"]:
            if entry.get("name") == name:
                return entry
        raise NodeRunError(f"no component {name!r} in /status\n{self._tail()}")

    # --- waiting and stopping --------------------------------------------------------------

    def ready(self, timeout: float = DEFAULT_TIMEOUT) -> NodeRun:
        """Wait until ``/readyz`` answers 200 (every component ready); fail if the node exits."""

        def answered() -> bool:
            address = self._address_now()
            return bool(address) and self._get(f"http://{address}/readyz")[0] == 200

        self._wait(answered, timeout, "the node was ready")
        return self

    def wait(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait for the node to exit by itself; its exit code."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise NodeRunError(f"nodehost did not exit within {timeout}s\n{self._tail()}") from None

    def stop(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        """SIGTERM, then wait for the clean stop; the exit code (0 for a clean stop)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        """SIGKILL nodehost's whole session (test teardown; normal tests use :meth:`stop`)."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def _wait(self, predicate: Callable[[], T | None], timeout: float, what: str) -> T:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError):
                value = predicate()
                if value:
                    return value
            code = self.process.poll()
            if code is not None:
                raise NodeRunError(f"nodehost exited ({code}) before {what}\n{self._tail()}")
            if time.monotonic() > deadline:
                raise NodeRunError(f"timed out after {timeout}s waiting for {what}\n{self._tail()}")
            time.sleep(0.05)

    def _tail(self, lines: int = 30) -> str:
        text = self.stderr().splitlines()[-lines:] + self.stdout().splitlines()[-lines:]
        return "\n".join(["--- nodehost output (last lines) ---", *text])

"""A component's output brings its next readiness attempt forward; the attempt still decides.

The host runs in the test process (``run_plan``) with a poll schedule of one hour
between attempts: only the nudge of a printed line can make the node ready
before ``ready_timeout`` fails it.  Nothing here measures time.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import sys
from pathlib import Path

import pytest

from nodehost.component import ComponentPlan, HttpProbe, ProcessSpec, StartedProbe
from nodehost.daemon import HostSettings, probes, run_plan
from nodehost.errors import RuntimeFailure
from nodehost.plan import Plan, PlannedComponent
from nodehost.testing.ports import free_port

HOUR = 3600.0
WAIT = 20.0  # a limit for waiting, never an assertion about speed

#: Listens, answers its first request 503, 200 afterwards; told to speak, it prints a line
#: once it listens and one after the 503.
SERVER = """
import socket, sys
port, speak = int(sys.argv[1]), sys.argv[2] == "speak"
server = socket.create_server(("127.0.0.1", port))
if speak:
    print("listening", flush=True)
for count in range(1, 1000):
    conn, _ = server.accept()
    with open(sys.argv[3], "a") as requests:  # before the answer: a stop cannot come first
        requests.write(f"{count}\\n")
    with conn:
        conn.recv(4096)
        status = b"503 Starting" if count == 1 else b"200 OK"
        conn.sendall(b"HTTP/1.1 " + status + b"\\r\\nContent-Length: 0\\r\\n\\r\\n")
    if count == 1 and speak:
        print("warmed up", flush=True)
"""


def plan_for(tmp_path: Path, speak: bool) -> tuple[Plan, Path]:
    port = free_port()
    requests = tmp_path / "requests"
    argv = (sys.executable, "-c", SERVER, str(port), "speak" if speak else "quiet", str(requests))
    spec = ProcessSpec(argv=argv, readiness=HttpProbe(url=f"http://127.0.0.1:{port}/healthz"))
    component = PlannedComponent("server", "server", "test", (), ComponentPlan(run=spec))
    return Plan((component,), str(tmp_path / "state"), "test"), requests


@pytest.fixture
def hourly_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """One attempt at start, then one an hour: only nudges bring attempts sooner."""
    monkeypatch.setattr(probes, "poll_delays", lambda probe: itertools.repeat(HOUR))


def settings(ready_timeout: float) -> HostSettings:
    return HostSettings(
        health_address=None, exit_on_ready=True, notify=False, ready_timeout=ready_timeout
    )


def answered(requests: Path) -> list[str]:
    return requests.read_text().split() if requests.exists() else []


def test_a_line_of_output_brings_the_next_attempt_forward(tmp_path: Path, hourly_polls) -> None:
    plan, requests = plan_for(tmp_path, speak=True)
    out = io.StringIO()
    assert run_plan(plan, None, settings(WAIT), out=out) == 0
    assert "node ready after" in out.getvalue()
    assert answered(requests) == ["1", "2"]  # the 503, then the 200 the second line brought


def test_without_output_the_schedule_stands(tmp_path: Path, hourly_polls) -> None:
    # The same server, silent: after the first attempt nothing comes before the hour is up.
    plan, requests = plan_for(tmp_path, speak=False)
    with pytest.raises(RuntimeFailure, match="not ready"):
        run_plan(plan, None, settings(2.0))
    assert answered(requests) in ([], ["1"])


def test_a_pause_ends_when_nudged_and_not_before_the_shortest_poll() -> None:
    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        nudged = asyncio.Event()
        nudged.set()  # a line that came during the attempt
        began = loop.time()
        await asyncio.wait_for(probes.pause(HOUR, nudged, began), WAIT)
        return began, loop.time()

    began, ended = asyncio.run(main())
    assert ended - began >= probes.FIRST_POLL_DELAY


def test_an_unnudged_pause_is_the_delay() -> None:
    async def main() -> bool:
        nudged = asyncio.Event()
        task = asyncio.ensure_future(probes.pause(HOUR, nudged, 0.0))
        await asyncio.sleep(0.05)
        return task.done()

    assert asyncio.run(main()) is False


def test_a_started_probe_needs_no_pause(tmp_path: Path) -> None:
    spec = ProcessSpec(argv=("sleep", "600"), readiness=StartedProbe())
    component = PlannedComponent("sleeper", "sleeper", "test", (), ComponentPlan(run=spec))
    plan = Plan((component,), str(tmp_path / "state"), "test")
    assert run_plan(plan, None, settings(WAIT), out=io.StringIO()) == 0

"""A task that replaces files makes the host restart (or signal) the processes that read them.

The host runs in the test process (``run_plan`` from the main thread) with real
stand-in children; the task rewrites the file, calls ``files_changed`` and
watches the lifecycle hooks to pace itself.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from nodehost.component import ComponentPlan, HttpProbe, ProcessSpec, TaskSpec
from nodehost.daemon import HostSettings, RestartPolicy, run_plan
from nodehost.plan import Plan, PlannedComponent
from nodehost.testing.ports import free_port

CRASH_LOOP_LIMIT = 2


class Recorder:
    """Lifecycle hooks, recorded in order."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def component_started(self, *, name, pid):
        self.calls.append(("started", name, pid))

    def component_ready(self, *, name, seconds):
        self.calls.append(("ready", name))

    def component_exited(self, *, name, returncode, restarting):
        self.calls.append(("exited", name, returncode))

    def component_stopped(self, *, name):
        self.calls.append(("stopped", name))

    def node_ready(self, *, seconds, status_address, keeps_running=True):
        self.calls.append(("node ready", status_address))

    def count(self, kind: str, name: str) -> int:
        return sum(1 for call in self.calls if call[:2] == (kind, name))

    def pids(self, name: str) -> list[int]:
        return [call[2] for call in self.calls if call[:2] == ("started", name)]


def standin(name: str, reload_files: list[Path], reload_signal: int | None = None) -> ProcessSpec:
    """A stand-in serving /healthz, ready through it, reading ``reload_files``."""
    port = free_port()
    return ProcessSpec(
        argv=(sys.executable, "-m", "nodehost.testing.standin", "--program", name,
              "--healthz", f"127.0.0.1:{port}"),
        readiness=HttpProbe(url=f"http://127.0.0.1:{port}/healthz", interval=0.02),
        stop_grace=5.0,
        reload_files=tuple(str(path) for path in reload_files),
        reload_signal=reload_signal,
    )  # fmt: skip


def planned(name: str, run, after=()) -> PlannedComponent:
    return PlannedComponent(name, name, "test", tuple(after), ComponentPlan(run=run))


def run_node(
    tmp_path: Path,
    processes: dict[str, ProcessSpec],
    task: Callable[..., Awaitable[None]],
    hooks: Recorder,
) -> int:
    """Run the processes and then ``task`` (after all of them) until the node is ready."""
    components = [planned(name, spec) for name, spec in processes.items()]
    components.append(planned("rotate", TaskSpec(run=task), after=list(processes)))
    settings = HostSettings(
        health_address=None,
        exit_on_ready=True,
        notify=False,
        ready_timeout=60.0,
        restart=RestartPolicy(
            initial_backoff=0.01, stable_period=60.0, crash_loop_limit=CRASH_LOOP_LIMIT
        ),
    )
    return run_plan(Plan(tuple(components), str(tmp_path / "state"), "test"), hooks, settings)


async def until(predicate: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def ready_and_wait(context) -> None:
    """Report ready and keep running until the host stops (a task that returns exits)."""
    context.ready()
    await asyncio.Event().wait()


def test_a_changed_file_restarts_the_process_again_and_again_without_a_crash_loop(
    tmp_path: Path,
) -> None:
    certificate, other = tmp_path / "server.pem", tmp_path / "other.pem"
    certificate.write_text("first\n")
    hooks = Recorder()
    rotations = CRASH_LOOP_LIMIT + 2

    async def rotate(context) -> None:
        for number in range(rotations):
            certificate.write_text(f"rotation {number}\n")
            context.files_changed([str(certificate)])
            await until(lambda n=number: hooks.count("ready", "reader") == n + 2, "ready again")
        await ready_and_wait(context)

    processes = {"reader": standin("reader", [certificate]), "bystander": standin("b", [other])}
    assert run_node(tmp_path, processes, rotate, hooks) == 0
    pids = hooks.pids("reader")
    assert len(pids) == rotations + 1 and len(set(pids)) == rotations + 1
    assert not [call for call in hooks.calls if call[0] == "exited"]
    assert len(hooks.pids("bystander")) == 1


def test_the_process_is_not_ready_until_its_probe_passes_after_the_restart(
    tmp_path: Path,
) -> None:
    certificate = tmp_path / "server.pem"
    certificate.write_text("first\n")
    hooks = Recorder()

    async def rotate(context) -> None:
        context.files_changed([str(certificate)])
        await until(lambda: hooks.count("started", "reader") == 2, "the second start")
        await until(lambda: hooks.count("ready", "reader") == 2, "ready again")
        await ready_and_wait(context)

    assert run_node(tmp_path, {"reader": standin("reader", [certificate])}, rotate, hooks) == 0
    second_start = hooks.calls.index(("started", "reader", hooks.pids("reader")[1]))
    assert ("ready", "reader") in hooks.calls[second_start:]


def test_a_change_named_through_a_symlink_reaches_the_process_listing_its_target(
    tmp_path: Path,
) -> None:
    target = tmp_path / "pair-1.pem"
    target.write_text("first\n")
    link = tmp_path / "pair-current.pem"
    os.symlink(target.name, link)
    hooks = Recorder()

    async def rotate(context) -> None:
        context.files_changed([str(link)])
        await until(lambda: hooks.count("ready", "reader") == 2, "ready again")
        await ready_and_wait(context)

    assert run_node(tmp_path, {"reader": standin("reader", [target])}, rotate, hooks) == 0
    assert len(set(hooks.pids("reader"))) == 2


def test_a_reload_signal_is_sent_instead_of_a_restart(tmp_path: Path, monkeypatch) -> None:
    certificate, received = tmp_path / "server.pem", tmp_path / "signals"
    certificate.write_text("first\n")
    monkeypatch.setenv("NODEHOST_STANDIN_SIGNAL_FILE", str(received))
    hooks = Recorder()

    async def rotate(context) -> None:
        certificate.write_text("second\n")
        context.files_changed([str(certificate)])
        await until(received.exists, "the signal to be recorded")
        await ready_and_wait(context)

    spec = standin("reader", [certificate], reload_signal=signal.SIGHUP)
    assert run_node(tmp_path, {"reader": spec}, rotate, hooks) == 0
    [pid] = hooks.pids("reader")
    assert received.read_text() == f"SIGHUP {pid}\n"

"""Both ways of setting the parent-death signal work: a SIGKILLed parent takes its child along."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hostrun import WAIT, alive, wait_for

from nodehost.daemon.process import Launcher, resolve_program
from nodehost.testing import parts

PARENT = textwrap.dedent(
    """
    import os, sys, time
    from nodehost.daemon.process import Launcher
    launcher = Launcher(use_setpriv={mode})
    child = launcher.popen(("sleep", "600"), dict(os.environ), None, 1, 2)
    print(child.pid, "setpriv" if launcher.setpriv else "preexec", flush=True)
    time.sleep(600)
    """
)


@pytest.mark.parametrize("mode", [True, False], ids=["setpriv", "preexec"])
def test_a_child_dies_with_its_sigkilled_parent(mode: bool) -> None:
    if mode:
        parts.require("setpriv")
        assert Launcher(use_setpriv=True).setpriv is not None, "setpriv lacks --pdeathsig"
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT.format(mode=mode)], stdout=subprocess.PIPE, text=True
    )
    try:
        pid_text, used = parent.stdout.readline().split()
        child = int(pid_text)
        assert used == ("setpriv" if mode else "preexec")
        wait_for(lambda: Path(f"/proc/{child}/exe").resolve().name == "sleep", what="exec")
        assert os.getsid(child) == child  # its own session and process group
        parent.send_signal(signal.SIGKILL)
        parent.wait(WAIT)
        wait_for(lambda: not alive(child), what="the child to die with its parent")
    finally:
        parent.kill()
        parent.wait()


def test_resolve_program_finds_programs_on_the_given_path(tmp_path: Path) -> None:
    program = tmp_path / "tool"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert resolve_program("tool", {"PATH": str(tmp_path)}) == str(program)
    with pytest.raises(FileNotFoundError):
        resolve_program("tool", {"PATH": "/nonexistent"})
    program.chmod(0o644)
    with pytest.raises(PermissionError):
        resolve_program(str(program), {})


def test_the_hosts_children_are_read_once_per_loop_iteration() -> None:
    """Components stopping together share one read of the host's children; a child
    started since is seen from the loop's next iteration on."""
    from nodehost.daemon.process import own_children_this_iteration

    async def scenario() -> tuple[bool, bool, bool]:
        before = own_children_this_iteration()
        child = subprocess.Popen(["sleep", "600"])
        try:
            shared = own_children_this_iteration() is before
            unseen = child.pid not in own_children_this_iteration()
            await asyncio.sleep(0)
            seen = child.pid in own_children_this_iteration()
        finally:
            child.kill()
            child.wait()
        return shared, unseen, seen

    assert asyncio.run(scenario()) == (True, True, True)


def test_a_graceful_stop_looks_for_leftovers_once_after_the_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the wait saw nothing left, the stop does not look again (N components stopping
    together paid for each check twice): one look before the signal, one after the exit."""
    from nodehost.daemon.output import ComponentOutput
    from nodehost.daemon.process import ChildProcess, Reaper

    looks: list[bool] = []
    original = ChildProcess.descendants_left

    def counted(self: ChildProcess) -> bool:
        looks.append(original(self))
        return looks[-1]

    monkeypatch.setattr(ChildProcess, "descendants_left", counted)

    async def scenario() -> bool:
        launcher, reaper = Launcher(use_setpriv=False), Reaper()
        reaper.install(asyncio.get_running_loop())
        try:
            output = ComponentOutput("stop-looks", None, enabled=False)
            child = ChildProcess.spawn(
                ("sleep", "600"),
                dict(os.environ),
                None,
                launcher,
                reaper,
                output,
                "stop-looks",
                str(tmp_path),
            )
            return await child.terminate(signal.SIGTERM, WAIT, asyncio.Event())
        finally:
            reaper.uninstall()
            launcher.close()

    assert asyncio.run(scenario()) is True
    assert looks == [True, False]


def test_only_marked_children_no_component_started_are_adopted(tmp_path: Path) -> None:
    """A child of the host carrying a component's markers is that component's adopted
    descendant (a daemon that left its group) only when no component started it: the
    reaper knows the components' own children, the component's child included."""
    from nodehost.daemon.output import ComponentOutput
    from nodehost.daemon.process import ChildProcess, Reaper
    from nodehost.daemon.variables import COMPONENT_VARIABLE, MARKER_VARIABLE

    environment = {**os.environ, COMPONENT_VARIABLE: "adopter", MARKER_VARIABLE: str(tmp_path)}

    async def scenario() -> tuple[list[int], int]:
        launcher, reaper = Launcher(use_setpriv=False), Reaper()
        reaper.install(asyncio.get_running_loop())
        output = ComponentOutput("adopter", None, enabled=False)
        child = ChildProcess.spawn(
            ("sleep", "600"), environment, None, launcher, reaper, output, "adopter", str(tmp_path)
        )
        orphan = subprocess.Popen(["sleep", "600"], env=environment)
        started = subprocess.Popen(["sleep", "600"], env=environment)
        reaper.register(started.pid, lambda _code: None)  # a component's own child
        try:
            await asyncio.sleep(0)  # the next iteration reads the host's children again
            return child.adopted_descendants(), orphan.pid
        finally:
            for pid in (child.pid, orphan.pid, started.pid):
                os.kill(pid, signal.SIGKILL)
            for pid in (child.pid, orphan.pid, started.pid):
                wait_for(lambda pid=pid: not alive(pid), what="the sleepers to die")
            reaper.reap()
            reaper.uninstall()
            launcher.close()
            child.close_output()

    adopted, orphan = asyncio.run(scenario())
    assert adopted == [orphan]


def _spawn_sleepers(
    tmp_path: Path, cgroups: list[Path | None], launcher: Launcher, reaper: object
) -> list[object]:
    from nodehost.daemon.output import ComponentOutput
    from nodehost.daemon.process import ChildProcess

    (tmp_path / "run").mkdir(exist_ok=True)
    children = []
    for index, cgroup in enumerate(cgroups):
        name = f"settled-{index}"
        output = ComponentOutput(name, None, enabled=False)
        children.append(
            ChildProcess.spawn(
                ("sleep", "600"),
                dict(os.environ),
                None,
                launcher,
                reaper,
                output,
                name,
                str(tmp_path),
                cgroup,
            )
        )
    return children


def test_children_spawned_together_are_settled_in_one_worker_job(tmp_path: Path) -> None:
    """N components starting together cost one hand-off to a worker thread, not 2N:
    every child is settled and its pid file written."""
    from nodehost.daemon.pidfiles import read_pid_files
    from nodehost.daemon.process import Reaper

    async def scenario() -> tuple[int, list[tuple[str, int]], list[tuple[str, int]]]:
        loop = asyncio.get_running_loop()
        jobs = 0
        original = loop.run_in_executor

        def counted(*args: object) -> asyncio.Future[object]:
            nonlocal jobs
            jobs += 1
            return original(*args)  # type: ignore[arg-type]

        loop.run_in_executor = counted  # type: ignore[method-assign]
        launcher, reaper = Launcher(use_setpriv=False), Reaper()
        reaper.install(loop)
        children = _spawn_sleepers(tmp_path, [None, None, None], launcher, reaper)
        try:
            await asyncio.gather(*(child.settle() for child in children))
            await asyncio.gather(*(child.recorded for child in children))
            recorded = sorted((r.component, r.pid) for r in read_pid_files(str(tmp_path)))
            return jobs, recorded, sorted((c.component, c.pid) for c in children)
        finally:
            for child in children:
                await child.terminate(signal.SIGKILL, WAIT, asyncio.Event())
            reaper.uninstall()
            launcher.close()

    jobs, recorded, started = asyncio.run(scenario())
    assert jobs == 1
    assert recorded == started


def test_a_child_that_cannot_enter_its_cgroup_fails_alone(tmp_path: Path) -> None:
    """Settled together, a child whose move fails is killed and raises; the others
    settle and get their pid files."""
    from nodehost.daemon.pidfiles import read_pid_files
    from nodehost.daemon.process import Reaper

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    unmovable = blocker / "agent"  # mkdir fails: ENOTDIR

    async def scenario() -> tuple[list[str], list[str], int | None]:
        loop = asyncio.get_running_loop()
        launcher, reaper = Launcher(use_setpriv=False), Reaper()
        reaper.install(loop)
        children = _spawn_sleepers(tmp_path, [None, unmovable, None], launcher, reaper)
        try:
            results = await asyncio.gather(
                *(child.settle() for child in children), return_exceptions=True
            )
            await asyncio.gather(*(c.recorded for c in children if c.recorded is not None))
            code = await asyncio.wait_for(children[1].exited, WAIT)
            outcomes = [
                "ok" if r is None else "OSError" if isinstance(r, OSError) else repr(r)
                for r in results
            ]
            recorded = sorted(r.component for r in read_pid_files(str(tmp_path)))
            return outcomes, recorded, code
        finally:
            for child in children:
                await child.terminate(signal.SIGKILL, WAIT, asyncio.Event())
            reaper.uninstall()
            launcher.close()

    outcomes, recorded, code = asyncio.run(scenario())
    assert outcomes == ["ok", "OSError", "ok"]
    assert recorded == ["settled-0", "settled-2"]
    assert code == -signal.SIGKILL


def test_a_child_with_no_cgroup_to_enter_is_settled_without_waiting_for_a_worker(
    tmp_path: Path,
) -> None:
    """Where cgroups are off, a child counts as started in the loop turn it was spawned
    in; its pid file is still written by the worker job."""
    from nodehost.daemon.pidfiles import read_pid_files
    from nodehost.daemon.process import Reaper

    async def scenario() -> tuple[bool, list[str]]:
        launcher, reaper = Launcher(use_setpriv=False), Reaper()
        reaper.install(asyncio.get_running_loop())
        (child,) = _spawn_sleepers(tmp_path, [None], launcher, reaper)
        try:
            settling = child.settle()
            try:
                settling.send(None)
                settled_at_once = False
            except StopIteration:
                settled_at_once = True
            settling.close()
            await asyncio.wait_for(asyncio.shield(child.recorded), WAIT)
            return settled_at_once, [r.component for r in read_pid_files(str(tmp_path))]
        finally:
            await child.terminate(signal.SIGKILL, WAIT, asyncio.Event())
            reaper.uninstall()
            launcher.close()

    assert asyncio.run(scenario()) == (True, ["settled-0"])


def test_a_child_that_cannot_be_handed_to_a_worker_fails_instead_of_waiting(
    tmp_path: Path,
) -> None:
    """With the loop's executor shut down the settling job cannot start: the child's
    settling raises (as its own failed move would), and no pid file is waited for."""
    from nodehost.daemon.process import Settler

    async def scenario() -> tuple[BaseException | None, object]:
        await asyncio.get_running_loop().shutdown_default_executor()
        moved, recorded = Settler(None).settle(os.getpid(), tmp_path / "cg", str(tmp_path), "a")
        error = None
        try:
            await asyncio.wait_for(moved, WAIT)
        except RuntimeError as raised:
            error = raised
        return error, await asyncio.wait_for(recorded, WAIT)

    error, recorded = asyncio.run(scenario())
    assert isinstance(error, RuntimeError) and recorded is None


def test_a_settler_whose_loop_closed_before_its_hand_over_settles_on_the_next_loop(
    tmp_path: Path,
) -> None:
    """A hand-over scheduled on a loop that stopped before running it must not keep the
    next loop's children from being handed over."""
    from nodehost.daemon.pidfiles import read_pid_files
    from nodehost.daemon.process import Settler

    (tmp_path / "run").mkdir()
    settler = Settler(None)
    first = asyncio.new_event_loop()

    def queue_and_stop() -> None:
        settler.settle(os.getpid(), tmp_path / "cg", str(tmp_path), "first")
        first.stop()  # the hand-over it scheduled does not run: callbacks added now wait

    first.call_soon(queue_and_stop)
    first.run_forever()
    first.close()

    async def scenario() -> None:
        moved, recorded = settler.settle(os.getpid(), None, str(tmp_path), "second")
        await asyncio.wait_for(moved, WAIT)
        await asyncio.wait_for(recorded, WAIT)

    asyncio.run(scenario())
    assert [r.component for r in read_pid_files(str(tmp_path))] == ["second"]

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

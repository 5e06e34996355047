"""A short program that an in-loop component runs and waits for (``ctr images import``).

The host reaps every child with ``waitpid(-1)`` (:class:`~nodehost.daemon.process.Reaper`),
so a task must not wait for a subprocess itself: ``asyncio.create_subprocess_exec``
would then see exit status 255 ("unknown child") whenever the reaper was first.
:func:`run_oneshot` takes the exit status from the reaper instead (or, outside a
host, from ``waitpid`` on the child alone); tasks reach it as
:meth:`~nodehost.component.TaskContext.run_program`.

The program runs in its own session with ``PR_SET_PDEATHSIG=SIGKILL`` (it dies
with the host), standard input from ``stdin`` (a file descriptor; ``/dev/null``
when None), standard output to ``stdout`` (a file descriptor) or, when None,
captured with standard error.  The descriptors given are handed over: closed
here once the child has its copies (or could not start), so that the other
end of a pipe sees its end when the child exits.  Past ``timeout`` seconds its group is killed and
the result's ``returncode`` is None.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.daemon.process import Reaper


@frozen
class OneshotResult:
    """How a program ended: its exit code (negative: a signal; None: killed at the timeout)
    and what it wrote (standard output and error, or error alone when output went elsewhere)."""

    returncode: int | None
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


async def run_oneshot(
    argv: Sequence[str],
    *,
    reaper: Reaper | None,
    timeout: float,
    stdin: int | None = None,
    stdout: int | None = None,
) -> OneshotResult:
    """Run ``argv`` and wait for it (module docstring).  Raises :class:`OSError` when it
    cannot be started (the program named)."""
    from nodehost.daemon.process import _child_setup

    try:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=subprocess.STDOUT if stdout is None else subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_child_setup(os.getpid()),
        )
    finally:  # handed over: the child has its own copies (a pipe's end must not stay open here)
        for fd in (stdin, stdout):
            if fd is not None:
                os.close(fd)
    exited = _exit_future(popen, reaper)
    pipe = popen.stdout if stdout is None else popen.stderr
    assert pipe is not None
    reading = asyncio.ensure_future(asyncio.to_thread(pipe.read))
    try:
        async with asyncio.timeout(timeout):
            returncode: int | None = await asyncio.shield(exited)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGKILL)
        await exited
        returncode = None
    output = await reading
    pipe.close()
    return OneshotResult(returncode, output.decode(errors="replace").strip())


def _exit_future(popen: subprocess.Popen[bytes], reaper: Reaper | None) -> asyncio.Future[int]:
    """A future of ``popen``'s exit code, from ``reaper`` (registered before the loop runs
    its SIGCHLD handler again) or from a thread waiting for this child alone."""
    loop = asyncio.get_running_loop()
    if reaper is None:
        return asyncio.ensure_future(asyncio.to_thread(popen.wait))
    exited: asyncio.Future[int] = loop.create_future()

    def on_exit(returncode: int) -> None:
        popen.returncode = returncode  # keeps subprocess from waiting for it again
        if not exited.done():
            exited.set_result(returncode)

    reaper.register(popen.pid, on_exit)
    return exited

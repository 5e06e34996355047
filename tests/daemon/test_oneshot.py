"""``nodehost.daemon.oneshot``: a task's short program gets its true exit status even though the
host's reaper collects every child with ``waitpid(-1)``."""

from __future__ import annotations

import asyncio
import os

from nodehost.daemon.oneshot import run_oneshot
from nodehost.daemon.process import Reaper


def with_reaper(coroutine_function):  # type: ignore[no-untyped-def]
    async def scenario():  # type: ignore[no-untyped-def]
        reaper = Reaper()
        reaper.install(asyncio.get_running_loop())
        try:
            return await asyncio.wait_for(coroutine_function(reaper), 30)
        finally:
            reaper.uninstall()

    return asyncio.run(scenario())


def test_exit_codes_come_from_the_reaper_for_many_programs_at_once() -> None:
    async def scenario(reaper: Reaper) -> list[tuple[int | None, str]]:
        runs = [
            run_oneshot(
                ["sh", "-c", f"echo out{n}; echo err{n} >&2; exit {n}"], reaper=reaper, timeout=20
            )
            for n in range(8)
        ]
        return [(result.returncode, result.output) for result in await asyncio.gather(*runs)]

    assert with_reaper(scenario) == [(n, f"out{n}\nerr{n}") for n in range(8)]


def test_a_program_past_its_timeout_is_killed_with_no_exit_code() -> None:
    async def scenario(reaper: Reaper) -> tuple[int | None, str]:
        result = await run_oneshot(
            ["sh", "-c", "echo started; exec sleep 30"], reaper=reaper, timeout=0.5
        )
        return result.returncode, result.output

    assert with_reaper(scenario) == (None, "started")


def test_a_pipe_between_two_programs_ends_when_the_writer_exits() -> None:
    async def scenario(reaper: Reaper) -> tuple[str, str, int | None]:
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        writer, reader = await asyncio.gather(
            run_oneshot(
                ["sh", "-c", "echo through; echo note >&2"],
                reaper=reaper,
                timeout=20,
                stdout=write_end,
            ),
            run_oneshot(["cat"], reaper=reaper, timeout=5, stdin=read_end),
        )
        return writer.output, reader.output, reader.returncode

    assert with_reaper(scenario) == ("note", "through", 0)

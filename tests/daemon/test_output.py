"""Child output: lines become events; a crash loop's repeated lines are held back but kept."""

from __future__ import annotations

import asyncio
import os

from nodehost.daemon.output import MAX_LINE_BYTES, ComponentOutput, PipeReader


class RecordingLog:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def info(self, event: str, **fields) -> None:
        self.events.append((event, fields))


def test_each_line_is_an_event_with_component_stream_pid_and_restarts() -> None:
    log = RecordingLog()
    output = ComponentOutput("kubelet", log)
    output.new_run(pid=42, restarts=3, crash_looping=False)
    output.line("stderr", "hello")
    assert log.events == [
        ("hello", {"component": "kubelet", "stream": "stderr", "pid": 42, "restarts": 3})
    ]


def test_repeated_lines_of_a_crash_loop_are_counted_not_logged() -> None:
    log = RecordingLog()
    output = ComponentOutput("kubelet", log)
    output.new_run(1, 0, crash_looping=False)
    output.line("stderr", "boom")
    output.new_run(2, 1, crash_looping=True)
    output.line("stderr", "boom")
    output.line("stderr", "something new")
    output.new_run(3, 2, crash_looping=True)
    messages = [event for event, _ in log.events]
    assert messages == [
        "boom",
        "something new",
        "repeated output of a crash-looping component suppressed",
    ]
    assert log.events[-1][1]["lines"] == 1
    assert output.last_lines() == ["stderr: boom", "stderr: boom", "stderr: something new"]


def test_repeats_are_logged_when_not_crash_looping() -> None:
    log = RecordingLog()
    output = ComponentOutput("kubelet", log)
    output.new_run(1, 0, crash_looping=False)
    output.line("stdout", "same")
    output.new_run(2, 1, crash_looping=False)
    output.line("stdout", "same")
    assert [event for event, _ in log.events] == ["same", "same"]


def test_the_tail_keeps_the_last_lines_only() -> None:
    output = ComponentOutput("kubelet", RecordingLog(), tail_lines=2)
    for number in range(5):
        output.line("stdout", str(number))
    assert output.last_lines() == ["stdout: 3", "stdout: 4"]


def test_pipe_reader_splits_lines_bounds_long_ones_and_flushes_the_last() -> None:
    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        output = ComponentOutput("x", RecordingLog(), tail_lines=100)
        read_end, write_end = os.pipe()
        reader = PipeReader(loop, read_end, "stdout", output)
        os.write(write_end, b"one\ntw")
        os.write(write_end, b"o\n" + b"a" * (MAX_LINE_BYTES + 10) + b"\nlast")
        os.close(write_end)
        while not reader.closed:
            await asyncio.sleep(0.01)
        return output.last_lines()

    lines = asyncio.run(scenario())
    assert lines[:2] == ["stdout: one", "stdout: two"]
    assert [len(line) for line in lines[2:4]] == [len("stdout: ") + MAX_LINE_BYTES, 18]
    assert lines[4] == "stdout: last"

"""A child's stdout/stderr: split into lines, logged as events, remembered for failure messages.

Each line becomes one structlog event whose message is the line, with
``component``, ``stream``, ``pid`` and ``restarts``.  While a component is crash
looping, lines identical to ones its previous run printed are not logged again
(they are counted, and the count is logged once per run); the tail kept for
failure messages still holds every line, as does the bounded history served at
``/debug/logs/<component>`` (:data:`HISTORY_LINES`).  Every line also sets the output's
``nudged`` event, when it has one: the supervisor probes again soon after a
component says something (:func:`nodehost.daemon.probes.pause`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from typing import Any

#: Longer lines are split (k0s uses the same bound).
MAX_LINE_BYTES = 16 * 1024
#: How many distinct lines of one run are remembered to spot repeats.
REMEMBERED_LINES = 1000
#: The recent output kept for ``/debug/logs/<component>`` and ``nodehost debug bundle``:
#: this many lines (all runs, both streams), each cut at ``HISTORY_LINE_CHARS``.
HISTORY_LINES = 500
HISTORY_LINE_CHARS = 4096


class ComponentOutput:
    """The output of every run of one component."""

    def __init__(
        self,
        component: str,
        log: Any,
        tail_lines: int = 20,
        enabled: bool = True,
        nudged: asyncio.Event | None = None,
    ):
        self.component = component
        self.nudged = nudged
        self.log = log
        self.enabled = enabled
        self.tail: deque[str] = deque(maxlen=max(1, tail_lines))
        self.history: deque[str] = deque(maxlen=HISTORY_LINES)
        self.pid: int | None = None
        self.restarts = 0
        self.crash_looping = False
        self._previous_run: set[str] = set()
        self._this_run: set[str] = set()
        self._suppressed = 0

    def new_run(self, pid: int | None, restarts: int, crash_looping: bool) -> None:
        """Start attributing lines to a new run (after a start or restart)."""
        self.flush_suppressed()
        self._previous_run, self._this_run = self._this_run, set()
        self.pid, self.restarts, self.crash_looping = pid, restarts, crash_looping

    def line(self, stream: str, text: str) -> None:
        """Record one line of ``stream`` (``stdout`` or ``stderr``)."""
        if self.nudged is not None:
            self.nudged.set()
        self.tail.append(f"{stream}: {text}")
        self.history.append(f"{stream}: {text[:HISTORY_LINE_CHARS]}")
        repeated = self.crash_looping and text in self._previous_run
        if len(self._this_run) < REMEMBERED_LINES:
            self._this_run.add(text)
        if repeated:
            self._suppressed += 1
        elif self.enabled:
            self.log.info(
                text,
                component=self.component,
                stream=stream,
                pid=self.pid,
                restarts=self.restarts,
            )

    def flush_suppressed(self) -> None:
        """Log how many repeated lines were held back, if any."""
        if self._suppressed and self.enabled:
            self.log.info(
                "repeated output of a crash-looping component suppressed",
                component=self.component,
                lines=self._suppressed,
                pid=self.pid,
            )
        self._suppressed = 0

    def last_lines(self) -> list[str]:
        return list(self.tail)

    def recent_lines(self) -> list[str]:
        """Up to :data:`HISTORY_LINES` last lines, oldest first (``stream: text``)."""
        return list(self.history)


class PipeReader:
    """Reads one pipe with ``loop.add_reader`` and feeds whole lines to a :class:`ComponentOutput`.

    The pipe may outlive the child (a grandchild keeps it open); the reader
    runs until end of file or :meth:`close`.
    """

    def __init__(self, loop: Any, fd: int, stream: str, output: ComponentOutput) -> None:
        self.loop = loop
        self.fd = fd
        self.stream = stream
        self.output = output
        self.buffer = b""
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        self._drain_once()

    def _drain_once(self) -> bool:
        """Read one chunk; False when nothing is left for now (or at end of file)."""
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            self._finish()
            return False
        self._take(data)
        return True

    def _take(self, data: bytes) -> None:
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            self._emit(line)
        while len(self.buffer) >= MAX_LINE_BYTES:
            self._emit(self.buffer[:MAX_LINE_BYTES])
            self.buffer = self.buffer[MAX_LINE_BYTES:]

    def _emit(self, raw: bytes) -> None:
        for start in range(0, max(len(raw), 1), MAX_LINE_BYTES):
            chunk = raw[start : start + MAX_LINE_BYTES]
            self.output.line(self.stream, chunk.decode(errors="replace").rstrip("\r"))

    @property
    def closed(self) -> bool:
        return self.fd < 0

    def _finish(self) -> None:
        if self.buffer:
            self._emit(self.buffer)
            self.buffer = b""
        self.loop.remove_reader(self.fd)
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = -1

    def close(self) -> None:
        """Read what is left in the pipe, emit a partial last line, stop reading."""
        if self.fd < 0:
            return
        for _ in range(64):  # bounded: a writer that is still alive cannot hold us here
            if self.fd < 0 or not self._drain_once():
                break
        if self.fd >= 0:
            self._finish()

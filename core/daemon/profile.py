"""Profiling, Origin's ``OPENSHIFT_PROFILE`` equivalent: ``NODEHOST_PROFILE``.

``NODEHOST_PROFILE=cpu``
    profile the whole run with :mod:`cProfile`; on exit write
    ``nodehost-cpu-<pid>.prof`` (read it with ``python -m pstats FILE``);
``NODEHOST_PROFILE=mem``
    trace allocations with :mod:`tracemalloc`; on exit write the 50 biggest
    allocation sites to ``nodehost-mem-<pid>.txt``;
``NODEHOST_PROFILE=web``
    serve debug pages on ``$NODEHOST_PROFILE_HOST:$NODEHOST_PROFILE_PORT``
    (default ``127.0.0.1:6060``, as Origin): ``/debug/pprof/`` (index),
    ``/debug/pprof/tasks`` (every asyncio task with its stack),
    ``/debug/pprof/threads`` (every thread's stack) and
    ``/debug/pprof/profile?seconds=N`` (a cProfile of the next N seconds,
    default 10, as text sorted by cumulative time).  A listen failure is fatal.

Files go to ``$NODEHOST_PROFILE_DIR`` (default: the working directory, as
Origin).  Any other value is ignored with a warning.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from nodehost.daemon.server import Response, Route

PROFILE_VARIABLE = "NODEHOST_PROFILE"
MODES = ("cpu", "mem", "web")


def profile_mode(environ: Mapping[str, str] | None = None) -> str | None:
    value = (os.environ if environ is None else environ).get(PROFILE_VARIABLE, "").strip()
    return value or None


def check_profile_environment(environ: Mapping[str, str] | None = None) -> None:
    """Refuse unusable profiling settings before anything starts (``UsageError`` naming them)."""
    from nodehost.errors import UsageError

    environ = os.environ if environ is None else environ
    mode = (environ.get(PROFILE_VARIABLE) or "").strip()
    if not mode:
        return
    if mode not in MODES:
        raise UsageError(f"{mode!r} is not one of {', '.join(MODES)}", PROFILE_VARIABLE)
    folder = environ.get("NODEHOST_PROFILE_DIR")
    if (
        mode in ("cpu", "mem")
        and folder
        and not (os.path.isdir(folder) and os.access(folder, os.W_OK))
    ):
        raise UsageError(f"{folder} is not a writable directory", "NODEHOST_PROFILE_DIR")
    port = environ.get("NODEHOST_PROFILE_PORT")
    if mode == "web" and port and not (port.isdigit() and 0 < int(port) < 65536):
        raise UsageError(f"{port!r} is not a port (1-65535)", "NODEHOST_PROFILE_PORT")


def _output_path(kind: str, suffix: str) -> Path:
    from pathlib import Path

    folder = Path(os.environ.get("NODEHOST_PROFILE_DIR") or os.getcwd())
    return folder / f"nodehost-{kind}-{os.getpid()}.{suffix}"


@contextlib.contextmanager
def profiling(log: Any) -> Iterator[str | None]:
    """Profile the enclosed run as ``NODEHOST_PROFILE`` says; yields the mode (or None)."""
    mode = profile_mode()
    if mode is not None and mode not in MODES:
        log.warning("unknown NODEHOST_PROFILE ignored", value=mode, known=list(MODES))
        mode = None
    if mode == "cpu":
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
        try:
            yield mode
        finally:
            profiler.disable()
            path = _output_path("cpu", "prof")
            try:
                profiler.dump_stats(path)
                log.info("CPU profile written", path=str(path))
            except OSError as error:
                log.error("cannot write the CPU profile", path=str(path), error=str(error))
    elif mode == "mem":
        import tracemalloc

        tracemalloc.start(10)
        try:
            yield mode
        finally:
            snapshot = tracemalloc.take_snapshot()
            tracemalloc.stop()
            path = _output_path("mem", "txt")
            lines = [str(stat) for stat in snapshot.statistics("lineno")[:50]]
            from nodehost.pki.atomic import write_atomic

            try:
                write_atomic(path, ("\n".join(lines) + "\n").encode(), 0o644)
                log.info("memory profile written", path=str(path))
            except OSError as error:
                log.error("cannot write the memory profile", path=str(path), error=str(error))
    else:
        yield mode


def web_address() -> tuple[str, int]:
    host = os.environ.get("NODEHOST_PROFILE_HOST") or "127.0.0.1"
    port = os.environ.get("NODEHOST_PROFILE_PORT") or "6060"
    return host, int(port) if port.isdigit() else 6060


def debug_routes() -> dict[str, Route]:
    """The ``/debug/pprof/`` pages of ``NODEHOST_PROFILE=web``."""
    from nodehost.daemon.server import text

    return {
        "/debug/pprof/": lambda _q: text(200, "tasks  threads  profile?seconds=N\n"),
        "/debug/pprof/tasks": lambda _q: text(200, _tasks_page()),
        "/debug/pprof/threads": lambda _q: text(200, _threads_page()),
        "/debug/pprof/profile": _profile_page,
    }


def _tasks_page() -> str:
    import asyncio

    out = io.StringIO()
    for task in asyncio.all_tasks():
        out.write(f"{task.get_name()}: {task!r}\n")
        task.print_stack(file=out)
        out.write("\n")
    return out.getvalue()


def _threads_page() -> str:
    import traceback

    out = io.StringIO()
    for thread_id, frame in sys._current_frames().items():
        out.write(f"thread {thread_id}:\n{''.join(traceback.format_stack(frame))}\n")
    return out.getvalue()


async def _profile_page(query: Mapping[str, str]) -> Response:
    import asyncio
    import cProfile
    import pstats

    from nodehost.daemon.server import text

    seconds_text = query.get("seconds", "10")
    try:
        seconds = min(300.0, float(seconds_text))
    except ValueError:
        return text(400, f"seconds: not a number: {seconds_text!r}\n")
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        await asyncio.sleep(seconds)
    finally:
        profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(60)
    return text(200, out.getvalue())

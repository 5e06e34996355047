"""Logging: one structlog processor chain, configured once per process.

``configure_logging`` records the commands' ``-v``/``--log-format`` choice;
:func:`get_logger` imports and configures structlog when the first logger is
made, so commands that never log (``--help``, ``--dry-run``) never pay for it.

Output goes to stderr: a console renderer when stderr is a terminal, one JSON
object per line otherwise (``--log-format`` overrides).  Verbosity follows glog:
``-v 0..3`` logs at info, ``-v 4`` and above adds debug events.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Literal

LogFormat = Literal["auto", "console", "json"]

DEBUG_VERBOSITY = 4

_state: dict[str, Any] = {"configured": False, "verbosity": 0, "format": "auto"}


def verbosity() -> int:
    """The glog-style ``-v`` level in force."""
    return int(_state["verbosity"])


def resolve_format(fmt: LogFormat, stream: Any = None) -> Literal["console", "json"]:
    """``auto`` becomes ``console`` on a terminal and ``json`` otherwise."""
    if fmt != "auto":
        return fmt
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return "console" if isatty is not None and isatty() else "json"


def configure_logging(level: int = 0, fmt: LogFormat = "auto") -> None:
    """Use verbosity ``level`` and format ``fmt`` for this process's logs.

    Only records the choice: structlog is imported and configured when the
    first logger is made, so commands that never log never import it.  Safe to
    call more than once; the last call wins.
    """
    _state.update(verbosity=level, format=fmt, configured=False)


def _configure_structlog() -> None:
    import structlog

    level, fmt = int(_state["verbosity"]), _state["format"]
    min_level = logging.DEBUG if level >= DEBUG_VERBOSITY else logging.INFO
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if resolve_format(fmt) == "console":
        colors = "NO_COLOR" not in os.environ
        processors.append(structlog.dev.ConsoleRenderer(colors=colors))
    else:
        processors += [
            # Tracebacks as data, without local variables: they may hold key material.
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            ),
            structlog.processors.JSONRenderer(sort_keys=False),
        ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(min_level),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
    _state["configured"] = True


def _stderr_logger(*_args: Any) -> Any:
    """A logger writing to whatever ``sys.stderr`` is when the logger is made."""
    import structlog

    return structlog.PrintLogger(file=sys.stderr)


def get_logger(name: str = "nodehost", **context: Any) -> Any:
    """A structlog logger bound to ``context``; configures defaults on first use."""
    import structlog

    if not _state["configured"]:
        _configure_structlog()
    return structlog.get_logger(name).bind(**context)

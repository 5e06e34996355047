"""Logging: one structlog processor chain, configured once per process.

``configure_logging`` records the commands' ``-v``/``--log-format`` choice;
:func:`get_logger` imports and configures structlog when the first logger is
made, so commands that never log (``--help``, ``--dry-run``) never pay for it.

Output goes to stderr: a console renderer when stderr is a terminal, one JSON
object per line otherwise (``--log-format`` overrides).  Verbosity follows glog:
``-v 0..3`` logs at info, ``-v 4`` and above adds debug events.

Python ``logging`` records (asyncio's, libraries') are handed to structlog and
rendered like nodehost's own events (warnings and up; everything at ``-v 4``).
Messages for a person -- ``warning:`` lines, the error that ends a command --
go through :func:`print_message`: plain text, or one JSON object wherever the
command's events are JSON (``--log-format=json``; with ``auto`` when stderr is
no terminal, once the command wrote an event or ``start`` runs the node), so
that a stream holds one format.  When stderr is
journald's stream (``$JOURNAL_STREAM`` names its device and inode) every line
starts with the sd-daemon priority prefix (``<3>`` error, ``<4>`` warning,
``<6>`` info, ``<7>`` debug), so ``journalctl -p warning`` selects by level.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import sys
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # pragma: no cover
    import logging

LogFormat = Literal["auto", "console", "json"]

DEBUG_VERBOSITY = 4

#: From this verbosity on, every plugin hook call and its outcome are logged (debug events).
TRACE_VERBOSITY = 6

_state: dict[str, Any] = {"configured": False, "verbosity": 0, "format": "auto", "logs": False}

#: syslog priorities of the log levels (sd-daemon(3)).
PRIORITIES = {
    "critical": 2,
    "exception": 3,
    "error": 3,
    "warning": 4,
    "warn": 4,
    "info": 6,
    "msg": 6,
    "debug": 7,
}
#: The variable whose value selects JSON messages before the flags are parsed.
FORMAT_VARIABLE = "NODEHOST_LOG_FORMAT"


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


def messages_follow_events() -> None:
    """From now on this command's stream carries events: with ``auto``, messages take the
    events' format (JSON when stderr is no terminal), so the stream holds one format.
    ``start`` calls it once it knows it runs the node, before its first message."""
    _state["logs"] = True


def forget_logging() -> None:
    """Back to a command that has not configured logging (a new command in this process)."""
    _state.update(verbosity=0, format="auto", configured=False, logs=False)


def journal_stream(stream: Any = None) -> bool:
    """True when ``stream`` (stderr) is journald's: ``$JOURNAL_STREAM`` is its ``dev:inode``."""
    value = os.environ.get("JOURNAL_STREAM", "")
    stream = sys.stderr if stream is None else stream
    try:
        device, inode = (int(part) for part in value.split(":"))
        status = os.fstat(stream.fileno())
    except (ValueError, OSError, AttributeError, io.UnsupportedOperation):
        return False
    return (status.st_dev, status.st_ino) == (device, inode)


def with_priority(text: str, level: str) -> str:
    """``text`` with ``<N>`` (the level's syslog priority) before each of its lines."""
    prefix = f"<{PRIORITIES.get(level, 6)}>"
    return "\n".join(prefix + line for line in text.split("\n"))


def json_mode() -> bool:
    """True when messages must be JSON: ``--log-format=json`` (or ``NODEHOST_LOG_FORMAT``),
    or ``auto`` once messages follow events (:func:`messages_follow_events`, or an event
    was written) and stderr is no terminal -- where the events are JSON: one format per
    stream."""
    chosen = _state["format"]
    if chosen == "auto":
        chosen = os.environ.get(FORMAT_VARIABLE, "").strip().lower() or "auto"
    if chosen == "auto" and _state["logs"]:
        return resolve_format("auto") == "json"
    return bool(chosen == "json")


def print_message(text: str, level: str = "error", **fields: Any) -> None:
    """Write a message for a person to stderr (see the module docstring for its forms).

    In JSON mode the first line is the ``event`` and further lines are ``lines``.
    """
    if json_mode():
        import json
        from datetime import UTC, datetime

        first, *rest = text.split("\n")
        record: dict[str, Any] = {"event": first, "level": level, **fields}
        if rest:
            record["lines"] = rest
        record["timestamp"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        text = json.dumps(record)
    if journal_stream():
        text = with_priority(text, level)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def _note_event(_logger: Any, _method: str, event: Any) -> Any:
    """Record that this command wrote an event: its messages follow the events' format."""
    _state["logs"] = True
    return event


def _journal_prefix(_logger: Any, method: str, rendered: str) -> str:
    return with_priority(rendered, method)


@functools.cache
def _handler_class() -> type[logging.Handler]:
    """The handler class, made once logging is set up: a command that never logs (``config
    validate`` of a good file) does not import ``logging``."""
    import logging

    class _StructlogHandler(logging.Handler):
        """Hands Python ``logging`` records to structlog, with the logger's name."""

        def emit(self, record: logging.LogRecord) -> None:
            try:
                message = record.getMessage()
            except Exception:  # a library's bad format string: keep the raw message
                message = str(record.msg)
            method = record.levelname.lower()
            method = method if method in PRIORITIES else "info"
            getattr(get_logger("nodehost"), method)(message, logger=record.name)

    return _StructlogHandler


def _route_python_logging(level: int) -> None:
    import logging

    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if not isinstance(h, _handler_class())]
    root.addHandler(_handler_class()())
    root.setLevel(logging.DEBUG if level >= DEBUG_VERBOSITY else logging.WARNING)


def _configure_structlog() -> None:
    import logging

    import structlog

    level, fmt = int(_state["verbosity"]), _state["format"]
    min_level = logging.DEBUG if level >= DEBUG_VERBOSITY else logging.INFO
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _note_event,
    ]
    if resolve_format(fmt) == "console":
        colors = not os.environ.get("NO_COLOR")  # no-color.org: set and not empty
        processors.append(structlog.dev.ConsoleRenderer(colors=colors))
    else:
        processors += [
            # Tracebacks as data, without local variables: they may hold key material.
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            ),
            structlog.processors.JSONRenderer(sort_keys=False),
        ]
    if journal_stream():
        processors.append(_journal_prefix)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(min_level),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
    _state["configured"] = True
    _route_python_logging(level)


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

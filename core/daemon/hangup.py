"""SIGHUP before the host can act on it: remembered, never fatal.

SIGHUP's default action ends a process.  The console script calls :func:`defer`
for ``start`` before it imports click (and ``start`` itself calls it first
thing, for callers that skip the script), so a SIGHUP (``systemctl reload``)
that arrives while the plugins load, the config is resolved, during the
bootstrap wait (up to ``--bootstrap-timeout``) or while the host sets itself
up is only remembered; once the node's components are started the host asks
:func:`take` and, if one came, applies the config file as a SIGHUP then would
(``unchanged`` when the file is what the node started with).  Only the
interpreter's own start-up, before any of nodehost's code runs (tens of
milliseconds), is left to SIGHUP's default action.

The handler is a Python function, not ``SIG_IGN``: a program nodehost starts
gets SIGHUP's default action back when it execs.
"""

from __future__ import annotations

import signal
from types import FrameType

_received: list[int] = []


def _remember(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)


def defer() -> None:
    """Remember SIGHUPs from now on instead of dying of them (until the host's handler)."""
    signal.signal(signal.SIGHUP, _remember)


def take() -> bool:
    """Whether a SIGHUP came since :func:`defer` (and forget it)."""
    came = bool(_received)
    _received.clear()
    return came

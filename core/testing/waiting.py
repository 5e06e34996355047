"""Waiting on an event in a test: poll until it happened, fail the test naming it if it never does.

The timeout only bounds a failing test; nothing is asserted about the time
taken (no timed assertions: wait on the event).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Generous: only ever a limit for waiting, never an assertion about speed.
WAIT = 30.0
POLL = 0.02


def wait_for(predicate: Callable[[], T], timeout: float = WAIT, what: str = "it") -> T:
    """``predicate()``'s first truthy value, polled every 20 ms; after ``timeout`` seconds
    the test fails (``pytest.fail``) with ``timed out after Ns waiting for <what>``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            import pytest

            pytest.fail(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(POLL)

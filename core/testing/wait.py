"""Waiting on an event in a test: one way, for nodehost's tests and plugin authors'.

A test never asserts how long something took; it waits for the event it is
about, and the timeout only bounds a test that is failing anyway::

    from nodehost.testing.wait import wait_for

    pid = wait_for(lambda: run.component("kubelet").get("pid"), "the kubelet's pid")
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: How long to wait before failing: generous, since it only ever bounds a failing test.
WAIT = 30.0


def wait_for(predicate: Callable[[], T], what: str = "the condition", timeout: float = WAIT) -> T:
    """``predicate()``'s first truthy value, asked every 20 ms.

    Raises :class:`AssertionError` naming ``what`` once ``timeout`` seconds have
    passed without one (``predicate`` is asked one last time at the deadline).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def wait_until(
    condition: Callable[[], Any], what: str = "the condition", timeout: float = WAIT
) -> None:
    """:func:`wait_for` when the value does not matter."""
    wait_for(condition, what, timeout)

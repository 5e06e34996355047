"""Helpers for the CLI tests that run a node (a unique module name: test folders are plain
folders; ``conftest`` puts this one on ``sys.path``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

WAIT = 30.0  # only ever a limit for waiting, never an assertion about speed


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    """``predicate()``'s first truthy value, polled every 50 ms; fail naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")

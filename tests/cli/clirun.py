"""Helpers for the CLI tests that run a node (a unique module name: test folders are plain
folders; ``conftest`` puts this one on ``sys.path``)."""

from __future__ import annotations

from nodehost.testing.wait import wait_for as wait_for

WAIT = 30.0  # only ever a limit for waiting, never an assertion about speed

"""Asking systemd to load, enable, start, stop and disable the unit.

systemd manages services only where it is the init system, which is what
``sd_booted()`` tests: ``/run/systemd/system`` exists (:func:`systemd_running`).
``systemctl enable`` and ``disable`` also work where it is not (they only
change symbolic links under ``/etc/systemd/system``); everything else needs
the running manager.
"""

from __future__ import annotations

import os
import subprocess

from nodehost.binaries import which

SYSTEMD_RUNTIME = "/run/systemd/system"
#: How long one ``systemctl`` call may take (``stop`` waits for the unit's own stop timeout).
SYSTEMCTL_TIMEOUT = 180.0


def systemd_running() -> bool:
    """systemd is the init system here (``sd_booted()``)."""
    return os.path.isdir(SYSTEMD_RUNTIME)


def init_name() -> str:
    """The name of PID 1, for messages (``?`` when it cannot be read)."""
    try:
        with open("/proc/1/comm", encoding="utf-8") as stream:
            return stream.read().strip() or "?"
    except OSError:
        return "?"


def systemctl(*arguments: str) -> str | None:
    """Run ``systemctl arguments``: ``None`` on success, else one line saying what failed."""
    program = which("systemctl")
    command = "systemctl " + " ".join(arguments)
    if program is None:
        return f"{command}: systemctl is not installed"
    try:
        done = subprocess.run(
            [program, *arguments],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SYSTEMCTL_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"{command}: no answer within {SYSTEMCTL_TIMEOUT:.0f}s"
    if done.returncode == 0:
        return None
    detail = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
    return f"{command} failed: {detail}"

"""A program's version, as it prints it: ``kubelet --version`` -> ``Kubernetes v1.31.2``."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence

TIMEOUT = 10.0
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


def program_version(path: str, arguments: Sequence[str] = ("--version",)) -> str:
    """The first line ``path ARGUMENTS`` prints; ``OSError`` if it cannot run or fails."""
    try:
        done = subprocess.run(
            [path, *arguments],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as error:
        raise OSError(f"{path} {' '.join(arguments)} did not answer in {TIMEOUT:.0f}s") from error
    text = (done.stdout or done.stderr).strip()
    if done.returncode != 0 or not text:
        raise OSError(f"{path} {' '.join(arguments)} exited {done.returncode}: {text[:200]}")
    return text.splitlines()[0].strip()


def minor_version(text: str) -> tuple[int, int] | None:
    """``(major, minor)`` of the first ``v1.31.2``-like number in ``text``, None if none."""
    found = _VERSION.search(text)
    return (int(found.group(1)), int(found.group(2))) if found else None

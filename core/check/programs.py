"""A program's version, as it prints it: ``kubelet --version`` -> ``Kubernetes v1.31.2``."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence

TIMEOUT = 10.0
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


def program_version(
    path: str, arguments: Sequence[str] = ("--version",), *, any_exit: bool = False
) -> str:
    """The first non-empty line ``path ARGUMENTS`` prints (stdout, else stderr; at most 200
    characters), run without ``CNI_*`` variables.

    Raises ``OSError`` when it cannot run, does not answer within :data:`TIMEOUT`,
    prints nothing, or exits non-zero -- unless ``any_exit`` (CNI plugins print their
    version and exit 1).
    """
    command = f"{path} {' '.join(arguments)}"
    environment = {key: value for key, value in os.environ.items() if not key.startswith("CNI_")}
    try:
        done = subprocess.run(
            [path, *arguments],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
            env=environment,
        )
    except subprocess.TimeoutExpired as error:
        raise OSError(f"{command} did not answer in {TIMEOUT:.0f}s") from error
    lines = [line.strip() for line in f"{done.stdout}\n{done.stderr}".splitlines() if line.strip()]
    if not lines:
        raise OSError(f"{command} printed nothing (exit {done.returncode})")
    if done.returncode != 0 and not any_exit:
        raise OSError(f"{command} exited {done.returncode}: {lines[0][:200]}")
    return lines[0][:200]


def minor_version(text: str) -> tuple[int, int] | None:
    """``(major, minor)`` of the first ``v1.31.2``-like number in ``text``, None if none."""
    found = _VERSION.search(text)
    return (int(found.group(1)), int(found.group(2))) if found else None

"""Named network namespaces through iproute2 (``ip netns``), as runtimes create pod sandboxes.

A namespace ``NAME`` lives at ``/run/netns/NAME`` (``/var/run/netns`` on most
systems is the same folder); that path is what ``CNI_NETNS`` gets.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from nodehost.errors import RuntimeFailure

NETNS_DIR = "/var/run/netns"


def unique_name(prefix: str) -> str:
    """``<prefix>-<8 hex digits>``: a namespace (or link) name nobody else uses."""
    import secrets

    return f"{prefix}-{secrets.token_hex(4)}"


def path_of(name: str) -> str:
    """The bind-mount path of namespace ``name`` (``CNI_NETNS``)."""
    return os.path.join(NETNS_DIR, name)


def run_ip(arguments: Sequence[str], what: str, *, timeout: float = 30.0) -> str:
    """Run ``ip ARGUMENTS``; its stdout, or :class:`RuntimeFailure` "cannot <what>: <stderr>"."""
    import subprocess

    try:
        done = subprocess.run(
            ["ip", *arguments], capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError:
        raise RuntimeFailure(
            f"cannot {what}: the 'ip' command (iproute2) is not installed"
        ) from None
    if done.returncode != 0:
        raise RuntimeFailure(f"cannot {what}: {done.stderr.strip() or f'exit {done.returncode}'}")
    return done.stdout


def create(name: str) -> str:
    """Create namespace ``name``; its path.  :class:`RuntimeFailure` if that fails."""
    run_ip(["netns", "add", name], f"create network namespace {name}")
    return path_of(name)


def delete(name: str) -> None:
    """Delete namespace ``name`` (its interfaces go with it); nothing if it does not exist."""
    if exists(name):
        run_ip(["netns", "delete", name], f"delete network namespace {name}")


def exists(name: str) -> bool:
    return os.path.exists(path_of(name))


def names() -> set[str]:
    """Every named namespace."""
    try:
        return set(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return set()


def exec_argv(name: str, argv: Sequence[str]) -> list[str]:
    """The command line that runs ``argv`` inside namespace ``name``."""
    return ["ip", "netns", "exec", name, *argv]

"""The floors nodehost's host is measured against: launchers that do the least that works.

    python bench/launcher.py ready PLAN.json
    python bench/launcher.py asyncio PLAN.json
    python bench/launcher.py popen PLAN.json
    python bench/launcher.py ready PLAN.json --import click,yaml,...

``ready`` is the baseline of ``nodehost start --exit-on-ready`` (bench/cli.py):
it reads the plan ``nodehost start --dry-run --json`` prints, starts every
component's ``argv`` (the files they read must exist: run ``nodehost start``
once first), polls each ``GET`` readiness URL every :data:`POLL` seconds until
it answers 200, then sends SIGTERM to all and waits for them -- no config, no
validation, no logs, no identity check.  With ``--import MODULES`` it first
imports those modules (comma-separated) and does nothing with them: the floor
of a host built on those libraries.

``asyncio`` and ``popen`` are the floors of bench/supervisor.py: they start
``{"components": [{"argv": [...]}, ...]}`` (planhost's plan format), restart
a child that exits, and on SIGTERM stop every child (SIGTERM, then wait) and
exit.  ``asyncio`` watches each child through a pidfd in an asyncio loop
(``loop.add_reader``), as nodehost does; ``popen`` is plain
``subprocess.Popen`` and ``os.wait()``.  Both send ``READY=1`` to
``$NOTIFY_SOCKET`` once every child is started.

Standard library only, so the floor is the interpreter plus the work.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

POLL = 0.005


def notify_ready() -> None:
    path = os.environ.get("NOTIFY_SOCKET")
    if path:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(b"READY=1", path)


# --- ready: start, poll healthz, stop ----------------------------------------------------


def healthz_ok(url: str) -> bool:
    """One ``GET url``: True on a 200 answer, False on a refused connection or another status."""
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port or 80), timeout=1) as conn:
            request = f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            conn.sendall(f"{request}Connection: close\r\n\r\n".encode())
            return conn.recv(64).split(b" ", 2)[1:2] == [b"200"]
    except OSError:
        return False


def ready(plan_file: str) -> int:
    with open(plan_file) as file:
        plan = json.load(file)
    active = [c for c in plan["components"] if not c.get("inactive")]
    children = [
        subprocess.Popen(c["argv"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for c in active
    ]
    waiting = [c["ready"].removeprefix("GET ") for c in active if c["ready"].startswith("GET ")]
    while waiting:
        waiting = [url for url in waiting if not healthz_ok(url)]
        if any(child.poll() is not None for child in children):
            sys.exit(f"a component exited before it was ready: {[c.args for c in children]}")
        if waiting:
            time.sleep(POLL)
    for child in children:
        child.send_signal(signal.SIGTERM)
    for child in children:
        child.wait()
    return 0


# --- supervise: start, restart, stop on SIGTERM --------------------------------------


def argvs(plan_file: str) -> list[list[str]]:
    with open(plan_file) as file:
        return [c["argv"] for c in json.load(file)["components"]]


def supervise_asyncio(plan_file: str) -> int:
    import asyncio

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stopping, stopped = asyncio.Event(), asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stopping.set)
        children: dict[int, tuple[subprocess.Popen[bytes], int]] = {}

        def start(index: int, argv: list[str]) -> None:
            child = subprocess.Popen(argv)
            fd = os.pidfd_open(child.pid)
            children[index] = (child, fd)
            loop.add_reader(fd, exited, index, argv)

        def exited(index: int, argv: list[str]) -> None:
            child, fd = children.pop(index)
            loop.remove_reader(fd)
            os.close(fd)
            child.wait()
            if not stopping.is_set():
                start(index, argv)
            elif not children:
                stopped.set()

        for index, argv in enumerate(argvs(plan_file)):
            start(index, argv)
        notify_ready()
        await stopping.wait()
        for child, _ in children.values():
            child.send_signal(signal.SIGTERM)
        if children:
            await stopped.wait()

    asyncio.run(main())
    return 0


class Stop(Exception):
    """SIGTERM arrived (raised from the handler so that ``os.wait()`` returns)."""


def supervise_popen(plan_file: str) -> int:
    def on_term(signum: int, frame: object) -> None:
        raise Stop

    signal.signal(signal.SIGTERM, on_term)
    children = {subprocess.Popen(argv).pid: argv for argv in argvs(plan_file)}
    notify_ready()
    try:
        while True:
            pid, _ = os.wait()
            argv = children.pop(pid)
            children[subprocess.Popen(argv).pid] = argv
    except Stop:
        pass
    for pid in children:
        os.kill(pid, signal.SIGTERM)
    for pid in children:
        os.waitpid(pid, 0)
    return 0


MODES = {"ready": ready, "asyncio": supervise_asyncio, "popen": supervise_popen}

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[2:3] == ["--import"] and len(args) == 4:
        for module in args.pop().split(","):
            __import__(module)
        args.pop()
    if len(args) != 2 or args[0] not in MODES:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(MODES)}}} PLAN.json [--import MODULES]")
    sys.exit(MODES[args[0]](args[1]))

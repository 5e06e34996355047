"""The generic stand-in program: a well-behaved long-running child that can be told to misbehave.

Stand-ins replace real node programs (kubelet, kube-proxy, ...) in tests, in a
user's CI and in a plugin author's experiments.  This module is the behaviour
engine they share; a component's stand-in (beside its plugin, built on
:mod:`nodehost.testing.fakeprogram`) parses its program's flags and then
calls :func:`run_standin`.

What a stand-in does by default
-------------------------------
* prints ``<program>: started pid=<pid>`` on stdout;
* serves ``GET <healthz_path>`` (``/healthz``) on the given ``host:port`` over
  plain HTTP (``200 ok`` when ready, ``503 not ready`` before; any other path
  is ``404``) and prints ``<program>: serving /healthz on <host>:<port>``
  (port ``0`` picks a free port and the line names it);
* on SIGTERM or SIGINT prints ``<program>: stopping on <signal>`` and exits 0;
* does no periodic work while idle.

Behaviours (environment variables)
----------------------------------
Each variable is read as ``NODEHOST_STANDIN_<PROGRAM>_<NAME>`` first (program
upper-cased, ``-`` and ``.`` turned into ``_``: ``NODEHOST_STANDIN_KUBELET_CRASH_AFTER``)
and then as ``NODEHOST_STANDIN_<NAME>``, so one environment can steer one
stand-in among several.  A malformed value is one line on stderr and exit 2.

``READY_DELAY=SECONDS``
    ``/healthz`` answers 503 until SECONDS after start.
``CRASH_AFTER=SECONDS[:CODE]``
    print ``<program>: crashing with exit code CODE`` on stderr and exit CODE
    (default 1) SECONDS after start.
``STARTS_FILE=PATH``
    append ``<pid>\\n`` to PATH at each start (counts starts across restarts).
``CRASH_TIMES=N``
    with ``STARTS_FILE``: crash (as ``CRASH_AFTER`` says, default ``0``) only in
    the first N starts, then run normally -- "crash, then recover".
``IGNORE_SIGTERM=1``
    ignore SIGTERM (only SIGKILL ends it; SIGINT still stops it).
``HANG_ON_STOP=SECONDS``
    on SIGTERM/SIGINT, print ``<program>: hanging on stop`` and wait SECONDS
    before exiting 0.
``FORK_GRANDCHILD=1|setsid``
    fork a grandchild at start that ignores SIGTERM, SIGINT and SIGHUP and
    sleeps until killed; it keeps stdout/stderr open.  ``setsid`` puts it in a
    new session, so a kill of the stand-in's process group misses it.
``GRANDCHILD_PID_FILE=PATH``
    write the grandchild's pid to PATH.
``SIGNAL_FILE=PATH``
    on SIGHUP, SIGUSR1 or SIGUSR2, append ``<SIGNAL> <pid>\n`` to PATH and
    keep running (a reload signal that was received).
``HEALTHZ_PORT=PORT``
    serve ``/healthz`` on PORT instead of the port the program's flags and
    config give (the host stays theirs); ``0`` lets the kernel pick one, which
    the ``serving`` line names.  For tests that run stand-ins side by side: a
    port picked beforehand may be taken by the time the stand-in binds it (or
    be free on one family only, when the stand-in binds both); unset, the
    stand-in keeps the real program's port and defaults.

API
---
:func:`run_standin` runs the behaviours and never returns;
:class:`Behaviour` is the parsed set (``Behaviour.from_environ``) should a
caller want to build or adjust one; :func:`main` is the ``nodehost-standin``
console script (``python -m nodehost.testing.standin --help``).

Stdlib only, so a stand-in starts fast.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NoReturn

ENV_PREFIX = "NODEHOST_STANDIN_"
EXIT_BAD_BEHAVIOUR = 2


class BehaviourError(ValueError):
    """A behaviour variable has a malformed value; the message names the variable."""


@dataclass(frozen=True)
class Behaviour:
    """The behaviours of one stand-in run (see the module docstring)."""

    ready_delay: float = 0.0
    crash_after: float | None = None
    crash_code: int = 1
    crash_times: int | None = None
    starts_file: str | None = None
    ignore_sigterm: bool = False
    hang_on_stop: float = 0.0
    fork_grandchild: str | None = None  # None, "1" or "setsid"
    grandchild_pid_file: str | None = None
    signal_file: str | None = None
    healthz_port: int | None = None

    @classmethod
    def from_environ(cls, program: str, environ: Mapping[str, str] | None = None) -> Behaviour:
        """Parse the behaviour variables for ``program``; raise :class:`BehaviourError`."""
        read = _EnvReader(program, os.environ if environ is None else environ)
        crash_after, crash_code = read.crash_after()
        fork = read.text("FORK_GRANDCHILD")
        if fork not in (None, "", "0", "1", "setsid"):
            name = read.name("FORK_GRANDCHILD")
            raise BehaviourError(f"{name}: expected 1 or setsid, got {fork!r}")
        crash_times = read.integer("CRASH_TIMES")
        starts_file = read.text("STARTS_FILE") or None
        if crash_times is not None and starts_file is None:
            raise BehaviourError(f"{read.name('CRASH_TIMES')}: needs {ENV_PREFIX}STARTS_FILE")
        if crash_times is not None and crash_after is None:
            crash_after = 0.0
        return cls(
            ready_delay=read.seconds("READY_DELAY") or 0.0,
            crash_after=crash_after,
            crash_code=crash_code,
            crash_times=crash_times,
            starts_file=starts_file,
            ignore_sigterm=read.flag("IGNORE_SIGTERM"),
            hang_on_stop=read.seconds("HANG_ON_STOP") or 0.0,
            fork_grandchild=fork if fork in ("1", "setsid") else None,
            grandchild_pid_file=read.text("GRANDCHILD_PID_FILE") or None,
            signal_file=read.text("SIGNAL_FILE") or None,
            healthz_port=read.port("HEALTHZ_PORT"),
        )


class _EnvReader:
    """Reads ``NODEHOST_STANDIN_[<PROGRAM>_]<NAME>`` values, program-specific first."""

    def __init__(self, program: str, environ: Mapping[str, str]) -> None:
        self.program_prefix = ENV_PREFIX + program.upper().replace("-", "_").replace(".", "_") + "_"
        self.environ = environ

    def name(self, key: str) -> str:
        specific = self.program_prefix + key
        return specific if specific in self.environ else ENV_PREFIX + key

    def text(self, key: str) -> str | None:
        return self.environ.get(self.name(key))

    def flag(self, key: str) -> bool:
        return (self.text(key) or "").strip().lower() in ("1", "true", "yes")

    def seconds(self, key: str) -> float | None:
        value = self.text(key)
        if value is None or value == "":
            return None
        try:
            seconds = float(value)
        except ValueError:
            raise BehaviourError(f"{self.name(key)}: expected seconds, got {value!r}") from None
        if seconds < 0:
            raise BehaviourError(f"{self.name(key)}: must not be negative, got {value!r}")
        return seconds

    def integer(self, key: str) -> int | None:
        value = self.text(key)
        if value is None or value == "":
            return None
        try:
            return int(value)
        except ValueError:
            raise BehaviourError(f"{self.name(key)}: expected an integer, got {value!r}") from None

    def port(self, key: str) -> int | None:
        port = self.integer(key)
        if port is not None and not 0 <= port <= 65535:
            raise BehaviourError(f"{self.name(key)}: expected a port (0-65535), got {port}")
        return port

    def crash_after(self) -> tuple[float | None, int]:
        value = self.text("CRASH_AFTER")
        if value is None or value == "":
            return None, 1
        seconds_text, _, code_text = value.partition(":")
        try:
            seconds = float(seconds_text)
            code = int(code_text) if code_text else 1
        except ValueError:
            raise BehaviourError(
                f"{self.name('CRASH_AFTER')}: expected SECONDS[:CODE], got {value!r}"
            ) from None
        return seconds, code


# --- the run --------------------------------------------------------------------------


def run_standin(
    program: str,
    healthz: tuple[str, int] | None,
    *,
    healthz_path: str = "/healthz",
    behaviour: Behaviour | None = None,
    content: Callable[[], bytes] | None = None,
    content_type: str = "text/plain",
) -> NoReturn:
    """Run a stand-in named ``program`` until it is stopped or crashes, then exit.

    ``healthz`` is the ``(host, port)`` to serve ``healthz_path`` on, or None
    for no server.  Once ready, ``healthz_path`` answers ``ok``, or what
    ``content()`` returns (as ``content_type``) when given: a stand-in's
    metrics page, say.  ``behaviour`` defaults to :meth:`Behaviour.from_environ`
    for ``program``; a malformed variable exits 2 with one line on stderr.
    Exit codes: 0 after SIGTERM/SIGINT, the crash code after ``CRASH_AFTER``,
    1 if the healthz address cannot be bound.
    """
    if behaviour is None:
        try:
            behaviour = Behaviour.from_environ(program)
        except BehaviourError as error:
            _fail(program, str(error), EXIT_BAD_BEHAVIOUR)
    started = time.monotonic()
    start_number = _record_start(behaviour.starts_file)
    if behaviour.fork_grandchild:
        _fork_grandchild(behaviour.fork_grandchild == "setsid", behaviour.grandchild_pid_file)
    stop = threading.Event()
    _install_stop_handlers(program, stop, behaviour.ignore_sigterm)
    if behaviour.signal_file:
        _record_signals(program, behaviour.signal_file)
    _say(program, f"started pid={os.getpid()}")
    if healthz is not None:
        if behaviour.healthz_port is not None:
            healthz = (healthz[0], behaviour.healthz_port)
        ready_at = started + behaviour.ready_delay
        _serve_healthz(program, healthz, healthz_path, ready_at, content, content_type)
    crash_at = _crash_deadline(behaviour, started, start_number)
    while not stop.wait(None if crash_at is None else max(0.0, crash_at - time.monotonic())):
        if crash_at is not None and time.monotonic() >= crash_at:
            _say(program, f"crashing with exit code {behaviour.crash_code}", stream=sys.stderr)
            os._exit(behaviour.crash_code)
    if behaviour.hang_on_stop:
        _say(program, "hanging on stop")
        time.sleep(behaviour.hang_on_stop)
    sys.stdout.flush()
    os._exit(0)


def _say(program: str, message: str, stream=None) -> None:
    print(f"{program}: {message}", file=stream or sys.stdout, flush=True)


def _fail(program: str, message: str, code: int) -> NoReturn:
    _say(program, message, stream=sys.stderr)
    raise SystemExit(code)


def _record_start(starts_file: str | None) -> int:
    """Append our pid to ``starts_file``; return this start's number (1-based), 1 if none."""
    if starts_file is None:
        return 1
    fd = os.open(starts_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)
    with open(starts_file, encoding="ascii") as lines:
        return sum(1 for _ in lines)


def _crash_deadline(behaviour: Behaviour, started: float, start_number: int) -> float | None:
    if behaviour.crash_after is None:
        return None
    if behaviour.crash_times is not None and start_number > behaviour.crash_times:
        return None
    return started + behaviour.crash_after


def _install_stop_handlers(program: str, stop: threading.Event, ignore_sigterm: bool) -> None:
    def on_signal(signum: int, _frame: object) -> None:
        _say(program, f"stopping on {signal.Signals(signum).name}")
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, signal.SIG_IGN if ignore_sigterm else on_signal)


def _record_signals(program: str, path: str) -> None:
    """Append each reload signal received to ``path`` (see SIGNAL_FILE)."""

    def on_signal(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        with open(path, "a", encoding="ascii") as handle:
            handle.write(f"{name} {os.getpid()}\n")
        _say(program, f"received {name}")

    for signum in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, on_signal)


def _fork_grandchild(new_session: bool, pid_file: str | None) -> None:
    """Fork a grandchild that survives everything but SIGKILL (see FORK_GRANDCHILD)."""
    pid = os.fork()
    if pid:
        if pid_file:  # atomically: a test polling for the file never reads it half-written
            from pathlib import Path

            from nodehost.pki.atomic import write_atomic

            write_atomic(Path(pid_file), f"{pid}\n".encode(), 0o644)
        return
    try:
        if new_session:
            os.setsid()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        while True:
            time.sleep(3600)
    finally:
        os._exit(0)


def _serve_healthz(
    program: str,
    address: tuple[str, int],
    path: str,
    ready_at: float,
    content: Callable[[], bytes] | None = None,
    content_type: str = "text/plain",
) -> None:
    """Start the /healthz server in a daemon thread; exit 1 if the address cannot be bound."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != path:
                self._answer(404, b"not found\n")
            elif time.monotonic() >= ready_at:
                self._answer(200, content() if content else b"ok", content_type)
            else:
                self._answer(503, b"not ready\n")

        def _answer(self, code: int, body: bytes, kind: str = "text/plain") -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Stay quiet: probes would flood the log."""

    from nodehost.config.hostport import join_host_port

    try:
        server = listening_server(address, Handler)
    except OSError as error:
        where = join_host_port(*address)
        _fail(program, f"cannot listen on {where}: {error.strerror or error}", 1)
    server.daemon_threads = True
    host, port = str(server.server_address[0]), server.server_address[1]
    _say(program, f"serving {path} on {join_host_port(host, port)}")

    # A long poll interval: the server is never shut down, so it need not wake up.
    thread = threading.Thread(target=server.serve_forever, args=(3600,), daemon=True)
    thread.start()


def listening_server(
    address: tuple[str, int], handler: type[BaseHTTPRequestHandler]
) -> ThreadingHTTPServer:
    """An HTTP server bound to ``address`` as the real programs bind: an IPv6 literal
    (``::1``) on IPv6, ``::`` and an empty host on both families (dual stack; an
    empty host falls back to IPv4 alone where the kernel has no IPv6), anything
    else on IPv4.  OSError when it cannot be bound."""
    import socket

    host, port = address
    if host not in ("", "::") and ":" not in host:
        return ThreadingHTTPServer(address, handler)

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6

        def server_bind(self) -> None:
            if host in ("", "::"):
                self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            super().server_bind()

    try:
        return Server((host or "::", port), handler)
    except OSError:
        if host != "":
            raise
        return ThreadingHTTPServer(address, handler)


# --- the console script -------------------------------------------------------------------


def parse_address(text: str) -> tuple[str, int]:
    """Parse ``HOST:PORT`` (``[v6]:PORT`` too; port 0 picks one); ValueError naming the problem."""
    from nodehost.config.hostport import split_host_port

    try:
        host, port_text = split_host_port(text)
    except ValueError:
        raise ValueError(f"expected HOST:PORT, got {text!r}") from None
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port_text)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """``nodehost-standin [--program NAME] [--healthz HOST:PORT] [--healthz-path PATH]``."""
    parser = argparse.ArgumentParser(
        prog="nodehost-standin",
        description="A stand-in long-running program; behaviours come from "
        "NODEHOST_STANDIN_* environment variables (see the nodehost.testing.standin docs).",
    )
    parser.add_argument("--program", default="standin", help="name used in output and variables")
    parser.add_argument("--healthz", metavar="HOST:PORT", help="serve /healthz on this address")
    parser.add_argument("--healthz-path", default="/healthz", metavar="PATH")
    args = parser.parse_args(argv)
    healthz = None
    if args.healthz:
        try:
            healthz = parse_address(args.healthz)
        except ValueError as error:
            parser.error(f"--healthz: {error}")
    run_standin(args.program, healthz, healthz_path=args.healthz_path)


if __name__ == "__main__":
    main()

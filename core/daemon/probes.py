"""Readiness probes: one attempt of each :mod:`nodehost.component` probe, and the polling schedule.

:func:`attempt` makes one attempt and says why it failed; :func:`poll_delays`
is the schedule between attempts -- every :data:`STARTING_POLL_CAP` at most
for the first :data:`STARTING_WINDOW` seconds after start (a component that
starts quickly is noticed within a few ms of answering), then doubling up to
the probe's ``interval``.  :func:`pause` waits out one delay, or less when the
component is *nudged* -- it printed a line, as programs do when they start
listening -- though attempts stay :data:`FIRST_POLL_DELAY` apart.  A nudge only
brings the next attempt forward: what it finds decides, as always.  Nothing
polls once a component is ready.

Given an :class:`~nodehost.daemon.ownership.Owner`, a socket probe (TCP,
HTTP(S), unix, gRPC health) passes only when the listening socket it reached
belongs to the owner's process tree (:mod:`nodehost.daemon.ownership`):
an answer from any other process is a failed attempt that names the holder,
and no request is sent to it.  Without an owner (waiting for a socket that
something else provides) any listener counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from typing import NamedTuple

from nodehost.component import (
    CriProbe,
    FileProbe,
    GrpcHealthProbe,
    HttpProbe,
    Probe,
    TcpProbe,
    UnixProbe,
)
from nodehost.daemon.ownership import Owner, Ownership, tcp_ownership, unix_ownership

FIRST_POLL_DELAY = 0.005
STARTING_POLL_CAP = 0.02
STARTING_WINDOW = 2.0


class Attempt(NamedTuple):
    """One probe attempt: passed or not, why, and the foreign listener it reached (if so)."""

    passed: bool
    detail: str
    foreign: Ownership | None = None


class NotOwned(Exception):
    """The probe reached a listener that is not the owner's."""

    def __init__(self, ownership: Ownership) -> None:
        super().__init__(ownership.describe())
        self.ownership = ownership


def poll_delays(probe: Probe) -> Iterator[float]:
    """Delays between attempts: 5 ms doubling to 20 ms, held there for the first
    :data:`STARTING_WINDOW` seconds of delays, then doubling up to the probe's ``interval``.

    (The attempts' own time is not counted: the window is at least that long.)
    """
    delay, waited = FIRST_POLL_DELAY, 0.0
    while waited < STARTING_WINDOW:
        step = min(delay, STARTING_POLL_CAP, probe.interval)
        yield step
        waited += step
        delay *= 2
    delay = min(STARTING_POLL_CAP, probe.interval)
    while True:
        delay = min(delay * 2, probe.interval)
        yield delay


async def pause(delay: float, nudged: asyncio.Event, since: float) -> None:
    """Wait ``delay`` seconds, or until ``nudged`` is set -- but then still until
    :data:`FIRST_POLL_DELAY` after ``since``, the loop time the last attempt began.

    The caller clears ``nudged`` before each attempt: a nudge that came during the
    attempt ends the pause as one that comes after it does.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + delay
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout_at(deadline):
            await nudged.wait()
    rest = min(since + FIRST_POLL_DELAY, deadline) - loop.time()
    if rest > 0:
        await asyncio.sleep(rest)


async def check(probe: Probe, owner: Owner | None = None) -> tuple[bool, str]:
    """One attempt of ``probe``: ``(passed, detail)``; see :func:`attempt`."""
    passed, detail, _ = await attempt(probe, owner)
    return passed, detail


async def attempt(probe: Probe, owner: Owner | None = None) -> Attempt:
    """One attempt of ``probe`` for ``owner``; never raises for a failed attempt."""
    try:
        # In this task, not a task of its own (asyncio.wait_for on 3.11): a stop that
        # cancels the prober while an attempt is being set up must not leave it waiting.
        async with asyncio.timeout(probe.timeout):
            passed, detail = await _attempt(probe, owner)
    except NotOwned as refused:
        ownership = await asyncio.to_thread(refused.ownership.named)
        return Attempt(False, ownership.describe(), ownership)
    except TimeoutError:
        return Attempt(False, f"timed out after {probe.timeout:g}s")
    except OSError as error:
        return Attempt(False, error.strerror or str(error))
    except ValueError as error:
        return Attempt(False, str(error))
    return Attempt(passed, detail)


async def _attempt(probe: Probe, owner: Owner | None) -> tuple[bool, str]:
    if isinstance(probe, HttpProbe):
        return await _http(probe, owner)
    if isinstance(probe, TcpProbe):
        _, writer = await asyncio.open_connection(probe.host, probe.port)
        await _close_after(writer, _check_peer, writer, owner)
        return True, "accepted"
    if isinstance(probe, UnixProbe):
        _, writer = await asyncio.open_unix_connection(probe.path)
        await _close_after(writer, _check_unix, probe.path, owner)
        return True, "accepted"
    if isinstance(probe, GrpcHealthProbe):
        return await _grpc_health(probe, owner)
    if isinstance(probe, CriProbe):
        return await _cri(probe, owner)
    if isinstance(probe, FileProbe):
        return (True, "exists") if os.path.exists(probe.path) else (False, "does not exist")
    return True, "started"


async def _close_after(writer: asyncio.StreamWriter, check, *args) -> None:
    """Run ``check(*args)``, then close ``writer`` whatever it raised."""
    try:
        check(*args)
    finally:
        writer.close()
        await writer.wait_closed()


def _check_peer(writer: asyncio.StreamWriter, owner: Owner | None) -> None:
    """Raise :class:`NotOwned` unless the TCP listener ``writer`` reached is ``owner``'s."""
    if owner is None:
        return
    ip, port = writer.get_extra_info("peername")[:2]
    ownership = tcp_ownership(ip, port, owner)
    if not ownership.owned:
        raise NotOwned(ownership)


def _check_unix(path: str, owner: Owner | None) -> None:
    """Raise :class:`NotOwned` unless the socket listening on ``path`` is ``owner``'s."""
    if owner is None:
        return
    ownership = unix_ownership(path, owner)
    if not ownership.owned:
        raise NotOwned(ownership)


async def _grpc_health(probe: GrpcHealthProbe, owner: Owner | None) -> tuple[bool, str]:
    from nodehost.daemon.grpchealth import check_health

    status = await check_health(probe.path, probe.service)
    if status == "SERVING":
        _check_unix(probe.path, owner)
    return status == "SERVING", status


async def _cri(probe: CriProbe, owner: Owner | None) -> tuple[bool, str]:
    from nodehost.daemon.cri import RUNTIME_READY, runtime_status, socket_path

    status = await runtime_status(probe.endpoint, probe.timeout, not_cri_hint=probe.not_cri_hint)
    if status.runtime_ready:
        _check_unix(socket_path(probe.endpoint), owner)
        return True, status.summary()
    return False, f"{status.summary()}: a kubelet runs no pod until {RUNTIME_READY} is true"


async def _http(probe: HttpProbe, owner: Owner | None) -> tuple[bool, str]:
    from urllib.parse import urlsplit

    url = urlsplit(probe.url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"not an http(s) URL: {probe.url!r}")
    context = _tls_context(probe.insecure) if url.scheme == "https" else None
    host, port = _tcp_target(probe)
    reader, writer = await asyncio.open_connection(host, port, ssl=context)
    try:
        _check_peer(writer, owner)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        host = url.netloc.rpartition("@")[2]
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: nodehost-probe\r\n"
            "Accept: */*\r\nConnection: close\r\n\r\n".encode()
        )
        status_line = await reader.readline()
    finally:
        writer.close()
    parts = status_line.decode(errors="replace").split(None, 2)
    if len(parts) < 2 or not parts[1].isdigit():
        return False, "no HTTP answer"
    status = int(parts[1])
    return 200 <= status < 300, f"HTTP {status}"


def foreign_listener(probe: Probe, owner: Owner) -> Ownership | None:
    """The listener on ``probe``'s address when it is not ``owner``'s; no connection is made.

    For failure reports (blocking: it may resolve a host name); None when the
    probe has no socket address or nothing foreign listens there.
    """
    if isinstance(probe, (UnixProbe, GrpcHealthProbe)):
        verdicts = [unix_ownership(probe.path, owner)]
    elif isinstance(probe, CriProbe):
        verdicts = [unix_ownership(probe.endpoint.removeprefix("unix://"), owner)]
    elif isinstance(probe, (TcpProbe, HttpProbe)):
        try:
            host, port = _tcp_target(probe)
        except ValueError:  # a URL with a bad port: no address to look at
            return None
        verdicts = [tcp_ownership(ip, port, owner) for ip in _addresses(host, port)]
    else:
        return None
    return next((verdict for verdict in verdicts if verdict.foreign), None)


def _tcp_target(probe: TcpProbe | HttpProbe) -> tuple[str, int]:
    """``(host, port)`` the probe connects to: an URL's port, else 443 for https, 80 for http.

    Raises ValueError for an URL whose port is not a number in range.
    """
    if isinstance(probe, TcpProbe):
        return probe.host, probe.port
    from urllib.parse import urlsplit

    url = urlsplit(probe.url)
    return url.hostname or "", url.port or (443 if url.scheme == "https" else 80)


def _addresses(host: str, port: int) -> list[str]:
    import socket

    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(str(entry[4][0]) for entry in found))


def _tls_context(insecure: bool):
    import ssl

    context = ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context

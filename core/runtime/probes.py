"""Readiness probes: one attempt of each :mod:`nodehost.component` probe, and the polling schedule.

:func:`check` makes one attempt and says why it failed; :func:`poll_delays`
is the schedule between attempts -- a few short polls right after start, then
the probe's ``interval``.  Nothing polls once a component is ready.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

from nodehost.component import (
    FileProbe,
    GrpcHealthProbe,
    HttpProbe,
    Probe,
    TcpProbe,
    UnixProbe,
)

FIRST_POLL_DELAY = 0.005


def poll_delays(probe: Probe) -> Iterator[float]:
    """Delays between attempts: 5 ms doubling up to the probe's ``interval``."""
    delay = FIRST_POLL_DELAY
    while True:
        yield min(delay, probe.interval)
        delay *= 2


async def check(probe: Probe) -> tuple[bool, str]:
    """One attempt of ``probe``: ``(passed, detail)``; never raises for a failed attempt."""
    try:
        return await asyncio.wait_for(_attempt(probe), probe.timeout)
    except TimeoutError:
        return False, f"timed out after {probe.timeout:g}s"
    except OSError as error:
        return False, error.strerror or str(error)
    except ValueError as error:
        return False, str(error)


async def _attempt(probe: Probe) -> tuple[bool, str]:
    if isinstance(probe, HttpProbe):
        return await _http(probe)
    if isinstance(probe, TcpProbe):
        await _connect_and_close(asyncio.open_connection(probe.host, probe.port))
        return True, "accepted"
    if isinstance(probe, UnixProbe):
        await _connect_and_close(asyncio.open_unix_connection(probe.path))
        return True, "accepted"
    if isinstance(probe, GrpcHealthProbe):
        return await _grpc_health(probe)
    if isinstance(probe, FileProbe):
        return (True, "exists") if os.path.exists(probe.path) else (False, "does not exist")
    return True, "started"


async def _grpc_health(probe: GrpcHealthProbe) -> tuple[bool, str]:
    from nodehost.runtime.grpchealth import check_health

    status = await check_health(probe.path, probe.service)
    return status == "SERVING", status


async def _connect_and_close(connecting) -> None:
    _, writer = await connecting
    writer.close()
    await writer.wait_closed()


async def _http(probe: HttpProbe) -> tuple[bool, str]:
    from urllib.parse import urlsplit

    url = urlsplit(probe.url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"not an http(s) URL: {probe.url!r}")
    context = _tls_context(probe.insecure) if url.scheme == "https" else None
    port = url.port or (443 if url.scheme == "https" else 80)
    reader, writer = await asyncio.open_connection(url.hostname, port, ssl=context)
    try:
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


def _tls_context(insecure: bool):
    import ssl

    context = ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context

"""The balancer: TCP pass-through on loopback to the first live API server, health checks.

Each accepted connection is spliced, byte for byte, to one server: the first
in order of preference that is not known to be down.  TLS stays end to end
(the client verifies the server, the server the client's certificate);
nothing is decrypted here.  A server whose connect fails is marked down at
once and the next one is tried.

Each server is checked every ``interval`` seconds (+-20%): a TLS connection
verified against the clients' CA and server name, with the node's client
certificate, then ``GET /readyz``; a 200 is up, anything else (no answer
within ``timeout``, a refused connection, a certificate not valid for the
name, a 500) is down.  A server that goes down takes no new connection, and
every connection already open to it is cut, so long-lived watches reconnect
through a live server.  A server that comes back up takes the new
connections again if it comes first.  Every change is one log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import ssl
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from nodehost.backoff import Backoff
from nodehost.config.hostport import split_host_port
from nodehost.plugins.apilb.settings import CLUSTER

UP, DOWN, UNKNOWN = "up", "down", "unknown"
#: A check reads at most this much of the answer's status line.
_STATUS_LINE_LIMIT = 1024


class _Pipe(asyncio.Protocol):
    """One side of a spliced connection: what it receives goes to ``peer``."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: asyncio.Transport | None = None
        self.pending: list[bytes] = []
        self.on_lost: Callable[[], None] = lambda: None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def link(self, peer: asyncio.Transport) -> None:
        self.peer = peer
        for data in self.pending:
            peer.write(data)
        self.pending.clear()

    def data_received(self, data: bytes) -> None:
        if self.peer is None:
            self.pending.append(data)
        else:
            self.peer.write(data)

    def eof_received(self) -> bool:
        if self.peer is not None:
            self.peer.close()  # after what is buffered is written
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.peer is not None:
            self.peer.close()
        self.on_lost()

    # flow control: a peer that cannot keep up pauses reading from this side's source
    def pause_writing(self) -> None:
        if self.peer is not None:
            self.peer.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and not self.peer.is_closing():
            self.peer.resume_reading()


def _why(error: BaseException) -> str:
    """A failed connection in a few words (``Connection refused``; asyncio's own text
    for a refused connect names the address, which the log line already has)."""
    if isinstance(error, TimeoutError):
        return "no answer in time"
    errno = getattr(error, "errno", None)
    if isinstance(errno, int) and errno > 0 and not isinstance(error, ssl.SSLError):
        return os.strerror(errno)
    return str(error) or type(error).__name__


def _same(pipe: _Pipe) -> _Pipe:
    """A protocol factory's answer: ``pipe`` itself."""
    return pipe


class _Accepted(_Pipe):
    """A client's side: paused until the balancer has connected it to a server."""

    def __init__(self, balancer: Balancer) -> None:
        super().__init__()
        self.balancer = balancer

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert isinstance(transport, asyncio.Transport)
        transport.pause_reading()
        self.balancer.dial(self)


@dataclass
class Server:
    """One API server the balancer knows, and what it knows of it."""

    address: str  # host:port
    source: str  # kubeconfig, config or cluster
    state: str = UNKNOWN
    reason: str = ""
    since: float = field(default_factory=time.time)
    connections_total: int = 0
    links: set[tuple[asyncio.Transport, asyncio.Transport]] = field(default_factory=set)

    @property
    def host(self) -> str:
        return split_host_port(self.address)[0]

    @property
    def port(self) -> int:
        return int(split_host_port(self.address)[1])

    def as_dict(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "source": self.source,
            "state": self.state,
            "reason": self.reason,
            "since": round(self.since, 3),
            "connections": len(self.links),
            "connections_total": self.connections_total,
        }


class Balancer:
    """Serves the loopback listener; see the module docstring.

    ``tls()`` gives the context checks connect with (the clients' CA and client
    certificate, made again after a rotation); ``server_name`` is the name every
    server's certificate must hold; ``on_change()`` hears about every change of
    a server's state or of the list.
    """

    def __init__(
        self,
        servers: Iterable[tuple[str, str]],
        *,
        tls: Callable[[], ssl.SSLContext],
        server_name: str,
        interval: float,
        timeout: float,
        log: Any,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.servers = [Server(address, source) for address, source in servers]
        self.tls = tls
        self.server_name = server_name
        self.timeout = timeout
        self.schedule = Backoff(initial=interval, maximum=interval * 1.2, factor=1.0, jitter=0.2)
        self.log = log
        self.on_change = on_change
        self.refused = 0  # client connections closed because no server was reachable
        self._checks: dict[str, asyncio.Task[None]] = {}
        self._dials: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Server | None = None

    # --- the server list ------------------------------------------------------------

    def preferred(self) -> list[Server]:
        """The servers a new connection tries, in order: all but those known to be down."""
        return [server for server in self.servers if server.state != DOWN]

    def current(self) -> Server | None:
        """The server new connections go to now."""
        return next(iter(self.preferred()), None)

    def learn(self, addresses: Iterable[str]) -> bool:
        """Make the servers learnt from the cluster ``addresses``: new ones are added after
        the configured ones, gone ones dropped (their connections cut).  Whether it changed."""
        wanted = list(dict.fromkeys(addresses))
        known = {server.address for server in self.servers}
        gone = [s for s in self.servers if s.source == CLUSTER and s.address not in wanted]
        added = [Server(address, CLUSTER) for address in wanted if address not in known]
        if not gone and not added:
            return False
        for server in gone:
            self.servers.remove(server)
            self._cut(server)
            task = self._checks.pop(server.address, None)
            if task is not None:
                task.cancel()
        self.servers.extend(added)
        for server in added:
            self._start_check(server)
        self.log.info(
            "API servers learnt from the cluster",
            added=[s.address for s in added],
            removed=[s.address for s in gone],
            servers=[s.address for s in self.servers],
        )
        self.on_change()
        return True

    def mark(self, server: Server, state: str, reason: str = "") -> None:
        """Record ``server``'s state; on a change, log it, and cut its connections if down."""
        if server.state == state:
            server.reason = reason
            return
        before, server.state, server.reason, server.since = server.state, state, reason, time.time()
        current = self.current()
        fields = {"server": server.address, "was": before, "reason": reason or None}
        if state == DOWN:
            cut = self._cut(server)
            self.log.warning("API server down", **fields, connections_cut=cut,
                             now_using=current.address if current else None)  # fmt: skip
        else:
            self.log.info("API server up", **fields, now_using=current.address if current else None)
        self.on_change()

    def _cut(self, server: Server) -> int:
        links = list(server.links)
        for client, upstream in links:
            client.abort()
            upstream.abort()
        server.links.clear()
        return len(links)

    # --- serving --------------------------------------------------------------------

    async def serve(self, host: str, port: int) -> None:
        """Listen on ``host:port`` and start checking every server (returns once listening)."""
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(self._accepted, host, port)
        for server in self.servers:
            self._start_check(server)

    def _accepted(self) -> _Accepted:
        return _Accepted(self)

    def dial(self, client: _Pipe) -> None:
        """Connect ``client`` (paused) in the background: see :meth:`_dial`."""
        task = asyncio.get_running_loop().create_task(self._dial(client))
        self._dials.add(task)
        task.add_done_callback(self._dials.discard)

    async def _dial(self, client: _Pipe) -> None:
        """Connect ``client`` to the first server that accepts, in order of preference."""
        assert client.transport is not None
        for server in self.preferred():
            if client.closed:
                return
            upstream = _Pipe()
            try:
                async with asyncio.timeout(self.timeout):
                    transport, _ = await asyncio.get_running_loop().create_connection(
                        functools.partial(_same, upstream), server.host, server.port
                    )
            except (OSError, TimeoutError) as error:
                self.mark(server, DOWN, f"connect: {_why(error)}")
                continue
            assert isinstance(transport, asyncio.Transport)
            if client.closed:
                transport.close()
                return
            self._splice(server, client, upstream)
            return
        self.refused += 1
        client.transport.close()

    @staticmethod
    def _splice(server: Server, client: _Pipe, upstream: _Pipe) -> None:
        """Join ``client`` and ``upstream`` (connected to ``server``) and start reading."""
        assert client.transport is not None and upstream.transport is not None
        link = (client.transport, upstream.transport)
        server.links.add(link)
        server.connections_total += 1
        client.on_lost = upstream.on_lost = functools.partial(server.links.discard, link)
        upstream.link(client.transport)
        client.link(upstream.transport)
        client.transport.resume_reading()

    # --- health ---------------------------------------------------------------------

    def _start_check(self, server: Server) -> None:
        loop = asyncio.get_running_loop()
        self._checks[server.address] = loop.create_task(self._check_loop(server))

    async def _check_loop(self, server: Server) -> None:
        while True:
            problem = await self.check(server)
            self.mark(server, DOWN if problem else UP, problem or "")
            await asyncio.sleep(self.schedule.delay(1))

    async def check(self, server: Server) -> str | None:
        """None when ``server`` answers ``GET /readyz`` with 200 in time, else why not."""
        writer = None
        try:
            async with asyncio.timeout(self.timeout):
                reader, writer = await asyncio.open_connection(
                    server.host, server.port, ssl=self.tls(), server_hostname=self.server_name
                )
                writer.write(
                    f"GET /readyz HTTP/1.1\r\nHost: {self.server_name}\r\n"
                    "User-Agent: nodehost-apilb\r\nConnection: close\r\n\r\n".encode()
                )
                line = await reader.readline()
        except TimeoutError:
            return f"no answer within {self.timeout:g}s"
        except ssl.SSLCertVerificationError as error:
            return f"certificate not trusted: {error.verify_message}"
        except (OSError, ssl.SSLError) as error:
            return _why(error)
        except ValueError:  # a status line past the reader's limit
            return "GET /readyz answered no HTTP status line"
        finally:
            if writer is not None:
                writer.transport.abort()
        parts = line[:_STATUS_LINE_LIMIT].split()
        if len(parts) < 2 or parts[1] != b"200":
            code = parts[1].decode(errors="replace") if len(parts) >= 2 else "nothing"
            return f"GET /readyz answered {code}"
        return None

    async def close(self) -> None:
        """Stop listening, checking and dialling; cut every connection."""
        if self._listener is not None:
            self._listener.close()
        tasks = [*self._checks.values(), *self._dials]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for server in self.servers:
            self._cut(server)
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.wait_closed()

    def snapshot(self) -> list[dict[str, Any]]:
        """Every server as a JSON-ready mapping, in order of preference."""
        return [server.as_dict() for server in self.servers]

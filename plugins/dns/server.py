"""The DNS server: UDP and TCP sockets in the event loop, record sources, readiness.

The UDP hot path reads datagrams straight from a non-blocking socket (up to
:data:`UDP_BATCH` per wake-up) and answers every question it has seen before
from :class:`~nodehost.plugins.dns.wire.HotCache` with one dict lookup and
one ``sendto``; everything else goes to the
:class:`~nodehost.plugins.dns.respond.Responder`.  Answers that need an
upstream run as tasks, so a slow upstream never delays anything else.

TCP (RFC 7766): length-prefixed messages, pipelining, answers in completion
order.  A connection is closed after :data:`TCP_IDLE` seconds without a
complete message (slow or silent clients), when a client stops reading its
answers, or when it sends a zero-length message.  At most
:data:`TCP_MAX_CONNECTIONS` connections are served at once, and at most
:data:`TCP_MAX_PER_CLIENT` from one client address.  When either bound is
reached, a new connection takes the place of the one idle longest (no answer
owed, no complete message for the longest time) -- the pool's or that
client's -- so idle connections, however many, never lock new clients out; a
new connection is refused only when every connection in its way is busy.

Run standalone (benchmarks, tests, a node without nodehost)::

    python -m nodehost.plugins.dns.server --bind 127.0.0.1:5300 --records FILE \\
        [--kubeconfig FILE] [--domain cluster.local] [--upstream IP:PORT ...] \\
        [--resolv-conf FILE] [--forward-timeout 2] [--reverse-cidr CIDR ...] [--no-uvloop]

``--kubeconfig`` adds the ``kubernetes`` record source (Services and
EndpointSlices from that kubeconfig's API server).  It prints
``ready <host:port>`` on stdout once both sockets are bound and every record
source has synced, and exits 0 on SIGTERM or SIGINT.  ``--reverse-cidr`` names a
network whose reverse zone it answers (``dnsServerConfig.reverseCIDRs``).  Without ``--upstream``
or ``--resolv-conf`` nothing is forwarded (REFUSED).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import struct
from collections.abc import Callable, Sequence
from typing import Any

from nodehost.plugins.dns.forward import Forwarder
from nodehost.plugins.dns.metrics import DnsStats
from nodehost.plugins.dns.records import ClusterRecords, ClusterZone
from nodehost.plugins.dns.respond import Responder
from nodehost.plugins.dns.settings import DnsSettings
from nodehost.plugins.dns.sources import RecordSource
from nodehost.plugins.dns.wire import HotCache

UDP_BATCH = 64
UDP_READ = 4096
UDP_RECEIVE_BUFFER = 1 << 20
TCP_IDLE = 10.0
TCP_MAX_CONNECTIONS = 512
TCP_MAX_PER_CLIENT = 32
TCP_WRITE_LIMIT = 1 << 20
SWEEP_INTERVAL = 1.0
_ACTIVITY = itertools.count()  # orders TCP activity strictly, ties impossible


class DnsServer:
    """Binds the sockets and answers queries; :meth:`start`, then :meth:`close`."""

    def __init__(self, settings: DnsSettings, store: ClusterRecords, log: Any = None) -> None:
        self.settings = settings
        self.store = store
        self.log = log
        self.cache = HotCache()
        self.stats = DnsStats()
        store.listen(self.cache.invalidate)
        forwarder = (
            Forwarder(settings.upstreams, timeout=settings.forward_timeout, stats=self.stats)
            if settings.upstreams
            else None
        )
        zone = ClusterZone(
            settings.domain,
            store,
            reverse_networks=settings.reverse_networks,
            ns_addresses=settings.ns_addresses,
        )
        self.responder = Responder(
            zone,
            self.cache,
            forwarder,
            on_sweep_due=self._schedule_sweep,
            log=log,
        )
        self.udp: socket.socket | None = None
        self.tcp: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._connections: set[_TcpConnection] = set()
        self._by_client: dict[str, set[_TcpConnection]] = {}
        self._sweep: asyncio.TimerHandle | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port) (the port is known once started, also when 0 was asked)."""
        assert self.udp is not None
        host, port = self.udp.getsockname()[:2]
        return host, port

    async def start(self) -> None:
        """Bind UDP and TCP on the same port and start answering; ``OSError`` if binding fails."""
        loop = asyncio.get_running_loop()
        udp, tcp = bind_sockets(self.settings.bind_host, self.settings.bind_port)
        try:
            self.tcp = await loop.create_server(lambda: _TcpConnection(self), sock=tcp)
        except BaseException:
            udp.close()
            tcp.close()
            raise
        self.udp = udp
        loop.add_reader(udp.fileno(), self._on_udp_readable)
        self.stats.serving(*self.address, udp.family == socket.AF_INET6)

    async def close(self) -> None:
        self.stats.closed()
        loop = asyncio.get_running_loop()
        if self.udp is not None:
            loop.remove_reader(self.udp.fileno())
            self.udp.close()
        if self.tcp is not None:
            self.tcp.close()
        for connection in list(self._connections):
            connection.abort()
        for task in list(self._tasks):
            task.cancel()
        if self._sweep is not None:
            self._sweep.cancel()
        if self.responder.forwarder is not None:
            self.responder.forwarder.close()

    # UDP ------------------------------------------------------------------------------------

    def _on_udp_readable(self) -> None:
        sock = self.udp
        assert sock is not None
        receive, send, hot, stats = sock.recvfrom, sock.sendto, self.cache.entries, self.stats
        for _ in range(UDP_BATCH):
            try:
                data, peer = receive(UDP_READ)
            except BlockingIOError:
                return
            except OSError:
                continue  # an ICMP error for an earlier reply; the socket is still fine
            key = data[2:]
            tail = hot.get(key)
            try:
                if tail is not None:
                    stats.hit("udp", key, tail)
                    send(data[:2] + tail, peer)
                    continue
                stats.miss("udp", key)
                result = self.responder.respond(data, key, False, self._udp_reply(peer))
                if isinstance(result, bytes):
                    stats.answered(result)
                    send(result, peer)
                elif result is not None:
                    self._spawn(self._udp_later(result, peer))
            except OSError:
                continue  # the socket buffer is full or the peer is gone: UDP may drop

    def _udp_reply(self, peer: Any) -> Callable[[bytes | None], None]:
        """Sends a response to ``peer`` when it is ready (a forwarded question's)."""

        def reply(response: bytes | None) -> None:
            self.stats.answered(response)
            if response is not None and self.udp is not None:
                with contextlib.suppress(OSError):
                    self.udp.sendto(response, peer)

        return reply

    async def _udp_later(self, pending: Any, peer: Any) -> None:
        response = await pending
        self.stats.answered(response)
        if response is not None and self.udp is not None:
            with contextlib.suppress(OSError):
                self.udp.sendto(response, peer)

    # shared ----------------------------------------------------------------------------------

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None and self.log is not None:
            self.log.warning("DNS answer failed", error=repr(task.exception()))

    # TCP connection bounds ---------------------------------------------------------------

    def _admit(self, connection: _TcpConnection) -> bool:
        """Make room for ``connection`` within both bounds (module docstring); False if none."""
        same_client = self._by_client.get(connection.client, set())
        for pool, bound in ((same_client, TCP_MAX_PER_CLIENT),
                            (self._connections, TCP_MAX_CONNECTIONS)):  # fmt: skip
            if len(pool) >= bound and not self._evict_idlest(pool):
                return False
        self._connections.add(connection)
        self._by_client.setdefault(connection.client, set()).add(connection)
        return True

    def _evict_idlest(self, pool: set[_TcpConnection]) -> bool:
        idle = [connection for connection in pool if connection.pending == 0]
        if not idle:
            return False
        victim = min(idle, key=lambda connection: connection.last_active)
        self._forget(victim)
        victim.abort()
        return True

    def _forget(self, connection: _TcpConnection) -> None:
        self._connections.discard(connection)
        same_client = self._by_client.get(connection.client)
        if same_client is not None:
            same_client.discard(connection)
            if not same_client:
                del self._by_client[connection.client]

    def _schedule_sweep(self) -> None:
        if self._sweep is None:
            loop = asyncio.get_running_loop()
            self._sweep = loop.call_later(SWEEP_INTERVAL, self._run_sweep)

    def _run_sweep(self) -> None:
        self._sweep = None
        self.cache.sweep()


class _TcpConnection(asyncio.Protocol):
    """One TCP client: length-prefixed queries in, answers out (see the module docstring)."""

    def __init__(self, server: DnsServer) -> None:
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.idle: asyncio.TimerHandle | None = None
        self.client = ""
        self.last_active = 0  # from _ACTIVITY: higher is more recent
        self.pending = 0  # answers owed (waiting on an upstream)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.client = str(peer[0]) if peer else ""
        self.last_active = next(_ACTIVITY)
        if not self.server._admit(self):
            transport.abort()  # type: ignore[attr-defined]
            return
        self._arm_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server._forget(self)
        if self.idle is not None:
            self.idle.cancel()
        self.transport = None

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def _arm_idle(self) -> None:
        if self.idle is not None:
            self.idle.cancel()
        self.idle = asyncio.get_running_loop().call_later(TCP_IDLE, self.abort)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= 2 and self.transport is not None:
            (length,) = struct.unpack_from("!H", self.buffer)
            if length == 0:
                self.abort()
                return
            if len(self.buffer) < 2 + length:
                return
            message = bytes(self.buffer[2 : 2 + length])
            del self.buffer[: 2 + length]
            self.last_active = next(_ACTIVITY)
            self._arm_idle()
            self._answer(message)

    def _answer(self, message: bytes) -> None:
        key = ("tcp", message[2:])
        tail = self.server.cache.entries.get(key)
        stats = self.server.stats
        if tail is not None:
            stats.hit("tcp", key[1], tail)
            self._send(message[:2] + tail)
            return
        stats.miss("tcp", key[1])
        result = self.server.responder.respond(message, key, True)
        if isinstance(result, bytes):
            stats.answered(result)
            self._send(result)
        elif result is not None:
            self.pending += 1
            self.server._spawn(self._later(result))

    async def _later(self, pending: Any) -> None:
        try:
            response = await pending
        finally:
            self.pending -= 1
        self.server.stats.answered(response)
        if response is not None:
            self._send(response)

    def _send(self, response: bytes) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if transport.get_write_buffer_size() > TCP_WRITE_LIMIT:
            self.abort()  # the client does not read its answers
            return
        transport.write(struct.pack("!H", len(response)) + response)


# --- sockets ---------------------------------------------------------------------------------


def bind_sockets(host: str, port: int) -> tuple[socket.socket, socket.socket]:
    """A UDP and a listening TCP socket on the same ``host:port``.

    An empty or wildcard host listens on IPv6 and IPv4 (one dual-stack socket,
    as Go did for ``0.0.0.0``) where IPv6 exists, else on IPv4.  Port 0 picks
    a port free for both.
    """
    candidates = _addresses(host, port)
    last_error: OSError | None = None
    for family, address, dual in candidates:
        for _ in range(20 if port == 0 else 1):
            try:
                return _bind_pair(family, address, dual)
            except OSError as error:
                last_error = error
    assert last_error is not None
    raise last_error


def _addresses(host: str, port: int) -> list[tuple[int, tuple[Any, ...], bool]]:
    if host in ("", "0.0.0.0", "::"):
        wildcard: list[tuple[int, tuple[Any, ...], bool]] = [
            (socket.AF_INET, ("0.0.0.0", port), False)
        ]
        if socket.has_ipv6:
            wildcard.insert(0, (socket.AF_INET6, ("::", port, 0, 0), True))
        return wildcard if host != "::" else wildcard[:1]
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    return [(family, address, False) for family, _, _, _, address in infos[:1]]


def _bind_pair(
    family: int, address: tuple[Any, ...], dual: bool
) -> tuple[socket.socket, socket.socket]:
    udp = socket.socket(family, socket.SOCK_DGRAM)
    try:
        if dual:
            udp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        with contextlib.suppress(OSError):
            udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UDP_RECEIVE_BUFFER)
        udp.bind(address)
        udp.setblocking(False)
        bound = udp.getsockname()
        tcp = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        udp.close()
        raise
    try:
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if dual:
            tcp.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        tcp.bind(bound)
        tcp.listen(128)
        tcp.setblocking(False)
    except OSError:
        udp.close()
        tcp.close()
        raise
    return udp, tcp


# --- running as the dns component -----------------------------------------------------------


async def serve(
    settings: DnsSettings,
    sources: Sequence[RecordSource],
    *,
    log: Any,
    ready: Callable[[DnsServer], None],
    status: Callable[[str], None] = lambda _: None,
) -> None:
    """Run the server and its record sources until cancelled.

    ``ready(server)`` is called once the sockets are bound and every source
    has synced (after :func:`_settle_garbage_collector`); until then
    ``status`` names the sources still loading, updated as each one syncs.  A source that
    raises ends this coroutine with its error.
    """
    store = ClusterRecords()
    server = DnsServer(settings, store, log)
    waiting = {source.name for source in sources}
    synced = asyncio.Event()
    if not waiting:
        synced.set()

    def waiting_text() -> str:
        return f"waiting for DNS record sources: {', '.join(sorted(waiting))}" if waiting else ""

    def source_synced(name: str) -> None:
        waiting.discard(name)
        status(waiting_text())  # the reason names only the sources still loading
        if not waiting:
            synced.set()

    try:
        await server.start()
    except OSError as error:
        raise OSError(
            f"DNS cannot listen on {settings.address}: {error.strerror or error}"
        ) from None
    tasks = []
    try:
        for source in sources:
            sink = store.sink(source.name)
            sink.on_synced = lambda name=source.name: source_synced(name)
            tasks.append(asyncio.ensure_future(source.run(sink)))
        status(waiting_text())
        await _first_of(tasks, synced)
        host, port = server.address
        log.info("Starting DNS", address=f"{host}:{port}", domain=settings.domain,
                 upstreams=[f"{h}:{p}" for h, p in settings.upstreams])  # fmt: skip
        _settle_garbage_collector()
        ready(server)
        await _first_of(tasks, asyncio.Event())
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.close()


def _settle_garbage_collector() -> None:
    """Move everything alive at readiness out of the collector's sight (``gc.freeze``).

    Every datagram allocates a few short-lived tuples, so collections run
    often; without this each full collection walks every object of the
    process (dnspython, the records, the host) and stalls answers for
    milliseconds (p99 latency 5.7 -> 1.4 ms, throughput +25% measured).
    Objects made later are collected as usual.
    """
    import gc

    gc.collect()
    gc.freeze()


async def _first_of(tasks: Sequence[asyncio.Future[Any]], event: asyncio.Event) -> None:
    """Wait for ``event``; if a source task ends first, re-raise its error (or report its end)."""
    waiter = asyncio.ensure_future(event.wait())
    try:
        done, _ = await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    for task in done:
        if task is not waiter:
            task.result()
            raise RuntimeError("a DNS record source stopped")


# --- standalone ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m nodehost.plugins.dns.server``: see the module docstring."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m nodehost.plugins.dns.server")
    parser.add_argument("--bind", required=True, help="host:port to listen on (UDP and TCP)")
    parser.add_argument("--records", help="a records file (the file source's format)")
    parser.add_argument("--kubeconfig", help="follow this kubeconfig's API server's services")
    parser.add_argument("--domain", default="cluster.local", help="the cluster domain")
    parser.add_argument("--upstream", action="append", default=[], help="IP:PORT to forward to")
    parser.add_argument("--resolv-conf", help="forward to this resolv.conf's nameservers too")
    parser.add_argument("--forward-timeout", type=float, default=2.0, help="seconds per upstream")
    parser.add_argument(
        "--reverse-cidr", action="append", default=[], help="answer this network's reverse zone"
    )
    parser.add_argument("--no-uvloop", action="store_true", help="use asyncio's own event loop")
    options = parser.parse_args(argv)
    try:
        settings = _standalone_settings(options)
    except ValueError as error:
        parser.exit(2, f"error: {error}\n")
    sources = _standalone_sources(options.records, options.kubeconfig)
    loop_factory = None if options.no_uvloop else _uvloop_factory()
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        try:
            runner.run(_standalone(settings, sources))
        except (OSError, ValueError) as error:
            print(f"error: {error}", flush=True)
            return 1
    return 0


def _standalone_settings(options: Any) -> DnsSettings:
    from nodehost.config.hostport import split_host_port
    from nodehost.plugins.dns.settings import (
        SettingsError,
        ns_addresses,
        resolv_conf_nameservers,
        reverse_cidrs,
    )

    host, port = split_host_port(options.bind)
    upstreams = []
    for text in options.upstream:
        upstream_host, upstream_port = split_host_port(text)
        upstreams.append((upstream_host, int(upstream_port)))
    if options.resolv_conf:
        try:
            upstreams += [(server, 53) for server in resolv_conf_nameservers(options.resolv_conf)]
        except OSError as error:
            raise ValueError(f"cannot read {options.resolv_conf}: {error.strerror}") from None
    try:
        networks = reverse_cidrs(options.reverse_cidr, "--reverse-cidr")
    except SettingsError as error:
        raise ValueError(error.problem.render()) from None
    return DnsSettings(
        bind_host=host,
        bind_port=int(port),
        domain=options.domain.strip(".").lower(),
        upstreams=tuple(upstreams),
        records_file=options.records,
        forward_timeout=options.forward_timeout,
        reverse_networks=networks,
        ns_addresses=ns_addresses("", host),
    )


def _standalone_sources(path: str | None, kubeconfig: str | None = None) -> list[RecordSource]:
    from nodehost.plugins.dns.sources.file import FileSource

    sources: list[RecordSource] = [FileSource(path)] if path else []
    if kubeconfig:
        from nodehost.plugins.dns.sources.kubernetes import KubernetesSource

        sources.append(KubernetesSource(kubeconfig))
    return sources


def _uvloop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def _standalone(settings: DnsSettings, sources: Sequence[RecordSource]) -> None:
    """Serve until SIGTERM or SIGINT."""
    import signal

    from nodehost.config.hostport import join_host_port
    from nodehost.log import get_logger

    def announce(server: DnsServer) -> None:
        print(f"ready {join_host_port(*server.address)}", flush=True)

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    log = get_logger("nodehost", component="dns")
    server = asyncio.ensure_future(serve(settings, sources, log=log, ready=announce))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait([server, stopping], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if server.done():
        server.result()
        return
    server.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await server


if __name__ == "__main__":
    raise SystemExit(main())

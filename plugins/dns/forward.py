"""Forwarding questions outside the cluster domain to the upstream resolvers.

:class:`Forwarder` asks the upstreams in turn, starting with a different one
for each question (SkyDNS started at a random one), each with its own
timeout; a timeout, a refused or failed socket, SERVFAIL or REFUSED moves on to
the next upstream.  A truncated UDP reply is asked again over TCP of the same
upstream.  Replies are checked against the question (ID, question name, type
and class); a malformed or mismatched reply is ignored (the exchange keeps
waiting for the real one until its timeout).

The miss path runs without a coroutine per question: each upstream has a
small pool of UDP sockets (:data:`POOL_SIZE`), each *connected* to that
upstream (the kernel drops datagrams from anyone else, and a refused port is
reported at once) and bound to a random port that is retired after
:data:`RETIRE_AFTER` questions, as dnsmasq keeps random source ports; a
question goes out on a random socket of the pool with a random ID, so a
spoofed reply must guess both.  The socket's reader callback matches replies
to questions; deadlines sit in a wheel of :data:`TICK`-second slots that one
timer turns while questions wait, and an answered question leaves it at once
(nothing lives longer than its exchange, so the garbage collector has little
to walk).

Answers are cached for their lifetime (:class:`~nodehost.plugins.dns.wire.UpstreamAnswer`):
positive ones for their smallest TTL, negative ones (NXDOMAIN, NODATA) for
their SOA's ``min(TTL, MINIMUM)``.  Concurrent identical questions share one
upstream exchange.  Nothing here blocks the event loop.

Upstreams are Origin's (:ref:`origin-dns`): ``dnsNameservers``, then each
nameserver of ``dnsRecursiveResolvConf`` on port 53; when both give none,
those of ``/etc/resolv.conf``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nodehost.config.hostport import join_host_port
from nodehost.plugins.dns.metrics import DnsStats
from nodehost.plugins.dns.wire import (
    OUR_PAYLOAD,
    RD,
    UpstreamAnswer,
    WireError,
    opt_record,
)

Upstream = tuple[str, int]
CacheKey = tuple[bytes, bytes]
#: Called once per question with the answer (None when every upstream failed) and the reason.
Done = Callable[[UpstreamAnswer | None, str], None]

SERVFAIL = 2
REFUSED = 5
POOL_SIZE = 8
RETIRE_AFTER = 4096
READ_BATCH = 64
#: Deadlines are kept per tick of this many seconds (a timeout ends up to one tick late).
TICK = 0.05

_HEADER = struct.Struct("!HHHHHH")


class ForwardError(Exception):
    """No upstream gave a usable answer; ``str()`` says what each one did."""


@dataclass
class _Cached:
    answer: UpstreamAnswer
    stored: float

    def age(self, now: float) -> int:
        return int(now - self.stored)

    def fresh(self, now: float) -> bool:
        return now - self.stored < self.answer.lifetime


class _Exchange:
    """One question on its way through the upstreams, and who waits for its answer.

    ``slot`` is where its reply is expected (socket, ID) and ``tick`` the
    timer tick of its deadline, while it waits for an upstream.
    """

    __slots__ = (
        "began",
        "do_bit",
        "failures",
        "key",
        "last_refusal",
        "question",
        "slot",
        "start",
        "step",
        "tick",
        "waiters",
    )

    def __init__(
        self, key: CacheKey, question: bytes, do_bit: bool, start: int, done: Done
    ) -> None:
        self.key = key
        self.question = question
        self.do_bit = do_bit
        self.start = start
        self.waiters = [done]
        self.step = 0
        self.began = 0.0
        self.slot: tuple[_Socket, int] | None = None
        self.tick = 0
        self.failures: list[str] = []
        self.last_refusal: UpstreamAnswer | None = None


class _Socket:
    """One connected UDP socket of an upstream's pool and the questions waiting on it."""

    def __init__(self, forwarder: Forwarder, index: int) -> None:
        upstream = forwarder.upstreams[index]
        family = socket.AF_INET6 if ":" in upstream[0] else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            self.sock.setblocking(False)
            self.sock.connect(upstream)  # a random local port; only this upstream gets through
        except OSError:
            self.sock.close()
            raise
        self.forwarder = forwarder
        self.index = index
        self.pending: dict[int, _Exchange] = {}
        self.uses = 0
        self.retired = False
        forwarder.loop.add_reader(self.sock.fileno(), self._readable)
        forwarder._sockets.add(self)

    def _readable(self) -> None:
        receive, pending = self.sock.recv, self.pending
        for _ in range(READ_BATCH):
            try:
                reply = receive(65535)
            except BlockingIOError:
                break
            except OSError as error:  # ICMP: the upstream's port is closed, or unreachable
                self.forwarder._socket_failed(self, error)
                break
            if len(reply) >= 12:
                exchange = pending.pop((reply[0] << 8) | reply[1], None)
                if exchange is not None:
                    self.forwarder._reply(exchange, self, reply)
        if self.retired and not pending:
            self.close()

    def close(self) -> None:
        self.forwarder._sockets.discard(self)
        if self.sock.fileno() >= 0:
            self.forwarder.loop.remove_reader(self.sock.fileno())
            self.sock.close()


class _Random:
    """Unpredictable 16-bit numbers from the kernel, read 4 KiB at a time."""

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0

    def next16(self) -> int:
        if self._at + 2 > len(self._pool):
            self._pool, self._at = os.urandom(4096), 0
        value = (self._pool[self._at] << 8) | self._pool[self._at + 1]
        self._at += 2
        return value


class Forwarder:
    """Forwards questions to ``upstreams`` (``(ip, port)``) with a TTL cache.

    ``timeout`` is the time given to each upstream for one question;
    ``cache_limit`` bounds the cache (it starts again empty when full).
    Sockets are made on the first question, in the running event loop;
    :meth:`close` closes them.
    """

    def __init__(
        self,
        upstreams: Sequence[Upstream],
        *,
        timeout: float = 2.0,
        cache_limit: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
        stats: DnsStats | None = None,
    ) -> None:
        if not upstreams:
            raise ValueError("no upstream nameservers")
        self.upstreams = tuple(upstreams)
        self.names = tuple(join_host_port(*upstream) for upstream in self.upstreams)
        self.timeout = timeout
        self.cache_limit = cache_limit
        self.clock = clock
        self.stats = stats
        self._cache: dict[CacheKey, _Cached] = {}
        self._inflight: dict[CacheKey, _Exchange] = {}
        self._next = 0
        self._pools: list[list[_Socket]] = [[] for _ in self.upstreams]
        self._sockets: set[_Socket] = set()  # open ones: the pools' and retired ones still owed
        self._wheel: dict[int, set[_Exchange]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._tcp: set[asyncio.Task[None]] = set()
        self._random = _Random()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    # --- the cache ------------------------------------------------------------------------

    def cached(self, question: bytes, do_bit: bool = False) -> tuple[UpstreamAnswer, int] | None:
        """The cached answer to ``question`` and its age in seconds, if still fresh."""
        return self._cached(_key(question, do_bit))

    def _cached(self, key: CacheKey) -> tuple[UpstreamAnswer, int] | None:
        entry = self._cache.get(key)
        if entry is None:
            return None
        now = self.clock()
        if not entry.fresh(now):
            del self._cache[key]
            return None
        return entry.answer, entry.age(now)

    def _store(self, key: CacheKey, answer: UpstreamAnswer) -> None:
        if answer.lifetime > 0:
            if len(self._cache) >= self.cache_limit:
                self._cache.clear()
            self._cache[key] = _Cached(answer, self.clock())

    # --- asking ---------------------------------------------------------------------------

    async def resolve(self, question: bytes, do_bit: bool = False) -> tuple[UpstreamAnswer, int]:
        """The answer to ``question`` (wire name + type + class) and its age.

        ``question`` should be lower-case: it is the cache key.  Raises
        :class:`ForwardError` when every upstream failed.
        """
        hit = self.cached(question, do_bit)
        if hit is not None:
            return hit
        future: asyncio.Future[tuple[UpstreamAnswer | None, str]] = self.loop.create_future()

        def done(answer: UpstreamAnswer | None, reason: str) -> None:
            if not future.done():
                future.set_result((answer, reason))

        self.submit(question, do_bit, done)
        answer, reason = await future
        if answer is None:
            raise ForwardError(reason)
        return answer, 0

    def submit(self, question: bytes, do_bit: bool, done: Done) -> None:
        """Ask the upstreams (or join the same question already asked); ``done`` hears the
        fresh answer, or None and why every upstream failed -- later, or at once when no
        upstream can be sent to."""
        key = _key(question, do_bit)
        exchange = self._inflight.get(key)
        if exchange is not None:
            exchange.waiters.append(done)
            return
        exchange = _Exchange(key, question, do_bit, self._next, done)
        self._next = (self._next + 1) % len(self.upstreams)
        self._inflight[key] = exchange
        self._send(exchange)

    def _send(self, exchange: _Exchange) -> None:
        """Send to the exchange's next upstream that takes it; finish when none is left."""
        count = len(self.upstreams)
        while exchange.step < count:
            index = (exchange.start + exchange.step) % count
            try:
                sock = self._socket(index)
                query_id = self._free_id(sock)
                sock.sock.send(_query(query_id, exchange.question, exchange.do_bit))
            except OSError as error:
                exchange.failures.append(f"{self.names[index]}: {_reason(error)}")
                exchange.step += 1
                continue
            sock.pending[query_id] = exchange
            sock.uses += 1
            exchange.slot = (sock, query_id)
            exchange.began = time.monotonic()
            exchange.tick = tick = int((self.loop.time() + self.timeout) / TICK) + 1
            due = self._wheel.get(tick)
            if due is None:
                due = self._wheel[tick] = set()
            due.add(exchange)
            if self._timer is None:
                self._timer = self.loop.call_later(TICK, self._expire)
            return
        self._finish(exchange, None)

    def _socket(self, index: int) -> _Socket:
        """A random socket of upstream ``index``'s pool (renewing a worn-out one)."""
        pool = self._pools[index]
        while len(pool) < POOL_SIZE:
            pool.append(_Socket(self, index))
        slot = self._random.next16() % POOL_SIZE
        sock = pool[slot]
        if sock.uses >= RETIRE_AFTER:
            sock.retired = True
            if not sock.pending:
                sock.close()
            pool[slot] = sock = _Socket(self, index)
        return sock

    def _free_id(self, sock: _Socket) -> int:
        while True:
            query_id = self._random.next16()
            if query_id not in sock.pending:
                return query_id

    def _unwait(self, exchange: _Exchange) -> None:
        """The exchange no longer waits for a reply on its socket (answered or moved on)."""
        exchange.slot = None
        due = self._wheel.get(exchange.tick)
        if due is not None:
            due.discard(exchange)

    def _next_upstream(self, exchange: _Exchange, failure: str) -> None:
        exchange.failures.append(failure)
        exchange.step += 1
        self._send(exchange)

    # --- answers --------------------------------------------------------------------------

    def _reply(self, exchange: _Exchange, sock: _Socket, reply: bytes) -> None:
        """A reply with the ID of ``exchange`` arrived on ``sock``."""
        try:
            answer = UpstreamAnswer.scan(reply, exchange.question)
        except WireError:
            sock.pending[(reply[0] << 8) | reply[1]] = exchange  # not it: keep waiting
            return
        self._unwait(exchange)
        if answer.truncated:
            task = self.loop.create_task(self._over_tcp(exchange, sock.index, reply[:2]))
            self._tcp.add(task)
            task.add_done_callback(self._tcp.discard)
            return
        self._answered(exchange, sock.index, answer)

    def _answered(self, exchange: _Exchange, index: int, answer: UpstreamAnswer) -> None:
        if self.stats is not None:
            self.stats.forwarded(self.names[index], answer.rcode, time.monotonic() - exchange.began)
        if answer.rcode in (SERVFAIL, REFUSED):
            exchange.last_refusal = answer
            self._next_upstream(exchange, f"{self.names[index]}: rcode {answer.rcode}")
            return
        self._finish(exchange, answer)

    async def _over_tcp(self, exchange: _Exchange, index: int, query_id: bytes) -> None:
        """Ask the truncated question again over TCP of the same upstream."""
        query = query_id + _query(0, exchange.question, exchange.do_bit)[2:]
        try:
            answer = await asyncio.wait_for(
                _ask_tcp(self.upstreams[index], query, exchange.question), self.timeout
            )
        except (TimeoutError, OSError, WireError) as error:
            self._next_upstream(exchange, f"{self.names[index]}: {_reason(error)}")
            return
        self._answered(exchange, index, answer)

    def _finish(self, exchange: _Exchange, answer: UpstreamAnswer | None) -> None:
        self._inflight.pop(exchange.key, None)
        if answer is not None:
            self._store(exchange.key, answer)
        else:
            answer = exchange.last_refusal
        reason = "; ".join(exchange.failures)
        for done in exchange.waiters:
            done(answer, reason)

    # --- failures -------------------------------------------------------------------------

    def _expire(self) -> None:
        """Turn the wheel: every question past its deadline moves on to its next upstream."""
        self._timer = None
        now = int(self.loop.time() / TICK)
        for tick in [tick for tick in self._wheel if tick <= now]:
            for exchange in self._wheel.pop(tick):
                if exchange.slot is None:
                    continue
                sock, query_id = exchange.slot
                sock.pending.pop(query_id, None)
                exchange.slot = None
                if sock.retired and not sock.pending:
                    sock.close()
                self._next_upstream(exchange, f"{self.names[sock.index]}: timed out")
        if self._wheel:
            self._timer = self.loop.call_later(TICK, self._expire)

    def _socket_failed(self, sock: _Socket, error: OSError) -> None:
        """The socket's upstream refused (ICMP): every question waiting on it moves on."""
        waiting = list(sock.pending.values())
        sock.pending.clear()
        for exchange in waiting:
            self._unwait(exchange)
            self._next_upstream(exchange, f"{self.names[sock.index]}: {_reason(error)}")

    def close(self) -> None:
        """Close every socket and stop the timer (questions still waiting are dropped)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for task in self._tcp:
            task.cancel()
        for sock in list(self._sockets):
            for exchange in sock.pending.values():
                for done in exchange.waiters:
                    done(None, "the server is closing")
            sock.pending.clear()
            sock.close()
        for pool in self._pools:
            pool.clear()
        self._inflight.clear()


def _query(query_id: int, question: bytes, do_bit: bool) -> bytes:
    return _HEADER.pack(query_id, RD, 1, 0, 0, 1) + question + opt_record(OUR_PAYLOAD, do_bit)


async def _ask_tcp(upstream: Upstream, query: bytes, question: bytes) -> UpstreamAnswer:
    reader, writer = await asyncio.open_connection(upstream[0], upstream[1])
    try:
        writer.write(struct.pack("!H", len(query)) + query)
        await writer.drain()
        (length,) = struct.unpack("!H", await reader.readexactly(2))
        reply = await reader.readexactly(length)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    if reply[:2] != query[:2]:
        raise WireError("TCP reply with another ID")
    return UpstreamAnswer.scan(reply, question)


def _key(question: bytes, do_bit: bool) -> CacheKey:
    return (question, b"\x01" if do_bit else b"\x00")


def _reason(error: BaseException) -> str:
    if isinstance(error, asyncio.TimeoutError):
        return "timed out"
    if isinstance(error, asyncio.IncompleteReadError):
        return "connection closed mid-answer"
    return str(error) or type(error).__name__

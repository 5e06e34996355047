"""Forwarding questions outside the cluster domain to the upstream resolvers.

:class:`Forwarder` asks the upstreams in turn, starting with a different one
for each question (SkyDNS started at a random one), each with its own
timeout; a timeout, a network error, a malformed or mismatched reply, SERVFAIL
or REFUSED moves on to the next upstream.  A truncated UDP reply is asked again
over TCP of the same upstream.  Replies are checked against the question (ID,
question name, type and class) and come from a socket connected to that
upstream, on a fresh random port per question.

Answers are cached for their lifetime (:class:`~nodehost.plugins.dns.wire.UpstreamAnswer`):
positive ones for their smallest TTL, negative ones (NXDOMAIN, NODATA) for
their SOA's ``min(TTL, MINIMUM)``.  Concurrent identical questions share one
upstream exchange.  Nothing here blocks the event loop.

Upstreams are Origin's (reference §9.4): ``dnsNameservers``, then each
nameserver of ``dnsRecursiveResolvConf`` on port 53; when both give none,
those of ``/etc/resolv.conf``.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
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

SERVFAIL = 2
REFUSED = 5


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


class Forwarder:
    """Forwards questions to ``upstreams`` (``(ip, port)``) with a TTL cache.

    ``timeout`` is the time given to each upstream for one question;
    ``cache_limit`` bounds the cache (it starts again empty when full).
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
        self.timeout = timeout
        self.cache_limit = cache_limit
        self.clock = clock
        self.stats = stats
        self._cache: dict[CacheKey, _Cached] = {}
        self._inflight: dict[CacheKey, asyncio.Future[UpstreamAnswer]] = {}
        self._next = 0

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

    async def resolve(self, question: bytes, do_bit: bool = False) -> tuple[UpstreamAnswer, int]:
        """The answer to ``question`` (wire name + type + class) and its age.

        ``question`` should be lower-case: it is the cache key.  Raises
        :class:`ForwardError` when every upstream failed.
        """
        key = _key(question, do_bit)
        hit = self._cached(key)
        if hit is not None:
            return hit
        pending = self._inflight.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._exchange(question, do_bit))
            self._inflight[key] = pending
            pending.add_done_callback(lambda _: self._finish(key))
        answer = await asyncio.shield(pending)
        return answer, 0

    def _finish(self, key: CacheKey) -> None:
        pending = self._inflight.pop(key)
        if pending.cancelled() or pending.exception() is not None:
            return
        answer = pending.result()
        if answer.lifetime > 0:
            if len(self._cache) >= self.cache_limit:
                self._cache.clear()
            self._cache[key] = _Cached(answer, self.clock())

    async def _exchange(self, question: bytes, do_bit: bool) -> UpstreamAnswer:
        start = self._next
        self._next = (self._next + 1) % len(self.upstreams)
        failures = []
        last_refusal: UpstreamAnswer | None = None
        for step in range(len(self.upstreams)):
            upstream = self.upstreams[(start + step) % len(self.upstreams)]
            began = time.monotonic()
            try:
                answer = await self._ask(upstream, question, do_bit)
            except (TimeoutError, OSError, WireError) as error:
                failures.append(f"{join_host_port(*upstream)}: {_reason(error)}")
                continue
            if self.stats is not None:
                self.stats.forwarded(
                    join_host_port(*upstream), answer.rcode, time.monotonic() - began
                )
            if answer.rcode in (SERVFAIL, REFUSED):
                failures.append(f"{join_host_port(*upstream)}: rcode {answer.rcode}")
                last_refusal = answer
                continue
            return answer
        if last_refusal is not None:
            return last_refusal
        raise ForwardError("; ".join(failures))

    async def _ask(self, upstream: Upstream, question: bytes, do_bit: bool) -> UpstreamAnswer:
        query_id = secrets.randbits(16)
        query = (
            struct.pack("!HHHHHH", query_id, RD, 1, 0, 0, 1)
            + question
            + opt_record(OUR_PAYLOAD, do_bit)
        )
        answer = await asyncio.wait_for(self._ask_udp(upstream, query, question), self.timeout)
        if answer.truncated:
            answer = await asyncio.wait_for(self._ask_tcp(upstream, query, question), self.timeout)
        return answer

    async def _ask_udp(self, upstream: Upstream, query: bytes, question: bytes) -> UpstreamAnswer:
        loop = asyncio.get_running_loop()
        family = socket.AF_INET6 if ":" in upstream[0] else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.setblocking(False)
            sock.connect(upstream)  # UDP: no traffic; only this upstream's replies get through
            await loop.sock_sendall(sock, query)
            while True:
                reply = await loop.sock_recv(sock, 65535)
                if reply[:2] != query[:2]:
                    continue  # not ours (late reply to an earlier question, or spoofed)
                try:
                    return UpstreamAnswer.scan(reply, question)
                except WireError:
                    continue

    async def _ask_tcp(self, upstream: Upstream, query: bytes, question: bytes) -> UpstreamAnswer:
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

"""The DNS server's metrics, named like CoreDNS's with the ``nodehost_dns_`` prefix.

* ``nodehost_dns_requests_total`` {server, zone, proto, family, type}
  (CoreDNS: ``coredns_dns_requests_total``);
* ``nodehost_dns_responses_total`` {server, zone, rcode} (``coredns_dns_responses_total``);
* ``nodehost_dns_cache_hits_total`` {server, type: success or denial}
  (``coredns_cache_hits_total``);
* ``nodehost_dns_cache_misses_total`` {server} (``coredns_cache_misses_total``);
* ``nodehost_dns_forward_request_duration_seconds`` {to, rcode}, a histogram
  (``coredns_forward_request_duration_seconds``, same buckets).

``zone`` is always ``.`` (one server block); ``family`` is 1 (IPv4) or 2
(IPv6); the cache is the server's answer cache (a hit is an answer sent
without looking anything up).  Counting stays cheap on the hot path: a
request adds one to the count of its wire question, and the question's type
is read when the counts are read (or when too many distinct questions pile
up, see :data:`FOLD_AT`).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import weakref
from collections.abc import Iterator
from typing import Any

#: Distinct questions kept before they are folded into counts by type: above a cluster's
#: worth of names (10,000 services), so a busy node's steady traffic never folds.
FOLD_AT = 25_000
#: CoreDNS's buckets: 0.25 ms doubling 16 times (to about 8 s).
BUCKETS = tuple(0.00025 * 2**n for n in range(16))
NXDOMAIN = 3
RCODES = {
    0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED",
    6: "YXDOMAIN", 7: "YXRRSET", 8: "NXRRSET", 9: "NOTAUTH", 10: "NOTZONE",
}  # fmt: skip

_LIVE: weakref.WeakSet[DnsStats] = weakref.WeakSet()


class DnsStats:
    """What one DNS server counted; :meth:`hit`/:meth:`miss`/:meth:`answered` on each query."""

    def __init__(self) -> None:
        self.server = "dns://:0"
        self.family = 1
        self.questions: dict[str, dict[bytes, int]] = {"udp": {}, "tcp": {}}
        self.by_type: dict[tuple[str, str], int] = {}
        self.rcodes = [0] * 16
        self.successes = 0
        self.denials = 0
        self.misses = 0
        #: (upstream, rcode) -> counts per bucket (index 16: above the last), then the sum.
        self.upstream: dict[tuple[str, int], list[float]] = {}

    def serving(self, host: str, port: int, ipv6: bool) -> None:
        """The server listens: label its metrics and make them visible."""
        self.server = f"dns://{f'[{host}]' if ipv6 else host}:{port}"
        self.family = 2 if ipv6 else 1
        _LIVE.add(self)

    def closed(self) -> None:
        _LIVE.discard(self)

    def hit(self, proto: str, key: bytes, tail: bytes) -> None:
        """A query (wire ``key``: the message after its ID) answered from the cache."""
        questions = self.questions[proto]
        questions[key] = questions.get(key, 0) + 1
        rcode = tail[1] & 0x0F
        self.rcodes[rcode] += 1
        if rcode == NXDOMAIN or tail[4:6] == b"\0\0":
            self.denials += 1
        else:
            self.successes += 1
        if len(questions) > FOLD_AT:
            self.fold()

    def miss(self, proto: str, key: bytes) -> None:
        """A query that is looked up (its answer is counted by :meth:`answered`)."""
        questions = self.questions[proto]
        questions[key] = questions.get(key, 0) + 1
        self.misses += 1
        if len(questions) > FOLD_AT:
            self.fold()

    def answered(self, response: bytes | None) -> None:
        """A response (a whole message, ID included) sent for a looked-up query."""
        if response is not None and len(response) > 3:
            self.rcodes[response[3] & 0x0F] += 1

    def forwarded(self, to: str, rcode: int, seconds: float) -> None:
        """One upstream exchange took ``seconds`` and ended with ``rcode``."""
        entry = self.upstream.get((to, rcode))
        if entry is None:
            entry = self.upstream[(to, rcode)] = [0.0] * 18
        entry[bisect.bisect_left(BUCKETS, seconds)] += 1  # its own bucket; summed when read
        entry[17] += seconds

    def fold(self) -> None:
        """Move the per-question counts into counts by (proto, type)."""
        for proto, questions in self.questions.items():
            for key, count in questions.items():
                entry = (proto, question_type(key))
                self.by_type[entry] = self.by_type.get(entry, 0) + count
            questions.clear()


def question_type(key: bytes) -> str:
    """The type of the first question of a message without its ID (``A``, ``AAAA``...)."""
    offset = 10
    try:
        while key[offset]:
            offset += key[offset] + 1
    except IndexError:
        return "other"
    if offset + 3 > len(key):
        return "other"
    return _type_text(int.from_bytes(key[offset + 1 : offset + 3], "big"))


@functools.cache
def _type_text(qtype: int) -> str:
    import dns.rdatatype

    return dns.rdatatype.to_text(dns.rdatatype.RdataType.make(qtype))


class DnsCollector:
    """Yields the metrics of every DNS server of this process (see the module docstring)."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        servers = list(_LIVE)
        requests = CounterMetricFamily(
            "nodehost_dns_requests",
            "DNS requests.",
            labels=["server", "zone", "proto", "family", "type"],
        )
        responses = CounterMetricFamily(
            "nodehost_dns_responses", "DNS responses by rcode.", labels=["server", "zone", "rcode"]
        )
        hits = CounterMetricFamily(
            "nodehost_dns_cache_hits", "Answer cache hits.", labels=["server", "type"]
        )
        misses = CounterMetricFamily(
            "nodehost_dns_cache_misses", "Answer cache misses.", labels=["server"]
        )
        duration = HistogramMetricFamily(
            "nodehost_dns_forward_request_duration_seconds",
            "Time of each exchange with an upstream nameserver.",
            labels=["to", "rcode"],
        )
        for stats in servers:
            stats.fold()
            for (proto, qtype), count in sorted(stats.by_type.items()):
                requests.add_metric([stats.server, ".", proto, str(stats.family), qtype], count)
            for rcode, count in enumerate(stats.rcodes):
                if count:
                    responses.add_metric([stats.server, ".", RCODES.get(rcode, str(rcode))], count)
            hits.add_metric([stats.server, "success"], stats.successes)
            hits.add_metric([stats.server, "denial"], stats.denials)
            misses.add_metric([stats.server], stats.misses)
            for (to, rcode), entry in sorted(stats.upstream.items()):
                counts = list(itertools.accumulate(entry[:17]))
                buckets = [(repr(bound), counts[i]) for i, bound in enumerate(BUCKETS)]
                label = RCODES.get(rcode, str(rcode))
                duration.add_metric([to, label], [*buckets, ("+Inf", counts[16])], entry[17])
        yield from (requests, responses, hits, misses, duration)

"""The miss path: one query's bytes in, its response's bytes out (dnspython parses here).

:meth:`Responder.respond` returns the response, ``None`` (say nothing: the
bytes were a response, or too short to answer), or a coroutine for answers that
need an upstream.  Every response it can prebuild goes into the
:class:`~nodehost.plugins.dns.wire.HotCache` under the key the server gave,
so the next identical query never gets here.

Rules, in order: unparseable -> FORMERR (nothing cached); a response -> silence;
an opcode other than QUERY -> NOTIMP; not exactly one question -> FORMERR;
EDNS version above 0 -> BADVERS; a class other than IN -> REFUSED; a name in the
cluster domain -> the cluster's answer (AA set); a reverse name of a known IP
(PTR) or inside a reverse network -> the cluster's answer; anything else ->
the upstreams (REFUSED when there are none;
SERVFAIL when every upstream failed, or when too many questions are already
waiting for one).  Every response has RA set, copies RD and CD, and carries an
OPT record (payload 1232, DO copied) when the query had one.  A response
larger than the client's limit (512, or its EDNS payload up to our own 1232,
over UDP; 65535 over TCP) is sent empty with TC set.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, cast

# Before dnspython: its idna check answered without importing importlib.metadata.
from nodehost.plugins.dns import features  # noqa: F401

# isort: split
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from nodehost.plugins.dns.forward import Forwarder, ForwardError
from nodehost.plugins.dns.records import QUERY_NAME, TTL, Answer, ClusterZone, Dep, Record
from nodehost.plugins.dns.wire import (
    OUR_PAYLOAD,
    ClientEdns,
    HotCache,
    UpstreamAnswer,
    WireError,
    error_response,
    plain_query,
    question_end,
    udp_limit,
)

FORMERR = 1
SERVFAIL = 2
NOTIMP = 4
TCP_LIMIT = 65535
MAX_PENDING = 1024
REVERSE_SUFFIXES = ("in-addr.arpa", "ip6.arpa")

Response = bytes | None | Coroutine[Any, Any, bytes | None]
#: Sends a response that is ready later (the UDP path's way to answer a forwarded question).
Reply = Callable[[bytes | None], None]


class Responder:
    """Answers queries from ``zone`` and ``forwarder`` (None: nothing is forwarded).

    ``on_sweep_due`` is called when the hot cache holds forwarded answers that
    must be swept within a second (the server schedules the sweep).
    """

    def __init__(
        self,
        zone: ClusterZone,
        cache: HotCache,
        forwarder: Forwarder | None,
        *,
        on_sweep_due: Any = None,
        log: Any = None,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self.zone = zone
        self.cache = cache
        self.forwarder = forwarder
        self.on_sweep_due = on_sweep_due
        self.log = log
        self.max_pending = max_pending
        self.pending = 0
        self._serial = int(time.time()) // 3600 * 3600
        self._soas: dict[str, dns.rrset.RRset] = {}
        self._zone_wire = _wire(dns.name.from_text(zone.domain)).lower()

    def soa_of(self, zone: str) -> dns.rrset.RRset:
        """The SOA of ``zone`` (the cluster domain or one of its reverse zones), made once."""
        soa = self._soas.get(zone)
        if soa is None:
            soa = self._soas[zone] = dns.rrset.from_text(
                dns.name.from_text(zone), TTL, "IN", "SOA",
                f"ns.dns.{zone}. hostmaster.{zone}. {self._serial} 28800 7200 604800 {TTL}",
            )  # fmt: skip
        return soa

    def respond(
        self, data: bytes, key: Hashable, tcp: bool, reply: Reply | None = None
    ) -> Response:
        """The response to ``data``; see the module docstring.

        With ``reply``, a forwarded question's response goes to ``reply`` when
        it arrives (and this returns None); without it, it comes as a coroutine.
        """
        if self.forwarder is not None:
            plain = plain_query(data)
            if plain is not None and not self._maybe_ours(data, plain[0]):
                limit = TCP_LIMIT if tcp else udp_limit(plain[1])
                return self._forward(data, plain[0], plain[1], key, limit, reply)
        try:
            query = dns.message.from_wire(data)
            end = question_end(data)
        except Exception:  # dnspython raises many kinds of errors on hostile input
            return error_response(data, FORMERR)
        if query.flags & dns.flags.QR:
            return None
        if query.opcode() != dns.opcode.QUERY:
            return error_response(data, NOTIMP)
        if len(query.question) != 1 or not _plain_question(data, end, query):
            return error_response(data, FORMERR)
        if query.edns > 0:
            return self._badvers(query)
        edns: ClientEdns | None = ClientEdns(query.payload, bool(query.ednsflags & dns.flags.DO))
        edns = edns if query.edns == 0 else None
        limit = TCP_LIMIT if tcp else udp_limit(edns)
        question = query.question[0]
        if question.rdclass != dns.rdataclass.IN:
            return self._cluster(query, Answer(rcode="REFUSED"), key, limit)
        name = question.name.to_text(omit_final_dot=True).lower()
        qtype = dns.rdatatype.to_text(question.rdtype)
        if self.zone.owns(name):
            return self._cluster(query, self.zone.answer(name, qtype), key, limit)
        deps: frozenset[Dep] = frozenset()
        if name.endswith(REVERSE_SUFFIXES):
            reverse = self.zone.reverse(name, qtype)
            if reverse is not None:
                return self._cluster(query, reverse, key, limit)
            deps = self.zone.reverse_deps(name)
        if self.forwarder is None:
            return self._cluster(query, Answer(rcode="REFUSED", deps=deps), key, limit)
        return self._forward(data, end, edns, key, limit, reply)

    def _maybe_ours(self, data: bytes, end: int) -> bool:
        """Whether the question's name may be in the cluster domain or a reverse zone (then it
        takes the full path); a name that is not ends otherwise in wire format."""
        return data[12 : end - 4].lower().endswith((self._zone_wire, b"\x04arpa\x00"))

    # cluster answers -------------------------------------------------------------------------

    def _cluster(
        self, query: dns.message.Message, answer: Answer, key: Hashable, limit: int
    ) -> Response:
        if answer.chase is not None and self.forwarder is not None:
            return self._chase(query, answer, limit)
        wire = self._render(query, answer, limit, [])
        self.cache.put(key, wire, answer.deps)
        return wire

    async def _chase(self, query: dns.message.Message, answer: Answer, limit: int) -> bytes:
        """An ExternalName CNAME plus its target's upstream records (the CNAME alone on failure)."""
        assert self.forwarder is not None and answer.chase is not None
        qtype = query.question[0].rdtype
        target = _wire(dns.name.from_text(answer.chase)) + qtype.to_bytes(2, "big") + b"\x00\x01"
        extra: list[dns.rrset.RRset] = []
        try:
            upstream, age = await self.forwarder.resolve(target.lower())
            parsed = dns.message.from_wire(upstream.wire)
        except (ForwardError, dns.exception.DNSException) as error:
            self._debug("ExternalName target not resolved", name=answer.chase, error=str(error))
        else:
            for rrset in parsed.answer:
                rrset.ttl = max(0, rrset.ttl - age)
                extra.append(rrset)
        return self._render(query, answer, limit, extra)

    def _render(
        self,
        query: dns.message.Message,
        answer: Answer,
        limit: int,
        extra: list[dns.rrset.RRset],
    ) -> bytes:
        response = self._response(query)
        response.set_rcode(dns.rcode.from_text(answer.rcode))
        if answer.rcode != "REFUSED":
            response.flags |= dns.flags.AA
        qname = query.question[0].name
        try:
            response.answer.extend(self._rrsets(answer.answer, qname))
            response.answer.extend(extra)
            response.additional.extend(self._rrsets(answer.additional, qname))
        except (dns.exception.DNSException, ValueError) as error:
            self._debug("cannot render a cluster record", error=str(error))
            response.answer.clear()
            response.additional.clear()
            response.set_rcode(dns.rcode.SERVFAIL)
        if answer.negative:
            response.authority.append(self.soa_of(answer.zone or self.zone.domain))
        try:
            return response.to_wire(max_size=limit)
        except dns.exception.TooBig:
            truncated = self._response(query)
            truncated.flags |= dns.flags.AA | dns.flags.TC
            return truncated.to_wire()

    def _rrsets(self, records: tuple[Record, ...], qname: dns.name.Name) -> list[dns.rrset.RRset]:
        rrsets: dict[tuple[str, str], dns.rrset.RRset] = {}
        for record in records:
            rrset = rrsets.get((record.name, record.rtype))
            if rrset is None:
                owner = qname if record.name == QUERY_NAME else dns.name.from_text(record.name)
                rrset = dns.rrset.RRset(
                    owner, dns.rdataclass.IN, dns.rdatatype.from_text(record.rtype)
                )
                rrsets[(record.name, record.rtype)] = rrset
            rrset.add(self._rdata(record), record.ttl)
        return list(rrsets.values())

    def _rdata(self, record: Record) -> dns.rdata.Rdata:
        if record.rtype == "SOA":
            return self.soa_of(str(record.value))[0]
        if record.rtype == "SRV":
            priority, weight, port, target = cast("tuple[int, int, int, str]", record.value)
            text = f"{priority} {weight} {port} {target}."
        elif record.rtype in ("CNAME", "PTR", "NS"):
            text = f"{record.value}."
        elif record.rtype == "TXT":
            text = f'"{record.value}"'
        else:
            text = str(record.value)
        return dns.rdata.from_text(dns.rdataclass.IN, record.rtype, text)

    def _response(self, query: dns.message.Message) -> dns.message.Message:
        response = dns.message.make_response(query, recursion_available=True, pad=0)
        response.flags |= query.flags & dns.flags.CD
        if query.edns >= 0:
            do_bit = query.ednsflags & dns.flags.DO
            response.use_edns(0, do_bit, OUR_PAYLOAD, query.payload)
        return response

    def _badvers(self, query: dns.message.Message) -> bytes:
        response = self._response(query)
        response.set_rcode(dns.rcode.BADVERS)
        return response.to_wire()

    # forwarded answers -----------------------------------------------------------------------

    def _forward(
        self,
        data: bytes,
        end: int,
        edns: ClientEdns | None,
        key: Hashable,
        limit: int,
        reply: Reply | None = None,
    ) -> Response:
        assert self.forwarder is not None
        question = data[12:end].lower()
        do_bit = edns.do_bit if edns is not None else False
        hit = self.forwarder.cached(question, do_bit)
        if hit is not None:
            answer, age = hit
            wire = answer.render(data, end, edns, age, limit)
            if self.cache.put_until_sweep(key, wire) and self.on_sweep_due is not None:
                self.on_sweep_due()
            return wire
        if self.pending >= self.max_pending:
            return error_response(data, SERVFAIL, end)
        if reply is None:
            return self._forward_later(data, end, edns, question, do_bit, limit)
        self.pending += 1

        def done(answer: UpstreamAnswer | None, reason: str) -> None:
            self.pending -= 1
            reply(self._forwarded(data, end, edns, limit, answer, 0, reason))

        self.forwarder.submit(question, do_bit, done)
        return None

    def _forwarded(
        self,
        data: bytes,
        end: int,
        edns: ClientEdns | None,
        limit: int,
        answer: UpstreamAnswer | None,
        age: int,
        reason: str,
    ) -> bytes | None:
        """The response built from an upstream answer ``age`` seconds old (SERVFAIL without
        one: ``reason`` says why)."""
        if answer is None:
            self._debug("forwarding failed", error=reason)
            return error_response(data, SERVFAIL, end)
        try:
            return answer.render(data, end, edns, age, limit)
        except WireError:
            return error_response(data, SERVFAIL, end)

    async def _forward_later(
        self,
        data: bytes,
        end: int,
        edns: ClientEdns | None,
        question: bytes,
        do_bit: bool,
        limit: int,
    ) -> bytes | None:
        assert self.forwarder is not None
        self.pending += 1
        try:
            answer, age = await self.forwarder.resolve(question, do_bit)
        except ForwardError as error:
            return self._forwarded(data, end, edns, limit, None, 0, str(error))
        finally:
            self.pending -= 1
        return self._forwarded(data, end, edns, limit, answer, age, "")

    def _debug(self, event: str, **fields: Any) -> None:
        if self.log is not None:
            self.log.debug(event, **fields)


def _plain_question(data: bytes, end: int, query: dns.message.Message) -> bool:
    """Whether the question is written out in full at offset 12 (no compression pointer)."""
    name = _wire(query.question[0].name)
    return data[12 : end - 4].lower() == name.lower()


def _wire(name: dns.name.Name) -> bytes:
    """``name`` in wire format, uncompressed (``to_wire`` without a file returns bytes)."""
    return name.to_wire() or b""

"""DNS wire format without a DNS library: the hot-path cache and upstream answers.

* :class:`HotCache` -- prebuilt responses keyed by the query's bytes after its
  ID (so the flags, the question in the asker's case and the EDNS record are
  all part of the key).  A hit costs one dict lookup and one concatenation:
  ``query[:2] + entry``.  Entries for cluster answers carry the dependency keys
  they were computed from and are dropped exactly when one of those changes;
  entries made from forwarded answers live until the next :meth:`sweep` (the
  server sweeps every second), so their TTLs count down.
* :class:`UpstreamAnswer` -- an upstream response kept in the forwarder's cache,
  scanned once (TTL positions, the OPT record) so that each client's copy is
  rendered by patching bytes: its ID, flags and question case, TTLs decreased
  by the time spent in the cache, the OPT record replaced by ours.

Every function here treats its input as hostile: malformed data raises
:class:`WireError`, never anything else.
"""

from __future__ import annotations

import struct
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

OUR_PAYLOAD = 1232
"""The EDNS UDP payload size we advertise and ask upstreams for (DNS flag day 2020)."""

MAX_CACHE_TTL = 3600
TYPE_OPT = 41
TYPE_SOA = 6

# header flag bits (second 16-bit word)
QR = 0x8000
AA = 0x0400
TC = 0x0200
RD = 0x0100
RA = 0x0080
AD = 0x0020
CD = 0x0010
DO = 0x8000  # in the OPT record's TTL field

_HEADER = struct.Struct("!HHHHHH")
_RR_FIXED = struct.Struct("!HHIH")
_TTL = struct.Struct("!I")


class WireError(ValueError):
    """The bytes are not a well-formed DNS message (or not the one expected)."""


# --- scanning --------------------------------------------------------------------------------


def skip_name(data: bytes, offset: int) -> int:
    """The offset just after the (possibly compressed) name at ``offset``.

    Pointers are not followed, so a compression loop cannot hang this.
    """
    end = len(data)
    while True:
        if offset >= end:
            raise WireError("name runs past the end of the message")
        length = data[offset]
        if length == 0:
            return offset + 1
        if length & 0xC0 == 0xC0:
            if offset + 2 > end:
                raise WireError("compression pointer runs past the end")
            return offset + 2
        if length & 0xC0:
            raise WireError("unknown label type")
        offset += 1 + length


def question_end(data: bytes) -> int:
    """The offset after the first question (name, type, class) of a one-question message."""
    if len(data) < 12:
        raise WireError("shorter than a DNS header")
    end = skip_name(data, 12) + 4
    if end > len(data):
        raise WireError("question runs past the end")
    return end


def opt_record(payload: int = OUR_PAYLOAD, do_bit: bool = False) -> bytes:
    """An OPT pseudo-record (EDNS version 0) advertising ``payload`` bytes."""
    return b"\x00" + _RR_FIXED.pack(TYPE_OPT, payload, DO if do_bit else 0, 0)


_OPT = opt_record()
_OPT_DO = opt_record(do_bit=True)


def plain_query(data: bytes) -> tuple[int, ClientEdns | None] | None:
    """``(question end, the asker's EDNS)`` of an ordinary query, else None.

    Ordinary: a QUERY (not a response), one question of class IN written out
    without compression, no answer or authority records, and either nothing
    more or exactly one well-formed EDNS version 0 OPT record.  Everything
    else (None) takes the full parse, which answers it by the rules; this is
    the forwarding path's shortcut past that parse, and never answers
    differently.
    """
    size = len(data)
    if size < 17 or data[2] & 0xF8 or data[4:10] != b"\x00\x01\x00\x00\x00\x00":
        return None
    additional = (data[10] << 8) | data[11]
    offset = 12
    while True:
        if offset >= size:
            return None
        length = data[offset]
        if length == 0:
            break
        if length > 63:
            return None
        offset += length + 1
    end = offset + 5
    if end - 12 > 259 or end > size or data[end - 2 : end] != b"\x00\x01":
        return None
    if additional == 0:
        return (end, None) if end == size else None
    if additional != 1 or size < end + 11 or data[end : end + 3] != b"\x00\x00\x29":
        return None
    payload, _, version, flags, rdlength = struct.unpack_from("!HBBHH", data, end + 3)
    if version != 0 or end + 11 + rdlength != size or not _options_fit(data, end + 11, size):
        return None
    return end, ClientEdns(payload, bool(flags & DO))


def _options_fit(data: bytes, offset: int, end: int) -> bool:
    """Whether the EDNS options from ``offset`` fill exactly up to ``end``."""
    while offset < end:
        if offset + 4 > end:
            return False
        offset += 4 + ((data[offset + 2] << 8) | data[offset + 3])
    return offset == end


@dataclass(frozen=True)  # per query: the compiled __init__ is faster
class ClientEdns:
    """What the asker's OPT record said: ``payload`` and the DO bit (None: no EDNS)."""

    payload: int
    do_bit: bool

    @property
    def udp_limit(self) -> int:
        """The largest UDP answer: the client's buffer, at least 512 and at most
        :data:`OUR_PAYLOAD` whatever it advertises (a 58-byte query advertising 65535 must
        not draw an answer 84 times its size: RFC 9715's and DNS flag day 2020's 1232)."""
        return max(512, min(self.payload, OUR_PAYLOAD))


def udp_limit(edns: ClientEdns | None) -> int:
    return edns.udp_limit if edns is not None else 512


# --- the hot-path cache --------------------------------------------------------------------


class HotCache:
    """Prebuilt responses (without their first two bytes) by query bytes after the ID.

    ``entries`` is read directly by the server's hot path.  The cache holds at
    most ``limit`` entries; when full it starts again empty (cheap, and an
    attacker varying the question case can only make it rebuild).
    """

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self.entries: dict[Hashable, bytes] = {}
        self._by_dep: dict[Hashable, set[Hashable]] = {}
        self._expiring: list[Hashable] = []

    def __len__(self) -> int:
        return len(self.entries)

    def put(self, key: Hashable, response: bytes, deps: Iterable[Hashable]) -> None:
        """Keep ``response`` for ``key`` until one of ``deps`` is invalidated."""
        self._make_room()
        self.entries[key] = response[2:]
        for dep in deps:
            self._by_dep.setdefault(dep, set()).add(key)

    def put_until_sweep(self, key: Hashable, response: bytes) -> bool:
        """Keep ``response`` for ``key`` until the next :meth:`sweep`; True if a sweep is due."""
        self._make_room()
        self.entries[key] = response[2:]
        self._expiring.append(key)
        return len(self._expiring) == 1

    def invalidate(self, deps: Iterable[Hashable]) -> int:
        """Drop every entry computed from one of ``deps``; how many were dropped."""
        dropped = 0
        for dep in deps:
            for key in self._by_dep.pop(dep, ()):
                if self.entries.pop(key, None) is not None:
                    dropped += 1
        return dropped

    def sweep(self) -> None:
        """Drop the entries made by :meth:`put_until_sweep`."""
        expiring, self._expiring = self._expiring, []
        for key in expiring:
            self.entries.pop(key, None)

    def clear(self) -> None:
        self.entries.clear()
        self._by_dep.clear()
        self._expiring.clear()

    def _make_room(self) -> None:
        if len(self.entries) >= self.limit:
            self.clear()


# --- upstream answers ----------------------------------------------------------------------


class UpstreamAnswer(NamedTuple):
    """One upstream response, ready to be copied out to clients.

    Scanned once: ``body`` is everything after the question with the
    upstream's OPT record taken out and each TTL already lowered where
    RFC 2308 says (a negative answer's SOA: ``min(TTL, MINIMUM)``);
    ``ttls`` are ``(offset in body, TTL)``.  ``lifetime`` is how long it may be
    cached (seconds; 0: not at all): the smallest TTL of its records, or for a
    negative answer the SOA's ``min(TTL, MINIMUM)``, capped at
    :data:`MAX_CACHE_TTL`.
    """

    wire: bytes
    ttls: tuple[tuple[int, int], ...]
    rcode: int
    lifetime: int
    truncated: bool
    body: bytes
    counts: tuple[int, int, int]  # answer, authority, additional (without the OPT record)
    flags: int

    @classmethod
    def scan(cls, wire: bytes, question: bytes) -> UpstreamAnswer:
        """Check ``wire`` answers ``question`` (wire name + type + class, any case) and scan it."""
        size = len(wire)
        if size < 12:
            raise WireError("shorter than a DNS header")
        _, flags, qdcount, ancount, nscount, arcount = _HEADER.unpack_from(wire)
        if not flags & QR or qdcount != 1:
            raise WireError("not a response to one question")
        end = 12 + len(question)
        if end > size or wire[12:end].lower() != question.lower():
            raise WireError("the response is for another question")
        offset, ttls, opt, soa_minimum = end, [], None, None
        for index in range(ancount + nscount + arcount):
            start = offset
            if offset < size and wire[offset] >= 0xC0:
                offset += 2  # the usual owner name: one compression pointer
            else:
                offset = skip_name(wire, offset)
            if offset + 10 > size:
                raise WireError("record runs past the end")
            rtype, _, ttl, rdlength = _RR_FIXED.unpack_from(wire, offset)
            rdata_end = offset + 10 + rdlength
            if rdata_end > size:
                raise WireError("record data runs past the end")
            if rtype == TYPE_OPT:
                opt = (start, rdata_end)
            else:
                if rtype == TYPE_SOA and ancount <= index < ancount + nscount and rdlength >= 20:
                    (soa_minimum,) = _TTL.unpack_from(wire, rdata_end - 4)
                    ttl = min(ttl, soa_minimum)
                ttls.append((offset + 4, ttl))
            offset = rdata_end
        rcode = flags & 0xF
        truncated = bool(flags & TC)
        lifetime = _lifetime(rcode, ancount, ttls, soa_minimum, truncated)
        body = wire[end:offset]
        ttl_list: list[tuple[int, int]] = []
        if opt is not None:
            body = wire[end : opt[0]] + wire[opt[1] : offset]
            cut = opt[1] - opt[0]
            ttl_list = [(at - end - (cut if at > opt[0] else 0), ttl) for at, ttl in ttls]
        else:
            ttl_list = [(at - end, ttl) for at, ttl in ttls]
        if soa_minimum is not None:  # RFC 2308: the SOA's TTL as lowered above
            patched = bytearray(body)
            for at, ttl in ttl_list:
                _TTL.pack_into(patched, at, ttl)
            body = bytes(patched)
        counts = (ancount, nscount, arcount - (1 if opt is not None else 0))
        return cls(wire, tuple(ttl_list), rcode, lifetime, truncated, body, counts, flags)

    def render(
        self,
        query: bytes,
        query_end: int,
        edns: ClientEdns | None,
        age: int,
        limit: int,
    ) -> bytes:
        """This answer for ``query`` (its ID, RD/CD flags and question bytes), ``age`` seconds old.

        Responses longer than ``limit`` become an empty truncated (TC) answer.
        """
        body: bytes | bytearray = self.body
        if age > 0:
            body = bytearray(body)
            for position, ttl in self.ttls:
                _TTL.pack_into(body, position, max(0, ttl - age))
        tail = (_OPT_DO if edns.do_bit else _OPT) if edns is not None else b""
        flags = QR | RA | (self.flags & (TC | 0xF)) | (((query[2] << 8) | query[3]) & (RD | CD))
        answers, authority, additional = self.counts
        header = _HEADER.pack(
            _id(query), flags, 1, answers, authority, additional + (1 if tail else 0)
        )
        response = header + query[12:query_end] + body + tail
        if len(response) <= limit:
            return response
        return truncated_response(query, query_end, flags, tail)


def _lifetime(
    rcode: int, ancount: int, ttls: list[tuple[int, int]], soa_minimum: int | None, tc: bool
) -> int:
    if tc or rcode not in (0, 3):
        return 0
    if ancount == 0 and soa_minimum is None:
        return 0
    return min([ttl for _, ttl in ttls] + [MAX_CACHE_TTL]) if ttls else 0


def _id(query: bytes) -> int:
    return (query[0] << 8) | query[1]


def truncated_response(query: bytes, query_end: int, flags: int, opt: bytes = b"") -> bytes:
    """A response with the question only and TC set (the client retries over TCP)."""
    header = _HEADER.pack(_id(query), flags | TC, 1, 0, 0, 1 if opt else 0)
    return header + query[12:query_end] + opt


def error_response(query: bytes, rcode: int, query_end: int | None = None) -> bytes | None:
    """A bare error response (header, and the question when ``query_end`` is known).

    None when ``query`` is too short to answer or is itself a response.
    """
    if len(query) < 12:
        return None
    _, asked = struct.unpack_from("!HH", query)
    if asked & QR:
        return None
    flags = QR | RA | (asked & (0x7800 | RD | CD)) | rcode
    question = query[12:query_end] if query_end is not None else b""
    return _HEADER.pack(_id(query), flags, 1 if question else 0, 0, 0, 0) + question

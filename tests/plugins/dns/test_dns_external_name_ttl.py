"""An ExternalName answer carries its target's upstream records with the TTL they have left.

In process, with a forwarder stand-in that returns a cached upstream answer and
its age: no clock, no network.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import dns.message
import dns.rrset

from nodehost.plugins.dns.records import ClusterRecords, ClusterZone, Service
from nodehost.plugins.dns.respond import Responder
from nodehost.plugins.dns.wire import HotCache

TARGET = "www.example.com."


@dataclass
class Cached:
    wire: bytes


class AgedForwarder:
    """Answers every question with one A record of TTL 300, cached ``age`` seconds ago."""

    def __init__(self, age: int) -> None:
        self.age = age

    async def resolve(self, question: bytes, do_bit: bool = False) -> tuple[Cached, int]:
        query = dns.message.make_query(TARGET, "A")
        response = dns.message.make_response(query)
        response.answer.append(dns.rrset.from_text(TARGET, 300, "IN", "A", "192.0.2.80"))
        return Cached(response.to_wire()), self.age


def ask_external_name(age: int) -> dns.message.Message:
    records = ClusterRecords()
    service = Service("default", "search", type="ExternalName", external_name="www.example.com")
    records.set_service(("default", "search"), service)
    responder = Responder(ClusterZone("cluster.local", records), HotCache(100), AgedForwarder(age))
    query = dns.message.make_query("search.default.svc.cluster.local.", "A")
    result = responder.respond(query.to_wire(), b"k", False)
    wire = asyncio.run(result) if asyncio.iscoroutine(result) else result
    return dns.message.from_wire(wire)


def target_ttl(response: dns.message.Message) -> int:
    [rrset] = [r for r in response.answer if r.rdtype == dns.rdatatype.A]
    return rrset.ttl


def test_the_target_records_age_with_the_forwarders_cache() -> None:
    assert target_ttl(ask_external_name(age=0)) == 300
    assert target_ttl(ask_external_name(age=120)) == 180


def test_a_ttl_never_goes_below_zero() -> None:
    assert target_ttl(ask_external_name(age=400)) == 0


def test_the_cname_comes_first_and_names_the_target() -> None:
    response = ask_external_name(age=5)
    cname = response.answer[0]
    assert cname.rdtype == dns.rdatatype.CNAME and cname[0].target.to_text() == TARGET

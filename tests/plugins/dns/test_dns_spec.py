"""Conformance to the Kubernetes DNS-Based Service Discovery specification 1.1.0.

An oracle of its own: the specification's examples (``kubernetes/dns``
``docs/specification.md``, sections 2.2-2.6) and the cases of CoreDNS's
kubernetes plugin tests (``handler_test.go``, ``handler_case_test.go``,
``kubernetes_apex_test.go``, ``handler_pod_insecure_test.go``,
``reverse_test.go``), translated into records files and expected answers and
asked over UDP with dnspython (a few with dig) of the real server.

Where nodehost differs on purpose the case says so and docs/operating/dns.rst, "Names
answered", lists it: an endpoint without a hostname is named by the FNV-32a
hash of its IP (Origin) where CoreDNS writes the dashed IP; SRV priority 10
and weights sharing 100 (SkyDNS) where CoreDNS writes 0 and its own weights.
Neither is prescribed by the specification.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass, field

import dns.flags
import dns.rdatatype
import pytest
from dnsrun import DOMAIN, RunningServer, ask, dig, needs_dig, rcode, write_records

from nodehost.plugins.dns.records import fnv32a_hex

D = DOMAIN

# --- the records -----------------------------------------------------------------------------


def _service(name: str, namespace: str, ip: str | list[str], *ports: dict) -> dict:
    ips = {"clusterIPs": ip} if isinstance(ip, list) else {"clusterIP": ip}
    return {"name": name, "namespace": namespace, **ips, "ports": list(ports)}


def _endpoints(name: str, namespace: str, *subsets: tuple[list, list]) -> dict:
    subsets_ = [
        {
            "addresses": [dict(zip(("ip", "hostname"), a, strict=False)) for a in addresses],
            "ports": ports,
        }
        for addresses, ports in subsets
    ]
    return {"name": name, "namespace": namespace, "subsets": subsets_}


HTTP = {"name": "http", "port": 80, "protocol": "TCP"}
HTTPS = {"name": "https", "port": 443}

# fmt: off
#: The specification's examples, CoreDNS's handler fixtures and the issue's cases.
RECORDS = {
    "services": [
        # spec 2.3: kubernetes.default, given both families (2.3.1's A and AAAA examples)
        _service("kubernetes", "default", ["10.3.0.1", "2001:db8::1"], HTTPS),
        # spec 2.4: a headless service with hostnames
        _service("headless", "default", "None", HTTPS),
        # spec 2.5
        {"name": "foo", "namespace": "default", "externalName": "www.example.com"},
        # issue 4: every port on the bare name; unnamed ports have no SRV name
        _service(
            "multi",
            "default",
            "10.3.0.20",
            HTTP,
            {"name": "dns", "port": 53, "protocol": "UDP"},
            {"port": 8080},
        ),
        # CoreDNS handler_test.go (svcempty moved off svc1's IP: two PTRs otherwise)
        _service(
            "kubedns", "kube-system", "10.0.0.10", {"name": "dns", "port": 53, "protocol": "UDP"}
        ),
        _service("svc1", "testns", "10.0.0.1", HTTP),
        _service("svcempty", "testns", "10.0.0.4", HTTP),
        _service("svc6", "testns", "1234:abcd::1", HTTP),
        _service("hdls1", "testns", "None"),
        _service("hdlsprtls", "testns", "None"),
        {
            "name": "external",
            "namespace": "testns",
            "externalName": "ext.interwebs.test",
            "ports": [HTTP],
        },
        {
            "name": "external-to-service",
            "namespace": "testns",
            "externalName": f"svc1.testns.svc.{D}",
            "ports": [HTTP],
        },
        _service("svc-dual-stack", "testns", ["10.0.0.3", "10::3"], HTTP),
        # issue 6: headless without a ready address, with and without an Endpoints object
        _service("hdls-empty", "testns", "None", HTTP),
        _service("hdls-none", "testns", "None", HTTP),
    ],
    "endpoints": [
        _endpoints(
            "headless",
            "default",
            (
                [
                    ("10.3.0.100", "my-pet"),
                    ("10.3.0.101", "my-pet-2"),
                    ("10.3.0.102",),
                    ("2001:db8::100", "my-pet-6"),
                ],
                [HTTPS],
            ),
        ),
        _endpoints("kubedns", "kube-system", ([("172.0.0.100",)], [{"name": "dns", "port": 53}])),
        _endpoints("svc1", "testns", ([("172.0.0.1", "ep1a")], [HTTP])),
        _endpoints("svcempty", "testns", ([], [HTTP])),
        _endpoints(
            "hdls1",
            "testns",
            (
                [
                    ("172.0.0.2",),
                    ("172.0.0.3",),
                    ("172.0.0.4", "dup-name"),
                    ("172.0.0.5", "dup-name"),
                    ("5678:abcd::1",),
                    ("5678:abcd::2",),
                ],
                [HTTP],
            ),
        ),
        _endpoints("hdlsprtls", "testns", ([("172.0.0.20",)], [])),
        _endpoints("hdls-empty", "testns", ([], [HTTP])),
    ],
}

#: CoreDNS's reverse_test.go fixture (its own server: 1234:abcd::1 is svc6's cluster IP above).
REVERSE_RECORDS = {
    "services": [
        _service("svc1", "testns", "192.168.1.100", HTTP),
        _service("svc2", "testns", "None", HTTP),
    ],
    "endpoints": [
        _endpoints(
            "svc1",
            "testns",
            ([("10.0.0.100", "ep1a"), ("10.0.0.99", "double-ep"), ("10.0.0.102",)], [HTTP]),
            (
                [
                    ("1234:abcd::1", "ep1b"),
                    ("fd00:77:30::a", "ip6svc1ex"),
                    ("fd00:77:30::2:9ba6", "ip6svc1in"),
                ],
                [HTTP],
            ),
            ([("10.0.0.100", "ep1a")], [HTTP]),  # the same address in a second slice
        ),
        # an endpoint holding svc1's cluster IP: the cluster IP's PTR wins, as in CoreDNS
        _endpoints("svc2", "testns", ([("10.0.0.99", "double-ep"), ("192.168.1.100", "shadow")],
                                      [HTTP])),
    ],
}
# fmt: on
REVERSE_CIDRS = ("10.0.0.0/16", "192.168.0.0/16", "1234:abcd::/64", "fd00:77:30::/64")


def h(ip: str) -> str:
    """nodehost's (Origin's) label of an endpoint without a hostname."""
    return fnv32a_hex(ip)


# --- the cases -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One question and what must come back.

    ``name`` is relative to the cluster domain unless it ends in ``arpa``;
    ``answer``/``extra`` hold ``(type, rdata)`` (owner: the question) or
    ``(owner, type, rdata)``; ``soa`` is the zone whose SOA a negative answer
    carries (the cluster domain by default).
    """

    name: str
    qtype: str
    rcode: str = "NOERROR"
    answer: tuple[tuple[str, ...], ...] = ()
    extra: tuple[tuple[str, ...], ...] | None = None
    soa: str = D
    source: str = ""
    ttl: int = 30
    servers: tuple[str, ...] = field(default=("main",))

    @property
    def qname(self) -> str:
        if self.name.endswith("arpa"):
            return self.name
        return f"{self.name}.{D}" if self.name else D

    def expected(self, section: tuple[tuple[str, ...], ...]) -> set[tuple[str, str, str]]:
        owner = self.qname.lower() + "."
        return {(owner, *item) if len(item) == 2 else tuple(item) for item in section}  # type: ignore[misc]


def srv(port: int, target: str, weight: int = 100) -> tuple[str, str]:
    return ("SRV", f"10 {weight} {port} {target}.{D}.")


def a(owner: str, ip: str) -> tuple[str, str, str]:
    return (f"{owner}.{D}.", "AAAA" if ":" in ip else "A", ip)


def ptr(target: str) -> tuple[str, str]:
    return ("PTR", f"{target}.{D}.")


R = ("reverse",)


def rev(ip: str) -> str:
    """The reverse name of ``ip``."""
    return ipaddress.ip_address(ip).reverse_pointer


def rev_zone(network: str) -> str:
    """The reverse zone of a network whose prefix is whole nibbles."""
    net = ipaddress.ip_network(network)
    nibbles = net.network_address.exploded.replace(":", "")[: net.prefixlen // 4]
    return ".".join(reversed(nibbles)) + ".ip6.arpa"


# fmt: off
CASES = [
    # spec 2.2: the schema version
    Case("dns-version", "TXT", answer=(("TXT", '"1.1.0"'),), ttl=28800, source="spec 2.2"),
    Case("dns-version", "A", source="RFC 8020: an existing name has no A: NODATA"),
    # spec 2.3.1: A and AAAA of a service with cluster IPs
    Case("kubernetes.default.svc", "A", answer=(("A", "10.3.0.1"),), source="spec 2.3.1"),
    Case("kubernetes.default.svc", "AAAA", answer=(("AAAA", "2001:db8::1"),), source="spec 2.3.1"),
    # spec 2.3.2: SRV per named port, target the service's name, addresses in additional
    Case(
        "_https._tcp.kubernetes.default.svc", "SRV",
        answer=(srv(443, "kubernetes.default.svc"),),
        extra=(a("kubernetes.default.svc", "10.3.0.1"), a("kubernetes.default.svc", "2001:db8::1")),
        source="spec 2.3.2",
    ),
    Case("_https._udp.kubernetes.default.svc", "SRV", "NXDOMAIN", source="spec 2.3.2: no such port"),
    Case("_http._tcp.multi.default.svc", "SRV", answer=(srv(80, "multi.default.svc"),)),
    Case("_dns._udp.multi.default.svc", "SRV", answer=(srv(53, "multi.default.svc"),)),
    Case("_nope._tcp.multi.default.svc", "SRV", "NXDOMAIN", source="issue 4: unknown port"),
    Case("_http._udp.multi.default.svc", "SRV", "NXDOMAIN", source="issue 4: wrong protocol"),
    Case(
        "multi.default.svc", "SRV",
        answer=(srv(80, "multi.default.svc", 33), srv(53, "multi.default.svc", 33),
                srv(8080, "multi.default.svc", 33)),
        extra=(a("multi.default.svc", "10.3.0.20"),),
        source="issue 4: SRV on the bare name lists every port",
    ),
    Case("_HTTPS._TCP.Kubernetes.Default.SVC", "SRV", answer=(srv(443, "kubernetes.default.svc"),),
         source="spec 2.1: comparisons are case-insensitive"),
    Case("https.tcp.kubernetes.default.svc", "SRV", "NXDOMAIN", source="labels need underscores"),
    # spec 2.3.3: PTR of a cluster IP (both families)
    Case("1.0.3.10.in-addr.arpa", "PTR", answer=(ptr("kubernetes.default.svc"),), source="2.3.3"),
    Case(rev("2001:db8::1"), "PTR", answer=(ptr("kubernetes.default.svc"),), source="spec 2.3.3 (IPv6)"),
    # spec 2.4.1: headless A/AAAA; hostnames
    Case(
        "headless.default.svc", "A",
        answer=(("A", "10.3.0.100"), ("A", "10.3.0.101"), ("A", "10.3.0.102")),
        source="spec 2.4.1",
    ),
    Case("headless.default.svc", "AAAA", answer=(("AAAA", "2001:db8::100"),), source="2.4.1"),
    Case("my-pet.headless.default.svc", "A", answer=(("A", "10.3.0.100"),), source="spec 2.4.1"),
    Case("my-pet-6.headless.default.svc", "AAAA", answer=(("AAAA", "2001:db8::100"),)),
    Case(f"{h('10.3.0.102')}.headless.default.svc", "A", answer=(("A", "10.3.0.102"),),
         source="spec 2.1: an endpoint without hostname has a unique identifier (FNV-32a)"),
    Case("hdls-empty.testns.svc", "A", "NXDOMAIN", source="spec 2.4.1 / issue 6: no ready address"),
    Case("hdls-none.testns.svc", "A", "NXDOMAIN", source="spec 2.4.1 / issue 6: no Endpoints"),
    Case("_http._tcp.hdls-empty.testns.svc", "SRV", "NXDOMAIN", source="issue 6"),
    # spec 2.4.2: headless SRV, one per ready endpoint and named port
    Case(
        "_https._tcp.headless.default.svc", "SRV",
        answer=(srv(443, "my-pet.headless.default.svc", 25),
                srv(443, "my-pet-2.headless.default.svc", 25),
                srv(443, f"{h('10.3.0.102')}.headless.default.svc", 25),
                srv(443, "my-pet-6.headless.default.svc", 25)),
        extra=(a("my-pet.headless.default.svc", "10.3.0.100"),
               a("my-pet-2.headless.default.svc", "10.3.0.101"),
               a(f"{h('10.3.0.102')}.headless.default.svc", "10.3.0.102"),
               a("my-pet-6.headless.default.svc", "2001:db8::100")),
        source="spec 2.4.2",
    ),
    # spec 2.4.3: PTR of ready endpoints, with and without hostname, both families
    Case("100.0.3.10.in-addr.arpa", "PTR", answer=(ptr("my-pet.headless.default.svc"),),
         source="spec 2.4.3 / issue 1"),
    Case("102.0.3.10.in-addr.arpa", "PTR",
         answer=(ptr(f"{h('10.3.0.102')}.headless.default.svc"),), source="issue 1: no hostname"),
    Case(rev("2001:db8::100"), "PTR", answer=(ptr("my-pet-6.headless.default.svc"),), source="issue 1: IPv6"),
    Case("103.0.3.10.in-addr.arpa", "PTR", "NXDOMAIN", soa="3.10.in-addr.arpa",
         source="issue 1: authoritative for the service network's reverse zone"),
    Case("3.10.in-addr.arpa", "SOA", answer=(("SOA", "*"),), soa="3.10.in-addr.arpa"),
    Case("0.3.10.in-addr.arpa", "PTR", soa="3.10.in-addr.arpa", source="RFC 8020: NODATA"),
    Case("1.1.1.1.in-addr.arpa", "PTR", "REFUSED", soa="",
         source="outside the reverse networks: forwarded (no upstream here: REFUSED)"),
    # spec 2.5: ExternalName
    Case("foo.default.svc", "CNAME", answer=(("CNAME", "www.example.com."),), source="spec 2.5"),
    Case("foo.default.svc", "A", answer=(("CNAME", "www.example.com."),), source="spec 2.5"),
    # spec 2.6: pods by dashed address
    Case("10-244-1-7.default.pod", "A", answer=(("A", "10.244.1.7"),), source="spec 2.6"),
    Case("fd00-1--7.default.pod", "AAAA", answer=(("AAAA", "fd00:1::7"),), source="as CoreDNS"),
    # the zone apex
    Case("", "SOA", answer=(("SOA", "*"),), source="kubernetes_apex_test.go"),
    Case("", "HINFO", source="kubernetes_apex_test.go"),
    Case("", "NS", answer=(("NS", f"ns.dns.{D}."),), extra=(a("ns.dns", "127.0.0.1"),),
         source="kubernetes_apex_test.go / issue 7"),
    Case("ns.dns", "A", answer=(("A", "127.0.0.1"),), source="the apex's name server"),
    Case("dns", "A", source="RFC 8020: above ns.dns"),
    # issue 5: nothing else below a service
    Case("anything.svc1.testns.svc", "A", "NXDOMAIN", source="issue 5"),
    Case("a.b.svc1.testns.svc", "A", "NXDOMAIN", source="issue 5"),
    Case("x._endpoints.svc1.testns.svc", "A", "NXDOMAIN", source="issue 5"),
    Case("_a._b._c.svc1.testns.svc", "SRV", "NXDOMAIN", source="issue 5"),
    Case("ep1a.svc1.testns.svc", "A", answer=(("A", "172.0.0.1"),), source="CoreDNS: endpoints"),
    # Origin's additions (docs/operating/dns.rst: Names answered)
    Case("_endpoints.svc1.testns.svc", "A", answer=(("A", "172.0.0.1"),), source="Origin"),
    Case("svc1.testns.endpoints", "A", answer=(("A", "172.0.0.1"),), source="Origin"),
    Case("ep1a.svc1.testns.endpoints", "A", answer=(("A", "172.0.0.1"),), source="Origin"),
    Case("_http._tcp.svc1.testns.endpoints", "SRV", source="Origin: SRV per endpoint",
         answer=(srv(80, "ep1a.svc1.testns.endpoints"),),
         extra=(a("ep1a.svc1.testns.endpoints", "172.0.0.1"),)),
    Case("openshift.default.svc", "A", answer=(("A", "10.3.0.1"),), source="Origin fallback"),
    Case("_tcp.multi.default.svc", "SRV", answer=(srv(80, "multi.default.svc"),), source="Origin"),
    Case("*._udp.multi.default.svc", "SRV", answer=(srv(53, "multi.default.svc"),), source="Origin"),
    Case("svc1.testns.svc", "ANY", "REFUSED", soa="", source="SkyDNS refused ANY"),
    # CoreDNS handler_test.go, dnsTestCases, in order
    Case("svc1.testns.svc", "A", answer=(("A", "10.0.0.1"),)),
    Case("svcempty.testns.svc", "A", answer=(("A", "10.0.0.4"),)),
    Case("svc1.testns.svc", "SRV", answer=(srv(80, "svc1.testns.svc"),),
         extra=(a("svc1.testns.svc", "10.0.0.1"),)),
    Case("svcempty.testns.svc", "SRV", answer=(srv(80, "svcempty.testns.svc"),),
         extra=(a("svcempty.testns.svc", "10.0.0.4"),)),
    Case("svc6.testns.svc", "SRV", answer=(srv(80, "svc6.testns.svc"),),
         extra=(a("svc6.testns.svc", "1234:abcd::1"),)),
    Case("_http._tcp.svc1.testns.svc", "SRV", answer=(srv(80, "svc1.testns.svc"),),
         extra=(a("svc1.testns.svc", "10.0.0.1"),), source="issue 2"),
    Case("_http._tcp.svcempty.testns.svc", "SRV", answer=(srv(80, "svcempty.testns.svc"),),
         extra=(a("svcempty.testns.svc", "10.0.0.4"),)),
    Case("hdls1.testns.svc", "A",
         answer=tuple(("A", f"172.0.0.{n}") for n in (2, 3, 4, 5))),
    Case("hdlsprtls.testns.svc", "A", answer=(("A", "172.0.0.20"),)),
    Case(f"{h('172.0.0.20')}.hdlsprtls.testns.svc", "A", answer=(("A", "172.0.0.20"),),
         source="CoreDNS 172-0-0-20: the FNV label instead"),
    Case(f"{h('172.0.0.2')}.hdls1.testns.svc", "A", answer=(("A", "172.0.0.2"),)),
    Case(f"{h('172.0.0.3')}.hdls1.testns.svc", "A", answer=(("A", "172.0.0.3"),)),
    Case("dup-name.hdls1.testns.svc", "A", answer=(("A", "172.0.0.4"), ("A", "172.0.0.5"))),
    Case(
        "_http._tcp.hdls1.testns.svc", "SRV",
        answer=tuple(srv(80, f"{label}.hdls1.testns.svc", 20) for label in
                     (h("172.0.0.2"), h("172.0.0.3"), h("5678:abcd::1"), h("5678:abcd::2"),
                      "dup-name")),
        extra=(a(f"{h('172.0.0.2')}.hdls1.testns.svc", "172.0.0.2"),
               a(f"{h('172.0.0.3')}.hdls1.testns.svc", "172.0.0.3"),
               a(f"{h('5678:abcd::1')}.hdls1.testns.svc", "5678:abcd::1"),
               a(f"{h('5678:abcd::2')}.hdls1.testns.svc", "5678:abcd::2"),
               a("dup-name.hdls1.testns.svc", "172.0.0.4"),
               a("dup-name.hdls1.testns.svc", "172.0.0.5")),
    ),
    Case(f"{h('5678:abcd::2')}.hdls1.testns.svc", "AAAA", answer=(("AAAA", "5678:abcd::2"),)),
    Case("external.testns.svc", "CNAME", answer=(("CNAME", "ext.interwebs.test."),)),
    Case("external-to-service.testns.svc", "A",
         answer=(("CNAME", f"svc1.testns.svc.{D}."), a("svc1.testns.svc", "10.0.0.1"))),
    Case("svc1.testns.svc", "AAAA"),
    Case("svc0.testns.svc", "AAAA", "NXDOMAIN"),
    Case("svc0.testns.svc", "A", "NXDOMAIN"),
    Case("svc0.svc-nons.svc", "A", "NXDOMAIN"),
    Case("bogusendpoint.hdls1.testns.svc", "A", "NXDOMAIN"),
    Case("bogusendpoint.svc0.testns.svc", "A", "NXDOMAIN"),
    Case("svc6.testns.svc", "AAAA", answer=(("AAAA", "1234:abcd::1"),)),
    Case("_http._tcp.svc6.testns.svc", "SRV", answer=(srv(80, "svc6.testns.svc"),),
         extra=(a("svc6.testns.svc", "1234:abcd::1"),)),
    Case("hdls1.testns.svc", "AAAA", answer=(("AAAA", "5678:abcd::1"), ("AAAA", "5678:abcd::2"))),
    Case(f"{h('5678:abcd::1')}.hdls1.testns.svc", "AAAA", answer=(("AAAA", "5678:abcd::1"),)),
    Case("svc", "A"),
    Case("pod", "A"),
    Case("testns.svc", "A"),
    Case("svc", "NS"),
    Case("testns.svc", "NS"),
    Case("foo", "NS", "NXDOMAIN"),
    Case("foo.svc", "NS", "NXDOMAIN"),
    Case("svc-dual-stack.testns.svc", "A", answer=(("A", "10.0.0.3"),), source="issue 3"),
    Case("svc-dual-stack.testns.svc", "AAAA", answer=(("AAAA", "10::3"),), source="issue 3"),
    Case("svc-dual-stack.testns.svc", "SRV", answer=(srv(80, "svc-dual-stack.testns.svc"),),
         extra=(a("svc-dual-stack.testns.svc", "10.0.0.3"),
                a("svc-dual-stack.testns.svc", "10::3"))),
    Case("svc1.testns.svc", "SOA"),
    Case("endpoint.external.testns.svc", "CNAME", "NXDOMAIN", source="issue 5"),
    # CoreDNS handler_case_test.go
    Case("not-a-service.testns.svc", "A", "NXDOMAIN"),
    Case("SvC1.TeStNs.SvC", "A", answer=(("A", "10.0.0.1"),)),
    Case("_HtTp._TcP.sVc1.TeStNs.SvC", "SRV", answer=(srv(80, "svc1.testns.svc"),)),
    # CoreDNS handler_pod_insecure_test.go
    Case("10-240-0-1.podns.pod", "A", answer=(("A", "10.240.0.1"),)),
    Case("172-0-0-2.podns.pod", "A", answer=(("A", "172.0.0.2"),)),
    Case("blah.podns.pod", "A", "NXDOMAIN"),
    Case("blah.podns.pod", "AAAA", "NXDOMAIN"),
    Case("blah.podns.pod", "HINFO", "NXDOMAIN"),
    Case("blah.pod-nons.pod", "A", "NXDOMAIN"),
    Case("podns.pod", "A"),
    # CoreDNS reverse_test.go (its own records and reverse zones)
    Case("100.0.0.10.in-addr.arpa", "PTR", answer=(ptr("ep1a.svc1.testns.svc"),), servers=R),
    Case("100.1.168.192.in-addr.arpa", "PTR", answer=(ptr("svc1.testns.svc"),), servers=R),
    Case(rev("1234:abcd::1"), "PTR", answer=(ptr("ep1b.svc1.testns.svc"),), servers=R),
    Case(rev("fd00:77:30::a"), "PTR", answer=(ptr("ip6svc1ex.svc1.testns.svc"),), servers=R),
    Case(rev("fd00:77:30::2:9ba6"), "PTR", answer=(ptr("ip6svc1in.svc1.testns.svc"),), servers=R),
    Case("101.0.0.10.in-addr.arpa", "PTR", "NXDOMAIN", soa="0.10.in-addr.arpa", servers=R),
    Case("example.org", "PTR", "NXDOMAIN", servers=R),
    Case("svc1.testns.svc", "PTR", servers=R),
    Case("svc1.testns.svc.0.10.in-addr.arpa", "A", "NXDOMAIN", soa="0.10.in-addr.arpa", servers=R),
    Case("100.0.0.10", "PTR", "NXDOMAIN", servers=R),
    Case("99.0.0.10.in-addr.arpa", "PTR",
         answer=(ptr("double-ep.svc1.testns.svc"), ptr("double-ep.svc2.testns.svc")), servers=R),
    Case("102.0.0.10.in-addr.arpa", "PTR", answer=(ptr(f"{h('10.0.0.102')}.svc1.testns.svc"),),
         servers=R, source="issue 1: an endpoint without hostname"),
    Case(rev("fd00:77:30::bbb"), "PTR", "NXDOMAIN", soa=rev_zone("fd00:77:30::/64"), servers=R,
         source="issue 1: an IPv6 reverse zone"),
]
# fmt: on


# --- running them ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, RunningServer]]:
    root = tmp_path_factory.mktemp("dns-spec")
    main = write_records(root / "records.yaml", RECORDS)
    reverse = write_records(root / "reverse.yaml", REVERSE_RECORDS)
    cidrs = [arg for cidr in REVERSE_CIDRS for arg in ("--reverse-cidr", cidr)]
    running = {
        "main": RunningServer(
            ["--bind", "127.0.0.1:0", "--records", str(main), "--reverse-cidr", "10.3.0.0/16"]
        ),
        "reverse": RunningServer(["--bind", "127.0.0.1:0", "--records", str(reverse), *cidrs]),
    }
    yield running
    for server in running.values():
        server.stop()


def _section(section: list) -> set[tuple[str, str, str]]:
    return {
        (rrset.name.to_text().lower(), dns.rdatatype.to_text(rrset.rdtype), rdata.to_text().lower())
        for rrset in section
        for rdata in rrset
    }


def _without_soa_rdata(records: set[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    return {(owner, kind, "*" if kind == "SOA" else value) for owner, kind, value in records}


@pytest.mark.parametrize("case", CASES, ids=[f"{c.name or '@'} {c.qtype}" for c in CASES])
def test_the_answer_is_the_specifications(servers, case: Case) -> None:
    server = servers[case.servers[0]]
    response = ask(server, case.qname + ".", case.qtype, use_edns=0, payload=1232)
    assert rcode(response) == case.rcode, case.source
    assert _without_soa_rdata(_section(response.answer)) == case.expected(case.answer)
    if case.extra is not None:
        assert _section(response.additional) == case.expected(case.extra)
    authority = _section(response.authority)
    if case.answer or not case.soa:
        assert authority == set()
    else:
        assert {(owner, kind) for owner, kind, _ in authority} == {(case.soa + ".", "SOA")}
    if case.rcode != "REFUSED":
        assert {rrset.ttl for rrset in response.answer} <= {case.ttl}
    if response.answer:
        assert response.flags & dns.flags.AA


# --- dig ---------------------------------------------------------------------------------------


@needs_dig
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("TXT", f"dns-version.{D}"), ['"1.1.0"']),
        (("-x", "10.3.0.100"), [f"my-pet.headless.default.svc.{D}."]),
        (("-x", "2001:db8::100"), [f"my-pet-6.headless.default.svc.{D}."]),
        (("SRV", f"_http._tcp.svc1.testns.svc.{D}"), [f"10 100 80 svc1.testns.svc.{D}."]),
        (("AAAA", f"svc-dual-stack.testns.svc.{D}"), ["10::3"]),
        (("NS", D), [f"ns.dns.{D}."]),
    ],
    ids=["dns-version", "ptr-v4", "ptr-v6", "srv-target", "dual-stack", "apex-ns"],
)
def test_dig_sees_the_specifications_records(servers, args, expected) -> None:
    assert dig(servers["main"], "+short", *args).splitlines() == expected


@needs_dig
def test_dig_sees_nxdomain_for_a_headless_service_without_ready_addresses(servers) -> None:
    output = dig(servers["main"], "+noall", "+comments", "+authority", f"hdls-empty.testns.svc.{D}")
    assert "status: NXDOMAIN" in output and f"{D}.\t\t30\tIN\tSOA\tns.dns.{D}." in output


@needs_dig
def test_dig_reverse_lookup_in_a_reverse_zone_is_answered_not_forwarded(servers) -> None:
    output = dig(servers["main"], "+noall", "+comments", "+authority", "-x", "10.3.9.9")
    assert "status: NXDOMAIN" in output and "flags: qr aa" in output
    assert "3.10.in-addr.arpa.\t30\tIN\tSOA" in output


def test_every_case_asks_a_server_that_exists() -> None:
    assert {server for case in CASES for server in case.servers} == {"main", "reverse"}
    assert len(CASES) >= 100

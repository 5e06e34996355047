"""The cluster record store and the name rules (DNS specification 1.1.0, Origin), without sockets."""

from __future__ import annotations

import ipaddress

import pytest

from nodehost.plugins.dns.records import (
    QUERY_NAME,
    ClusterRecords,
    ClusterZone,
    EndpointAddress,
    Endpoints,
    EndpointSubset,
    IpIndex,
    Record,
    Service,
    ServicePort,
    fnv32a_hex,
    reverse_name_ip,
)
from nodehost.plugins.dns.wire import HotCache

D = "cluster.local"


def zone_with(*items: Service | Endpoints) -> ClusterZone:
    store = ClusterRecords()
    sink = store.sink("test")
    sink.replace(
        [item for item in items if isinstance(item, Service)],
        [item for item in items if isinstance(item, Endpoints)],
    )
    return ClusterZone(D, store)


WEB = Service("default", "web", "172.30.0.10", ports=(ServicePort("http", 80),))
HEADLESS = Service("prod", "db", "None", ports=(ServicePort("pg", 5432),))
DB_ENDPOINTS = Endpoints(
    "prod",
    "db",
    (
        EndpointSubset(
            (EndpointAddress("10.128.0.5", "db-0"), EndpointAddress("10.128.0.6")),
            (ServicePort("pg", 5432),),
        ),
    ),
)


@pytest.mark.parametrize(
    ("text", "expected"), [("", "811c9dc5"), ("a", "e40c292c"), ("foobar", "bf9cf968")]
)
def test_endpoint_hashes_are_go_fnv32a_in_hex(text, expected) -> None:
    assert fnv32a_hex(text) == expected


def test_a_service_name_answers_its_cluster_ip() -> None:
    answer = zone_with(WEB).answer(f"web.default.svc.{D}", "A")
    assert answer.answer == (Record(QUERY_NAME, "A", "172.30.0.10"),)
    assert answer.deps == {("svc", "default", "web")}


def test_a_service_without_cluster_ip_has_no_name() -> None:
    zone = zone_with(Service("default", "plain", ""))
    assert zone.answer(f"plain.default.svc.{D}", "A").rcode == "NXDOMAIN"


def test_an_external_name_service_is_a_cname_to_be_chased_upstream() -> None:
    zone = zone_with(
        Service("default", "ext", type="ExternalName", external_name="www.example.com")
    )
    answer = zone.answer(f"ext.default.svc.{D}", "A")
    assert answer.answer == (Record(QUERY_NAME, "CNAME", "www.example.com"),)
    assert answer.chase == "www.example.com"


def test_an_in_zone_external_name_is_followed_in_the_zone_and_loops_end() -> None:
    loop = Service("default", "loop", type="ExternalName", external_name=f"loop.default.svc.{D}")
    to_web = Service("default", "alias", type="ExternalName", external_name=f"web.default.svc.{D}")
    zone = zone_with(WEB, loop, to_web)
    alias = zone.answer(f"alias.default.svc.{D}", "A")
    assert alias.answer[-1] == Record(f"web.default.svc.{D}", "A", "172.30.0.10")
    assert ("svc", "default", "web") in alias.deps
    assert zone.answer(f"loop.default.svc.{D}", "A").rcode == "NOERROR"


def test_srv_weights_share_one_hundred_evenly() -> None:
    answer = zone_with(HEADLESS, DB_ENDPOINTS).answer(f"_pg._tcp.db.prod.svc.{D}", "SRV")
    assert sorted(record.value for record in answer.answer) == [
        (10, 50, 5432, f"{fnv32a_hex('10.128.0.6')}.db.prod.svc.{D}"),
        (10, 50, 5432, f"db-0.db.prod.svc.{D}"),
    ]


@pytest.mark.parametrize("label", ["*", "_*"])
def test_a_wildcard_port_label_matches_every_port(label) -> None:
    service = Service(
        "default", "two", "172.30.0.2", ports=(ServicePort("a", 1), ServicePort("b", 2))
    )
    answer = zone_with(service).answer(f"{label}._tcp.two.default.svc.{D}", "SRV")
    assert sorted(record.value[2] for record in answer.answer) == [1, 2]


def test_a_protocol_label_alone_means_every_port_of_that_protocol() -> None:
    service = Service(
        "default", "mixed", "172.30.0.3",
        ports=(ServicePort("dns", 53, "UDP"), ServicePort("dns-tcp", 53, "TCP")),
    )  # fmt: skip
    answer = zone_with(service).answer(f"_udp.mixed.default.svc.{D}", "SRV")
    assert [record.value[2] for record in answer.answer] == [53]
    assert len(answer.answer) == 1


def test_an_endpoint_label_selects_one_endpoint_and_an_unknown_label_is_nxdomain() -> None:
    zone = zone_with(HEADLESS, DB_ENDPOINTS)
    hashed = fnv32a_hex("10.128.0.6")
    assert zone.answer(f"{hashed}.db.prod.endpoints.{D}", "A").answer == (
        Record(QUERY_NAME, "A", "10.128.0.6"),
    )
    assert zone.answer(f"db-7.db.prod.svc.{D}", "A").rcode == "NXDOMAIN"


def test_a_headless_service_without_endpoints_is_nxdomain() -> None:
    assert zone_with(HEADLESS).answer(f"db.prod.svc.{D}", "A").rcode == "NXDOMAIN"


@pytest.mark.parametrize(
    ("name", "rcode"),
    [
        (D, "NOERROR"),
        (f"svc.{D}", "NOERROR"),
        (f"pod.{D}", "NOERROR"),
        (f"default.svc.{D}", "NOERROR"),
        (f"empty.svc.{D}", "NXDOMAIN"),
        (f"anything.pod.{D}", "NOERROR"),
        (f"other.{D}", "NXDOMAIN"),
    ],
)
def test_names_above_services_exist_only_where_something_lives_below(name, rcode) -> None:
    answer = zone_with(WEB).answer(name, "A")
    assert (answer.rcode, answer.answer) == (rcode, ())


def test_the_apex_answers_its_soa() -> None:
    assert zone_with().answer(D, "SOA").answer == (Record(QUERY_NAME, "SOA", D),)


def test_pod_names_answer_their_dashed_ipv4_address() -> None:
    zone = zone_with()
    assert zone.answer(f"10-1-2-3.ns.pod.{D}", "A").answer == (Record(QUERY_NAME, "A", "10.1.2.3"),)
    assert zone.answer(f"10-1-2.ns.pod.{D}", "A").rcode == "NXDOMAIN"


def test_openshift_default_falls_back_to_kubernetes_default() -> None:
    kubernetes = Service("default", "kubernetes", "172.30.0.1")
    endpoints = Endpoints(
        "default", "kubernetes", (EndpointSubset((EndpointAddress("10.0.0.2"),)),)
    )
    zone = zone_with(kubernetes, endpoints)
    assert zone.answer(f"openshift.default.svc.{D}", "A").answer[0].value == "172.30.0.1"
    assert zone.answer(f"_endpoints.openshift.default.svc.{D}", "A").answer[0].value == "10.0.0.2"


def test_an_openshift_service_of_its_own_wins_over_the_fallback() -> None:
    zone = zone_with(
        Service("default", "kubernetes", "172.30.0.1"),
        Service("default", "openshift", "172.30.0.9"),
    )
    assert zone.answer(f"openshift.default.svc.{D}", "A").answer[0].value == "172.30.0.9"


def test_any_questions_are_refused() -> None:
    assert zone_with(WEB).answer(f"web.default.svc.{D}", "ANY").rcode == "REFUSED"


@pytest.mark.parametrize(
    ("name", "ip"),
    [
        ("10.0.30.172.in-addr.arpa", "172.30.0.10"),
        ("1.2.3.in-addr.arpa", None),
        ("x.0.30.172.in-addr.arpa", None),
        (".".join("0000000000000000000000000000001f"[::-1]) + ".ip6.arpa", "::1f"),
    ],
)
def test_reverse_names_map_to_ips(name, ip) -> None:
    assert reverse_name_ip(name) == ip


def test_a_cluster_ip_has_a_ptr_record_and_other_ips_do_not() -> None:
    zone = zone_with(WEB)
    answer = zone.reverse("10.0.30.172.in-addr.arpa", "PTR")
    assert answer is not None
    assert answer.answer == (Record(QUERY_NAME, "PTR", f"web.default.svc.{D}"),)
    assert zone.reverse("11.0.30.172.in-addr.arpa", "PTR") is None


def test_an_endpoint_ip_has_a_ptr_record_to_its_hostname_or_hash() -> None:
    zone = zone_with(HEADLESS, DB_ENDPOINTS)
    named, hashed = (
        zone.reverse("5.0.128.10.in-addr.arpa", "PTR"),
        zone.reverse("6.0.128.10.in-addr.arpa", "PTR"),
    )
    assert named is not None and hashed is not None
    assert named.answer == (Record(QUERY_NAME, "PTR", f"db-0.db.prod.svc.{D}"),)
    assert hashed.answer == (
        Record(QUERY_NAME, "PTR", f"{fnv32a_hex('10.128.0.6')}.db.prod.svc.{D}"),
    )
    assert ("svc", "prod", "db") in named.deps


def test_inside_a_reverse_network_unknown_addresses_are_nxdomain_not_forwarded() -> None:
    store = ClusterRecords()
    store.sink("a").replace([WEB], [])
    zone = ClusterZone(D, store, reverse_networks=[ipaddress.ip_network("172.30.0.0/16")])
    unknown = zone.reverse("99.0.30.172.in-addr.arpa", "PTR")
    assert unknown is not None
    assert (unknown.rcode, unknown.zone) == ("NXDOMAIN", "30.172.in-addr.arpa")
    assert zone.reverse("99.0.31.172.in-addr.arpa", "PTR") is None
    assert zone.reverse("172.in-addr.arpa", "SOA") is None
    apex = zone.reverse("30.172.in-addr.arpa", "SOA")
    assert apex is not None and apex.answer == (Record(QUERY_NAME, "SOA", "30.172.in-addr.arpa"),)


def test_an_ip_index_keeps_one_key_bare_and_several_in_a_set() -> None:
    index = IpIndex()
    index.add("10.0.0.1", ("a", "x"))
    index.add("10.0.0.1", ("a", "x"))
    assert index.get("10.0.0.1") == (("a", "x"),)
    index.add("10.0.0.1", ("b", "y"))
    assert index.get("10.0.0.1") == (("a", "x"), ("b", "y"))
    index.discard("10.0.0.1", ("a", "x"))
    assert index.get("10.0.0.1") == (("b", "y"),)
    index.discard("10.0.0.1", ("b", "y"))
    assert index.get("10.0.0.1") == () and len(index) == 0


# --- the store --------------------------------------------------------------------------------


def test_a_new_service_touches_its_name_its_namespace_and_its_ip() -> None:
    store = ClusterRecords()
    touched = store.sink("a").replace([WEB], [])
    assert touched == {("svc", "default", "web"), ("ns", "default"), ("ptr", "172.30.0.10")}


def test_replacing_with_the_same_records_touches_nothing() -> None:
    store = ClusterRecords()
    sink = store.sink("a")
    sink.replace([WEB], [])
    assert sink.replace([WEB], []) == set()


def test_changed_endpoints_touch_their_service_and_the_ips_that_moved() -> None:
    store = ClusterRecords()
    sink = store.sink("a")
    sink.replace([HEADLESS, WEB], [DB_ENDPOINTS])
    moved = Endpoints("prod", "db", (EndpointSubset((EndpointAddress("10.128.0.9"),)),))
    assert sink.replace([HEADLESS, WEB], [moved]) == {
        ("svc", "prod", "db"),
        *{("ptr", ip) for ip in ("10.128.0.5", "10.128.0.6", "10.128.0.9")},
    }


def test_a_source_replaces_only_its_own_records() -> None:
    store = ClusterRecords()
    store.sink("one").replace([WEB], [])
    store.sink("two").replace([HEADLESS], [DB_ENDPOINTS])
    store.sink("two").replace([], [])
    assert set(store.services) == {("default", "web")}
    assert store.endpoints == {}


def test_a_change_drops_exactly_the_cached_answers_it_touches() -> None:
    store = ClusterRecords()
    cache = HotCache()
    store.listen(cache.invalidate)
    sink = store.sink("a")
    sink.replace([WEB, HEADLESS], [DB_ENDPOINTS])
    zone = ClusterZone(D, store)
    for key, name in ((b"web", f"web.default.svc.{D}"), (b"db", f"db.prod.svc.{D}")):
        cache.put(key, b"\0\0answer", zone.answer(name, "A").deps)
    cache.put(b"nx", b"\0\0negative", zone.answer(f"new.default.svc.{D}", "A").deps)
    sink.replace(
        [
            Service("default", "web", "172.30.0.11"),
            HEADLESS,
            Service("default", "new", "172.30.0.12"),
        ],
        [DB_ENDPOINTS],
    )
    assert set(cache.entries) == {b"db"}


def test_a_new_endpoint_drops_the_cached_nxdomain_of_its_reverse_name() -> None:
    store = ClusterRecords()
    cache = HotCache()
    store.listen(cache.invalidate)
    sink = store.sink("a")
    sink.replace([HEADLESS], [])
    zone = ClusterZone(D, store, reverse_networks=[ipaddress.ip_network("10.128.0.0/14")])
    negative = zone.reverse("5.0.128.10.in-addr.arpa", "PTR")
    assert negative is not None and negative.rcode == "NXDOMAIN"
    cache.put(b"ptr", b"\0\0negative", negative.deps)
    sink.replace([HEADLESS], [DB_ENDPOINTS])
    assert cache.entries == {}

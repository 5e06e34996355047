"""The ``kubernetes`` record source: API objects to DNS records, and a real server following a
real (test) API server through list, watch, dropped connections and refused credentials."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dnskube import (
    ApiWriter,
    PendingServer,
    converge,
    refused_kubeconfig,
    service_body,
    slice_body,
    wait_until,
)
from dnsrun import answer_set, ask, dig, fqdn, needs_dig, rcode

from nodehost.config import node_config_from_mapping
from nodehost.plugins.dns.records import (
    ClusterRecords,
    EndpointAddress,
    EndpointSubset,
    Service,
    ServicePort,
    fnv32a_hex,
)
from nodehost.plugins.dns.settings import SECTION, DnsSettings
from nodehost.plugins.dns.sources import SourceContext
from nodehost.plugins.dns.sources.kubeobjects import Mirror, service_from_api, slice_from_api
from nodehost.plugins.dns.sources.kubernetes import KubernetesSource, source_factory
from nodehost.testing import apiserver

READY = {"ready": True}
PG = [{"name": "pg", "port": 5432, "protocol": "TCP"}]


# --- API objects to the DNS model ---------------------------------------------------------------


def test_a_service_keeps_its_cluster_ip_type_and_named_ports() -> None:
    body = service_body(
        "web", "default", "172.30.0.10",
        ports=[{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080},
               {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": "dns"}],
    )  # fmt: skip
    assert service_from_api(body) == Service(
        "default",
        "web",
        "172.30.0.10",
        ports=(ServicePort("http", 80, "TCP", 8080), ServicePort("dns", 53, "UDP", 0)),
    )


def test_a_dual_stack_service_keeps_every_cluster_ip() -> None:
    body = service_body("web", "default", "172.30.0.10", clusterIPs=["172.30.0.10", "fd00::10"])
    service = service_from_api(body)
    assert (service.cluster_ip, service.secondary_ip) == ("172.30.0.10", "fd00::10")


def test_an_external_name_service_becomes_its_lower_case_target() -> None:
    body = service_body(
        "search", "default", "", type="ExternalName", externalName="WWW.Example.COM."
    )
    service = service_from_api(body)
    assert (service.type, service.external_name, service.cluster_ip) == (
        "ExternalName",
        "www.example.com",
        "",
    )


def test_a_slice_keeps_ready_endpoints_with_hostnames_and_its_ports() -> None:
    endpoints = [
        {"addresses": ["10.128.0.5"], "hostname": "db-0", "conditions": READY},
        {"addresses": ["10.128.0.6"], "conditions": {"ready": False}},
        {"addresses": ["10.128.0.7"]},  # no ready condition: ready, as the API defines
    ]
    item = slice_from_api(slice_body("db-x1", "prod", "db", endpoints, PG))
    assert (item.service_key, item.subset) == (
        ("prod", "db"),
        EndpointSubset(
            (EndpointAddress("10.128.0.5", "db-0"), EndpointAddress("10.128.0.7")),
            (ServicePort("pg", 5432, "TCP"),),
        ),
    )


def test_an_fqdn_slice_has_no_addresses() -> None:
    body = {**slice_body("ext", "prod", "db", [{"addresses": ["db.example.com"]}], PG)}
    body["addressType"] = "FQDN"
    assert slice_from_api(body).subset.addresses == ()


# --- the mirror: minimal writes ------------------------------------------------------------------


@pytest.fixture
def store() -> ClusterRecords:
    return ClusterRecords()


def touched_by(store: ClusterRecords) -> list[set[tuple[str, ...]]]:
    """Every set of dependency keys the store announces from now on."""
    seen: list[set[tuple[str, ...]]] = []
    store.listen(seen.append)
    return seen


def test_the_slices_of_one_service_make_its_endpoints(store) -> None:
    mirror = Mirror(store.sink("kubernetes"))
    mirror.replace_slices(map(slice_from_api, [
        slice_body("db-b", "prod", "db", [{"addresses": ["10.0.0.2"], "conditions": READY}], PG),
        slice_body("db-a", "prod", "db", [{"addresses": ["10.0.0.1"], "conditions": READY}], PG),
        slice_body("web-a", "prod", "web", [{"addresses": ["10.0.0.9"]}], []),
    ]))  # fmt: skip
    endpoints = store.endpoints[("prod", "db")]
    assert [a.ip for s in endpoints.subsets for a in s.addresses] == ["10.0.0.1", "10.0.0.2"]
    assert set(store.endpoints) == {("prod", "db"), ("prod", "web")}


def test_a_watch_event_touches_only_its_own_service(store) -> None:
    mirror = Mirror(store.sink("kubernetes"))
    mirror.replace_services(
        map(service_from_api, [service_body("a", "ns", "172.30.0.1"),
                               service_body("b", "ns", "172.30.0.2")])
    )  # fmt: skip
    seen = touched_by(store)
    mirror.apply_service(
        "MODIFIED", service_from_api(service_body("a", "ns", "172.30.0.1"))
    )  # no change
    mirror.apply_service("MODIFIED", service_from_api(service_body("b", "ns", "172.30.0.3")))
    mirror.apply_slice(
        "ADDED", slice_from_api(slice_body("b-1", "ns", "b", [{"addresses": ["10.0.0.1"]}], []))
    )
    mirror.apply_service("DELETED", service_from_api(service_body("b", "ns", "172.30.0.3")))
    assert [{key for key in deps if key[0] == "svc"} for deps in seen] == [{("svc", "ns", "b")}] * 3
    assert set(store.services) == {("ns", "a")}


def test_a_resync_writes_only_the_differences(store) -> None:
    mirror = Mirror(store.sink("kubernetes"))
    services = [
        service_from_api(service_body("a", "ns", "172.30.0.1")),
        service_from_api(service_body("b", "ns", "172.30.0.2")),
    ]
    slices = [slice_from_api(slice_body("a-1", "ns", "a", [{"addresses": ["10.0.0.1"]}], []))]
    mirror.replace_services(services)
    mirror.replace_slices(slices)
    seen = touched_by(store)
    mirror.replace_services(services)
    mirror.replace_slices(slices)
    assert seen == []
    mirror.replace_services(services[:1])
    mirror.replace_slices([])
    assert [{key for key in deps if key[0] == "svc"} for deps in seen] == [
        {("svc", "ns", "b")},
        {("svc", "ns", "a")},
    ]
    assert set(store.services) == {("ns", "a")} and store.endpoints == {}


def test_moving_a_slice_to_another_service_rewrites_both(store) -> None:
    mirror = Mirror(store.sink("kubernetes"))
    mirror.apply_slice(
        "ADDED", slice_from_api(slice_body("s", "ns", "a", [{"addresses": ["10.0.0.1"]}], []))
    )
    mirror.apply_slice(
        "MODIFIED", slice_from_api(slice_body("s", "ns", "b", [{"addresses": ["10.0.0.1"]}], []))
    )
    assert set(store.endpoints) == {("ns", "b")}


# --- when the source is active ----------------------------------------------------------------------


def source_context(tmp_path: Path, **changes: Any) -> SourceContext:
    raw = {
        "nodeName": "node1",
        "nodeIP": "10.0.0.2",
        "servingInfo": {"bindAddress": "10.0.0.2:10250"},
        "dnsBindAddress": "127.0.0.1:53",
        **changes,
    }
    config, _ = node_config_from_mapping(raw, base_dir=str(tmp_path), known_sections=[SECTION])
    return SourceContext(config, DnsSettings(bind_host="127.0.0.1", bind_port=53))


def test_the_source_follows_the_master_kubeconfig(tmp_path) -> None:
    source = source_factory(source_context(tmp_path, masterKubeConfig="node.kubeconfig"))
    assert isinstance(source, KubernetesSource)
    assert source.kubeconfig == str(tmp_path / "node.kubeconfig")


def test_without_a_master_kubeconfig_the_source_uses_the_service_account(
    tmp_path, monkeypatch
) -> None:
    folder = tmp_path / "serviceaccount"
    folder.mkdir()
    for name in ("token", "ca.crt", "namespace"):
        (folder / name).write_text("x")
    monkeypatch.setenv("NODEHOST_SERVICE_ACCOUNT_DIR", str(folder))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    source = source_factory(source_context(tmp_path, masterKubeConfig=""))
    assert source.kubeconfig == ""


def test_without_a_master_kubeconfig_or_a_service_account_the_source_refuses(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(
        ValueError, match=r"no in-cluster service account \(KUBERNETES_SERVICE_HOST"
    ):
        source_factory(source_context(tmp_path, masterKubeConfig=""))


# --- against the test API server -------------------------------------------------------------------


@pytest.fixture
def api(tmp_path: Path) -> Iterator[apiserver.TestApiServer]:
    server = apiserver.TestApiServer(tmp_path / "api")
    server.come_up()
    yield server
    server.go_down()


@pytest.fixture
def writer(api: apiserver.TestApiServer) -> Iterator[ApiWriter]:
    client = ApiWriter(api.admin_kubeconfig)
    yield client
    client.close()


@pytest.fixture
def dns_server(start_server, api: apiserver.TestApiServer) -> Any:
    """The standalone DNS server following ``api`` with the admin kubeconfig."""
    return start_server(None, "--kubeconfig", str(api.admin_kubeconfig))


#: The reverse name of ``fd00:1::5``, an endpoint's address in the dual-stack tests.
V6_ENDPOINT_PTR = "5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.0.0.0.d.f.ip6.arpa."


def a_records(response: Any) -> set[str]:
    return {value for _, kind, value in answer_set(response) if kind == "A"}


def lists_of(api: apiserver.TestApiServer, plural: str) -> int:
    """How many list (not watch) requests for ``plural`` the API server has had."""
    return sum(1 for method, path, _ in api.requests if _is_list(method, path, plural))


def test_a_service_is_answered_changed_and_gone_through_the_open_watch(
    api, dns_server, writer
) -> None:
    """Each change reaches the answers by the watch: no new list (no resync) is needed."""
    listed = lists_of(api, "services")
    name = fqdn("web.default.svc")
    body = service_body("web", "default", "172.30.0.10")
    writer.create(body)
    _, response = converge(dns_server, name, "A", lambda r: a_records(r) == {"172.30.0.10"})
    assert a_records(response) == {"172.30.0.10"}

    writer.replace(service_body("web", "default", "172.30.0.99"))
    _, response = converge(dns_server, name, "A", lambda r: a_records(r) == {"172.30.0.99"})
    assert a_records(response) == {"172.30.0.99"}

    writer.delete(body)
    _, response = converge(dns_server, name, "A", lambda r: rcode(r) == "NXDOMAIN")
    assert rcode(response) == "NXDOMAIN"
    assert lists_of(api, "services") == listed


def test_endpoint_slices_answer_headless_names_and_srv(dns_server, writer) -> None:
    writer.create(service_body("db", "prod", "None", ports=PG))
    first = [{"addresses": ["10.128.0.5"], "hostname": "db-0", "conditions": READY},
             {"addresses": ["10.128.0.6"], "conditions": {"ready": False}}]  # fmt: skip
    writer.create(slice_body("db-a", "prod", "db", first, PG))
    name = fqdn("db.prod.svc")
    _, response = converge(dns_server, name, "A", lambda r: a_records(r) == {"10.128.0.5"})
    assert a_records(response) == {"10.128.0.5"}

    writer.create(slice_body("db-b", "prod", "db", [{"addresses": ["10.128.0.7"]}], PG))
    both = {"10.128.0.5", "10.128.0.7"}
    _, response = converge(dns_server, name, "A", lambda r: a_records(r) == both)
    assert a_records(response) == both
    _, response = converge(dns_server, fqdn("_pg._tcp.db.prod.svc"), "SRV", lambda r: True)
    targets = {value.split()[-1] for _, kind, value in answer_set(response) if kind == "SRV"}
    assert fqdn("db-0.db.prod.svc") in targets and len(targets) == 2


def test_a_dual_stack_service_and_its_endpoints_answer_aaaa_and_ptr(dns_server, writer) -> None:
    writer.create(
        service_body("web", "default", "172.30.0.10", clusterIPs=["172.30.0.10", "fd00::10"])
    )
    v6 = slice_body("web-v6", "default", "web", [{"addresses": ["fd00:1::5"], "hostname": "w0"}],
                    [{"name": "http", "port": 80}])  # fmt: skip
    writer.create({**v6, "addressType": "IPv6"})
    _, response = converge(dns_server, fqdn("web.default.svc"), "AAAA", lambda r: bool(r.answer))
    assert answer_set(response) == {(fqdn("web.default.svc"), "AAAA", "fd00::10")}
    # The slice comes by its own watch, possibly after the service: wait for its name.
    converge(dns_server, fqdn("w0.web.default.svc"), "AAAA", lambda r: bool(r.answer))
    response = ask(dns_server, V6_ENDPOINT_PTR, "PTR")
    assert answer_set(response) == {(V6_ENDPOINT_PTR, "PTR", fqdn("w0.web.default.svc"))}


def test_a_ptr_refused_before_its_endpoint_is_known_is_answered_once_it_is(
    dns_server, writer
) -> None:
    """The server has no upstreams, so an unknown reverse name is REFUSED; that answer must
    not outlive the endpoint's arrival (it is cached until the IP gains an owner)."""
    assert rcode(ask(dns_server, V6_ENDPOINT_PTR, "PTR")) == "REFUSED"
    writer.create(service_body("web", "default", "None"))
    v6 = slice_body("web-v6", "default", "web", [{"addresses": ["fd00:1::5"], "hostname": "w0"}],
                    [{"name": "http", "port": 80}])  # fmt: skip
    writer.create({**v6, "addressType": "IPv6"})
    converge(dns_server, fqdn("w0.web.default.svc"), "AAAA", lambda r: bool(r.answer))
    response = ask(dns_server, V6_ENDPOINT_PTR, "PTR")
    assert answer_set(response) == {(V6_ENDPOINT_PTR, "PTR", fqdn("w0.web.default.svc"))}


def test_after_the_api_server_restarts_the_records_resync(api, dns_server, writer) -> None:
    writer.create(service_body("old", "default", "172.30.0.1"))
    converge(dns_server, fqdn("old.default.svc"), "A", a_records)
    api.go_down()  # every watch connection is cut
    api.store.delete("services", "default", "old")  # changes the watches cannot see
    api.store.put("services", service_body("new", "default", "172.30.0.2"))
    dns_server.log.wait_for("API server not answering; serving the records it has and retrying")
    response = ask(dns_server, fqdn("old.default.svc"), "A")
    assert a_records(response) == {"172.30.0.1"}  # the records it has are still served
    api.come_up()
    _, response = converge(dns_server, fqdn("new.default.svc"), "A", a_records)
    assert a_records(response) == {"172.30.0.2"}
    _, response = converge(dns_server, fqdn("old.default.svc"), "A", lambda r: not a_records(r))
    assert rcode(response) == "NXDOMAIN"


def test_a_dropped_watch_still_converges(api, dns_server, writer) -> None:
    api.drop_watches()
    api.store.put("services", service_body("late", "default", "172.30.0.3"))
    _, response = converge(dns_server, fqdn("late.default.svc"), "A", a_records)
    assert a_records(response) == {"172.30.0.3"}


def test_the_server_is_not_ready_before_the_api_server_answers(tmp_path) -> None:
    api = apiserver.TestApiServer(tmp_path / "api")  # not listening yet
    server = PendingServer("--bind", "127.0.0.1:0", "--kubeconfig", str(api.admin_kubeconfig))
    try:
        server.log.wait_for("API server not answering; serving the records it has and retrying")
        assert server.ready_line(timeout=0) is None
        api.come_up()
        line = server.ready_line(timeout=15)
        assert line is not None and line.startswith("ready ")
    finally:
        log = server.stop()
        api.go_down()
    events = [json.loads(line)["event"] for line in log.splitlines() if line.startswith("{")]
    assert "API server not answering; serving the records it has and retrying" in events
    assert "API server reachable again" in events


@pytest.mark.parametrize("how", ["401", "403"])
def test_refused_credentials_are_one_log_line_naming_the_kubeconfig(api, tmp_path, how) -> None:
    kubeconfig = refused_kubeconfig(api, tmp_path / "refused.kubeconfig", how)
    server = PendingServer("--bind", "127.0.0.1:0", "--kubeconfig", str(kubeconfig))
    try:
        server.log.wait_for('"level": "error"')
        for plural in ("services", "endpointslices"):  # both followers were refused
            wait_until(lambda p=plural: any(f"/{p}" in path for _, path, _ in api.requests))
        assert server.ready_line(timeout=0) is None
    finally:
        log = server.stop()
    errors = [json.loads(line) for line in log.splitlines() if '"level": "error"' in line]
    assert len(errors) == 1, log
    assert str(kubeconfig) in errors[0]["event"] and f"({how} " in errors[0]["event"]


def test_a_watch_answered_410_gone_is_followed_by_a_fresh_list(api) -> None:
    """In process: watches of one second, so the next one (answered 410) comes soon."""
    import asyncio

    store = ClusterRecords()

    def lists() -> int:
        return sum(1 for method, path, _ in api.requests if _is_list(method, path, "services"))

    async def gone() -> int:
        before = lists()
        api.fail_next(1, 410, path_prefix="/api/v1/services")
        api.store.put("services", service_body("after", "default", "172.30.0.4"))

        async def relisted() -> None:
            while not (lists() > before and ("default", "after") in store.services):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(relisted(), 30)  # bounds a failing test only
        return lists() - before

    assert _run_source(api, store, gone, watch_seconds=1) == 1
    assert store.services[("default", "after")].cluster_ip == "172.30.0.4"


def _is_list(method: str, path: str, plural: str) -> bool:
    return method == "GET" and path.split("?")[0].endswith(f"/{plural}") and "watch=" not in path


def _run_source(
    api: apiserver.TestApiServer, store: ClusterRecords, scenario: Any, **options: Any
) -> Any:
    """Run a :class:`KubernetesSource` in process until it synced, then ``scenario()``."""
    import asyncio

    source = KubernetesSource(str(api.admin_kubeconfig), log=_Silent(), **options)

    async def run() -> Any:
        sink = store.sink("kubernetes")
        synced = asyncio.Event()
        sink.on_synced = synced.set
        running = asyncio.ensure_future(source.run(sink))
        try:
            await asyncio.wait_for(synced.wait(), 20)
            return await scenario()
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

    return asyncio.run(run())


class _Silent:
    def __getattr__(self, name: str) -> Any:
        return lambda *args, **fields: None


def _lists(api: apiserver.TestApiServer, plural: str) -> list[str]:
    return [path for method, path, _ in api.requests if _is_list(method, path, plural)]


def test_the_source_lists_a_large_cluster_in_pages(api, monkeypatch) -> None:
    from nodehost.plugins.dns.sources import kubernetes

    monkeypatch.setattr(kubernetes, "LIST_PAGE", 2)
    for index in range(5):
        api.store.put("services", service_body(f"s{index}", "default", f"172.30.0.{index + 1}"))
    store = ClusterRecords()

    async def nothing() -> None:
        return None

    _run_source(api, store, nothing)
    pages = _lists(api, "services")
    assert len(pages) == 3 and all("limit=2" in page for page in pages)
    assert all("continue=" in page for page in pages[1:])
    assert {key[1] for key in store.services} == {f"s{index}" for index in range(5)}


def test_a_watch_cut_by_an_outage_resumes_from_its_version_without_listing_again(api) -> None:
    import asyncio

    api.store.put("services", service_body("before", "default", "172.30.0.1"))
    store = ClusterRecords()

    async def outage() -> tuple[int, list[str]]:
        listed = len(_lists(api, "services"))
        version = str(api.store.revision)
        api.go_down()  # every watch connection is cut
        api.store.put("services", service_body("during", "default", "172.30.0.2"))
        api.come_up()
        while ("default", "during") not in store.services:
            await asyncio.sleep(0.05)
        watches = [p for m, p, _ in api.requests if "/services?" in p and "watch=" in p]
        asked = [re.search(r"resourceVersion=(\d+)", watch) for watch in watches]
        return len(_lists(api, "services")) - listed, [m[1] for m in asked if m and m[1] == version]

    relisted, resumed = _run_source(api, store, outage)
    assert relisted == 0
    assert resumed  # a watch asked for the version it had before the outage
    assert store.services[("default", "during")].cluster_ip == "172.30.0.2"


@needs_dig
@pytest.mark.parametrize("hostnames", [("w0", "w0"), ("w0", "")], ids=["same", "one"])
def test_the_reverse_lookup_of_an_ip_serving_two_services_names_both(
    dns_server, writer, hostnames
) -> None:
    """An endpoint IP in the slices of two services answers a PTR for each (CoreDNS does),
    also when both endpoints carry the same hostname; asked with dig over UDP and TCP."""
    for service, hostname in zip(("web", "api"), hostnames, strict=True):
        writer.create(service_body(service, "default", "None"))
        endpoint = {"addresses": ["10.128.0.9"], **({"hostname": hostname} if hostname else {})}
        writer.create(slice_body(f"{service}-x", "default", service, [endpoint], PG))
    converge(dns_server, fqdn("api.default.svc"), "A", lambda r: bool(r.answer))
    web, api = (f"{label}.default.svc.cluster.local." for label in (
        f"{hostnames[0]}.web", f"{hostnames[1] or fnv32a_hex('10.128.0.9')}.api"))  # fmt: skip
    for transport in ("+notcp", "+tcp"):
        assert set(dig(dns_server, transport, "+short", "-x", "10.128.0.9").split()) == {web, api}


# --- malformed objects and hostile clients ------------------------------------------------------

MALFORMED_SERVICES = {
    "ports a string": {"ports": "eighty"},
    "port a word": {"ports": [{"name": "http", "port": "eighty"}]},
    "port out of range": {"ports": [{"port": 70000}]},
    "spec a list": [],
    "cluster IPs a string": {"clusterIPs": "172.30.0.9"},
}


@pytest.mark.parametrize("spec", MALFORMED_SERVICES.values(), ids=MALFORMED_SERVICES.keys())
def test_a_service_of_the_wrong_shape_is_malformed_not_a_crash(spec: Any) -> None:
    from nodehost.api.objects import MalformedObject

    with pytest.raises(MalformedObject):
        service_from_api({"metadata": {"name": "bad", "namespace": "default"}, "spec": spec})


@pytest.mark.parametrize("metadata", [None, [], {"name": 5}, {}], ids=["null", "list", "num", "no"])
def test_an_object_without_a_usable_name_is_malformed(metadata: Any) -> None:
    from nodehost.api.objects import MalformedObject

    for convert in (service_from_api, slice_from_api):
        with pytest.raises(MalformedObject):
            convert({"metadata": metadata, "spec": {}})


def test_slice_addresses_that_are_not_ips_of_its_family_are_left_out() -> None:
    endpoints = [{"addresses": ["999.1.1.1", None, 12, "10.0.0.1", "fd00::1", ["x"]]}]
    read = slice_from_api(slice_body("s", "ns", "svc", endpoints, []))
    assert [address.ip for address in read.subset.addresses] == ["10.0.0.1"]
    assert read.invalid == ("'999.1.1.1'", "None", "12", "'fd00::1'", "['x']")


def test_malformed_objects_are_ignored_with_one_line_and_the_node_answers_on(
    api, dns_server
) -> None:
    """Services and slices of the wrong shape, listed and watched, are one log line each; the
    records keep what they had (a good version stays answered) and the server answers on."""
    good = service_body("web", "default", "None")
    api.store.put("services", good)
    slice_ = slice_body("web-1", "default", "web", [{"addresses": ["10.128.0.5"]}], PG)
    api.store.put("endpointslices", slice_)
    api.store.put("services", {**service_body("early", "default", "1.2.3.4"), "spec": []})
    converge(dns_server, fqdn("web.default.svc"), "A", lambda r: bool(r.answer))
    for spec in MALFORMED_SERVICES.values():  # a good Service replaced by bad versions
        api.store.put("services", {**good, "spec": spec})
    bad_addresses = [{"addresses": ["999.1.1.1", None, 12, "10.128.0.6"]}]
    api.store.put("endpointslices", slice_body("web-1", "default", "web", bad_addresses, PG))
    api.store.put("services", service_body("after", "default", "172.30.0.20"))
    converge(dns_server, fqdn("after.default.svc"), "A", lambda r: bool(r.answer))
    _, response = converge(dns_server, fqdn("web.default.svc"), "A",
                           lambda r: a_records(r) == {"10.128.0.6"})  # fmt: skip
    assert a_records(response) == {"10.128.0.6"}  # the last good Service, the slice's valid IP
    log = dns_server.log.text()
    assert "Traceback" not in log
    assert log.count("API object ignored") == len(MALFORMED_SERVICES) + 1  # + "early" listed
    assert log.count("addresses that are not IPs of its family left out") == 1


def test_every_udp_answer_is_capped_at_1232_bytes_whatever_the_clients_buffer(
    api, dns_server
) -> None:
    """A headless service with 300 endpoints from the API server, asked with a 65535-byte EDNS
    buffer: the UDP answer is at most 1232 bytes with TC set; TCP has it whole."""
    import dns.flags

    api.store.put("services", service_body("big", "default", "None"))
    endpoints = [{"addresses": [f"10.129.{n // 250}.{n % 250 + 1}"]} for n in range(300)]
    api.store.put("endpointslices", slice_body("big-1", "default", "big", endpoints, PG))
    name = fqdn("big.default.svc")
    converge(dns_server, name, "A", lambda r: len(a_records(r)) == 300, tcp=True)
    for qtype in ("A", "SRV"):
        query = dns.message.make_query(name, qtype, use_edns=0, payload=65535)
        wire = query.to_wire()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(5)
            sock.sendto(wire, (dns_server.host, dns_server.port))
            answer = sock.recv(65535)
        assert len(answer) <= 1232
        assert dns.message.from_wire(answer).flags & dns.flags.TC


@pytest.mark.parametrize("mode", ["gone", "empty", "garbage"])
def test_every_failed_watch_and_every_relist_waits_a_backoff_delay(api, monkeypatch, mode) -> None:
    """410 on every watch was 36 relists a second; an empty or garbage 200 thousands of
    watches: each new watch or list of a resource comes after a backoff sleep (counted: the
    sleeps of a delay the backoff gave)."""
    import asyncio

    import nodehost.api.client
    from nodehost.backoff import Backoff

    backoff = Backoff(initial=0.00123, maximum=0.0099)
    monkeypatch.setattr(nodehost.api.client, "RETRY_BACKOFF", backoff)
    schedule = {backoff.delay(attempt) for attempt in range(1, 10)}
    slept: list[float] = []
    sleep = asyncio.sleep

    async def counted_sleep(delay: float, *args: Any) -> Any:
        if delay in schedule:
            slept.append(delay)
        return await sleep(delay, *args)

    monkeypatch.setattr(asyncio, "sleep", counted_sleep)
    services = "/api/v1/services"

    def asked() -> int:
        return sum(1 for _m, path, _u in list(api.requests) if path.startswith(services))

    async def misbehave() -> tuple[int, int]:
        api.misbehave(mode, services, watches=True)
        api.drop_watches()  # the watch opened before the rule ends now
        start, sleeps = asked(), len(slept)
        while asked() - start < 30:
            await sleep(0.005)
        return asked() - start, len(slept) - sleeps

    requests, sleeps = _run_source(api, ClusterRecords(), misbehave)
    assert sleeps >= requests // 2 - 1  # a round is a list and a watch, or a watch


def test_the_sources_watches_ask_for_client_gos_spread_server_timeout(api) -> None:
    """Each watch asks ``timeoutSeconds`` between 5 and 10 minutes (client-go's spread), not
    one value for a whole fleet."""
    import asyncio

    from nodehost.api.client import WATCH_TIMEOUT

    def watches() -> list[str]:
        return [path for _m, path, _u in list(api.requests) if "watch=" in path]

    async def watching() -> list[int]:
        while len(watches()) < 2:
            await asyncio.sleep(0.01)
        api.drop_watches()  # two more, resumed
        while len(watches()) < 4:
            await asyncio.sleep(0.01)
        return [int(re.search(r"timeoutSeconds=(\d+)", path)[1]) for path in watches()]

    timeouts = _run_source(api, ClusterRecords(), watching)
    assert all(WATCH_TIMEOUT <= value < 2 * WATCH_TIMEOUT for value in timeouts), timeouts
    assert len(set(timeouts)) > 1, timeouts

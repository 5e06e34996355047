"""The ``file`` record source: the format, its errors, and reloading while running."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from dnsrun import RECORDS, write_records

from nodehost.plugins.dns.records import ClusterRecords, Service, ServicePort
from nodehost.plugins.dns.sources.file import FileSource, RecordsFileError, load_records_file


def test_the_example_records_load_with_their_defaults(tmp_path: Path) -> None:
    records = load_records_file(str(write_records(tmp_path / "r.yaml", RECORDS)))
    by_name = {service.name: service for service in records.services}
    assert by_name["web"] == Service(
        "default",
        "web",
        "172.30.0.10",
        ports=(ServicePort("http", 80, "TCP"), ServicePort("dns", 53, "UDP")),
    )
    assert by_name["search"].type == "ExternalName"
    assert by_name["search"].namespace == "default"
    assert by_name["db"].cluster_ip == "None"
    assert len(records.endpoints) == 4


def test_a_dual_stack_service_keeps_both_cluster_ips(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("services:\n- {name: a, clusterIPs: ['fd00:0::10', 172.30.0.10]}\n")
    (service,) = load_records_file(str(path)).services
    assert (service.cluster_ip, service.secondary_ip) == ("fd00::10", "172.30.0.10")
    assert service.cluster_ips == ("fd00::10", "172.30.0.10")


def test_an_empty_mapping_is_no_records(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("services: []\n")
    assert load_records_file(str(path)).services == ()


BAD = [
    ("services: {}\n", "services: must be a list"),
    ("servics: []\n", "servics: unknown key; known: services, endpoints"),
    ("services:\n- {name: Web}\n", "services[0].name: 'Web' is not a DNS-1123 label"),
    ("services:\n- {name: a, clusterIP: 1.2.3}\n", "services[0].clusterIP: '1.2.3' is not an IP"),
    ("services:\n- {name: a, ports: [{port: 0}]}\n", "services[0].ports[0].port: must be a port"),
    ("services:\n- {name: a, ports: [{port: 1, protocol: tcp}]}\n", "protocol: must be one of"),
    ("services:\n- {name: a, type: ExternalName}\n", "externalName: is required exactly"),
    ("services:\n- {name: a}\n- {name: a}\n", "services[1]: default/a is listed twice"),
    (
        "endpoints:\n- name: a\n  subsets:\n  - addresses: [{ip: 10.0.0.1, hostname: A_B}]\n",
        "endpoints[0].subsets[0].addresses[0].hostname: 'A_B' is not a DNS-1123 label",
    ),
    ("services: [\n", "DNS records file"),
    (
        "services:\n- {name: a, clusterIP: 10.0.0.1, clusterIPs: [10.0.0.2]}\n",
        "services[0].clusterIPs: the first entry must be clusterIP (10.0.0.1)",
    ),
    (
        "services:\n- {name: a, clusterIPs: [10.0.0.1, 10.0.0.2]}\n",
        "services[0].clusterIPs: two IPs must be of different families",
    ),
    (
        "services:\n- {name: a, clusterIPs: [10.0.0.1, 'fd00::1', 10.0.0.2]}\n",
        "services[0].clusterIPs: at most two IPs",
    ),
    ("services:\n- {name: a, clusterIPs: [x]}\n", "services[0].clusterIPs[0]: 'x' is not an IP"),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[message for _, message in BAD])
def test_a_bad_file_is_one_line_naming_the_file_and_the_field(
    tmp_path: Path, text, message
) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(RecordsFileError) as caught:
        load_records_file(str(path))
    assert str(caught.value).startswith(f"DNS records file {path}: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_field_error_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("services:\n- name: a\n  clusterIP: nope\n")
    with pytest.raises(RecordsFileError, match=r"\(line 3, column 14\)"):
        load_records_file(str(path))


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RecordsFileError, match="no such file"):
        load_records_file(str(tmp_path / "absent.yaml"))


# --- running -------------------------------------------------------------------------------------


async def _wait_for(predicate, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def _service(name: str, ip: str) -> dict:
    return {"name": name, "clusterIP": ip}


def test_the_source_loads_then_follows_changes_and_keeps_records_over_a_bad_edit(
    tmp_path: Path,
) -> None:
    path = write_records(tmp_path / "r.yaml", {"services": [_service("a", "172.30.0.1")]})
    store = ClusterRecords()
    sink = store.sink("file")
    source = FileSource(str(path), poll_interval=0.02)

    def ip_of(name: str) -> str | None:
        service = store.services.get(("default", name))
        return service.cluster_ip if service else None

    async def scenario() -> None:
        task = asyncio.ensure_future(source.run(sink))
        await _wait_for(lambda: sink.is_synced)
        assert ip_of("a") == "172.30.0.1"
        write_records(
            path, {"services": [_service("a", "172.30.0.2"), _service("b", "172.30.0.3")]}
        )
        await _wait_for(lambda: ip_of("b") == "172.30.0.3")
        assert ip_of("a") == "172.30.0.2"
        path.write_text("services: [oops\n")
        await asyncio.sleep(0.2)
        assert ip_of("a") == "172.30.0.2"
        os.remove(path)
        await asyncio.sleep(0.2)
        assert ip_of("b") == "172.30.0.3"
        write_records(path, {"services": []})
        await _wait_for(lambda: not store.services)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())


def test_the_source_fails_when_the_file_cannot_be_loaded_at_start(tmp_path: Path) -> None:
    source = FileSource(str(tmp_path / "absent.yaml"))
    with pytest.raises(RecordsFileError):
        asyncio.run(source.run(ClusterRecords().sink("file")))


def _cluster_file(path: Path, services: int, addresses: int) -> int:
    """A records file as a person writes one (block style); how many YAML nodes it has."""
    lines = ["services:"]
    for index in range(services):
        lines += [
            f"- name: svc-{index}",
            f"  namespace: team-{index % 40}",
            f"  clusterIP: 172.30.{index // 250}.{index % 250 + 1}",
            "  ports:",
            "  - {name: http, port: 80, protocol: TCP}",
            "  - {name: metrics, port: 9100, protocol: TCP}",
        ]
    lines.append("endpoints:")
    for index in range(services):
        lines += [f"- name: svc-{index}", f"  namespace: team-{index % 40}", "  subsets:"]
        lines.append("  - addresses:")
        lines += [
            f"    - {{ip: 10.{128 + index // 250}.{index % 250}.{pod + 1}, hostname: p{pod}}}"
            for pod in range(addresses)
        ]
        lines.append("    ports: [{name: http, port: 8080}]")
    path.write_text("\n".join(lines) + "\n")
    import yaml

    loader = yaml.CSafeLoader(path.read_text())
    kinds = (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)
    try:
        return sum(1 for event in iter(loader.get_event, None) if isinstance(event, kinds))
    finally:
        loader.dispose()


def test_a_records_file_of_more_than_100000_nodes_loads(tmp_path: Path) -> None:
    """The old cap (100,000 nodes in all) held only ~1,500 services; a cluster file is larger."""
    path = tmp_path / "cluster.yaml"
    nodes = _cluster_file(path, services=1200, addresses=9)
    assert nodes > 100_000
    records = load_records_file(str(path))
    assert len(records.services) == 1200
    assert sum(len(s.addresses) for e in records.endpoints for s in e.subsets) == 10800


def test_an_alias_bomb_in_a_records_file_is_refused(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordsFileError, match="more than 100000 nodes after alias expansion"):
        load_records_file(str(path))

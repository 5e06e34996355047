"""The same records in dnsmasq and in nodehost give the same A and SRV answers.

The records are written once as a records file for nodehost and restated for
dnsmasq as ``--host-record``/``--srv-host`` options following the Kubernetes
DNS specification 1.1.0 (SRV targets ``<svc>.<ns>.svc`` or
``<endpoint label>.<svc>.<ns>.svc``, priority 10, weights sharing 100).
"""

from __future__ import annotations

import dns.flags
import pytest
from dnsrun import ask, free_udp_port, needs_dnsmasq, rcode, write_records

from nodehost.plugins.dns.records import fnv32a_hex

D = "cluster.local"


def _records() -> dict:
    services, endpoints = [], []
    for index in range(12):
        ports = [{"name": "http", "port": 80 + index}, {"name": "metrics", "port": 9100}]
        services.append(
            {
                "name": f"svc{index}",
                "namespace": f"ns{index % 3}",
                "clusterIP": f"172.30.1.{index + 1}",
                "ports": ports,
            }
        )
    for index in range(6):
        name, namespace = f"stateful{index}", f"ns{index % 2}"
        services.append(
            {
                "name": name,
                "namespace": namespace,
                "clusterIP": "None",
                "ports": [{"name": "peer", "port": 7000}],
            }
        )
        addresses = [
            {"ip": f"10.130.{index}.{n + 1}", **({"hostname": f"{name}-{n}"} if n % 2 == 0 else {})}
            for n in range(index % 3 + 1)
        ]
        endpoints.append(
            {
                "name": name,
                "namespace": namespace,
                "subsets": [{"addresses": addresses, "ports": [{"name": "peer", "port": 7000}]}],
            }
        )
    return {"services": services, "endpoints": endpoints}


def _dnsmasq_options(records: dict) -> tuple[list[str], list[str], list[str]]:
    """dnsmasq options, the A names and the SRV names they define."""
    options, a_names, srv_names = [], [], []
    by_key = {(e["namespace"], e["name"]): e for e in records["endpoints"]}
    for service in records["services"]:
        base = f"{service['name']}.{service['namespace']}.svc.{D}"
        if service["clusterIP"] != "None":
            options.append(f"--host-record={base},{service['clusterIP']}")
            a_names.append(base)
            for port in service["ports"]:
                srv = f"_{port['name']}._tcp.{base}"
                options.append(f"--srv-host={srv},{base},{port['port']},10,100")
                srv_names.append(srv)
            continue
        subset = by_key[(service["namespace"], service["name"])]["subsets"][0]
        weight = 100 // len(subset["addresses"])
        srv = f"_peer._tcp.{base}"
        srv_names.append(srv)
        a_names.append(base)
        for address in subset["addresses"]:
            target = f"{address.get('hostname') or fnv32a_hex(address['ip'])}.{base}"
            options += [
                f"--host-record={base},{address['ip']}",
                f"--host-record={target},{address['ip']}",
            ]
            options.append(f"--srv-host={srv},{target},7000,10,{weight}")
            a_names.append(target)
    return options, a_names, srv_names


def _view(response) -> tuple:
    """What must agree: rcode, AA/RA, and answer and additional records with their TTLs."""

    def records(section) -> set:
        return {
            (rrset.name.to_text().lower(), rrset.rdtype, rrset.ttl, rdata.to_text().lower())
            for rrset in section
            for rdata in rrset
        }

    flags = (bool(response.flags & dns.flags.AA), bool(response.flags & dns.flags.RA))
    return rcode(response), flags, records(response.answer), records(response.additional)


@pytest.fixture
def both(tmp_path, start_server, start_dnsmasq):
    records = _records()
    options, a_names, srv_names = _dnsmasq_options(records)
    nodehost = start_server(write_records(tmp_path / "records.yaml", records))
    dnsmasq = start_dnsmasq(free_udp_port(), ["--local-ttl=30", f"--local=/{D}/", *options])
    return nodehost, dnsmasq, a_names, srv_names


@needs_dnsmasq
def test_a_answers_agree_with_dnsmasq(both) -> None:
    nodehost, dnsmasq, a_names, _ = both
    assert len(set(a_names)) > 25
    for name in sorted(set(a_names)):
        assert _view(ask(nodehost, name + ".", "A")) == _view(ask(dnsmasq, name + ".", "A")), name


@needs_dnsmasq
def test_srv_answers_agree_with_dnsmasq(both) -> None:
    nodehost, dnsmasq, _, srv_names = both
    for name in sorted(set(srv_names)):
        assert _view(ask(nodehost, name + ".", "SRV")) == _view(ask(dnsmasq, name + ".", "SRV")), (
            name
        )


@needs_dnsmasq
def test_unknown_names_are_nxdomain_in_both(both) -> None:
    nodehost, dnsmasq, _, _ = both
    for name in (f"nope.ns0.svc.{D}.", f"svc0.ns9.svc.{D}.", f"x.{D}."):
        assert rcode(ask(nodehost, name, "A")) == rcode(ask(dnsmasq, name, "A")) == "NXDOMAIN"

"""The node's DNS metrics on /metrics, named and labelled like CoreDNS's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dns.exception
from dnsrun import ask, fqdn, rcode
from prometheus_client.parser import text_string_to_metric_families
from test_dns_node import Where, node_config  # noqa: F401  (the fixture)

from nodehost.plugins.dns.metrics import DnsCollector, DnsStats


def samples(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def scrape(state: Path) -> dict[str, list]:
    address = (state / "run" / "health.address").read_text().strip()
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as response:
        return samples(response.read().decode())


def test_requests_responses_and_cache_are_counted_on_the_nodes_metrics(
    node_config,  # noqa: F811
    tmp_path: Path,
) -> None:
    path, port = node_config
    state = tmp_path / "state"
    command = [sys.executable, "-m", "nodehost", "start", "--config", str(path),
               "--components", "dns", "--state-dir", str(state),
               "--health-address", "127.0.0.1:0"]  # fmt: skip
    env = {**os.environ, "NODEHOST_NO_PLUGINS": "1"}
    node = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 30
        name = fqdn("10-0-0-7.default.pod")
        while True:
            assert node.poll() is None, node.communicate()[1].decode()
            try:
                ask(Where(port), name, "A", timeout=0.2)
                break
            except (dns.exception.Timeout, OSError):
                assert time.monotonic() < deadline, "the node's DNS never answered"
        ask(Where(port), name, "A")  # from the answer cache
        ask(Where(port), name, "AAAA", tcp=True)
        assert rcode(ask(Where(port), fqdn("nothing.default.svc"), "A")) == "NXDOMAIN"
        metrics = scrape(state)
    finally:
        node.send_signal(signal.SIGTERM)
        node.communicate(timeout=30)
    server = f"dns://127.0.0.1:{port}"
    requests = {
        (s.labels["proto"], s.labels["type"]): s.value
        for s in metrics["nodehost_dns_requests"]
        if s.labels["server"] == server and s.labels["family"] == "1" and s.labels["zone"] == "."
    }
    assert requests[("udp", "A")] >= 3 and requests[("tcp", "AAAA")] == 1
    rcodes = {s.labels["rcode"]: s.value for s in metrics["nodehost_dns_responses"]}
    assert rcodes["NXDOMAIN"] == 1 and rcodes["NOERROR"] >= 3
    hits = {s.labels["type"]: s.value for s in metrics["nodehost_dns_cache_hits"]}
    assert hits["success"] >= 1
    [misses] = metrics["nodehost_dns_cache_misses"]
    assert misses.value >= 3


def test_upstream_exchanges_are_a_histogram_by_upstream_and_rcode() -> None:
    stats = DnsStats()
    stats.serving("127.0.0.1", 53, False)
    stats.forwarded("10.0.0.1:53", 0, 0.0004)
    stats.forwarded("10.0.0.1:53", 0, 0.3)
    stats.forwarded("10.0.0.1:53", 2, 9.0)
    text = "".join(_exposition(family) for family in DnsCollector().collect())
    found = samples(text)["nodehost_dns_forward_request_duration_seconds"]
    noerror = {
        s.labels.get("le"): s.value
        for s in found
        if s.labels["rcode"] == "NOERROR" and s.name.endswith("_bucket")
    }
    assert noerror["0.00025"] == 0 and noerror["0.0005"] == 1 and noerror["+Inf"] == 2
    servfail_count = [
        s.value for s in found if s.labels["rcode"] == "SERVFAIL" and s.name.endswith("_count")
    ]
    assert servfail_count == [1]
    stats.closed()


def _exposition(family) -> str:
    from prometheus_client import CollectorRegistry, generate_latest

    class One:
        def collect(self):
            yield family

    registry = CollectorRegistry(auto_describe=False)
    registry.register(One())
    return generate_latest(registry).decode()

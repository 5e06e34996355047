"""Issue 18, items 1 and 2: DNS at cluster scale (``kubernetes`` source) and the miss path.

Loaded by ``bench/scale.py`` (not a test).  Everything runs on loopback: the
test API server in this process, nodehost's standalone DNS server and dnsmasq
as child processes, dnsperf as the load generator both servers face.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_dns import free_port  # bench/dns.py, loaded by bench/scale.py before this module

DOMAIN = "cluster.local"
SERVICE_LABEL = "kubernetes.io/service-name"
TEAMS = ("payments", "checkout", "search", "identity", "catalog", "shipping", "billing",
         "analytics", "ml-platform", "observability", "messaging", "media", "ads", "risk",
         "support", "growth", "data", "edge", "infra", "mobile", "web", "partner", "fraud",
         "pricing", "inventory")  # fmt: skip
ENVS = ("prod", "staging", "dev", "qa")
PARTS = ("orders", "cart", "users", "sessions", "ledger", "invoices", "catalog", "reviews",
         "images", "thumbnails", "notifications", "email", "sms", "push", "auth", "tokens",
         "profiles", "search", "indexer", "recommender", "feature-store", "events", "audit",
         "metrics", "logs", "traces", "gateway", "frontend", "backend", "scheduler")  # fmt: skip
ROLES = ("api", "web", "worker", "db", "cache", "queue", "grpc", "admin", "proxy", "sync")
STATEFUL = ("db", "cache", "queue")


# --- a realistic cluster ------------------------------------------------------------------------


@dataclass
class ServiceSpec:
    namespace: str
    name: str
    cluster_ip: str  # "None": headless
    ports: list[dict[str, Any]]
    endpoints: list[tuple[str, str]] = field(default_factory=list)  # (ip, hostname)

    @property
    def fqdn(self) -> str:
        return f"{self.name}.{self.namespace}.svc.{DOMAIN}"


def cluster(services: int, endpoints: int, seed: int = 18) -> list[ServiceSpec]:
    """``services`` services over 100 namespaces (a fifth headless, the stateful roles),
    2-3 ports each, and ``endpoints`` ready endpoints spread over them."""
    rng = random.Random(seed)
    namespaces = [f"{team}-{env}" for team in TEAMS for env in ENVS][:100]
    specs, taken = [], set()
    for index in range(services):
        namespace = namespaces[index % len(namespaces)]
        part, role = rng.choice(PARTS), rng.choice(ROLES)
        name = f"{part}-{role}"
        while (namespace, name) in taken:
            name = f"{part}-{role}-v{rng.randint(2, 99)}"
        taken.add((namespace, name))
        headless = role in STATEFUL and rng.random() < 0.7
        ip = "None" if headless else f"172.30.{index // 250}.{index % 250 + 1}"
        specs.append(ServiceSpec(namespace, name, ip, _ports(role, rng)))
    for index in range(endpoints):
        spec = specs[index % len(specs)] if index < len(specs) else rng.choice(specs)
        pod = len(spec.endpoints)
        ip = f"10.{128 + index // 65000}.{index // 250 % 256}.{index % 250 + 1}"
        spec.endpoints.append((ip, f"{spec.name}-{pod}" if spec.cluster_ip == "None" else ""))
    return specs


def _ports(role: str, rng: random.Random) -> list[dict[str, Any]]:
    ports = [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]
    if role in STATEFUL:
        ports = [{"name": role, "port": {"db": 5432, "cache": 6379, "queue": 5672}[role],
                  "targetPort": {"db": 5432, "cache": 6379, "queue": 5672}[role],
                  "protocol": "TCP"}]  # fmt: skip
    if rng.random() < 0.5:
        ports.append({"name": "grpc", "port": 9090, "targetPort": 9090, "protocol": "TCP"})
    ports.append({"name": "metrics", "port": 9100, "targetPort": 9100, "protocol": "TCP"})
    return ports


def service_object(spec: ServiceSpec) -> dict[str, Any]:
    """The Service as the API server would hold it (kubectl-applied, defaults filled in)."""
    app = spec.name
    ip = spec.cluster_ip
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": spec.name,
            "namespace": spec.namespace,
            "labels": {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": spec.namespace},
            "annotations": {"owner": f"team-{spec.namespace.rsplit('-', 1)[0]}@example.com"},
        },
        "spec": {
            "selector": {"app.kubernetes.io/name": app},
            "ports": spec.ports,
            "clusterIP": ip,
            "clusterIPs": [ip],
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
        },
    }


def slice_object(spec: ServiceSpec, suffix: str = "x7k2p") -> dict[str, Any]:
    """The service's EndpointSlice as the EndpointSlice controller writes it."""
    endpoints = []
    for index, (ip, hostname) in enumerate(spec.endpoints):
        pod = hostname or f"{spec.name}-{7000 + index:x}-{suffix}"
        endpoint: dict[str, Any] = {
            "addresses": [ip],
            "conditions": {"ready": True, "serving": True, "terminating": False},
            "nodeName": f"node-{index % 300:03d}.example.com",
            "zone": f"zone-{'abc'[index % 3]}",
            "targetRef": {"kind": "Pod", "namespace": spec.namespace, "name": pod},
        }
        if hostname:
            endpoint["hostname"] = hostname
        endpoints.append(endpoint)
    ports = [
        {"name": p["name"], "port": p["targetPort"], "protocol": p["protocol"]} for p in spec.ports
    ]
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{spec.name}-{suffix}",
            "namespace": spec.namespace,
            "labels": {
                SERVICE_LABEL: spec.name,
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
            },
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": ports,
    }


# --- processes ----------------------------------------------------------------------------------


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class DnsProcess:
    """nodehost's standalone DNS server following the test API server."""

    def __init__(self, kubeconfig: Path, extra: list[str] | None = None) -> None:
        self.port = free_port()
        started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nodehost.plugins.dns.server", "--bind",
             f"127.0.0.1:{self.port}", "--kubeconfig", str(kubeconfig), *(extra or [])],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("ready"):
            raise SystemExit(f"nodehost DNS did not start: {line!r}")
        self.ready_seconds = time.monotonic() - started

    @property
    def rss(self) -> float:
        return rss_mb(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(20)


# --- change-to-answer latency -------------------------------------------------------------------


def a_query(name: str, query_id: int) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split("."))
    return query_id.to_bytes(2, "big") + b"\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + labels + \
        b"\x00\x00\x01\x00\x01"  # fmt: skip


def answer_ips(response: bytes) -> set[str]:
    import dns.message

    try:
        message = dns.message.from_wire(response)
    except Exception:  # a bad answer counts as not yet changed
        return set()
    return {item.address for rrset in message.answer for item in rrset if hasattr(item, "address")}


def update_latencies(
    kubeconfig: Path, specs: list[ServiceSpec], port: int, rate: float, seconds: float
) -> list[float]:
    """Write (PUT through the API) ``rate`` changes a second for ``seconds`` (cluster IPs and
    headless endpoints, in turn); the seconds from each write until the DNS server answers
    the new address."""
    from lightkube import Client, KubeConfig
    from lightkube.resources.core_v1 import Service
    from lightkube.resources.discovery_v1 import EndpointSlice

    client = Client(KubeConfig.from_file(str(kubeconfig)), trust_env=False)
    clustered = [s for s in specs if s.cluster_ip != "None"]
    headless = [s for s in specs if s.cluster_ip == "None" and s.endpoints]
    pending: dict[int, tuple[str, str, float]] = {}
    lock = threading.Lock()
    latencies: list[float] = []
    done = threading.Event()

    def write() -> None:
        count = int(rate * seconds)
        start = time.monotonic()
        for index in range(count):
            time.sleep(max(0.0, start + index / rate - time.monotonic()))
            new_ip = f"172.31.{index // 250 % 256}.{index % 250 + 1}"
            if index % 2 == 0:
                spec = clustered[index // 2 % len(clustered)]
                spec.cluster_ip = new_ip
                obj = Service.from_dict(service_object(spec))
            else:
                spec = headless[index // 2 % len(headless)]
                spec.endpoints[0] = (new_ip, spec.endpoints[0][1])
                obj = EndpointSlice.from_dict(slice_object(spec))
            with lock:
                pending[index] = (spec.fqdn, new_ip, time.monotonic())
            client.replace(obj)
        done.set()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)
        deadline = time.monotonic() + seconds + 30
        while (not done.is_set() or pending) and time.monotonic() < deadline:
            with lock:
                asked = {index % 65536: (index, *change) for index, change in pending.items()}
            for query_id, (_, name, _, _) in asked.items():
                sock.sendto(a_query(name, query_id), ("127.0.0.1", port))
            time.sleep(0.005)
            for response in _drain(sock):
                found = asked.get(int.from_bytes(response[:2], "big"), (0, "", "", 0.0))
                index, _, ip, written = found
                if ip and ip in answer_ips(response):
                    with lock:
                        if pending.pop(index, None) is not None:
                            latencies.append(time.monotonic() - written)
    writer.join()
    return latencies


def _drain(sock: socket.socket) -> Iterator[bytes]:
    while True:
        try:
            yield sock.recv(4096)
        except BlockingIOError:
            return


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")


# --- the figures ------------------------------------------------------------------------------


@dataclass
class Figure:
    """One row of the table: what, the measured value, its unit, the budget, whether it holds."""

    name: str
    value: float
    unit: str
    budget: str
    holds: bool | None  # None: no budget (context)

    def row(self) -> str:
        verdict = {True: "ok", False: "MISSED", None: ""}[self.holds]
        return f"{self.name:<58} {self.value:>10.2f} {self.unit:<6} {self.budget:<22} {verdict}"


def coredns_mb(pods: int, services: int) -> float:
    """CoreDNS's published memory sizing for the kubernetes plugin: (pods + services)/1000 + 54."""
    return (pods + services) / 1000 + 54


class ApiProcess:
    """The test API server in a process of its own (its threads do not share this one's GIL),
    holding the objects of ``objects`` (a JSON file) from the start."""

    def __init__(self, directory: Path, objects: list[dict[str, Any]]) -> None:
        import json

        directory.mkdir(parents=True, exist_ok=True)
        data = directory / "objects.json"
        data.write_text(json.dumps(objects))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nodehost.testing.apiserver", "--dir", str(directory),
             "--objects", str(data)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        lines = [self.process.stdout.readline() for _ in range(3)]
        self.kubeconfig = Path(lines[1].split()[1])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(20)


def dns_at_scale(services: int, endpoints: int, dnsperf_seconds: float,
                 bench_dns: Any, root: Path) -> list[Figure]:  # fmt: skip
    """Item 1: load the test API server, start DNS, measure; see the module docstring."""
    specs = cluster(services, endpoints)
    service_objects = [service_object(spec) for spec in specs]
    slices = [slice_object(spec) for spec in specs if spec.endpoints]
    rss = []
    for index, objects in enumerate(([], service_objects)):
        api = ApiProcess(root / f"api-{index}", objects)
        try:
            dns_server = DnsProcess(api.kubeconfig)
            rss.append(dns_server.rss)
            dns_server.stop()
        finally:
            api.stop()
    rss_empty, rss_services = rss
    api = ApiProcess(root / "api-full", service_objects + slices)
    budget = coredns_mb(endpoints, services)
    try:
        full = DnsProcess(api.kubeconfig)
        rss_full = full.rss
        figures = [
            Figure(f"start -> DNS ready ({services} svc, {endpoints} endpoints)",
                   full.ready_seconds, "s", "", None),
            Figure("RSS, empty cluster", rss_empty, "MB", "", None),
            Figure("RSS growth per 1,000 services", (rss_services - rss_empty) * 1000 / services,
                   "MB", "", None),
            Figure("RSS growth per 10,000 endpoints",
                   (rss_full - rss_services) * 10000 / endpoints, "MB", "", None),
            Figure("RSS, whole cluster listed", rss_full, "MB", f"< {budget:.0f} (CoreDNS)",
                   rss_full < budget),
        ]  # fmt: skip
        try:
            latencies = update_latencies(api.kubeconfig, specs, full.port, 100, 20)
            figures += [
                Figure("change -> answer p50 (100 changes/s)", percentile(latencies, 0.5) * 1000,
                       "ms", "", None),
                Figure("change -> answer p99 (100 changes/s)", percentile(latencies, 0.99) * 1000,
                       "ms", "<= 1000", percentile(latencies, 0.99) <= 1.0),
            ]  # fmt: skip
            figures += cached_qps(specs, full, dnsperf_seconds, bench_dns, root)
            rss_warm = full.rss
            figures.append(Figure("RSS, after the QPS run (10,000 answers cached)", rss_warm, "MB",
                                  f"< {budget:.0f} (CoreDNS)", rss_warm < budget))  # fmt: skip
        finally:
            full.stop()
    finally:
        api.stop()
    return figures


def cached_qps(specs: list[ServiceSpec], server: DnsProcess, seconds: float,
               bench_dns: Any, root: Path) -> list[Figure]:  # fmt: skip
    """dnsperf over up to 10,000 distinct cluster names, nodehost vs dnsmasq holding the same."""
    named = [spec for spec in specs if spec.cluster_ip != "None" or spec.endpoints][:10000]
    queries = root / "cluster-names.txt"
    queries.write_text("".join(f"{spec.fqdn} A\n" for spec in named))
    hosts = root / "hosts"
    lines = []
    for spec in named:
        ips = [spec.cluster_ip] if spec.cluster_ip != "None" else [ip for ip, _ in spec.endpoints]
        lines += [f"{ip} {spec.fqdn}\n" for ip in ips]
    hosts.write_text("".join(lines))
    port = free_port()
    dnsmasq = bench_dns.start_dnsmasq(port, [f"--addn-hosts={hosts}", "--local-ttl=30"])
    try:
        ours, theirs = [], []
        for _ in range(2):  # interleaved, so both see the machine's load alike
            ours.append(bench_dns.dnsperf(server.port, queries, seconds, root / "n.out").qps)
            theirs.append(bench_dns.dnsperf(port, queries, seconds, root / "d.out").qps)
    finally:
        dnsmasq.terminate()
        dnsmasq.wait(10)
    ratio = max(ours) / max(theirs)
    return [
        Figure(f"cached cluster names QPS, nodehost ({len(named)} names)", max(ours), "q/s", "",
               None),
        Figure("cached cluster names QPS, dnsmasq (same names)", max(theirs), "q/s", "", None),
        Figure("cached cluster names, nodehost/dnsmasq", ratio, "x", ">= 0.8", ratio >= 0.8),
    ]  # fmt: skip


def miss_path(names: int, seconds: float, bench_dns: Any, root: Path) -> list[Figure]:
    """Item 2: every question forwarded (upstream TTL 0), nodehost vs dnsmasq as a forwarder,
    both to the same upstream dnsmasq."""
    records, _, forwarded = bench_dns.write_inputs(root, names)
    upstream_port = free_port()
    upstream = bench_dns.start_dnsmasq(
        upstream_port,
        ["--local-ttl=0"]
        + [f"--host-record=host{i}.example.test,192.0.2.{i % 250 + 1}" for i in range(names)],
    )
    cpu: dict[str, list[float]] = {"nodehost": [], "dnsmasq": []}
    qps: dict[str, list[float]] = {"nodehost": [], "dnsmasq": []}
    try:
        for _ in range(3):  # interleaved rounds; the best of each counts
            for kind in ("nodehost", "dnsmasq"):
                port = free_port()
                server = (
                    bench_dns.start_nodehost(port, records, ["--upstream",
                                                             f"127.0.0.1:{upstream_port}"])
                    if kind == "nodehost"
                    else bench_dns.start_dnsmasq(port, [f"--server=127.0.0.1#{upstream_port}",
                                                        "--cache-size=10000"])
                )  # fmt: skip
                try:
                    before = cpu_seconds(server.pid)
                    result = bench_dns.dnsperf(port, forwarded, seconds, root / f"{kind}.out")
                    used = cpu_seconds(server.pid) - before
                finally:
                    server.terminate()
                    server.wait(10)
                qps[kind].append(result.qps)
                cpu[kind].append(used / (result.qps * seconds + names) * 1e6)
    finally:
        upstream.terminate()
        upstream.wait(10)
    ratio = max(qps["nodehost"]) / max(qps["dnsmasq"])
    return [
        Figure("miss path QPS, nodehost forwarding (TTL 0 upstream)", max(qps["nodehost"]), "q/s",
               "", None),
        Figure("miss path QPS, dnsmasq forwarding (same upstream)", max(qps["dnsmasq"]), "q/s",
               "", None),
        Figure("miss path CPU per question, nodehost", min(cpu["nodehost"]), "us", "", None),
        Figure("miss path CPU per question, dnsmasq", min(cpu["dnsmasq"]), "us", "", None),
        Figure("miss path, nodehost/dnsmasq", ratio, "x", ">= 0.5", ratio >= 0.5),
    ]  # fmt: skip


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


Runner = Callable[..., list[Figure]]

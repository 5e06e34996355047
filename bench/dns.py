"""Throughput and latency of nodehost's DNS server against dnsmasq, measured with dnsperf.

    python bench/dns.py [--duration 10] [--names 1000] [--no-uvloop]

Both servers serve the same cluster names (``svc<i>.ns<i % 20>.svc.cluster.local``,
one A record each) on loopback; dnsperf asks each name in turn for
``--duration`` seconds, after one warm-up pass (the answers are cached).
Then both forward ``host<i>.example.test`` to one upstream dnsmasq (their
caches warm): nodehost with its forwarder, dnsmasq as a caching forwarder.
Prints QPS, mean and p99 latency per run and the nodehost/dnsmasq ratio.

Needs ``dnsperf`` and ``dnsmasq`` (Debian packages ``dnsperf``, ``dnsmasq-base``).
Budget (issue 6): nodehost >= 0.8x dnsmasq's QPS on cached cluster names.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

DOMAIN = "cluster.local"
BUDGET = 0.8


@dataclass(frozen=True)
class Result:
    qps: float
    mean_ms: float
    p99_ms: float
    lost: int


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        port = udp.getsockname()[1]
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind(("127.0.0.1", port))
        return port


def cluster_ip(index: int) -> str:
    return f"172.30.{index // 250}.{index % 250 + 1}"


def write_inputs(root: Path, names: int) -> tuple[Path, Path, Path]:
    """The records file, the dnsperf file of cluster names, and that of forwarded names."""
    records = root / "records.yaml"
    lines = ["services:"]
    lines += [
        f"- {{name: svc{i}, namespace: ns{i % 20}, clusterIP: {cluster_ip(i)}}}"
        for i in range(names)
    ]
    records.write_text("\n".join(lines) + "\n")
    cluster = root / "cluster.txt"
    cluster.write_text("".join(f"svc{i}.ns{i % 20}.svc.{DOMAIN} A\n" for i in range(names)))
    forwarded = root / "forwarded.txt"
    forwarded.write_text("".join(f"host{i}.example.test A\n" for i in range(names)))
    return records, cluster, forwarded


def start_dnsmasq(port: int, options: list[str]) -> subprocess.Popen[bytes]:
    command = [
        shutil.which("dnsmasq") or "/usr/sbin/dnsmasq", "--keep-in-foreground",
        "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--no-poll", "--bind-interfaces",
        "--listen-address=127.0.0.1", f"--port={port}", "--pid-file=", *options,
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_answering(port, process)
    return process


def start_nodehost(port: int, records: Path, extra: list[str]) -> subprocess.Popen[str]:
    command = [
        sys.executable, "-m", "nodehost.plugins.dns.server",
        "--bind", f"127.0.0.1:{port}", "--records", str(records), *extra,
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("ready"):
        raise SystemExit(f"nodehost DNS did not start: {line!r}")
    return process


def wait_answering(port: int, process: subprocess.Popen[bytes]) -> None:
    query = bytes.fromhex("abcd01000001000000000000") + b"\x05ready\x00\x00\x01\x00\x01"
    deadline = time.monotonic() + 10
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(0.2)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SystemExit(f"dnsmasq exited: {process.stderr.read().decode()}")
            sock.sendto(query, ("127.0.0.1", port))
            try:
                sock.recv(512)
                return
            except TimeoutError:
                continue
    raise SystemExit("dnsmasq did not answer")


def dnsperf(port: int, queries: Path, duration: float, output: Path) -> Result:
    """One dnsperf run; per-query latencies (``-v``) go to ``output`` for the p99."""
    warm = ["dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d", str(queries), "-n", "1"]
    subprocess.run(warm, check=True, capture_output=True)
    command = [
        "dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d", str(queries),
        "-l", str(duration), "-v",
    ]  # fmt: skip
    with output.open("w") as sink:
        subprocess.run(command, check=True, stdout=sink, stderr=subprocess.DEVNULL)
    return parse(output)


def parse(output: Path) -> Result:
    latencies, qps, lost = [], 0.0, 0
    with output.open() as lines:
        for line in lines:
            if line.startswith("> "):
                fields = line.split()
                if fields[1] not in ("T", "I"):
                    latencies.append(float(fields[-1]))
            elif "Queries per second:" in line:
                qps = float(line.split(":")[1])
            elif "Queries lost:" in line:
                lost = int(line.split(":")[1].split()[0])
    if not latencies:
        raise SystemExit(f"dnsperf gave no answers (see {output})")
    latencies.sort()
    mean = sum(latencies) / len(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return Result(qps, mean * 1000, p99 * 1000, lost)


def row(label: str, result: Result) -> str:
    return (
        f"{label:<34} {result.qps:>10,.0f} {result.mean_ms:>9.3f} {result.p99_ms:>9.3f}"
        f" {result.lost:>6}"
    )


def measure(args: argparse.Namespace, root: Path) -> list[tuple[str, Result, Result]]:
    records, cluster, forwarded = write_inputs(root, args.names)
    extra = ["--no-uvloop"] if args.no_uvloop else []
    upstream_port = free_port()
    upstream = start_dnsmasq(
        upstream_port,
        ["--local-ttl=3600"]
        + [f"--host-record=host{i}.example.test,192.0.2.{i % 250 + 1}" for i in range(args.names)],
    )
    dnsmasq_cluster = [f"--host-record=svc{i}.ns{i % 20}.svc.{DOMAIN},{cluster_ip(i)}"
                       for i in range(args.names)]  # fmt: skip
    results = []
    try:
        for label, queries, nodehost_extra, dnsmasq_extra in (
            ("cached cluster names", cluster, [], ["--local-ttl=30", *dnsmasq_cluster]),
            (
                "forwarded names (cache warm)",
                forwarded,
                ["--upstream", f"127.0.0.1:{upstream_port}"],
                [f"--server=127.0.0.1#{upstream_port}", "--cache-size=10000"],
            ),
        ):
            runs = []
            for kind in ("nodehost", "dnsmasq"):
                port = free_port()
                server = (
                    start_nodehost(port, records, extra + nodehost_extra)
                    if kind == "nodehost"
                    else start_dnsmasq(port, dnsmasq_extra)
                )
                try:
                    runs.append(dnsperf(port, queries, args.duration, root / f"{kind}.out"))
                finally:
                    server.terminate()
                    server.wait(10)
            results.append((label, runs[0], runs[1]))
    finally:
        upstream.terminate()
        upstream.wait(10)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per dnsperf run")
    parser.add_argument("--names", type=int, default=1000, help="distinct names per run")
    parser.add_argument("--no-uvloop", action="store_true", help="run nodehost on plain asyncio")
    args = parser.parse_args()
    missing = [tool for tool in ("dnsperf", "dnsmasq") if not shutil.which(tool)]
    if missing and not (missing == ["dnsmasq"] and Path("/usr/sbin/dnsmasq").exists()):
        print(f"missing: {', '.join(missing)} (apt-get install dnsperf dnsmasq-base)")
        return 2
    with tempfile.TemporaryDirectory(prefix="nodehost-dns-bench-") as directory:
        results = measure(args, Path(directory))
    loop = "asyncio" if args.no_uvloop else _loop_name()
    print(f"dnsperf {args.duration:g} s per run, {args.names} names, nodehost on {loop}")
    print(f"{'':<34} {'QPS':>10} {'mean ms':>9} {'p99 ms':>9} {'lost':>6}")
    verdict = 0
    for label, nodehost, dnsmasq in results:
        ratio = nodehost.qps / dnsmasq.qps
        print(row(f"nodehost: {label}", nodehost))
        print(row(f"dnsmasq:  {label}", dnsmasq))
        print(f"{'ratio nodehost/dnsmasq':<34} {ratio:>10.2f}")
        if label.startswith("cached cluster") and ratio < BUDGET:
            verdict = 1
    print(
        f"budget (cached cluster names >= {BUDGET}x dnsmasq): {'met' if not verdict else 'MISSED'}"
    )
    return verdict


def _loop_name() -> str:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio (uvloop not installed)"
    return "uvloop"


if __name__ == "__main__":
    raise SystemExit(main())

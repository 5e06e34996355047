"""nodehost at cluster scale (issue 18): DNS for 10,000 services, the miss path, a fleet joining.

    python bench/scale.py [--services 10000] [--endpoints 50000] [--nodes 1000]
                          [--outage 30] [--duration 10] [--only dns,miss,fleet]

1. DNS with the ``kubernetes`` source: the test API server holds ``--services``
   Services and ``--endpoints`` ready endpoints (EndpointSlices); nodehost's
   standalone DNS server lists and watches them.  Start -> ready, RSS (empty,
   services only, everything) against CoreDNS's sizing formula, change ->
   answer latency while 100 changes a second stream in, and dnsperf QPS over
   10,000 cached cluster names against dnsmasq holding the same names.
2. The miss path: dnsperf against nodehost forwarding every question (the
   upstream dnsmasq answers with TTL 0) and against dnsmasq as a forwarder to
   the same upstream; QPS and CPU per question.
3. A fleet: ``--nodes`` simulated nodes (the bootstrap and rotation code, the
   real API client; many per process) join one test API server, which then
   goes down for ``--outage`` seconds while half of them are still joining;
   then rotation when every certificate was issued in the same minute.

Prints one table: each figure, its budget and whether it holds (exit 1 if one
does not).  Needs dnsperf and dnsmasq (``apt-get install dnsperf
dnsmasq-base``); the machine's load average is printed with the table, since
other work on the machine moves every figure.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
# bench/dns.py would shadow dnspython's ``dns`` package: never import from this folder by name.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]


def load(name: str) -> ModuleType:
    """A sibling script of this folder, loaded by path under a ``bench_`` name."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--services", type=int, default=10_000)
    parser.add_argument("--endpoints", type=int, default=50_000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--outage", type=float, default=30.0, help="seconds the API is down")
    parser.add_argument(
        "--lifetime", type=int, default=300, help="certificate lifetime in the rotation run"
    )
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per dnsperf run")
    parser.add_argument("--only", default="dns,miss,fleet", help="which parts, comma-separated")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    if parts & {"dns", "miss"} and not (shutil.which("dnsperf") and _dnsmasq()):
        print("missing: dnsperf or dnsmasq (apt-get install dnsperf dnsmasq-base)")
        return 2
    load_before = os.getloadavg()
    started = time.monotonic()
    print(f"{'figure':<58} {'value':>10} {'unit':<6} {'budget':<22}", flush=True)
    figures = []

    def report(rows: list) -> None:
        for figure in rows:
            print(figure.row(), flush=True)
        figures.extend(rows)

    with tempfile.TemporaryDirectory(prefix="nodehost-scale-") as directory:
        root = Path(directory)
        bench_dns = load("dns")
        scale_dns = load("scale_dns")
        figure = scale_dns.Figure
        if "dns" in parts:
            report(scale_dns.dns_at_scale(args.services, args.endpoints, args.duration,
                                          bench_dns, root))  # fmt: skip
        if "miss" in parts:
            report(scale_dns.miss_path(1000, args.duration, bench_dns, root))
        if "fleet" in parts:
            fleet = load("scale_fleet")
            joined = fleet.join_and_outage(args.nodes, args.outage, root / "fleet", figure)
            report(joined)
            join_seconds = joined[0].value if joined[0].unit == "s" else 0.0
            report(fleet.rotation(args.nodes, root / "rotation", figure, args.lifetime,
                                  join_seconds))  # fmt: skip
    load_after = os.getloadavg()
    print(
        f"nodehost at scale: {args.services} services, {args.endpoints} endpoints, "
        f"{args.nodes} nodes; {time.monotonic() - started:.0f} s; load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after (2 cores, shared machine)"
    )
    missed = [figure.name for figure in figures if figure.holds is False]
    print(f"budgets: {'all met' if not missed else 'MISSED: ' + '; '.join(missed)}")
    return 1 if missed else 0


def _dnsmasq() -> bool:
    return bool(shutil.which("dnsmasq")) or Path("/usr/sbin/dnsmasq").exists()


if __name__ == "__main__":
    raise SystemExit(main())

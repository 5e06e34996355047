#!/usr/bin/env python3
"""Time from the command to "node ready" for the whole node against a local cluster.

Usage: python bench/localcluster.py [--runs N]

Each run is a whole process, as a user starts it: the ``nodehost`` console
script next to this interpreter, ``--exit-on-ready``, every component this
machine can run (as root with the CNI plugins and containerd: all of them).
Timed from the spawn to the ``node ready after`` line on its stdout ("ready")
and to its exit ("total", which adds the ordered stop and teardown).  Cases,
interleaved run by run so that the machine's load hits each alike:

* ``by hand`` (the baseline): what it took before ``--local-cluster`` --
  ``python -m nodehost.testing.apiserver`` with the same node config in a
  config map, then ``nodehost start --bootstrap-config-name ...`` against
  it; timed from the API server's spawn;
* ``--local-cluster, new DIR``: the first start (a CA, the CSRs);
* ``--local-cluster, same DIR``: a later start (CA, certificates kept).

Prints medians and the ratio to the baseline, and the load average.  Bytecode
is cached (``PYTHONDONTWRITEBYTECODE`` is dropped), as in an installed copy.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent
NODEHOST = str(BIN / "nodehost")
QUIET = ("--exit-on-ready", "--health-address=127.0.0.1:0", "--log-format=json")
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str], started: float | None = None) -> tuple[float, float]:
    """Run ``argv`` to its end: (seconds to the ``node ready after`` line, seconds to exit)."""
    begin = time.perf_counter() if started is None else started
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
    )
    ready = None
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("node ready after") and ready is None:
            ready = time.perf_counter() - begin
    _, err = process.communicate()
    total = time.perf_counter() - begin
    if process.returncode != 0 or ready is None:
        raise SystemExit(f"{' '.join(argv)} failed ({process.returncode}):\n{err[-3000:]}")
    return ready, total


def local_cluster(directory: Path) -> tuple[float, float]:
    return timed([NODEHOST, "start", "--local-cluster", str(directory), *QUIET])


def new_dir(base: Path) -> Callable[[], tuple[float, float]]:
    def run() -> tuple[float, float]:
        directory = Path(tempfile.mkdtemp(dir=base)) / "lc"
        try:
            return local_cluster(directory)
        finally:
            shutil.rmtree(directory.parent, ignore_errors=True)

    return run


def by_hand(base: Path) -> Callable[[], tuple[float, float]]:
    """The baseline: the test API server as its own process, then a bootstrapping start."""
    from nodehost.options import StartOptions
    from nodehost.pki.nodeconfig import dump_node_config
    from nodehost.plugins.localcluster.layout import ClusterSettings, Layout
    from nodehost.plugins.localcluster.machine import Machine
    from nodehost.plugins.localcluster.nodeconfig import node_config

    machine = Machine.probe()
    layout = Layout(base / "by-hand")
    config = base / "node-config.yaml"
    raw = node_config(
        StartOptions(), layout, ClusterSettings.choose(), machine.no_bridge_reason() is None
    )
    config.write_bytes(dump_node_config(raw))
    disable = () if machine.no_runtime_reason() is None else ("--disable=runtime",)

    def run() -> tuple[float, float]:
        begin = time.perf_counter()
        api_dir = Path(tempfile.mkdtemp(dir=base))
        server = subprocess.Popen(
            [sys.executable, "-m", "nodehost.testing.apiserver", "--dir", str(api_dir),
             "--approve-serving", "approve",
             "--config-map", f"openshift-node/node-config={config}"],
            stdout=subprocess.PIPE, text=True, env=ENV,
        )  # fmt: skip
        try:
            assert server.stdout is not None
            server.stdout.readline()  # "address https://...": listening
            return timed(
                [NODEHOST, "start", "--bootstrap-config-name=node-config",
                 f"--kubeconfig={api_dir / 'bootstrap.kubeconfig'}",
                 f"--config-dir={api_dir / 'node'}", f"--state-dir={api_dir / 'state'}",
                 "--standins=missing", *disable, *QUIET],
                started=begin,
            )  # fmt: skip
        finally:
            server.terminate()
            server.wait()
            shutil.rmtree(api_dir, ignore_errors=True)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="nh-bench-lc-"))
    try:
        kept = base / "kept"
        local_cluster(kept)  # the first start of the kept DIR, and warm caches
        cases: dict[str, Callable[[], tuple[float, float]]] = {
            "by hand (baseline)": by_hand(base),
            "--local-cluster, new DIR": new_dir(base),
            "--local-cluster, same DIR": lambda: local_cluster(kept),
        }
        results: dict[str, list[tuple[float, float]]] = {label: [] for label in cases}
        for _ in range(args.runs):
            for label, run in cases.items():
                results[label].append(run())
        report(results, args.runs)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def report(results: dict[str, list[tuple[float, float]]], runs: int) -> None:
    root = "root" if os.geteuid() == 0 else "not root"
    print(f"whole node, command to ready (N={runs}, {root}, {os.cpu_count()} CPUs)")
    print(f"{'case':<28} {'ready s':>8} {'x base':>7} {'total s':>8} {'x base':>7}")
    base_ready = statistics.median(r for r, _ in results["by hand (baseline)"])
    base_total = statistics.median(t for _, t in results["by hand (baseline)"])
    for label, samples in results.items():
        ready = statistics.median(r for r, _ in samples)
        total = statistics.median(t for _, t in samples)
        print(
            f"{label:<28} {ready:>8.2f} {ready / base_ready:>7.2f} "
            f"{total:>8.2f} {total / base_total:>7.2f}"
        )
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"\nload average during the run (1, 5, 15 min): {load} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

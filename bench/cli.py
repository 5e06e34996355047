#!/usr/bin/env python3
"""Start-up cost of the nodehost CLI: median wall time of common commands.

Usage: python bench/cli.py [--runs N] [--config FILE]

Prints, for each command, the median and the 90th percentile over N runs
(default 25) of a fresh process, next to ``python -c pass``, and the ratio of
``nodehost --help`` and ``nodehost version`` to the bare interpreter (budget:
4x).  Commands run through the ``nodehost`` console script next to the
interpreter running this script.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET = 4.0
#: The sample is a full Origin config (OpenShift SDN, DNS); plan the components this build runs.
SMOKE = ("--components=kubelet,proxy",)


def measure(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def sample_node_folder() -> Path:
    """A node folder with the files the sample config names (contents unchecked)."""
    folder = Path(tempfile.mkdtemp(prefix="nodehost-bench-"))
    for name in ("server.crt", "server.key", "ca.crt", "node.kubeconfig"):
        (folder / name).write_text("placeholder\n")
    sample = (ROOT / "contrib" / "examples" / "node-config.yaml").read_text()
    (folder / "node-config.yaml").write_text(sample)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--config", help="NodeConfig to validate (default: the contrib sample)")
    args = parser.parse_args()
    exe = str(Path(sys.executable).parent / "nodehost")
    config = args.config or str(sample_node_folder() / "node-config.yaml")
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cores, N={args.runs}"
    cases = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("nodehost --help", [exe, "--help"]),
        ("nodehost version", [exe, "version"]),
        (
            "nodehost config validate",
            [exe, "config", "validate", config, "--components=kubelet,proxy"],
        ),
        (
            "nodehost start --dry-run",
            [exe, "start", "--config", config, "--dry-run", "--standins=always", *SMOKE],
        ),
    ]
    medians: dict[str, float] = {}
    print(f"nodehost CLI start-up ({env_note})")
    print(f"{'command':<28} {'median ms':>10} {'p90 ms':>8} {'x python':>9}")
    for label, argv in cases:
        check = subprocess.run(argv, capture_output=True, text=True, check=False)
        if check.returncode != 0:
            raise SystemExit(f"{label} failed ({check.returncode}): {check.stderr.strip()}")
        times = sorted(measure(argv, args.runs))
        medians[label] = statistics.median(times)
        p90 = times[int(0.9 * (len(times) - 1))]
        ratio = medians[label] / medians["python -c pass"]
        print(f"{label:<28} {medians[label] * 1000:>10.1f} {p90 * 1000:>8.1f} {ratio:>9.2f}")
    for label in ("nodehost --help", "nodehost version"):
        ratio = medians[label] / medians["python -c pass"]
        verdict = "within" if ratio <= BUDGET else "OVER"
        print(f"budget: {label} is {ratio:.2f}x the bare interpreter ({verdict} {BUDGET:.0f}x)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What the preflight adds to a ``nodehost start`` with stand-ins, side by side (budget 20 ms).

    python bench/preflight.py [--runs 41]

Each round does, in this process and in turn, what ``start`` does before it
starts anything -- load the plugins, resolve and validate the config, build
the plan -- once without the preflight and once with it (the order swaps
every round, so load on a shared machine hits both alike).  The table shows
both medians and their difference: the preflight's cost.  The node is a
signer CA and a node folder in a temporary directory, with the kubelet,
kube-proxy, the runtime and DNS selected, stand-ins wherever one exists
(``--standins missing``: the installed containerd is checked as real), and
the kubelet's, kube-proxy's and DNS ports moved to free ones.  Nothing is
started and nothing is written outside the temporary directory.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

BUDGET_MS = 20.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def make_node(root: Path) -> Path:
    from nodehost.testing.nodefolder import NodeFolder, SignerCA

    folder = NodeFolder.create(root / "node", SignerCA.create(root / "ca"))
    folder.update(
        {
            "servingInfo": {"bindAddress": f"127.0.0.1:{free_port()}"},
            "dnsBindAddress": f"127.0.0.1:{free_port()}",
            "dnsIP": "127.0.0.1",
            "kubeletArguments": {"fail-swap-on": ["false"], "healthz-port": [str(free_port())]},
            "proxyArguments": {"healthz-port": [str(free_port())]},
        }
    )
    return folder.config_path


def start_stages(config: Path, state: Path, with_preflight: bool, standins: str) -> float:
    """Seconds for ``start``'s stages up to the first component, with or without preflight."""
    from nodehost.check.preflight import preflight
    from nodehost.options import StartOptions
    from nodehost.plan import build_plan
    from nodehost.pluginhost.inventory import Inventory
    from nodehost.pluginhost.manager import LoadOptions
    from nodehost.resolve import resolve_config, selection_for

    began = time.perf_counter()
    inventory = Inventory.load(LoadOptions.from_environment())
    options = StartOptions(
        config=str(config),
        components="kubelet,proxy,runtime,dns",
        state_dir=str(state),
        standins=standins,
    )
    resolved = resolve_config(options, inventory, selection_for(options, inventory))
    plan = build_plan(
        inventory, resolved, options, state_dir=str(state), overrides={}, standins=standins
    )
    if with_preflight:
        preflight(inventory, resolved, options, plan, frozenset())
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=41)
    parser.add_argument(
        "--standins",
        choices=("always", "missing"),
        default="always",
        help="missing: the installed containerd is checked as a real one",
    )
    arguments = parser.parse_args()
    runs, standins = arguments.runs, arguments.standins
    from nodehost.log import configure_logging

    configure_logging(0, "json")
    with tempfile.TemporaryDirectory(prefix="nodehost-bench-preflight-") as tmp:
        root = Path(tmp)
        config, state = make_node(root), root / "state"
        start_stages(config, state, True, standins)  # warm-up: imports, caches
        without, with_ = [], []
        for round_ in range(runs):
            order = (False, True) if round_ % 2 else (True, False)
            for flag in order:
                (with_ if flag else without).append(start_stages(config, state, flag, standins))
    plain, checked = statistics.median(without) * 1e3, statistics.median(with_) * 1e3
    added = checked - plain
    print(
        f"load average {os.getloadavg()[0]:.2f}, {runs} rounds, --standins={standins}, "
        f"python {sys.version.split()[0]}"
    )
    print(f"{'start stages':<28} {'median ms':>10}")
    print(f"{'without preflight':<28} {plain:>10.2f}")
    print(f"{'with preflight':<28} {checked:>10.2f}")
    verdict = "within" if added <= BUDGET_MS else "OVER"
    print(f"{'preflight adds':<28} {added:>10.2f}  ({verdict} the {BUDGET_MS:.0f} ms budget)")
    return 0 if added <= BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())

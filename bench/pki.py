"""Time to create a full node folder with an existing CA: in-process, as a whole command,
and with the openssl CLI (bench/openssl-node-folder.sh).  Prints a table of medians.

    python bench/pki.py [--runs N]

Budgets (issue 4): ECDSA folder in-process <= 10 ms; the whole ``nodehost config create``
command (ECDSA) within 1.5x of ``nodehost --help`` plus the in-process figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
OPENSSL_SCRIPT = HERE / "openssl-node-folder.sh"
HOSTNAME, IP = "node1.example.com", "10.0.0.1"


def median_ms(runs: int, action: Callable[[int], object]) -> float:
    """Median wall time of ``action(i)`` over ``runs`` calls, in milliseconds."""
    times = []
    for index in range(runs):
        start = time.perf_counter()
        action(index)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def make_ca(root: Path, key_type: str) -> Path:
    from nodehost.pki.ca import create_signer_ca

    directory = root / f"ca-{key_type}"
    create_signer_ca(directory, name=f"bench-{key_type}", key_type=key_type)
    return directory


def in_process(root: Path, ca: Path, key_type: str, runs: int) -> float:
    from nodehost.config.listen import parse_listen
    from nodehost.pki.nodefolder import NodeFolderRequest, create_node_folder

    def request(index: int) -> NodeFolderRequest:
        return NodeFolderRequest(
            node_dir=str(root / f"inproc-{key_type}-{index}"), node_name="node1",
            hostnames=(HOSTNAME, IP), master="https://master.example.com:8443",
            certificate_authority=(str(ca / "ca.crt"),),
            node_client_certificate_authority=str(ca / "ca.crt"),
            signer_cert=str(ca / "ca.crt"), signer_key=str(ca / "ca.key"),
            signer_serial=str(ca / "ca.serial.txt"), key_type=key_type,
            listen=parse_listen("0.0.0.0:10250", default_port=10250),
        )  # fmt: skip

    create_node_folder(request(-1))  # warm-up: imports and first-use caches
    return median_ms(runs, lambda i: create_node_folder(request(i)))


def command_args(ca: Path, node_dir: Path, key_type: str) -> list[str]:
    return [
        "config", "create", "--node-dir", str(node_dir), "--node", "node1",
        "--hostnames", f"{HOSTNAME},{IP}", "--master", "https://master.example.com:8443",
        "--certificate-authority", str(ca / "ca.crt"),
        "--node-client-certificate-authority", str(ca / "ca.crt"),
        "--signer-cert", str(ca / "ca.crt"), "--signer-key", str(ca / "ca.key"),
        "--signer-serial", str(ca / "ca.serial.txt"), "--key-type", key_type,
    ]  # fmt: skip


#: Child processes may write bytecode, as a pip-installed nodehost has it compiled;
#: each command figure is taken after one warm-up run that fills the cache.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(argv: list[str]) -> None:
    subprocess.run(
        argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=CHILD_ENV
    )


def whole_command(root: Path, ca: Path, key_type: str, runs: int) -> float:
    nodehost = [sys.executable, "-m", "nodehost"]
    run([*nodehost, *command_args(ca, root / f"cmd-{key_type}-warm-up", key_type)])
    return median_ms(
        runs, lambda i: run([*nodehost, *command_args(ca, root / f"cmd-{key_type}-{i}", key_type)])
    )


def help_command(runs: int) -> float:
    run([sys.executable, "-m", "nodehost", "--help"])
    return median_ms(runs, lambda i: run([sys.executable, "-m", "nodehost", "--help"]))


def openssl_script(root: Path, ca: Path, key_type: str, runs: int) -> float:
    return median_ms(
        runs,
        lambda i: run(["sh", str(OPENSSL_SCRIPT), key_type, str(ca),
                       str(root / f"openssl-{key_type}-{i}"), "node1", HOSTNAME, IP]),
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per figure (median taken)")
    args = parser.parse_args()
    rows: list[tuple[str, str, float]] = []
    with tempfile.TemporaryDirectory(prefix="nodehost-bench-", dir=os.environ.get("TMPDIR")) as tmp:
        root = Path(tmp)
        for key_type in ("ecdsa", "rsa"):
            ca = make_ca(root, key_type)
            rows.append(("in-process create_node_folder", key_type,
                         in_process(root, ca, key_type, args.runs)))  # fmt: skip
            rows.append(("nodehost config create (command)", key_type,
                         whole_command(root, ca, key_type, args.runs)))  # fmt: skip
            rows.append(("openssl CLI script", key_type,
                         openssl_script(root, ca, key_type, args.runs)))  # fmt: skip
        rows.append(("nodehost --help (baseline)", "-", help_command(args.runs)))
    print(f"node folder with an existing CA, median of {args.runs} runs (bytecode cached)")
    print(f"{'what':36} {'keys':6} {'median ms':>10}")
    for what, key_type, value in rows:
        print(f"{what:36} {key_type:6} {value:10.1f}")
    figures = {(what, key): value for what, key, value in rows}
    budget = 1.5 * (
        figures[("nodehost --help (baseline)", "-")]
        + figures[("in-process create_node_folder", "ecdsa")]
    )
    command = figures[("nodehost config create (command)", "ecdsa")]
    ecdsa = figures[("in-process create_node_folder", "ecdsa")]
    print(f"budget: in-process ECDSA {ecdsa:.1f} ms <= 10 ms: "
          f"{'met' if ecdsa <= 10 else 'MISSED'}")  # fmt: skip
    print(f"budget: command ECDSA {command:.1f} ms <= 1.5 x (--help + in-process) = "
          f"{budget:.1f} ms: {'met' if command <= budget else 'MISSED'}")  # fmt: skip


if __name__ == "__main__":
    main()

"""Time to create a full node folder with an existing CA: in-process, as a whole command,
and with the openssl CLI (bench/openssl-node-folder.sh), side by side.

    python bench/pki.py [--runs N]

Run it with the interpreter of a venv where nodehost is installed as users get it
(``pip install .``): the command runs through the ``nodehost`` console script next to
that interpreter.  For each key type, every round runs the command and the openssl
script once each, in turn, so load on a shared machine hits both alike; medians of
``--runs`` rounds after one warm-up round.

Budgets: ECDSA folder in-process <= 10 ms (issue 4); the whole ``nodehost config
create`` command (ECDSA) <= 1.0x the openssl script making the same folder (issue 17);
the same command <= 1.4x its floor (issue 30: nodehost's own cost on its libraries).
The command validates the config it writes as ``nodehost config validate`` does,
plugins included; the script does not validate anything.

The floor row is a process that imports the libraries the command is built on
(click, PyYAML, pluggy and cryptography's x509, EC and serialization modules) and
does nothing else: no program on those libraries can beat it, so a budget below
it cannot be met on this machine; ``own ms`` is the command's median minus it.
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
#: Issue 30: ``config create`` (ECDSA) at most this many times its floor.
FLOOR_BUDGET = 1.4


def median_ms(runs: int, action: Callable[[int], object]) -> float:
    """Median wall time of ``action(i)`` over ``runs`` calls, in milliseconds."""
    times = []
    for index in range(runs):
        start = time.perf_counter()
        action(index)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def interleaved_ms(runs: int, actions: dict[str, Callable[[int], object]]) -> dict[str, float]:
    """Median wall time of each action, the actions run in turn in every round (after one
    warm-up round), in milliseconds."""
    times: dict[str, list[float]] = {label: [] for label in actions}
    for index in range(-1, runs):
        for label, action in actions.items():
            start = time.perf_counter()
            action(index)
            if index >= 0:
                times[label].append((time.perf_counter() - start) * 1000)
    return {label: statistics.median(values) for label, values in times.items()}


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


NODEHOST = str(Path(sys.executable).parent / "nodehost")


#: What ``nodehost config create`` is built on; the floor imports these and stops.
LIBRARIES = (
    "click", "yaml", "pluggy", "cryptography.x509",
    "cryptography.hazmat.primitives.asymmetric.ec", "cryptography.hazmat.primitives.serialization",
)  # fmt: skip


def command_against_script(root: Path, ca: Path, key_type: str, runs: int) -> dict[str, float]:
    """The whole command, the openssl script and the floor, interleaved."""

    def command(index: int) -> None:
        run([NODEHOST, *command_args(ca, root / f"cmd-{key_type}-{index}", key_type)])

    def script(index: int) -> None:
        run(["sh", str(OPENSSL_SCRIPT), key_type, str(ca),
             str(root / f"openssl-{key_type}-{index}"), "node1", HOSTNAME, IP])  # fmt: skip

    def floor(index: int) -> None:
        run([sys.executable, "-c", f"import {', '.join(LIBRARIES)}"])

    return interleaved_ms(runs, {"command": command, "script": script, "floor": floor})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per figure (median taken)")
    args = parser.parse_args()
    rows: list[tuple[str, str, float]] = []
    ratios: dict[str, float] = {}
    floors: dict[str, float] = {}
    own: dict[str, float] = {}
    over_floor: dict[str, float] = {}
    load_before = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="nodehost-bench-", dir=os.environ.get("TMPDIR")) as tmp:
        root = Path(tmp)
        for key_type in ("ecdsa", "rsa"):
            ca = make_ca(root, key_type)
            rows.append(("in-process create_node_folder", key_type,
                         in_process(root, ca, key_type, args.runs)))  # fmt: skip
            pair = command_against_script(root, ca, key_type, args.runs)
            rows.append(("nodehost config create (command)", key_type, pair["command"]))
            rows.append(("openssl CLI script", key_type, pair["script"]))
            rows.append(("floor: import the libraries", key_type, pair["floor"]))
            ratios[key_type] = pair["command"] / pair["script"]
            floors[key_type] = pair["floor"] / pair["script"]
            own[key_type] = pair["command"] - pair["floor"]
            over_floor[key_type] = pair["command"] / pair["floor"]
    print(f"node folder with an existing CA, median of {args.runs} runs (bytecode cached), "
          f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'what':36} {'keys':6} {'median ms':>10} {'ratio':>6}  (against the script)")
    for what, key_type, value in rows:
        ratio = {"nodehost": ratios, "floor": floors}.get(what.split()[0].rstrip(":"))
        shown = f"{ratio[key_type]:5.2f}x" if ratio is not None else ""
        print(f"{what:36} {key_type:6} {value:10.1f} {shown:>6}")
    figures = {(what, key): value for what, key, value in rows}
    ecdsa = figures[("in-process create_node_folder", "ecdsa")]
    print(f"budget: in-process ECDSA {ecdsa:.1f} ms <= 10 ms: "
          f"{'met' if ecdsa <= 10 else 'MISSED'}")  # fmt: skip
    ratio = ratios["ecdsa"]
    verdict = "met" if ratio <= 1.0 else f"MISSED by {ratio - 1:.0%}"
    if floors["ecdsa"] > 1.0:
        verdict += f"; the floor alone is {floors['ecdsa']:.2f}x"
    verdict += f"; own time above the floor {own['ecdsa']:.1f} ms"
    print(f"budget: command ECDSA {ratio:.2f}x the openssl script <= 1.0x: {verdict}")
    ratio = over_floor["ecdsa"]
    verdict = "met" if ratio <= FLOOR_BUDGET else f"MISSED by {ratio / FLOOR_BUDGET - 1:.0%}"
    print(f"budget: command ECDSA {ratio:.2f}x its floor <= {FLOOR_BUDGET}x (issue 30): {verdict}")
    after = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"load average (1, 5, 15 min) before: {load_before}; after: {after}")


if __name__ == "__main__":
    main()

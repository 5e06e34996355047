#!/usr/bin/env python3
"""Whole-command speed of the nodehost CLI against its floors, side by side, and its memory.

    python bench/cli.py [--runs 15] [--memory-runs 5]

Run it with the interpreter of a venv where nodehost is installed as users get
it (``python3 -m venv /tmp/v && /tmp/v/bin/pip install . && /tmp/v/bin/python
bench/cli.py``): commands run through the ``nodehost`` console script next to
that interpreter.  It makes a signer CA and a node folder (ECDSA) in a
temporary directory, with a config whose kubelet and kube-proxy health ports
are free ones, then times whole processes:

=================================================  =========================  ======
command                                            judged against             budget
=================================================  =========================  ======
``nodehost --help``                                ``python -c pass``         2.5x
``nodehost config validate FILE``                  its floor (below)          1.4x
``nodehost start --config FILE --dry-run``         its floor                  1.5x
``nodehost start --components=kubelet,proxy``      its floor: ``bench/        1.15x
``--standins=always --exit-on-ready``              launcher.py ready``, the
                                                   same two stand-ins started
                                                   and their healthz polled
                                                   every 5 ms, after
                                                   importing start's libraries
=================================================  =========================  ======

The budgets are issue 30's: a row with a floor is judged by its ratio to that
floor (nodehost's own cost on top of its libraries); ``--help``, which imports
none of them, by its ratio to ``python -c pass``.

Each round runs every command once, baselines included, in turn: load on a
shared machine hits every row alike, and each ratio compares medians taken
in the same run (``--runs`` rounds, after one warm-up round).  Each row also
shows its CPU time (user + system, children waited for included) and the
ratio of those: it moves less with the machine's load than wall time does;
the verdict is on wall time.

Floors: a row's ``floor`` is the least any program built on nodehost's fixed
libraries pays for that command: a process that imports those libraries and
does nothing else (``python -c "import click, yaml, pluggy, ssl"`` beside
``config validate``: the CLI, the YAML loader, the plugin hooks, the key pair
check; ``bench/launcher.py ready --import ...`` beside ``start``, which adds
asyncio and structlog).  The table prints the floor's ratio against the same
baseline and ``own ms``, the row's median minus its floor's: the part of the
time nodehost itself is responsible for.  A budget below the floor cannot be
met by any code on those libraries on this machine; the verdict says so.

Then memory:
nodehost's peak resident set (``VmHWM``) running the default node (every
default component, DNS included, stand-ins for the kubelet and kube-proxy, the
DNS records listed from a stand-in API server) until ``READY=1`` (budget 32
MiB, issue 30), and the host alone supervising N=100 ``sleep`` children
(``nodehost.testing.planhost``).  The default node's floor is measured the
same way (:data:`MEMORY_FLOOR`): a process that imports the libraries that
node runs on and nothing else -- the fixed ones (click, PyYAML, pluggy, ssl),
asyncio and structlog (the host), h11 (the API client the DNS records are
listed with), h2 (containerd's gRPC health check) and the dnspython modules
the DNS server imports, with dnspython's import-time check of ``idna``
answered without ``importlib.metadata`` as the DNS plugin answers it
(``nodehost.plugins.dns.features``) -- then says ``READY=1``.  ``own MiB`` is
the node's peak minus its floor's: what nodehost's code and its running data
add.  The load average is printed with each table: figures from a busy
machine say so.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from nodehost.testing.ports import free_port

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
NODEHOST = str(BIN / "nodehost")
MEMORY_BUDGET_MIB = 32.0


@dataclass(frozen=True)
class Row:
    label: str
    argv: list[str]
    baseline: str | None = None  # label of the row it is compared with
    budget: float | None = None  # against the floor if there is one, else the baseline
    floor: str | None = None  # label of the row that only imports the libraries it needs


#: The fixed libraries each command path needs, imported by its floor row.
CONFIG_LIBRARIES = ("click", "yaml", "pluggy", "ssl")
START_LIBRARIES = (*CONFIG_LIBRARIES, "asyncio", "structlog")


#: The default node's memory floor: the libraries it runs on imported, nothing else, then
#: ``READY=1``.  dnspython's ``dns.name`` asks ``importlib.metadata`` whether ``idna`` is
#: installed as it imports; the node answers that without it (``nodehost.plugins.dns.features``),
#: so the floor does too: a stand-in module while ``dns._features`` imports, ``idna`` forced on.
MEMORY_FLOOR = """\
import importlib.util, os, signal, socket, sys, types
sys.modules["importlib.metadata"] = types.ModuleType("importlib.metadata")
import dns._features
del sys.modules["importlib.metadata"]
dns._features.force("idna", importlib.util.find_spec("idna") is not None)
import click, yaml, pluggy, ssl, asyncio, structlog, h11
import h2.config, h2.connection, h2.events, h2.exceptions
import dns.exception, dns.flags, dns.message, dns.name, dns.opcode, dns.rcode
import dns.rdata, dns.rdataclass, dns.rdatatype, dns.rrset
with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
    notify.sendto(b"READY=1", os.environ["NOTIFY_SOCKET"])
signal.pause()
"""


def imports(modules: tuple[str, ...]) -> list[str]:
    """A ``python -c`` that imports ``modules`` and does nothing else."""
    return [sys.executable, "-c", f"import {', '.join(modules)}"]


def load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def node_folder(root: Path) -> Path:
    """A signer CA and a node folder made by nodehost; returns the bench config in it."""
    ca = root / "ca"
    run([NODEHOST, "ca", "create", "--dir", str(ca), "--key-type", "ecdsa"])
    node = root / "node"
    run([
        NODEHOST, "config", "create", "--node-dir", str(node), "--node", "node1",
        "--hostnames", "node1.example.com,127.0.0.1", "--master", "https://127.0.0.1:8443",
        "--certificate-authority", str(ca / "ca.crt"),
        "--node-client-certificate-authority", str(ca / "ca.crt"),
        "--signer-cert", str(ca / "ca.crt"), "--signer-key", str(ca / "ca.key"),
        "--signer-serial", str(ca / "ca.serial.txt"), "--key-type", "ecdsa",
        "--dns-ip", "127.0.0.1", "--dns-bind-address", f"127.0.0.1:{free_port()}",
        "--volume-dir", str(root / "volumes"),
    ])  # fmt: skip
    config = (node / "node-config.yaml").read_text()
    config += (
        "kubeletArguments:\n"
        f"  healthz-port: ['{free_port()}']\n"
        "proxyArguments:\n"
        f"  healthz-bind-address: ['127.0.0.1:{free_port()}']\n"
    )
    bench = node / "bench-config.yaml"
    bench.write_text(config)
    return bench


def rows(root: Path, config: Path) -> list[Row]:
    state = str(root / "state")
    smoke = ["--components=kubelet,proxy", "--standins=always", "--state-dir", state]
    smoke += ["--health-address", "none"]
    plan = root / "plan.json"
    dry = run([NODEHOST, "start", "--config", str(config), *smoke, "--dry-run", "--json"])
    plan.write_text(dry.stdout)
    # The stand-ins read the files nodehost writes into the state directory.
    run([NODEHOST, "start", "--config", str(config), *smoke, "--exit-on-ready"])
    python = [sys.executable, "-c", "pass"]
    launcher = [sys.executable, str(HERE / "launcher.py"), "ready", str(plan)]
    launcher_floor = [*launcher, "--import", ",".join(START_LIBRARIES)]
    base, launched = "python -c pass", "launcher: 2 stand-ins ready"
    return [
        Row(base, python),
        Row("nodehost --help", [NODEHOST, "--help"], base, 2.5),
        Row("floor: import click,yaml,pluggy,ssl", imports(CONFIG_LIBRARIES)),
        Row(
            "nodehost config validate",
            [NODEHOST, "config", "validate", str(config)],
            base,
            1.4,
            "floor: import click,yaml,pluggy,ssl",
        ),
        Row(
            "nodehost start --dry-run",
            [NODEHOST, "start", "--config", str(config), "--dry-run", "--standins=always"],
            base,
            1.5,
            "floor: import click,yaml,pluggy,ssl",
        ),
        Row(launched, launcher),
        Row("floor: launcher + start's imports", launcher_floor),
        Row(
            "nodehost start --exit-on-ready",
            [NODEHOST, "start", "--config", str(config), *smoke, "--exit-on-ready"],
            launched,
            1.15,
            "floor: launcher + start's imports",
        ),
    ]


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, with the children it waited for) of one run."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({process.returncode}): {errors!r}")
    return elapsed, usage.ru_utime + usage.ru_stime


def speed_table(table: list[Row], runs: int) -> None:
    wall: dict[str, list[float]] = {row.label: [] for row in table}
    cpu: dict[str, list[float]] = {row.label: [] for row in table}
    for row in table:  # warm-up round: bytecode, page cache
        timed(row.argv)
    before = load()
    for _ in range(runs):
        for row in table:
            elapsed, used = timed(row.argv)
            wall[row.label].append(elapsed)
            cpu[row.label].append(used)
    medians = {label: statistics.median(values) for label, values in wall.items()}
    cpu_medians = {label: statistics.median(values) for label, values in cpu.items()}
    print(f"whole commands, median of {runs} interleaved runs; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    header = f"{'command':36} {'median ms':>9} {'p90 ms':>7} {'cpu ms':>7} {'ratio':>6} {'cpu':>6} "
    print(header + f"{'floor':>6} {'own ms':>7} {'/floor':>7} {'cpu':>6} {'budget':>7}  verdict")
    for row in table:
        values = sorted(wall[row.label])
        p90 = values[int(0.9 * (len(values) - 1))]
        line = f"{row.label:36} {medians[row.label] * 1000:9.1f} {p90 * 1000:7.1f}"
        line += f" {cpu_medians[row.label] * 1000:7.1f}"
        if row.baseline is not None and row.budget is not None:
            line += " " + judged(row, medians, cpu_medians)
        print(line)
    print(f"load average (1, 5, 15 min) before: {before}; after: {load()}")
    print("cpu: user + system time of the process and the children it waited for; on a")
    print("loaded machine it moves less than wall time.")


def judged(row: Row, wall: dict[str, float], cpu: dict[str, float]) -> str:
    """Ratios, floor, own time and verdict of a row with a baseline and a budget.

    A row with a floor is judged by its wall ratio to the floor (``/floor``; its CPU
    ratio beside it); ``--help`` has no floor: it is answered before click is
    imported (nodehost.entry) and is judged against the baseline.
    """
    assert row.baseline is not None and row.budget is not None
    ratio = wall[row.label] / wall[row.baseline]
    cpu_ratio = cpu[row.label] / max(cpu[row.baseline], 1e-6)
    judged_ratio, against = ratio, row.baseline
    floor_columns = f"{'':6} {'':7} {'':7} {'':6}"
    if row.floor is not None:
        floor = wall[row.floor] / wall[row.baseline]
        own = (wall[row.label] - wall[row.floor]) * 1000
        judged_ratio, against = wall[row.label] / wall[row.floor], "its floor"
        cpu_floor = cpu[row.label] / max(cpu[row.floor], 1e-6)
        floor_columns = f"{floor:5.2f}x {own:7.1f} {judged_ratio:6.2f}x {cpu_floor:5.2f}x"
    verdict = (
        "met" if judged_ratio <= row.budget else f"MISSED by {judged_ratio / row.budget - 1:.0%}"
    )
    return (
        f"{ratio:5.2f}x {cpu_ratio:5.2f}x {floor_columns} {row.budget:6.2f}x  {verdict}"
        f" (vs {against})"
    )


# --- memory -------------------------------------------------------------------------------


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for {pid}")


def peak_at_ready(argv: list[str], workdir: Path, limit: float = 120.0) -> float:
    """Start ``argv`` with a notify socket, wait for ``READY=1``, read its VmHWM, stop it."""
    path = str(workdir / f"notify-{time.monotonic_ns()}.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind(path)
        notify.settimeout(limit)
        env = dict(os.environ, NOTIFY_SOCKET=path)
        process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        errors: list[bytes] = []
        reader = threading.Thread(target=lambda: errors.append(process.stderr.read()))
        reader.start()
        try:
            while b"READY=1" not in notify.recv(4096).split(b"\n"):
                pass
            return peak_rss_mib(process.pid)
        except TimeoutError:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
            reader.join()
            tail = b"".join(errors).decode(errors="replace").splitlines()[-5:]
            raise SystemExit(f"{argv} not ready within {limit}s; its last lines: {tail}") from None
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
            reader.join()


def planhost_argv(workdir: Path, n: int) -> list[str]:
    plan = {
        "state_dir": str(workdir / f"state-{n}"),
        "components": [{"name": f"s{i:03d}", "argv": ["sleep", "86400"]} for i in range(n)],
    }
    (workdir / f"plan-{n}.json").write_text(json.dumps(plan))
    return [sys.executable, "-m", "nodehost.testing.planhost", str(workdir / f"plan-{n}.json")]


def api_server(workdir: Path) -> tuple[subprocess.Popen[str], str]:
    """A stand-in API server (``nodehost.testing.apiserver``) and its admin kubeconfig: the
    DNS component's ``kubernetes`` record source lists from it, so DNS gets ready."""
    folder = workdir / "apiserver"
    argv = [sys.executable, "-m", "nodehost.testing.apiserver", "--dir", str(folder)]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert server.stdout is not None
    for line in server.stdout:
        key, _, value = line.strip().partition(" ")
        if key == "admin-kubeconfig":
            return server, value
    raise SystemExit(f"{' '.join(argv)} exited ({server.wait()}) before it served")


def memory_table(root: Path, config: Path, runs: int) -> None:
    server, kubeconfig = api_server(root)
    try:
        _memory_table(root, config, runs, kubeconfig)
    finally:
        server.terminate()
        server.wait(30)


def _memory_table(root: Path, config: Path, runs: int, kubeconfig: str) -> None:
    text = config.read_text().replace(
        "masterKubeConfig: node.kubeconfig", f"masterKubeConfig: {kubeconfig}"
    )
    memory_config = config.with_name("memory-config.yaml")
    memory_config.write_text(text)
    default = [
        NODEHOST, "start", "--config", str(memory_config), "--standins=always",
        "--state-dir", str(root / "state-default"), "--health-address", "none",
    ]  # fmt: skip
    note = "" if shutil.which("containerd") else " (no containerd: runtime waits in vain)"
    floor = "floor: the default node's libraries"
    cases = [
        (floor, [sys.executable, "-c", MEMORY_FLOOR], None, None),
        ("default node (DNS included)" + note, default, MEMORY_BUDGET_MIB, floor),
        ("planhost, N=100 sleep children", planhost_argv(root, 100), None, None),
    ]
    before = load()
    print(f"\nnodehost's peak RSS (VmHWM) at READY=1, median of {runs} runs")
    print(f"{'run':44} {'MiB':>6} {'own MiB':>8} {'budget':>7}  verdict")
    peaks: dict[str, float] = {}
    for label, argv, budget, floor_label in cases:
        value = peaks[label] = statistics.median(peak_at_ready(argv, root) for _ in range(runs))
        own = f"{value - peaks[floor_label]:8.1f}" if floor_label else f"{'':8}"
        verdict = (
            ""
            if budget is None
            else f"{budget:6.0f}   "
            + ("met" if value <= budget else f"MISSED by {value - budget:.1f} MiB")
        )
        print(f"{label:44} {value:6.1f} {own} {verdict}")
    print(f"load average (1, 5, 15 min) before: {before}; after: {load()}")
    print("own MiB: the row's peak minus its floor's, what nodehost's code and data add.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        type=int,
        default=15,
        help="interleaved rounds (median taken); 0 skips the speed table",
    )
    parser.add_argument("--memory-runs", type=int, default=5, help="0 skips the memory table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nodehost-bench-") as tmp:
        root = Path(tmp)
        config = node_folder(root)
        if args.runs:
            speed_table(rows(root, config), args.runs)
        if args.memory_runs:
            memory_table(root, config, args.memory_runs)


if __name__ == "__main__":
    main()

"""Restart benchmark: how long a restarted node takes to have containerd ready, with containers.

    sudo .venv/bin/python bench/restart.py [--containers 20] [--repeat 5]

For each of two runs side by side -- the baseline with no container, and one
with ``--containers`` containers started through the node's containerd
(``ctr run -d --rootfs``, busybox-static ``sleep``) -- nodehost is started
with ``--components=runtime`` on its own state directory, then repeatedly:

* **stop**     SIGTERM to nodehost -> it exited (containers keep running);
* **ready**    launch of a new ``nodehost start`` -> its ``component ready`` event
               for ``runtime`` (containerd answers a gRPC health check) on stderr;
* **tasks**    launch -> ``ctr task ls`` lists every container RUNNING with the
               pid it had before the restart.

Medians over ``--repeat`` restarts; the table gives each figure and its
ratio to the baseline.  Needs root, containerd, runc, ctr and busybox-static;
everything is torn down at the end (``nodehost teardown``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

NODEHOST = str(Path(sys.executable).parent / "nodehost")
NAMESPACE = "nodehost-bench"
LIMIT = 120.0

CONFIG = """\
apiVersion: v1
kind: NodeConfig
nodeName: node1.example.com
nodeIP: 127.0.0.1
servingInfo:
  bindAddress: 127.0.0.1:10250
  certFile: server.crt
  keyFile: server.key
  clientCA: ca.crt
masterKubeConfig: node.kubeconfig
dnsDomain: cluster.local
dnsIP: 10.0.0.10
volumeDirectory: volumes
imageConfig:
  format: openshift/origin-${{component}}:${{version}}
networkConfig:
  networkPluginName: bridge
bridgeNetwork:
  podCIDR: 10.244.1.0/24
  cniConfDir: {folder}/net.d
"""


class Node:
    """One state directory, its node folder and the ``nodehost start`` running on it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.state = folder / "state"
        self.socket = self.state / "runtime" / "containerd.sock"
        node = folder / "node"
        node.mkdir(parents=True)
        for name in ("server.crt", "server.key", "ca.crt", "node.kubeconfig"):
            (node / name).write_text("placeholder\n")
        self.config = node / "node-config.yaml"
        self.config.write_text(CONFIG.format(folder=folder))
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> float:
        """Start nodehost; seconds until containerd is ready (its ``component ready`` event)."""
        argv = [NODEHOST, "start", f"--config={self.config}", f"--state-dir={self.state}",
                "--components=runtime", "--health-address=none", "--log-format=json"]  # fmt: skip
        began = time.monotonic()
        self.process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        for line in self.process.stderr:
            event = json.loads(line) if line.startswith("{") else {}
            if event.get("event") == "component ready" and event.get("component") == "runtime":
                return time.monotonic() - began
        raise RuntimeError(f"nodehost exited {self.process.wait()} before containerd was ready")

    def stop(self) -> float:
        """SIGTERM nodehost; seconds until it exited."""
        assert self.process is not None
        began = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(LIMIT)
        return time.monotonic() - began

    def ctr(self, *args: str) -> str:
        done = subprocess.run(
            ["ctr", "--address", str(self.socket), "--namespace", NAMESPACE, *args],
            capture_output=True, text=True, timeout=LIMIT, check=True,
        )  # fmt: skip
        return done.stdout

    def tasks(self) -> dict[str, str]:
        rows = [line.split() for line in self.ctr("task", "ls").splitlines()[1:] if line.strip()]
        return {row[0]: f"{row[1]} {row[2]}" for row in rows}

    def run_containers(self, count: int, rootfs: Path) -> None:
        for index in range(count):
            self.ctr("run", "-d", "--rootfs", "--cgroup", "", "--fifo-dir",
                     str(self.folder / "fifo"), "--runc-root", str(self.folder / "runc"),
                     str(rootfs), f"bench-{index}", "/bin/busybox", "sleep", "100000")  # fmt: skip

    def teardown(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        subprocess.run([NODEHOST, "teardown", f"--state-dir={self.state}", "--grace=1s"],
                       capture_output=True, timeout=LIMIT)  # fmt: skip


def busybox_rootfs(folder: Path) -> Path:
    rootfs = folder / "rootfs"
    (rootfs / "bin").mkdir(parents=True)
    shutil.copy2(shutil.which("busybox") or "", rootfs / "bin" / "busybox")
    return rootfs


def restarts(count: int, repeat: int) -> dict[str, float]:
    """Median stop, ready and tasks seconds over ``repeat`` restarts with ``count`` containers."""
    folder = Path(tempfile.mkdtemp(prefix="nhb-", dir="/tmp"))
    node = Node(folder)
    figures: dict[str, list[float]] = {"stop": [], "ready": [], "tasks": []}
    try:
        node.start()
        node.run_containers(count, busybox_rootfs(folder))
        before = node.tasks()
        assert len(before) == count and all(v.endswith("RUNNING") for v in before.values())
        for attempt in range(repeat):
            figures["stop"].append(node.stop())
            began = time.monotonic()
            figures["ready"].append(node.start())
            while node.tasks() != before:
                if time.monotonic() - began > LIMIT:
                    raise RuntimeError("containers did not come back as they were")
            figures["tasks"].append(time.monotonic() - began)
            latest = {name: round(values[-1], 3) for name, values in figures.items()}
            print(f"{count} containers, restart {attempt + 1}: {latest}", file=sys.stderr)
    finally:
        node.teardown()
        shutil.rmtree(folder, ignore_errors=True)
    return {name: statistics.median(values) for name, values in figures.items()}


def render(baseline: dict[str, float], loaded: dict[str, float], count: int) -> str:
    head = f"{'figure':<34}{'0 containers':>14}{f'{count} containers':>16}{'ratio':>8}"
    lines = [head, "-" * len(head)]
    names = {
        "stop": "stop (SIGTERM -> exit)",
        "ready": "restart -> containerd ready",
        "tasks": "restart -> all tasks RUNNING",
    }
    for key, label in names.items():
        ratio = loaded[key] / baseline[key] if baseline[key] else float("nan")
        lines.append(f"{label:<34}{baseline[key]:>13.3f}s{loaded[key]:>15.3f}s{ratio:>7.2f}x")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--containers", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    if os.geteuid() != 0 or not all(
        shutil.which(p) for p in ("containerd", "ctr", "runc", "busybox")
    ):
        sys.exit(
            "needs root and containerd, runc, ctr, busybox-static "
            "(apt-get install --no-install-recommends containerd runc busybox-static)"
        )
    baseline = restarts(0, options.repeat)
    loaded = restarts(options.containers, options.repeat)
    print(textwrap.dedent(render(baseline, loaded, options.containers)))


if __name__ == "__main__":
    main()

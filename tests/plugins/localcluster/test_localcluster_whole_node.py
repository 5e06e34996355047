"""End to end: the README's main-job command, the whole node for real, asked by real clients.

Runs the README's ``nodehost start --local-cluster DIR`` as a user would (the
installed executable, a subprocess, only DIR and the health address changed
so that test runs do not collide).  As written, with ``--exit-on-ready``, it
comes up and exits 0 leaving nothing behind.  Kept running (the README's
"leave --exit-on-ready out") it prints its instructions, then:

* with the real kubectl and DIR/admin.kubeconfig creates a Service and its
  EndpointSlice, and asks the node's DNS server with dig for it (and for the
  ``kubernetes`` Service the local cluster keeps);
* ``nodehost status`` lists every component ready, the bridge network and
  containerd among them (as root with every real part, none is inactive);
* SIGTERM: exit 0, and nothing is left -- no process, no link named after
  DIR's bridge, no mount under DIR, no cgroup, no listener.

Needs every real part (root, CNI plugins, iproute2, containerd, dig,
kubectl; the ``needs`` mark): a fresh machine skips with the install lines,
CI (``NODEHOST_REQUIRE_REAL_PARTS=1``) fails instead.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from nodehost.plugins.localcluster.layout import Layout
from nodehost.plugins.localcluster.nodeconfig import bridge_name
from nodehost.runtime import cgroups

README = Path(__file__).resolve().parents[3] / "README.rst"
WAIT = 60.0
SERVICE_IP = "172.30.77.7"
ENDPOINT_IP = "10.77.0.7"


def readme_command() -> list[str]:
    """The README's main-job command after ``.venv/bin/``: ``nodehost start ...``."""
    quick_start = README.read_text().split("\nWhat it does\n")[0]
    match = re.search(r"\.venv/bin/(nodehost start [^&\n]*)", quick_start)
    assert match, "the README's main-job command runs .venv/bin/nodehost start"
    return match.group(1).split()


def readme_argv(nodehost_bin: str, cluster_dir: Path) -> list[str]:
    """The README's command with DIR = ``cluster_dir`` and the installed executable."""
    argv = readme_command()
    argv[argv.index("--local-cluster") + 1] = str(cluster_dir)
    return [nodehost_bin, *argv[1:]]


HEALTH_ENV = {"NODEHOST_HEALTH_ADDRESS": "127.0.0.1:0"}


@pytest.fixture
def node(nodehost_bin: str, cluster_dir: Path) -> Iterator[dict]:
    """The README's command kept running (no ``--exit-on-ready``); its printed instructions."""
    argv = [a for a in readme_argv(nodehost_bin, cluster_dir) if a != "--exit-on-ready"]
    host = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **HEALTH_ENV},
    )  # fmt: skip
    try:
        yield {"host": host, **read_instructions(host)}
    finally:
        if host.poll() is None:
            host.kill()
            host.communicate(timeout=WAIT)


def read_instructions(host: subprocess.Popen) -> dict:
    """Read stdout up to the instructions the node prints once ready."""
    assert host.stdout is not None
    seen = []
    for line in host.stdout:
        seen.append(line)
        if line.startswith("Ctrl-C stops the node"):
            text = "".join(seen)
            dig = re.search(r"dig @(\S+) -p (\d+) ", text)
            status = re.search(r"nodehost status --address (\S+)", text)
            kubectl = re.search(r"kubectl --kubeconfig (\S+) ", text)
            assert dig and status and kubectl, text
            return {
                "dns": (dig.group(1), dig.group(2)),
                "status": status.group(1),
                "kubeconfig": kubectl.group(1),
            }
    _, err = host.communicate(timeout=WAIT)
    raise AssertionError(f"exited {host.returncode} before it was ready:\n{''.join(seen)}{err}")


def dig(server: tuple[str, str], name: str) -> list[str]:
    done = subprocess.run(
        ["dig", f"@{server[0]}", "-p", server[1], "+short", "+time=2", "+tries=1", name, "A"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return done.stdout.split()


def dig_until(server: tuple[str, str], name: str, wanted: str) -> list[str]:
    """Ask until the answer holds ``wanted`` (the DNS server follows a watch), at most WAIT."""
    deadline = time.monotonic() + WAIT
    while True:
        answer = dig(server, name)
        if wanted in answer or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def service_documents() -> str:
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"clusterIP": SERVICE_IP, "ports": [{"name": "http", "port": 80}]},
    }  # fmt: skip
    endpoints = {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-1", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ENDPOINT_IP], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }  # fmt: skip
    return yaml.safe_dump_all([service, endpoints])


def node_status(nodehost_bin: str, address: str) -> dict:
    done = subprocess.run(
        [nodehost_bin, "status", "--address", address, "--json"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def processes_naming(text: str) -> list[str]:
    """Every process whose command line names ``text``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if text.encode() in cmdline:
                words = cmdline.replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry}: {words}")
    return found


def accepts(host: str, port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex((host, port)) == 0


@pytest.mark.needs("root", "cni-plugins", "ip", "containerd", "nodehost-script")
def test_the_readme_command_as_written_brings_every_component_up_and_exits_0(
    nodehost_bin: str, cluster_dir: Path
) -> None:
    argv = readme_argv(nodehost_bin, cluster_dir)
    assert "--exit-on-ready" in argv
    done = subprocess.run(
        argv, capture_output=True, text=True, env={**os.environ, **HEALTH_ENV}, timeout=WAIT * 2
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ready = done.stdout.split("node ready after", 1)[1]
    rows = {line.split()[0] for line in ready.splitlines()[2:] if line.strip()}
    assert rows == {
        "localcluster",
        "bootstrap",
        "sdn",
        "dns",
        "proxy",
        "runtime",
        "images",
        "kubelet",
    }
    assert processes_naming(str(cluster_dir)) == []


@pytest.mark.needs("root", "cni-plugins", "ip", "containerd", "dig", "kubectl", "nodehost-script")
def test_the_readme_command_runs_the_whole_node_until_sigterm(
    node, nodehost_bin: str, cluster_dir: Path, kubectl
) -> None:
    host = node["host"]
    manifest = cluster_dir.parent / "web.yaml"
    manifest.write_text(service_documents())
    created = kubectl(
        "--kubeconfig", node["kubeconfig"], "create", "--validate=false", "-f", str(manifest)
    )
    assert created.returncode == 0, created.stderr

    assert dig_until(node["dns"], "web.default.svc.cluster.local", SERVICE_IP) == [SERVICE_IP]
    assert dig(node["dns"], "kubernetes.default.svc.cluster.local") == ["172.30.0.1"]

    status = node_status(nodehost_bin, node["status"])
    states = {c["name"]: (c["state"], c["ready"]) for c in status["components"]}
    wanted = {"localcluster", "bootstrap", "sdn", "dns", "proxy", "runtime", "images", "kubelet"}
    assert set(states) == wanted
    assert all(states[name] == ("ready", True) for name in wanted), states
    assert status["ready"] is True
    pids = [c["pid"] for c in status["components"] if c["pid"]]
    guardian = status["agents"].get("guardian_pid")
    cgroup_record = cgroups.record_path(str(cluster_dir / "state"))
    cgroup = Path(cgroup_record.read_text().strip()) if cgroup_record.exists() else None
    api_port = json_port(cluster_dir)
    if status["agents"]["mechanism"] != "pid-files":
        assert cgroup is not None and cgroup.exists()

    host.send_signal(signal.SIGTERM)
    _, err = host.communicate(timeout=WAIT)
    assert host.returncode == 0, err[-3000:]

    assert not [pid for pid in [*pids, guardian] if pid and Path(f"/proc/{pid}").exists()]
    assert processes_naming(str(cluster_dir)) == []
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert bridge_name(Layout(cluster_dir)) not in links
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(cluster_dir) not in mounts
    assert cgroup is None or not cgroup.exists(), cgroup
    assert not accepts("127.0.0.1", api_port)
    assert not accepts(node["dns"][0], int(node["dns"][1]))


def json_port(cluster_dir: Path) -> int:
    """The API server's port, as the first start recorded it in DIR/cluster.json."""
    return json.loads((cluster_dir / "cluster.json").read_text())["apiserver_port"]

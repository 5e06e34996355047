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
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from nodehost.daemon import cgroups
from nodehost.plugins.localcluster.layout import Layout
from nodehost.plugins.localcluster.nodeconfig import bridge_name
from nodehost.testing.wait import wait_for

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
        "localcluster", "bootstrap", "sdn", "dns", "proxy", "runtime", "images", "kubelet",
        "apilb", "mirror-rewrite",
    }  # inactive: the local cluster has one API server, no mirror has a rewrite  # fmt: skip
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
    assert set(states) == wanted | {"apilb", "mirror-rewrite"}  # inactive (see above)
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


@pytest.mark.needs("root", "cni-plugins", "ip", "containerd", "kubectl", "nodehost-script")
def test_the_readme_command_registers_the_node_ready_with_its_lease_and_config(
    node, cluster_dir: Path, kubectl
) -> None:
    """``kubectl get nodes`` shows the node Ready (the kubelet's registration, its Ready
    condition from containerd's CRI status), its Lease is held, and config sync's
    annotation reached the Node with no test creating it."""
    kubeconfig = ("--kubeconfig", node["kubeconfig"])

    def listed() -> list[list[str]]:
        shown = kubectl(*kubeconfig, "get", "nodes", "--no-headers")
        return [line.split() for line in shown.stdout.splitlines()] if shown.returncode == 0 else []

    rows = wait_for(lambda: (r := listed()) and r[0][1] == "Ready" and r, "a Ready node", WAIT)
    name = rows[0][0]
    assert len(rows) == 1

    lease = kubectl(*kubeconfig, "get", "lease", "-n", "kube-node-lease", name, "-o", "json")
    assert lease.returncode == 0, lease.stderr
    spec = json.loads(lease.stdout)["spec"]
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == (name, 40)

    def annotations() -> dict:
        shown = kubectl(*kubeconfig, "get", "node", name, "-o", "json")
        return json.loads(shown.stdout)["metadata"].get("annotations", {})

    wait_for(lambda: "node.openshift.io/md5sum" in annotations(), "config sync's annotation", WAIT)
    assert annotations()["nodehost.io/config-generation"] == "1"


# --- pods through CRI on the running node --------------------------------------------------

E2E_IMAGE = "docker.io/library/nodehost-e2e:1"
SEARCHES = ("default.svc.cluster.local", "svc.cluster.local", "cluster.local")


def docker_reference(image: str) -> str:
    """``openshift/origin-pod:v3.11.0`` as containerd names it (``docker.io/...``)."""
    first = image.split("/", 1)[0]
    if "/" not in image:
        image = f"library/{image}"
    elif "." in first or ":" in first or first == "localhost":
        return image
    return f"docker.io/{image}"


class NodeDnsForPods:
    """Pods reach the node's DNS (on loopback) at the bridge's gateway address: a DNAT of
    this test's own, from this cluster's bridge only, in a chain named for the test."""

    def __init__(self, bridge: str, gateway: str, dns: tuple[str, str]) -> None:
        import secrets

        self.bridge, self.gateway, self.dns = bridge, gateway, dns
        self.chain = f"NH-E2E-{secrets.token_hex(4)}"
        self.jump = ["PREROUTING", "-i", bridge, "-d", gateway, "-j", self.chain]

    def install(self) -> None:
        """Once the bridge exists (the first pod's network made it)."""
        Path(f"/proc/sys/net/ipv4/conf/{self.bridge}/route_localnet").write_text("1")
        iptables("-N", self.chain)
        for protocol in ("udp", "tcp"):
            target = f"{self.dns[0]}:{self.dns[1]}"
            iptables("-A", self.chain, "-p", protocol, "--dport", "53", "-j", "DNAT",
                     "--to-destination", target)  # fmt: skip
        iptables("-I", *self.jump)

    def remove(self) -> None:
        for args in (("-D", *self.jump), ("-F", self.chain), ("-X", self.chain)):
            iptables(*args, check=False)


def iptables(*args: str, check: bool = True) -> None:
    done = subprocess.run(["iptables", "-w", "-t", "nat", *args], capture_output=True, text=True)
    assert done.returncode == 0 or not check, done.stderr


def import_image(socket: Path, archive: Path) -> None:
    done = subprocess.run(
        ["ctr", "--address", str(socket), "-n", "k8s.io", "images", "import", str(archive)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def sandbox_network_namespace(status: dict) -> str:
    """The network namespace file of a sandbox, from containerd's verbose status."""
    namespaces = status["info"]["runtimeSpec"]["linux"]["namespaces"]
    return next(ns["path"] for ns in namespaces if ns["type"] == "network")


@pytest.mark.needs(
    "root", "cni-plugins", "ip", "iptables", "containerd", "busybox", "kubectl", "nodehost-script"
)
def test_pods_run_through_cri_get_the_node_network_and_dns_and_leave_nothing(
    torn_down, node, cluster_dir: Path, kubectl, tmp_path: Path
) -> None:
    """As the kubelet would: two pods through CRI on the node's containerd and CNI config;
    pod A has an address of the node's pod CIDR, resolves a Service made with kubectl
    through the node's DNS and fetches a page from pod B; then nothing of them is left."""
    import ipaddress
    import secrets
    import tomllib

    from nodehost.testing.cri import ContainerSpec, CriClient, PodSpec, image_archive

    state = cluster_dir / "state"
    socket_path = state / "runtime" / "containerd.sock"
    containerd_config = tomllib.loads((state / "runtime" / "containerd.toml").read_text())
    sandbox_image = containerd_config["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"]
    bridge_section = yaml.safe_load((cluster_dir / "node" / "node-config.yaml").read_text())[
        "bridgeNetwork"
    ]
    pod_cidr = ipaddress.ip_network(bridge_section["podCIDR"])
    gateway = str(pod_cidr[1])
    cri = CriClient(f"unix://{socket_path}")
    import_image(socket_path, image_archive(
        tmp_path / "pause.tar", docker_reference(sandbox_image),
        ("/bin/busybox", "sleep", "2147483647"),
    ))  # fmt: skip
    import_image(socket_path, image_archive(tmp_path / "e2e.tar", E2E_IMAGE))
    assert cri.image_present(E2E_IMAGE)

    suffix = secrets.token_hex(4)
    cgroup_parent = f"/nh-e2e-{suffix}"
    dns = NodeDnsForPods(bridge_section["bridge"], gateway, node["dns"])

    def pod(name: str) -> PodSpec:
        return PodSpec(
            name=name, uid=f"{name}-{suffix}", hostname=name, dns_servers=(gateway,),
            dns_searches=SEARCHES, dns_options=("ndots:5",), cgroup_parent=cgroup_parent,
        )  # fmt: skip

    pods: dict[str, str] = {}
    try:
        for name, command in (
            ("pod-b", ("/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/etc")),
            ("pod-a", ("/bin/busybox", "sleep", "3600")),
        ):
            spec = pod(name)
            pods[name] = cri.run_pod_sandbox(spec)
            container = cri.create_container(
                pods[name], ContainerSpec(name=name.removeprefix("pod-"), image=E2E_IMAGE,
                                          command=command), spec,
            )  # fmt: skip
            cri.start_container(container)
            pods[f"{name}/container"] = container
        statuses = {name: cri.pod_sandbox_status(pods[name]) for name in ("pod-a", "pod-b")}
        namespaces = [sandbox_network_namespace(status) for status in statuses.values()]
        dns.install()

        address_a, address_b = statuses["pod-a"]["ip"], statuses["pod-b"]["ip"]
        assert ipaddress.ip_address(address_a) in pod_cidr, (address_a, pod_cidr)
        assert ipaddress.ip_address(address_b) in pod_cidr, (address_b, pod_cidr)
        client = pods["pod-a/container"]
        shown = cri.exec_sync(client, ["/bin/busybox", "ip", "-4", "-o", "addr", "show", "eth0"])
        assert f"inet {address_a}/{pod_cidr.prefixlen}" in shown.stdout, shown

        manifest = tmp_path / "web.yaml"
        manifest.write_text(service_documents().replace(ENDPOINT_IP, address_b))
        created = kubectl(
            "--kubeconfig", node["kubeconfig"], "create", "--validate=false", "-f", str(manifest)
        )
        assert created.returncode == 0, created.stderr
        lookup = ["/bin/busybox", "nslookup", "web.default.svc.cluster.local"]
        answer = wait_for(
            lambda: (found := cri.exec_sync(client, lookup)).exit_code == 0 and found,
            "the Service's name through the node's DNS",
            WAIT,
        )
        assert f"Address: {SERVICE_IP}" in answer.stdout, answer

        # busybox-static's wget crashes with -T (its timeout); the exec's own timeout bounds it
        page = ["/bin/busybox", "wget", "-O", "-", f"http://{address_b}:8080/hostname"]
        fetched = cri.exec_sync(client, page)
        assert (fetched.exit_code, fetched.stdout) == (0, "pod-b\n"), fetched
    finally:
        for name in ("pod-a", "pod-b"):
            if name in pods:
                cri.stop_pod_sandbox(pods[name])
                cri.remove_pod_sandbox(pods[name])
        dns.remove()
        for hierarchy in Path("/sys/fs/cgroup").glob(f"**/nh-e2e-{suffix}"):
            hierarchy.rmdir()

    assert cri.list_pod_sandboxes() == [] and cri.list_containers() == []
    assert [path for path in namespaces if os.path.exists(path)] == []
    ports = subprocess.run(
        ["ip", "-o", "link", "show", "master", bridge_section["bridge"]],
        capture_output=True, text=True,
    )  # fmt: skip
    assert ports.stdout == ""
    reserved = Path("/var/lib/cni/networks/nodehost-bridge")
    assert not [ip for ip in (address_a, address_b) if (reserved / ip).exists()]
    assert not list(Path("/sys/fs/cgroup").glob(f"**/nh-e2e-{suffix}"))

    # The bridge the pods' network made outlives a stop (pods may still need it); the
    # explicit teardown removes it with the rest of the node.
    node["host"].send_signal(signal.SIGTERM)
    node["host"].communicate(timeout=WAIT)
    torn = teardown(cluster_dir)
    assert torn.returncode == 0, torn.stdout + torn.stderr
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert bridge_section["bridge"] not in links


def teardown(cluster_dir: Path) -> subprocess.CompletedProcess[str]:
    """``nodehost teardown`` of the cluster's node, its network's bridge included."""
    return subprocess.run(
        [sys.executable, "-m", "nodehost", "teardown", f"--state-dir={cluster_dir / 'state'}",
         f"--config={cluster_dir / 'node' / 'node-config.yaml'}"],
        capture_output=True, text=True, timeout=WAIT * 2,
    )  # fmt: skip


@pytest.fixture
def torn_down(cluster_dir: Path) -> Iterator[None]:
    """Tear the node down after the test, pass or fail (name it before ``node``: this runs
    after the node's own end)."""
    yield
    if (cluster_dir / "node" / "node-config.yaml").exists():
        teardown(cluster_dir)

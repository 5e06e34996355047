"""Issue 18, item 3: a fleet of simulated nodes against one test API server.

Loaded by ``bench/scale.py``; also the worker it starts (``python bench/scale_fleet.py
worker ...``): one process runs many nodes, each with nodehost's own code paths and API
client -- the bootstrap (:func:`nodehost.plugins.bootstrap.join.run_bootstrap`: client
CSR, serving CSR, config map), then certificate rotation
(:class:`~nodehost.plugins.bootstrap.rotation.CertificateRotation`) and the DNS
``kubernetes`` record source (Services and EndpointSlices, listed then watched) -- no
kubelet.  The test API server runs in its own process; its request log gives the rates.

Phases:

* join -- every node starts at once; the server's approver approves each CSR;
* outage -- the server goes down (every connection cut) for ``outage`` seconds; half the
  nodes restart nodehost meanwhile (they bootstrap again: certificates kept, config map
  read again), the other half keep running (their watches must resume from the version
  they had).  A node is back when it has its config again (restarted) and its DNS source
  has seen a Service created right after the server came back;
* rotation -- a new fleet whose certificates live 300 s, all issued in the same minute:
  the renewals (70-90 % of the lifetime, drawn per certificate) must spread out.  When
  this machine takes longer to issue the fleet's certificates (the join above), the
  lifetime is stretched to :func:`fitted_lifetime` so that no renewal falls due before
  the last certificate was issued (else the first renewals compete with the issuance and
  some certificates expire before they were ever renewed: a failure of the bench, not of
  rotation); the table says which lifetime was used.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # bench/dns.py shadows dns

NAMESPACE = "openshift-node"
CONFIG_MAP = "node-config-compute"
WORKERS = 4
NODE_CONFIG = """\
apiVersion: v1
kind: NodeConfig
dnsDomain: cluster.local
dnsIP: 0.0.0.0
networkConfig:
  networkPluginName: redhat/openshift-ovs-subnet
servingInfo:
  bindAddress: 0.0.0.0:10250
kubeletArguments:
  max-pods: ["250"]
"""


# --- the worker: many nodes in one process ------------------------------------------------------


class _Quiet:
    """A logger that says nothing (a thousand nodes' logs would drown the figures)."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **fields: None


def emit(kind: str, name: str, detail: str = "") -> None:
    print(f"{kind} {name} {time.monotonic():.6f} {detail}".rstrip(), flush=True)


class _Sink:
    """A DNS record sink that only notices the marker Service and the first sync."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: set[str] = set()

    def upsert_service(self, service: Any) -> None:
        if service.name.startswith("marker-") and service.name not in self.seen:
            self.seen.add(service.name)
            emit("back", self.name, service.name)

    def synced(self) -> None:
        emit("synced", self.name)

    def replace(self, *args: Any) -> None: ...
    def delete_service(self, *args: Any) -> None: ...
    def upsert_endpoints(self, *args: Any) -> None: ...
    def delete_endpoints(self, *args: Any) -> None: ...


class _Context:
    """What the rotation task is given by the host, reduced to what it uses."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.log = _Quiet()

    def ready(self) -> None: ...
    def status(self, message: str) -> None: ...
    def report(self, details: Any, problems: Any) -> None: ...

    def files_changed(self, paths: list[str]) -> None:
        emit("rotated", self.name, Path(paths[0]).name)


class SimulatedNode:
    """One node: bootstrap, then rotation and the DNS source, restartable."""

    def __init__(self, name: str, root: Path, bootstrap: Path, follow: bool) -> None:
        from nodehost.plugins.bootstrap.join import BootstrapSettings

        self.name = name
        self.follow = follow
        self.settings = BootstrapSettings(
            config_dir=root / name, bootstrap_kubeconfig=bootstrap, config_map=CONFIG_MAP,
            namespace=NAMESPACE, node_name=name, hostnames=(name,), listen_provided=False,
            listen_host="", volume_dir=None, timeout=1800.0, serving_wait=300.0,
        )  # fmt: skip
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self, event: str) -> None:
        from nodehost.plugins.bootstrap.join import run_bootstrap
        from nodehost.plugins.bootstrap.rotation import CertificateRotation, RotationSettings
        from nodehost.plugins.dns.sources.kubernetes import KubernetesSource

        await run_bootstrap(self.settings, lambda _message: None)
        emit(event, self.name)
        rotation = CertificateRotation(RotationSettings(
            node_kubeconfig=self.settings.node_kubeconfig, cert_dir=self.settings.cert_dir,
            node_name=self.name, hostnames=(self.name,),
            bootstrap_kubeconfig=self.settings.bootstrap_kubeconfig,
        ))  # fmt: skip
        self.tasks = [asyncio.create_task(rotation.run(_Context(self.name)))]
        if self.follow:
            source = KubernetesSource(str(self.settings.node_kubeconfig), log=_Quiet())
            self.tasks.append(asyncio.create_task(source.run(_Sink(self.name))))  # type: ignore[arg-type]

    async def restart(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.start("rejoined")


async def run_worker(names: list[str], root: Path, bootstrap: Path, follow: bool) -> None:
    """Wait for ``go``, start every node at once; ``restart`` restarts the even ones."""
    nodes = [SimulatedNode(name, root, bootstrap, follow) for name in names]
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    print("ready", flush=True)
    running: list[asyncio.Task[None]] = []
    while line := (await reader.readline()).decode().strip():
        if line == "go":
            running += [asyncio.create_task(node.start("joined")) for node in nodes]
        elif line == "restart":
            running += [asyncio.create_task(node.restart()) for node in nodes[::2]]
    for task in running:
        task.cancel()


def worker_main(argv: list[str]) -> int:
    first, count, root, bootstrap, follow = argv
    names = [f"node-{index:04d}" for index in range(int(first), int(first) + int(count))]
    asyncio.run(run_worker(names, Path(root), Path(bootstrap), follow == "follow"))
    return 0


# --- the bench side ----------------------------------------------------------------------------


class ApiServer:
    """The test API server process: approver on, the node config map, a request log."""

    def __init__(self, directory: Path, lifetime: int | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        config = directory / "node-config.yaml"
        config.write_text(NODE_CONFIG)
        self.log = directory / "requests.jsonl"
        command = [
            sys.executable, "-m", "nodehost.testing.apiserver", "--dir", str(directory),
            "--approve", "approve", "--approve-serving", "approve", "--request-log",
            str(self.log), "--config-map", f"{NAMESPACE}/{CONFIG_MAP}={config}",
        ]  # fmt: skip
        if lifetime:
            command += ["--lifetime", str(lifetime)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        lines = [self.process.stdout.readline().split() for _ in range(3)]
        self.admin = Path(lines[1][1])
        self.bootstrap = Path(lines[2][1])

    def signal(self, signum: int) -> float:
        """Send ``signum`` (SIGUSR1 down, SIGUSR2 up); the monotonic time it took effect."""
        assert self.process.stdout is not None
        self.process.send_signal(signum)
        return float(self.process.stdout.readline().split()[1])

    def requests(self) -> list[tuple[float, str, str, str]]:
        """Stop the server and read its request log."""
        self.process.terminate()
        self.process.wait(60)
        return [tuple(json.loads(line)) for line in self.log.read_text().splitlines()]  # type: ignore[misc]


class Fleet:
    """The worker processes and the events they print."""

    def __init__(self, nodes: int, root: Path, bootstrap: Path, follow: bool) -> None:
        self.events: list[tuple[str, str, float]] = []
        self.lock = threading.Lock()
        self.workers = []
        share = -(-nodes // WORKERS)
        for first in range(0, nodes, share):
            count = min(share, nodes - first)
            process = subprocess.Popen(
                [sys.executable, __file__, "worker", str(first), str(count), str(root),
                 str(bootstrap), "follow" if follow else "no"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert process.stdout is not None
            if process.stdout.readline().strip() != "ready":
                raise SystemExit("a fleet worker did not start")
            threading.Thread(target=self._read, args=(process,), daemon=True).start()
            self.workers.append(process)

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            kind, name, when, *_ = line.split()
            with self.lock:
                self.events.append((kind, name, float(when)))

    def tell(self, command: str) -> float:
        for process in self.workers:
            assert process.stdin is not None
            process.stdin.write(command + "\n")
            process.stdin.flush()
        return time.monotonic()

    def wait(self, done: Callable[[list[tuple[str, str, float]]], bool], limit: float) -> bool:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            with self.lock:
                if done(self.events):
                    return True
            time.sleep(0.2)
        return False

    def last(
        self, kind: str, names: set[str] | None = None, after: float = 0.0
    ) -> dict[str, float]:
        """The first time each node reported ``kind`` after ``after``."""
        found: dict[str, float] = {}
        with self.lock:
            for event_kind, name, when in self.events:
                if event_kind == kind and when >= after:
                    found.setdefault(name, when)
        return found

    def stop(self) -> None:
        for process in self.workers:
            process.terminate()
        for process in self.workers:
            process.wait(30)


def count(events: list[tuple[str, str, float]], kind: str, after: float = 0.0) -> int:
    return len({name for event_kind, name, when in events if event_kind == kind and when >= after})


def rates(times: list[float], start: float, end: float) -> tuple[float, float]:
    """(mean, peak) requests per second between ``start`` and ``end`` (whole seconds)."""
    seconds = Counter(int(when - start) for when in times if start <= when <= end)
    span = max(1.0, end - start)
    return sum(seconds.values()) / span, max(seconds.values(), default=0)


def create_marker(admin: Path, name: str) -> None:
    """Create Service ``name`` through the API (retrying while the server comes back)."""
    from lightkube import Client, KubeConfig
    from lightkube.resources.core_v1 import Service

    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"clusterIP": "172.30.255.1", "ports": [{"name": "http", "port": 80}]},
    }
    for _ in range(100):
        try:
            Client(KubeConfig.from_file(str(admin)), trust_env=False).create(
                Service.from_dict(body)
            )
            return
        except Exception:  # the server may still be starting to listen
            time.sleep(0.1)
    raise SystemExit("could not create the marker service")


def join_and_outage(nodes: int, outage: float, root: Path, figure: Any) -> list[Any]:
    api = ApiServer(root / "api")
    fleet = Fleet(nodes, root / "nodes", api.bootstrap, follow=True)
    names = {f"node-{index:04d}" for index in range(nodes)}
    try:
        start = fleet.tell("go")
        if not fleet.wait(lambda e: count(e, "joined") == nodes, 900):
            return [_not_joined(fleet, nodes, figure)]
        joined = max(fleet.last("joined").values())
        fleet.wait(lambda e: count(e, "synced") == nodes, 300)
        time.sleep(2)
        down = api.signal(signal.SIGUSR1)
        fleet.tell("restart")
        time.sleep(max(0.0, down + outage - time.monotonic()))
        up = api.signal(signal.SIGUSR2)
        create_marker(api.admin, "marker-1")
        restarted = {f"node-{index:04d}" for index in range(nodes) if _restarted(index, nodes)}

        def all_back(events: list[tuple[str, str, float]]) -> bool:
            return count(events, "back", up) == nodes and count(events, "rejoined") == len(
                restarted
            )

        recovered = fleet.wait(all_back, 600)
        back = fleet.last("back", after=up)
        rejoined = fleet.last("rejoined")
        finished = max([*back.values(), *rejoined.values()], default=time.monotonic())
    finally:
        fleet.stop()
        requests = api.requests()
    times = [when for when, *_ in requests]
    join_requests = [r for r in requests if start <= r[0] <= joined]
    recovery = [r for r in requests if up <= r[0] <= finished]
    mean, peak = rates(times, up, finished)
    join_mean, join_peak = rates(times, start, joined)
    kept = names - restarted
    relists = sum(
        1 for when, method, path, user in recovery
        if user.removeprefix("system:node:") in kept and "watch=" not in path
        and path.split("?")[0].endswith(("/services", "/endpointslices"))
    )  # fmt: skip
    return [
        figure(f"fleet: {nodes} nodes joined (CSRs approved), all certs + config",
               joined - start, "s", "", None),
        figure("fleet: requests per node while joining", len(join_requests) / nodes, "req", "",
               None),
        figure("fleet: join request rate, mean / peak second", join_mean, "req/s",
               f"peak {join_peak}", None),
        figure(f"fleet: after a {outage:g} s outage, all back (half restarted)",
               finished - up, "s", "<= 60", recovered and finished - up <= 60),
        figure("fleet: requests per node during recovery", len(recovery) / nodes, "req", "",
               None),
        figure("fleet: recovery request rate, mean", mean, "req/s", "", None),
        figure("fleet: recovery request rate, peak second / mean", peak / max(mean, 1e-9), "x",
               "<= 3", peak <= 3 * mean),
        figure("fleet: lists by nodes that kept running (watches resumed)", relists, "req",
               "0", relists == 0),
    ]  # fmt: skip


def _not_joined(fleet: Fleet, nodes: int, figure: Any) -> Any:
    joined = count(fleet.events, "joined")
    return figure("fleet: nodes joined within 900 s", joined, "nodes", f"{nodes}", False)


def _restarted(index: int, nodes: int) -> bool:
    """Which nodes ``restart`` restarts: every other node of each worker's share."""
    share = -(-nodes // WORKERS)
    return (index % share) % 2 == 0


def fitted_lifetime(lifetime: int, join_seconds: float) -> int:
    """``lifetime``, or longer: the earliest renewal (70 % of it) at least twice the time the
    same fleet took to join, so the renewals start after the issuance is over."""
    return max(lifetime, math.ceil(2 * join_seconds / 0.7))


def rotation(
    nodes: int, root: Path, figure: Any, lifetime: int = 300, join_seconds: float = 0.0
) -> list[Any]:
    asked, lifetime = lifetime, fitted_lifetime(lifetime, join_seconds)
    api = ApiServer(root / "api", lifetime=lifetime)
    fleet = Fleet(nodes, root / "nodes", api.bootstrap, follow=False)
    try:
        start = fleet.tell("go")
        if not fleet.wait(lambda e: count(e, "joined") == nodes, 900):
            return [_not_joined(fleet, nodes, figure)]
        joined = max(fleet.last("joined").values())
        fleet.wait(lambda e: sum(1 for kind, *_ in e if kind == "rotated") >= 2 * nodes,
                   lifetime + 120)  # fmt: skip
        with fleet.lock:
            rotated = sum(1 for kind, *_ in fleet.events if kind == "rotated")
    finally:
        fleet.stop()
        requests = api.requests()
    renewals = sorted(
        when for when, method, path, user in requests
        if method == "POST" and path.startswith("/apis/certificates.k8s.io") and when > joined
        and user.startswith("system:node:")
    )  # fmt: skip
    first, last = (renewals[0], renewals[-1]) if renewals else (joined, joined)
    mean, peak = rates(renewals, first, last)
    chosen = (
        []
        if lifetime == asked
        else [
            figure(
                f"rotation: lifetime stretched from {asked} s (join took {join_seconds:.0f} s)",
                lifetime,
                "s",
                "",
                None,
            ),
        ]
    )
    return [
        *chosen,
        figure(f"rotation: {nodes} nodes' certificates issued within", joined - start, "s",
               "<= 60", joined - start <= 60),
        figure(f"rotation: certificates renewed ({lifetime} s lifetime, 2 per node)", rotated,
               "certs", f"{2 * nodes}", rotated >= 2 * nodes),
        figure("rotation: renewal requests spread over", last - first, "s", "", None),
        figure("rotation: renewal CSRs, peak second / mean", peak / max(mean, 1e-9), "x",
               "<= 3", peak <= 3 * mean),
    ]  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        raise SystemExit(worker_main(sys.argv[2:]))
    raise SystemExit("run bench/scale.py")

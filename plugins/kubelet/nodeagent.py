"""What the kubelet stand-in does toward the API server: its Node, its Lease, its Ready condition.

The real kubelet, given ``--kubeconfig`` (with ``--bootstrap-kubeconfig``,
the file the TLS bootstrap writes), registers its Node, renews its Lease and
reports the node's status (``pkg/kubelet/kubelet_node_status.go``,
``pkg/kubelet/nodestatus/setters.go``, ``pkg/kubelet/nodelease``); the
kubelet stand-in (:mod:`nodehost.plugins.kubelet.standin`) runs :class:`NodeAgent`
to do the same, with the same flags and config fields:

* **name**: ``--hostname-override``, else the machine's host name, lowercased;
* **registration**: ``POST /api/v1/nodes`` as the node's own user, with
  labels ``kubernetes.io/hostname``, ``kubernetes.io/os``,
  ``kubernetes.io/arch`` (and their ``beta.`` forms) plus ``--node-labels``,
  taints from ``--register-with-taints``/``registerWithTaints``, addresses
  (``InternalIP`` for each ``--node-ip``, else the address of the
  default-route interface; ``Hostname``), capacity of this machine (``cpu``:
  its CPUs, ``memory``: ``MemTotal``, ``pods``: ``maxPods`` (110), at most
  ``podsPerCore`` x CPUs when set) and allocatable (memory less the default
  hard eviction threshold, 100Mi).  An existing Node is kept (the kubelet
  reconciles only its default labels, and so does this); registration is
  retried until it succeeds, and a Node deleted afterwards is not registered
  again until the kubelet restarts, as with the real one;
* **Lease** ``kube-node-lease/<name>`` (``coordination.k8s.io/v1``):
  ``leaseDurationSeconds`` from ``nodeLeaseDurationSeconds`` (40), renewed
  every quarter of it (10 s), owned by the Node;
* **status** (``PATCH /api/v1/nodes/<name>/status``): the memory, disk and
  PID pressure conditions (false) and ``Ready``.  ``Ready`` is true
  (``KubeletReady``, ``kubelet is posting ready status``) when the
  container runtime at ``--container-runtime-endpoint``/
  ``containerRuntimeEndpoint`` (default containerd's socket) answers CRI's
  ``Status`` with ``RuntimeReady`` and ``NetworkReady`` (a CNI config in the
  runtime's CNI directory), asked through :mod:`nodehost.daemon.cri`;
  otherwise false (``KubeletNotReady``) with the kubelet's messages
  (``container runtime is down``, ``container runtime not ready:
  RuntimeReady=false reason:... message:...``, ``container runtime network
  not ready: NetworkReady=false reason:NetworkPluginNotReady message:...``).
  As the kubelet, it checks every 100 ms until the node is first ready, then
  every ``nodeStatusUpdateFrequency`` (10 s), and writes the status when it
  changed or ``nodeStatusReportFrequency`` (5 min) passed.

Without ``--kubeconfig`` the kubelet runs standalone and talks to no API
server; with ``--kubeconfig`` not yet written and ``--bootstrap-kubeconfig``
given, the stand-in first does the kubelet's TLS bootstrap
(:mod:`nodehost.testing.certrequest`: a CSR with the bootstrap
credentials, the certificate in ``--cert-dir``, then the kubeconfig; under
nodehost the ``bootstrap`` component has written the kubeconfig before the
kubelet starts).  Errors are printed as ``kubelet: ...`` lines on stderr and
retried; they never end the stand-in.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import platform
import socket
import sys
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodehost.daemon.cri import NETWORK_READY, RUNTIME_READY, CriStatus
from nodehost.testing.apistore import now_rfc3339

DEFAULT_RUNTIME_ENDPOINT = "unix:///run/containerd/containerd.sock"
LEASE_NAMESPACE = "kube-node-lease"
#: The kubelet renews its Lease every quarter of its duration (``nodeLeaseRenewIntervalFraction``).
LEASE_RENEW_FRACTION = 0.25
#: How long the stand-in waits before trying a failed registration or kubeconfig again.
RETRY_DELAY = 2.0
#: How often the kubelet checks node status before it first reports Ready.
FAST_STATUS_INTERVAL = 0.1
#: The default hard eviction threshold for memory (``memory.available<100Mi``), in KiB.
EVICTION_MEMORY_KIB = 100 * 1024
ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le"}


@dataclass(frozen=True)
class NodeSettings:
    """What the kubelet's flags and config file say about its Node (see the module docstring)."""

    name: str
    kubeconfig: str
    bootstrap_kubeconfig: str = ""
    cert_dir: str = "/var/lib/kubelet/pki"
    node_ips: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    runtime_endpoint: str = DEFAULT_RUNTIME_ENDPOINT
    max_pods: int = 110
    pods_per_core: int = 0
    port: int = 10250
    lease_seconds: int = 40
    status_interval: float = 10.0
    report_interval: float = 300.0
    version: str = ""


def node_settings(
    flags: Mapping[str, Any], document: Mapping[str, Any], version: str
) -> NodeSettings:
    """The settings from parsed flags (``{name: config value}``) over the config ``document``."""
    from nodehost.config.goduration import parse_go_duration

    def setting(flag: str, key: str, default: Any) -> Any:
        if flag in flags:
            return flags[flag]
        return document.get(key, default)

    name = flags.get("hostname-override") or socket.gethostname()
    ips = tuple(ip.strip() for ip in (flags.get("node-ip") or "").split(",") if ip.strip())
    return NodeSettings(
        name=name.strip().lower(),
        kubeconfig=flags.get("kubeconfig") or "",
        bootstrap_kubeconfig=flags.get("bootstrap-kubeconfig") or "",
        cert_dir=flags.get("cert-dir")
        or os.path.join(flags.get("root-dir") or "/var/lib/kubelet", "pki"),
        node_ips=ips,
        labels=dict(flags.get("node-labels") or {}),
        taints=tuple(setting("register-with-taints", "registerWithTaints", []) or []),
        runtime_endpoint=setting(
            "container-runtime-endpoint", "containerRuntimeEndpoint", DEFAULT_RUNTIME_ENDPOINT
        )
        or DEFAULT_RUNTIME_ENDPOINT,
        max_pods=int(setting("max-pods", "maxPods", 110) or 110),
        pods_per_core=int(setting("pods-per-core", "podsPerCore", 0) or 0),
        port=int(setting("port", "port", 10250) or 10250),
        lease_seconds=int(document.get("nodeLeaseDurationSeconds") or 40),
        status_interval=parse_go_duration(
            str(setting("node-status-update-frequency", "nodeStatusUpdateFrequency", "10s"))
        ),
        report_interval=parse_go_duration(str(document.get("nodeStatusReportFrequency", "5m"))),
        version=version,
    )


def say(message: str) -> None:
    print(f"kubelet: {message}", file=sys.stderr, flush=True)


def micro_time(now: float | None = None) -> str:
    """A ``MicroTime`` (``2006-01-02T15:04:05.000000Z``), as Leases carry."""
    stamp = datetime.datetime.fromtimestamp(time.time() if now is None else now, datetime.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- what the Node says about this machine -------------------------------------------------


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def memory_kib(meminfo: str = "/proc/meminfo") -> int:
    """``MemTotal`` in KiB (0 when unreadable)."""
    from nodehost.fileread import PROC_LIMIT, read_text

    try:
        for line in read_text(meminfo, PROC_LIMIT).splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def pods_capacity(settings: NodeSettings, cpus: int) -> int:
    """``maxPods``, capped at ``podsPerCore`` x CPUs when that is set (the kubelet's rule)."""
    if settings.pods_per_core > 0:
        return min(settings.max_pods, settings.pods_per_core * cpus)
    return settings.max_pods


def addresses(settings: NodeSettings) -> list[dict[str, str]]:
    """``InternalIP`` for each node IP (else the default-route interface's), then ``Hostname``."""
    from nodehost.hostaddr import default_local_ipv4

    ips = settings.node_ips or tuple(filter(None, [default_local_ipv4()]))
    found = [{"type": "InternalIP", "address": ip} for ip in ips]
    return [*found, {"type": "Hostname", "address": settings.name}]


def default_labels(name: str) -> dict[str, str]:
    arch = ARCHITECTURES.get(platform.machine(), platform.machine())
    return {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": arch,
    }


def initial_node(settings: NodeSettings) -> dict[str, Any]:
    """The Node the kubelet registers (``initialNode``)."""
    cpus = cpu_count()
    memory = memory_kib()
    capacity = {
        "cpu": str(cpus),
        "memory": f"{memory}Ki",
        "pods": str(pods_capacity(settings, cpus)),
    }
    allocatable = {**capacity, "memory": f"{max(memory - EVICTION_MEMORY_KIB, 0)}Ki"}
    spec: dict[str, Any] = {}
    if settings.taints:
        spec["taints"] = [dict(taint) for taint in settings.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": settings.name,
            "labels": {**default_labels(settings.name), **settings.labels},
            "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "addresses": addresses(settings),
            "daemonEndpoints": {"kubeletEndpoint": {"Port": settings.port}},
            "nodeInfo": node_info(settings, None),
        },
    }


def node_info(settings: NodeSettings, runtime: CriStatus | None) -> dict[str, str]:
    uname = os.uname()
    info = {
        "kernelVersion": uname.release,
        "osImage": _os_image(),
        "operatingSystem": "linux",
        "architecture": ARCHITECTURES.get(uname.machine, uname.machine),
        "kubeletVersion": settings.version,
        "kubeProxyVersion": "",
        "containerRuntimeVersion": "",
        "machineID": _read_first("/etc/machine-id"),
        "bootID": _read_first("/proc/sys/kernel/random/boot_id"),
        "systemUUID": "",
    }
    if runtime is not None:
        info["containerRuntimeVersion"] = f"{runtime.runtime_name}://{runtime.runtime_version}"
    return info


def _read_first(path: str) -> str:
    from nodehost.fileread import PROC_LIMIT, read_text

    try:
        return read_text(path, PROC_LIMIT).strip()
    except OSError:
        return ""


def _os_image() -> str:
    """``PRETTY_NAME`` of ``/etc/os-release`` (``Unknown`` without one), as cAdvisor reads it."""
    for line in _read_first("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.partition("=")[2].strip().strip('"')
    return "Unknown"


# --- the Ready condition ---------------------------------------------------------------------


def readiness_errors(runtime: CriStatus | None) -> list[str]:
    """The kubelet's runtime and network errors (``runtime_state.go``); empty when ready."""
    if runtime is None:
        return ["container runtime is down", "network state unknown"]
    errors = []
    for kind, what in ((RUNTIME_READY, "not ready"), (NETWORK_READY, "network not ready")):
        condition = runtime.not_ready(kind)
        if not condition.status:
            errors.append(
                f"container runtime {what}: {kind}=false reason:{condition.reason} "
                f"message:{condition.message}"
            )
    return errors


def ready_condition(errors: list[str]) -> tuple[str, str, str]:
    """``(status, reason, message)`` of the ``Ready`` condition for ``errors``."""
    if not errors:
        return "True", "KubeletReady", "kubelet is posting ready status"
    message = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return "False", "KubeletNotReady", message


PRESSURE = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)


@dataclass
class _Transitions:
    """When each condition last changed status (``lastTransitionTime``)."""

    since: dict[str, tuple[str, str]] = field(default_factory=dict)

    def stamp(self, kind: str, status: str, now: str) -> str:
        previous = self.since.get(kind)
        if previous is None or previous[0] != status:
            self.since[kind] = (status, now)
        return self.since[kind][1]


def conditions(
    ready: tuple[str, str, str], transitions: _Transitions, now: str
) -> list[dict[str, str]]:
    listed = [(kind, "False", reason, message) for kind, reason, message in PRESSURE]
    listed.append(("Ready", *ready))
    return [
        {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": transitions.stamp(kind, status, now),
        }
        for kind, status, reason, message in listed
    ]


# --- the agent ----------------------------------------------------------------------------------


class NodeAgent:
    """Registers the Node, keeps the Lease and reports status until cancelled (see the module)."""

    def __init__(self, settings: NodeSettings) -> None:
        self.settings = settings
        self.transitions = _Transitions()
        self.reported: tuple[Any, ...] | None = None
        self.reported_at = 0.0
        self.node_uid = ""
        self.lease: dict[str, Any] | None = None
        self.last_runtime_problem = ""
        self.ready = False

    async def run(self) -> None:
        """TLS bootstrap if needed, register (until it succeeds), then heartbeat forever."""
        from nodehost.api.client import ClusterClient, ClusterError

        await self._bootstrap_if_needed()
        while True:
            try:
                client = ClusterClient(self.settings.kubeconfig, timeout=10.0)
                break
            except ClusterError as error:
                say(f"cannot use --kubeconfig: {error}; retrying")
                await asyncio.sleep(RETRY_DELAY)
        async with client:
            while not await self._attempt("register the node", self._register(client)):
                await asyncio.sleep(RETRY_DELAY)
            await self._heartbeat(client)

    @staticmethod
    async def _attempt(what: str, step: Awaitable[object]) -> bool:
        """Run ``step``; an API error is one line on stderr (the kubelet retries at its next
        tick) and False.  As the kubelet, a Node deleted later is not registered again."""
        from nodehost.api.client import ClusterError

        try:
            await step
        except ClusterError as error:
            say(f"failed to {what}, will retry: {error}")
            return False
        return True

    async def _bootstrap_if_needed(self) -> None:
        """With ``--kubeconfig`` not written yet and ``--bootstrap-kubeconfig`` given: the
        TLS bootstrap (:mod:`nodehost.testing.certrequest`), retried until it succeeds."""
        from nodehost.api.client import ClusterError
        from nodehost.testing.certrequest import bootstrap_client

        settings = self.settings
        while not os.path.exists(settings.kubeconfig) and settings.bootstrap_kubeconfig:
            try:
                await bootstrap_client(
                    settings.name, settings.bootstrap_kubeconfig, settings.kubeconfig,
                    settings.cert_dir,
                )  # fmt: skip
                say(f"wrote {settings.kubeconfig} with the certificate of the TLS bootstrap")
            except (ClusterError, OSError, ValueError) as error:
                say(f"TLS bootstrap with {settings.bootstrap_kubeconfig} failed: {error}")
                await asyncio.sleep(RETRY_DELAY)

    async def _register(self, client: Any) -> None:
        from nodehost.api.client import ClusterRefused

        node = initial_node(self.settings)
        try:
            created = await client.create(
                "Node", {k: node[k] for k in ("metadata", "spec", "status")}
            )
            say(f"successfully registered node {self.settings.name}")
        except ClusterRefused as error:
            if error.code != 409:
                raise
            created = await client.merge_patch(
                "Node",
                self.settings.name,
                {"metadata": {"labels": default_labels(self.settings.name)}},
            )
            say(f"node {self.settings.name} was already registered")
        self.node_uid = created["metadata"].get("uid", "")
        self.reported = None

    async def _heartbeat(self, client: Any) -> None:
        """Renew the Lease and report status on their own schedules, until an error."""
        renew_every = self.settings.lease_seconds * LEASE_RENEW_FRACTION
        next_renew = 0.0
        fast_until = time.monotonic() + 120.0
        ever_ready = False
        while True:
            now = time.monotonic()
            if now >= next_renew:
                await self._attempt("renew the lease", self._renew_lease(client))
                next_renew = now + renew_every
            await self._attempt("update node status", self._report_status(client))
            ever_ready = ever_ready or self.ready
            fast = not ever_ready and time.monotonic() < fast_until
            interval = FAST_STATUS_INTERVAL if fast else self.settings.status_interval
            await asyncio.sleep(max(0.0, min(interval, next_renew - time.monotonic())))

    async def _runtime_status(self) -> CriStatus | None:
        from nodehost.daemon.cri import runtime_status

        try:
            status = await runtime_status(self.settings.runtime_endpoint, timeout=2.0)
            problem = ""
        except (OSError, TimeoutError, ValueError) as error:
            status = None
            problem = str(error) or type(error).__name__
        if problem != self.last_runtime_problem and problem:
            say(
                f"container runtime {self.settings.runtime_endpoint} status check failed: {problem}"
            )
        self.last_runtime_problem = problem
        return status

    async def _report_status(self, client: Any) -> None:
        """Write the node's status when it changed or is due (:attr:`ready` follows it)."""
        runtime = await self._runtime_status()
        ready = ready_condition(readiness_errors(runtime))
        info = node_info(self.settings, runtime)
        key = (ready, info["containerRuntimeVersion"])
        due = time.monotonic() - self.reported_at >= self.settings.report_interval
        if key != self.reported or due:
            now = now_rfc3339()
            status = {"conditions": conditions(ready, self.transitions, now), "nodeInfo": info}
            path = f"/api/v1/nodes/{self.settings.name}/status"
            await client.call(
                f"patch node {self.settings.name} status",
                lambda: client.request("PATCH", path, {"status": status}),
            )
            if key[0] != (self.reported or (None,))[0]:
                say(f"node {self.settings.name} Ready={ready[0]}: {ready[2]}")
            self.reported, self.reported_at = key, time.monotonic()
        self.ready = ready[0] == "True"

    async def _renew_lease(self, client: Any) -> None:
        """Renew the Lease (an update of the last version read); read or create it first."""
        from nodehost.api.client import ClusterRefused

        name = self.settings.name
        path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
        spec = {
            "holderIdentity": name,
            "leaseDurationSeconds": self.settings.lease_seconds,
            "renewTime": micro_time(),
        }
        for _ in range(2):  # a conflict: read the Lease again and renew that version
            if self.lease is None:
                self.lease = await self._read_lease(client, f"{path}/{name}")
            if self.lease is None:
                body = lease_object(name, self.node_uid, spec)
                self.lease = await client.call(
                    f"create lease {name}", lambda body=body: client.request("POST", path, body)
                )
                return
            body = {**self.lease, "spec": {**self.lease.get("spec", {}), **spec}}
            try:
                self.lease = await client.call(
                    f"update lease {name}",
                    lambda body=body: client.request("PUT", f"{path}/{name}", body),
                )
                return
            except ClusterRefused as error:
                if error.code not in (404, 409):
                    raise
                self.lease = None

    @staticmethod
    async def _read_lease(client: Any, path: str) -> dict[str, Any] | None:
        from nodehost.api.client import ClusterRefused

        try:
            found: dict[str, Any] = await client.call(
                "get lease", lambda: client.request("GET", path)
            )
        except ClusterRefused as error:
            if error.code != 404:
                raise
            return None
        return found


def lease_object(name: str, node_uid: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The node's Lease, owned by its Node (deleted with it)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node_uid}
            ],
        },
        "spec": spec,
    }

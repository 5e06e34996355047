"""The ``bootstrap`` component: certificate rotation and config sync after TLS bootstrap.

Selected automatically when ``--bootstrap-config-name`` is given (Origin's
bootstrap mode), and selectable by name.  The bootstrap itself -- CSR,
``node.kubeconfig``, config map -- runs before the plan, when the core asks for
the configuration (``nodehost_obtain_config``, :mod:`.join`).  While the node
runs it renews the client and serving certificates (:mod:`.rotation`) and
reports their expiry in ``/status``, ``/metrics`` and ``/readyz``; and, when
bootstrapped, it follows the config map and has the host apply each new
``node-config.yaml`` (:mod:`.sync`).

Its files: the client certificate is the ``client-certificate`` of the
configuration's ``masterKubeConfig``; both certificates live in that file's
folder (``<config-dir>/certificates``).  A ``masterKubeConfig`` with inline
credentials (a generated node folder) has nothing to rotate: the task says so
in its status and idles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nodehost import ComponentRecord, OptionRecord, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, PlanContext, ReportedProbe, TaskSpec
from nodehost.errors import UsageError
from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.check import Check, CheckContext
    from nodehost.options import StartOptions
    from nodehost.plugins.bootstrap.sync import SyncSettings


#: Bootstrap's own ``start`` options: the config map to bootstrap from, how long each wait
#: may take.
CONFIG_MAP = OptionRecord(
    "--bootstrap-config-name",
    "Bootstrap: get a client certificate, then the config from this config map.",
    metavar="NAME",
)
NAMESPACE = OptionRecord(
    "--bootstrap-config-namespace",
    "Bootstrap: the namespace of the config map.",
    default="openshift-node",
    metavar="NAMESPACE",
)


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name="bootstrap",
            summary="TLS bootstrap through the CSR API, then certificate rotation.",
            component=Bootstrap(),
            default=False,
            enable_if=bootstrapping,
            validation_scope=ValidationScope.NETWORK,
        )
    ]


TIMEOUT = OptionRecord(
    "--bootstrap-timeout",
    "Bootstrap: how long to wait for the API server and the client certificate.",
    default="1h",
    metavar="DURATION",
)
SERVING_WAIT = OptionRecord(
    "--serving-cert-wait",
    "Bootstrap: how long to wait for the kubelet serving certificate before going on.",
    default="15s",
    metavar="DURATION",
)


def config_map_name(options: StartOptions | None) -> str:
    """``--bootstrap-config-name`` ("" when not given)."""
    return "" if options is None else options.plugin_values.get(CONFIG_MAP.dest) or ""


def config_map_namespace(options: StartOptions) -> str:
    """``--bootstrap-config-namespace``."""
    return str(options.plugin_values.get(NAMESPACE.dest, NAMESPACE.default))


def bootstrapping(options: StartOptions | None) -> bool:
    """Whether the start options ask for bootstrap (``--bootstrap-config-name``)."""
    return bool(config_map_name(options))


@hookimpl
def nodehost_options() -> list[OptionRecord]:
    return [CONFIG_MAP, NAMESPACE, TIMEOUT, SERVING_WAIT]


@hookimpl
def nodehost_start_options(options: StartOptions) -> None:
    """Origin's rules for the bootstrap flags (``NodeOptions.Validate``), and a wait that is
    not a positive Go duration, bootstrapping or not: ``UsageError`` naming the flag."""
    wait_seconds(options)
    if not bootstrapping(options):
        return
    if options.write_flags:
        raise UsageError("--write-flags is mutually exclusive with --bootstrap-config-name")
    if not config_map_namespace(options):
        raise UsageError("--bootstrap-config-namespace must be specified")
    if options.settings:
        raise UsageError("does not go with --bootstrap-config-name (the config map rules)", "--set")


def wait_seconds(options: StartOptions) -> tuple[float, float]:
    """``(--bootstrap-timeout, --serving-cert-wait)`` in seconds (their defaults for options
    made without them); ``UsageError`` naming the flag unless each is a positive Go duration."""
    return _positive_duration(options, TIMEOUT), _positive_duration(options, SERVING_WAIT)


def _positive_duration(options: StartOptions, record: OptionRecord) -> float:
    from nodehost.config.goduration import flag_duration

    return flag_duration(options.plugin_values.get(record.dest, record.default), record.name)


@hookimpl
def nodehost_obtain_config(options: StartOptions) -> str | None:
    """With ``--bootstrap-config-name``: bootstrap the node, then the path of its config."""
    if not bootstrapping(options):
        return None
    from nodehost.plugins.bootstrap.join import bootstrap_node

    return bootstrap_node(options)


@hookimpl
def nodehost_describe_config(options: StartOptions) -> list[str] | None:
    """With ``--bootstrap-config-name`` and ``--dry-run``: what bootstrap would do."""
    if not bootstrapping(options):
        return None
    from nodehost.plugins.bootstrap.join import describe_bootstrap

    return describe_bootstrap(options)


class Bootstrap:
    """Plans the task: certificate rotation, and the config sync when bootstrapped."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        kubeconfig = context.config.master_kube_config
        listen = context.config.serving_info.bind_address
        options = context.options
        bootstrap = options.kubeconfig if options is not None and bootstrapping(options) else None
        sync = sync_settings(context)
        watch = "kubelet" in context.selected
        task = BootstrapTask(kubeconfig, context.config.node_name, listen, bootstrap, sync, watch)
        notes = [f"renews certificates at 70-90% of their lifetime via CSRs as {kubeconfig}"]
        if watch:
            notes.append("follows the Node: deleted while the node runs, it is registered again")
        if sync is not None:
            notes.append(f"follows config map {sync.where}: applies each new node-config.yaml")
        elif bootstrap is not None:
            notes.append(f"config sync off: the node runs from {context.config.source}")
        return ComponentPlan(
            run=TaskSpec(
                run=task,
                readiness=ReportedProbe(),
                stop_grace=5.0,
                description=f"rotate the certificates of {kubeconfig}",
            ),
            notes=tuple(notes),
        )


def sync_settings(context: PlanContext) -> SyncSettings | None:
    """The config sync's settings when the node runs from its config map's file, else None."""
    if not bootstrapping(context.options):
        return None
    from pathlib import Path

    from nodehost.plugins.bootstrap.join import NODE_CONFIG
    from nodehost.plugins.bootstrap.sync import SyncSettings

    assert context.options is not None
    config_dir = Path(context.options.config_dir).absolute()
    if Path(context.config.source).absolute() != config_dir / NODE_CONFIG:
        return None
    return SyncSettings(context.options, context.config.master_kube_config)


@frozen
class BootstrapTask:
    """The component's task: rotation, the sync when ``sync`` is set, and the Node watch
    (:mod:`~nodehost.plugins.bootstrap.nodewatch`) when ``watch_node`` is (the kubelet is
    selected).  A value: two plans of the same settings compare equal, so a new config
    leaves it running."""

    kubeconfig: str
    node_name: str
    bind_address: str
    bootstrap: str | None
    sync: SyncSettings | None = None
    watch_node: bool = False

    async def __call__(self, context: Any) -> None:
        """Run rotation and the sync side by side; the first to fail ends both."""
        import asyncio

        jobs = [asyncio.create_task(self.rotate(context))]
        if self.sync is not None:
            from nodehost.plugins.bootstrap.sync import ConfigSync

            sync = ConfigSync(self.sync, context)
            jobs.append(asyncio.create_task(sync.run()))
        if self.watch_node:
            from nodehost.plugins.bootstrap.nodewatch import NodeWatch

            again = sync.patch_again if self.sync is not None else lambda: None
            watch = NodeWatch(self.kubeconfig, self.node_name, context, again)
            jobs.append(asyncio.create_task(watch.run()))
        try:
            done, _ = await asyncio.wait(jobs, return_when=asyncio.FIRST_EXCEPTION)
            for job in done:
                job.result()
        finally:
            for job in jobs:
                job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)

    async def rotate(self, context: Any) -> None:
        """Find the certificate files, then run the rotation loop (idle without any)."""
        import asyncio
        from pathlib import Path

        from nodehost.config.hostport import split_host_port
        from nodehost.generate import server_cert_hostnames
        from nodehost.pki.kubeconfig import kubeconfig_entries
        from nodehost.plugins.bootstrap.rotation import CertificateRotation, RotationSettings

        user = kubeconfig_entries(Path(self.kubeconfig))[1]
        certificate = user.get("client-certificate")
        if not certificate:
            context.status(f"nothing to rotate: {self.kubeconfig} has no client certificate file")
            context.ready()
            await asyncio.Event().wait()
            return
        host = split_host_port(self.bind_address)[0] if self.bind_address else ""
        settings = RotationSettings(
            node_kubeconfig=Path(self.kubeconfig),
            cert_dir=(Path(self.kubeconfig).parent / certificate).parent,
            node_name=self.node_name,
            hostnames=tuple(server_cert_hostnames(self.node_name, host)),
            bootstrap_kubeconfig=Path(self.bootstrap).absolute() if self.bootstrap else None,
        )
        await CertificateRotation(settings).run(context)


@hookimpl
def nodehost_checks(context: CheckContext) -> list[Check]:
    """The node identity's checks (:mod:`nodehost.plugins.bootstrap.checks`); none in the
    preflight (its module is not loaded to answer "none")."""
    if context.preflight:
        return []
    from nodehost.plugins.bootstrap.checks import bootstrap_checks

    return bootstrap_checks(context)

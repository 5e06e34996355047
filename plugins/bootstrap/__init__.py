"""The ``bootstrap`` component: certificate rotation after TLS bootstrap.

Selected automatically when ``--bootstrap-config-name`` is given (Origin's
bootstrap mode), and selectable by name.  The bootstrap itself -- CSR,
``node.kubeconfig``, config map -- runs before the plan, when the core asks for
the configuration (``nodehost_obtain_config``, :mod:`.join`).  While the node
runs it renews the client and serving certificates (:mod:`.rotation`) and
reports their expiry in ``/status``, ``/metrics`` and ``/readyz``.

Its files: the client certificate is the ``client-certificate`` of the
configuration's ``masterKubeConfig``; both certificates live in that file's
folder (``<config-dir>/certificates``).  A ``masterKubeConfig`` with inline
credentials (a generated node folder) has nothing to rotate: the task says so
in its status and idles.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodehost import ComponentRecord, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, PlanContext, ReportedProbe, TaskSpec

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.options import StartOptions


def bootstrapping(options: StartOptions | None) -> bool:
    """Whether the start options ask for bootstrap (``--bootstrap-config-name``)."""
    return options is not None and bool(options.bootstrap_config_name)


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
    """Plans the rotation task."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        kubeconfig = context.config.master_kube_config
        listen = context.config.serving_info.bind_address
        options = context.options
        bootstrap = options.kubeconfig if options is not None and bootstrapping(options) else None
        rotation = RotationTask(kubeconfig, context.config.node_name, listen, bootstrap)
        return ComponentPlan(
            run=TaskSpec(
                run=rotation.run,
                readiness=ReportedProbe(),
                stop_grace=5.0,
                description=f"rotate the certificates of {kubeconfig}",
            ),
            notes=(f"renews certificates at 70-90% of their lifetime via CSRs as {kubeconfig}",),
        )


class RotationTask:
    """Finds the certificate files at run time, then runs the rotation loop."""

    def __init__(
        self, kubeconfig: str, node_name: str, bind_address: str, bootstrap: str | None
    ) -> None:
        self.kubeconfig = kubeconfig
        self.node_name = node_name
        self.bind_address = bind_address
        self.bootstrap = bootstrap

    async def run(self, context: Any) -> None:
        import asyncio

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

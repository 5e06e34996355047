"""The ``localcluster`` component: a local control plane, so one command brings up the whole node.

``nodehost start --local-cluster DIR`` runs nodehost's test API server
(:mod:`nodehost.testing.apiserver`: an in-memory stand-in for
kube-apiserver, for trying, developing and CI -- not a production API server)
beside the node and joins the node to it:

1. options (``nodehost_start_options``, :mod:`.options`): the flag implies the
   bootstrap flags, the node's folders under DIR, ``--standins=missing`` and,
   where containerd cannot run (:mod:`.machine`), ``--disable runtime``;
2. before ``bootstrap`` obtains the config (``nodehost_obtain_config``,
   ``tryfirst``, answering None): the API server comes up on loopback with
   DIR's CA and an approver for the node's CSRs, and the node's config map
   is published, built from nodehost's defaults (:mod:`.nodeconfig`) --
   :mod:`.cluster`;
3. ``bootstrap`` then does what it does against any cluster: CSRs, the
   node's certificates, the config from the map;
4. the component: its record starts it before every other component
   (``before=("all",)``), its readiness is a TCP connection to the API
   server's socket (which the host's own process must hold), it stops last;
5. once the node is ready (``nodehost_node_ready``) it prints how to reach the
   cluster (kubectl, dig, ``nodehost status``).

A dry run (``nodehost_describe_config``, ``tryfirst``) starts nothing: it says
what the cluster and the bootstrap against it would do.

DIR's layout and what a second start with the same DIR keeps: :mod:`.layout`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nodehost import ComponentRecord, OptionRecord, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, PlanContext, TaskSpec, TcpProbe

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.options import StartOptions

#: The component's name (here, not in :mod:`.options`: loading the plugin imports no more).
NAME = "localcluster"
STOP_GRACE = 10.0


#: ``--local-cluster DIR``, this plugin's one ``start`` option.
LOCAL_CLUSTER = OptionRecord(
    "--local-cluster",
    "Run nodehost's test API server from DIR as a local control plane and join it: the whole "
    "node on one machine, for trying, developing and CI (not a production API server).",
    metavar="DIR",
)


def cluster_dir(options: StartOptions | None) -> str | None:
    """``--local-cluster``'s DIR, or None when not given."""
    if options is None:
        return None
    return options.plugin_values.get(LOCAL_CLUSTER.dest) or None


def bootstrap_namespace(options: StartOptions) -> str:
    """The ``bootstrap`` plugin's ``--bootstrap-config-namespace``: where the config map goes
    (``--local-cluster`` requires the bootstrap component)."""
    from nodehost.plugins.bootstrap import config_map_namespace

    return config_map_namespace(options)


def wanted(options: StartOptions | None) -> bool:
    """Whether the start options ask for a local cluster (``--local-cluster``)."""
    return cluster_dir(options) is not None


@hookimpl
def nodehost_options() -> list[OptionRecord]:
    return [LOCAL_CLUSTER]


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name=NAME,
            summary="Local control plane: nodehost's test API server (--local-cluster; "
            "not for production).",
            component=LocalClusterComponent(),
            default=False,
            enable_if=wanted,
            before=("all",),
            validation_scope=ValidationScope.NETWORK,
        )
    ]


@hookimpl
def nodehost_start_options(
    options: StartOptions, components: frozenset[str]
) -> dict[str, Any] | None:
    """With ``--local-cluster``: the options it implies (see :mod:`.options`)."""
    if not wanted(options):
        return None
    from nodehost.plugins.localcluster.machine import Machine
    from nodehost.plugins.localcluster.options import implied_options

    runtime_possible = Machine.probe().no_runtime_reason() is None
    return implied_options(options, components, runtime_possible)


@hookimpl(tryfirst=True)
def nodehost_obtain_config(options: StartOptions) -> None:
    """With ``--local-cluster``: bring the cluster up for ``bootstrap``; obtain nothing."""
    if not wanted(options):
        return
    from nodehost.plugins.localcluster.cluster import start_cluster
    from nodehost.plugins.localcluster.machine import Machine

    start_cluster(options, Machine.probe())


@hookimpl(tryfirst=True)
def nodehost_describe_config(options: StartOptions) -> list[str] | None:
    """With ``--local-cluster`` and ``--dry-run``: the cluster and the bootstrap, described."""
    if not wanted(options):
        return None
    from nodehost.plugins.localcluster.cluster import describe_start
    from nodehost.plugins.localcluster.machine import Machine

    return describe_start(options, Machine.probe())


#: The module whose code starts and runs the clusters.
_CLUSTER_MODULE = f"{__name__}.cluster"


@hookimpl
def nodehost_node_ready(status_address: str | None, keeps_running: bool) -> None:
    """Print how to reach each local cluster this process runs, unless the node is about
    to stop (``--exit-on-ready``).

    Clusters are started only by :func:`~nodehost.plugins.localcluster.cluster.start_cluster`:
    a process that never imported that module runs none, and does not import it here
    (a node without ``--local-cluster`` keeps its code out of memory).
    """
    import sys

    cluster_module = sys.modules.get(_CLUSTER_MODULE)
    if not keeps_running or cluster_module is None:
        return
    for cluster in cluster_module.started():
        sys.stdout.write(cluster_module.instructions(cluster, status_address))
        sys.stdout.flush()


class LocalClusterComponent:
    """Plans the task that owns the running API server."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        directory = cluster_dir(context.options)
        if directory is None:
            return ComponentPlan(inactive_reason="--local-cluster DIR is not given")
        from pathlib import Path

        from nodehost.plugins.localcluster.cluster import WHAT_IT_IS, ClusterTask
        from nodehost.plugins.localcluster.layout import LOOPBACK, Layout, read_settings

        layout = Layout(Path(directory))
        settings = read_settings(layout)
        port = settings.apiserver_port if settings is not None else 0
        where = f"https://{LOOPBACK}:{port or '<chosen at the first start>'}"
        return ComponentPlan(
            run=TaskSpec(
                run=ClusterTask(str(layout.directory)),
                readiness=TcpProbe(host=LOOPBACK, port=port),
                stop_grace=STOP_GRACE,
                description=f"test API server on {where} for {layout.directory}",
            ),
            notes=(WHAT_IT_IS, f"admin kubeconfig: {layout.admin_kubeconfig}"),
        )

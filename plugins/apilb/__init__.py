"""The ``apilb`` component: a node-local API server load balancer that fails over and back.

When the node knows more than one API server (``masterKubeConfig``'s, those
listed in the ``apiServerLoadBalancer`` section, those learnt from the
cluster before: :mod:`.settings`), this component listens on loopback
(``127.0.0.1:6444`` by default) and passes each connection through to the
first live server (:mod:`.balancer`), and every other component reaches the
API server through it: the plugin answers ``nodehost_api_route`` with the
routed kubeconfig it writes to ``<state-dir>/apilb/kubeconfig`` (:mod:`.routing`),
which the core hands to every other component as ``masterKubeConfig`` -- the
kubelet's ``--kubeconfig``, kube-proxy's ``clientConnection.kubeconfig``, the
DNS source, certificate rotation and config sync.  That kubeconfig names the
real servers' name as ``tls-server-name``, so TLS is verified end to end and
the node's client certificate authenticates to the real server; nothing is
terminated on the node.

The record starts it before every other component (``before=("all",)``) but
after ``localcluster`` (which runs the API server it would balance).  With
one known server (mode ``auto``) it is inactive and nothing is rerouted.
Readiness: its listener accepts.  While it runs it follows the
``kubernetes`` EndpointSlice (:mod:`.task`) and reports every server in
``/status``, ``nodehost status`` and ``/metrics`` (:mod:`.metrics`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from nodehost import ComponentRecord, Problem, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, FileSpec, PlanContext, TaskSpec, TcpProbe
from nodehost.config.sections import idle_section_problems
from nodehost.pluginhost.records import ApiRoute
from nodehost.plugins.apilb.settings import SCHEMA, SECTION, read_settings

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.config.schema import NodeConfig
    from nodehost.hookspecs import MetricsCollector

NAME = "apilb"


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name=NAME,
            summary="Node-local API server load balancer: fails over between the cluster's "
            "API servers (when the node knows more than one).",
            component=ApiLoadBalancer(),
            before=("all",),
            after=("localcluster",),
            validation_scope=ValidationScope.NETWORK,
            config_sections=(SECTION,),
            config_schema={SECTION: SCHEMA},
        )
    ]


@hookimpl
def nodehost_validate_config(config: NodeConfig, selected: frozenset[str]) -> list[Problem]:
    """Every problem of the ``apiServerLoadBalancer`` section (its bad content even when
    the component is not selected: :func:`idle_section_problems`)."""
    problems = read_settings(config)[1].problems
    if NAME not in selected:
        return idle_section_problems(config, SECTION, problems, f"{NAME} is selected")
    return problems


@hookimpl
def nodehost_api_route(
    config: NodeConfig, selected: frozenset[str], state_dir: str
) -> ApiRoute | None:
    """The routed kubeconfig, when the balancer is selected and has servers to balance."""
    if NAME not in selected:
        return None
    from nodehost.plugins.apilb.routing import nothing_to_route, plan_route

    settings, component_dir = read_settings(config)[0], _dir(state_dir)
    if nothing_to_route(settings, component_dir):
        return None  # known without parsing masterKubeConfig (the plan parses it for its reason)
    route = plan_route(settings, config.master_kube_config, component_dir)
    if isinstance(route, str):
        return None
    return ApiRoute(NAME, route.kubeconfig_path, os.path.abspath(route.source))


@hookimpl
def nodehost_metrics_collectors() -> list[MetricsCollector]:
    """The balancer's per-server metrics (:mod:`.metrics`)."""
    from nodehost.plugins.apilb.metrics import BalancerCollector

    return [BalancerCollector()]


def _dir(state_dir: str) -> str:
    return os.path.join(os.path.abspath(state_dir), NAME)


class ApiLoadBalancer:
    """Plans the routed kubeconfig and the balancer's task (inactive without servers)."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        from nodehost.plugins.apilb.routing import plan_route

        settings = read_settings(context.config)[0]
        component_dir = os.path.abspath(context.state_dir)
        route = plan_route(settings, context.config.master_kube_config, component_dir)
        if isinstance(route, str):
            return ComponentPlan(inactive_reason=route)
        from nodehost.pki.kubeconfig import KUBECONFIG_MODE, dump_kubeconfig
        from nodehost.plugins.apilb.task import BalancerTask  # the task: only an active plan's

        task = BalancerTask(
            source=route.source,
            routed_kubeconfig=route.kubeconfig_path,
            component_dir=component_dir,
            servers=route.configured,
            server_name=route.server_name,
            bind_host=settings.bind_host,
            bind_port=settings.bind_port,
            interval=settings.health_interval,
            timeout=settings.health_timeout,
        )
        listen = f"{settings.bind_host}:{settings.bind_port}"
        servers = ", ".join(f"{address} ({source})" for address, source in route.configured)
        return ComponentPlan(
            run=TaskSpec(
                run=task,
                readiness=TcpProbe(host=settings.bind_host, port=settings.bind_port),
                stop_grace=5.0,
                description=f"balance {listen} over {servers} and the servers learnt "
                "from the cluster",
            ),
            files=(
                FileSpec(route.kubeconfig_path, dump_kubeconfig(route.kubeconfig), KUBECONFIG_MODE),
            ),
            notes=(
                f"the other components reach the API server through {route.kubeconfig_path} "
                f"(server https://{listen}, tls-server-name {route.server_name})",
            ),
        )

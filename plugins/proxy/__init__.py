"""The ``proxy`` component: runs kube-proxy as a supervised child process.

nodehost writes a ``KubeProxyConfiguration`` (``kubeproxy.config.k8s.io/v1alpha1``)
to ``<state-dir>/proxy/kube-proxy-config.yaml`` as Origin built the proxy
(:ref:`origin-proxy`, see :mod:`nodehost.plugins.proxy.configuration`) with
``proxyArguments`` applied over it, and runs::

    kube-proxy --config=<state-dir>/proxy/kube-proxy-config.yaml [--master=... --v=...]

Validation: Origin checked ``proxyArguments`` only when it built the proxy,
so a bad one surfaced as a start-up failure.  nodehost reports them with the
rest of the configuration, when the proxy is selected, at
``proxyArguments.<key>``: an unknown key (``is not a valid flag``), a value
kube-proxy would reject (``could not be set: <Go error>``), a ``proxy-mode``
a current kube-proxy does not support, keys nodehost owns, and a removed flag
(a warning; it is dropped or renamed).  A ``servingInfo.bindAddress`` whose
host is not an IP is reported too, since it becomes kube-proxy's bindAddress.

Readiness is kube-proxy's ``/healthz`` (``0.0.0.0:10256``, probed on
loopback, unless ``proxyArguments`` move it).

Its API server is ``masterKubeConfig``'s; an empty one (the network-only
selection without ``--kubeconfig``) means the in-cluster service account, as
kube-proxy itself does -- and planning fails with one line when there is none
(:mod:`nodehost.api.incluster`).
"""

from __future__ import annotations

import os
from typing import Any

from nodehost import ComponentRecord, Problem, Severity, ValidationScope, hookimpl
from nodehost.component import (
    ComponentPlan,
    FileSpec,
    HttpProbe,
    PlanContext,
    ProcessSpec,
    TeardownSpec,
)
from nodehost.config.hostport import parse_ip, split_host_port
from nodehost.errors import InvalidSetting
from nodehost.pluginhost.records import ProblemKind

CONFIG_FILE_NAME = "kube-proxy-config.yaml"

#: ``proxyArguments`` keys nodehost does not pass on, and why.
RESERVED_KEYS = {
    "config": "is written by nodehost (<state-dir>/proxy/kube-proxy-config.yaml); set "
    "kube-proxy's options as proxyArguments",
    "write-config-to": "makes kube-proxy write its defaults and exit",
    "cleanup": "makes kube-proxy remove its rules and exit; run kube-proxy --cleanup by hand",
    "init-only": "makes kube-proxy exit after initialising",
    "help": "makes kube-proxy print its help and exit",
    "version": "makes kube-proxy print its version and exit",
}


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name="proxy",
            summary="kube-proxy: service load balancing on this node (iptables mode).",
            component=Proxy(),
            groups=("network",),
            validation_scope=ValidationScope.IN_CLUSTER,
            config_sections=("proxyArguments",),
            standins={"kube-proxy": "nodehost-standin-kube-proxy"},
        )
    ]


@hookimpl
def nodehost_validate_config(
    config: Any, scope: ValidationScope, selected: frozenset[str]
) -> list[Problem]:
    """nodehost's port rule for ``proxyArguments`` (in-cluster and node scope, as Origin's
    rules); the arguments against kube-proxy's flags and the bind address when the proxy
    is selected."""
    from nodehost.config.validate import argument_ports

    problems: list[Problem] = []
    if scope >= ValidationScope.IN_CLUSTER:
        problems.extend(argument_ports(config.proxy_arguments, "proxyArguments"))
    if "proxy" in selected:
        problems.extend(argument_problems(config.proxy_arguments) + bind_address_problems(config))
    return problems


def argument_problems(arguments: Any) -> list[Problem]:
    """Every problem with ``proxyArguments``, at ``proxyArguments.<key>``."""
    from nodehost.plugins.proxy import configuration
    from nodehost.plugins.proxy.configfile import PROXY_MODES
    from nodehost.plugins.proxy.flags import KUBE_PROXY_FLAGS

    translated, translations = KUBE_PROXY_FLAGS.translate(configuration.every_interface(arguments))
    problems = [
        Problem.forbidden(
            f"proxyArguments.{found.key}", found.removed.describe(), severity=Severity.WARNING
        )
        for found in translations
    ]
    problems.extend(
        Problem.invalid(f"proxyArguments.{error.key}", error.value, error.detail)
        for error in KUBE_PROXY_FLAGS.resolve(translated).errors
    )
    problems.extend(
        Problem.forbidden(f"proxyArguments.{key}", why)
        for key, why in RESERVED_KEYS.items()
        if key in arguments
    )
    mode = (arguments.get("proxy-mode") or ["iptables"])[-1]
    if mode not in PROXY_MODES:
        problems.append(Problem.not_supported("proxyArguments.proxy-mode", mode, PROXY_MODES))
    return problems


def bind_address_problems(config: Any) -> list[Problem]:
    """``servingInfo.bindAddress`` needs an IP host: it becomes kube-proxy's bindAddress.

    An address that is empty or not ``host:port`` is left to the core's rule 3a
    (:ref:`origin-validation-serving-info`).
    """
    address = config.serving_info.bind_address
    try:
        host, _ = split_host_port(address)
    except ValueError:
        return []
    if parse_ip(host) is not None:
        return []
    detail = "must be an IP address and port: it becomes kube-proxy's bindAddress"
    return [Problem.invalid("servingInfo.bindAddress", address, detail)]


class Proxy:
    """Plans kube-proxy: its config file, its command line and its readiness probe."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        from nodehost.kube.configfile import render_config_file
        from nodehost.kube.healthz import healthz_url
        from nodehost.plugins.proxy import configuration
        from nodehost.plugins.proxy.configfile import (
            KUBE_PROXY_CONFIG_API_VERSION,
            KUBE_PROXY_CONFIG_KIND,
        )

        try:
            merged = configuration.proxy_arguments(context.config)
            launch = configuration.launch_arguments(merged.arguments)
        except configuration.ArgumentsError as error:
            problem = Problem("proxyArguments", ProblemKind.INVALID, str(error))
            raise InvalidSetting(problem) from None
        if not any(merged.arguments.get(key, [""])[-1] for key in ("kubeconfig", "master")):
            from nodehost.api import incluster

            incluster.require("proxy", "kube-proxy")  # it would use the service account
        path = os.path.join(context.state_dir, CONFIG_FILE_NAME)
        readiness = HttpProbe(url=healthz_url(*configuration.healthz_address(launch.values)))
        notes = [f"writes {path} ({KUBE_PROXY_CONFIG_KIND} {KUBE_PROXY_CONFIG_API_VERSION})"]
        notes.extend(
            f"proxyArguments {found.key}: {found.removed.describe()}"
            for found in merged.translations
        )
        return ComponentPlan(
            run=ProcessSpec(
                argv=("kube-proxy", f"--config={path}", *launch.flags), readiness=readiness
            ),
            files=(
                FileSpec(
                    path,
                    render_config_file(_document(launch, context.config), context.config.source),
                ),
                # Its iptables/IPVS/nftables rules outlive it; teardown has it remove them.
                TeardownSpec(commands=(("kube-proxy", "--cleanup"),)).file(context.state_dir),
            ),
            notes=tuple(notes),
        )


def _document(launch: Any, config: Any) -> dict[str, Any]:
    """The KubeProxyConfiguration, with ``acceptContentTypes``, a field no flag sets."""
    document = dict(launch.document)
    accept = config.master_client_connection_overrides.accept_content_types
    if accept:
        connection = dict(document.get("clientConnection") or {})
        document["clientConnection"] = {**connection, "acceptContentTypes": accept}
    return document


@hookimpl
def nodehost_checks(context: Any) -> list[Any]:
    """kube-proxy's host checks (:mod:`nodehost.plugins.proxy.checks`)."""
    from nodehost.plugins.proxy.checks import proxy_checks

    return proxy_checks(context)

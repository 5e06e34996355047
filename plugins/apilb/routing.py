"""What the balancer is planned from: the servers the node knows, and the routed kubeconfig.

:func:`plan_route` reads ``masterKubeConfig`` (bounded, no side effects) and
gives a :class:`Route`, or the reason there is none.  The routed kubeconfig is
``masterKubeConfig``'s current context with its server replaced by the
balancer's loopback address and ``tls-server-name`` set to the name the real
servers' certificates hold (its own ``tls-server-name``, else its server's
host); the CA and the user (certificate files made absolute, so a rotation
that swaps them is seen through either file) are kept as they are.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from nodehost.config.hostport import join_host_port
from nodehost.frozen import frozen
from nodehost.plugins.apilb.settings import (
    CLUSTER,
    KUBECONFIG_FILE,
    LbSettings,
    read_learnt,
    server_address,
)

#: Entries of a kubeconfig's cluster and user that name files (made absolute).
_FILE_KEYS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")


@frozen
class Route:
    """A planned balancer: the servers in order of preference and the routed kubeconfig."""

    source: str  # masterKubeConfig
    servers: tuple[tuple[str, str], ...]  # (host:port, where it came from)
    server_name: str
    kubeconfig_path: str
    kubeconfig: dict[str, Any]

    @property
    def configured(self) -> tuple[tuple[str, str], ...]:
        """The servers the configuration names (not those learnt from the cluster): what
        the task is planned with, so that learning servers never changes the plan."""
        return tuple(server for server in self.servers if server[1] != CLUSTER)


def nothing_to_route(settings: LbSettings, component_dir: str) -> bool:
    """Whether :func:`plan_route` gives a reason, not a route, whatever ``masterKubeConfig``
    holds: the mode is off, or auto with no server configured or learnt besides the
    kubeconfig's own (the default node's case).  It reads no kubeconfig."""
    if settings.mode == "off":
        return True
    return settings.mode == "auto" and not settings.servers and not read_learnt(component_dir)


def plan_route(settings: LbSettings, master_kubeconfig: str, component_dir: str) -> Route | str:
    """The route for these settings, or why the balancer has nothing to do (a sentence)."""
    if settings.mode == "off":
        return "apiServerLoadBalancer.mode is off"
    if not master_kubeconfig:
        return "there is no masterKubeConfig (the in-cluster service account is used)"
    document = _read(master_kubeconfig)
    if isinstance(document, str):
        return f"masterKubeConfig {master_kubeconfig}: {document}"
    cluster, user, context_name = document
    server = str(cluster.get("server") or "")
    try:
        first = server_address(server)
    except ValueError as error:
        return f"masterKubeConfig's server {server!r} {error}"
    servers = [(first, "kubeconfig")]
    servers += [(address, "config") for address in settings.servers if address != first]
    known = {address for address, _ in servers}
    servers += [(a, CLUSTER) for a in read_learnt(component_dir) if a not in known]
    if settings.mode == "auto" and len(servers) < 2:
        return (
            f"the node knows one API server ({first}); list the others in "
            "apiServerLoadBalancer.servers, or set its mode to on to learn them from the cluster"
        )
    name = str(cluster.get("tls-server-name") or urlsplit(server).hostname)
    folder = os.path.dirname(os.path.abspath(master_kubeconfig))
    listen = f"https://{join_host_port(settings.bind_host, settings.bind_port)}"
    routed_cluster = {**_absolute(cluster, folder), "server": listen, "tls-server-name": name}
    return Route(
        source=master_kubeconfig,
        servers=tuple(servers),
        server_name=name,
        kubeconfig_path=os.path.join(component_dir, KUBECONFIG_FILE),
        kubeconfig={
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "apilb", "cluster": routed_cluster}],
            "users": [{"name": "node", "user": _absolute(user, folder)}],
            "contexts": [{"name": context_name, "context": {"cluster": "apilb", "user": "node"}}],
            "current-context": context_name,
            "preferences": {},
        },
    )


def _read(path: str) -> tuple[dict[str, Any], dict[str, Any], str] | str:
    """(cluster, user, context name) of ``path``'s current context, or what is wrong."""
    from nodehost.fileread import KUBECONFIG_LIMIT, read_file
    from nodehost.pki.kubeconfig import load_document

    try:
        document = load_document(read_file(path, KUBECONFIG_LIMIT))
    except (OSError, ValueError) as error:
        return f"cannot be read ({getattr(error, 'strerror', None) or type(error).__name__})"
    if not isinstance(document, dict):
        return "is not a kubeconfig"

    def named(key: str, name: Any) -> dict[str, Any]:
        for entry in document.get(key) or []:
            if isinstance(entry, dict) and entry.get("name") == name:
                found = entry.get(key[:-1]) or {}
                return dict(found) if isinstance(found, dict) else {}
        return {}

    current = document.get("current-context")
    context = named("contexts", current)
    if not context:
        return "has no current context"
    cluster, user = named("clusters", context.get("cluster")), named("users", context.get("user"))
    return cluster, user, str(current)


def _absolute(entry: dict[str, Any], folder: str) -> dict[str, Any]:
    """``entry`` with the files it names made absolute (relative to ``folder``)."""
    return {
        key: os.path.join(folder, value) if key in _FILE_KEYS and isinstance(value, str) else value
        for key, value in entry.items()
    }

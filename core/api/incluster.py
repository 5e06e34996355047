"""The in-cluster API server: what an empty kubeconfig path means (:ref:`origin-in-cluster`).

Origin's ``GetKubeConfigOrInClusterConfig``: no kubeconfig means the pod's
service account, as client-go's ``InClusterConfig`` reads it -- the API
server at ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT``,
authenticated with the token and verified against the CA of the
service-account directory (``/var/run/secrets/kubernetes.io/serviceaccount``,
or ``$NODEHOST_SERVICE_ACCOUNT_DIR``).  nodehost reaches this when the
selection is exactly the network-only set and ``--kubeconfig`` is empty
(``masterKubeConfig`` then comes from ``--kubeconfig``).

A component that needs the API server calls :func:`require` while it plans:
where neither a kubeconfig nor a service account exists, it fails with one
line instead of running with nothing to read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nodehost.errors import RuntimeFailure

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
ENV_SERVICE_ACCOUNT_DIR = "NODEHOST_SERVICE_ACCOUNT_DIR"
ENV_HOST, ENV_PORT = "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"
DESCRIPTION = "the in-cluster service account"


def service_account_dir() -> Path:
    return Path(os.environ.get(ENV_SERVICE_ACCOUNT_DIR) or SERVICE_ACCOUNT_DIR)


def missing() -> str | None:
    """Why there is no in-cluster configuration here (None: there is one)."""
    unset = [name for name in (ENV_HOST, ENV_PORT) if not os.environ.get(name)]
    if unset:
        return f"{' and '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set"
    folder = service_account_dir()
    for name in ("token", "ca.crt", "namespace"):
        if not (folder / name).is_file():
            return f"{folder / name} does not exist"
    return None


def unavailable() -> str | None:
    """One phrase saying that neither a kubeconfig nor a service account exists (None: one does)."""
    reason = missing()
    if reason is None:
        return None
    return (
        "there is no kubeconfig (masterKubeConfig is empty: the network-only selection runs "
        f"against --kubeconfig) and no in-cluster service account ({reason}); "
        "give --kubeconfig FILE"
    )


def require(component: str, purpose: str) -> None:
    """Raise :class:`RuntimeFailure` for ``component`` unless a service account exists."""
    problem = unavailable()
    if problem is not None:
        raise RuntimeFailure(
            f"component {component}: {purpose} needs the API server, but {problem}"
        )


def kubeconfig() -> dict[str, Any]:
    """The service account as a kubeconfig mapping (absolute paths), as client-go's
    ``InClusterConfig``: the token file is read again after a 401 (the kubelet rotates
    it).  ``ValueError`` says what is missing."""
    reason = missing()
    if reason is not None:
        raise ValueError(f"no in-cluster service account: {reason}")
    folder = service_account_dir().absolute()
    from nodehost.config.hostport import join_host_port

    server = f"https://{join_host_port(os.environ[ENV_HOST], os.environ[ENV_PORT])}"
    name = "in-cluster"
    cluster = {"server": server, "certificate-authority": str(folder / "ca.crt")}
    return {
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"tokenFile": str(folder / "token")}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }

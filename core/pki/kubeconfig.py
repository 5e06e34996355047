"""The node's kubeconfig (Origin's ``create-kubeconfig``, reference §8.5).

One cluster, one user, one context, everything inline::

    cluster  <host:port of the server, "." -> "-">   e.g. master-example-com:8443
    user     <cert CN>/<cluster>                      e.g. system:node:n1/master-example-com:8443
    context  <namespace>/<cluster>/<cert CN>          namespace "default"

The file holds the client key, so it is written 0600 (as Go's
``clientcmd.WriteToFile``).  Keys are emitted sorted, as Go's YAML writer does.
No ``cryptography`` here: only PEM bytes and base64.
"""

from __future__ import annotations

import base64
import ipaddress
from typing import Any
from urllib.parse import urlsplit

import yaml

KUBECONFIG_MODE = 0o600
DEFAULT_NAMESPACE = "default"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def check_server_url(url: str) -> None:
    """Raise ``ValueError`` unless ``url`` is an ``http``/``https`` URL with a host."""
    parts = urlsplit(url)
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"{url!r} is not an http(s) URL with a host")
    try:
        _ = parts.port
    except ValueError:
        raise ValueError(f"{url!r} has an invalid port") from None


def cluster_nickname(url: str) -> str:
    """``https://master.example.com:8443`` -> ``master-example-com:8443`` (default port filled)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
    if _is_ipv6(host):
        host = f"[{host}]"
    return f"{host}:{port}".replace(".", "-")


def _is_ipv6(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 6
    except ValueError:
        return False


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def node_kubeconfig(
    server_url: str,
    ca_pem: bytes,
    cert_pem: bytes,
    key_pem: bytes,
    user: str,
    namespace: str = DEFAULT_NAMESPACE,
) -> dict[str, Any]:
    """The kubeconfig mapping for a client certificate whose CN is ``user``."""
    cluster = cluster_nickname(server_url)
    user_nick = f"{user}/{cluster}"
    context = f"{namespace}/{cluster}/{user}"
    return {
        "apiVersion": "v1",
        "clusters": [
            {
                "cluster": {"certificate-authority-data": _b64(ca_pem), "server": server_url},
                "name": cluster,
            }
        ],
        "contexts": [
            {
                "context": {"cluster": cluster, "namespace": namespace, "user": user_nick},
                "name": context,
            }
        ],
        "current-context": context,
        "kind": "Config",
        "preferences": {},
        "users": [
            {
                "name": user_nick,
                "user": {
                    "client-certificate-data": _b64(cert_pem),
                    "client-key-data": _b64(key_pem),
                },
            }
        ],
    }


def dump_kubeconfig(config: dict[str, Any]) -> bytes:
    """YAML text of a kubeconfig mapping, keys sorted as Go writes them."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text = yaml.dump(config, Dumper=dumper, sort_keys=True, default_flow_style=False, width=1 << 20)
    return text.encode("utf-8")


def read_server(path: str) -> str:
    """The server URL of ``path``'s current context ("" when it names none).

    Raises ``OSError`` when the file cannot be read and ``ValueError`` when it is
    not a kubeconfig.
    """
    with open(path, encoding="utf-8") as stream:
        document = yaml.safe_load(stream)
    if not isinstance(document, dict):
        raise ValueError("not a kubeconfig (expected a mapping)")
    contexts = {c.get("name"): c.get("context") or {} for c in _entries(document, "contexts")}
    clusters = {c.get("name"): c.get("cluster") or {} for c in _entries(document, "clusters")}
    context = contexts.get(document.get("current-context")) or {}
    cluster = clusters.get(context.get("cluster")) or {}
    server = cluster.get("server") or ""
    return server if isinstance(server, str) else ""


def _entries(document: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = document.get(key) or []
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []

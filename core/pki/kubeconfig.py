"""The node's kubeconfig (Origin's ``create-kubeconfig``, :ref:`origin-node-kubeconfig`).

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
import functools
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from nodehost.config.hostport import join_host_port
from nodehost.fileread import KUBECONFIG_LIMIT, read_file

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

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
    return join_host_port(host, port).replace(".", "-")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def kubeconfig(
    server: str,
    credentials: Mapping[str, Any],
    *,
    names: tuple[str, str, str],
    ca_pem: bytes | None = None,
    insecure: bool = False,
    namespace: str | None = None,
) -> dict[str, Any]:
    """A kubeconfig mapping with one cluster, one user and one context, which is current.

    ``names`` are the cluster's, the user's and the context's; ``credentials``
    is the user entry (client certificate and key, data or files, or a token);
    the cluster is verified against ``ca_pem`` unless ``insecure``.
    """
    cluster_name, user_name, context_name = names
    cluster: dict[str, Any] = {"server": server}
    if ca_pem:
        cluster["certificate-authority-data"] = _b64(ca_pem)
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    context = {"cluster": cluster_name, "user": user_name}
    if namespace is not None:
        context["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user_name, "user": dict(credentials)}],
        "contexts": [{"name": context_name, "context": context}],
        "current-context": context_name,
        "preferences": {},
    }


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
    return kubeconfig(
        server_url,
        {"client-certificate-data": _b64(cert_pem), "client-key-data": _b64(key_pem)},
        names=(cluster, f"{user}/{cluster}", f"{namespace}/{cluster}/{user}"),
        ca_pem=ca_pem,
        namespace=namespace,
    )


def dump_kubeconfig(config: dict[str, Any]) -> bytes:
    """YAML text of a kubeconfig mapping, keys sorted as Go writes them."""
    from nodehost.config.dump import dump_yaml

    return dump_yaml(config, sort_keys=True).encode("utf-8")


def load_document(data: bytes) -> Any:
    """A kubeconfig's YAML through the one bounded loader (:mod:`nodehost.config.yamlsafe`:
    libyaml when PyYAML has it, the same limits as the node config); ``ValueError`` with the
    loader's one-line reason (line and column) when it cannot be loaded.

    Each call returns a document of its own, which the caller may change.  The same bytes
    always load to the same document, so bytes equal to the last ones loaded are not
    parsed again (:func:`_parsed`): judging and planning a config read
    ``masterKubeConfig`` three times in a row (the files it names, the kubelet's plan,
    the API route) and parse it once.  Only the last document is kept: a kubeconfig's
    keys do not outlive the next one loaded (a rotated client key, for one).
    """
    from nodehost.config.yamlsafe import unshared

    return unshared(_parsed(data))


@functools.lru_cache(maxsize=1)
def _parsed(data: bytes) -> Any:
    """The document ``data`` loads to (shared: :func:`load_document` hands out copies); a
    ``ValueError`` is raised anew for each call, never kept."""
    from nodehost.config.yamlsafe import YAMLFileError, parse_yaml_bytes

    try:
        return parse_yaml_bytes(data, KUBECONFIG_LIMIT).data
    except YAMLFileError as error:
        raise ValueError(str(error)) from None


def kubeconfig_entries(
    path: str | Path, required: str = ""
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(cluster, user) of the current context of kubeconfig ``path`` ({} when absent).

    With ``required`` (what to call the file, e.g. "bootstrap kubeconfig"), a
    missing or unreadable file raises ``RuntimeFailure`` instead.
    """
    from nodehost.errors import RuntimeFailure

    try:
        document = load_document(read_file(path, KUBECONFIG_LIMIT))
    except FileNotFoundError:
        if required:
            raise RuntimeFailure(f"unable to load {required}: {path} does not exist") from None
        return {}, {}
    except (OSError, ValueError) as error:
        if required:
            raise RuntimeFailure(f"unable to load {required} {path}: {_one_line(error)}") from None
        return {}, {}
    if not isinstance(document, dict):
        if required:
            raise RuntimeFailure(f"unable to load {required} {path}: not a kubeconfig")
        return {}, {}

    def named(key: str, name: Any) -> dict[str, Any]:
        for entry in document.get(key) or []:
            if isinstance(entry, dict) and entry.get("name") == name:
                return entry.get(key[:-1]) or {}
        return {}

    context = named("contexts", document.get("current-context"))
    return named("clusters", context.get("cluster")), named("users", context.get("user"))


def _one_line(error: BaseException) -> str:
    """An OS, loader or decoding error in one line."""
    if isinstance(error, OSError):
        return error.strerror or str(error)
    if isinstance(error, UnicodeDecodeError):
        return "not UTF-8 text"
    return " ".join(str(error).split())


def read_server(path: str) -> str:
    """The server URL of ``path``'s current context ("" when it names none or is unreadable)."""
    server = kubeconfig_entries(path)[0].get("server") or ""
    return server if isinstance(server, str) else ""


#: Entries of a kubeconfig that name files: (0 = cluster, 1 = user, key).
FILE_KEYS = ((0, "certificate-authority"), (1, "client-certificate"), (1, "client-key"))


def referenced_files(path: str) -> list[str]:
    """The files the current context of kubeconfig ``path`` names, made absolute ([] if none)."""
    entries = kubeconfig_entries(path)
    named = [entries[section].get(key) for section, key in FILE_KEYS]
    folder = os.path.dirname(os.path.abspath(path))
    return [os.path.join(folder, name) for name in named if isinstance(name, str) and name]

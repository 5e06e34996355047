"""Origin's v1 NodeConfig defaults, applied to the raw YAML mapping.

Mirrors ``SetDefaults_NodeConfig``, ``SetDefaults_ServingInfo``,
``SetDefaults_DockerConfig`` and ``SetDefaults_ClientConnectionOverrides`` of
Origin's ``apis/config/v1/defaults.go`` (:ref:`origin-defaults`), and
``SetProtobufClientDefaults`` (:ref:`origin-protobuf-defaults`).  "Unset" means what Go's zero value
means: a missing key, ``null``, ``""`` or ``0``.

Both functions take the raw mapping with Origin's key names and return a new
mapping; the argument is never modified.  A section of the wrong type (say a
list where ``authConfig`` belongs) is left alone: type checking reports it.

This module is also the one place the default values are spelled; the typed
schema (:mod:`nodehost.config.schema`) uses the constants below.
"""

from __future__ import annotations

import copy
import posixpath
from typing import Any

DEFAULT_QPS = 10.0
DEFAULT_BURST = 20
JSON_CONTENT_TYPE = "application/json"
PROTOBUF_CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
PROTOBUF_ACCEPT_CONTENT_TYPES = f"{PROTOBUF_CONTENT_TYPE},{JSON_CONTENT_TYPE}"
DEFAULT_MTU = 1450
DEFAULT_IPTABLES_SYNC_PERIOD = "30s"
DEFAULT_AUTH_CACHE_TTL = "5m"
DEFAULT_AUTH_CACHE_SIZE = 1000
DEFAULT_ENABLE_UNIDLING = True
DEFAULT_EXEC_HANDLER = "native"
DEFAULT_DOCKER_SHIM_SOCKET = "unix:///var/run/dockershim.sock"
DEFAULT_DOCKER_SHIM_ROOT_DIRECTORY = "/var/lib/dockershim"
DEFAULT_BIND_NETWORK = "tcp4"


def is_default_docker_shim_socket(endpoint: str) -> bool:
    """Whether ``endpoint`` names Origin's default dockershim socket.

    Both spellings count: ``unix:///var/run/dockershim.sock`` and the bare path
    ``/var/run/dockershim.sock``, which openshift-ansible 3.11 wrote and the
    kubelet of the day read as the same unix socket.
    """
    path = endpoint.removeprefix("unix://")
    return posixpath.normpath(path) == DEFAULT_DOCKER_SHIM_SOCKET.removeprefix("unix://")


def _unset(current: Any, default: Any) -> bool:
    """Whether ``current`` is Go's zero value for the default's type (missing, null, "" or 0).

    A value of another type (``mtu: ""``) is not "unset": type checking reports it.
    """
    if current is None:
        return True
    if isinstance(current, bool) or not isinstance(current, type(default)):
        return False
    return not current


def _section(raw: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The sub-mapping at ``key``, created when missing or null; ``None`` if it has another type."""
    value = raw.get(key)
    if value is None:
        value = raw[key] = {}
    return value if isinstance(value, dict) else None


def _default(section: dict[str, Any], key: str, value: Any) -> None:
    if _unset(section.get(key), value):
        section[key] = value


def _client_connection_defaults(overrides: dict[str, Any]) -> None:
    _default(overrides, "acceptContentTypes", JSON_CONTENT_TYPE)
    _default(overrides, "contentType", JSON_CONTENT_TYPE)


def apply_v1_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``raw`` with Origin's v1 NodeConfig defaults filled in.

    * ``masterClientConnectionOverrides`` null -> ``{qps: 10, burst: 20}``; then
      empty ``acceptContentTypes``/``contentType`` -> ``application/json``;
    * ``networkConfig.networkPluginName`` empty -> the deprecated top-level
      ``networkPluginName``; ``networkConfig.mtu`` 0 -> 1450;
    * ``iptablesSyncPeriod`` empty -> ``30s``;
    * ``authConfig`` TTLs empty -> ``5m``, sizes 0 -> 1000;
    * ``enableUnidling`` null -> ``true``;
    * ``dockerConfig``: ``execHandlerName`` -> ``native``, ``dockerShimSocket`` ->
      ``unix:///var/run/dockershim.sock``, ``dockerShimRootDirectory`` ->
      ``/var/lib/dockershim``;
    * ``servingInfo.bindNetwork`` empty -> ``tcp4``.
    """
    result = copy.deepcopy(raw)

    if result.get("masterClientConnectionOverrides") is None:
        result["masterClientConnectionOverrides"] = {"qps": DEFAULT_QPS, "burst": DEFAULT_BURST}
    overrides = _section(result, "masterClientConnectionOverrides")
    if overrides is not None:
        _client_connection_defaults(overrides)

    network = _section(result, "networkConfig")
    if network is not None:
        deprecated_name = result.get("networkPluginName")
        if _unset(network.get("networkPluginName"), "") and isinstance(deprecated_name, str):
            network["networkPluginName"] = deprecated_name
        _default(network, "mtu", DEFAULT_MTU)

    _default(result, "iptablesSyncPeriod", DEFAULT_IPTABLES_SYNC_PERIOD)

    auth = _section(result, "authConfig")
    if auth is not None:
        _default(auth, "authenticationCacheTTL", DEFAULT_AUTH_CACHE_TTL)
        _default(auth, "authenticationCacheSize", DEFAULT_AUTH_CACHE_SIZE)
        _default(auth, "authorizationCacheTTL", DEFAULT_AUTH_CACHE_TTL)
        _default(auth, "authorizationCacheSize", DEFAULT_AUTH_CACHE_SIZE)

    if result.get("enableUnidling") is None:
        result["enableUnidling"] = DEFAULT_ENABLE_UNIDLING

    docker = _section(result, "dockerConfig")
    if docker is not None:
        _default(docker, "execHandlerName", DEFAULT_EXEC_HANDLER)
        _default(docker, "dockerShimSocket", DEFAULT_DOCKER_SHIM_SOCKET)
        _default(docker, "dockerShimRootDirectory", DEFAULT_DOCKER_SHIM_ROOT_DIRECTORY)

    serving = _section(result, "servingInfo")
    if serving is not None:
        _default(serving, "bindNetwork", DEFAULT_BIND_NETWORK)

    return result


def set_protobuf_client_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``raw`` whose master client connection prefers protobuf
    (:ref:`origin-protobuf-defaults`).

    ``acceptContentTypes`` becomes
    ``application/vnd.kubernetes.protobuf,application/json``, ``contentType``
    ``application/vnd.kubernetes.protobuf``, and ``qps`` and ``burst`` are
    doubled.  A missing or null ``masterClientConnectionOverrides`` gets the v1
    defaults first (so the usual result is qps 20, burst 40), as Origin calls
    this only after defaulting.  Non-numeric qps/burst are left for type checking.
    """
    result = copy.deepcopy(raw)
    if result.get("masterClientConnectionOverrides") is None:
        result["masterClientConnectionOverrides"] = {"qps": DEFAULT_QPS, "burst": DEFAULT_BURST}
    overrides = result["masterClientConnectionOverrides"]
    if not isinstance(overrides, dict):
        return result
    overrides["acceptContentTypes"] = PROTOBUF_ACCEPT_CONTENT_TYPES
    overrides["contentType"] = PROTOBUF_CONTENT_TYPE
    for key in ("qps", "burst"):
        value = overrides.get(key, 0)
        if value is None:
            value = 0
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            overrides[key] = value * 2
    return result

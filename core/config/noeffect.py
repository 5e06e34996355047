"""NodeConfig keys nodehost reads and validates but does not act on, and why.

Origin's NodeConfig carries settings for parts nodehost does not have: Docker
and dockershim, the unidling proxy, the emptyDir quota patch, caches whose
size a current kubelet does not let anyone set.  A config that sets one of
them loads (Origin accepted it), and the key gets a warning at ``config
validate`` and ``start`` -- ``<key>: has no effect in nodehost: <why>`` -- so
nothing in a config is silently ignored.  Loading records the keys
(``NodeConfig.set_without_effect``); validation warns, in every scope.
:data:`NO_EFFECT` is the list (docs/reference/noeffect.rst renders it); a key counts as
set when the file has it with a value other than null.  Every other NodeConfig
key has a consumer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nodehost.pluginhost.records import Problem

_DOCKERSHIM = "dockershim, which it configured, left the kubelet in v1.24"

#: Field path -> why setting it changes nothing.
NO_EFFECT: Mapping[str, str] = {
    "allowDisabledDocker": (
        "there is no Docker to tolerate: the container runtime is containerd or the CRI "
        "endpoint configured"
    ),
    "enableUnidling": (
        "kube-proxy runs without Origin's unidling proxy; idled services are not woken"
    ),
    "volumeConfig.localQuota.perFSGroup": (
        "emptyDir volumes get no XFS quota: Origin patched its kubelet's emptyDir plugin, a "
        "current kubelet has no such setting"
    ),
    "dockerConfig.execHandlerName": _DOCKERSHIM,
    "dockerConfig.dockerShimRootDirectory": _DOCKERSHIM,
    "authConfig.authenticationCacheSize": (
        "the kubelet's webhook token cache has no size setting; its TTL is passed"
    ),
    "authConfig.authorizationCacheSize": (
        "the kubelet's webhook authorization cache has no size setting; its TTLs are passed"
    ),
    "servingInfo.namedCertificates": (
        "the kubelet serves one certificate (servingInfo.certFile); named certificates are "
        "only validated"
    ),
}


def keys_without_effect(raw: Mapping[str, Any], wrong: Iterable[str] = ()) -> tuple[str, ...]:
    """The keys of :data:`NO_EFFECT` that ``raw`` (the file's mapping) sets.

    Keys at or above a path in ``wrong`` (those with a type error) are left
    to that error.
    """
    wrong = list(wrong)
    return tuple(
        path
        for path in NO_EFFECT
        if _is_set(raw, path) and not any(_within(bad, path) for bad in wrong)
    )


def no_effect_problems(config: Any) -> list[Problem]:
    """A warning for each key the config's file set that nodehost does not act on."""
    return [Problem.no_effect(path, NO_EFFECT[path]) for path in config.set_without_effect]


def _within(path: str, ancestor: str) -> bool:
    return path == ancestor or path.startswith((ancestor + ".", ancestor + "["))


def _is_set(raw: Mapping[str, Any], path: str) -> bool:
    value: Any = raw
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return False
        value = value[key]
    return value is not None

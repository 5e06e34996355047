"""Keys nodehost does not act on: a warning each, and an audit that every other key has a use."""

from __future__ import annotations

from typing import Any

import pytest

from nodehost.config import node_config_from_mapping
from nodehost.config.noeffect import NO_EFFECT
from nodehost.config.schema import Kind, NodeConfig, field_specs, join_path
from nodehost.config.validate import validate_node_config
from nodehost.pluginhost.records import ProblemKind, Severity, ValidationScope

#: Every other NodeConfig field and what acts on it.  A new field must be added here or to
#: NO_EFFECT: the audit test fails until it is.
CONSUMERS = {
    "nodeName": "kubelet --hostname-override, kube-proxy, bootstrap's CSR",
    "nodeIP": "kubelet --node-ip, bridge provider, dnsIP 0.0.0.0",
    "servingInfo.bindAddress": "kubelet --address/--port, kube-proxy bind address",
    "servingInfo.bindNetwork": "validation only (tcp6 refused), as in Origin",
    "servingInfo.certFile": "kubelet --tls-cert-file",
    "servingInfo.keyFile": "kubelet --tls-private-key-file",
    "servingInfo.clientCA": "kubelet --client-ca-file",
    "servingInfo.minTLSVersion": "kubelet --tls-min-version",
    "servingInfo.cipherSuites": "kubelet --tls-cipher-suites",
    "masterKubeConfig": "kubelet, kube-proxy, DNS, bootstrap",
    "masterClientConnectionOverrides.contentType": "kube-proxy clientConnection",
    "masterClientConnectionOverrides.qps": "kube-proxy clientConnection",
    "masterClientConnectionOverrides.burst": "kube-proxy clientConnection",
    "masterClientConnectionOverrides.acceptContentTypes": "kube-proxy clientConnection",
    "dnsDomain": "kubelet --cluster-domain, DNS server",
    "dnsIP": "kubelet --cluster-dns",
    "dnsBindAddress": "DNS server",
    "dnsNameservers": "DNS server forwarding",
    "dnsRecursiveResolvConf": "DNS server forwarding",
    "networkPluginName": "sdn (the deprecated alias of networkConfig's)",
    "networkConfig.networkPluginName": "sdn",
    "networkConfig.mtu": "network providers (bridge)",
    "volumeDirectory": "kubelet --root-dir",
    "imageConfig.format": "kubelet --pod-infra-container-image, containerd sandbox_image",
    "imageConfig.latest": "the same, ${version} = latest",
    "podManifestConfig.path": "kubelet --pod-manifest-path",
    "podManifestConfig.fileCheckIntervalSeconds": "kubelet --file-check-frequency",
    "authConfig.authenticationCacheTTL": "kubelet --authentication-token-webhook-cache-ttl",
    "authConfig.authorizationCacheTTL": "kubelet --authorization-webhook-cache-*-ttl",
    "dockerConfig.dockerShimSocket": "kubelet runtime endpoint, runtime component",
    "kubeletArguments": "kubelet",
    "proxyArguments": "kube-proxy",
    "iptablesSyncPeriod": "kube-proxy --iptables-sync-period",
}


def leaf_paths(cls: type, parent: str = "") -> list[str]:
    """Every field path of a schema dataclass, objects descended into."""
    paths = []
    for _, spec in field_specs(cls):
        path = join_path(parent, spec.key)
        nested = spec.nested if spec.kind in (Kind.OBJECT, Kind.OPTIONAL_OBJECT) else None
        paths.extend(leaf_paths(nested, path) if nested else [path])
    return paths


def test_every_nodeconfig_field_has_a_consumer_or_a_warning() -> None:
    paths = set(leaf_paths(NodeConfig))
    assert paths == set(CONSUMERS) | set(NO_EFFECT)
    assert not set(CONSUMERS) & set(NO_EFFECT)


def nested(path: str, value: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    target = raw
    *parents, last = path.split(".")
    for key in parents:
        target = target.setdefault(key, {})
    target[last] = value
    return raw


VALUES = {
    "allowDisabledDocker": True,
    "enableUnidling": True,
    "volumeConfig.localQuota.perFSGroup": "512Mi",
    "dockerConfig.execHandlerName": "native",
    "dockerConfig.dockerShimRootDirectory": "/var/lib/dockershim",
    "authConfig.authenticationCacheSize": 1000,
    "authConfig.authorizationCacheSize": 1000,
    "servingInfo.namedCertificates": [],
}


def no_effect(raw: dict[str, Any], scope: ValidationScope = ValidationScope.NODE) -> list[Any]:
    config, _ = node_config_from_mapping(raw)
    return [p for p in validate_node_config(config, scope) if p.kind is ProblemKind.NO_EFFECT]


@pytest.mark.parametrize("path", sorted(NO_EFFECT))
@pytest.mark.parametrize("scope", list(ValidationScope))
def test_a_key_without_effect_is_one_warning_naming_it_and_why(
    path: str, scope: ValidationScope
) -> None:
    [problem] = no_effect(nested(path, VALUES[path]), scope)
    assert problem.severity is Severity.WARNING and problem.path == path
    assert problem.render() == f"{path}: has no effect in nodehost: {NO_EFFECT[path]}"


@pytest.mark.parametrize("path", sorted(NO_EFFECT))
def test_an_absent_or_null_key_gets_no_warning(path: str) -> None:
    for raw in ({}, nested(path, None)):
        assert no_effect(raw) == []


def test_a_key_with_a_type_error_is_left_to_that_error() -> None:
    config, problems = node_config_from_mapping({"enableUnidling": "yes please"})
    assert [p.path for p in problems] == ["enableUnidling"]
    assert config.set_without_effect == ()

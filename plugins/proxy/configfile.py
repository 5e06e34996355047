"""kube-proxy's config file, ``KubeProxyConfiguration``, as data: its kind, fields and defaults.

:func:`check_kube_proxy_configuration` checks such a file read back (the
stand-in refuses what it reports); :func:`kube_proxy_healthz_address` says
where kube-proxy serves ``/healthz`` given the file's addresses.  The fields a
flag sets are in the flag table (:data:`nodehost.plugins.proxy.flags.KUBE_PROXY_FLAGS`).
"""

from __future__ import annotations

from typing import Any

from nodehost.config.hostport import parse_ip, split_host_port
from nodehost.plugins.proxy.flags import KUBE_PROXY_FLAGS

KUBE_PROXY_CONFIG_API_VERSION = "kubeproxy.config.k8s.io/v1alpha1"
KUBE_PROXY_CONFIG_KIND = "KubeProxyConfiguration"

KUBE_PROXY_HEALTHZ_BIND_ADDRESS = "0.0.0.0:10256"
KUBE_PROXY_HEALTHZ_PORT = 10256
KUBE_PROXY_METRICS_BIND_ADDRESS = "127.0.0.1:10249"
#: The proxy modes a current kube-proxy supports on Linux.
PROXY_MODES = ("iptables", "ipvs", "nftables")

#: Nested fields nodehost may write into a KubeProxyConfiguration that no flag sets.
KUBE_PROXY_NESTED_FIELDS = frozenset({"clientConnection.acceptContentTypes"})

#: The top-level fields of ``KubeProxyConfiguration`` (v1alpha1), besides apiVersion/kind.
KUBE_PROXY_CONFIG_FIELDS = frozenset(
    {
        "featureGates",
        "clientConnection",
        "logging",
        "hostnameOverride",
        "bindAddress",
        "healthzBindAddress",
        "metricsBindAddress",
        "bindAddressHardFail",
        "enableProfiling",
        "showHiddenMetricsForVersion",
        "mode",
        "iptables",
        "ipvs",
        "nftables",
        "winkernel",
        "detectLocalMode",
        "detectLocal",
        "clusterCIDR",
        "nodePortAddresses",
        "oomScoreAdj",
        "conntrack",
        "configSyncPeriod",
        "portRange",
        "windowsRunAsService",
    }
)


def check_kube_proxy_configuration(document: Any) -> list[str]:
    """Problems with a ``KubeProxyConfiguration`` document, one line each (empty: fine).

    A mapping with this ``apiVersion`` and ``kind``, only known fields at the
    top and inside the structures the flags reach (a current kube-proxy
    decodes strictly first), a value of the right type for every field a flag
    sets, and a supported ``mode``.
    """
    problems = KUBE_PROXY_FLAGS.check_document(
        document,
        api_version=KUBE_PROXY_CONFIG_API_VERSION,
        kind=KUBE_PROXY_CONFIG_KIND,
        fields=KUBE_PROXY_CONFIG_FIELDS,
        nested=KUBE_PROXY_NESTED_FIELDS,
    )
    mode = document.get("mode") if isinstance(document, dict) else None
    if mode not in (None, "", *PROXY_MODES):
        supported = ", ".join(f'"{name}"' for name in PROXY_MODES)
        problems.append(f'mode: Unsupported value: "{mode}": supported values: {supported}')
    return problems


def kube_proxy_healthz_address(
    healthz_bind_address: str, bind_address: str = ""
) -> tuple[str, int]:
    """Where kube-proxy serves ``/healthz`` given its config's two addresses.

    As kube-proxy defaults them: an empty ``healthzBindAddress`` means
    ``0.0.0.0:10256`` (``[::]:10256`` when ``bindAddress`` is IPv6) -- it cannot
    be turned off from a config file -- and an IP alone gets port 10256.
    """
    if not healthz_bind_address:
        ip = parse_ip(bind_address)
        return ("::" if ip is not None and ip.version == 6 else "0.0.0.0"), KUBE_PROXY_HEALTHZ_PORT
    if parse_ip(healthz_bind_address) is not None:
        return healthz_bind_address, KUBE_PROXY_HEALTHZ_PORT
    host, port = split_host_port(healthz_bind_address)
    return host, int(port)

"""kube-proxy's program interface: its flags and its ``KubeProxyConfiguration`` file.

Target: a current kube-proxy (v1.33/v1.34, Linux build).  One behaviour
shapes how nodehost passes ``proxyArguments``: when ``--config`` is given, a
current kube-proxy takes its whole configuration from the file and *ignores*
the flags that map to config fields (only the logging flags,
``--hostname-override`` and ``--master`` still apply).  So a flag with a
``config_field`` must be written into the file to take effect; the others go
on the command line.

``--healthz-port`` and ``--metrics-port`` (deprecated) have no field of their
own: they set the port part of ``healthzBindAddress``/``metricsBindAddress``
(0 disables the server); the proxy plugin applies them that way.

:data:`REMOVED_FLAGS` lists Origin-era kube-proxy flags a current kube-proxy
rejects, with what replaced each; :meth:`FlagSet.translate` drops or renames them.
"""

from __future__ import annotations

from typing import Any

from nodehost.config.hostport import parse_ip, split_host_port
from nodehost.kube.flags import Flag, FlagSet, RemovedFlag
from nodehost.kube.values import (
    BoolValue,
    DurationValue,
    Float32Value,
    Int32Value,
    IPPortValue,
    IPValue,
    MapStringBoolValue,
    QuantityValue,
    StringSliceValue,
    StringValue,
    VerbosityValue,
    VersionValue,
    VModuleValue,
    text_value,
)

PROGRAM = "kube-proxy"
CONFIG_API_VERSION = "kubeproxy.config.k8s.io/v1alpha1"
CONFIG_KIND = "KubeProxyConfiguration"

DEFAULT_HEALTHZ_BIND_ADDRESS = "0.0.0.0:10256"
DEFAULT_HEALTHZ_PORT = 10256
DEFAULT_METRICS_BIND_ADDRESS = "127.0.0.1:10249"
#: The proxy modes a current kube-proxy supports on Linux.
PROXY_MODES = ("iptables", "ipvs", "nftables")

_PORT_FLAG_DEPRECATION = (
    "This flag is deprecated and will be removed in a future release. Please use --{} instead."
)

_FLAGS = (
    Flag("config", StringValue),
    Flag("write-config-to", StringValue),
    Flag("cleanup", BoolValue),
    Flag("init-only", BoolValue),
    Flag("master", StringValue),
    Flag("feature-gates", MapStringBoolValue, config_field="featureGates"),
    Flag("kubeconfig", StringValue, config_field="clientConnection.kubeconfig"),
    Flag("kube-api-content-type", StringValue, config_field="clientConnection.contentType"),
    Flag("kube-api-burst", Int32Value, config_field="clientConnection.burst"),
    Flag("kube-api-qps", Float32Value, config_field="clientConnection.qps"),
    Flag("hostname-override", StringValue, config_field="hostnameOverride"),
    Flag("bind-address", IPValue, config_field="bindAddress"),
    Flag("healthz-bind-address", IPPortValue, config_field="healthzBindAddress"),
    Flag("metrics-bind-address", IPPortValue, config_field="metricsBindAddress"),
    Flag("bind-address-hard-fail", BoolValue, config_field="bindAddressHardFail"),
    Flag("profiling", BoolValue, config_field="enableProfiling"),
    Flag(
        "show-hidden-metrics-for-version",
        StringValue,
        config_field="showHiddenMetricsForVersion",
    ),
    Flag("proxy-mode", text_value("ProxyMode"), config_field="mode"),
    Flag("iptables-masquerade-bit", Int32Value, config_field="iptables.masqueradeBit"),
    Flag("masquerade-all", BoolValue, config_field="iptables.masqueradeAll"),
    Flag("iptables-localhost-nodeports", BoolValue, config_field="iptables.localhostNodePorts"),
    Flag("iptables-sync-period", DurationValue, config_field="iptables.syncPeriod"),
    Flag("iptables-min-sync-period", DurationValue, config_field="iptables.minSyncPeriod"),
    Flag("ipvs-sync-period", DurationValue, config_field="ipvs.syncPeriod"),
    Flag("ipvs-min-sync-period", DurationValue, config_field="ipvs.minSyncPeriod"),
    Flag("ipvs-scheduler", StringValue, config_field="ipvs.scheduler"),
    Flag("ipvs-exclude-cidrs", StringSliceValue, config_field="ipvs.excludeCIDRs"),
    Flag("ipvs-strict-arp", BoolValue, config_field="ipvs.strictARP"),
    Flag("ipvs-tcp-timeout", DurationValue, config_field="ipvs.tcpTimeout"),
    Flag("ipvs-tcpfin-timeout", DurationValue, config_field="ipvs.tcpFinTimeout"),
    Flag("ipvs-udp-timeout", DurationValue, config_field="ipvs.udpTimeout"),
    Flag("detect-local-mode", text_value("LocalMode"), config_field="detectLocalMode"),
    Flag("pod-bridge-interface", StringValue, config_field="detectLocal.bridgeInterface"),
    Flag("pod-interface-name-prefix", StringValue, config_field="detectLocal.interfaceNamePrefix"),
    Flag("cluster-cidr", StringValue, config_field="clusterCIDR"),
    Flag("nodeport-addresses", StringSliceValue, config_field="nodePortAddresses"),
    Flag("oom-score-adj", Int32Value, config_field="oomScoreAdj"),
    Flag("conntrack-max-per-core", Int32Value, config_field="conntrack.maxPerCore"),
    Flag("conntrack-min", Int32Value, config_field="conntrack.min"),
    Flag(
        "conntrack-tcp-timeout-established",
        DurationValue,
        config_field="conntrack.tcpEstablishedTimeout",
    ),
    Flag(
        "conntrack-tcp-timeout-close-wait",
        DurationValue,
        config_field="conntrack.tcpCloseWaitTimeout",
    ),
    Flag("conntrack-tcp-be-liberal", BoolValue, config_field="conntrack.tcpBeLiberal"),
    Flag("conntrack-udp-timeout", DurationValue, config_field="conntrack.udpTimeout"),
    Flag("conntrack-udp-timeout-stream", DurationValue, config_field="conntrack.udpStreamTimeout"),
    Flag("config-sync-period", DurationValue, config_field="configSyncPeriod"),
    Flag(
        "healthz-port",
        Int32Value,
        deprecated=_PORT_FLAG_DEPRECATION.format("healthz-bind-address"),
    ),
    Flag(
        "metrics-port",
        Int32Value,
        deprecated=_PORT_FLAG_DEPRECATION.format("metrics-bind-address"),
    ),
    # component-base logging flags: kube-proxy copies them over its config file.
    Flag("v", VerbosityValue, shorthand="v"),
    Flag("vmodule", VModuleValue),
    Flag("log-flush-frequency", DurationValue),
    Flag("logging-format", StringValue),
    Flag("log-text-split-stream", BoolValue),
    Flag("log-text-info-buffer-size", QuantityValue),
    Flag("log-json-split-stream", BoolValue),
    Flag("log-json-info-buffer-size", QuantityValue),
    Flag("help", BoolValue, shorthand="h"),
    Flag("version", VersionValue),
)

#: Origin-era kube-proxy flags a current kube-proxy rejects (see :meth:`FlagSet.translate`).
REMOVED_FLAGS = (
    RemovedFlag("resource-container", "v1.16", "run kube-proxy in the cgroup you want"),
    RemovedFlag("cleanup-iptables", "v1.15", "renamed", "cleanup"),
    RemovedFlag("proxy-port-range", "v1.29", "the userspace proxy was removed"),
    RemovedFlag("udp-timeout", "v1.29", "the userspace proxy was removed"),
)

#: The top-level fields of ``KubeProxyConfiguration`` (v1alpha1), besides apiVersion/kind.
#: Nested fields nodehost may write that no flag sets.
NESTED_FIELDS = frozenset({"clientConnection.acceptContentTypes"})

CONFIG_FIELDS = frozenset(
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


#: Every flag a current kube-proxy accepts, and those it no longer does.
KUBE_PROXY_FLAGS = FlagSet(PROGRAM, _FLAGS, REMOVED_FLAGS)


def check_configuration(document: Any) -> list[str]:
    """Problems with a ``KubeProxyConfiguration`` document, one line each (empty: fine).

    A mapping with this ``apiVersion`` and ``kind``, only known top-level
    fields (a current kube-proxy decodes strictly first), a value of the right
    type for every field a flag sets, and a supported ``mode``.
    """
    problems = KUBE_PROXY_FLAGS.check_document(
        document,
        api_version=CONFIG_API_VERSION,
        kind=CONFIG_KIND,
        fields=CONFIG_FIELDS,
        nested=NESTED_FIELDS,
    )
    mode = document.get("mode") if isinstance(document, dict) else None
    if mode not in (None, "", *PROXY_MODES):
        supported = ", ".join(f'"{name}"' for name in PROXY_MODES)
        problems.append(f'mode: Unsupported value: "{mode}": supported values: {supported}')
    return problems


def healthz_address(healthz_bind_address: str, bind_address: str = "") -> tuple[str, int]:
    """Where kube-proxy serves ``/healthz`` given its config's two addresses.

    As kube-proxy defaults them: an empty ``healthzBindAddress`` means
    ``0.0.0.0:10256`` (``[::]:10256`` when ``bindAddress`` is IPv6) -- it cannot
    be turned off from a config file -- and an IP alone gets port 10256.
    """
    if not healthz_bind_address:
        ip = parse_ip(bind_address)
        return ("::" if ip is not None and ip.version == 6 else "0.0.0.0"), DEFAULT_HEALTHZ_PORT
    if parse_ip(healthz_bind_address) is not None:
        return healthz_bind_address, DEFAULT_HEALTHZ_PORT
    host, port = split_host_port(healthz_bind_address)
    return host, int(port)

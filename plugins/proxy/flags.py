"""kube-proxy's flags, as data: every flag a current kube-proxy accepts, and those it has removed.

:data:`KUBE_PROXY_FLAGS` is a :class:`~nodehost.kube.flags.FlagSet` whose
flags name the ``KubeProxyConfiguration`` field they set (``config_field``);
the plugin writes kube-proxy's command line and config file from it
(:mod:`nodehost.plugins.proxy.configuration`), validates ``proxyArguments``
against it, and the stand-in (:mod:`nodehost.plugins.proxy.standin`) accepts
exactly what it accepts.  The config file itself is
:mod:`nodehost.plugins.proxy.configfile`.  The table is held to the upstream
listing as the kubelet's is (:mod:`nodehost.plugins.kubelet.flags`).

**Target**: a current kube-proxy (v1.33/v1.34, Linux build).  One behaviour
shapes how nodehost passes ``proxyArguments``: when ``--config`` is given, a
current kube-proxy takes its whole configuration from the file and *ignores*
the flags that map to config fields (only the logging flags,
``--hostname-override`` and ``--master`` still apply).  So a flag with a
``config_field`` must be written into the file to take effect; the others go
on the command line.  ``--healthz-port`` and ``--metrics-port`` (deprecated)
have no field of their own: they set the port part of
``healthzBindAddress``/``metricsBindAddress`` (0 disables the server); the
proxy plugin applies them that way.  :data:`KUBE_PROXY_REMOVED_FLAGS` lists
Origin-era kube-proxy flags a current kube-proxy rejects, with what replaced
each.
"""

from __future__ import annotations

from nodehost.kube.flags import COBRA_HELP_REASON, NEWER_LOGGING_REASON, Flag, FlagSet, RemovedFlag
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

KUBE_PROXY = "kube-proxy"

_PORT_FLAG_DEPRECATION = (
    "This flag is deprecated and will be removed in a future release. Please use --{} instead."
)

_KUBE_PROXY_FLAG_LIST = (
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
    # Still registered (options.go), but it has done nothing since the userspace proxy went.
    Flag(
        "proxy-port-range",
        text_value("port-range"),
        deprecated="This flag has no effect and will be removed in a future release.",
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
KUBE_PROXY_REMOVED_FLAGS = (
    RemovedFlag("resource-container", "v1.16", "run kube-proxy in the cgroup you want"),
    RemovedFlag("cleanup-iptables", "v1.15", "renamed", "cleanup"),
    RemovedFlag("udp-timeout", "v1.29", "the userspace proxy was removed"),
)

#: The kube-proxy flags the table has that the upstream listing does not, each with why.
KUBE_PROXY_FLAGS_NOT_IN_SOURCES: dict[str, str] = {
    "log-text-split-stream": NEWER_LOGGING_REASON,
    "log-text-info-buffer-size": NEWER_LOGGING_REASON,
    "help": COBRA_HELP_REASON,
    "version": "verflag.AddFlags (server.go's NewProxyCommand), outside the pinned options.go",
}

#: Every flag a current kube-proxy accepts, and those it no longer does.
KUBE_PROXY_FLAGS = FlagSet(KUBE_PROXY, _KUBE_PROXY_FLAG_LIST, KUBE_PROXY_REMOVED_FLAGS)

"""The programs nodehost runs, as data: each one's flags and its config file.

Two programs, each with its flag set (a :class:`~nodehost.kube.flags.FlagSet`
whose flags name the config-file field they set, ``config_field``), the kind
of its config file and a check of such a file read back:

* the kubelet (:data:`KUBELET_FLAGS`, ``KubeletConfiguration``,
  :func:`check_kubelet_configuration`);
* kube-proxy (:data:`KUBE_PROXY_FLAGS`, ``KubeProxyConfiguration``,
  :func:`check_kube_proxy_configuration`).

The components that run them (the ``kubelet`` and ``proxy`` plugins) write
their command lines and files from these tables; the stand-ins of
:mod:`nodehost.testing.programs` accept exactly what the tables accept.

**Where the tables come from.**  ``tools/kubeflags.py`` reads the Go files
that register the flags, at pinned upstream commits, and writes
``tools/upstream-flags.json`` (each flag's pflag type, deprecation, shorthand);
``tests/kube/test_upstream_flag_listing.py`` holds these tables to it.  What
the tables know beyond that listing is an explicit overlay: the config fields
(``config_field``), the flags the listing's sources do not register
(:data:`KUBELET_FLAGS_NOT_IN_SOURCES`, :data:`KUBE_PROXY_FLAGS_NOT_IN_SOURCES`,
each with its reason), the cAdvisor flags' Go types (cAdvisor defines them),
and the flags removed since (:data:`KUBELET_REMOVED_FLAGS`).

**The kubelet.**  Target: a current kubelet -- the flag set of ``kubelet
--help`` in v1.33/v1.34 (Linux build, with the JSON log format registered as
in the released binary).  The pinned kubelet sources are of the v1.28-v1.30
line (the newest available when the listing was made); the overlay says
where v1.33/v1.34 differ.  Flags that set a ``KubeletConfiguration`` field name
that field; upstream marks all of those deprecated in favour of the
``--config`` file, but every one is still accepted, and a flag given on the
command line overrides the file.

:data:`KUBELET_REMOVED_FLAGS` lists flags that Origin's kubelet accepted
(Origin 3.x computed several of them, and old ``kubeletArguments`` often carry
them) which a current kubelet rejects: each with the release that removed it,
why, and the current flag that took over, if any.  :meth:`FlagSet.translate`
renames or drops them, so an Origin config keeps loading; the kubelet plugin
warns about each.  Of Origin's computed flags (:ref:`origin-kubelet-arguments`) this drops
``require-kubeconfig``, ``allow-privileged``, ``cadvisor-port``,
``host-network-sources``, ``host-pid-sources``, ``host-ipc-sources``,
``containerized``, ``experimental-dockershim-root-directory``,
``network-plugin`` and ``iptables-masquerade-bit``; ``pod-infra-container-image``
is still accepted (deprecated, removed in v1.35) but no longer computed.

**kube-proxy.**  Target: a current kube-proxy (v1.33/v1.34, Linux build).  One
behaviour shapes how nodehost passes ``proxyArguments``: when ``--config`` is
given, a current kube-proxy takes its whole configuration from the file and
*ignores* the flags that map to config fields (only the logging flags,
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

import functools
from pathlib import Path
from typing import Any

from nodehost.config.hostport import parse_ip, split_host_port
from nodehost.kube.flags import Flag, FlagSet, RemovedFlag
from nodehost.kube.values import (
    BoolValue,
    ColonMultimapValue,
    ConfigurationMapValue,
    DurationValue,
    Float32Value,
    Int32Value,
    Int64Value,
    IPPortValue,
    IPValue,
    MapStringBoolValue,
    MapStringStringValue,
    QuantityValue,
    ReservedMemoryValue,
    StringSliceValue,
    StringValue,
    TaintsValue,
    VerbosityValue,
    VersionValue,
    VModuleValue,
    text_value,
)

KUBELET = "kubelet"
KUBELET_CONFIG_API_VERSION = "kubelet.config.k8s.io/v1beta1"
KUBELET_CONFIG_KIND = "KubeletConfiguration"

#: Where the kubelet serves ``/healthz`` when its config does not say otherwise.
KUBELET_HEALTHZ_BIND_ADDRESS = "127.0.0.1"
KUBELET_HEALTHZ_PORT = 10248

#: The certificate files the kubelet keeps in ``--cert-dir`` (client-go's
#: certificate ``FileStore``): ``<prefix>-current.pem`` is the pair in use.
KUBELET_CLIENT_CERT_PREFIX = "kubelet-client"
KUBELET_SERVING_CERT_PREFIX = "kubelet-server"


def kubelet_current_cert(cert_dir: str | Path, prefix: str) -> Path:
    """The ``<prefix>-current.pem`` file of ``cert_dir``: the pair the kubelet reads."""
    return Path(cert_dir) / f"{prefix}-current.pem"


#: The deprecation text upstream attaches to every flag backed by a config field.
KUBELET_CONFIG_FLAG_DEPRECATION = (
    "This parameter should be set via the config file specified by the Kubelet's --config flag. "
    "See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more "
    "information."
)
_EVICTION = "Use --eviction-hard or --eviction-soft instead. Will be removed in a future version."

_CADVISOR = (
    "This is a cadvisor flag that was mistakenly registered with the Kubelet. Due to legacy "
    "concerns, it will follow the standard CLI deprecation timeline before being removed."
)
#: cAdvisor's deprecated flags, as globalflags_linux.go registers them, with their Go types.
_CADVISOR_FLAGS = (
    ("application-metrics-count-limit", Int64Value),
    ("boot-id-file", StringValue),
    ("container-hints", StringValue),
    ("containerd", StringValue),
    ("enable-load-reader", BoolValue),
    ("event-storage-age-limit", StringValue),
    ("event-storage-event-limit", StringValue),
    ("global-housekeeping-interval", DurationValue),
    ("log-cadvisor-usage", BoolValue),
    ("machine-id-file", StringValue),
    ("storage-driver-user", StringValue),
    ("storage-driver-password", StringValue),
    ("storage-driver-host", StringValue),
    ("storage-driver-db", StringValue),
    ("storage-driver-table", StringValue),
    ("storage-driver-secure", BoolValue),
    ("storage-driver-buffer-duration", DurationValue),
    ("containerd-namespace", StringValue),
)

_NO_SPLIT = functools.partial(MapStringStringValue, no_split=True)
_LANGLE = functools.partial(MapStringStringValue, separator="<")


def _cfg(name: str, value: Any, config_field: str) -> Flag:
    """A deprecated flag that sets ``config_field`` of KubeletConfiguration."""
    return Flag(name, value, deprecated=KUBELET_CONFIG_FLAG_DEPRECATION, config_field=config_field)


_COMMAND_LINE_FLAGS = (
    # KubeletFlags: identity and paths that never go into the shared config file.
    Flag("config", StringValue),
    Flag("config-dir", StringValue),
    Flag("kubeconfig", StringValue),
    Flag("bootstrap-kubeconfig", StringValue),
    Flag("hostname-override", StringValue),
    Flag("node-ip", StringValue),
    Flag("cert-dir", StringValue),
    Flag("cloud-provider", StringValue),
    Flag("root-dir", StringValue),
    Flag("node-labels", ConfigurationMapValue),
    Flag("lock-file", StringValue),
    Flag("exit-on-lock-contention", BoolValue),
    Flag("runtime-cgroups", StringValue),
    Flag("image-credential-provider-config", StringValue),
    Flag("image-credential-provider-bin-dir", StringValue),
    # A KubeletFlags flag (the pinned options.go): on the command line, not deprecated, even
    # though KubeletConfiguration has a seccompDefault field too.
    Flag("seccomp-default", BoolValue),
    Flag(
        "pod-infra-container-image",
        StringValue,
        deprecated="will be removed in 1.35. Image garbage collector will get sandbox image "
        "information from CRI.",
    ),
    Flag("minimum-container-ttl-duration", DurationValue, deprecated=_EVICTION),
    Flag("maximum-dead-containers-per-container", Int32Value, deprecated=_EVICTION),
    Flag("maximum-dead-containers", Int32Value, deprecated=_EVICTION),
    Flag(
        "experimental-mounter-path",
        StringValue,
        deprecated="will be removed in 1.25 or later. in favor of using CSI.",
    ),
    Flag(
        "experimental-allocatable-ignore-eviction",
        BoolValue,
        deprecated="will be removed in 1.25 or later.",
    ),
    # cAdvisor's global flags the kubelet re-registers (globalflags_linux.go): one used,
    # eighteen deprecated; underscores in their Go names read as dashes.
    Flag("housekeeping-interval", DurationValue),
    *(Flag(name, value, deprecated=_CADVISOR) for name, value in _CADVISOR_FLAGS),
    # component-base logging flags that stay on the command line (not deprecated).
    Flag("v", VerbosityValue, shorthand="v"),
    Flag("vmodule", VModuleValue),
    Flag("log-flush-frequency", DurationValue),
    Flag("help", BoolValue, shorthand="h"),
    Flag("version", VersionValue),
)

_CONFIG_FLAGS = (
    _cfg("enable-server", BoolValue, "enableServer"),
    # Added in v1.31 by AddKubeletConfigFlags (see KUBELET_FLAGS_NOT_IN_SOURCES).
    _cfg("fail-cgroupv1", BoolValue, "failCgroupV1"),
    _cfg("fail-swap-on", BoolValue, "failSwapOn"),
    _cfg("pod-manifest-path", StringValue, "staticPodPath"),
    _cfg("sync-frequency", DurationValue, "syncFrequency"),
    _cfg("file-check-frequency", DurationValue, "fileCheckFrequency"),
    _cfg("http-check-frequency", DurationValue, "httpCheckFrequency"),
    _cfg("manifest-url", StringValue, "staticPodURL"),
    _cfg("manifest-url-header", ColonMultimapValue, "staticPodURLHeader"),
    _cfg("address", IPValue, "address"),
    _cfg("port", Int32Value, "port"),
    _cfg("read-only-port", Int32Value, "readOnlyPort"),
    _cfg("container-runtime-endpoint", StringValue, "containerRuntimeEndpoint"),
    _cfg("image-service-endpoint", StringValue, "imageServiceEndpoint"),
    _cfg("anonymous-auth", BoolValue, "authentication.anonymous.enabled"),
    _cfg("authentication-token-webhook", BoolValue, "authentication.webhook.enabled"),
    _cfg(
        "authentication-token-webhook-cache-ttl", DurationValue, "authentication.webhook.cacheTTL"
    ),
    _cfg("client-ca-file", StringValue, "authentication.x509.clientCAFile"),
    _cfg("authorization-mode", StringValue, "authorization.mode"),
    _cfg(
        "authorization-webhook-cache-authorized-ttl",
        DurationValue,
        "authorization.webhook.cacheAuthorizedTTL",
    ),
    _cfg(
        "authorization-webhook-cache-unauthorized-ttl",
        DurationValue,
        "authorization.webhook.cacheUnauthorizedTTL",
    ),
    _cfg("tls-cert-file", StringValue, "tlsCertFile"),
    _cfg("tls-private-key-file", StringValue, "tlsPrivateKeyFile"),
    _cfg("rotate-server-certificates", BoolValue, "serverTLSBootstrap"),
    _cfg("tls-cipher-suites", StringSliceValue, "tlsCipherSuites"),
    _cfg("tls-min-version", StringValue, "tlsMinVersion"),
    _cfg("rotate-certificates", BoolValue, "rotateCertificates"),
    _cfg("registry-qps", Int32Value, "registryPullQPS"),
    _cfg("registry-burst", Int32Value, "registryBurst"),
    _cfg("event-qps", Int32Value, "eventRecordQPS"),
    _cfg("event-burst", Int32Value, "eventBurst"),
    _cfg("enable-debugging-handlers", BoolValue, "enableDebuggingHandlers"),
    _cfg("contention-profiling", BoolValue, "enableContentionProfiling"),
    _cfg("healthz-port", Int32Value, "healthzPort"),
    _cfg("healthz-bind-address", IPValue, "healthzBindAddress"),
    _cfg("oom-score-adj", Int32Value, "oomScoreAdj"),
    _cfg("cluster-domain", StringValue, "clusterDomain"),
    _cfg("volume-plugin-dir", StringValue, "volumePluginDir"),
    _cfg("cluster-dns", StringSliceValue, "clusterDNS"),
    _cfg("streaming-connection-idle-timeout", DurationValue, "streamingConnectionIdleTimeout"),
    _cfg("node-status-update-frequency", DurationValue, "nodeStatusUpdateFrequency"),
    _cfg("minimum-image-ttl-duration", DurationValue, "imageMinimumGCAge"),
    _cfg("image-gc-high-threshold", Int32Value, "imageGCHighThresholdPercent"),
    _cfg("image-gc-low-threshold", Int32Value, "imageGCLowThresholdPercent"),
    _cfg("volume-stats-agg-period", DurationValue, "volumeStatsAggPeriod"),
    _cfg("feature-gates", MapStringBoolValue, "featureGates"),
    _cfg("kubelet-cgroups", StringValue, "kubeletCgroups"),
    _cfg("system-cgroups", StringValue, "systemCgroups"),
    Flag("provider-id", StringValue, config_field="providerID"),  # not deprecated upstream
    _cfg("cgroups-per-qos", BoolValue, "cgroupsPerQOS"),
    _cfg("cgroup-driver", StringValue, "cgroupDriver"),
    _cfg("cgroup-root", StringValue, "cgroupRoot"),
    _cfg("cpu-manager-policy", StringValue, "cpuManagerPolicy"),
    _cfg("cpu-manager-policy-options", _NO_SPLIT, "cpuManagerPolicyOptions"),
    _cfg("cpu-manager-reconcile-period", DurationValue, "cpuManagerReconcilePeriod"),
    _cfg("qos-reserved", MapStringStringValue, "qosReserved"),
    _cfg("topology-manager-policy", StringValue, "topologyManagerPolicy"),
    _cfg("runtime-request-timeout", DurationValue, "runtimeRequestTimeout"),
    _cfg("hairpin-mode", StringValue, "hairpinMode"),
    _cfg("max-pods", Int32Value, "maxPods"),
    _cfg("pod-cidr", StringValue, "podCIDR"),
    _cfg("pod-max-pids", Int64Value, "podPidsLimit"),
    _cfg("resolv-conf", StringValue, "resolvConf"),
    _cfg("runonce", BoolValue, "runOnce"),
    _cfg("cpu-cfs-quota", BoolValue, "cpuCFSQuota"),
    _cfg("cpu-cfs-quota-period", DurationValue, "cpuCFSQuotaPeriod"),
    _cfg("enable-controller-attach-detach", BoolValue, "enableControllerAttachDetach"),
    _cfg("make-iptables-util-chains", BoolValue, "makeIPTablesUtilChains"),
    _cfg("container-log-max-size", StringValue, "containerLogMaxSize"),
    _cfg("container-log-max-files", Int32Value, "containerLogMaxFiles"),
    _cfg("allowed-unsafe-sysctls", StringSliceValue, "allowedUnsafeSysctls"),
    _cfg("node-status-max-images", Int32Value, "nodeStatusMaxImages"),
    _cfg("kernel-memcg-notification", BoolValue, "kernelMemcgNotification"),
    _cfg("local-storage-capacity-isolation", BoolValue, "localStorageCapacityIsolation"),
    _cfg("max-open-files", Int64Value, "maxOpenFiles"),
    _cfg("kube-api-content-type", StringValue, "contentType"),
    _cfg("kube-api-qps", Int32Value, "kubeAPIQPS"),
    _cfg("kube-api-burst", Int32Value, "kubeAPIBurst"),
    _cfg("serialize-image-pulls", BoolValue, "serializeImagePulls"),
    _cfg("eviction-hard", _LANGLE, "evictionHard"),
    _cfg("eviction-soft", _LANGLE, "evictionSoft"),
    _cfg("eviction-soft-grace-period", MapStringStringValue, "evictionSoftGracePeriod"),
    _cfg("eviction-pressure-transition-period", DurationValue, "evictionPressureTransitionPeriod"),
    _cfg("eviction-max-pod-grace-period", Int32Value, "evictionMaxPodGracePeriod"),
    _cfg("eviction-minimum-reclaim", MapStringStringValue, "evictionMinimumReclaim"),
    _cfg("pods-per-core", Int32Value, "podsPerCore"),
    _cfg("protect-kernel-defaults", BoolValue, "protectKernelDefaults"),
    _cfg("reserved-cpus", StringValue, "reservedSystemCPUs"),
    _cfg("topology-manager-scope", StringValue, "topologyManagerScope"),
    _cfg("topology-manager-policy-options", _NO_SPLIT, "topologyManagerPolicyOptions"),
    _cfg("system-reserved", MapStringStringValue, "systemReserved"),
    _cfg("kube-reserved", MapStringStringValue, "kubeReserved"),
    _cfg("enforce-node-allocatable", StringSliceValue, "enforceNodeAllocatable"),
    _cfg("system-reserved-cgroup", StringValue, "systemReservedCgroup"),
    _cfg("kube-reserved-cgroup", StringValue, "kubeReservedCgroup"),
    _cfg("logging-format", StringValue, "logging.format"),
    _cfg("log-text-split-stream", BoolValue, "logging.options.text.splitStream"),
    _cfg("log-text-info-buffer-size", QuantityValue, "logging.options.text.infoBufferSize"),
    _cfg("log-json-split-stream", BoolValue, "logging.options.json.splitStream"),
    _cfg("log-json-info-buffer-size", QuantityValue, "logging.options.json.infoBufferSize"),
    _cfg("memory-manager-policy", StringValue, "memoryManagerPolicy"),
    _cfg("reserved-memory", ReservedMemoryValue, "reservedMemory"),
    _cfg("register-node", BoolValue, "registerNode"),
    _cfg("register-with-taints", TaintsValue, "registerWithTaints"),
)

_R = RemovedFlag
_CNI = "CNI is configured in the container runtime"
_NAMESPACES = "host namespaces are governed by Pod Security admission"

#: Flags Origin's kubelet accepted that a current kubelet rejects (see :meth:`FlagSet.translate`).
KUBELET_REMOVED_FLAGS = (
    _R("api-servers", "v1.8", "the API server comes from kubeconfig"),
    _R("low-diskspace-threshold-mb", "v1.8", "replaced by eviction thresholds"),
    _R("require-kubeconfig", "v1.10", "--kubeconfig alone selects API server mode"),
    _R("experimental-bootstrap-kubeconfig", "v1.10", "renamed", "bootstrap-kubeconfig"),
    _R("cadvisor-port", "v1.12", "the kubelet no longer serves cAdvisor on its own port"),
    _R("allow-privileged", "v1.15", "privileged pods are governed by Pod Security admission"),
    _R("host-network-sources", "v1.15", _NAMESPACES),
    _R("host-pid-sources", "v1.15", _NAMESPACES),
    _R("host-ipc-sources", "v1.15", _NAMESPACES),
    _R("containerized", "v1.16", "the kubelet runs on the host"),
    _R("resource-container", "v1.16", "renamed", "kubelet-cgroups"),
    _R("system-container", "v1.16", "renamed", "system-cgroups"),
    _R("experimental-kernel-memcg-notification", "v1.20", "renamed", "kernel-memcg-notification"),
    _R("enable-cadvisor-json-endpoints", "v1.21", "the endpoints are gone"),
    _R("experimental-dockershim-root-directory", "v1.24", "dockershim was removed"),
    _R("docker-endpoint", "v1.24", "dockershim was removed; the runtime is a CRI endpoint"),
    _R("image-pull-progress-deadline", "v1.24", "dockershim was removed"),
    _R("network-plugin", "v1.24", _CNI),
    _R("network-plugin-mtu", "v1.24", _CNI),
    _R("cni-bin-dir", "v1.24", _CNI),
    _R("cni-conf-dir", "v1.24", _CNI),
    _R("cni-cache-dir", "v1.24", _CNI),
    _R("non-masquerade-cidr", "v1.24", "masquerading belongs to kube-proxy or the CNI plugin"),
    _R("dynamic-config-dir", "v1.24", "dynamic kubelet configuration is gone"),
    _R("container-runtime", "v1.27", "every runtime is a CRI endpoint"),
    _R("master-service-namespace", "v1.27", "service links no longer depend on it"),
    _R("experimental-check-node-capabilities-before-mount", "v1.27", "mounts use CSI"),
    _R("azure-container-registry-config", "v1.30", "use an image credential provider"),
    _R("iptables-masquerade-bit", "v1.31", "kube-proxy owns the masquerade mark"),
    _R("iptables-drop-bit", "v1.31", "the kubelet no longer creates KUBE-MARK-DROP"),
    _R("keep-terminated-pod-volumes", "v1.31", "volumes are unmounted when pods terminate"),
    _R("register-schedulable", "v1.33", "use register-with-taints"),
    _R("cloud-config", "v1.33", "cloud providers run outside the kubelet"),
)

#: The top-level fields of ``KubeletConfiguration`` (v1beta1, as of v1.34), besides apiVersion/kind.
KUBELET_CONFIG_FIELDS = frozenset(
    {
        "enableServer",
        "staticPodPath",
        "podLogsDir",
        "syncFrequency",
        "fileCheckFrequency",
        "httpCheckFrequency",
        "staticPodURL",
        "staticPodURLHeader",
        "address",
        "port",
        "readOnlyPort",
        "tlsCertFile",
        "tlsPrivateKeyFile",
        "tlsCipherSuites",
        "tlsCurvePreferences",
        "tlsMinVersion",
        "rotateCertificates",
        "serverTLSBootstrap",
        "authentication",
        "authorization",
        "registryPullQPS",
        "registryBurst",
        "imagePullCredentialsVerificationPolicy",
        "preloadedImagesVerificationAllowlist",
        "eventRecordQPS",
        "eventBurst",
        "enableDebuggingHandlers",
        "enableContentionProfiling",
        "healthzPort",
        "healthzBindAddress",
        "oomScoreAdj",
        "clusterDomain",
        "clusterDNS",
        "streamingConnectionIdleTimeout",
        "nodeStatusUpdateFrequency",
        "nodeStatusReportFrequency",
        "nodeLeaseDurationSeconds",
        "imageMinimumGCAge",
        "imageMaximumGCAge",
        "imageGCHighThresholdPercent",
        "imageGCLowThresholdPercent",
        "volumeStatsAggPeriod",
        "kubeletCgroups",
        "systemCgroups",
        "cgroupRoot",
        "cgroupsPerQOS",
        "cgroupDriver",
        "cpuManagerPolicy",
        "singleProcessOOMKill",
        "cpuManagerPolicyOptions",
        "cpuManagerReconcilePeriod",
        "draManagerReconcilePeriod",
        "memoryManagerPolicy",
        "topologyManagerPolicy",
        "topologyManagerScope",
        "topologyManagerPolicyOptions",
        "qosReserved",
        "runtimeRequestTimeout",
        "hairpinMode",
        "maxPods",
        "podCIDR",
        "podPidsLimit",
        "resolvConf",
        "runOnce",
        "cpuCFSQuota",
        "cpuCFSQuotaPeriod",
        "nodeStatusMaxImages",
        "maxOpenFiles",
        "contentType",
        "kubeAPIQPS",
        "kubeAPIBurst",
        "serializeImagePulls",
        "maxParallelImagePulls",
        "evictionHard",
        "evictionSoft",
        "evictionSoftGracePeriod",
        "evictionPressureTransitionPeriod",
        "evictionMaxPodGracePeriod",
        "evictionMinimumReclaim",
        "mergeDefaultEvictionSettings",
        "podsPerCore",
        "enableControllerAttachDetach",
        "protectKernelDefaults",
        "makeIPTablesUtilChains",
        "iptablesMasqueradeBit",
        "iptablesDropBit",
        "featureGates",
        "failSwapOn",
        "memorySwap",
        "containerLogMaxSize",
        "containerLogMaxFiles",
        "containerLogMaxWorkers",
        "containerLogMonitorInterval",
        "configMapAndSecretChangeDetectionStrategy",
        "systemReserved",
        "kubeReserved",
        "reservedSystemCPUs",
        "showHiddenMetricsForVersion",
        "systemReservedCgroup",
        "kubeReservedCgroup",
        "enforceNodeAllocatable",
        "allowedUnsafeSysctls",
        "volumePluginDir",
        "providerID",
        "kernelMemcgNotification",
        "logging",
        "enableSystemLogHandler",
        "enableSystemLogQuery",
        "shutdownGracePeriod",
        "shutdownGracePeriodCriticalPods",
        "shutdownGracePeriodByPodPriority",
        "crashLoopBackOff",
        "reservedMemory",
        "enableProfilingHandler",
        "enableDebugFlagsHandler",
        "seccompDefault",
        "memoryThrottlingFactor",
        "memoryReservationPolicy",
        "registerWithTaints",
        "registerNode",
        "tracing",
        "localStorageCapacityIsolation",
        "containerRuntimeEndpoint",
        "imageServiceEndpoint",
        "failCgroupV1",
        "userNamespaces",
    }
)


_CONTAINER_RUNTIME_OPTIONS = (
    "registered by ContainerRuntimeOptions.AddFlags (pkg/kubelet/config/flags.go), which the "
    "listing does not expand: the stored copies of that file are older than the pinned options.go"
)
_NEWER_LOGGING = (
    "a component-base logging flag (logsapi.AddFlags) newer than the pinned logs options.go, "
    "which registers only the JSON split-stream pair"
)
_COBRA_HELP = "cobra registers -h/--help on every command"
_VERFLAG = "verflag.AddFlags (globalflags.go); the stored copies of that file predate the others"

#: The kubelet flags the table has that the upstream listing (``tools/upstream-flags.json``,
#: from ``tools/kubeflags.py``) does not, each with why.  Upstream flags the table lacks are
#: :data:`KUBELET_REMOVED_FLAGS`, removed after the release line of the pinned sources.
KUBELET_FLAGS_NOT_IN_SOURCES: dict[str, str] = {
    "runtime-cgroups": _CONTAINER_RUNTIME_OPTIONS,
    "image-credential-provider-config": _CONTAINER_RUNTIME_OPTIONS,
    "image-credential-provider-bin-dir": _CONTAINER_RUNTIME_OPTIONS,
    "pod-infra-container-image": _CONTAINER_RUNTIME_OPTIONS,
    "fail-cgroupv1": "added by AddKubeletConfigFlags in v1.31, after the pinned options.go",
    "log-text-split-stream": _NEWER_LOGGING,
    "log-text-info-buffer-size": _NEWER_LOGGING,
    "help": _COBRA_HELP,
    "version": _VERFLAG,
}

#: Every flag a current kubelet accepts, and those it no longer does.
KUBELET_FLAGS = FlagSet(KUBELET, _COMMAND_LINE_FLAGS + _CONFIG_FLAGS, KUBELET_REMOVED_FLAGS)


def check_kubelet_configuration(document: Any) -> list[str]:
    """Problems with a ``KubeletConfiguration`` document, one line each (empty: fine).

    Checks what the stand-in enforces: a mapping with this ``apiVersion`` and
    ``kind``, only known fields at the top and inside the structures the flags
    reach (``authentication.x509.bogus`` is refused), and a value of the right
    type for every field a flag sets.  (The real kubelet falls back to lenient decoding
    of v1beta1 and only warns about unknown fields; the stand-in is strict so
    that nodehost never writes one.)
    """
    return KUBELET_FLAGS.check_document(
        document,
        api_version=KUBELET_CONFIG_API_VERSION,
        kind=KUBELET_CONFIG_KIND,
        fields=KUBELET_CONFIG_FIELDS,
    )


# --- kube-proxy ---------------------------------------------------------------------

KUBE_PROXY = "kube-proxy"
KUBE_PROXY_CONFIG_API_VERSION = "kubeproxy.config.k8s.io/v1alpha1"
KUBE_PROXY_CONFIG_KIND = "KubeProxyConfiguration"

KUBE_PROXY_HEALTHZ_BIND_ADDRESS = "0.0.0.0:10256"
KUBE_PROXY_HEALTHZ_PORT = 10256
KUBE_PROXY_METRICS_BIND_ADDRESS = "127.0.0.1:10249"
#: The proxy modes a current kube-proxy supports on Linux.
PROXY_MODES = ("iptables", "ipvs", "nftables")

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

#: The top-level fields of ``KubeProxyConfiguration`` (v1alpha1), besides apiVersion/kind.
#: Nested fields nodehost may write into a KubeProxyConfiguration that no flag sets.
KUBE_PROXY_NESTED_FIELDS = frozenset({"clientConnection.acceptContentTypes"})

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


#: The kube-proxy flags the table has that the upstream listing does not, each with why.
KUBE_PROXY_FLAGS_NOT_IN_SOURCES: dict[str, str] = {
    "log-text-split-stream": _NEWER_LOGGING,
    "log-text-info-buffer-size": _NEWER_LOGGING,
    "help": _COBRA_HELP,
    "version": "verflag.AddFlags (server.go's NewProxyCommand), outside the pinned options.go",
}

#: Every flag a current kube-proxy accepts, and those it no longer does.
KUBE_PROXY_FLAGS = FlagSet(KUBE_PROXY, _KUBE_PROXY_FLAG_LIST, KUBE_PROXY_REMOVED_FLAGS)


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

"""The kubelet's flags, as data: every flag a current kubelet accepts, and those it no longer does.

:data:`KUBELET_FLAGS` is a :class:`~nodehost.kube.flags.FlagSet` whose flags
name the ``KubeletConfiguration`` field they set (``config_field``); the
plugin writes the kubelet's command line and config file from it
(:mod:`nodehost.plugins.kubelet.arguments`), validates ``kubeletArguments``
against it, and the stand-in (:mod:`nodehost.plugins.kubelet.standin`) accepts
exactly what it accepts.  The config file itself is
:mod:`nodehost.plugins.kubelet.configfile`.

**Where the table comes from.**  ``tools/kubeflags.py`` reads the Go files
that register the flags, at pinned upstream commits, and writes
``tools/upstream-flags.json`` (each flag's pflag type, deprecation, shorthand);
``tests/kube/test_upstream_flag_listing.py`` holds the table to it.
What the table knows beyond that listing is an explicit overlay: the config
fields (``config_field``), the flags the listing's sources do not register
(:data:`KUBELET_FLAGS_NOT_IN_SOURCES`, each with its reason), the cAdvisor
flags' Go types (cAdvisor defines them), and the flags removed since
(:data:`KUBELET_REMOVED_FLAGS`).

**Target**: a current kubelet -- the flag set of ``kubelet --help`` in
v1.33/v1.34 (Linux build, with the JSON log format registered as in the
released binary).  The pinned kubelet sources are of the v1.28-v1.30 line (the
newest available when the listing was made); the overlay says where
v1.33/v1.34 differ.  Flags that set a ``KubeletConfiguration`` field name that
field; upstream marks all of those deprecated in favour of the ``--config``
file, but every one is still accepted, and a flag given on the command line
overrides the file.

:data:`KUBELET_REMOVED_FLAGS` lists flags that Origin's kubelet accepted
(Origin 3.x computed several of them, and old ``kubeletArguments`` often carry
them) which a current kubelet rejects: each with the release that removed it,
why, and the current flag that took over, if any.
:meth:`~nodehost.kube.flags.FlagSet.translate` renames or drops them, so an
Origin config keeps loading; the kubelet plugin warns about each.  Of Origin's
computed flags (:ref:`origin-kubelet-arguments`) this drops ``require-kubeconfig``,
``allow-privileged``, ``cadvisor-port``, ``host-network-sources``,
``host-pid-sources``, ``host-ipc-sources``, ``containerized``,
``experimental-dockershim-root-directory``, ``network-plugin`` and
``iptables-masquerade-bit``; ``pod-infra-container-image`` is still accepted
(deprecated, removed in v1.35) but no longer computed.
"""

from __future__ import annotations

import functools
from typing import Any

from nodehost.kube.flags import (
    COBRA_HELP_REASON,
    NEWER_LOGGING_REASON,
    Flag,
    FlagSet,
    RemovedFlag,
)
from nodehost.kube.values import (
    BoolValue,
    ColonMultimapValue,
    ConfigurationMapValue,
    DurationValue,
    Int32Value,
    Int64Value,
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
)

KUBELET = "kubelet"

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


_CONTAINER_RUNTIME_OPTIONS = (
    "registered by ContainerRuntimeOptions.AddFlags (pkg/kubelet/config/flags.go), which the "
    "listing does not expand: the stored copies of that file are older than the pinned options.go"
)
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
    "log-text-split-stream": NEWER_LOGGING_REASON,
    "log-text-info-buffer-size": NEWER_LOGGING_REASON,
    "help": COBRA_HELP_REASON,
    "version": _VERFLAG,
}

#: Every flag a current kubelet accepts, and those it no longer does.
KUBELET_FLAGS = FlagSet(KUBELET, _COMMAND_LINE_FLAGS + _CONFIG_FLAGS, KUBELET_REMOVED_FLAGS)

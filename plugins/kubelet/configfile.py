"""The kubelet's config file, ``KubeletConfiguration``, as data: its kind, fields and defaults.

:func:`check_kubelet_configuration` checks such a file read back (the
stand-in refuses what it reports); the fields a flag sets are in the flag
table (:data:`nodehost.plugins.kubelet.flags.KUBELET_FLAGS`).
"""

from __future__ import annotations

from typing import Any

from nodehost.plugins.kubelet.flags import KUBELET_FLAGS

KUBELET_CONFIG_API_VERSION = "kubelet.config.k8s.io/v1beta1"
KUBELET_CONFIG_KIND = "KubeletConfiguration"

#: Where the kubelet serves ``/healthz`` when its config does not say otherwise.
KUBELET_HEALTHZ_BIND_ADDRESS = "127.0.0.1"
KUBELET_HEALTHZ_PORT = 10248

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

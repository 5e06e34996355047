"""The kubelet's flag table: a current kubelet's flags, their types, fields and removals."""

from __future__ import annotations

import pytest

from nodehost.kube.values import (
    BoolValue,
    DurationValue,
    Int32Value,
    IPValue,
    MapStringBoolValue,
    StringSliceValue,
    StringValue,
)
from nodehost.plugins.kubelet import configfile, flags

FLAGS = flags.KUBELET_FLAGS


#: The flags cmd/kubelet/app/options/globalflags_linux.go (v1.33/v1.34) re-registers from
#: cAdvisor: housekeeping_interval, then the eighteen it marks deprecated, as pflag names them.
CADVISOR_DEPRECATED = [
    "application_metrics_count_limit",
    "boot_id_file",
    "container_hints",
    "containerd",
    "enable_load_reader",
    "event_storage_age_limit",
    "event_storage_event_limit",
    "global_housekeeping_interval",
    "log_cadvisor_usage",
    "machine_id_file",
    "storage_driver_user",
    "storage_driver_password",
    "storage_driver_host",
    "storage_driver_db",
    "storage_driver_table",
    "storage_driver_secure",
    "storage_driver_buffer_duration",
    "containerd-namespace",
]


def test_cadvisors_flags_are_accepted_and_18_of_them_deprecated() -> None:
    assert len(CADVISOR_DEPRECATED) == 18
    assert FLAGS.lookup("housekeeping-interval").deprecated == ""
    for name in CADVISOR_DEPRECATED:
        flag = FLAGS.lookup(name.replace("_", "-"))
        assert flag is not None, name
        assert flag.deprecated.startswith("This is a cadvisor flag that was mistakenly registered")


def test_housekeeping_interval_in_kubelet_arguments_resolves() -> None:
    assert FLAGS.resolve({"housekeeping-interval": ["10s"]}).errors == []


def test_fail_cgroupv1_is_a_config_flag_as_add_kubelet_config_flags_registers_it() -> None:
    flag = FLAGS.lookup("fail-cgroupv1")
    assert flag.config_field == "failCgroupV1"
    assert flag.deprecated == flags.KUBELET_CONFIG_FLAG_DEPRECATION


def test_seccomp_default_is_a_kubelet_flags_flag_on_the_command_line() -> None:
    """KubeletFlags registers it (not AddKubeletConfigFlags): not deprecated, no field."""
    flag = FLAGS.lookup("seccomp-default")
    assert (flag.config_field, flag.deprecated) == ("", "")


@pytest.mark.parametrize(
    ("name", "value_type", "config_field"),
    [
        ("port", Int32Value, "port"),
        ("address", IPValue, "address"),
        ("read-only-port", Int32Value, "readOnlyPort"),
        ("healthz-port", Int32Value, "healthzPort"),
        ("healthz-bind-address", IPValue, "healthzBindAddress"),
        ("cluster-dns", StringSliceValue, "clusterDNS"),
        ("authentication-token-webhook", BoolValue, "authentication.webhook.enabled"),
        (
            "authentication-token-webhook-cache-ttl",
            DurationValue,
            "authentication.webhook.cacheTTL",
        ),
        ("client-ca-file", StringValue, "authentication.x509.clientCAFile"),
        ("authorization-mode", StringValue, "authorization.mode"),
        ("tls-cipher-suites", StringSliceValue, "tlsCipherSuites"),
        ("pod-manifest-path", StringValue, "staticPodPath"),
        ("feature-gates", MapStringBoolValue, "featureGates"),
        ("container-runtime-endpoint", StringValue, "containerRuntimeEndpoint"),
        ("max-pods", Int32Value, "maxPods"),
    ],
)
def test_config_backed_flags_name_their_kubelet_configuration_field(
    name: str, value_type: type, config_field: str
) -> None:
    flag = FLAGS.lookup(name)
    assert flag is not None
    assert isinstance(flag.new_value(), value_type)
    assert flag.config_field == config_field


@pytest.mark.parametrize(
    "name",
    [
        "config",
        "config-dir",
        "kubeconfig",
        "bootstrap-kubeconfig",
        "hostname-override",
        "node-ip",
        "cert-dir",
        "root-dir",
        "node-labels",
        "v",
        "vmodule",
        "log-flush-frequency",
        "seccomp-default",
    ],
)
def test_identity_and_logging_flags_stay_on_the_command_line(name: str) -> None:
    flag = FLAGS.lookup(name)
    assert flag is not None and flag.config_field == "" and flag.deprecated == ""


def test_every_config_field_starts_with_a_known_top_level_field() -> None:
    for flag in FLAGS:
        if flag.config_field:
            assert flag.config_field.split(".")[0] in configfile.KUBELET_CONFIG_FIELDS, flag.name


def test_config_backed_flags_carry_upstreams_deprecation_except_provider_id() -> None:
    for flag in FLAGS:
        if flag.config_field and flag.name != "provider-id":
            assert flag.deprecated == flags.KUBELET_CONFIG_FLAG_DEPRECATION, flag.name
    assert FLAGS.lookup("provider-id").deprecated == ""


def test_pod_infra_container_image_is_accepted_but_deprecated() -> None:
    assert "will be removed in 1.35" in FLAGS.lookup("pod-infra-container-image").deprecated


@pytest.mark.parametrize(
    "name",
    [
        "require-kubeconfig",
        "allow-privileged",
        "cadvisor-port",
        "host-network-sources",
        "containerized",
        "experimental-dockershim-root-directory",
        "network-plugin",
        "iptables-masquerade-bit",
        "keep-terminated-pod-volumes",
        "register-schedulable",
        "cloud-config",
    ],
)
def test_flags_removed_from_current_kubelets_are_not_accepted_but_known(name: str) -> None:
    assert FLAGS.lookup(name) is None
    assert name in FLAGS.removed


def test_every_replacement_of_a_removed_flag_is_a_current_flag() -> None:
    for removed in FLAGS.removed.values():
        if removed.replacement:
            assert FLAGS.lookup(removed.replacement) is not None, removed.name


def test_origins_validation_test_gives_exactly_its_two_errors() -> None:
    """Origin's ``TestFailingKubeletArgs`` (:ref:`origin-validation-tests`), against the current
    kubelet's flags."""
    errors = FLAGS.resolve({"port": ["invalid-value"], "missing-key": ["value"]}).errors
    assert sorted((e.key, e.value, e.detail) for e in errors) == [
        ("missing-key", "missing-key", "is not a valid flag"),
        (
            "port",
            "invalid-value",
            'could not be set: strconv.ParseInt: parsing "invalid-value": invalid syntax',
        ),
    ]


def test_check_configuration_accepts_a_minimal_document() -> None:
    document = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "healthzPort": 10248,
        "authentication": {"webhook": {"enabled": True, "cacheTTL": "2m"}},
    }
    assert configfile.check_kubelet_configuration(document) == []


def test_check_configuration_rejects_another_kind() -> None:
    document = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeProxyConfiguration"}
    assert configfile.check_kubelet_configuration(document) == [
        "kind: expected 'KubeletConfiguration', got 'KubeProxyConfiguration'"
    ]

"""The kubelet's arguments: every row of :ref:`origin-kubelet-arguments`, overrides,
removals, :ref:`origin-kubelet-required-settings` and :ref:`origin-write-flags`."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodehost.config.tls import DEFAULT_CIPHER_SUITES
from nodehost.plugins.kubelet import arguments as args


@pytest.fixture
def computed(make_config):
    """The merged arguments of a config built from changes, no contributions."""

    def compute(contributions=None, **changes):
        return args.kubelet_arguments(make_config(**changes), contributions or {}).arguments

    return compute


# --- :ref:`origin-kubelet-arguments`, row by row --------------------------------------------------


def test_address_and_port_come_from_the_serving_bind_address(computed) -> None:
    arguments = computed(servingInfo={"bindAddress": "10.1.2.3:10251"})
    assert arguments["address"] == ["10.1.2.3"]
    assert arguments["port"] == ["10251"]


def test_a_bind_address_without_port_cannot_be_parsed(make_config) -> None:
    config = make_config(servingInfo={"bindAddress": "10.1.2.3"})
    with pytest.raises(args.ArgumentsError) as caught:
        args.kubelet_arguments(config, {})
    assert str(caught.value) == (
        "cannot parse node address: address 10.1.2.3: missing port in address"
    )


def test_identity_and_paths_come_from_node_config(computed, tmp_path: Path) -> None:
    arguments = computed()
    node = tmp_path / "node"
    assert arguments["kubeconfig"] == [str(node / "node.kubeconfig")]
    assert arguments["root-dir"] == [str(node / "volumes")]
    assert arguments["node-ip"] == ["10.0.0.2"]
    assert arguments["hostname-override"] == ["node1.example.com"]


def test_empty_node_ip_is_passed_empty_as_origin_did(computed) -> None:
    assert computed(nodeIP="")["node-ip"] == [""]


def test_static_pods_come_from_the_pod_manifest_config(computed, tmp_path: Path) -> None:
    arguments = computed(podManifestConfig={"path": "manifests", "fileCheckIntervalSeconds": 7})
    assert arguments["pod-manifest-path"] == [str(tmp_path / "node" / "manifests")]
    assert arguments["file-check-frequency"] == ["7s"]


def test_without_pod_manifest_config_the_path_is_empty_and_the_interval_zero(computed) -> None:
    arguments = computed()
    assert arguments["pod-manifest-path"] == [""]
    assert arguments["file-check-frequency"] == ["0s"]


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("register-node", "true"),
        ("read-only-port", "0"),
        ("http-check-frequency", "0s"),
        ("max-pods", "250"),
        ("pods-per-core", "10"),
        ("cgroup-driver", "systemd"),
        ("authentication-token-webhook", "true"),
        ("anonymous-auth", "true"),
        ("authorization-mode", "Webhook"),
    ],
)
def test_fixed_settings_have_origins_values(computed, flag: str, value: str) -> None:
    assert computed()[flag] == [value]


def test_cluster_dns_and_domain_come_from_dns_settings(computed) -> None:
    arguments = computed()
    assert arguments["cluster-dns"] == ["10.0.0.10"]
    assert arguments["cluster-domain"] == ["cluster.local"]


def test_healthz_is_set_explicitly_to_the_kubelet_defaults_for_readiness(computed) -> None:
    arguments = computed()
    assert arguments["healthz-port"] == ["10248"]
    assert arguments["healthz-bind-address"] == ["127.0.0.1"]


def test_origins_default_dockershim_socket_becomes_containerds(computed) -> None:
    arguments = computed()
    assert arguments["container-runtime-endpoint"] == ["unix:///run/containerd/containerd.sock"]
    assert arguments["image-service-endpoint"] == ["unix:///run/containerd/containerd.sock"]


def test_another_runtime_socket_is_passed_as_origin_did(computed) -> None:
    arguments = computed(dockerConfig={"dockerShimSocket": "unix:///run/crio/crio.sock"})
    assert arguments["container-runtime-endpoint"] == ["unix:///run/crio/crio.sock"]
    assert arguments["image-service-endpoint"] == ["unix:///run/crio/crio.sock"]


def test_webhook_cache_ttls_come_from_auth_config(computed) -> None:
    arguments = computed(
        authConfig={"authenticationCacheTTL": "2m", "authorizationCacheTTL": "90s"}
    )
    assert arguments["authentication-token-webhook-cache-ttl"] == ["2m"]
    assert arguments["authorization-webhook-cache-authorized-ttl"] == ["90s"]
    assert arguments["authorization-webhook-cache-unauthorized-ttl"] == ["90s"]


def test_serving_certificates_and_client_ca_come_from_serving_info(computed, tmp_path) -> None:
    arguments = computed()
    node = tmp_path / "node"
    assert arguments["tls-cert-file"] == [str(node / "server.crt")]
    assert arguments["tls-private-key-file"] == [str(node / "server.key")]
    assert arguments["client-ca-file"] == [str(node / "ca.crt")]


def test_tls_defaults_are_origins_cipher_list_and_tls12(computed) -> None:
    arguments = computed()
    assert arguments["tls-cipher-suites"] == list(DEFAULT_CIPHER_SUITES)
    assert arguments["tls-min-version"] == ["VersionTLS12"]


def test_configured_tls_settings_are_passed_one_value_per_cipher(computed) -> None:
    suites = ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"]
    arguments = computed(servingInfo={"minTLSVersion": "VersionTLS11", "cipherSuites": suites})
    assert arguments["tls-cipher-suites"] == suites
    assert arguments["tls-min-version"] == ["VersionTLS11"]


@pytest.mark.parametrize(
    "flag",
    [
        "require-kubeconfig",
        "allow-privileged",
        "cadvisor-port",
        "host-network-sources",
        "host-pid-sources",
        "host-ipc-sources",
        "containerized",
        "experimental-dockershim-root-directory",
        "network-plugin",
        "iptables-masquerade-bit",
    ],
)
def test_rows_a_current_kubelet_no_longer_takes_are_not_computed(computed, flag: str) -> None:
    assert flag not in computed()


def test_the_pod_infra_image_is_the_image_format_expanded_for_pod(computed, monkeypatch) -> None:
    monkeypatch.delenv("OPENSHIFT_POD_IMAGE", raising=False)
    assert computed()["pod-infra-container-image"] == ["openshift/origin-pod:v3.11.0"]
    latest = computed(imageConfig={"format": "r.example/p-${component}:$version", "latest": True})
    assert latest["pod-infra-container-image"] == ["r.example/p-pod:latest"]


def test_openshift_pod_image_replaces_the_template_for_the_pod_image(computed, monkeypatch) -> None:
    monkeypatch.setenv("OPENSHIFT_POD_IMAGE", "mirror.example/pause:${version}")
    assert computed()["pod-infra-container-image"] == ["mirror.example/pause:v3.11.0"]


def test_a_template_with_an_unknown_variable_cannot_compute_the_arguments(make_config) -> None:
    config = make_config(imageConfig={"format": "x/${component}:${build}"})
    with pytest.raises(args.ArgumentsError, match=r'the key "build" in .* is not recognized'):
        args.kubelet_arguments(config, {})


def test_every_computed_key_is_a_current_kubelet_flag(computed) -> None:
    from nodehost.plugins.kubelet.flags import KUBELET_FLAGS

    assert KUBELET_FLAGS.resolve(computed()).errors == []


# --- overrides ------------------------------------------------------------------------------


def test_a_kubelet_argument_replaces_the_computed_value(computed) -> None:
    assert computed(kubeletArguments={"max-pods": ["100"]})["max-pods"] == ["100"]


def test_a_kubelet_argument_with_an_empty_list_removes_the_setting(computed) -> None:
    arguments = computed(kubeletArguments={"cluster-dns": [], "node-ip": []})
    assert "cluster-dns" not in arguments and "node-ip" not in arguments


def test_contributions_replace_defaults_and_kubelet_arguments_replace_contributions(
    computed,
) -> None:
    arguments = computed(
        contributions={"max-pods": ["50"], "cgroup-driver": ["cgroupfs"]},
        kubeletArguments={"max-pods": ["75"]},
    )
    assert arguments["max-pods"] == ["75"]
    assert arguments["cgroup-driver"] == ["cgroupfs"]


def test_a_contribution_with_an_empty_list_removes_a_default(computed) -> None:
    assert "cluster-domain" not in computed(contributions={"cluster-domain": []})


def test_disabling_cgroups_per_qos_turns_node_allocatable_enforcement_off(computed) -> None:
    arguments = computed(kubeletArguments={"cgroups-per-qos": ["false"]})
    assert arguments["enforce-node-allocatable"] == [""]


def test_an_explicit_enforce_node_allocatable_is_kept(computed) -> None:
    arguments = computed(
        kubeletArguments={"cgroups-per-qos": ["false"], "enforce-node-allocatable": ["none"]}
    )
    assert arguments["enforce-node-allocatable"] == ["none"]


def test_removed_flags_in_kubelet_arguments_are_dropped_or_renamed(make_config) -> None:
    config = make_config(
        kubeletArguments={"network-plugin": ["cni"], "resource-container": ["/kubelet.slice"]}
    )
    merged = args.kubelet_arguments(config, {"experimental-bootstrap-kubeconfig": ["/b.kc"]})
    assert "network-plugin" not in merged.arguments
    assert merged.arguments["kubelet-cgroups"] == ["/kubelet.slice"]
    assert merged.arguments["bootstrap-kubeconfig"] == ["/b.kc"]
    assert sorted(found.key for found in merged.translations) == [
        "experimental-bootstrap-kubeconfig",
        "network-plugin",
        "resource-container",
    ]


# --- the launch: config file and command line --------------------------------------------------


def test_config_backed_settings_go_into_the_file_and_the_rest_on_the_command_line(
    computed,
) -> None:
    launch = args.launch_arguments(
        computed(kubeletArguments={"max-pods": ["100"], "node-labels": ["role=infra"]})
    )
    assert launch.document["maxPods"] == 100
    assert launch.document["authentication"]["webhook"] == {"enabled": True, "cacheTTL": "5m"}
    assert launch.document["authorization"]["mode"] == "Webhook"
    assert "--node-labels=role=infra" in launch.flags
    assert not any(flag.startswith("--max-pods") for flag in launch.flags)


def test_the_command_line_holds_only_flags_without_a_config_field(computed, tmp_path) -> None:
    launch = args.launch_arguments(computed())
    assert launch.flags == (
        "--hostname-override=node1.example.com",
        f"--kubeconfig={tmp_path / 'node' / 'node.kubeconfig'}",
        "--node-ip=10.0.0.2",
        "--pod-infra-container-image=openshift/origin-pod:v3.11.0",
        f"--root-dir={tmp_path / 'node' / 'volumes'}",
    )


def test_the_document_starts_with_type_meta(computed) -> None:
    document = args.launch_arguments(computed()).document
    assert list(document)[:2] == ["apiVersion", "kind"]
    assert document["apiVersion"] == "kubelet.config.k8s.io/v1beta1"
    assert document["kind"] == "KubeletConfiguration"


def test_a_removed_setting_is_neither_in_the_file_nor_on_the_command_line(computed) -> None:
    launch = args.launch_arguments(computed(kubeletArguments={"cluster-dns": []}))
    assert "clusterDNS" not in launch.document
    assert not any("cluster-dns" in flag for flag in launch.flags)


def test_enforcement_off_is_an_empty_list_in_the_file(computed) -> None:
    launch = args.launch_arguments(computed(kubeletArguments={"cgroups-per-qos": ["false"]}))
    assert launch.document["cgroupsPerQOS"] is False
    assert launch.document["enforceNodeAllocatable"] == []


def test_an_invalid_contributed_argument_fails_the_launch_naming_it(computed) -> None:
    with pytest.raises(args.ArgumentsError) as caught:
        args.launch_arguments(computed(contributions={"no-such-flag": ["1"], "port": ["x"]}))
    assert str(caught.value) == (
        "invalid kubelet arguments: no-such-flag is not a kubelet flag; port='x' could not be "
        'set: strconv.ParseInt: parsing "x": invalid syntax'
    )


def test_healthz_address_defaults_and_can_be_turned_off(computed) -> None:
    launch = args.launch_arguments(computed())
    assert args.healthz_address(launch.values) == ("127.0.0.1", 10248)
    launch = args.launch_arguments(computed(kubeletArguments={"healthz-port": ["0"]}))
    assert args.healthz_address(launch.values) is None


# --- :ref:`origin-kubelet-required-settings` ------------------------------------------------------


def test_the_computed_arguments_satisfy_check_flags(computed) -> None:
    assert args.missing_security(computed()) == []


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ({"authentication-token-webhook": ["false"]}, "--authentication-token-webhook=true"),
        ({"authentication-token-webhook": []}, "--authentication-token-webhook=true"),
        ({"authorization-mode": ["AlwaysAllow"]}, "--authorization-mode=Webhook"),
        ({"tls-min-version": []}, "--tls-min-version="),
        ({"tls-cipher-suites": []}, "--tls-cipher-suites="),
    ],
)
def test_check_flags_names_what_an_override_breaks(computed, override, needle: str) -> None:
    assert args.missing_security(computed(kubeletArguments=override)) == [needle]


def test_check_flags_reads_the_effective_last_value(computed) -> None:
    arguments = computed(kubeletArguments={"authentication-token-webhook": ["false", "1"]})
    assert args.missing_security(arguments) == []


# --- :ref:`origin-write-flags` --------------------------------------------------------------------


def test_the_flags_line_is_one_line_of_every_setting(make_config) -> None:
    line = args.kubelet_flags_line(make_config(), {})
    assert "\n" not in line
    assert line.startswith("--address=0.0.0.0 --anonymous-auth=true ")
    assert "--max-pods=250" in line.split(" ")
    assert "--config=" not in line


def test_the_flags_line_quotes_arguments_outside_origins_bare_set(make_config) -> None:
    config = make_config(kubeletArguments={"node-labels": ["role=a b", 'x="y"']})
    words = args.kubelet_flags_line(config, {})
    assert '"--node-labels=role=a b"' in words
    assert '"--node-labels=x=\\"y\\""' in words
    assert "--hostname-override=node1.example.com" in words.split(" ")


def test_the_flags_line_refuses_settings_that_break_check_flags(make_config) -> None:
    config = make_config(kubeletArguments={"authorization-mode": ["AlwaysAllow"]})
    with pytest.raises(args.ArgumentsError) as caught:
        args.kubelet_flags_line(config, {})
    assert "--authorization-mode=Webhook" in str(caught.value)

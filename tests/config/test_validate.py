"""Origin's validation rules (:ref:`origin-validation`): each field path, each message, each
scope."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pytest

from nodehost.config.load import node_config_from_mapping
from nodehost.config.quantity import parse_quantity
from nodehost.config.schema import (
    DockerConfig,
    LocalQuota,
    NodeAuthConfig,
    NodeConfig,
    PodManifestConfig,
    VolumeConfig,
)
from nodehost.config.validate import validate_node_config
from nodehost.pluginhost.records import Severity, ValidationScope
from nodehost.testing import parts

NODE, IN_CLUSTER, NETWORK = (
    ValidationScope.NODE,
    ValidationScope.IN_CLUSTER,
    ValidationScope.NETWORK,
)
TLS_VERSIONS = '"VersionTLS10", "VersionTLS11", "VersionTLS12"'


def errors(config: NodeConfig, scope: ValidationScope = NODE) -> list[str]:
    return [p.render() for p in validate_node_config(config, scope) if p.is_error]


def warnings(config: NodeConfig, scope: ValidationScope = NODE) -> list[str]:
    return [p.render() for p in validate_node_config(config, scope) if not p.is_error]


def serving(config: NodeConfig, **changes: object) -> NodeConfig:
    return replace(config, serving_info=replace(config.serving_info, **changes))


def kubelet_arguments(config: NodeConfig, **arguments: tuple[str, ...]) -> NodeConfig:
    merged = {**config.kubelet_arguments, **{k.replace("_", "-"): v for k, v in arguments.items()}}
    return replace(config, kubelet_arguments=MappingProxyType(merged))


def test_valid_config_passes_every_scope(valid_config: NodeConfig) -> None:
    for scope in ValidationScope:
        assert validate_node_config(valid_config, scope) == []


# --- rule 1 and 2: identity --------------------------------------------------------------


def test_node_name_required(valid_config: NodeConfig) -> None:
    assert errors(replace(valid_config, node_name="")) == ["nodeName: Required value"]


def test_node_name_optional_with_bootstrap_kubeconfig(
    valid_config: NodeConfig, node_dir: Path
) -> None:
    config = kubelet_arguments(
        replace(valid_config, node_name=""),
        bootstrap_kubeconfig=(str(node_dir / "node.kubeconfig"),),
    )
    assert errors(config) == []


@pytest.mark.parametrize(
    ("node_ip", "message"),
    [
        ("abc", 'nodeIP: Invalid value: "abc": must be a valid IP'),
        ("0.0.0.0", 'nodeIP: Invalid value: "0.0.0.0": cannot be an unspecified IP'),
        ("::", 'nodeIP: Invalid value: "::": cannot be an unspecified IP'),
    ],
)
def test_node_ip(valid_config: NodeConfig, node_ip: str, message: str) -> None:
    assert errors(replace(valid_config, node_ip=node_ip)) == [message]


@pytest.mark.parametrize("node_ip", ["", "10.0.0.1", "fd00::1"])
def test_node_ip_accepted(valid_config: NodeConfig, node_ip: str) -> None:
    assert errors(replace(valid_config, node_ip=node_ip)) == []


# --- rule 3: serving info ----------------------------------------------------------------


def test_bind_address_required(valid_config: NodeConfig) -> None:
    assert errors(serving(valid_config, bind_address="")) == [
        "servingInfo.bindAddress: Required value"
    ]


def test_bind_address_must_be_host_port(valid_config: NodeConfig) -> None:
    assert errors(serving(valid_config, bind_address="1.2.3.4")) == [
        'servingInfo.bindAddress: Invalid value: "1.2.3.4": must be a host:port'
    ]


def test_certificates_required_without_cert_dir(valid_config: NodeConfig) -> None:
    config = serving(valid_config, cert_file="", key_file="")
    assert errors(config) == [
        "servingInfo.certFile: Required value: The certificate file must be provided",
        "servingInfo.keyFile: Required value: The certificate key must be provided",
        f'servingInfo.clientCA: Invalid value: "{valid_config.serving_info.client_ca}": '
        "cannot specify a clientCA without a certFile",
    ]


def test_certificates_optional_with_cert_dir(valid_config: NodeConfig, node_dir: Path) -> None:
    config = kubelet_arguments(serving(valid_config, cert_file="", key_file=""), cert_dir=("x",))
    assert errors(config) == []


def test_cert_and_key_go_together(valid_config: NodeConfig) -> None:
    together = (
        "Required value: Both the certificate file and the certificate key must be provided "
        "together or not at all"
    )
    assert errors(serving(valid_config, cert_file="")) == [
        "servingInfo.certFile: Required value: The certificate file must be provided",
        f"servingInfo.certFile: {together}",
        f"servingInfo.keyFile: {together}",
        f'servingInfo.clientCA: Invalid value: "{valid_config.serving_info.client_ca}": '
        "cannot specify a clientCA without a certFile",
    ]


def test_missing_certificate_file(valid_config: NodeConfig, node_dir: Path) -> None:
    missing = str(node_dir / "missing.crt")
    assert errors(serving(valid_config, cert_file=missing)) == [
        f'servingInfo.certFile: Invalid value: "{missing}": could not read file: stat {missing}: '
        "no such file or directory"
    ]


def test_missing_client_ca_file(valid_config: NodeConfig, node_dir: Path) -> None:
    missing = str(node_dir / "nope" / "ca.crt")
    assert errors(serving(valid_config, client_ca=missing)) == [
        f'servingInfo.clientCA: Invalid value: "{missing}": could not read file: stat {missing}: '
        "no such file or directory"
    ]


def test_bind_network_must_be_tcp(valid_config: NodeConfig) -> None:
    assert errors(serving(valid_config, bind_network="udp")) == [
        "servingInfo.bindNetwork: Invalid value: \"udp\": must be 'tcp', 'tcp4', or 'tcp6'"
    ]


def test_tcp6_is_refused_for_nodes(valid_config: NodeConfig) -> None:
    message = (
        'servingInfo.bindNetwork: Invalid value: "tcp6": tcp6 is not a valid bindNetwork for '
        "nodes, must be tcp or tcp4"
    )
    assert errors(serving(valid_config, bind_network="tcp6")) == [message]
    assert errors(serving(valid_config, bind_network="tcp6"), NETWORK) == [message]


def test_min_tls_version(valid_config: NodeConfig) -> None:
    assert errors(serving(valid_config, min_tls_version="VersionTLS12")) == []
    assert errors(serving(valid_config, min_tls_version="VersionTLS13")) == [
        'servingInfo.minTLSVersion: Unsupported value: "VersionTLS13": supported values: '
        + TLS_VERSIONS
    ]


def test_cipher_suites(valid_config: NodeConfig) -> None:
    config = serving(valid_config, cipher_suites=("TLS_RSA_WITH_AES_128_CBC_SHA", "BAD"))
    [message] = errors(config)
    assert message.startswith(
        'servingInfo.cipherSuites[1]: Unsupported value: "BAD": supported values: '
        '"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", '
    )


# --- rules 5 to 7: DNS -------------------------------------------------------------------


def test_dns_bind_address(valid_config: NodeConfig) -> None:
    assert errors(replace(valid_config, dns_bind_address="127.0.0.1:53")) == []
    assert errors(replace(valid_config, dns_bind_address="127.0.0.1")) == [
        'dnsBindAddress: Invalid value: "127.0.0.1": must be a host:port'
    ]


def test_dns_ip(valid_config: NodeConfig) -> None:
    assert errors(replace(valid_config, dns_ip="abc")) == [
        'dnsIP: Invalid value: "abc": must be a valid IP'
    ]
    assert errors(replace(valid_config, dns_ip="0.0.0.0")) == [
        'dnsIP: Invalid value: "0.0.0.0": cannot be an unspecified IP'
    ]


def test_dns_ip_any_is_accepted_when_bootstrapping(
    valid_config: NodeConfig, node_dir: Path
) -> None:
    bootstrap = kubelet_arguments(valid_config, bootstrap_kubeconfig=(str(node_dir / "ca.crt"),))
    assert errors(replace(bootstrap, dns_ip="0.0.0.0")) == []
    assert errors(replace(bootstrap, dns_ip="::")) == [
        'dnsIP: Invalid value: "::": cannot be an unspecified IP'
    ]


@pytest.mark.parametrize(
    ("nameserver", "messages"),
    [
        ("10.0.0.1:53", []),
        ("[fd00::1]:53", []),
        ("10.0.0.1", ['Invalid value: "10.0.0.1": must be a valid IP:PORT']),
        ("dns.example.com:53", ['Invalid value: "dns.example.com": must be a valid IP']),
        ("0.0.0.0:53", ['Invalid value: "0.0.0.0": cannot be an unspecified IP']),
        ("10.0.0.1:dns", ['Invalid value: "dns": must be a valid port']),
        ("10.0.0.1:0", ["Invalid value: 0: must be between 1 and 65535, inclusive"]),
        (
            "abc:70000",
            [
                'Invalid value: "abc": must be a valid IP',
                "Invalid value: 70000: must be between 1 and 65535, inclusive",
            ],
        ),
    ],
)
def test_dns_nameservers(valid_config: NodeConfig, nameserver: str, messages: list[str]) -> None:
    config = replace(valid_config, dns_nameservers=("10.0.0.2:53", nameserver))
    assert errors(config) == [f"dnsNameservers[1]: {message}" for message in messages]


# --- rules 8 to 12 -----------------------------------------------------------------------


def test_image_format_required(valid_config: NodeConfig) -> None:
    config = replace(valid_config, image_config=replace(valid_config.image_config, format=""))
    assert errors(config) == ["imageConfig.format: Required value"]


@pytest.mark.parametrize(
    ("template", "message"),
    [
        (
            "a/${component}:${build}",
            'the key "build" in "a/${component}:${build}" is not recognized',
        ),
        ("a/$x:$y", 'multiple keys in "a/$x:$y" were not recognized: x, y'),
    ],
)
def test_image_format_must_expand_for_the_pod_image(
    valid_config: NodeConfig, template: str, message: str
) -> None:
    """Origin found this only at start (a fatal error); nodehost reports it with the rest."""
    config = replace(valid_config, image_config=replace(valid_config.image_config, format=template))
    assert errors(config) == [f'imageConfig.format: Invalid value: "{template}": {message}']


def test_pod_manifest_config(valid_config: NodeConfig, node_dir: Path) -> None:
    assert errors(replace(valid_config, pod_manifest_config=PodManifestConfig())) == [
        "podManifestConfig.path: Required value",
        "podManifestConfig.fileCheckIntervalSeconds: Invalid value: 0: interval has to be positive",
    ]
    good = PodManifestConfig(path=str(node_dir), file_check_interval_seconds=5)
    assert errors(replace(valid_config, pod_manifest_config=good)) == []


def test_mtu_must_be_positive(valid_config: NodeConfig) -> None:
    config = replace(valid_config, network_config=replace(valid_config.network_config, mtu=0))
    assert errors(config) == ["networkConfig.mtu: Invalid value: 0: must be greater than zero"]


def test_exec_handler(valid_config: NodeConfig) -> None:
    config = replace(valid_config, docker_config=DockerConfig(exec_handler_name="docker"))
    assert errors(config) == [
        'dockerConfig.execHandlerName: Invalid value: "docker": must be one of native, nsenter'
    ]
    nsenter = replace(valid_config, docker_config=DockerConfig(exec_handler_name="nsenter"))
    assert errors(nsenter) == []


def test_auth_cache(valid_config: NodeConfig) -> None:
    auth = NodeAuthConfig(
        authentication_cache_ttl="",
        authentication_cache_size=0,
        authorization_cache_ttl="5",
        authorization_cache_size=-1,
    )
    assert errors(replace(valid_config, auth_config=auth)) == [
        "authConfig.authenticationCacheTTL: Required value",
        "authConfig.authenticationCacheSize: Invalid value: 0: must be greater than zero",
        'authConfig.authorizationCacheTTL: Invalid value: "5": time: missing unit in duration "5"',
        "authConfig.authorizationCacheSize: Invalid value: -1: must be greater than zero",
    ]


def test_auth_cache_ttl_cannot_be_negative_but_zero_disables(valid_config: NodeConfig) -> None:
    auth = NodeAuthConfig(authentication_cache_ttl="-1m", authorization_cache_ttl="0")
    assert errors(replace(valid_config, auth_config=auth)) == [
        'authConfig.authenticationCacheTTL: Invalid value: "-1m": cannot be less than zero'
    ]


# --- rules 14 and 15 ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("period", "reason"),
    [("", 'time: invalid duration ""'), ("30", 'time: missing unit in duration "30"')],
)
def test_iptables_sync_period(valid_config: NodeConfig, period: str, reason: str) -> None:
    expected = [
        f'iptablesSyncPeriod: Invalid value: "{period}": unable to parse iptablesSyncPeriod: '
        f"{reason}. Examples with correct format: '5s', '1m', '2h22m'"
    ]
    assert errors(replace(valid_config, iptables_sync_period=period)) == expected
    assert errors(replace(valid_config, iptables_sync_period=period), NETWORK) == expected


@pytest.mark.parametrize(("quantity", "valid"), [("-1000Mi", False), ("0", True), ("512Mi", True)])
def test_per_fs_group_quota(valid_config: NodeConfig, quantity: str, valid: bool) -> None:
    volume = VolumeConfig(LocalQuota(parse_quantity(quantity)))
    expected = (
        []
        if valid
        else [
            f"volumeConfig.localQuota.perFSGroup: Invalid value: {quantity}: must be a positive integer"
        ]
    )
    assert errors(replace(valid_config, volume_config=volume)) == expected


def test_empty_config_with_negative_quota_reports_it_among_others() -> None:
    # Origin's TestInvalidProjectEmptyDirQuota.
    config, _ = node_config_from_mapping(
        {"volumeConfig": {"localQuota": {"perFSGroup": "-1000Mi"}}}
    )
    paths = [problem.path for problem in validate_node_config(config, NODE)]
    assert "volumeConfig.localQuota.perFSGroup" in paths
    assert len(paths) > 1


# --- the kubeconfig rule and the scopes ----------------------------------------------------


def test_master_kubeconfig_required_at_node_scope_only(valid_config: NodeConfig) -> None:
    config = replace(valid_config, master_kube_config="")
    assert errors(config, NODE) == ["masterKubeConfig: Required value"]
    assert errors(config, IN_CLUSTER) == []


def test_missing_master_kubeconfig(valid_config: NodeConfig, node_dir: Path) -> None:
    missing = str(node_dir / "absent.kubeconfig")
    assert errors(replace(valid_config, master_kube_config=missing)) == [
        f'masterKubeConfig: Invalid value: "{missing}": could not read file: stat {missing}: '
        "no such file or directory"
    ]


def test_bootstrap_kubeconfig_replaces_master_kubeconfig(
    valid_config: NodeConfig, node_dir: Path
) -> None:
    missing = str(node_dir / "bootstrap.kubeconfig")
    config = kubelet_arguments(
        replace(valid_config, master_kube_config=""), bootstrap_kubeconfig=(missing, "ignored")
    )
    assert errors(config) == [
        f'kubeletArguments.bootstrap-kubeconfig: Invalid value: "{missing}": could not read '
        f"file: stat {missing}: no such file or directory"
    ]


def test_network_scope_checks_only_what_the_network_needs(valid_config: NodeConfig) -> None:
    broken = replace(
        serving(valid_config, cert_file="", key_file="", bind_address=""),
        node_name="",
        dns_ip="abc",
        image_config=replace(valid_config.image_config, format=""),
        master_kube_config="",
        auth_config=NodeAuthConfig(authentication_cache_ttl=""),
        docker_config=DockerConfig(exec_handler_name="x"),
    )
    assert errors(broken, NETWORK) == [
        "nodeName: Required value",
        "servingInfo.bindAddress: Required value",
        'dockerConfig.execHandlerName: Invalid value: "x": must be one of native, nsenter',
    ]


def test_problems_come_in_origins_rule_order(valid_config: NodeConfig) -> None:
    broken = replace(
        valid_config,
        node_name="",
        node_ip="x",
        dns_bind_address="x",
        image_config=replace(valid_config.image_config, format=""),
        network_config=replace(valid_config.network_config, mtu=0),
        iptables_sync_period="x",
        master_kube_config="",
    )
    assert [problem.path for problem in validate_node_config(broken, NODE)] == [
        "nodeName",
        "nodeIP",
        "dnsBindAddress",
        "imageConfig.format",
        "networkConfig.mtu",
        "iptablesSyncPeriod",
        "masterKubeConfig",
    ]


# --- rule 3d: named certificates, with real certificates -----------------------------------


def named(valid_config: NodeConfig, *certificates: dict) -> NodeConfig:
    raw = {"servingInfo": {"namedCertificates": list(certificates)}}
    built, problems = node_config_from_mapping(raw, base_dir="/")
    assert problems == []
    return serving(valid_config, named_certificates=built.serving_info.named_certificates)


def test_named_certificates_need_a_default_certificate(
    valid_config: NodeConfig, certificates: Path
) -> None:
    pair = {"certFile": str(certificates / "named.crt"), "keyFile": str(certificates / "named.key")}
    config = serving(
        named(valid_config, {"names": ["a.example.com"], **pair}), cert_file="", key_file=""
    )
    assert (
        'servingInfo.namedCertificates: Invalid value: "": a default certificate and key is '
        "required in certFile/keyFile in order to use namedCertificates"
    ) in errors(config)


def test_named_certificate_names(valid_config: NodeConfig, certificates: Path) -> None:
    pair = {"certFile": str(certificates / "named.crt"), "keyFile": str(certificates / "named.key")}
    names = [
        "",
        "a.example.com",
        "a.example.com",
        "Bad_Name.example.com",
        "*.wild.example.com",
        "x.wild.example.com",
        "named.example.com",
        "*.example.com",
        "nomatch.example.com",
    ]
    config = named(
        valid_config, {"names": names, **pair}, {"names": ["x.wild.example.com"], **pair}
    )
    path = "servingInfo.namedCertificates"
    assert errors(config) == [
        f"{path}[0].names[0]: Required value",
        f'{path}[0].names[2]: Invalid value: "a.example.com": this name is already used in '
        "another named certificate",
        f'{path}[0].names[3]: Invalid value: "Bad_Name.example.com": must be a valid DNS name',
        f'{path}[1].names[0]: Invalid value: "x.wild.example.com": this name is already used in '
        "another named certificate",
    ]
    assert warnings(config) == [
        f'{path}[0].names[8]: Invalid value: "nomatch.example.com": the specified certificate '
        "does not have a CommonName or DNS subjectAltName that matches this name"
    ]
    [warning] = [p for p in validate_node_config(config, NODE) if not p.is_error]
    assert warning.severity is Severity.WARNING


def test_named_certificate_without_cert_file(valid_config: NodeConfig) -> None:
    config = named(valid_config, {"names": []})
    assert errors(config) == [
        "servingInfo.namedCertificates[0].certInfo: Required value",
        "servingInfo.namedCertificates[0].names: Required value",
    ]


def test_named_certificate_without_key_file(valid_config: NodeConfig, certificates: Path) -> None:
    config = named(
        valid_config, {"names": ["a.example.com"], "certFile": str(certificates / "named.crt")}
    )
    together = (
        "Required value: Both the certificate file and the certificate key must be provided "
        "together or not at all"
    )
    assert errors(config) == [
        f"servingInfo.namedCertificates[0].certFile: {together}",
        f"servingInfo.namedCertificates[0].keyFile: {together}",
    ]


def test_named_certificate_key_mismatch(valid_config: NodeConfig, certificates: Path) -> None:
    cert, key = str(certificates / "named.crt"), str(certificates / "other.key")
    config = named(valid_config, {"names": ["a.example.com"], "certFile": cert, "keyFile": key})
    assert errors(config) == [
        f'servingInfo.namedCertificates[0].certInfo: Invalid value: config.CertInfo{{CertFile:"{cert}", '
        f'KeyFile:"{key}"}}: error loading certificate/key: tls: private key does not match public key'
    ]


def test_named_certificate_that_is_not_pem(valid_config: NodeConfig, node_dir: Path) -> None:
    placeholder = str(node_dir / "ca.crt")  # "placeholder"
    config = named(
        valid_config, {"names": ["a.example.com"], "certFile": placeholder, "keyFile": placeholder}
    )
    [message] = errors(config)
    assert message.endswith(
        "error loading certificate/key: tls: failed to find any PEM data in certificate input"
    )


# --- nodehost's rule: the serving certificate matches its key ---------------------------------


def test_serving_certificate_that_does_not_match_its_key(
    valid_config: NodeConfig, node_dir: Path
) -> None:
    from nodehost.pki.keys import encode_private_key, generate_private_key

    (node_dir / "server.key").write_bytes(encode_private_key(generate_private_key("ecdsa")))
    assert errors(valid_config) == [
        f'servingInfo.certFile: Invalid value: "{node_dir / "server.crt"}": error loading '
        "certificate/key: tls: private key does not match public key"
    ]


def test_serving_key_of_another_type(valid_config: NodeConfig, node_dir: Path) -> None:
    from nodehost.pki.keys import encode_private_key, generate_private_key

    (node_dir / "server.key").write_bytes(encode_private_key(generate_private_key("rsa")))
    [message] = errors(valid_config)
    assert message.endswith("tls: private key type does not match public key type")


def test_serving_key_that_is_encrypted(valid_config: NodeConfig, node_dir: Path) -> None:
    parts.require("openssl")
    key = node_dir / "server.key"
    encrypted = ["openssl", "pkey", "-in", str(key), "-aes128", "-passout", "pass:secret"]
    key.write_bytes(subprocess.run(encrypted, check=True, capture_output=True).stdout)
    [message] = errors(valid_config)
    assert message.endswith("tls: failed to parse private key")


def test_serving_certificate_that_is_malformed(valid_config: NodeConfig, node_dir: Path) -> None:
    cert = node_dir / "server.crt"
    lines = cert.read_text().splitlines()
    cert.write_text("\n".join([lines[0], lines[1][:20], lines[-1]]) + "\n")
    [message] = errors(valid_config)
    assert message.endswith("x509: malformed certificate")


def test_serving_chain_with_a_malformed_certificate(
    valid_config: NodeConfig, node_dir: Path
) -> None:
    cert = node_dir / "server.crt"
    leaf = cert.read_text()
    cert.write_text(leaf + "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    [message] = errors(valid_config)
    assert message.endswith("x509: malformed certificate")


def test_serving_certificate_that_is_not_a_certificate(
    valid_config: NodeConfig, node_dir: Path
) -> None:
    (node_dir / "server.crt").write_text("placeholder\n")
    [message] = errors(valid_config)
    assert message.endswith("tls: failed to find any PEM data in certificate input")

"""Origin's NodeConfig validation rules, with Origin's field paths and messages
(:ref:`origin-validation`).

* :data:`ValidationScope.NODE`       -- ``ValidateNodeConfig``: the in-cluster
  rules, then the kubeconfig file (``masterKubeConfig``, or the first
  ``kubeletArguments.bootstrap-kubeconfig``);
* :data:`ValidationScope.IN_CLUSTER` -- ``ValidateInClusterNodeConfig``;
* :data:`ValidationScope.NETWORK`    -- ``ValidateInClusterNetworkNodeConfig``.

Rule 13 (``kubeletArguments`` against the kubelet's real flags) belongs to the
kubelet plugin, through the validation hook, as ``proxyArguments`` belong to
the proxy's (:data:`PLUGIN_CHECKED_KEYS`), nodehost's port rule for both
(:func:`argument_ports`) included.  The only warning is the
named-certificate name mismatch of rule 3d.  Files are checked against the
resolved (absolute) paths the NodeConfig holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nodehost.config.goduration import parse_go_duration_ns
from nodehost.config.hostport import (
    PORT_RANGE_MESSAGE,
    go_atoi,
    is_dns1123_label,
    is_unspecified,
    is_valid_port,
    parse_ip,
    split_host_port,
)
from nodehost.config.schema import EXEC_HANDLERS, NodeConfig, ServingInfo, index_path, join_path
from nodehost.config.tls import CIPHER_SUITES, TLS_VERSIONS
from nodehost.fileread import KUBECONFIG_LIMIT, PEM_LIMIT, UnusableFile, check_file, read_file
from nodehost.pluginhost.records import Problem, Severity, ValidationScope

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.config.schema import NamedCertificate, PodManifestConfig

_BOOTSTRAP_KUBECONFIG = "bootstrap-kubeconfig"

#: NodeConfig keys whose rules live in plugins: a plugin claims one by listing it in
#: its component record's ``config_sections``; while none that is loaded does, a key
#: set in the file is reported as not checked (:func:`nodehost.resolve.unchecked_keys`).
PLUGIN_CHECKED_KEYS = ("kubeletArguments", "proxyArguments")


@dataclass(frozen=True)
class GoValue:
    """A bad value Kubernetes would print unquoted (a struct, a quantity)."""

    text: str

    def __str__(self) -> str:
        return self.text


def validate_node_config(
    config: NodeConfig, scope: ValidationScope = ValidationScope.NODE
) -> list[Problem]:
    """Every problem Origin's validator for ``scope`` finds, errors and warnings, in rule order.

    Then a warning for each key the file set that nodehost does not act on
    (:mod:`nodehost.config.noeffect`).
    """
    from nodehost.config.noeffect import no_effect_problems

    if scope is ValidationScope.NETWORK:
        return _network_node_config(config) + no_effect_problems(config)
    problems = _in_cluster_node_config(config)
    if scope is ValidationScope.NODE:
        problems += _kubeconfig(config)
    return problems + no_effect_problems(config)


# --- the three validators --------------------------------------------------------------


def _has_bootstrap(config: NodeConfig) -> bool:
    return len(config.kubelet_arguments.get(_BOOTSTRAP_KUBECONFIG, ())) > 0


def _identity(config: NodeConfig) -> list[Problem]:
    """Rules 1 and 2: nodeName (unless bootstrapping) and nodeIP."""
    problems = []
    if not config.node_name and not _has_bootstrap(config):
        problems.append(Problem.required("nodeName"))
    if config.node_ip:
        problems += node_ip_syntax(config.node_ip, "nodeIP")
    return problems


def _image_format(config: NodeConfig) -> list[Problem]:
    """Rule 8, and what Origin found only at start: the pod image must expand."""
    from nodehost.config.images import ImageTemplateError, pod_image

    if not config.image_config.format:
        return [Problem.required("imageConfig.format")]
    try:
        pod_image(config.image_config)
    except ImageTemplateError as error:
        return [Problem.invalid("imageConfig.format", config.image_config.format, str(error))]
    return []


def _node_serving_info(config: NodeConfig, certificates_required: bool) -> list[Problem]:
    """Rules 3 and 4."""
    problems = serving_info(config.serving_info, certificates_required, "servingInfo")
    if config.serving_info.bind_network == "tcp6":
        problems.append(
            Problem.invalid(
                "servingInfo.bindNetwork",
                "tcp6",
                "tcp6 is not a valid bindNetwork for nodes, must be tcp or tcp4",
            )
        )
    return problems


def _in_cluster_node_config(config: NodeConfig) -> list[Problem]:
    has_cert_dir = len(config.kubelet_arguments.get("cert-dir", ())) > 0
    problems = _identity(config)
    problems += _node_serving_info(config, certificates_required=not has_cert_dir)
    problems += _dns(config)
    problems += _image_format(config)
    if config.pod_manifest_config is not None:
        problems += _pod_manifest(config.pod_manifest_config)
    problems += _mtu(config)
    problems += _exec_handler(config)
    problems += _auth(config)
    problems += _iptables_sync_period(config)
    problems += _volume(config)
    return problems


def _network_node_config(config: NodeConfig) -> list[Problem]:
    problems = _identity(config)
    problems += _node_serving_info(config, certificates_required=False)
    problems += _mtu(config)
    problems += _exec_handler(config)
    problems += _iptables_sync_period(config)
    return problems


def _kubeconfig(config: NodeConfig) -> list[Problem]:
    """ValidateNodeConfig's extra rule: the kubeconfig used to reach the master exists.

    nodehost's addition: the files its current context names (CA, client
    certificate and key) are checked as every file nodehost reads.
    """
    bootstrap = config.kubelet_arguments.get(_BOOTSTRAP_KUBECONFIG, ())
    if bootstrap:
        path, field_path = bootstrap[0], f"kubeletArguments.{_BOOTSTRAP_KUBECONFIG}"
    else:
        path, field_path = config.master_kube_config, "masterKubeConfig"
    problems = validate_file(path, field_path, KUBECONFIG_LIMIT)
    if problems:
        return problems
    from nodehost.pki.kubeconfig import referenced_files

    for name in referenced_files(path):
        problems += validate_file(name, field_path, PEM_LIMIT)
    return problems


# --- node rules ------------------------------------------------------------------------


def _dns(config: NodeConfig) -> list[Problem]:
    """Rules 5, 6 and 7."""
    problems = []
    if config.dns_bind_address:
        problems += host_port(config.dns_bind_address, "dnsBindAddress")
    if config.dns_ip and (not _has_bootstrap(config) or config.dns_ip != "0.0.0.0"):
        problems += specified_ip(config.dns_ip, "dnsIP")
    for index, nameserver in enumerate(config.dns_nameservers):
        problems += specified_ip_port(nameserver, index_path("dnsNameservers", index))
    return problems


def _pod_manifest(manifest: PodManifestConfig) -> list[Problem]:
    """Rule 9."""
    problems = validate_file(
        manifest.path, "podManifestConfig.path", KUBECONFIG_LIMIT, directory_ok=True
    )
    if manifest.file_check_interval_seconds < 1:
        problems.append(
            Problem.invalid(
                "podManifestConfig.fileCheckIntervalSeconds",
                manifest.file_check_interval_seconds,
                "interval has to be positive",
            )
        )
    return problems


def _mtu(config: NodeConfig) -> list[Problem]:
    """Rule 10."""
    if config.network_config.mtu == 0:
        return [Problem.invalid("networkConfig.mtu", 0, "must be greater than zero")]
    return []


def _exec_handler(config: NodeConfig) -> list[Problem]:
    """Rule 11."""
    name = config.docker_config.exec_handler_name
    if name in EXEC_HANDLERS:
        return []
    return [
        Problem.invalid(
            "dockerConfig.execHandlerName", name, f"must be one of {', '.join(EXEC_HANDLERS)}"
        )
    ]


def _cache(ttl: str, size: int, ttl_path: str, size_path: str) -> list[Problem]:
    problems = []
    if not ttl:
        problems.append(Problem.required(ttl_path))
    else:
        try:
            if parse_go_duration_ns(ttl) < 0:
                problems.append(Problem.invalid(ttl_path, ttl, "cannot be less than zero"))
        except ValueError as error:
            problems.append(Problem.invalid(ttl_path, ttl, str(error)))
    if size <= 0:
        problems.append(Problem.invalid(size_path, size, "must be greater than zero"))
    return problems


def _auth(config: NodeConfig) -> list[Problem]:
    """Rule 12."""
    auth = config.auth_config
    return _cache(
        auth.authentication_cache_ttl,
        auth.authentication_cache_size,
        "authConfig.authenticationCacheTTL",
        "authConfig.authenticationCacheSize",
    ) + _cache(
        auth.authorization_cache_ttl,
        auth.authorization_cache_size,
        "authConfig.authorizationCacheTTL",
        "authConfig.authorizationCacheSize",
    )


def _iptables_sync_period(config: NodeConfig) -> list[Problem]:
    """Rule 14."""
    period = config.iptables_sync_period
    try:
        parse_go_duration_ns(period)
    except ValueError as error:
        detail = (
            f"unable to parse iptablesSyncPeriod: {error}. "
            "Examples with correct format: '5s', '1m', '2h22m'"
        )
        return [Problem.invalid("iptablesSyncPeriod", period, detail)]
    return []


def _volume(config: NodeConfig) -> list[Problem]:
    """Rule 15."""
    quota = config.volume_config.local_quota.per_fs_group
    if quota is not None and quota.value < 0:
        return [
            Problem.invalid(
                "volumeConfig.localQuota.perFSGroup",
                GoValue(quota.text),
                "must be a positive integer",
            )
        ]
    return []


def argument_ports(arguments: Mapping[str, Sequence[str]], field_path: str) -> list[Problem]:
    """nodehost's rule: a ``*port`` argument given as a number is a port (0-65535, 0 = off).

    For the plugins that own an ``*Arguments`` key (kubelet, proxy), which apply
    it to their own in-cluster scope: the programs refuse such a value only once
    running; a value that is not a number is left to their flag tables.
    """
    problems = []
    for key, values in arguments.items():
        if not key.endswith("port"):
            continue
        for index, value in enumerate(values):
            digits = value.strip().lstrip("+")
            if digits.isascii() and digits.isdigit() and (len(digits) > 5 or int(digits) > 65535):
                problems.append(
                    Problem.invalid(index_path(join_path(field_path, key), index), value,
                                    "must be between 0 and 65535, inclusive")
                )  # fmt: skip
    return problems


# --- Origin's common helpers (validation/common) ---------------------------------------


def validate_file(
    path: str, field_path: str, limit: int = PEM_LIMIT, *, directory_ok: bool = False
) -> list[Problem]:
    """``ValidateFile``: "" is Required; a path that cannot be read is Invalid.

    Stricter than Origin: the path must be a regular file (``directory_ok``
    lets a directory pass too) of at most ``limit`` bytes, as
    :func:`nodehost.fileread.read_file` will demand when it is read.
    """
    if not path:
        return [Problem.required(field_path)]
    try:
        check_file(path, limit, directory_ok=directory_ok)
    except UnusableFile as error:
        return [Problem.invalid(field_path, path, f"could not read file: {path}: {error.strerror}")]
    except PermissionError as error:
        reason = (error.strerror or str(error)).lower()
        return [Problem.invalid(field_path, path, f"could not read file: open {path}: {reason}")]
    except OSError as error:
        reason = (error.strerror or str(error)).lower()
        return [Problem.invalid(field_path, path, f"could not read file: stat {path}: {reason}")]
    return []


def host_port(value: str, field_path: str) -> list[Problem]:
    """``ValidateHostPort``."""
    if not value:
        return [Problem.required(field_path)]
    try:
        _, port = split_host_port(value)
    except ValueError:
        return [Problem.invalid(field_path, value, "must be a host:port")]
    if port.isascii() and port.isdigit() and (len(port) > 5 or int(port) > 65535):
        return [Problem.invalid(field_path, value, "port out of range")]  # nodehost's rule
    return []


def specified_ip(value: str, field_path: str) -> list[Problem]:
    """``ValidateSpecifiedIP``: a parseable IP that is not 0.0.0.0 or ::."""
    ip = parse_ip(value)
    if ip is None:
        return [Problem.invalid(field_path, value, "must be a valid IP")]
    if is_unspecified(ip):
        return [Problem.invalid(field_path, value, "cannot be an unspecified IP")]
    return []


def node_ip_syntax(value: str, field_path: str) -> list[Problem]:
    """An address, a dual-stack pair or a selector (:func:`nodehost.nodeip.parse_node_ip`)."""
    from nodehost.nodeip import NodeIPSyntaxError, parse_node_ip

    try:
        parse_node_ip(value)
    except NodeIPSyntaxError as error:
        return [Problem.invalid(field_path, value, str(error))]
    return []


def specified_ip_port(value: str, field_path: str) -> list[Problem]:
    """``ValidateSpecifiedIPPort``: several problems may be reported for one value."""
    try:
        host, port_text = split_host_port(value)
    except ValueError:
        return [Problem.invalid(field_path, value, "must be a valid IP:PORT")]
    problems = specified_ip(host, field_path)
    try:
        port = go_atoi(port_text)
    except ValueError:
        problems.append(Problem.invalid(field_path, port_text, "must be a valid port"))
    else:
        if not is_valid_port(port):
            problems.append(Problem.invalid(field_path, port, PORT_RANGE_MESSAGE))
    return problems


def cert_info(cert_file: str, key_file: str, required: bool, field_path: str) -> list[Problem]:
    """``ValidateCertInfo`` at ``<field_path>.certFile`` / ``.keyFile``."""
    cert_path = join_path(field_path, "certFile")
    key_path = join_path(field_path, "keyFile")
    problems = []
    if required:
        if not cert_file:
            problems.append(Problem.required(cert_path, "The certificate file must be provided"))
        if not key_file:
            problems.append(Problem.required(key_path, "The certificate key must be provided"))
    if bool(cert_file) != bool(key_file):
        together = (
            "Both the certificate file and the certificate key must be provided together "
            "or not at all"
        )
        problems.append(Problem.required(cert_path, together))
        problems.append(Problem.required(key_path, together))
    if cert_file:
        problems += validate_file(cert_file, cert_path)
    if key_file:
        problems += validate_file(key_file, key_path)
    return problems


def key_pair(cert_file: str, key_file: str, field_path: str) -> list[Problem]:
    """nodehost's rule: the certificate loads and matches its key (Go's ``LoadX509KeyPair``).

    Origin only checked that both files exist; a mismatched pair (say, from
    an interrupted copy) would fail the kubelet at start, so it fails here.
    """
    try:
        _certificate_names(cert_file, key_file)
    except ValueError as error:
        path = join_path(field_path, "certFile")
        return [Problem.invalid(path, cert_file, f"error loading certificate/key: {error}")]
    return []


def serving_info(info: ServingInfo, certificates_required: bool, field_path: str) -> list[Problem]:
    """``ValidateServingInfo`` (rules 3a-3g)."""
    problems = host_port(info.bind_address, join_path(field_path, "bindAddress"))
    pair_problems = cert_info(info.cert_file, info.key_file, certificates_required, field_path)
    if not pair_problems and info.cert_file and info.key_file:
        pair_problems = key_pair(info.cert_file, info.key_file, field_path)
    problems += pair_problems
    named_path = join_path(field_path, "namedCertificates")
    if info.named_certificates and not info.cert_file:
        problems.append(
            Problem.invalid(
                named_path,
                "",
                "a default certificate and key is required in certFile/keyFile in order to "
                "use namedCertificates",
            )
        )
    problems += named_certificates(info.named_certificates, named_path)
    if info.bind_network not in ("tcp", "tcp4", "tcp6"):
        problems.append(
            Problem.invalid(
                join_path(field_path, "bindNetwork"),
                info.bind_network,
                "must be 'tcp', 'tcp4', or 'tcp6'",
            )
        )
    client_ca_path = join_path(field_path, "clientCA")
    if info.cert_file:
        if info.client_ca:
            problems += validate_file(info.client_ca, client_ca_path)
    elif certificates_required and info.client_ca:
        problems.append(
            Problem.invalid(
                client_ca_path, info.client_ca, "cannot specify a clientCA without a certFile"
            )
        )
    if info.min_tls_version and info.min_tls_version not in TLS_VERSIONS:
        problems.append(
            Problem.not_supported(
                join_path(field_path, "minTLSVersion"), info.min_tls_version, TLS_VERSIONS
            )
        )
    for index, cipher in enumerate(info.cipher_suites):
        if cipher not in CIPHER_SUITES:
            problems.append(
                Problem.not_supported(
                    index_path(join_path(field_path, "cipherSuites"), index), cipher, CIPHER_SUITES
                )
            )
    return problems


def named_certificates(
    certificates: tuple[NamedCertificate, ...], field_path: str
) -> list[Problem]:
    """``ValidateNamedCertificates`` (rule 3d), including the name-mismatch warning."""
    problems: list[Problem] = []
    taken: set[str] = set()
    for index, certificate in enumerate(certificates):
        item_path = index_path(field_path, index)
        cert_names: list[str] = []
        if not certificate.cert_file:
            problems.append(Problem.required(join_path(item_path, "certInfo")))
        elif info_problems := cert_info(
            certificate.cert_file, certificate.key_file, False, item_path
        ):
            problems += info_problems
        else:
            try:
                cert_names = _certificate_names(certificate.cert_file, certificate.key_file)
            except ValueError as error:
                value = GoValue(
                    f'config.CertInfo{{CertFile:"{certificate.cert_file}", '
                    f'KeyFile:"{certificate.key_file}"}}'
                )
                problems.append(
                    Problem.invalid(
                        join_path(item_path, "certInfo"),
                        value,
                        f"error loading certificate/key: {error}",
                    )
                )
        if not certificate.names:
            problems.append(Problem.required(join_path(item_path, "names")))
        for name_index, name in enumerate(certificate.names):
            problems += _named_certificate_name(
                name, index_path(join_path(item_path, "names"), name_index), taken, cert_names
            )
    return problems


def _named_certificate_name(
    name: str, field_path: str, taken: set[str], cert_names: list[str]
) -> list[Problem]:
    if not name:
        return [Problem.required(field_path)]
    if name in taken:
        return [
            Problem.invalid(
                field_path, name, "this name is already used in another named certificate"
            )
        ]
    if any(label != "*" and not is_dns1123_label(label) for label in name.split(".")):
        return [Problem.invalid(field_path, name, "must be a valid DNS name")]
    taken.add(name)
    if cert_names and not any(_certificate_covers(cert_name, name) for cert_name in cert_names):
        return [
            Problem.invalid(
                field_path,
                name,
                "the specified certificate does not have a CommonName or DNS subjectAltName "
                "that matches this name",
                severity=Severity.WARNING,
            )
        ]
    return []


def hostname_matches(hostname: str, match_spec: str) -> bool:
    """Origin's ``HostnameMatches``: ``match_spec`` is ``hostname`` with leading labels
    replaced by ``*`` one at a time (so ``*.example.com`` matches ``a.example.com``)."""
    if not hostname:
        return False
    labels = hostname.split(".")
    candidates = {hostname}
    for index in range(len(labels)):
        labels[index] = "*"
        candidates.add(".".join(labels))
    return match_spec in candidates


def _certificate_covers(cert_name: str, name: str) -> bool:
    if hostname_matches(cert_name, name):
        return True
    return (
        cert_name.startswith("*.")
        and not name.startswith("*.")
        and hostname_matches(name, cert_name)
    )


def _read(path: str) -> bytes:
    try:
        return read_file(path, PEM_LIMIT)
    except OSError as error:
        raise ValueError(f"open {path}: {(error.strerror or str(error)).lower()}") from None


def _certificate_names(cert_file: str, key_file: str) -> list[str]:
    """Go's ``tls.LoadX509KeyPair`` then the leaf's CN and DNS SANs; ``ValueError`` with Go's
    wording when the pair cannot be loaded or does not match (:mod:`nodehost.pki.keypair`)."""
    from nodehost.pki.keypair import certificate_names

    return certificate_names(cert_file, key_file, _read(cert_file), _read(key_file))

"""The typed v1 NodeConfig: frozen dataclasses whose fields know their YAML keys.

Every field carries a :class:`FieldSpec` in its dataclass metadata: the
Origin YAML key, the kind of value, a description, and what else loading,
path resolution, dumping and the JSON schema need.  That table is the single
source of truth; :func:`field_specs` reads it.

Field defaults are Origin's v1 defaults (see :mod:`nodehost.config.defaults`),
so ``NodeConfig()`` equals what an empty ``node-config.yaml`` loads to.

This module imports neither yaml nor cryptography.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Mapping
from dataclasses import field
from types import MappingProxyType
from typing import Any

from nodehost.config import defaults as d
from nodehost.config.quantity import Quantity
from nodehost.config.tls import CIPHER_SUITES, TLS_VERSIONS
from nodehost.frozen import frozen

API_VERSION = "v1"
KIND = "NodeConfig"

#: ``servingInfo.bindNetwork`` values Origin accepts.
BIND_NETWORKS = ("tcp", "tcp4", "tcp6")
#: ``dockerConfig.execHandlerName`` values Origin accepts.
EXEC_HANDLERS = ("native", "nsenter")

_SPEC = "nodehost.spec"


class Kind(enum.Enum):
    """The kind of value a field holds (Go type it mirrors in brackets)."""

    STRING = "a string"
    BOOL = "a boolean"
    INT = "an integer"  # Go int / int64
    UINT32 = "an unsigned 32-bit integer"
    FLOAT = "a number"
    STRING_LIST = "a list of strings"
    ARGUMENTS = "a mapping of names to lists of strings"  # map[string][]string
    OBJECT = "a mapping"
    OPTIONAL_OBJECT = "a mapping or null"
    OBJECT_LIST = "a list of mappings"
    QUANTITY = "a quantity"


@frozen
class FieldSpec:
    """What the loader, resolver, dumper and JSON schema know about one field.

    ``key``        Origin's YAML (JSON) key.
    ``kind``       the kind of value (:class:`Kind`).
    ``doc``        a one-paragraph description (shown by editors).
    ``nested``     the dataclass of an OBJECT, OPTIONAL_OBJECT or OBJECT_LIST field.
    ``enum``       the accepted values (of each item, for lists), when a closed
                   set; for the JSON schema only -- validation reports others
                   with Origin's message.
    ``pattern``    a regular expression for the JSON schema, when cheap.
    ``is_path``    a file or directory resolved against the config's directory.
    ``path_key_suffixes`` for ARGUMENTS: keys ending so hold paths in every value.
    ``omitempty``  left out of a dump when empty (Go's ``omitempty``).
    ``deprecated`` kept for compatibility; editors show it struck through.
    """

    key: str
    kind: Kind
    doc: str
    nested: type | None = None
    enum: tuple[str, ...] = ()
    pattern: str | None = None
    is_path: bool = False
    path_key_suffixes: tuple[str, ...] = ()
    omitempty: bool = False
    deprecated: bool = False


def spec(key: str, kind: Kind, doc: str, **options: Any) -> dict[str, FieldSpec]:
    """Dataclass field metadata holding the :class:`FieldSpec` of one YAML field."""
    return {_SPEC: FieldSpec(key, kind, doc, **options)}


@functools.cache
def field_specs(cls: type) -> tuple[tuple[str, FieldSpec], ...]:
    """``(attribute, spec)`` for each YAML field of a schema dataclass, in Origin's order."""
    return tuple(
        (f.name, f.metadata[_SPEC]) for f in dataclasses.fields(cls) if _SPEC in f.metadata
    )


def join_path(parent: str, key: str) -> str:
    """A field path one key deeper: ``servingInfo`` + ``certFile`` -> ``servingInfo.certFile``."""
    return f"{parent}.{key}" if parent else key


def key_text(key: Any) -> str:
    """A mapping key as Go's YAML-to-JSON step spells it (``1``, ``true``, ``null``): every
    loaded document's keys are strings, whatever YAML type they were written as."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def index_path(parent: str, index: int) -> str:
    """A field path into a list: ``dnsNameservers[0]``."""
    return f"{parent}[{index}]"


def yaml_keys(cls: type) -> tuple[str, ...]:
    """The YAML keys a schema dataclass accepts, in Origin's order."""
    return tuple(spec.key for _, spec in field_specs(cls))


# JSON-schema hints, never stricter than the loader and validator: what Go's
# net.SplitHostPort accepts, and Go durations (or empty, meaning the default).
_HOST_PORT = r"^$|^(\[[^\]]*\]|[^:\[\]]*):[^:\[\]]*$"
_DURATION = r"^$|^[-+]?0$|^[-+]?([0-9]*(\.[0-9]*)?(ns|us|\u00b5s|\u03bcs|ms|s|m|h))+$"


@frozen
class NamedCertificate:
    """A certificate served for specific host names (SNI)."""

    names: tuple[str, ...] = field(
        default_factory=tuple,
        metadata=spec(
            "names",
            Kind.STRING_LIST,
            "Host names (wildcards allowed) that select this certificate.",
        ),
    )
    cert_file: str = field(
        default="",
        metadata=spec("certFile", Kind.STRING, "PEM-encoded certificate file.", is_path=True),
    )
    key_file: str = field(
        default="",
        metadata=spec(
            "keyFile", Kind.STRING, "PEM-encoded private key file for certFile.", is_path=True
        ),
    )


@frozen
class ServingInfo:
    """How the kubelet serves its API (Origin's ``ServingInfo`` with inline ``CertInfo``)."""

    bind_address: str = field(
        default="",
        metadata=spec("bindAddress", Kind.STRING, "The ip:port to serve on.", pattern=_HOST_PORT),
    )
    bind_network: str = field(
        default=d.DEFAULT_BIND_NETWORK,
        metadata=spec(
            "bindNetwork",
            Kind.STRING,
            "Network type to bind: tcp, tcp4 or tcp6 (nodes: tcp or tcp4).",
            enum=BIND_NETWORKS,
        ),
    )
    cert_file: str = field(
        default="",
        metadata=spec(
            "certFile", Kind.STRING, "PEM-encoded serving certificate file.", is_path=True
        ),
    )
    key_file: str = field(
        default="",
        metadata=spec(
            "keyFile", Kind.STRING, "PEM-encoded private key file for certFile.", is_path=True
        ),
    )
    client_ca: str = field(
        default="",
        metadata=spec(
            "clientCA",
            Kind.STRING,
            "Certificate bundle used to verify client certificates; empty disables client "
            "certificate authentication.",
            is_path=True,
        ),
    )
    named_certificates: tuple[NamedCertificate, ...] = field(
        default_factory=tuple,
        metadata=spec(
            "namedCertificates",
            Kind.OBJECT_LIST,
            "Certificates served for specific host names; requires certFile/keyFile.",
            nested=NamedCertificate,
        ),
    )
    min_tls_version: str = field(
        default="",
        metadata=spec(
            "minTLSVersion",
            Kind.STRING,
            "Minimum TLS version: VersionTLS10, VersionTLS11 or VersionTLS12 "
            "(empty: VersionTLS12).",
            enum=("", *TLS_VERSIONS),
            omitempty=True,
        ),
    )
    cipher_suites: tuple[str, ...] = field(
        default_factory=tuple,
        metadata=spec(
            "cipherSuites",
            Kind.STRING_LIST,
            "Allowed cipher suites by Go name (empty: Origin's default list).",
            enum=CIPHER_SUITES,
            omitempty=True,
        ),
    )


@frozen
class ClientConnectionOverrides:
    """Overrides for the client connection to the master."""

    accept_content_types: str = field(
        default=d.JSON_CONTENT_TYPE,
        metadata=spec(
            "acceptContentTypes", Kind.STRING, "The Accept header sent to the API server."
        ),
    )
    content_type: str = field(
        default=d.JSON_CONTENT_TYPE,
        metadata=spec(
            "contentType", Kind.STRING, "The content type of requests sent to the API server."
        ),
    )
    qps: float = field(
        default=0.0,
        metadata=spec("qps", Kind.FLOAT, "Queries per second allowed to the API server."),
    )
    burst: int = field(
        default=0, metadata=spec("burst", Kind.INT, "Extra queries allowed in a burst.")
    )


@frozen
class NetworkConfig:
    """Pod network options."""

    network_plugin_name: str = field(
        default="",
        metadata=spec(
            "networkPluginName",
            Kind.STRING,
            "Network plugin: an OpenShift SDN name (redhat/openshift-ovs-subnet, "
            "redhat/openshift-ovs-multitenant, redhat/openshift-ovs-networkpolicy), a CNI name, "
            "or a provider from a plugin.",
        ),
    )
    mtu: int = field(
        default=d.DEFAULT_MTU,
        metadata=spec("mtu", Kind.UINT32, "Maximum transmission unit of pod network packets."),
    )


@frozen
class ImageConfig:
    """How to build image names for system components."""

    format: str = field(
        default="",
        metadata=spec(
            "format",
            Kind.STRING,
            "Image name template; ${component} and ${version} are substituted "
            "(e.g. openshift/origin-${component}:${version}).",
        ),
    )
    latest: bool = field(
        default=False,
        metadata=spec("latest", Kind.BOOL, "Use the latest tag instead of the version."),
    )


@frozen
class PodManifestConfig:
    """Static pods read from a local file or directory."""

    path: str = field(
        default="",
        metadata=spec(
            "path", Kind.STRING, "Manifest file or directory for static pods.", is_path=True
        ),
    )
    file_check_interval_seconds: int = field(
        default=0,
        metadata=spec(
            "fileCheckIntervalSeconds",
            Kind.INT,
            "Seconds between checks of path for new data; must be positive.",
        ),
    )


@frozen
class NodeAuthConfig:
    """Caching of the kubelet's webhook authentication and authorization."""

    authentication_cache_ttl: str = field(
        default=d.DEFAULT_AUTH_CACHE_TTL,
        metadata=spec(
            "authenticationCacheTTL",
            Kind.STRING,
            "How long an authentication result is cached (Go duration, e.g. 5m; 0 disables).",
            pattern=_DURATION,
        ),
    )
    authentication_cache_size: int = field(
        default=d.DEFAULT_AUTH_CACHE_SIZE,
        metadata=spec(
            "authenticationCacheSize", Kind.INT, "How many authentication results are cached."
        ),
    )
    authorization_cache_ttl: str = field(
        default=d.DEFAULT_AUTH_CACHE_TTL,
        metadata=spec(
            "authorizationCacheTTL",
            Kind.STRING,
            "How long an authorization result is cached (Go duration, e.g. 5m; 0 disables).",
            pattern=_DURATION,
        ),
    )
    authorization_cache_size: int = field(
        default=d.DEFAULT_AUTH_CACHE_SIZE,
        metadata=spec(
            "authorizationCacheSize", Kind.INT, "How many authorization results are cached."
        ),
    )


@frozen
class DockerConfig:
    """Docker and dockershim settings."""

    exec_handler_name: str = field(
        default=d.DEFAULT_EXEC_HANDLER,
        metadata=spec(
            "execHandlerName",
            Kind.STRING,
            "Handler for executing commands in containers: native or nsenter.",
            enum=EXEC_HANDLERS,
        ),
    )
    docker_shim_socket: str = field(
        default=d.DEFAULT_DOCKER_SHIM_SOCKET,
        metadata=spec("dockerShimSocket", Kind.STRING, "The dockershim socket the kubelet uses."),
    )
    docker_shim_root_directory: str = field(
        default=d.DEFAULT_DOCKER_SHIM_ROOT_DIRECTORY,
        metadata=spec("dockerShimRootDirectory", Kind.STRING, "The dockershim root directory."),
    )


@frozen
class LocalQuota:
    """Local volume quota."""

    per_fs_group: Quantity | None = field(
        default=None,
        metadata=spec(
            "perFSGroup",
            Kind.QUANTITY,
            "Quota per unique FSGroup for emptyDir volumes (XFS volumeDirectory only), "
            "e.g. 512Mi; null disables.",
        ),
    )


@frozen
class VolumeConfig:
    """Volume options of the node."""

    local_quota: LocalQuota = field(
        default_factory=LocalQuota,
        metadata=spec("localQuota", Kind.OBJECT, "Local volume quota options.", nested=LocalQuota),
    )


def _empty_arguments() -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType({})


@frozen
class NodeConfig:
    """A complete v1 NodeConfig: defaults applied, paths absolute once loaded.

    Besides Origin's fields: ``extra`` holds the top-level sections owned by
    plugins (raw, e.g. a network provider's settings), ``source`` the file it
    came from (or ``"<generated>"``) and ``base_dir`` the directory relative
    paths were resolved against.  ``source`` and ``base_dir`` do not take part
    in equality.
    """

    node_name: str = field(
        default="",
        metadata=spec(
            "nodeName",
            Kind.STRING,
            "The name identifying this node in the cluster; ideally the fully qualified hostname.",
        ),
    )
    node_ip: str = field(
        default="",
        metadata=spec(
            "nodeIP",
            Kind.STRING,
            "IP used for pod traffic routing; empty means the first non-loopback address of "
            "nodeName.",
        ),
    )
    serving_info: ServingInfo = field(
        default_factory=ServingInfo,
        metadata=spec(
            "servingInfo", Kind.OBJECT, "How the kubelet serves its API.", nested=ServingInfo
        ),
    )
    master_kube_config: str = field(
        default="",
        metadata=spec(
            "masterKubeConfig",
            Kind.STRING,
            "The kubeconfig file used to connect to the master.",
            is_path=True,
        ),
    )
    master_client_connection_overrides: ClientConnectionOverrides = field(
        default_factory=lambda: ClientConnectionOverrides(qps=d.DEFAULT_QPS, burst=d.DEFAULT_BURST),
        metadata=spec(
            "masterClientConnectionOverrides",
            Kind.OBJECT,
            "Overrides for the client connection to the master.",
            nested=ClientConnectionOverrides,
        ),
    )
    dns_domain: str = field(
        default="",
        metadata=spec(
            "dnsDomain", Kind.STRING, "Domain suffix of the DNS search path inside containers."
        ),
    )
    dns_ip: str = field(
        default="",
        metadata=spec(
            "dnsIP",
            Kind.STRING,
            "IP pods use for cluster DNS (must listen on port 53); 0.0.0.0 means this node's IP.",
        ),
    )
    dns_bind_address: str = field(
        default="",
        metadata=spec(
            "dnsBindAddress",
            Kind.STRING,
            "The ip:port the node DNS server listens on; empty: no DNS server.",
            pattern=_HOST_PORT,
        ),
    )
    dns_nameservers: tuple[str, ...] = field(
        default_factory=tuple,
        metadata=spec(
            "dnsNameservers",
            Kind.STRING_LIST,
            "ip:port of recursive nameservers to forward to; empty: those of /etc/resolv.conf.",
        ),
    )
    dns_recursive_resolv_conf: str = field(
        default="",
        metadata=spec(
            "dnsRecursiveResolvConf",
            Kind.STRING,
            "A resolv.conf whose nameservers are added to dnsNameservers.",
            is_path=True,
        ),
    )
    network_plugin_name: str = field(
        default="",
        metadata=spec(
            "networkPluginName",
            Kind.STRING,
            "Deprecated: use networkConfig.networkPluginName.",
            omitempty=True,
            deprecated=True,
        ),
    )
    network_config: NetworkConfig = field(
        default_factory=NetworkConfig,
        metadata=spec("networkConfig", Kind.OBJECT, "Pod network options.", nested=NetworkConfig),
    )
    volume_directory: str = field(
        default="",
        metadata=spec(
            "volumeDirectory", Kind.STRING, "The directory volumes are stored under.", is_path=True
        ),
    )
    image_config: ImageConfig = field(
        default_factory=ImageConfig,
        metadata=spec(
            "imageConfig",
            Kind.OBJECT,
            "How to build image names for system components.",
            nested=ImageConfig,
        ),
    )
    allow_disabled_docker: bool = field(
        default=False,
        metadata=spec(
            "allowDisabledDocker",
            Kind.BOOL,
            "Start even if Docker is not available (the kubelet ignores Docker errors).",
        ),
    )
    pod_manifest_config: PodManifestConfig | None = field(
        default=None,
        metadata=spec(
            "podManifestConfig",
            Kind.OPTIONAL_OBJECT,
            "Static pods from local manifest files; null disables.",
            nested=PodManifestConfig,
        ),
    )
    auth_config: NodeAuthConfig = field(
        default_factory=NodeAuthConfig,
        metadata=spec(
            "authConfig",
            Kind.OBJECT,
            "Caching of webhook authentication and authorization.",
            nested=NodeAuthConfig,
        ),
    )
    docker_config: DockerConfig = field(
        default_factory=DockerConfig,
        metadata=spec(
            "dockerConfig", Kind.OBJECT, "Docker and dockershim settings.", nested=DockerConfig
        ),
    )
    kubelet_arguments: Mapping[str, tuple[str, ...]] = field(
        default_factory=_empty_arguments,
        metadata=spec(
            "kubeletArguments",
            Kind.ARGUMENTS,
            "Raw kubelet flags (name without dashes -> list of values); they override every "
            "other setting.",
            path_key_suffixes=("-file", "-dir"),
            omitempty=True,
        ),
    )
    proxy_arguments: Mapping[str, tuple[str, ...]] = field(
        default_factory=_empty_arguments,
        metadata=spec(
            "proxyArguments",
            Kind.ARGUMENTS,
            "Raw kube-proxy flags (name without dashes -> list of values).",
            omitempty=True,
        ),
    )
    iptables_sync_period: str = field(
        default=d.DEFAULT_IPTABLES_SYNC_PERIOD,
        metadata=spec(
            "iptablesSyncPeriod",
            Kind.STRING,
            "How often iptables rules are refreshed (Go duration, e.g. 30s).",
            pattern=_DURATION,
        ),
    )
    enable_unidling: bool = field(
        default=d.DEFAULT_ENABLE_UNIDLING,
        metadata=spec("enableUnidling", Kind.BOOL, "Set up the hybrid unidling proxy."),
    )
    volume_config: VolumeConfig = field(
        default_factory=VolumeConfig,
        metadata=spec(
            "volumeConfig", Kind.OBJECT, "Volume options of the node.", nested=VolumeConfig
        ),
    )
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    source: str = field(default="<generated>", compare=False)
    base_dir: str = field(default=".", compare=False)
    #: Keys the file set that nodehost does not act on (:mod:`nodehost.config.noeffect`).
    set_without_effect: tuple[str, ...] = field(default=(), compare=False)


#: Top-level keys that are not NodeConfig fields but belong in every document.
TYPE_META_KEYS = ("apiVersion", "kind")

"""The kubelet's arguments: Origin's ``ComputeKubeletFlags`` for a current kubelet.

One computation, two renderings.  :func:`kubelet_arguments` gives the
kubelet's settings as Origin's flag mapping (flag name -> values), and then

* :func:`flag_arguments` renders every setting as ``--name=value`` (sorted,
  Origin's ``--write-flags`` form, usable on a kubelet command line as is);
* :func:`launch_arguments` splits them into a ``KubeletConfiguration`` file
  (every flag backed by a config field, holding what the flag would set) and
  the flags that stay on the command line (``--kubeconfig``, ``--root-dir``,
  ``--node-ip``, ``--hostname-override``, ...).  nodehost runs the kubelet
  this way.

Precedence follows Origin: nodehost's defaults (:ref:`origin-kubelet-arguments`), then the
contributions of plugins (``nodehost_kubelet_arguments``), then
``kubeletArguments``; a later key replaces an earlier one whole, and a key
with an empty list removes the setting (no flag, no config field).

Where a current kubelet differs from Origin's, nodehost translates:

* flags the kubelet removed are renamed or dropped
  (:data:`nodehost.plugins.kubelet.flags.KUBELET_REMOVED_FLAGS`), in nodehost's defaults, in
  contributions and in ``kubeletArguments`` alike;
* ``pod-infra-container-image`` is ``imageConfig.format`` expanded for the
  component ``pod`` (:mod:`nodehost.config.images`), as Origin computed it.
  A current kubelet still takes the flag (deprecated; removed in v1.35) but
  only to keep that image from garbage collection: the pod sandbox image is
  the CRI runtime's setting, which the ``runtime`` component writes into the
  containerd it runs;
* ``container-runtime-endpoint``/``image-service-endpoint``: Origin's default
  dockershim socket (``unix://`` or the bare path openshift-ansible wrote;
  dockershim was removed in v1.24) becomes containerd's
  socket, the current kubelet's own default; another ``dockerShimSocket`` is
  passed as Origin did;
* ``healthz-port``/``healthz-bind-address``: Origin turned the healthz server
  off (``0``/``""``); nodehost needs it for readiness, so it sets the
  kubelet's defaults, ``10248`` on ``127.0.0.1``, explicitly;
* ``cluster-dns`` given as an empty list: Origin looked the DNS service up on
  the master; nodehost does not reach the API server while planning, so the
  empty list removes the setting like any other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodehost.config import defaults as config_defaults
from nodehost.config.hostport import split_host_port
from nodehost.config.tls import DEFAULT_CIPHER_SUITES, DEFAULT_TLS_VERSION
from nodehost.flagsline import format_flags_line
from nodehost.frozen import frozen
from nodehost.kube.flags import Launch, Translation, flag_arguments
from nodehost.kube.goparse import FlagError, parse_bool
from nodehost.kube.values import Value
from nodehost.plugins.kubelet.configfile import (
    KUBELET_CONFIG_API_VERSION,
    KUBELET_CONFIG_KIND,
    KUBELET_HEALTHZ_BIND_ADDRESS,
    KUBELET_HEALTHZ_PORT,
)
from nodehost.plugins.kubelet.flags import KUBELET_FLAGS

Arguments = dict[str, list[str]]

#: The kubelet's default runtime endpoint, used instead of Origin's dockershim default.
CONTAINERD_ENDPOINT = "unix:///run/containerd/containerd.sock"


@frozen
class Requirement:
    """One of Origin's ``CheckFlags`` needles (:ref:`origin-kubelet-required-settings`) and the
    value it demands, if any."""

    needle: str
    value: str | None = None

    def holds(self, values: Sequence[str]) -> bool:
        """Whether the effective setting (the last value) satisfies it."""
        if not values:
            return False
        if self.value == "true":
            return _is_true(values[-1])
        return self.value is None or values[-1] == self.value


#: Origin's ``CheckFlags`` on the final settings: flag name -> requirement.
REQUIRED_SECURITY: Mapping[str, Requirement] = {
    "authentication-token-webhook": Requirement("--authentication-token-webhook=true", "true"),
    "authorization-mode": Requirement("--authorization-mode=Webhook", "Webhook"),
    "tls-min-version": Requirement("--tls-min-version="),
    "tls-cipher-suites": Requirement("--tls-cipher-suites="),
}


class ArgumentsError(ValueError):
    """The arguments cannot be computed or rendered; the message says which and why."""


def default_arguments(config: Any) -> Arguments:
    """nodehost's defaults from NodeConfig: :ref:`origin-kubelet-arguments`, translated for a
    current kubelet.

    Raise :class:`ArgumentsError` ``cannot parse node address: ...`` when
    ``servingInfo.bindAddress`` is not ``host:port``.
    """
    try:
        host, port = split_host_port(config.serving_info.bind_address)
    except ValueError as error:
        raise ArgumentsError(f"cannot parse node address: {error}") from None
    manifests = config.pod_manifest_config
    endpoint = config.docker_config.docker_shim_socket
    if config_defaults.is_default_docker_shim_socket(endpoint):
        endpoint = CONTAINERD_ENDPOINT
    auth = config.auth_config
    serving = config.serving_info
    return {
        "address": [host],
        "port": [port],
        "kubeconfig": [config.master_kube_config],
        "pod-manifest-path": [manifests.path if manifests else ""],
        "root-dir": [config.volume_directory],
        "node-ip": [config.node_ip],
        "hostname-override": [config.node_name],
        "register-node": ["true"],
        "read-only-port": ["0"],
        "healthz-port": [str(KUBELET_HEALTHZ_PORT)],
        "healthz-bind-address": [KUBELET_HEALTHZ_BIND_ADDRESS],
        "cluster-dns": [config.dns_ip],
        "cluster-domain": [config.dns_domain],
        "http-check-frequency": ["0s"],
        "file-check-frequency": [f"{manifests.file_check_interval_seconds if manifests else 0}s"],
        "pod-infra-container-image": [_pod_image(config.image_config)],
        "max-pods": ["250"],
        "pods-per-core": ["10"],
        "cgroup-driver": ["systemd"],
        "container-runtime-endpoint": [endpoint],
        "image-service-endpoint": [endpoint],
        "authentication-token-webhook": ["true"],
        "authentication-token-webhook-cache-ttl": [auth.authentication_cache_ttl],
        "anonymous-auth": ["true"],
        "client-ca-file": [serving.client_ca],
        "authorization-mode": ["Webhook"],
        "authorization-webhook-cache-authorized-ttl": [auth.authorization_cache_ttl],
        "authorization-webhook-cache-unauthorized-ttl": [auth.authorization_cache_ttl],
        "tls-cert-file": [serving.cert_file],
        "tls-private-key-file": [serving.key_file],
        "tls-cipher-suites": list(serving.cipher_suites or DEFAULT_CIPHER_SUITES),
        "tls-min-version": [serving.min_tls_version or DEFAULT_TLS_VERSION],
    }


def _pod_image(image_config: Any) -> str:
    from nodehost.config.images import ImageTemplateError, pod_image

    try:
        return pod_image(image_config)
    except ImageTemplateError as error:
        raise ArgumentsError(f"imageConfig.format: {error}") from None


@frozen
class KubeletArguments:
    """The merged arguments and what the merge translated.

    ``arguments`` never holds an empty list: a removed setting is absent.
    ``translations`` reports each removed flag found in the contributions or
    ``kubeletArguments`` (renamed or dropped).
    """

    arguments: Arguments
    translations: tuple[Translation, ...]


def merge_arguments(
    defaults: Mapping[str, Sequence[str]],
    contributions: Mapping[str, Sequence[str]],
    user: Mapping[str, Sequence[str]],
) -> KubeletArguments:
    """Origin's precedence: ``user`` over ``contributions`` over ``defaults``, key by key.

    Removed flags are translated in each layer first.  Then Origin's one
    extra rule: ``cgroups-per-qos: [false]`` without ``enforce-node-allocatable``
    adds ``enforce-node-allocatable: [""]`` (no enforcement).  Keys with an
    empty list are dropped last.
    """
    merged: Arguments = {}
    translations: list[Translation] = []
    for layer in (defaults, contributions, user):
        translated, found = KUBELET_FLAGS.translate(layer)
        merged.update(translated)
        translations.extend(found)
    if merged.get("cgroups-per-qos") == ["false"] and "enforce-node-allocatable" not in merged:
        merged["enforce-node-allocatable"] = [""]
    return KubeletArguments(
        {key: values for key, values in merged.items() if values}, tuple(translations)
    )


def kubelet_arguments(config: Any, contributions: Mapping[str, Sequence[str]]) -> KubeletArguments:
    """The kubelet's merged arguments for ``config`` and the plugins' ``contributions``,
    without the node labels a current kubelet refuses (:mod:`nodehost.plugins.kubelet.labels`)."""
    from nodehost.plugins.kubelet.labels import LABELS_FLAG, without_restricted_labels

    merged = merge_arguments(default_arguments(config), contributions, config.kubelet_arguments)
    if LABELS_FLAG not in merged.arguments:
        return merged
    arguments = dict(merged.arguments)
    labels = without_restricted_labels(arguments.pop(LABELS_FLAG))
    if labels:
        arguments[LABELS_FLAG] = labels
    return KubeletArguments(arguments, merged.translations)


def missing_security(arguments: Mapping[str, Sequence[str]]) -> list[str]:
    """Origin's ``CheckFlags`` on the effective settings: the needles that do not hold.

    Webhook authentication must be on (the last value parses as true),
    authorization must be ``Webhook``, and a TLS minimum version and cipher
    suites must be given.
    """
    return [
        requirement.needle
        for key, requirement in REQUIRED_SECURITY.items()
        if not requirement.holds(arguments.get(key, ()))
    ]


def _is_true(text: str) -> bool:
    try:
        return parse_bool(text)
    except ValueError:
        return False


def kubelet_flags_line(config: Any, contributions: Mapping[str, Sequence[str]]) -> str:
    """Origin's ``--write-flags`` line: every setting as a flag, quoted as Origin quotes.

    Pure: writes nothing.  Raise :class:`ArgumentsError` when the arguments
    cannot be computed or lack a required security setting
    (:ref:`origin-kubelet-required-settings`).
    """
    merged = kubelet_arguments(config, contributions).arguments
    require_security(merged)
    return format_flags_line(flag_arguments(merged))


def require_security(arguments: Mapping[str, Sequence[str]]) -> None:
    """Raise :class:`ArgumentsError` naming every required setting that does not hold
    (:ref:`origin-kubelet-required-settings`)."""
    missing = missing_security(arguments)
    if missing:
        raise ArgumentsError(
            "the kubelet would run without required security settings: "
            + ", ".join(missing)
            + " (kubeletArguments or a plugin changed or removed them)"
        )


def launch_arguments(arguments: Mapping[str, Sequence[str]]) -> Launch:
    """Split ``arguments`` into the ``KubeletConfiguration`` file and the remaining flags.

    Raise :class:`ArgumentsError` naming every key that is not a kubelet flag
    or whose value the kubelet would reject (plugins' values are not
    validated elsewhere).
    """
    try:
        return KUBELET_FLAGS.launch(
            arguments, api_version=KUBELET_CONFIG_API_VERSION, kind=KUBELET_CONFIG_KIND
        )
    except FlagError as error:
        raise ArgumentsError(str(error)) from None


def healthz_address(values: Mapping[str, Value]) -> tuple[str, int] | None:
    """The ``(bind host, port)`` of the kubelet's healthz server, None when it is off (port 0)."""
    port = values["healthz-port"].config() if "healthz-port" in values else None
    host = values["healthz-bind-address"].config() if "healthz-bind-address" in values else ""
    if port is None:
        port = KUBELET_HEALTHZ_PORT
    if port == 0:
        return None
    return host or KUBELET_HEALTHZ_BIND_ADDRESS, port

"""The options of ``nodehost start``, checked, as one frozen value.

The CLI builds a :class:`StartOptions` from its flags and calls
:func:`check_start_options`; everything after that (config resolution,
selection, planning, the host) reads this value and never the CLI.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nodehost.config.listen import DEFAULT_LISTEN
from nodehost.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.binaries import StandinMode

DEFAULT_CLUSTER_DOMAIN = "cluster.local"
DEFAULT_VOLUME_DIR = "openshift.local.volumes"
DEFAULT_CONFIG_DIR = "openshift.local.config/node"
DEFAULT_MASTER_CERT_DIR = "openshift.local.config/master"
DEFAULT_EXPIRE_DAYS = 730
DEFAULT_BOOTSTRAP_NAMESPACE = "openshift-node"
DEFAULT_IMAGE_FORMAT = "openshift/origin-${component}:${version}"


def default_node_name() -> str:
    """Origin's default ``--hostname``: ``uname -n`` trimmed and lower-cased, else ``localhost``."""
    name = platform.node().strip().lower()
    return name or "localhost"


def default_cluster_domain() -> str:
    return os.environ.get("OPENSHIFT_DNS_DOMAIN") or DEFAULT_CLUSTER_DOMAIN


@dataclass(frozen=True)
class StartOptions:
    """Every flag of ``nodehost start``; ``None`` means "not given" where that matters.

    ``local_cluster`` is ``--local-cluster DIR``: a plugin (``localcluster``)
    turns it into the other options it implies (``nodehost_start_options``).
    ``standins`` is ``--standins`` (None: not given, which means ``never``).
    ``node_ip`` is ``--node-ip`` (None: not given; the config's ``nodeIP`` stands).
    ``node_labels`` / ``node_taints`` are ``--node-label`` / ``--node-taint``
    (:mod:`nodehost.kube.nodelabels`).
    """

    config: str | None = None
    components: str | None = None
    enable: str | None = None
    disable: str = ""
    dry_run: bool = False
    write_config: str | None = None
    write_flags: bool = False
    hostname: str = field(default_factory=default_node_name)
    listen: str = DEFAULT_LISTEN
    listen_provided: bool = False
    volume_dir: str = DEFAULT_VOLUME_DIR
    volume_dir_provided: bool = False
    network_plugin: str = ""
    recursive_resolv_conf: str = ""
    images: str = DEFAULT_IMAGE_FORMAT
    latest_images: bool = False
    kubernetes: str | None = None
    kubeconfig: str = ""
    bootstrap_config_name: str = ""
    bootstrap_config_namespace: str = DEFAULT_BOOTSTRAP_NAMESPACE
    bootstrap_timeout: float = 3600.0
    serving_cert_wait: float = 15.0
    expire_days: int = DEFAULT_EXPIRE_DAYS
    master_cert_dir: str = DEFAULT_MASTER_CERT_DIR
    config_dir: str = DEFAULT_CONFIG_DIR
    strict_config: bool = False
    state_dir: str | None = None
    extra_args: tuple[str, ...] = ()
    local_cluster: str | None = None
    standins: StandinMode | None = None
    node_ip: str | None = None
    node_labels: tuple[str, ...] = ()
    node_taints: tuple[str, ...] = ()

    @property
    def bootstrapping(self) -> bool:
        return bool(self.bootstrap_config_name)


#: The longest certificate lifetime accepted (100 years; X.509 dates end at 9999).
MAX_EXPIRE_DAYS = 36500


def check_expire_days(days: int) -> None:
    """``--expire-days`` must be 0 (the default lifetime) up to :data:`MAX_EXPIRE_DAYS`."""
    if days < 0:
        raise UsageError("expire-days must be valid number of days", "--expire-days")
    if days > MAX_EXPIRE_DAYS:
        raise UsageError(
            f"expire-days must be at most {MAX_EXPIRE_DAYS} (100 years)", "--expire-days"
        )


def check_start_options(options: StartOptions) -> None:
    """Origin's ``NodeOptions.Validate`` (:ref:`origin-flag-checks`); raises ``UsageError``."""
    if options.extra_args:
        raise UsageError("no arguments are supported for start node")
    _check_listen(options.listen)
    check_expire_days(options.expire_days)
    if options.kubernetes is not None:
        raise UsageError(
            "--kubernetes is no longer allowed, try using --kubeconfig", "--kubernetes"
        )
    if options.write_config is not None:
        if options.config:
            raise UsageError("--config may not be set if you're only writing the config")
        if options.write_flags:
            raise UsageError("--write-config and --write-flags are mutually exclusive")
    if options.bootstrapping:
        if options.write_flags:
            raise UsageError("--write-flags is mutually exclusive with --bootstrap-config-name")
        if not options.bootstrap_config_namespace:
            raise UsageError("--bootstrap-config-namespace must be specified")
    if options.node_ip is not None:
        _check_node_ip(options.node_ip)
    _check_node_labels(options.node_labels, options.node_taints)
    if options.dry_run and options.write_flags:
        raise UsageError("--dry-run and --write-flags are mutually exclusive")


def _check_node_ip(value: str) -> None:
    from nodehost.nodeip import NodeIPSyntaxError, parse_node_ip

    try:
        parse_node_ip(value)
    except NodeIPSyntaxError as error:
        raise UsageError(f"{value!r} is not a node IP: {error}", "--node-ip") from error


def _check_node_labels(labels: tuple[str, ...], taints: tuple[str, ...]) -> None:
    """Each ``--node-label`` and ``--node-taint`` as the kubelet checks it; ``UsageError``."""
    if not labels and not taints:
        return
    from nodehost.kube.nodelabels import duplicate_taints, label_problem, taint_problem

    for label in labels:
        problem = label_problem(label)
        if problem:
            raise UsageError(f"{label!r}: {problem}", "--node-label")
    for taint in taints:
        problem = taint_problem(taint)
        if problem:
            raise UsageError(f"{taint!r}: {problem}", "--node-taint")
    for taint in duplicate_taints(taints):
        raise UsageError(
            f"{taint!r}: a taint with this key and effect is given twice", "--node-taint"
        )


def _check_listen(value: str) -> None:
    from nodehost.config.listen import parse_listen

    try:
        parse_listen(value)
    except ValueError as error:
        raise UsageError(f"{value!r} is not a listen address: {error}", "--listen") from error

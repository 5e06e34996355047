"""The options of ``nodehost start``, checked, as one frozen value.

The CLI builds a :class:`StartOptions` from its flags and calls
:func:`check_start_options`; everything after that (config resolution,
selection, planning, the host) reads this value and never the CLI.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from nodehost.config.listen import DEFAULT_LISTEN
from nodehost.errors import UsageError
from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.binaries import StandinMode

#: The words of nodehost's own ``start``, ``check`` and ``install`` options (flags, value
#: names, variables): an option a plugin declares with one of them fails that plugin
#: (:mod:`nodehost.pluginhost.clashes`).  Kept here, without click, so that loading plugins
#: does not import the CLI; ``tests/cli/test_plugin_options.py`` checks it against the commands.
HOST_OPTION_WORDS = frozenset(
    {
        # flags
        "--binary",
        "--components",
        "--config",
        "--config-dir",
        "--config-rollback-after",
        "--crash-loop-limit",
        "--disable",
        "--disable-plugin",
        "--dry-run",
        "--enable",
        "--exit-on-ready",
        "--expire-days",
        "--force",
        "--health-address",
        "--hostname",
        "--ignore-preflight-errors",
        "--images",
        "--json",
        "--kubeconfig",
        "--kubernetes",
        "--latest-images",
        "--listen",
        "--log-format",
        "--loglevel",
        "--master-cert-dir",
        "--network-plugin",
        "--no-exec",
        "--no-plugins",
        "--node-ip",
        "--now",
        "--ready-timeout",
        "--recursive-resolv-conf",
        "--set",
        "--standins",
        "--state-dir",
        "--strict-config",
        "--strict-plugins",
        "--volume-dir",
        "--write-config",
        "--write-flags",
        # variables
        "NODEHOST_BINARY",
        "NODEHOST_COMPONENTS",
        "NODEHOST_CONFIG",
        "NODEHOST_CONFIG_DIR",
        "NODEHOST_CONFIG_ROLLBACK_AFTER",
        "NODEHOST_CRASH_LOOP_LIMIT",
        "NODEHOST_DISABLE",
        "NODEHOST_DISABLE_PLUGINS",
        "NODEHOST_DRY_RUN",
        "NODEHOST_ENABLE",
        "NODEHOST_EXIT_ON_READY",
        "NODEHOST_EXPIRE_DAYS",
        "NODEHOST_FORCE",
        "NODEHOST_HEALTH_ADDRESS",
        "NODEHOST_HOSTNAME",
        "NODEHOST_IGNORE_PREFLIGHT_ERRORS",
        "NODEHOST_IMAGES",
        "NODEHOST_JSON",
        "NODEHOST_KUBECONFIG",
        "NODEHOST_KUBERNETES",
        "NODEHOST_LATEST_IMAGES",
        "NODEHOST_LISTEN",
        "NODEHOST_LOGLEVEL",
        "NODEHOST_LOG_FORMAT",
        "NODEHOST_MASTER_CERT_DIR",
        "NODEHOST_NETWORK_PLUGIN",
        "NODEHOST_NODE_IP",
        "NODEHOST_NOW",
        "NODEHOST_NO_EXEC",
        "NODEHOST_NO_PLUGINS",
        "NODEHOST_READY_TIMEOUT",
        "NODEHOST_RECURSIVE_RESOLV_CONF",
        "NODEHOST_SET",
        "NODEHOST_STANDINS",
        "NODEHOST_STATE_DIR",
        "NODEHOST_STRICT_CONFIG",
        "NODEHOST_STRICT_PLUGINS",
        "NODEHOST_VOLUME_DIR",
        "NODEHOST_WRITE_CONFIG",
        "NODEHOST_WRITE_FLAGS",
        # value names
        "as_json",
        "binaries",
        "components",
        "config",
        "config_dir",
        "config_rollback_after",
        "crash_loop_limit",
        "disable",
        "disable_plugins",
        "dry_run",
        "enable",
        "exit_on_ready",
        "expire_days",
        "force",
        "health_address",
        "hostname",
        "ignore_preflight_errors",
        "images",
        "kubeconfig",
        "kubernetes",
        "latest_images",
        "listen",
        "log_format",
        "loglevel",
        "master_cert_dir",
        "network_plugin",
        "no_exec",
        "no_plugins",
        "node_ip",
        "now",
        "print_only",
        "ready_timeout",
        "recursive_resolv_conf",
        "settings",
        "standins",
        "state_dir",
        "strict_config",
        "strict_plugins",
        "volume_dir",
        "write_config",
        "write_flags",
    }
)

DEFAULT_CLUSTER_DOMAIN = "cluster.local"
DEFAULT_VOLUME_DIR = "openshift.local.volumes"
DEFAULT_CONFIG_DIR = "openshift.local.config/node"
DEFAULT_MASTER_CERT_DIR = "openshift.local.config/master"
DEFAULT_EXPIRE_DAYS = 730
DEFAULT_IMAGE_FORMAT = "openshift/origin-${component}:${version}"


def default_node_name() -> str:
    """Origin's default ``--hostname``: ``uname -n`` trimmed and lower-cased, else ``localhost``."""
    name = platform.node().strip().lower()
    return name or "localhost"


def default_cluster_domain() -> str:
    return os.environ.get("OPENSHIFT_DNS_DOMAIN") or DEFAULT_CLUSTER_DOMAIN


@frozen
class StartOptions:
    """Every flag of ``nodehost start``; ``None`` means "not given" where that matters.

    ``standins`` is ``--standins`` (None: not given, which means ``never``).
    ``node_ip`` is ``--node-ip`` (None: not given; the config's ``nodeIP`` stands).
    ``settings`` are ``--set SECTION.KEY=VALUE`` (``nodehost.config.setflags``).
    ``plugin_values`` holds the value of each option a plugin declares
    (``nodehost_options``), keyed by the record's ``dest`` (``--my-flag``: ``my_flag``).
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
    expire_days: int = DEFAULT_EXPIRE_DAYS
    master_cert_dir: str = DEFAULT_MASTER_CERT_DIR
    config_dir: str = DEFAULT_CONFIG_DIR
    strict_config: bool = False
    state_dir: str | None = None
    extra_args: tuple[str, ...] = ()
    standins: StandinMode | None = None
    node_ip: str | None = None
    settings: tuple[str, ...] = ()
    plugin_values: Mapping[str, Any] = field(default_factory=dict, hash=False)


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
    if options.node_ip is not None:
        _check_node_ip(options.node_ip)
    if options.dry_run and options.write_flags:
        raise UsageError("--dry-run and --write-flags are mutually exclusive")
    _check_settings(options)


def _check_settings(options: StartOptions) -> None:
    """``--set`` only where a config is generated from flags and then read."""
    if not options.settings:
        return
    from nodehost.config.setflags import FLAG, parse_setting

    for text in options.settings:
        parse_setting(text)
    if options.config:
        raise UsageError("sets keys of a config generated from flags; edit --config's file", FLAG)
    if options.write_config is not None:
        raise UsageError("does not go with --write-config (edit the written file)", FLAG)


def _check_node_ip(value: str) -> None:
    from nodehost.nodeip import NodeIPSyntaxError, parse_node_ip

    try:
        parse_node_ip(value)
    except NodeIPSyntaxError as error:
        raise UsageError(f"{value!r} is not a node IP: {error}", "--node-ip") from error


def _check_listen(value: str) -> None:
    from nodehost.config.listen import parse_listen

    try:
        parse_listen(value)
    except ValueError as error:
        raise UsageError(f"{value!r} is not a listen address: {error}", "--listen") from error

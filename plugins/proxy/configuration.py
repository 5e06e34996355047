"""kube-proxy's settings from NodeConfig: Origin's proxy build (:ref:`origin-proxy`) for a current
kube-proxy.

Like the kubelet's, the settings are computed as a flag mapping (flag name ->
values): nodehost's defaults, then ``proxyArguments`` (a key replaces the
default whole; an empty list removes it).  Then every flag backed by a
``KubeProxyConfiguration`` field goes into the config file -- a current
kube-proxy ignores those flags when ``--config`` is given -- and the others
(``--master``, the logging flags) stay on the command line.

nodehost's defaults, as Origin built them:

==================================  ==========================================
``mode``                            ``iptables``
``bindAddress``                     the IP of ``servingInfo.bindAddress``
``iptables.syncPeriod``             ``iptablesSyncPeriod``
``clientConnection.kubeconfig``     ``masterKubeConfig``
``clientConnection`` qps, burst,    ``masterClientConnectionOverrides``
contentType, acceptContentTypes     (the last one has no flag: written into
                                    the file by the plugin)
``hostnameOverride``                ``nodeName``
``healthzBindAddress``              ``0.0.0.0:10256`` (kube-proxy's default)
``oomScoreAdj``                     ``0``
``iptables.masqueradeBit``          ``0``
==================================  ==========================================

Differences from Origin: Origin turned the metrics server off unless
``proxyArguments`` set ``metrics-bind-address``; a current kube-proxy cannot
turn it off from its config file (an empty address means its default), so
without that key nodehost leaves kube-proxy's default (``127.0.0.1:10249``,
loopback only).  The same holds for healthz.  ``healthz-port`` and
``metrics-port`` set the port of the matching address, as Origin's kube-proxy
did; ``0`` empties the address, which a current kube-proxy reads as its
default.  Removed flags (:data:`nodehost.plugins.proxy.flags.KUBE_PROXY_REMOVED_FLAGS`) are
dropped or renamed.  An address with an empty host (``:11257``, as
openshift-ansible 3.11 wrote ``metrics-bind-address``) was Go's "every
interface" to Origin, which listened on it itself; a current kube-proxy wants
an IP, so it becomes ``0.0.0.0:<port>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodehost.config.hostport import join_host_port, parse_ip, split_host_port
from nodehost.frozen import frozen
from nodehost.kube.flags import Launch, Translation
from nodehost.kube.goparse import FlagError, parse_int
from nodehost.kube.values import Value
from nodehost.plugins.proxy.configfile import (
    KUBE_PROXY_CONFIG_API_VERSION,
    KUBE_PROXY_CONFIG_KIND,
    KUBE_PROXY_HEALTHZ_BIND_ADDRESS,
    KUBE_PROXY_METRICS_BIND_ADDRESS,
    kube_proxy_healthz_address,
)
from nodehost.plugins.proxy.flags import KUBE_PROXY_FLAGS

Arguments = dict[str, list[str]]

#: Address flags where Origin took ``:<port>`` (Go's listen address) for every interface.
_LISTEN_ADDRESS_FLAGS = ("metrics-bind-address", "healthz-bind-address")

#: Deprecated port flags and the address each one changes.
_PORT_FLAGS = (
    ("healthz-port", "healthz-bind-address", KUBE_PROXY_HEALTHZ_BIND_ADDRESS),
    ("metrics-port", "metrics-bind-address", KUBE_PROXY_METRICS_BIND_ADDRESS),
)


class ArgumentsError(ValueError):
    """The proxy's settings cannot be computed; the message says which and why."""


def bind_ip(bind_address: str) -> str:
    """The IP of ``servingInfo.bindAddress``; :class:`ArgumentsError` if it is not ``ip:port``."""
    try:
        host, _ = split_host_port(bind_address)
    except ValueError as error:
        raise ArgumentsError(f"servingInfo.bindAddress: {error}") from None
    if parse_ip(host) is None:
        raise ArgumentsError(
            f"servingInfo.bindAddress {bind_address!r}: kube-proxy needs an IP address, "
            f"not {host!r}"
        )
    return host


def default_arguments(config: Any) -> Arguments:
    """nodehost's defaults for kube-proxy (see the module docstring)."""
    client = config.master_client_connection_overrides
    return {
        "proxy-mode": ["iptables"],
        "bind-address": [bind_ip(config.serving_info.bind_address)],
        "iptables-sync-period": [config.iptables_sync_period],
        "kubeconfig": [config.master_kube_config],
        "kube-api-content-type": [client.content_type],
        "kube-api-qps": [repr(float(client.qps))],
        "kube-api-burst": [str(client.burst)],
        "hostname-override": [config.node_name],
        "healthz-bind-address": [KUBE_PROXY_HEALTHZ_BIND_ADDRESS],
        "oom-score-adj": ["0"],
        "iptables-masquerade-bit": ["0"],
    }


@frozen
class ProxyArguments:
    """The merged arguments (no empty lists) and the removed flags translated."""

    arguments: Arguments
    translations: tuple[Translation, ...]


def every_interface(arguments: Mapping[str, Sequence[str]]) -> Arguments:
    """``arguments`` with each ``:<port>`` of an address flag made ``0.0.0.0:<port>``."""
    return {
        key: [
            f"0.0.0.0{value}" if key in _LISTEN_ADDRESS_FLAGS and _empty_host(value) else value
            for value in values
        ]
        for key, values in arguments.items()
    }


def _empty_host(value: str) -> bool:
    return value.startswith(":") and value[1:].isdigit()


def proxy_arguments(config: Any) -> ProxyArguments:
    """Defaults, then ``proxyArguments``; removed flags translated, port flags applied."""
    user, translations = KUBE_PROXY_FLAGS.translate(every_interface(config.proxy_arguments))
    merged = {**default_arguments(config), **user}
    merged = {key: values for key, values in merged.items() if values}
    _apply_port_flags(merged)
    return ProxyArguments(merged, tuple(translations))


def _apply_port_flags(arguments: Arguments) -> None:
    for port_key, address_key, default in _PORT_FLAGS:
        if port_key not in arguments:
            continue
        text = arguments.pop(port_key)[-1]
        try:
            port = parse_int(text, 32)
        except FlagError as error:
            raise ArgumentsError(f"{port_key}={text!r}: {error}") from None
        address = (arguments.get(address_key) or [default])[-1] or default
        arguments[address_key] = [""] if port == 0 else [join_host_port(_host(address), port)]


def _host(address: str) -> str:
    """The host of ``ip`` or ``ip:port`` (brackets removed)."""
    if parse_ip(address) is not None:
        return address
    try:
        return split_host_port(address)[0]
    except ValueError:
        return address


def launch_arguments(arguments: Mapping[str, Sequence[str]]) -> Launch:
    """Split ``arguments`` into the ``KubeProxyConfiguration`` file and the command line.

    Raise :class:`ArgumentsError` naming every key kube-proxy would refuse.
    """
    try:
        return KUBE_PROXY_FLAGS.launch(
            arguments,
            api_version=KUBE_PROXY_CONFIG_API_VERSION,
            kind=KUBE_PROXY_CONFIG_KIND,
        )
    except FlagError as error:
        raise ArgumentsError(str(error)) from None


def healthz_address(values: Mapping[str, Value]) -> tuple[str, int]:
    """Where kube-proxy will serve ``/healthz`` with these settings (as kube-proxy defaults)."""

    def setting(key: str) -> str:
        return values[key].config() if key in values else ""

    return kube_proxy_healthz_address(setting("healthz-bind-address"), setting("bind-address"))

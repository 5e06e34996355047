"""The DNS server's settings, derived from NodeConfig as Origin did (:ref:`origin-dns`).

* listen address: ``dnsBindAddress`` (``host:port``; an empty or wildcard host
  listens on every address, IPv6 and IPv4, as Go did);
* cluster domain: the kubelet's ``cluster-domain`` argument when
  ``kubeletArguments`` sets it, else ``dnsDomain``, else ``cluster.local``;
* upstream resolvers: ``dnsNameservers`` (``ip:port``), then every nameserver of
  ``dnsRecursiveResolvConf`` on port 53; when both give none, those of
  ``/etc/resolv.conf``.  The server's own address is left out (a loop);
* the plugin's own section, ``dnsServerConfig``::

      dnsServerConfig:
        recordsFile: dns-records.yaml   # the file source (relative to the config file)
        recordSources: [file]           # default: every source with something to serve
        forwardTimeout: 2s              # per upstream and question (Go duration)
        reverseCIDRs: [172.30.0.0/16]   # networks whose reverse zones are answered here

* reverse networks: ``dnsServerConfig.reverseCIDRs`` when set (``[]`` for
  none), else the service and pod networks the config names elsewhere:
  ``bridgeNetwork.serviceNetworkCIDR`` and ``podCIDR``, ``proxyArguments``
  ``cluster-cidr`` (comma-separated) and ``kubeletArguments`` ``pod-cidr``
  (values there that are not CIDRs are left to their owners to report);
* the apex's name server ``ns.dns.<domain>``: ``dnsIP``, else the bind
  host when it is one address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from nodehost import Problem
from nodehost.config.hostport import go_atoi, join_host_port, parse_ip, split_host_port
from nodehost.config.sections import (
    CidrListError,
    SectionReader,
    parse_cidr,
    parse_cidr_list,
    section_schema,
)
from nodehost.fileread import TEXT_LIMIT, read_text
from nodehost.frozen import frozen

SECTION = "dnsServerConfig"
DEFAULT_DOMAIN = "cluster.local"
DEFAULT_FORWARD_TIMEOUT = 2.0
HOST_RESOLV_CONF = "/etc/resolv.conf"

Upstream = tuple[str, int]
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
#: A reverse zone is at least a /8 (one octet of ``in-addr.arpa``).
REVERSE_MIN_PREFIX = 8

SCHEMA = section_schema(
    "The node DNS server's own settings (Origin's DNS keys are top-level NodeConfig keys).",
    {
        "recordsFile": {
            "type": "string",
            "description": "Records file for the file source (relative to the config file).",
        },
        "recordSources": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Which record sources run (default: every source with something "
            "to serve).",
        },
        "forwardTimeout": {
            "type": "string",
            "default": "2s",
            "description": "Time given to each upstream per question (Go duration).",
        },
        "reverseCIDRs": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Networks whose reverse zones are answered here, never forwarded "
            "(CIDRs, prefix 8 bits or more; [] for none).",
        },
    },
)


class SettingsError(ValueError):
    """A setting cannot be used; ``problem`` says where and why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.render())
        self.problem = problem


@frozen
class DnsSettings:
    """Everything the server needs; ``record_sources`` None means "every source that applies"."""

    bind_host: str
    bind_port: int
    domain: str = DEFAULT_DOMAIN
    upstreams: tuple[Upstream, ...] = ()
    records_file: str | None = None
    record_sources: tuple[str, ...] | None = None
    forward_timeout: float = DEFAULT_FORWARD_TIMEOUT
    reverse_networks: tuple[IPNetwork, ...] = ()
    ns_addresses: tuple[str, ...] = ()

    @property
    def address(self) -> str:
        return join_host_port(self.bind_host, self.bind_port)


def settings_from_config(config: Any, host_resolv_conf: str = HOST_RESOLV_CONF) -> DnsSettings:
    """The settings for ``config`` (with ``dnsBindAddress`` set); :class:`SettingsError` if bad."""
    host, port = bind_address(config.dns_bind_address)
    section = section_of(config)
    upstreams = [
        upstream
        for upstream in upstreams_of(config, host_resolv_conf)
        if not _is_self(upstream, host, port)
    ]
    return DnsSettings(
        bind_host=host,
        bind_port=port,
        domain=cluster_domain(config),
        upstreams=tuple(upstreams),
        records_file=section.records_file,
        record_sources=section.record_sources,
        forward_timeout=section.forward_timeout,
        reverse_networks=reverse_networks_of(config, section.reverse_cidrs),
        ns_addresses=ns_addresses(config.dns_ip, host),
    )


def bind_address(text: str) -> tuple[str, int]:
    try:
        host, port_text = split_host_port(text)
        port = go_atoi(port_text)
    except ValueError as error:
        raise SettingsError(Problem.invalid("dnsBindAddress", text, str(error))) from None
    if not 0 <= port <= 65535:
        raise SettingsError(Problem.invalid("dnsBindAddress", text, "port out of range"))
    return host, port


def cluster_domain(config: Any) -> str:
    values = config.kubelet_arguments.get("cluster-domain") or ()
    domain = values[-1] if values and values[-1] else config.dns_domain
    return (domain or DEFAULT_DOMAIN).strip(".").lower()


def upstreams_of(config: Any, host_resolv_conf: str = HOST_RESOLV_CONF) -> list[Upstream]:
    """Origin's nameserver list; ``SettingsError`` when a resolv.conf cannot be read."""
    upstreams = []
    for index, text in enumerate(config.dns_nameservers):
        try:
            host, port = split_host_port(text)
            upstreams.append((host, int(port)))
        except ValueError as error:
            path = f"dnsNameservers[{index}]"
            raise SettingsError(Problem.invalid(path, text, str(error))) from None
    path = config.dns_recursive_resolv_conf
    if path:
        upstreams += [(server, 53) for server in _read_resolv_conf(path, "dnsRecursiveResolvConf")]
    if not upstreams:
        try:
            upstreams = [(server, 53) for server in resolv_conf_nameservers(host_resolv_conf)]
        except OSError:
            upstreams = []
    return [(host, port) for host, port in upstreams if parse_ip(host) is not None]


def _read_resolv_conf(path: str, field: str) -> list[str]:
    try:
        return resolv_conf_nameservers(path)
    except OSError as error:
        detail = f"could not start DNS, unable to read config file: {error.strerror or error}"
        raise SettingsError(Problem.invalid(field, path, detail)) from None


def _is_self(upstream: Upstream, host: str, port: int) -> bool:
    """Whether ``upstream`` is this server (forwarding there would loop)."""
    if upstream[1] != port:
        return False
    bound = parse_ip(host) if host else None
    target = ipaddress.ip_address(upstream[0])
    if bound is None or bound.is_unspecified:
        return target.is_loopback or target.is_unspecified
    return target == bound


# --- the plugin's own section ------------------------------------------------------------------


@frozen
class SectionValues:
    """What ``dnsServerConfig`` sets (defaults where it does not)."""

    records_file: str | None = None
    record_sources: tuple[str, ...] | None = None
    forward_timeout: float = DEFAULT_FORWARD_TIMEOUT
    reverse_cidrs: tuple[IPNetwork, ...] | None = None


def read_section(config: Any) -> tuple[SectionValues, SectionReader]:
    """The section's values, and the reader holding every problem found (unknown keys too)."""
    reader = SectionReader(SECTION, config.extra.get(SECTION))
    values = SectionValues(
        records_file=reader.relative_path("recordsFile", config.base_dir),
        record_sources=reader.names("recordSources", "record source names"),
        forward_timeout=reader.duration("forwardTimeout", f"{DEFAULT_FORWARD_TIMEOUT:g}s"),
        reverse_cidrs=reader.cidrs("reverseCIDRs", min_prefix=REVERSE_MIN_PREFIX),
    )
    reader.unknown_keys()
    return values, reader


def section_of(config: Any) -> SectionValues:
    """The section's values; :class:`SettingsError` with the first problem if there is one."""
    values, reader = read_section(config)
    if reader.problems:
        raise SettingsError(reader.problems[0])
    return values


def section_problems(config: Any) -> list[Problem]:
    """Every problem of the ``dnsServerConfig`` section at once (not just the first)."""
    return read_section(config)[1].problems


def reverse_cidrs(value: Any, path: str) -> tuple[IPNetwork, ...]:
    """CIDRs given outside the config (``--reverse-cidr``); :class:`SettingsError` if bad."""
    try:
        return parse_cidr_list(value, REVERSE_MIN_PREFIX)
    except CidrListError as error:
        field = path if error.index is None else f"{path}[{error.index}]"
        raise SettingsError(Problem.invalid(field, error.value, error.detail)) from None


def reverse_networks_of(
    config: Any, explicit: tuple[IPNetwork, ...] | None
) -> tuple[IPNetwork, ...]:
    """The networks whose reverse zones the server answers (see the module docstring)."""
    if explicit is not None:
        return explicit
    bridge = config.extra.get("bridgeNetwork")
    bridge = bridge if isinstance(bridge, Mapping) else {}
    texts = [bridge.get("serviceNetworkCIDR"), bridge.get("podCIDR")]
    for values in (
        config.proxy_arguments.get("cluster-cidr"),
        config.kubelet_arguments.get("pod-cidr"),
    ):
        texts += [part for value in values or () for part in str(value).split(",")]
    networks = [parse_cidr(text) for text in texts]
    return tuple(dict.fromkeys(n for n in networks if n is not None and n.prefixlen >= 8))


def ns_addresses(dns_ip: str, bind_host: str) -> tuple[str, ...]:
    """The address of ``ns.dns.<domain>``: ``dnsIP``, else a bind host that is one address."""
    for text in (dns_ip, bind_host):
        address = parse_ip(text) if text else None
        if address is not None and not address.is_unspecified:
            return (str(address),)
    return ()


def resolv_conf_nameservers(path: str) -> list[str]:
    """The ``nameserver`` addresses of a resolv.conf, in order; ``OSError`` if unreadable."""
    servers = []
    for line in read_text(path, TEXT_LIMIT).splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "nameserver":
            servers.append(fields[1].split("%", 1)[0])
    return servers

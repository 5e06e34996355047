"""An HTTP proxy for containerd's image pulls: ``containerRuntime.proxy`` and ``CONTAINERD_*``.

::

    containerRuntime:
      proxy:
        httpProxy: http://proxy.example:3128
        httpsProxy: http://proxy.example:3128
        noProxy: "registry.internal,10.20.0.0/16"   # or a list
        serviceNetworkCIDR: 172.30.0.0/16           # default: Origin's service network

Each setting falls back to nodehost's own environment, as k3s reads it:
``CONTAINERD_HTTP_PROXY`` (for containerd alone), else ``HTTP_PROXY`` /
``http_proxy`` (which containerd would inherit anyway); likewise ``HTTPS`` and
``NO``.  The file wins.  The settings go to containerd's environment only, as
``HTTP_PROXY``, ``HTTPS_PROXY`` and ``NO_PROXY`` (no other component is given them).  Whenever a
proxy is set, ``NO_PROXY`` is completed (:func:`no_proxy`) with what must never
go through it: ``localhost``, ``127.0.0.1``, ``::1``, the node IP, the pod
network (the subnets of the node's CNI configuration and
``kubeletArguments.pod-cidr``), the service network (``serviceNetworkCIDR``),
``.svc`` and the cluster domain (``dnsDomain``, and its subdomains).  A proxy
URL's password is never shown (:func:`redacted`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from nodehost.config.sections import SectionReader
from nodehost.frozen import frozen

KEY = "proxy"
#: Origin's default service network (``servicesSubnet`` of its master config).
DEFAULT_SERVICE_NETWORK = "172.30.0.0/16"
#: nodehost's own variables that the settings fall back to, first set wins (as k3s reads them).
ENVIRONMENT = {
    "httpProxy": ("CONTAINERD_HTTP_PROXY", "HTTP_PROXY", "http_proxy"),
    "httpsProxy": ("CONTAINERD_HTTPS_PROXY", "HTTPS_PROXY", "https_proxy"),
    "noProxy": ("CONTAINERD_NO_PROXY", "NO_PROXY", "no_proxy"),
}

SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "description": "An HTTP proxy for containerd's image pulls (its environment only).",
    "properties": {
        "httpProxy": {"type": "string", "description": "HTTP_PROXY for containerd."},
        "httpsProxy": {"type": "string", "description": "HTTPS_PROXY for containerd."},
        "noProxy": {
            "type": ["string", "array"],
            "description": "Hosts, domains and CIDRs never proxied (completed by nodehost).",
        },
        "serviceNetworkCIDR": {
            "type": "string",
            "default": DEFAULT_SERVICE_NETWORK,
            "description": "The cluster's service network, added to NO_PROXY.",
        },
    },
    "additionalProperties": False,
}


@frozen
class Proxy:
    """The proxy settings, each from the file or else nodehost's ``CONTAINERD_*`` variable."""

    http: str | None = None
    https: str | None = None
    no_proxy: tuple[str, ...] = ()
    service_network: str = DEFAULT_SERVICE_NETWORK

    def __bool__(self) -> bool:
        return bool(self.http or self.https)


def read_proxy(reader: SectionReader, environ: Mapping[str, str]) -> Proxy:
    """``containerRuntime.proxy`` from the runtime's ``reader`` (problems go to it)."""
    raw = reader.raw_value(KEY)
    section = SectionReader(reader.path(KEY), raw)
    urls = {
        key: section.text(key) or _variable(environ, key) or None
        for key in ("httpProxy", "httpsProxy")
    }
    for key, url in urls.items():
        if url and not _is_proxy_url(url):
            section.invalid(key, redacted(url), "must be an http:// or https:// URL")
            urls[key] = None
    listed = _no_proxy(section, environ)
    service = section.cidr("serviceNetworkCIDR") or ipaddress.ip_network(DEFAULT_SERVICE_NETWORK)
    section.unknown_keys()
    reader.problems.extend(section.problems)
    return Proxy(urls["httpProxy"], urls["httpsProxy"], listed, str(service))


def _no_proxy(section: SectionReader, environ: Mapping[str, str]) -> tuple[str, ...]:
    raw = section.raw_value("noProxy")
    if raw is None:
        raw = _variable(environ, "noProxy")
    if isinstance(raw, str):
        entries = raw.split(",")
    elif isinstance(raw, list) and all(isinstance(entry, str) for entry in raw):
        entries = raw
    else:
        section.invalid("noProxy", str(raw), "must be a comma-separated string or a list of them")
        return ()
    return tuple(entry.strip() for entry in entries if entry.strip())


def _variable(environ: Mapping[str, str], key: str) -> str:
    return next((environ[name] for name in ENVIRONMENT[key] if environ.get(name)), "")


def _is_proxy_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a bad port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def redacted(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()


def no_proxy(proxy: Proxy, config: Any, pod_networks: Iterable[str]) -> str:
    """``NO_PROXY``: the settings' entries, then the completions of the module docstring."""
    domain = config.dns_domain.strip(".") or "cluster.local"
    completions = [
        "localhost",
        "127.0.0.1",
        "::1",
        *(address for address in config.node_ip.split(",") if address),
        *pod_networks,
        *config.kubelet_arguments.get("pod-cidr", ()),
        proxy.service_network,
        ".svc",
        domain,
        f".{domain}",
    ]
    return ",".join(_unique([*proxy.no_proxy, *completions]))


def environment(proxy: Proxy, config: Any, pod_networks: Iterable[str]) -> dict[str, str]:
    """containerd's proxy variables (none when no proxy is set)."""
    if not proxy:
        return {}
    variables = {"NO_PROXY": no_proxy(proxy, config, pod_networks)}
    if proxy.http:
        variables["HTTP_PROXY"] = proxy.http
    if proxy.https:
        variables["HTTPS_PROXY"] = proxy.https
    return variables


def subnets(conflist: Mapping[str, Any] | None) -> list[str]:
    """Every ``subnet`` in a CNI configuration list (its IPAM ranges): the pod network."""
    return list(_unique(_subnets(conflist))) if conflist else []


def _subnets(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == "subnet" and isinstance(item, str):
                yield item
            else:
                yield from _subnets(item)
    elif isinstance(value, list):
        for item in value:
            yield from _subnets(item)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def describe(proxy: Proxy, variables: Mapping[str, str]) -> list[str]:
    """Plan notes: the proxies (passwords hidden) and the complete ``NO_PROXY``."""
    if not proxy:
        return []
    shown = [f"{name}={redacted(value)}" for name, value in variables.items() if name != "NO_PROXY"]
    return [f"containerd proxy: {' '.join(shown)}; NO_PROXY={variables['NO_PROXY']}"]

"""The load balancer's settings: the ``apiServerLoadBalancer`` section and the servers known.

::

    apiServerLoadBalancer:
      mode: auto                  # auto (default): run when the node knows more than one
                                  # API server; on: always (to learn the others from the
                                  # cluster); off: never
      servers:                    # API servers besides masterKubeConfig's, in order of
      - https://master-2.example.com:8443   # preference after it (https, a host, a port)
      - https://10.0.0.3:8443
      bindAddress: 127.0.0.1:6444 # where it listens: a loopback address, a port 1-65535
      healthInterval: 300ms       # each server checked this often (+-20%)
      healthTimeout: 600ms        # a check that takes longer fails

The servers, in order of preference: ``masterKubeConfig``'s, then ``servers``,
then those learnt from the ``kubernetes`` Service's EndpointSlice (kept in
``<state-dir>/apilb/servers.json``, so a restart knows them before it reaches
any).  Every server must present a certificate valid for the name the
clients check: ``masterKubeConfig``'s ``tls-server-name``, else its server's
host -- as the servers of one cluster do.
"""

from __future__ import annotations

import ipaddress
import json
import os
from typing import Any
from urllib.parse import urlsplit

from nodehost.config.hostport import join_host_port, split_host_port
from nodehost.config.sections import SectionReader, section_schema
from nodehost.frozen import frozen
from nodehost.pluginhost.records import Problem, ProblemKind

SECTION = "apiServerLoadBalancer"
MODES = ("auto", "on", "off")
DEFAULT_BIND = "127.0.0.1:6444"
DEFAULT_INTERVAL = "300ms"
DEFAULT_TIMEOUT = "600ms"
#: The servers learnt from the cluster, in the component's state folder.
STATE_FILE = "servers.json"
#: Where a server learnt from the cluster came from.
CLUSTER = "cluster"
#: The kubeconfig the other components use, in the component's state folder.
KUBECONFIG_FILE = "kubeconfig"

SCHEMA = section_schema(
    "The node-local API server load balancer: the servers besides masterKubeConfig's, "
    "where it listens, how often it checks them.",
    {
        "mode": {
            "enum": list(MODES),
            "default": "auto",
            "description": "auto: run when the node knows more than one API server; on: "
            "always; off: never.",
        },
        "servers": {
            "type": "array",
            "items": {"type": "string", "pattern": "^https://"},
            "description": "API servers besides masterKubeConfig's (https URLs), in order "
            "of preference after it.",
        },
        "bindAddress": {
            "type": "string",
            "default": DEFAULT_BIND,
            "description": "Where the load balancer listens (a loopback address and port).",
        },
        "healthInterval": {
            "type": "string",
            "default": DEFAULT_INTERVAL,
            "description": "How often each server is checked (Go duration, +-20% jitter).",
        },
        "healthTimeout": {
            "type": "string",
            "default": DEFAULT_TIMEOUT,
            "description": "How long a check may take before the server counts as down.",
        },
    },
)


@frozen
class LbSettings:
    """What the section says; ``servers`` are ``host:port`` addresses."""

    mode: str
    servers: tuple[str, ...]
    bind_host: str
    bind_port: int
    health_interval: float
    health_timeout: float


def read_settings(config: Any) -> tuple[LbSettings, SectionReader]:
    """The settings from ``config``, and the reader holding every problem found."""
    reader = SectionReader(SECTION, config.extra.get(SECTION))
    mode = reader.choice("mode", MODES, "auto")
    servers = _servers(reader)
    host, port = reader.host_port("bindAddress", DEFAULT_BIND)
    if not host or not ipaddress.ip_address(host).is_loopback:
        reader.invalid(
            "bindAddress", join_host_port(host, port), "must be a loopback address (127.0.0.1)"
        )
        host, port = "127.0.0.1", int(split_host_port(DEFAULT_BIND)[1])
    interval = reader.duration("healthInterval", DEFAULT_INTERVAL)
    timeout = reader.duration("healthTimeout", DEFAULT_TIMEOUT)
    reader.unknown_keys()
    return LbSettings(mode, servers, host, port, interval, timeout), reader


def _servers(reader: SectionReader) -> tuple[str, ...]:
    """``servers`` as ``host:port``; a problem at ``servers[i]`` for each bad or repeated one."""
    value = reader.names("servers", "https URLs")
    found: list[str] = []
    for index, url in enumerate(value or ()):
        path = f"{reader.path('servers')}[{index}]"
        try:
            address = server_address(url)
        except ValueError as error:
            reader.problems.append(Problem.invalid(path, url, str(error)))
            continue
        if address in found:
            reader.problems.append(Problem(path, ProblemKind.DUPLICATE, "", url))
            continue
        found.append(address)
    return tuple(found)


def server_address(url: str) -> str:
    """``https://host:port`` -> ``host:port`` (port 443 when none); ``ValueError`` saying
    what is wrong for anything else (another scheme, no host, a path)."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError("must be an https URL with a host, such as https://10.0.0.2:6443")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("must name a server only (no path or query)")
    try:
        port = parts.port or 443
    except ValueError:
        raise ValueError("has an invalid port") from None
    return join_host_port(parts.hostname, port)


def read_learnt(component_dir: str) -> tuple[str, ...]:
    """The servers learnt from the cluster before (empty when none, or unreadable)."""
    from nodehost.fileread import STATE_LIMIT, read_file

    try:
        document = json.loads(read_file(os.path.join(component_dir, STATE_FILE), STATE_LIMIT))
        servers = document["servers"]
    except (OSError, ValueError, KeyError, TypeError):
        return ()
    if not isinstance(servers, list):
        return ()
    return tuple(server for server in servers if isinstance(server, str) and _address(server))


def write_learnt(component_dir: str, servers: tuple[str, ...]) -> None:
    """Keep ``servers`` for the next start (atomically: the old list or the new one)."""
    from pathlib import Path

    from nodehost.pki.atomic import write_atomic

    data = json.dumps({"servers": list(servers)}, indent=1).encode() + b"\n"
    write_atomic(Path(component_dir) / STATE_FILE, data, 0o644)


def _address(text: str) -> bool:
    try:
        host, port = split_host_port(text)
        return bool(host) and 1 <= int(port) <= 65535
    except ValueError:
        return False

"""Where a Kubernetes program's ``/healthz`` answers, given the address it binds."""

from __future__ import annotations

from nodehost.config.hostport import join_host_port, parse_ip

_LOOPBACK = {4: "127.0.0.1", 6: "::1"}


def healthz_url(bind_host: str, port: int, path: str = "/healthz") -> str:
    """The URL to probe a server bound to ``bind_host:port``.

    An empty or unspecified host (``0.0.0.0``, ``::``) is probed on loopback of
    the same family; any other host is probed as given.
    """
    ip = parse_ip(bind_host) if bind_host else None
    host = bind_host
    if not bind_host:
        host = _LOOPBACK[4]
    elif ip is not None and ip.is_unspecified:
        host = _LOOPBACK[ip.version]
    return f"http://{join_host_port(host, port)}{path}"

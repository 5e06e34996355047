"""The ``--listen`` address: Origin's ``flagtypes.Addr`` (:ref:`origin-listen`).

Accepted forms: ``host``, a bare IPv6 address, ``host:port`` (``[v6]:port``),
or a URL with scheme ``http``, ``https``, ``tcp``, ``unix`` or the default
scheme.  A URL without a port gets 80 (http) or 443 (https); a bare host gets
the default port.
"""

from __future__ import annotations

from nodehost.config.hostport import join_host_port, parse_ip, split_host_port
from nodehost.frozen import frozen

_URL_PREFIXES = ("http://", "https://", "tcp://", "unix://")
_SCHEME_PORTS = {"http": 80, "https": 443}
DEFAULT_LISTEN = "0.0.0.0:8443"


@frozen
class ListenAddress:
    """A parsed listen address.

    ``value``    the text as given; ``scheme`` the URL scheme (the default scheme
    when none was written); ``host`` the host or IP without brackets; ``port``
    the port (0 when none could be established); ``provided`` whether the value
    differs from the flag's default; ``default_port`` the default port it was
    parsed with.
    """

    value: str
    scheme: str
    host: str
    port: int
    provided: bool
    default_port: int = 0

    @property
    def use_tls(self) -> bool:
        """True when the scheme is ``https``."""
        return self.scheme == "https"

    @property
    def ipv6_host(self) -> bool:
        """True when the host is an IPv6 address."""
        return _is_ipv6_host(self.host)

    def host_port(self, default_port: int) -> str:
        """``host:port`` (brackets for IPv6), using ``default_port`` only when the port is 0."""
        return join_host_port(self.host, self.port or default_port)

    @property
    def url(self) -> str:
        """``scheme://host:port``."""
        return f"{self.scheme}://{self.host_port(0)}"


def _is_ipv6_host(value: str) -> bool:
    if value.startswith("["):
        return False
    ip = parse_ip(value)
    return ip is not None and ip.version == 6 and ip.ipv4_mapped is None


def _parse_port(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise ValueError(f"not a valid port: {text!r} is not a number")
    port = int(text)
    if port > 65535:
        raise ValueError(f"not a valid port: {port} is greater than 65535")
    return port


def _split(host_port: str) -> tuple[str, int]:
    try:
        host, port = split_host_port(host_port)
    except ValueError as error:
        raise ValueError(f"not a valid host:port: {error}") from None
    return host, _parse_port(port)


def _is_url(value: str, default_scheme: str) -> bool:
    return value.startswith(f"{default_scheme}://") or value.startswith(_URL_PREFIXES)


def _parse_url(value: str) -> tuple[str, str, int]:
    from urllib.parse import urlsplit  # not on the paths that only read DEFAULT_LISTEN

    try:
        parts = urlsplit(value)
    except ValueError as error:
        raise ValueError(f"not a valid URL: {error}") from None
    host = parts.netloc.rpartition("@")[2]
    if ":" in host:
        return (parts.scheme, *_split(host))
    port = _SCHEME_PORTS.get(parts.scheme)
    if port is None:
        raise ValueError("no port specified")
    return parts.scheme, host, port


def parse_listen(
    value: str,
    *,
    default_scheme: str = "https",
    default_port: int = 8443,
    default_value: str | None = DEFAULT_LISTEN,
) -> ListenAddress:
    """Parse a ``--listen`` value; raise ``ValueError`` with a one-line reason.

    ``provided`` is true when ``value`` differs from ``default_value``.
    Unlike Origin, a port above 65535 is refused here rather than at bind time.
    """
    scheme = default_scheme or "tcp"
    if _is_url(value, default_scheme):
        scheme, host, port = _parse_url(value)
    elif _is_ipv6_host(value):
        host, port = value, default_port
    elif ":" in value:
        host, port = _split(value)
    else:
        port = default_port or _SCHEME_PORTS.get(default_scheme, 0)
        if not port:
            raise ValueError("no port specified")
        host = value
    return ListenAddress(
        value, scheme, host, port, provided=value != default_value, default_port=default_port
    )

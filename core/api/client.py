"""A Kubernetes API client for the node: kubeconfig, TLS, timeouts, retries, resuming watches.

HTTP/1.1 over asyncio streams, framed by ``h11`` (the protocol state machine
only: no HTTP stack, no generated API models; objects stay the API's JSON).
The kubeconfig's current context gives the server, the CA (``certificate-authority``
or ``-data``), the client certificate and key (files or ``-data``) and the
credentials: ``tokenFile`` (read again after a 401), ``token``, an ``exec``
plugin (``client.authentication.k8s.io/v1beta1`` or ``v1alpha1``, run again
after a 401) or ``username``/``password``; ``auth-provider`` is refused.  TLS is
always verified, against the kubeconfig's CA (the system's CAs when it names
none), unless the kubeconfig itself says ``insecure-skip-tls-verify: true``
for a cluster without a CA.

Every request has a timeout for the whole exchange (:attr:`ClusterClient.timeout`:
connecting, sending and every read together) and ends at the client's deadline;
a call is retried with exponential backoff and jitter on connection errors, an
answer that is not a JSON object, 429 (after the server's ``Retry-After``, never
sooner than the backoff) and 5xx, until the client's deadline.  Redirects are
not followed.  Watches carry ``timeoutSeconds`` (spread as client-go spreads
it), end themselves a little after it and after :data:`WATCH_IDLE_LIMIT`
seconds of silence; one the server ends at once is a failure.  Other answers
are final and raise :class:`ClusterRefused` (carrying the HTTP code, the API's
reason and message).  A certificate the
client cannot verify raises :class:`ClusterTLSError` at once: retrying cannot
fix a wrong CA.  An answer is read up to :data:`BODY_LIMIT` bytes, a watch
event up to :data:`EVENT_LIMIT`, and parsed by the one bounded JSON loader
(:func:`nodehost.config.jsonsafe.parse_json`: depth, lone surrogates as Go decodes
them), off the event loop when large (:func:`nodehost.config.jsonsafe.off_loop`).

Objects go in and out as plain mappings in the API's JSON shape.
:meth:`ClusterClient.follow` yields every version of one object from one
watch, resumed from the last version seen after a dropped connection;
:meth:`ClusterClient.pages` and :meth:`ClusterClient.watch` list and watch a
kind for callers that keep their own copy (the DNS record source).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import random
import ssl
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlencode, urlsplit

import h11

from nodehost.api.objects import version_of
from nodehost.backoff import Backoff
from nodehost.config.jsonsafe import off_loop, parse_json
from nodehost.errors import RuntimeFailure
from nodehost.fileread import TEXT_LIMIT, FileState, file_state
from nodehost.frozen import frozen

T = TypeVar("T")

#: HTTP codes that are worth retrying (besides connection errors).
RETRIABLE = frozenset({429, 500, 502, 503, 504})
#: The largest answer read (a list page of :data:`LIST_PAGE` objects is far below it).
BODY_LIMIT = 64 * 1024 * 1024
#: The longest watch event (one line of a watch stream).
EVENT_LIMIT = 16 * 1024 * 1024
#: Objects asked for per list request (``limit``; the next page with ``continue``).
LIST_PAGE = 500
_READ_SIZE = 65536
_IDLE_LIMIT = 4  # connections kept open between requests
#: The longest a server's ``Retry-After`` is honoured for, in seconds.
RETRY_AFTER_LIMIT = 60.0
#: A watch asks the server to end it after a random time in ``[WATCH_TIMEOUT, 2*WATCH_TIMEOUT)``
#: seconds (``timeoutSeconds``), as client-go's reflector spreads its 5-minute minimum, and
#: ends it itself :data:`WATCH_GRACE` seconds later if the server does not.
WATCH_TIMEOUT = 300
WATCH_GRACE = 30.0
#: A watch stream silent this long is ended and re-established from the last version seen
#: (a stream a proxy or a server keeps open without sending what happens would hide changes).
WATCH_IDLE_LIMIT = 120.0
#: A watch the server ends sooner than this counts as a failure (backoff before the next),
#: as client-go's reflector treats "very short watch" ends; only events of a watch open
#: this long reset a backoff (a server that sends one event and ends the stream, again
#: and again, is asked ever more slowly).
SHORT_WATCH = 1.0
#: How long an exec credential plugin may run.
EXEC_TIMEOUT = 30.0
#: Methods a kept connection the server closed may be sent again on a new one (a POST the
#: server may have read is not: it could create twice).
_REPLAYABLE = frozenset({"GET", "HEAD", "PUT", "DELETE", "PATCH"})


class ClusterError(RuntimeFailure):
    """Talking to the API server failed (exit 1, one line)."""


class ClusterUnreachable(ClusterError):
    """No answer (or only retriable ones) from the API server before the deadline."""


class ClusterTLSError(ClusterError):
    """The API server's certificate is not trusted (wrong CA, wrong name)."""


class WaitTimeout(ClusterError):
    """An object did not reach the wanted state before the client's deadline."""

    def __init__(self, message: str, kind: str, name: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.name = name


class ClusterRefused(ClusterError):
    """The API server answered with a final error status."""

    def __init__(self, message: str, code: int, reason: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


class WatchEnded(ClusterError):
    """A watch failed: ``code`` is the error answer's HTTP code (410: the version is no
    longer kept), 0 when the connection failed or dropped; ``reason`` says what happened."""

    def __init__(self, what: str, reason: str, code: int = 0) -> None:
        super().__init__(f"{what}: {reason}")
        self.reason = reason
        self.code = code


#: The client's retry schedule: 0.5s doubling to 8s, each +-50% (at the cap: 4-8s).  A
#: fleet loses the server at the same instant; +-25% left its retries bunched after
#: a 30 s outage (29 % of the nodes in the busiest second of the first retry after
#: the server returned, against 12.5 % if spread evenly over the 8 s window); +-50%
#: brings that to 17 % (``tests/api/test_retry_spread.py``).
RETRY_BACKOFF = Backoff(initial=0.5, maximum=8.0, jitter=0.5)


@frozen
class _Kind:
    """Where the API serves a kind: ``{prefix}/[namespaces/{ns}/]{plural}``."""

    prefix: str
    plural: str
    namespaced: bool
    api_version: str


KINDS: Mapping[str, _Kind] = {
    "CertificateSigningRequest": _Kind(
        "/apis/certificates.k8s.io/v1", "certificatesigningrequests", False,
        "certificates.k8s.io/v1",
    ),
    "ConfigMap": _Kind("/api/v1", "configmaps", True, "v1"),
    "EndpointSlice": _Kind(
        "/apis/discovery.k8s.io/v1", "endpointslices", True, "discovery.k8s.io/v1"
    ),
    "Event": _Kind("/api/v1", "events", True, "v1"),
    "Lease": _Kind(
        "/apis/coordination.k8s.io/v1", "leases", True, "coordination.k8s.io/v1"
    ),
    "Node": _Kind("/api/v1", "nodes", False, "v1"),
    "Service": _Kind("/api/v1", "services", True, "v1"),
}  # fmt: skip


def resource_path(kind: str, namespace: str | None = None, name: str | None = None) -> str:
    """The API path of ``kind`` (in ``namespace``, or in all of them), or of object ``name``."""
    where = KINDS[kind]
    path = where.prefix
    if where.namespaced and namespace:
        path += f"/namespaces/{quote(namespace, safe='')}"
    path += f"/{where.plural}"
    return path if name is None else f"{path}/{quote(name, safe='')}"


# --- errors inside one request, classified by ClusterClient.call ------------------------------


class _TransportError(Exception):
    """The connection failed, dropped or timed out; the cause is chained."""


class _NameMismatch(_TransportError):
    """The server's certificate is trusted but does not hold the name asked for; ``names``
    are the names it holds (read from a second, unverified handshake)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        super().__init__("the certificate does not hold the server's name")
        self.names = names


#: OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH.
_NAME_MISMATCH = frozenset({62, 64})


class _CredentialError(ValueError):
    """The credentials cannot make a request (a bad token, an exec plugin that cannot run):
    final, not retried.  Its message never holds a credential."""


class _StatusError(Exception):
    """An error answer: its code, and the API's Status reason and message when it sent one."""

    def __init__(self, code: int, body: bytes, retry_after: str) -> None:
        status = _json_status(body)
        self.code = int(status.get("code") or code)
        self.reason = str(status.get("reason") or "")
        self.message = str(status.get("message") or "")
        self.api = bool(status)
        self.retry_after = retry_after
        super().__init__(self.describe())

    def describe(self) -> str:
        if not self.api:
            return f"HTTP {self.code}"
        return f"{self.code} {self.reason}: {self.message or f'HTTP {self.code}'}"


class _Redirected(Exception):
    """A 3xx answer: nodehost does not follow redirects (see :meth:`ClusterClient.call`)."""

    def __init__(self, code: int, location: str) -> None:
        self.code = code
        self.location = location
        super().__init__(f"redirected (HTTP {code}) to {location or 'nowhere'}")


def _json_status(body: bytes) -> dict[str, Any]:
    try:
        status = parse_json(body, BODY_LIMIT)
    except ValueError:
        return {}
    return status if isinstance(status, dict) and status.get("kind") == "Status" else {}


# --- the kubeconfig ------------------------------------------------------------------------


class _Endpoint:
    """What one kubeconfig context says about reaching and authenticating to its server.

    :attr:`tls` is the TLS context (None: plain http), made again when a client
    certificate or key file named by the kubeconfig changes (a rotation swaps them), as
    client-go reloads them.
    """

    def __init__(self, server: str, make_tls: Callable[[], ssl.SSLContext] | None, auth: _Auth,
                 files: tuple[str, ...], proxy: _Proxy | None = None,
                 server_name: str = "") -> None:  # fmt: skip
        self.server = server
        self.auth = auth
        self.proxy = proxy
        self.server_name = server_name  # the kubeconfig's tls-server-name: checked instead
        self._make_tls = make_tls
        self._files = files
        self._stamp = _stamp(files)
        self._tls = make_tls() if make_tls else None

    @property
    def tls(self) -> ssl.SSLContext | None:
        if self._make_tls is not None and self._files:
            stamp = _stamp(self._files)
            if stamp != self._stamp:
                self._tls, self._stamp = self._make_tls(), stamp
        return self._tls


def _stamp(files: tuple[str, ...]) -> tuple[FileState, ...]:
    """What tells that one of ``files`` changed."""
    return tuple(file_state(name) for name in files)


def _basic(user: str, password: str) -> str:
    """An ``Authorization`` (or ``Proxy-Authorization``) value for HTTP basic auth."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


class _Auth:
    """The ``Authorization`` header of a kubeconfig user (none for certificates alone)."""

    def __init__(self, user: Mapping[str, Any], folder: str) -> None:
        self.user = user
        self.folder = folder
        self._header: str | None = None
        if user.get("auth-provider"):
            raise ValueError("auth-provider is not supported")
        # The first of: a token file (read when needed: it gets rotated), the token, an
        # exec plugin (run when needed), a user name and password.
        self._source = ""
        if user.get("tokenFile"):
            self._source = "file"
        elif user.get("token"):
            self._header = _bearer(str(user["token"]), "the kubeconfig's token")
        elif user.get("exec"):
            self._source = "exec"
        elif user.get("username") and user.get("password"):
            self._header = _basic(str(user["username"]), str(user["password"]))

    @property
    def renewable(self) -> bool:
        """Whether a 401 is worth one more try (a token file or a plugin may hold a new token)."""
        return bool(self._source)

    async def header(self, renew: bool = False) -> str | None:
        if self._source and (self._header is None or renew):
            if self._source == "file":
                source = f"token file {self.user['tokenFile']}"
                self._header = _bearer(self._read_token_file(), source)
            else:
                plugin = self.user["exec"]
                token = await self._run_exec(plugin)
                self._header = _bearer(token, f"exec plugin {plugin.get('command')}")
        return self._header

    def _read_token_file(self) -> str:
        from nodehost.fileread import PEM_LIMIT, read_text

        path = os.path.join(self.folder, str(self.user["tokenFile"]))
        return read_text(path, PEM_LIMIT).strip()

    @staticmethod
    async def _run_exec(plugin: Mapping[str, Any]) -> str:
        """The token an exec credential plugin prints (``status.token``)."""
        versions = (
            "client.authentication.k8s.io/v1",
            "client.authentication.k8s.io/v1beta1",
            "client.authentication.k8s.io/v1alpha1",
        )
        if plugin.get("apiVersion") not in versions:
            raise _CredentialError(
                f"exec plugin apiVersion {plugin.get('apiVersion')} is not supported"
            )
        env = dict(os.environ)
        env.update({str(v["name"]): str(v["value"]) for v in plugin.get("env") or ()})
        argv = [str(plugin["command"]), *map(str, plugin.get("args") or ())]
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
        except OSError as error:
            raise _CredentialError(f"exec plugin {argv[0]}: {error.strerror}") from None
        try:
            async with asyncio.timeout(EXEC_TIMEOUT):
                out, err = await process.communicate()
        except BaseException as error:  # a timeout or a cancel: the plugin does not outlive it
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await asyncio.shield(process.wait())
            if isinstance(error, TimeoutError):
                message = f"exec {argv[0]} gave no token within {EXEC_TIMEOUT:.0f}s"
                raise _TransportError(message) from None
            raise
        if process.returncode != 0:
            lines = err.decode(errors="replace").strip().splitlines() or [""]
            raise _TransportError(f"exec {argv[0]} exited {process.returncode}: {lines[-1][:200]}")
        try:
            return str(parse_json(out, TEXT_LIMIT)["status"]["token"])
        except (ValueError, KeyError, TypeError):
            raise _TransportError(f"exec {argv[0]} printed no status.token") from None


def _bearer(token: str, source: str) -> str:
    """The ``Authorization`` value of ``token``; raises :class:`_CredentialError` (naming
    ``source``, never the token) when it is empty or holds a space, a control or a non-ASCII
    character, which no HTTP header may carry."""
    token = token.strip()
    if not token or not all("!" <= char <= "~" for char in token):
        raise _CredentialError(
            f"the token from {source} is not a bearer token (empty, or a space, control or "
            "non-ASCII character in it)"
        )
    return f"Bearer {token}"


def load_kubeconfig(kubeconfig: str) -> _Endpoint:
    """The server, TLS context and credentials of ``kubeconfig``'s current context ("" : the
    in-cluster service account).  Raises ``OSError``, ``ValueError``, ``KeyError``,
    ``TypeError`` or ``ssl.SSLError`` saying what is wrong."""
    if kubeconfig:
        document, folder = (
            _read_kubeconfig(kubeconfig),
            os.path.dirname(os.path.abspath(kubeconfig)),
        )
    else:
        from nodehost.api import incluster

        document, folder = incluster.kubeconfig(), ""
    current = document.get("current-context")
    if not current:
        raise ValueError("it has no current context")

    def named(section: str, key: str, name: Any) -> dict[str, Any]:
        for entry in document.get(section) or ():
            if entry.get("name") == name:
                return dict(entry.get(key) or {})
        raise KeyError(f"{key} {name!r} not found")

    context = named("contexts", "context", current)
    cluster = named("clusters", "cluster", context.get("cluster"))
    user = named("users", "user", context["user"]) if context.get("user") else {}
    server = str(cluster.get("server") or "http://localhost:8080")
    scheme = urlsplit(server).scheme
    if scheme not in ("http", "https"):
        raise ValueError(f"server {server!r} is not an http(s) URL")
    make_tls = (lambda: _tls_context(cluster, user, folder)) if scheme == "https" else None
    files = tuple(
        os.path.join(folder, str(user[key]))
        for key in ("client-certificate", "client-key")
        if user.get(key) and not user.get(f"{key}-data")
    )
    proxy = _proxy_for(server, cluster.get("proxy-url"))
    server_name = str(cluster.get("tls-server-name") or "")
    return _Endpoint(server.rstrip("/"), make_tls, _Auth(user, folder), files, proxy, server_name)


@frozen
class _Proxy:
    """An HTTP proxy the connection is tunnelled through (``CONNECT``)."""

    host: str
    port: int
    authorization: str  # the Proxy-Authorization value, "" for none

    @property
    def name(self) -> str:
        return f"{self.host}:{self.port}"


def _proxy_for(server: str, proxy_url: Any) -> _Proxy | None:
    """The proxy for ``server``: the cluster's ``proxy-url``, else ``HTTPS_PROXY`` (or
    ``HTTP_PROXY`` for an http server) unless ``NO_PROXY`` or a loopback host exempts it, as
    Go's ``http.ProxyFromEnvironment`` decides.  Only ``http://`` proxies; raises
    ``ValueError`` for another kind."""
    parts = urlsplit(server)
    host = (parts.hostname or "").lower()
    if proxy_url:
        text = str(proxy_url)
    else:
        name = "https_proxy" if parts.scheme == "https" else "http_proxy"
        text = _environment(name)
        if not text or _no_proxy(host, parts.port or (443 if parts.scheme == "https" else 80)):
            return None
    proxy = urlsplit(text if "://" in text else f"http://{text}")
    if proxy.scheme != "http" or not proxy.hostname:
        raise ValueError(f"proxy {text!r} is not an http:// proxy (the only kind supported)")
    authorization = ""
    if proxy.username is not None:
        authorization = _basic(unquote(proxy.username), unquote(proxy.password or ""))
    return _Proxy(proxy.hostname, proxy.port or 80, authorization)


def _environment(name: str) -> str:
    return os.environ.get(name.upper()) or os.environ.get(name) or ""


def _no_proxy(host: str, port: int) -> bool:
    """Whether ``host`` goes direct: loopback always; else a ``NO_PROXY`` entry (``*``, a
    host or domain suffix, with or without a leading dot or a port, or an IP network)."""
    import ipaddress

    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    if host == "localhost" or (address is not None and address.is_loopback):
        return True
    for entry in _environment("no_proxy").lower().split(","):
        entry = entry.strip()
        if entry == "*":
            return True
        if not entry:
            continue
        if address is not None and "/" in entry:
            with contextlib.suppress(ValueError):
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            continue
        name, _, entry_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if entry_port and entry_port != str(port):
            continue
        name = name.lstrip(".")
        if host == name or host.endswith("." + name):
            return True
    return False


def _tls_context(
    cluster: Mapping[str, Any], user: Mapping[str, Any], folder: str
) -> ssl.SSLContext:
    """Verification against the cluster's CA (the system's without one, none when insecure
    and without one) and the user's client certificate."""
    insecure = cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(insecure, bool):
        raise ValueError(f"insecure-skip-tls-verify is {insecure!r}, not true or false")
    ca = _pem(cluster, "certificate-authority", folder)
    if ca is not None:
        context = ssl.create_default_context(cadata=ca.decode("ascii", "replace"))
    elif insecure:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context = ssl.create_default_context()
    if user.get("client-certificate") or user.get("client-certificate-data"):
        _load_client_certificate(context, user, folder)
    return context


def _load_client_certificate(context: ssl.SSLContext, user: Mapping[str, Any], folder: str) -> None:
    """The user's certificate and key: files are handed to OpenSSL by name once checked
    (regular, bounded), inline data through an anonymous memory file (``memfd``, no name
    in any file system; no ``tempfile``, which imports ``shutil`` and its compressors)
    closed as soon as it is read.  Where that cannot be (no ``memfd_create``, no
    ``/proc``), through a private 0600 temporary file removed as soon as it is read."""
    from nodehost.fileread import PEM_LIMIT, check_file

    names = [user.get("client-certificate"), user.get("client-key")]
    if all(names) and not user.get("client-certificate-data") and not user.get("client-key-data"):
        certificate, key = (os.path.join(folder, str(name)) for name in names)
        for name in (certificate, key):
            check_file(name, PEM_LIMIT)
        context.load_cert_chain(certificate, key)
        return
    pems = [_pem(user, "client-certificate", folder), _pem(user, "client-key", folder)]
    if pems[1] is None:
        raise ValueError("a client certificate without a client key")
    chain = pems[1] + b"\n" + (pems[0] or b"")
    try:
        with open(os.memfd_create("nodehost-client", os.MFD_CLOEXEC), "w+b") as pem:
            pem.write(chain)
            pem.flush()
            context.load_cert_chain(f"/proc/self/fd/{pem.fileno()}")
    except ssl.SSLError:
        raise
    except OSError:  # no memfd_create (an old kernel, a seccomp filter) or no /proc
        import tempfile

        with tempfile.NamedTemporaryFile(prefix="nodehost-client-") as private:  # 0600, O_EXCL
            private.write(chain)
            private.flush()
            context.load_cert_chain(private.name)


def _pem(entry: Mapping[str, Any], key: str, folder: str) -> bytes | None:
    """The PEM bytes of ``key-data`` or of the file ``key`` names (relative: to ``folder``)."""
    from nodehost.fileread import PEM_LIMIT, read_file

    if entry.get(f"{key}-data"):
        return base64.b64decode(str(entry[f"{key}-data"]))
    if entry.get(key):
        return read_file(os.path.join(folder, str(entry[key])), PEM_LIMIT)
    return None


def _read_kubeconfig(path: str) -> Any:
    """The parsed kubeconfig, read bounded (so are the files it names, when they are read)."""
    from nodehost.fileread import KUBECONFIG_LIMIT, read_file
    from nodehost.pki.kubeconfig import load_document

    document = load_document(read_file(path, KUBECONFIG_LIMIT))
    if not isinstance(document, dict):
        raise ValueError("not a kubeconfig (not a YAML mapping)")
    return document


#: TCP keep-alive as Go's net.Dialer sets it (idle 15 s, then a probe every 15 s, 9 unanswered
#: probes end the connection): a watch on a peer that vanished (a NAT that forgot the flow, a
#: host that died) fails in minutes instead of waiting forever for its next event.
KEEPALIVE = {"TCP_KEEPIDLE": 15, "TCP_KEEPINTVL": 15, "TCP_KEEPCNT": 9}


def _keep_alive(writer: asyncio.StreamWriter) -> None:
    import socket

    sock = writer.get_extra_info("socket")
    if sock is None:
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in KEEPALIVE.items():
        if hasattr(socket, option):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


# --- HTTP/1.1 ------------------------------------------------------------------------------


class _Connection:
    """One HTTP/1.1 connection: asyncio streams, framed by h11."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)
        _keep_alive(writer)

    async def send(self, request: Any, body: bytes | None, timeout: float) -> None:
        data = self.h11.send(request) or b""
        if body:
            data += self.h11.send(h11.Data(data=body)) or b""
        data += self.h11.send(h11.EndOfMessage()) or b""
        self.writer.write(data)
        async with asyncio.timeout(timeout):
            await self.writer.drain()

    async def next_event(self, timeout: float | None) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            async with asyncio.timeout(timeout):
                data = await self.reader.read(_READ_SIZE)
            if not data and self.h11.their_state in (h11.IDLE, h11.SEND_RESPONSE):
                raise h11.RemoteProtocolError("the server closed the connection without answering")
            self.h11.receive_data(data)

    def reusable(self) -> bool:
        """Whether the exchange ended cleanly with nothing after it: bytes the server sent
        beyond its answer would be read as the next request's answer."""
        done = self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE
        if done and not self.h11.trailing_data[0]:
            self.h11.start_next_cycle()
            return True
        return False

    def close(self) -> None:
        self.writer.close()


class _Http:
    """Requests to one server, keeping idle connections for the next request."""

    def __init__(self, endpoint: _Endpoint, timeout: float) -> None:
        parts = urlsplit(endpoint.server)
        self.endpoint = endpoint
        self.host = parts.hostname or "localhost"
        self.server_name = endpoint.server_name or self.host  # what the certificate must name
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.authority = parts.netloc.rpartition("@")[2]
        self.base = parts.path.rstrip("/")
        self.timeout = timeout
        self._idle: list[_Connection] = []
        self._tls = endpoint.tls

    def _current_tls(self) -> ssl.SSLContext | None:
        """The endpoint's TLS context; after a certificate rotation made a new one, the kept
        connections (which present the old certificate) are closed, as client-go does."""
        tls = self.endpoint.tls
        if tls is not self._tls:
            self.close()
            self._tls = tls
        return tls

    async def _connect(self) -> _Connection:
        """A new connection, with the TLS context :meth:`_current_tls` last saw; a
        certificate without the server's name raises :class:`_NameMismatch`."""
        async with asyncio.timeout(self.timeout):
            try:
                return _Connection(*await self._open(self._tls))
            except ssl.SSLCertVerificationError as error:
                if error.verify_code not in _NAME_MISMATCH:
                    raise
                raise _NameMismatch(await self._certificate_names()) from error

    async def _open(
        self, tls: ssl.SSLContext | None
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        proxy = self.endpoint.proxy
        if proxy is not None:
            reader, writer = await self._tunnel(proxy)
            if tls is not None:
                await writer.start_tls(tls, server_hostname=self.server_name)
            return reader, writer
        return await asyncio.open_connection(
            self.host,
            self.port,
            ssl=tls,
            server_hostname=self.server_name if tls else None,
            limit=_READ_SIZE,
        )

    async def _certificate_names(self) -> tuple[str, ...]:
        """The DNS names and IP addresses the server's certificate holds, read through an
        unverified handshake that sends nothing (only for the error message); () when that
        fails too."""
        unverified = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        unverified.check_hostname = False
        unverified.verify_mode = ssl.CERT_NONE
        try:
            _reader, writer = await self._open(unverified)
        except (OSError, _TransportError):
            return ()
        try:
            der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        finally:
            writer.close()
        return _names_in(der) if der else ()

    async def _tunnel(self, proxy: _Proxy) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the server through ``proxy`` (``CONNECT``); raises
        :class:`_TransportError` when the proxy does not open it."""
        from nodehost.config.hostport import join_host_port

        reader, writer = await asyncio.open_connection(proxy.host, proxy.port, limit=_READ_SIZE)
        target = join_host_port(self.host, self.port)
        head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
        if proxy.authorization:
            head += f"Proxy-Authorization: {proxy.authorization}\r\n"
        try:
            writer.write(f"{head}\r\n".encode("ascii"))
            answer = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.LimitOverrunError, EOFError, OSError):
            writer.close()
            raise _TransportError(f"proxy {proxy.name}: no answer to CONNECT {target}") from None
        status_line = answer.split(b"\r\n", 1)[0].decode("latin-1")
        if status_line.split(" ", 2)[1:2] != ["200"]:
            writer.close()
            raise _TransportError(f"proxy {proxy.name} refused CONNECT {target}: {status_line}")
        return reader, writer

    async def _start(
        self, method: str, target: str, body: bytes | None, renew: bool
    ) -> tuple[_Connection, Any]:
        """Send one request; the connection and the answer's head.  A kept connection the
        server closed meanwhile is replaced by a new one once."""
        headers = [("Host", self.authority), ("Accept", "application/json"),
                   ("User-Agent", "nodehost")]  # fmt: skip
        authorization = await self.endpoint.auth.header(renew)
        if authorization:
            headers.append(("Authorization", authorization))
        if body is not None:
            headers += [("Content-Type", _content_type(method)), ("Content-Length", str(len(body)))]
        request = h11.Request(method=method, target=self.base + target, headers=headers)
        while True:
            self._current_tls()
            while self._idle and self._idle[-1].reader.at_eof():  # the server closed it idle
                self._idle.pop().close()
            kept = bool(self._idle)
            connection = self._idle.pop() if kept else await self._connect()
            try:
                await connection.send(request, body, self.timeout)
                head = await connection.next_event(self.timeout)
                while isinstance(head, h11.InformationalResponse):
                    head = await connection.next_event(self.timeout)
                if not isinstance(head, h11.Response):
                    raise h11.RemoteProtocolError("the server closed the connection")
                return connection, head
            except _TRANSPORT_ERRORS as error:
                connection.close()
                if not kept or isinstance(error, TimeoutError) or method not in _REPLAYABLE:
                    raise  # a slow server, or a request it may have acted on: not resent
            except BaseException:  # cancelled: the connection is not left open
                connection.close()
                raise

    async def _request(
        self, method: str, target: str, body: bytes | None, renew: bool = False
    ) -> tuple[int, bytes, str, str]:
        connection, head = await self._start(method, target, body, renew)
        try:
            data = bytearray()
            while not isinstance(
                event := await connection.next_event(self.timeout), h11.EndOfMessage
            ):
                if not isinstance(event, h11.Data):
                    raise h11.RemoteProtocolError("the answer ended early")
                data += event.data
                if len(data) > BODY_LIMIT:
                    raise h11.RemoteProtocolError(f"the answer is larger than {BODY_LIMIT} bytes")
        except BaseException:
            connection.close()
            raise
        if connection.reusable() and len(self._idle) < _IDLE_LIMIT:
            self._idle.append(connection)
        else:
            connection.close()
        retry_after, location = _header(head, b"retry-after"), _header(head, b"location")
        return head.status_code, bytes(data), retry_after, location

    async def _timed(
        self, method: str, target: str, body: bytes | None, renew: bool
    ) -> tuple[int, bytes, str, str]:
        """One exchange within :attr:`timeout` as a whole (connecting, sending, every read:
        a server trickling a byte at a time cannot stretch it); getting the credentials (an
        exec plugin has its own limit) is not part of it."""
        await self.endpoint.auth.header(renew)
        async with asyncio.timeout(self.timeout):
            return await self._request(method, target, body)

    async def request(self, method: str, target: str, body: bytes | None = None) -> bytes:
        """The body of a successful answer; raises :class:`_StatusError` or
        :class:`_TransportError`."""
        try:
            code, data, retry_after, location = await self._timed(method, target, body, False)
            if code == 401 and self.endpoint.auth.renewable:
                code, data, retry_after, location = await self._timed(method, target, body, True)
        except _TransportError:
            raise
        except TimeoutError:
            raise _TransportError(f"no complete answer within {self.timeout:g}s") from None
        except _TRANSPORT_ERRORS as error:
            raise _TransportError(_describe(error) or type(error).__name__) from error
        if 300 <= code < 400:
            raise _Redirected(code, location)
        if code >= 400:
            raise _StatusError(code, data, retry_after)
        return data

    async def lines(self, target: str, idle: float, until: float) -> AsyncGenerator[bytes, None]:
        """The lines of a streamed answer (a watch), ending quietly at monotonic time
        ``until``; at most ``idle`` seconds between two reads (:class:`_TransportError`
        after that); raises as :meth:`request` does."""
        connection: _Connection | None = None
        try:
            connection, head = await self._start("GET", target, None, False)
            if head.status_code == 401 and self.endpoint.auth.renewable:
                connection.close()
                connection, head = await self._start("GET", target, None, True)
            if 300 <= head.status_code < 400:
                raise _Redirected(head.status_code, _header(head, b"location"))
            pending = bytearray()
            while True:
                left = until - time.monotonic()
                wait = min(idle, left) if head.status_code < 400 else self.timeout
                try:
                    event = await connection.next_event(max(0.0, wait))
                except TimeoutError:
                    if head.status_code < 400 and wait >= left:
                        return  # its time is up: ended here, as client-go ends it
                    raise _TransportError(f"nothing received for {wait:g}s") from None
                if isinstance(event, h11.EndOfMessage):
                    break
                if not isinstance(event, h11.Data):
                    raise h11.RemoteProtocolError("the stream ended early")
                pending += event.data
                if len(pending) > EVENT_LIMIT:
                    raise h11.RemoteProtocolError(
                        f"a watch event is larger than {EVENT_LIMIT} bytes"
                    )
                if head.status_code >= 400 or b"\n" not in event.data:
                    continue
                *complete, rest = pending.split(b"\n")
                pending = bytearray(rest)
                for line in complete:
                    if line.strip():
                        yield bytes(line)
            if head.status_code >= 400:
                raise _StatusError(head.status_code, bytes(pending), _header(head, b"retry-after"))
        except _TRANSPORT_ERRORS as error:
            raise _TransportError(_describe(error) or type(error).__name__) from error
        finally:
            if connection is not None:
                connection.close()

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()


#: What a failed, dropped or timed-out connection raises.
_TRANSPORT_ERRORS = (OSError, TimeoutError, EOFError, h11.ProtocolError)


def _content_type(method: str) -> str:
    return "application/merge-patch+json" if method == "PATCH" else "application/json"


def _header(head: Any, name: bytes) -> str:
    for key, value in head.headers:
        if key == name:
            return bytes(value).decode("latin-1")
    return ""


# --- the client ----------------------------------------------------------------------------


class ClusterClient:
    """An async client for one kubeconfig; see the module docstring.

    An empty ``kubeconfig`` means the in-cluster service account
    (:mod:`nodehost.api.incluster`), as Origin's ``GetKubeConfigOrInClusterConfig``.
    ``deadline`` is the monotonic time after which retries stop and no request
    goes on (None: retry forever); ``on_retry(message)`` hears about each retry
    (``STATUS=`` lines); ``watch_idle`` is how long a watch stream may stay silent
    before it is re-established (:data:`WATCH_IDLE_LIMIT`).
    """

    def __init__(
        self,
        kubeconfig: str,
        *,
        timeout: float = 10.0,
        deadline: float | None = None,
        backoff: Backoff | None = None,
        on_retry: Callable[[str], None] | None = None,
        watch_idle: float = WATCH_IDLE_LIMIT,
    ) -> None:

        self.kubeconfig = kubeconfig
        self.timeout = timeout
        self.deadline = deadline
        self.backoff = backoff or RETRY_BACKOFF
        self.on_retry = on_retry or (lambda _message: None)
        self.watch_idle = watch_idle
        where = f"kubeconfig {kubeconfig}" if kubeconfig else "the in-cluster service account"
        try:
            endpoint = load_kubeconfig(kubeconfig)
        except ssl.SSLError as error:
            raise ClusterError(f"{where}: cannot use its credentials: {_describe(error)}") from None
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ClusterError(f"cannot load {where}: {_describe(error)}") from None
        self.server = endpoint.server
        self._http = _Http(endpoint, timeout)

    async def close(self) -> None:
        self._http.close()

    async def __aenter__(self) -> ClusterClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- calls ---------------------------------------------------------------

    async def request(self, method: str, path: str, body: Any = None, **query: str) -> Any:
        """One request (no retry), its answer's JSON; ``call`` classifies what it raises."""
        target = f"{path}?{urlencode(query)}" if query else path
        data = None if body is None else json.dumps(body).encode()
        answer = await self._http.request(method, target, data)
        try:
            document = await off_loop(parse_json, answer, BODY_LIMIT)
        except ValueError:
            document = None
        if not isinstance(document, dict):
            shown = f"{len(answer)} bytes" if answer else "empty"
            raise _TransportError(f"the answer to {method} {path} is not a JSON object ({shown})")
        return document

    async def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        path = resource_path(kind, namespace, name)
        return await self.call(f"get {kind} {name}", lambda: self.request("GET", path))

    async def create(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create ``body`` (in its ``metadata.namespace`` for a namespaced kind)."""
        body = {"apiVersion": KINDS[kind].api_version, "kind": kind, **body}
        path = resource_path(kind, (body.get("metadata") or {}).get("namespace"))
        return await self.call(f"create {kind}", lambda: self.request("POST", path, body))

    async def merge_patch(
        self, kind: str, name: str, patch: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        """Apply a JSON merge patch (RFC 7386) to object ``name``; the object as patched."""
        path = resource_path(kind, namespace, name)
        return await self.call(f"patch {kind} {name}", lambda: self.request("PATCH", path, patch))

    async def call(self, what: str, operation: Callable[[], Awaitable[T]]) -> T:
        """Run ``operation`` with retries; raise :class:`ClusterError` subclasses."""
        attempt = 0
        while True:
            try:
                return await self._before_deadline(operation)
            except Exception as error:  # classified below; unknown errors re-raised
                server_delay, reason = self._retry_after(what, error)
            attempt += 1
            delay = max(server_delay or 0.0, self.backoff.delay(attempt))  # never sooner
            if self.deadline is not None and time.monotonic() + delay > self.deadline:
                raise ClusterUnreachable(
                    f"API server {self.server}: {what}: {reason}; gave up after {attempt} "
                    "attempt(s)"
                ) from None
            self.on_retry(f"API server {self.server}: {reason}; retrying in {delay:.1f}s")
            await asyncio.sleep(delay)

    async def _before_deadline(self, operation: Callable[[], Awaitable[T]]) -> T:
        """``operation()``, ended at the client's deadline (:class:`_TransportError`): a
        server that answers a byte at a time does not hold a request past it.  A call made
        after the deadline has passed still gets its one attempt (bounded by
        :attr:`timeout`), as a call always had: the phase that ran out decides what then."""
        remaining = None if self.deadline is None else self.deadline - time.monotonic()
        if remaining is None or remaining <= 0:
            return await operation()
        try:
            async with asyncio.timeout(remaining):
                return await operation()
        except TimeoutError:
            raise _TransportError("no complete answer before the deadline") from None

    def _retry_after(self, what: str, error: Exception) -> tuple[float | None, str]:
        """``(server's delay or None, reason)`` for a retriable error; raise a final one."""
        if isinstance(error, _Redirected):
            raise ClusterRefused(
                f"API server {self.server}: {what}: {self._redirect_advice(error)}",
                error.code,
                "Redirect",
            ) from None
        if isinstance(error, _StatusError):
            if error.code not in RETRIABLE:
                message = f"API server {self.server}: {what}: HTTP {error.code}"
                if error.api:
                    message = (
                        f"API server {self.server}: {what}: {error.message or f'HTTP {error.code}'}"
                        f" ({error.code} {error.reason})"
                    )
                raise ClusterRefused(message, error.code, error.reason) from None
            retry = error.retry_after
            delay = (
                min(float(retry), RETRY_AFTER_LIMIT)
                if retry.replace(".", "", 1).isdigit()
                else None
            )
            return delay, error.describe()
        if isinstance(error, _CredentialError):
            where = f"kubeconfig {self.kubeconfig}" if self.kubeconfig else "the service account"
            raise ClusterError(f"API server {self.server}: {what}: {error} ({where})") from None
        if isinstance(error, _TransportError):
            self._raise_tls(error)
            return None, str(error)
        raise error

    def _redirect_advice(self, error: _Redirected) -> str:
        return (
            f"{error}; nodehost does not follow redirects (a redirect to another host would "
            "take the credentials there): set the kubeconfig's server to the API server's "
            "own address"
        )

    def _raise_tls(self, error: _TransportError) -> None:
        """Raise :class:`ClusterTLSError` when ``error`` is a failed certificate check: a
        name mismatch says which names the certificate holds, another failure points at the
        certificate authority."""
        failure = _certificate_failure(error)
        if failure is None:
            return
        where = self.kubeconfig or "the service account"
        if failure.verify_code in _NAME_MISMATCH:
            names = ", ".join(failure.names) or "no name"
            raise ClusterTLSError(
                f"API server {self.server}: its certificate is valid for {names}, not for "
                f"{self._http.server_name}; set the server (or tls-server-name) in {where} to "
                "a name the certificate holds"
            ) from None
        raise ClusterTLSError(
            f"API server {self.server}: its certificate is not trusted ({failure.message}); "
            f"check the certificate authority in {where}"
        ) from None

    # --- lists and watches ---------------------------------------------------

    async def pages(
        self, kind: str, namespace: str | None = None, limit: int = LIST_PAGE
    ) -> AsyncGenerator[tuple[list[dict[str, Any]], str], None]:
        """List ``kind`` (in ``namespace``, or all of them) a page at a time: ``(items, the
        list's resourceVersion)``.  One attempt per page: wrap the whole listing in
        :meth:`call` for the retry policy."""
        from nodehost.api.objects import MalformedObject, mapping, sequence, text

        query = {"limit": str(limit)}
        path = resource_path(kind, namespace)
        while True:
            answer = await self.request("GET", path, **query)
            try:
                metadata = mapping(answer.get("metadata"), "metadata")
                items = sequence(answer.get("items"), "items")
                version = text(metadata.get("resourceVersion"), "metadata.resourceVersion")
                more = text(metadata.get("continue"), "metadata.continue")
            except MalformedObject as error:
                message = f"the list answer to GET {path} is malformed: {error}"
                raise _TransportError(message) from None
            yield items, version
            if not more:
                return
            query["continue"] = more

    async def watch(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        name: str | None = None,
        version: str | None = None,
        server_timeout: int | None = None,
    ) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """One watch of ``kind`` (or of object ``name``) from ``version``: (event type,
        object) pairs until the stream ends.

        The request asks the server to end it after ``server_timeout`` seconds (by default
        a random time between :data:`WATCH_TIMEOUT` and twice that, as client-go); the
        client ends it itself :data:`WATCH_GRACE` seconds later (a normal end), and when
        nothing arrives for :attr:`watch_idle` seconds (:class:`WatchEnded`, code 0).
        Raises :class:`WatchEnded` for an error answer or ``ERROR`` event (its code), a
        line that is not a watch event, a failed or dropped connection, a redirect, and a
        stream the server ended within :data:`SHORT_WATCH` (after yielding its events: a
        server answering an empty 200 at once must not be asked again at once);
        :class:`ClusterTLSError` for an untrusted server."""
        if server_timeout is None:
            server_timeout = int(WATCH_TIMEOUT * (1.0 + random.random()))
        query = {"watch": "true", "timeoutSeconds": str(server_timeout)}
        if name is not None:
            query["fieldSelector"] = f"metadata.name={name}"
        if version:
            query["resourceVersion"] = version
        target = f"{resource_path(kind, namespace)}?{urlencode(query)}"
        what = f"watch {kind}" + (f" {name}" if name else "")
        started, events = time.monotonic(), 0
        until = started + server_timeout + WATCH_GRACE
        try:
            async with contextlib.aclosing(
                self._http.lines(target, self.watch_idle, until)
            ) as lines:
                async for line in lines:
                    events += 1
                    yield await off_loop(_watch_event, line, what)
        except _StatusError as error:
            raise WatchEnded(what, error.describe(), error.code) from None
        except _Redirected as error:
            raise WatchEnded(what, self._redirect_advice(error), error.code) from None
        except _TransportError as error:
            self._raise_tls(error)
            raise WatchEnded(what, str(error)) from None
        if time.monotonic() - started < SHORT_WATCH:  # a real server holds it for minutes
            raise WatchEnded(what, f"the server ended the watch at once ({events} event(s))")

    async def wait_for(
        self,
        kind: str,
        name: str,
        done: Callable[[dict[str, Any]], bool],
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """Watch object ``name`` until ``done(obj)``; resumes after dropped connections.

        Each round reads the object (with retries), then watches from its
        ``resourceVersion``; a dropped or failed watch starts the next round
        after a backoff delay.  Runs until ``done`` or the deadline
        (:class:`ClusterUnreachable`); ``asyncio.timeout`` around it works too.
        """
        remaining = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        try:
            async with asyncio.timeout(remaining):
                return await self._watch_until(kind, name, done, namespace)
        except TimeoutError:
            raise WaitTimeout(
                f"{kind} {name} was not done before the deadline", kind, name
            ) from None

    async def _watch_until(
        self,
        kind: str,
        name: str,
        done: Callable[[dict[str, Any]], bool],
        namespace: str | None,
    ) -> dict[str, Any]:
        attempt = 0
        while True:
            obj = await self.get(kind, name, namespace)
            if done(obj):
                return obj
            version = version_of(obj)
            try:
                watch = self.watch(kind, namespace, name=name, version=version)
                opened = time.monotonic()
                async with contextlib.aclosing(watch):
                    async for _event, current in watch:
                        if time.monotonic() - opened >= SHORT_WATCH:
                            attempt = 0
                        if done(current):
                            return current
                attempt = 0  # ended by its timeout: a healthy watch
            except WatchEnded as error:
                attempt += 1
                delay = self.backoff.delay(attempt)
                if self.deadline is not None and time.monotonic() + delay > self.deadline:
                    raise ClusterUnreachable(f"API server {self.server}: {error}") from None
                self.on_retry(
                    f"watch of {kind} {name} ended ({error.reason}); resuming in {delay:.1f}s"
                )
                await asyncio.sleep(delay)

    async def follow(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        since: str | None = None,
        give_up_after: int | None = None,
        on_deleted: Callable[[dict[str, Any]], None] | None = None,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Every version of object ``name``, for ever: the current one, then each change.

        Without ``since`` one GET (with retries) yields the current version
        first; with it only the versions after resourceVersion ``since`` come.
        Then one watch: when the server ends it, or the connection drops, it
        is resumed from the last version seen (after a backoff delay if it
        failed); only when the server says that version is gone (410) is the
        object read (and yielded) again.  A deletion is not yielded: ``on_deleted`` (if
        given) is called with the object's last state, and the watch goes on (a new
        object of that name is yielded when it appears).
        ``give_up_after`` failures in a row raise :class:`ClusterUnreachable`
        naming the last one (a caller may go on with new credentials ``since``
        the last version it saw); None retries for ever.  A missing object is
        :class:`ClusterRefused` (404) from a GET.
        """
        version = since
        if version is None:
            obj = await self.get(kind, name, namespace)
            version = version_of(obj)
            yield obj
        failures = gone = 0
        while True:
            try:
                watch = self.watch(kind, namespace, name=name, version=version)
                opened = time.monotonic()
                async with contextlib.aclosing(watch):
                    async for event, current in watch:
                        if time.monotonic() - opened >= SHORT_WATCH:
                            failures = gone = 0
                        version = version_of(current, version or "")
                        if event != "DELETED":
                            yield current
                        elif on_deleted is not None:
                            on_deleted(current)
                failures = gone = 0  # ended by its timeout: a healthy watch
            except WatchEnded as ended:
                if ended.code == 410:  # read it again, after a delay: a server that says
                    gone += 1  # 410 to every watch is not asked 36 times a second
                    await self._resume_after(kind, name, ended, self.backoff.delay(gone))
                    obj = await self.get(kind, name, namespace)
                    version = version_of(obj)
                    yield obj
                    continue
                failures += 1
                if give_up_after is not None and failures >= give_up_after:
                    raise ClusterUnreachable(f"API server {self.server}: {ended}") from None
                await self._resume_after(kind, name, ended, self.backoff.delay(failures))

    async def _resume_after(self, kind: str, name: str, ended: WatchEnded, delay: float) -> None:
        self.on_retry(f"watch of {kind} {name} ended ({ended.reason}); resuming in {delay:.1f}s")
        await asyncio.sleep(delay)


def _watch_event(line: bytes, what: str) -> tuple[str, dict[str, Any]]:
    """(type, object) of one watch line; :class:`WatchEnded` for an ``ERROR`` event."""
    try:
        event = parse_json(line, EVENT_LIMIT)
        kind, obj = str(event["type"]), event["object"]
        if not isinstance(obj, dict):
            raise TypeError("the event's object is not an object")
    except (ValueError, KeyError, TypeError):
        raise WatchEnded(what, f"not a watch event: {line[:80]!r}") from None
    if kind == "ERROR":
        error = _StatusError(0, json.dumps(obj).encode(), "")
        raise WatchEnded(what, error.describe(), error.code)
    return kind, obj


@frozen
class _TLSFailure:
    """Why a server's certificate was refused: OpenSSL's code and message, and for a name
    mismatch the names the certificate holds."""

    verify_code: int
    message: str
    names: tuple[str, ...] = ()


def _certificate_failure(error: BaseException) -> _TLSFailure | None:
    """The verification failure behind a transport error, if that is what it is."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, _NameMismatch):
            return _TLSFailure(62, str(seen), seen.names)
        if isinstance(seen, ssl.SSLCertVerificationError):
            return _TLSFailure(seen.verify_code, seen.verify_message or str(seen))
        if "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return _TLSFailure(0, "certificate verify failed")
        seen = seen.__cause__ or seen.__context__
    return None


def _names_in(der: bytes) -> tuple[str, ...]:
    """The subjectAltName DNS names and IPs of a DER certificate (its CN when it has none)."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    try:
        certificate = x509.load_der_x509_certificate(der)
    except ValueError:
        return ()
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        common = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        return tuple(str(attribute.value) for attribute in common)
    found = names.get_values_for_type(x509.DNSName)
    return tuple(
        dict.fromkeys(found + [str(ip) for ip in names.get_values_for_type(x509.IPAddress)])
    )


def _describe(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__

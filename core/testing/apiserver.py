"""A fake Kubernetes API server for tests and plugin authors' CI.

HTTPS on loopback with a serving certificate from a throw-away test CA
(made with :mod:`nodehost.pki`), or from a CA it is given (``ca=``: one kept
on disk, as ``nodehost start --local-cluster`` keeps its own).  It authenticates like the real one:

* client certificates signed by the test CA: user = CN, groups = O;
* bootstrap tokens (``Authorization: Bearer <id>.<secret>``): user
  ``system:bootstrap:<id>``, groups ``system:bootstrappers``;
* service-account tokens made by :meth:`TestApiServer.service_account` (the
  directory a pod would mount: ``token``, ``ca.crt``, ``namespace``): user
  ``system:serviceaccount:<namespace>:<name>``, groups ``system:serviceaccounts``;

and authorises as a cluster with the usual node RBAC would: ``system:masters``
may do anything; ``system:bootstrappers`` may create, get, list and watch
CertificateSigningRequests; ``system:nodes`` may also read ConfigMaps, Nodes,
Services and EndpointSlices, and service accounts may read those too (as
kube-proxy's account does) -- minus what :meth:`TestApiServer.forbid` takes
away; as the node authorizer allows, nodes also update and patch their own
Node (``system:node:<name>``) and create Events.  Anything else is a 403; no
or unknown credentials (and a client certificate :meth:`TestApiServer.revoke` revoked) a 401.

It serves ``/version``, the discovery documents kubectl reads (``/api``,
``/api/v1``, ``/apis``, ``/apis/<group>/<version>``), and get, list, watch,
create, update, patch and delete of ConfigMaps, Nodes, Services,
EndpointSlices, Events and CertificateSigningRequests (with ``/approval`` and
``/status`` as ``kubectl certificate approve`` uses them), with the real API's JSON shapes,
``Status`` bodies and codes.  A PATCH is a JSON merge patch (RFC 7386);
a strategic merge patch (what ``kubectl apply`` and ``kubectl edit`` send) is
applied the same way, its ``$`` directives ignored -- right for the maps these
resources hold.  Lists are paged as the real server pages them
(``limit``, then ``continue`` with the token of the previous page, which
carries the first page's ``resourceVersion``; ``remainingItemCount``); each
page shows the objects as they are when it is read, and a client that watches
from the list's version sees every change made meanwhile.  Watches
(``?watch=1&resourceVersion=N``) stream newline-delimited JSON events from
version N (an ``ERROR`` event with ``410 Gone`` when N is older than the kept
history); ``fieldSelector=metadata.name=X`` is honoured.  Every request's
monotonic time is kept in :attr:`TestApiServer.request_times` (rates per second).
The CSR approver and signer are in :mod:`nodehost.testing.apistore`.

Fault injection: :meth:`TestApiServer.fail_next` (the next N requests answer
a code, 429 with ``Retry-After``), :meth:`drop_watches`, :meth:`go_down` and
:meth:`come_up` (same port), and :meth:`TestApiServer.misbehave`: a hostile
server or proxy (:data:`MISBEHAVIOURS`: ``429`` with ``Retry-After: 0``, an
empty or garbage ``200``, ``410`` on every watch, an answer trickled a byte at
a time, a watch that stays silent, a redirect, a raw watch event).

Several servers of one cluster: ``TestApiServer(dir, listeners=3)`` serves the
one store on three ports (:attr:`TestApiServer.ports`, :attr:`urls`; the
first is :attr:`port`), each with the same certificate, as the API servers of
an HA cluster share their names.  ``go_down(port)`` stops one of them (it
stops listening and every connection it holds is cut), ``come_up(port)``
brings it back; without a port they act on every one.  ``/readyz``,
``/livez`` and ``/healthz`` answer ``ok`` to anyone, as the real server's do;
``set_ready(port, False)`` makes that port's ``/readyz`` answer 500 (a server
that lost its storage) while it goes on serving and keeping its connections.

Standalone::

    python -m nodehost.testing.apiserver --port 16443 --dir /tmp/api \\
        [--approve approve|deny|never] [--config-map NS/NAME=FILE ...] [--objects FILE]

prints ``address https://127.0.0.1:16443`` (one line per port with
``--listeners N``) and the kubeconfigs it wrote
(``admin.kubeconfig``: a ``system:masters`` client certificate;
``bootstrap.kubeconfig``: a bootstrap token), then serves until SIGTERM.
SIGUSR1 takes it down (``down <monotonic time>``), SIGUSR2 brings it back
(``up <time>``); ``--request-log FILE`` writes every request on exit.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from nodehost.testing.apistore import (
    APPROVER_MODES,
    RESOURCES,
    SIGNERS,
    ObjectStore,
    ResourceType,
    StoreError,
)
from nodehost.testing.apitables import table, wants_table
from nodehost.testing.ports import free_port

DEFAULT_TOKEN = "abcdef.0123456789abcdef"
DEFAULT_LIFETIME = 24 * 3600
SERVER_VERSION = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0-nodehost-test",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
PUBLIC_PATHS = ("/version", "/readyz", "/livez", "/healthz")
HEALTH_PATHS = ("/readyz", "/livez", "/healthz")
#: What :meth:`TestApiServer.misbehave` can make the server do, for the requests it picks.
MISBEHAVIOURS = {
    "retry-now": "429 Too Many Requests with Retry-After: 0",
    "empty": "200 with an empty body (a watch: an empty stream, ended at once)",
    "garbage": "200 with the bytes given (default: an HTML page), not JSON",
    "gone": "410 Gone (a watch: an ERROR event with code 410, as the real server sends it)",
    "trickle": "200 whose 1,000-byte body comes one byte per `interval` seconds",
    "silent": "a watch's 200 and then nothing, until the connection closes",
    "redirect": "302 Found to https://elsewhere.example",
    "event": "a watch stream of the line given, then the stream ends",
}


@dataclass
class Misbehaviour:
    """One :meth:`TestApiServer.misbehave` rule: ``mode`` for requests whose path starts
    with ``prefix`` (watches only, or all but watches, or both), ``count`` times (None:
    until cleared)."""

    mode: str
    prefix: str = ""
    watches: bool | None = None
    count: int | None = None
    body: bytes = b"<html><body>Service Unavailable</body></html>"
    interval: float = 1.0

    def picks(self, path: str, watch: bool) -> bool:
        return path.startswith(self.prefix) and self.watches in (None, watch)


FAULT_REASONS = {
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
NODE_READABLE = ("configmaps", "nodes", "services", "endpointslices")
READ_VERBS = ("get", "list", "watch")
#: The patch media types answered (both as JSON merge patches).
PATCH_TYPES = ("application/merge-patch+json", "application/strategic-merge-patch+json")
NODE_USER_PREFIX = "system:node:"
#: The subresources served, by resource.
SUBRESOURCES = {"certificatesigningrequests": ("approval", "status"), "nodes": ("status",)}
#: Where nodes keep their Leases (the kubelet's heartbeat).
NODE_LEASE_NAMESPACE = "kube-node-lease"


class TestCA:
    """The test CA: signs the server's certificate, client certificates and CSRs."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        name: str = "nodehost-test-ca",
        *,
        key: Any = None,
        certificate: Any = None,
        days: int = 1,
        serial: int = 100,
    ) -> None:
        """A new CA valid for two days, or the given ``key`` and ``certificate`` (a CA
        kept on disk); the client and serving certificates it issues live ``days`` days
        and get the serial numbers after ``serial``."""
        from nodehost.pki.certs import encode_certificates, make_ca_certificate
        from nodehost.pki.keys import generate_private_key

        self.key = key if key is not None else generate_private_key("ecdsa")
        self.certificate = certificate or make_ca_certificate(self.key, name, days=2)
        self.pem = encode_certificates([self.certificate])
        self.days = days
        self._serial = serial
        self._lock = threading.Lock()

    @classmethod
    def from_signer(cls, folder: Path, days: int = 1, block: int = 1_000_000) -> TestCA:
        """The signer CA in ``folder`` (as ``nodehost ca create`` writes one).

        The serial numbers it issues are a block of ``block`` reserved in the
        folder's serial file, so they never collide with those ``nodehost config
        create`` takes from it.  Raises :class:`~nodehost.errors.PKIError` when
        the folder's CA is unusable.
        """
        from nodehost.pki.ca import CA_CERT_FILE, CA_KEY_FILE, CA_SERIAL_FILE, load_signer

        signer = load_signer(folder / CA_CERT_FILE, folder / CA_KEY_FILE, folder / CA_SERIAL_FILE)
        serials = signer.reserve_serials(block)
        return cls(
            key=signer.key, certificate=signer.certificate, days=days, serial=serials.start - 1
        )

    def next_serial(self) -> int:
        with self._lock:
            self._serial += 1
            return self._serial

    def client_pair(self, user: str, groups: list[str]) -> tuple[bytes, bytes]:
        """(certificate PEM, key PEM) of a new client certificate for ``user``."""
        from nodehost.pki.certs import encode_certificates, make_client_certificate
        from nodehost.pki.keys import encode_private_key, generate_private_key

        key = generate_private_key("ecdsa")
        cert = make_client_certificate(
            self.certificate,
            self.key,
            key.public_key(),
            user=user,
            groups=groups,
            serial=self.next_serial(),
            days=self.days,
        )
        return encode_certificates([cert]), encode_private_key(key)

    def serving_pair(self, names: list[str]) -> tuple[bytes, bytes]:
        from nodehost.pki.certs import encode_certificates, make_server_certificate
        from nodehost.pki.hostnames import parse_hostnames
        from nodehost.pki.keys import encode_private_key, generate_private_key

        key = generate_private_key("ecdsa")
        cert = make_server_certificate(
            self.certificate,
            self.key,
            key.public_key(),
            hostnames=parse_hostnames(names),
            serial=self.next_serial(),
            days=self.days,
        )
        return encode_certificates([cert]), encode_private_key(key)

    def sign_csr(self, csr_object: dict[str, Any], default_lifetime: int) -> bytes:
        """The certificate for a CSR object: its subject and SANs, its usages, its lifetime."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.x509.oid import ExtendedKeyUsageOID

        spec = csr_object["spec"]
        request = x509.load_pem_x509_csr(base64.b64decode(spec["request"]))
        seconds = int(spec.get("expirationSeconds") or default_lifetime)
        now = datetime.datetime.now(datetime.UTC)
        usages = set(spec.get("usages") or [])
        builder = (
            x509.CertificateBuilder()
            .subject_name(request.subject)
            .issuer_name(self.certificate.subject)
            .public_key(request.public_key())
            .serial_number(self.next_serial())
            .not_valid_before(now - datetime.timedelta(seconds=1))
            .not_valid_after(now + datetime.timedelta(seconds=seconds))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature="digital signature" in usages,
                    content_commitment=False,
                    key_encipherment="key encipherment" in usages,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
        )
        purposes = [
            oid
            for usage, oid in (
                ("client auth", ExtendedKeyUsageOID.CLIENT_AUTH),
                ("server auth", ExtendedKeyUsageOID.SERVER_AUTH),
            )
            if usage in usages
        ]
        if purposes:
            builder = builder.add_extension(x509.ExtendedKeyUsage(purposes), critical=False)
        with contextlib.suppress(x509.ExtensionNotFound):
            sans = request.extensions.get_extension_for_class(x509.SubjectAlternativeName)
            builder = builder.add_extension(sans.value, critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 4096  # a fleet connects at once; 5 would drop SYNs and stall it

    def __init__(self, address: tuple[str, int], owner: TestApiServer) -> None:
        self.owner = owner
        self.port = address[1]
        super().__init__(address, _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """TLS handshake in the connection's own thread, serve it, then close it.

        No Nagle delay (``TCP_NODELAY``), as Go's listeners -- the real server's -- do.
        """
        with contextlib.suppress(OSError):
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.owner.track(request, self.port)
        with self.owner.log_lock:
            self.owner.connections[self.port] = self.owner.connections.get(self.port, 0) + 1
        try:
            tls = self.owner.tls_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as error:
            self.owner.handshake_errors.append(str(error))
            self.owner.untrack(request, self.port)
            return
        self.owner.track(tls, self.port)
        try:
            super().finish_request(tls, client_address)
        finally:
            with contextlib.suppress(OSError):
                tls.shutdown(socket.SHUT_RDWR)
            tls.close()
            self.owner.untrack(tls, self.port)
            self.owner.untrack(request, self.port)


class TestApiServer:
    """The fake API server; see the module docstring.  ``with TestApiServer(dir) as api:``."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        directory: Path | str,
        port: int = 0,
        host: str = "127.0.0.1",
        token: str = DEFAULT_TOKEN,
        default_lifetime: int = DEFAULT_LIFETIME,
        ca: TestCA | None = None,
        listeners: int = 1,
    ) -> None:
        self.directory = Path(directory)
        self.host = host
        self.port = port or free_port(host)
        #: Every port the store is served on (``listeners`` of them), :attr:`port` first.
        self.ports = [self.port, *(free_port(host) for _ in range(listeners - 1))]
        #: Connections accepted so far, by port.
        self.connections: dict[int, int] = {}
        #: Ports whose ``/readyz`` answers 500.
        self.not_ready: set[int] = set()
        self.ca = ca if ca is not None else TestCA()
        token_id, secret = token.split(".", 1)
        self.tokens = {token_id: secret}
        self.service_accounts: dict[str, str] = {}
        self.default_lifetime = default_lifetime
        self.store = ObjectStore(signer=lambda csr: self.ca.sign_csr(csr, self.default_lifetime))
        self.forbidden: set[str] = set()
        self.revoked: set[int] = set()
        self.requests: list[tuple[str, str, str]] = []
        self.request_times: list[float] = []
        self._outage: list[str] = []
        self.log_lock = threading.Lock()
        self.watches_opened = 0
        self.handshake_errors: list[str] = []
        self._faults: list[tuple[int, float | None, str]] = []
        self._misbehaviours: list[Misbehaviour] = []
        self._faults_lock = threading.Lock()
        self._sockets: dict[int, set[Any]] = {}
        self._servers: dict[int, tuple[_Server, threading.Thread]] = {}
        self.directory.mkdir(parents=True, exist_ok=True)
        self.tls_context = self._tls_context()
        self.admin_kubeconfig = self._write_kubeconfigs(token)

    # --- files ---------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    @property
    def urls(self) -> list[str]:
        """The URL of each port, :attr:`url` first."""
        return [f"https://{self.host}:{port}" for port in self.ports]

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def bootstrap_kubeconfig(self) -> Path:
        return self.directory / "bootstrap.kubeconfig"

    def _tls_context(self) -> ssl.SSLContext:
        from nodehost.pki.atomic import write_atomic

        cert_pem, key_pem = self.ca.serving_pair([self.host, "localhost"])
        write_atomic(self.ca_file, self.ca.pem, 0o644)
        write_atomic(self.directory / "serving.crt", cert_pem + self.ca.pem, 0o644)
        write_atomic(self.directory / "serving.key", key_pem, 0o600)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.directory / "serving.crt", self.directory / "serving.key")
        context.load_verify_locations(cadata=self.ca.pem.decode())
        context.verify_mode = ssl.CERT_OPTIONAL
        return context

    def _write_kubeconfigs(self, token: str) -> Path:
        from nodehost.pki.atomic import write_atomic
        from nodehost.pki.kubeconfig import dump_kubeconfig, node_kubeconfig

        cert, key = self.ca.client_pair("admin", ["system:masters"])
        admin = self.directory / "admin.kubeconfig"
        write_atomic(
            admin,
            dump_kubeconfig(node_kubeconfig(self.url, self.ca.pem, cert, key, "admin")),
            0o600,
        )
        write_atomic(
            self.bootstrap_kubeconfig, dump_kubeconfig(self.token_kubeconfig(token)), 0o600
        )
        return admin

    def node_kubeconfig(self, node: str) -> Path:
        """Write ``<node>.kubeconfig``: a client certificate of node ``node`` (user
        ``system:node:<node>``, group ``system:nodes``), as a kubelet's after its TLS bootstrap."""
        from nodehost.pki.atomic import write_atomic
        from nodehost.pki.kubeconfig import dump_kubeconfig, node_kubeconfig

        cert, key = self.ca.client_pair(NODE_USER_PREFIX + node, ["system:nodes"])
        path = self.directory / f"{node}.kubeconfig"
        content = node_kubeconfig(self.url, self.ca.pem, cert, key, NODE_USER_PREFIX + node)
        write_atomic(path, dump_kubeconfig(content), 0o600)
        return path

    def service_account(
        self, directory: Path | str, namespace: str = "kube-system", name: str = "nodehost"
    ) -> Path:
        """Write a pod's service-account directory for this server and return it.

        ``token`` (0600, accepted as ``system:serviceaccount:<namespace>:<name>``),
        ``ca.crt`` (the test CA) and ``namespace``; point
        ``NODEHOST_SERVICE_ACCOUNT_DIR`` at it and ``KUBERNETES_SERVICE_HOST``/
        ``PORT`` at :attr:`host`/:attr:`port`.
        """
        import secrets

        from nodehost.pki.atomic import write_atomic

        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        token = secrets.token_urlsafe(32)
        self.service_accounts[token] = f"system:serviceaccount:{namespace}:{name}"
        write_atomic(folder / "token", token.encode(), 0o600)
        write_atomic(folder / "ca.crt", self.ca.pem, 0o644)
        write_atomic(folder / "namespace", namespace.encode(), 0o644)
        return folder

    def token_kubeconfig(self, token: str, ca_pem: bytes | None = None) -> dict[str, Any]:
        """A kubeconfig for this server authenticating with ``token`` (CA: the test CA)."""
        from nodehost.pki.kubeconfig import kubeconfig

        return kubeconfig(
            self.url,
            {"token": token},
            names=("cluster", "token", "token@cluster"),
            ca_pem=ca_pem if ca_pem is not None else self.ca.pem,
        )

    # --- running -------------------------------------------------------------

    def __enter__(self) -> TestApiServer:
        self.come_up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.go_down()

    def come_up(self, port: int | None = None) -> None:
        """Listen (again) on ``port`` (one of :attr:`ports`), or on every port."""
        for each in self._chosen(port):
            if each in self._servers:
                continue
            server = _Server((self.host, each), self)
            thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._servers[each] = (server, thread)
            thread.start()

    def go_down(self, port: int | None = None) -> None:
        """Stop listening on ``port`` (or every port) and cut every connection it holds
        (watches included)."""
        chosen = [each for each in self._chosen(port) if each in self._servers]
        for each in chosen:
            server, _ = self._servers[each]
            server.shutdown()
            server.server_close()
        if port is None:
            self.drop_watches()
        for each in chosen:
            for sock in list(self._sockets.pop(each, ())):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            self._servers.pop(each)[1].join(5)

    def _chosen(self, port: int | None) -> list[int]:
        if port is not None and port not in self.ports:
            raise ValueError(f"port {port} is not one of this server's ports {self.ports}")
        return list(self.ports) if port is None else [port]

    @property
    def up(self) -> bool:
        """Listening on at least one port."""
        return bool(self._servers)

    def listening(self, port: int) -> bool:
        return port in self._servers

    @property
    def serving(self) -> bool:
        """Up, and every serving thread alive."""
        return self.up and all(thread.is_alive() for _, thread in self._servers.values())

    def set_ready(self, port: int, ready: bool) -> None:
        """Whether ``port``'s ``/readyz`` answers 200 (else 500); nothing else changes."""
        self._chosen(port)
        if ready:
            self.not_ready.discard(port)
        else:
            self.not_ready.add(port)

    def track(self, sock: Any, port: int) -> None:
        self._sockets.setdefault(port, set()).add(sock)

    def untrack(self, sock: Any, port: int) -> None:
        self._sockets.get(port, set()).discard(sock)

    # --- test controls -------------------------------------------------------

    def set_approver(self, mode: str, signer: str | None = None) -> None:
        """How the approver answers new CSRs of ``signer`` (every known signer if None)."""
        if mode not in APPROVER_MODES:
            raise ValueError(f"approver mode must be one of {APPROVER_MODES}")
        for name in [signer] if signer else list(SIGNERS):
            self.store.approvers[name] = mode

    def approve(self, name: str) -> None:
        """Approve CSR ``name`` now (as ``kubectl certificate approve``)."""
        self._answer(name, "Approved")

    def deny(self, name: str) -> None:
        self._answer(name, "Denied")

    def _answer(self, name: str, verdict: str) -> None:
        csr = self.store.get("certificatesigningrequests", "", name)
        csr.setdefault("status", {})["conditions"] = [
            *csr["status"].get("conditions", []),
            {
                "type": verdict,
                "status": "True",
                "reason": f"Test{verdict}",
                "message": "by the test",
            },
        ]
        self.store.replace("certificatesigningrequests", "", name, csr, part="approval")

    def csrs(self) -> list[dict[str, Any]]:
        return self.store.list("certificatesigningrequests", None)[0]

    def put_config_map(self, namespace: str, name: str, data: dict[str, str]) -> None:
        self.store.put(
            "configmaps", {"metadata": {"name": name, "namespace": namespace}, "data": data}
        )

    def revoke(self, certificate_pem: bytes) -> None:
        """Refuse the client certificate ``certificate_pem`` from now on (401), as one revoked."""
        from cryptography import x509

        self.revoked.add(x509.load_pem_x509_certificate(certificate_pem).serial_number)

    def forbid(self, resource: str) -> None:
        """Take ``resource`` away from ``system:nodes`` (a 403 for nodes from now on)."""
        self.forbidden.add(resource)

    def fail_next(
        self, count: int, code: int, retry_after: float | None = None, path_prefix: str = ""
    ) -> None:
        """The next ``count`` requests (under ``path_prefix``) answer ``code``."""
        with self._faults_lock:
            self._faults.extend([(code, retry_after, path_prefix)] * count)

    def take_fault(self, path: str) -> tuple[int, float | None] | None:
        with self._faults_lock:
            for index, (code, retry_after, prefix) in enumerate(self._faults):
                if path.startswith(prefix):
                    del self._faults[index]
                    return code, retry_after
        return None

    def misbehave(self, mode: str | None, prefix: str = "", **rule: Any) -> None:
        """From now on answer the requests under ``prefix`` as ``mode`` says (one of
        :data:`MISBEHAVIOURS`; ``watches=True`` only watches, ``False`` none;
        ``count=N`` N times; ``body=`` for garbage and event, ``interval=`` for trickle);
        ``None`` clears every rule."""
        with self._faults_lock:
            if mode is None:
                self._misbehaviours.clear()
                return
            if mode not in MISBEHAVIOURS:
                raise ValueError(f"unknown misbehaviour {mode!r}")
            self._misbehaviours.append(Misbehaviour(mode, prefix, **rule))

    def take_misbehaviour(self, path: str, watch: bool) -> Misbehaviour | None:
        with self._faults_lock:
            for rule in self._misbehaviours:
                if rule.picks(path, watch):
                    if rule.count is not None:
                        rule.count -= 1
                        if rule.count <= 0:
                            self._misbehaviours.remove(rule)
                    return rule
        return None

    def wait_for_watches(self, count: int, timeout: float = 30.0) -> None:
        """Block until ``count`` watch streams have been opened since start (any resource).

        A stream counts once it follows the store, so a :meth:`drop_watches`
        after this returns ends it.  Raise ``TimeoutError`` after ``timeout`` s.
        """
        with self.store.lock:
            if not self.store.lock.wait_for(lambda: self.watches_opened >= count, timeout):
                raise TimeoutError(f"{count} watch(es) not opened within {timeout}s")

    def drop_watches(self) -> None:
        """End every open watch stream (the connection closes mid-stream)."""
        with self.store.lock:
            self.store.watch_generation += 1
            self.store.wake_all()


def status_body(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    """The API's ``Status`` object for a failure."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    raw_body: bytes = b""  # the request's body, read whole by dispatch()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: requests are recorded in ``TestApiServer.requests``."""

    # --- plumbing ------------------------------------------------------------

    @property
    def api(self) -> TestApiServer:
        return self.server.owner

    @property
    def port(self) -> int:
        """The port this connection came in on."""
        return int(self.server.server_address[1])

    def send_text(self, code: int, text: str) -> None:
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = (json.dumps(body) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def send_status(self, code: int, reason: str, message: str, **details: Any) -> None:
        headers = {}
        if "retryAfterSeconds" in details:
            headers["Retry-After"] = str(details["retryAfterSeconds"])
        self.send_json(code, status_body(code, reason, message, **details), headers)

    def read_body(self) -> dict[str, Any]:
        """The request body as JSON; a protobuf CSR (kubectl's approval PUT) is decoded.

        Other media types answer 415, as a server without them would.
        """
        raw = self.raw_body or b"{}"
        media = self.headers.get("Content-Type", "application/json").split(";")[0].strip()
        try:
            if media == "application/vnd.kubernetes.protobuf":
                from nodehost.testing.kubeproto import decode_csr

                return decode_csr(raw)
            if media not in ("application/json", "", *PATCH_TYPES):
                raise StoreError(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown "
                    "format - accepted media types include: application/json",
                )
            body = json.loads(raw)
        except ValueError:
            raise StoreError(400, "BadRequest", "the body of the request does not decode") from None
        if not isinstance(body, dict):
            raise StoreError(400, "BadRequest", "the body of the request is not an object")
        return body

    def authenticate(self) -> tuple[str, list[str]] | None:
        header = self.headers.get("Authorization", "")
        if header.startswith("Bearer ") and header[7:].strip() in self.api.service_accounts:
            user = self.api.service_accounts[header[7:].strip()]
            return user, ["system:serviceaccounts", "system:authenticated"]
        if header.startswith("Bearer "):
            token_id, _, secret = header[7:].strip().partition(".")
            if self.api.tokens.get(token_id) == secret and secret:
                return f"system:bootstrap:{token_id}", [
                    "system:bootstrappers",
                    "system:authenticated",
                ]
            return None
        getpeercert = getattr(self.connection, "getpeercert", None)
        try:
            peer = getpeercert() if getpeercert is not None else None
        except (AttributeError, ValueError):  # the connection was cut (an outage) meanwhile
            peer = None
        if peer and int(peer.get("serialNumber", "0"), 16) in self.api.revoked:
            return None
        if peer:
            fields = [item for rdn in peer.get("subject", ()) for item in rdn]
            common = [v for k, v in fields if k == "commonName"]
            groups = [v for k, v in fields if k == "organizationName"]
            if common:
                return common[0], [*groups, "system:authenticated"]
        return None

    def allowed(
        self,
        user: tuple[str, list[str]],
        verb: str,
        resource: str,
        name: str = "",
        namespace: str = "",
    ) -> bool:
        groups = user[1]
        if "system:masters" in groups:
            return True
        if "system:nodes" in groups and _node_writes(user[0], verb, resource, name, namespace):
            return True
        if resource == "certificatesigningrequests" and verb in ("create", *READ_VERBS):
            return "system:bootstrappers" in groups or "system:nodes" in groups
        readers = ("system:nodes", "system:serviceaccounts")
        if any(group in groups for group in readers) and resource not in self.api.forbidden:
            return resource in NODE_READABLE and verb in READ_VERBS
        return False

    # --- dispatch ------------------------------------------------------------

    def do_GET(self) -> None:
        self.dispatch("GET")

    def do_POST(self) -> None:
        self.dispatch("POST")

    def do_PUT(self) -> None:
        self.dispatch("PUT")

    def do_DELETE(self) -> None:
        self.dispatch("DELETE")

    def do_PATCH(self) -> None:
        self.dispatch("PATCH")

    def dispatch(self, method: str) -> None:
        # Read the whole body first, whatever the answer: one left unread (a DELETE's
        # DeleteOptions, a refused POST's object) would be read as the next request line.
        length = int(self.headers.get("Content-Length") or 0)
        self.raw_body = self.rfile.read(length) if length > 0 else b""
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        fault = self.api.take_fault(url.path)
        watching = query.get("watch") in ("1", "true")
        hostile = self.api.take_misbehaviour(url.path, watching)
        user = self.authenticate()
        with self.api.log_lock:
            self.api.requests.append((method, self.path, user[0] if user else ""))
            self.api.request_times.append(time.monotonic())
        try:
            if hostile is not None:
                self.misbehave(hostile, watching)
            elif fault is not None:
                self.fault(*fault)
            elif user is None and url.path.rstrip("/") in PUBLIC_PATHS and method == "GET":
                self.discovery(url.path)  # system:public-info-viewer: anyone may read these
            elif user is None:
                self.send_status(401, "Unauthorized", "Unauthorized")
            elif method == "GET" and self.discovery(url.path):
                pass
            else:
                self.resource_request(method, url.path, query, user)
        except StoreError as error:
            self.send_status(error.code, error.reason, error.message, **error.details)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    def fault(self, code: int, retry_after: float | None) -> None:
        if code == 429:
            self.send_status(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
                retryAfterSeconds=int(retry_after or 1),
            )
        else:
            reason = FAULT_REASONS.get(code, "InternalError")
            self.send_status(code, reason, f"injected failure {code}")

    def misbehave(self, rule: Misbehaviour, watch: bool) -> None:
        """Answer as ``rule`` says (see :data:`MISBEHAVIOURS`)."""
        mode = rule.mode
        if mode == "retry-now":
            self.send_status(429, "TooManyRequests", "Too many requests", retryAfterSeconds=0)
        elif mode == "gone" and watch:
            self.stream([_error_event(StoreError(410, "Expired", "too old resource version"))])
        elif mode == "gone":
            self.send_status(410, "Expired", "too old resource version")
        elif mode == "redirect":
            self.send_response(302)
            self.send_header("Location", f"https://elsewhere.example{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode in ("empty", "garbage", "trickle"):
            self.raw_answer(b"" if mode == "empty" else rule.body, rule.interval if
                            mode == "trickle" else 0.0)  # fmt: skip
        elif mode == "silent":
            self.stream([])
            self.stay_silent()
        else:  # event
            self.stream([rule.body.rstrip(b"\n") + b"\n"])
            self.chunk(b"")

    def stay_silent(self) -> None:
        """Send nothing until the client closes, the server goes down or its watches are
        dropped (:meth:`TestApiServer.drop_watches`)."""
        store = self.api.store
        generation = store.watch_generation
        self.connection.settimeout(0.2)
        with contextlib.suppress(OSError):
            while self.api.up and store.watch_generation == generation:
                try:
                    if not self.connection.recv(1):
                        break
                except TimeoutError:
                    continue
        self.close_connection = True

    def raw_answer(self, body: bytes, interval: float) -> None:
        """200 with ``body`` (a trickle: 1,000 bytes, one each ``interval`` seconds)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(1000 if interval else len(body)))
        self.end_headers()
        if not interval:
            self.wfile.write(body)
            return
        for _ in range(1000):
            if not self.api.up:
                break
            self.wfile.write(b" ")
            self.wfile.flush()
            time.sleep(interval)
        self.close_connection = True

    def stream(self, lines: list[bytes]) -> None:
        """A watch answer's head and ``lines`` (the stream stays open)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if lines:
            self.chunk(b"".join(lines))
        else:
            self.wfile.flush()

    def discovery(self, path: str) -> bool:
        """Answer ``/version`` and the discovery documents; False for other paths."""
        path = path.rstrip("/")
        if path == "/version":
            self.send_json(200, SERVER_VERSION)
        elif path == "/readyz" and self.port in self.api.not_ready:
            self.send_text(500, "[-]etcd failed: reason withheld\nreadyz check failed\n")
        elif path in HEALTH_PATHS:
            self.send_text(200, "ok")
        elif path == "/api":
            self.send_json(
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {
                            "clientCIDR": "0.0.0.0/0",
                            "serverAddress": f"{self.api.host}:{self.api.port}",
                        }
                    ],
                },
            )
        elif path == "/apis":
            self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": _groups()})
        elif path in _resource_lists():
            self.send_json(200, _resource_lists()[path])
        else:
            return False
        return True

    def resource_request(
        self, method: str, path: str, query: dict[str, str], user: tuple[str, list[str]]
    ) -> None:
        kind, namespace, name, part = _parse_path(path)
        collection = not name
        verb = {
            "GET": "watch"
            if query.get("watch") in ("1", "true")
            else ("list" if collection else "get"),
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete",
        }[method]
        if (method == "POST") != collection and method != "GET":
            raise StoreError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        if not self.allowed(user, verb, kind.plural, name, namespace):
            raise StoreError(
                403,
                "Forbidden",
                _forbidden_message(user[0], verb, kind, namespace, name),
                name=name,
                kind=kind.plural,
                group=kind.group,
            )
        store = self.api.store
        if verb == "watch":
            self.watch(kind, namespace or None, query)
        elif verb == "list":
            self.list(kind, namespace if kind.namespaced and namespace else None, query)
        elif verb == "get" and wants_table(self.headers.get("Accept", "")):
            found = store.get(kind.plural, namespace, name)
            self.send_json(200, table(kind.plural, [found], found["metadata"]["resourceVersion"]))
        elif verb == "get":
            self.send_json(200, store.get(kind.plural, namespace, name))
        elif verb == "create":
            body = self.read_body()
            _node_restriction(user, kind.plural, body)
            self.send_json(201, store.create(kind.plural, namespace, body, user))
        elif verb == "update":
            self.send_json(200, store.replace(kind.plural, namespace, name, self.read_body(), part))
        elif verb == "patch":
            self.send_json(200, store.patch(kind.plural, namespace, name, self.read_body(), part))
        else:
            self.send_json(200, store.delete(kind.plural, namespace, name))

    def list(self, kind: ResourceType, namespace: str | None, query: dict[str, str]) -> None:
        """One page of a list (all of it without ``limit``); see the module docstring."""
        store = self.api.store
        limit = _non_negative(query.get("limit", ""), "limit")
        token = query.get("continue", "")
        after, first_revision = _read_continue(token) if token else (None, None)
        if first_revision is not None:
            store.check_version(kind.plural, first_revision)
        selector = query.get("fieldSelector", "")
        items, revision, remaining = store.page(kind.plural, namespace, after, limit)
        metadata: dict[str, Any] = {"resourceVersion": str(first_revision or revision)}
        if remaining and items:
            last = items[-1]["metadata"]
            start = (last.get("namespace", ""), last["name"])
            metadata["continue"] = _write_continue(start, first_revision or revision)
            metadata["remainingItemCount"] = remaining
        if wants_table(self.headers.get("Accept", "")):
            answer = table(kind.plural, _select(items, selector), metadata["resourceVersion"])
            answer["metadata"].update(metadata)
            self.send_json(200, answer)
            return
        self.send_json(
            200,
            {
                "kind": f"{kind.kind}List",
                "apiVersion": kind.api_version,
                "metadata": metadata,
                "items": _select(items, selector),
            },
        )

    def watch(self, kind: ResourceType, namespace: str | None, query: dict[str, str]) -> None:
        """Stream events as newline-delimited JSON until dropped, timed out or the server stops."""
        store = self.api.store
        selector = query.get("fieldSelector", "")
        named = dict(t.split("=", 1) for t in selector.split(",") if "=" in t).get("metadata.name")
        version = query.get("resourceVersion", "")
        timeout = float(query.get("timeoutSeconds") or 1800)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        with store.lock:
            generation = store.watch_generation
            self.api.watches_opened += 1
            store.lock.notify_all()
            if version in ("", "0"):
                items, revision = store.list(kind.plural, namespace)
                pending = [
                    json.dumps({"type": "ADDED", "object": o}).encode() + b"\n"
                    for o in _select(items, selector)
                ]
            else:
                revision = int(version)
                pending = []
        deadline = time.monotonic() + timeout
        try:
            while self.api.listening(self.port) and time.monotonic() < deadline:
                if pending:
                    self.chunk(b"".join(pending))
                with store.lock:
                    try:
                        events = list(store.events_after(kind.plural, namespace, revision))
                        if not events and store.watch_generation == generation:
                            wait = min(5.0, max(0.0, deadline - time.monotonic()))
                            store.wait_for_events(kind.plural, named, wait)
                            events = list(store.events_after(kind.plural, namespace, revision))
                    except StoreError as error:
                        self.chunk(_error_event(error))
                        break
                    if store.watch_generation != generation:
                        self.close_connection = True
                        return  # dropped: end the stream without its closing chunk
                if events:
                    revision = events[-1].revision
                pending = [e.line for e in events if _select([e.object], selector)]
            self.chunk(b"")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True

    def chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _node_writes(user: str, verb: str, resource: str, name: str, namespace: str = "") -> bool:
    """What the node authorizer and RBAC's ``system:node`` role let node ``user`` do beyond
    reading: create, update and patch its own Node (and its status), keep its own Lease in
    ``kube-node-lease``, and create Events.  A create names no object in its path: the
    created object's name is checked by :func:`_node_restriction` (NodeRestriction)."""
    own = user == NODE_USER_PREFIX + name or (verb == "create" and not name)
    if resource == "nodes":
        return verb in ("create", "update", "patch") and own
    if resource == "leases":
        writes = ("get", "create", "update", "patch", "delete")
        return namespace == NODE_LEASE_NAMESPACE and verb in writes and own
    return resource == "events" and verb in ("create", "patch")


def _node_restriction(user: tuple[str, list[str]], resource: str, body: dict[str, Any]) -> None:
    """NodeRestriction admission of a create: a node creates only its own Node and Lease."""
    if "system:nodes" not in user[1] or resource not in ("nodes", "leases"):
        return
    node = user[0].removeprefix(NODE_USER_PREFIX)
    name = (body.get("metadata") or {}).get("name", "")
    if name != node:
        kind = resource.removesuffix("s")
        raise StoreError(
            403, "Forbidden", f'node "{node}" is not allowed to modify {kind} "{name}"'
        )


def _forbidden_message(user: str, verb: str, kind: ResourceType, namespace: str, name: str) -> str:
    """The API server's wording of a 403."""
    resource = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
    named = f' "{name}"' if name else ""
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return (
        f'{resource}{named} is forbidden: User "{user}" cannot {verb} resource '
        f'"{kind.plural}" in API group "{kind.group}" {scope}'
    )


def _error_event(error: StoreError) -> bytes:
    """A watch stream's ``ERROR`` event carrying ``error`` as a Status."""
    status = status_body(error.code, error.reason, error.message)
    return json.dumps({"type": "ERROR", "object": status}).encode() + b"\n"


def _non_negative(text: str, name: str) -> int:
    if not text:
        return 0
    if not text.isdigit():
        raise StoreError(400, "BadRequest", f"{name}: Invalid value: {text!r}: must be a number")
    return int(text)


def _write_continue(start: tuple[str, str], revision: int) -> str:
    """The continue token: base64 of JSON naming the first page's version and the last key."""
    token = {"v": "meta.k8s.io/v1", "rv": revision, "start": list(start)}
    return base64.urlsafe_b64encode(json.dumps(token).encode()).decode()


def _read_continue(token: str) -> tuple[tuple[str, str], int]:
    """(last key listed, the first page's version) of a continue token; 400 if malformed."""
    try:
        fields = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, name = fields["start"]
        return (str(namespace), str(name)), int(fields["rv"])
    except (ValueError, KeyError, TypeError):
        raise StoreError(
            400, "BadRequest", "continue key is not valid: incorrect encoded start resourceVersion"
        ) from None


def _select(items: list[dict[str, Any]], selector: str) -> list[dict[str, Any]]:
    """Items matching a ``fieldSelector`` of ``metadata.name=X``/``metadata.namespace=Y`` terms."""
    terms = [t.split("=", 1) for t in selector.split(",") if "=" in t]

    def matches(item: dict[str, Any]) -> bool:
        metadata = item.get("metadata", {})
        for field, value in terms:
            field = field.rstrip("=")
            key = field.removeprefix("metadata.")
            if metadata.get(key, "") != value.lstrip("="):
                return False
        return True

    return [item for item in items if matches(item)]


def _parse_path(path: str) -> tuple[ResourceType, str, str, str]:
    """(resource, namespace, name, subresource) of a resource path; 404 for anything else."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise StoreError(404, "NotFound", "the server could not find the requested resource")
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    kind = RESOURCES.get(rest[0]) if rest else None
    if kind is None or kind.group != group or kind.version != version or len(rest) > 3:
        raise StoreError(404, "NotFound", "the server could not find the requested resource")
    if kind.namespaced != bool(namespace) and len(rest) > 1:
        raise StoreError(404, "NotFound", "the server could not find the requested resource")
    name = rest[1] if len(rest) > 1 else ""
    part = rest[2] if len(rest) > 2 else ""
    if part and part not in SUBRESOURCES.get(kind.plural, ()):
        raise StoreError(404, "NotFound", "the server could not find the requested resource")
    return kind, namespace, name, part


def _group_versions() -> dict[str, list[ResourceType]]:
    found: dict[str, list[ResourceType]] = {}
    for kind in RESOURCES.values():
        found.setdefault(kind.api_version, []).append(kind)
    return found


def _groups() -> list[dict[str, Any]]:
    groups = []
    for api_version in _group_versions():
        if "/" in api_version:
            group, version = api_version.split("/")
            entry = {"groupVersion": api_version, "version": version}
            groups.append({"name": group, "versions": [entry], "preferredVersion": entry})
    return groups


def _resource_lists() -> dict[str, dict[str, Any]]:
    lists = {}
    for api_version, kinds in _group_versions().items():
        resources = []
        for kind in kinds:
            resources.append(
                {
                    "name": kind.plural,
                    "singularName": kind.singular,
                    "namespaced": kind.namespaced,
                    "kind": kind.kind,
                    "shortNames": list(kind.short_names),
                    "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                }
            )
            if kind.plural in SUBRESOURCES:
                for sub in SUBRESOURCES[kind.plural]:
                    resources.append(
                        {
                            "name": f"{kind.plural}/{sub}",
                            "singularName": "",
                            "namespaced": False,
                            "kind": kind.kind,
                            "verbs": ["get", "patch", "update"],
                        }
                    )
        prefix = "/api/" if "/" not in api_version else "/apis/"
        lists[prefix + api_version] = {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": api_version,
            "resources": resources,
        }
    return lists


def load_objects(api: TestApiServer, path: Path) -> int:
    """Create every object of the JSON list in ``path`` (as the cluster admin); how many."""
    kinds = {kind.kind: kind.plural for kind in RESOURCES.values()}
    objects = json.loads(path.read_text())
    for obj in objects:
        api.store.put(kinds[obj["kind"]], obj)
    return len(objects)


def main(argv: list[str] | None = None) -> int:
    """``python -m nodehost.testing.apiserver``: serve until SIGTERM/SIGINT."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(prog="python -m nodehost.testing.apiserver")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--listeners", type=int, default=1, help="serve the store on this many ports"
    )
    parser.add_argument("--dir", required=True, help="where the CA and kubeconfigs are written")
    parser.add_argument(
        "--signer",
        metavar="DIR",
        help="sign with the CA in DIR (as 'nodehost ca create' writes one), not a new one",
    )
    parser.add_argument(
        "--approve",
        choices=APPROVER_MODES,
        default="approve",
        help="the approver for kubelet client CSRs",
    )
    parser.add_argument(
        "--approve-serving",
        choices=APPROVER_MODES,
        default="never",
        help="the approver for kubelet serving CSRs",
    )
    parser.add_argument(
        "--lifetime",
        type=int,
        default=DEFAULT_LIFETIME,
        help="seconds a signed certificate lives unless the CSR asks less",
    )
    parser.add_argument(
        "--objects",
        metavar="FILE",
        help="a JSON list of objects (Services, EndpointSlices, ConfigMaps, Nodes) to create",
    )
    parser.add_argument(
        "--request-log",
        metavar="FILE",
        help="on exit, write every request as a JSON line: monotonic time, method, path, user",
    )
    parser.add_argument(
        "--config-map",
        action="append",
        default=[],
        metavar="NS/NAME=FILE",
        help="serve FILE as key node-config.yaml of config map NS/NAME",
    )
    args = parser.parse_args(argv)
    ca = TestCA.from_signer(Path(args.signer)) if args.signer else None
    api = TestApiServer(
        args.dir,
        ca=ca,
        port=args.port,
        host=args.host,
        default_lifetime=args.lifetime,
        listeners=args.listeners,
    )
    api.set_approver(args.approve, "kubernetes.io/kube-apiserver-client-kubelet")
    api.set_approver(args.approve_serving, "kubernetes.io/kubelet-serving")
    for spec in args.config_map:
        target, _, file = spec.partition("=")
        namespace, _, name = target.partition("/")
        api.put_config_map(namespace, name, {"node-config.yaml": Path(file).read_text()})
    if args.objects:
        load_objects(api, Path(args.objects))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    outage = threading.Thread(target=_outages, args=(api, stop), daemon=True)
    signal.signal(signal.SIGUSR1, lambda *_: api._outage.append("down"))
    signal.signal(signal.SIGUSR2, lambda *_: api._outage.append("up"))
    threading.stack_size(512 * 1024)  # a fleet's connections are a thread each
    with api:
        outage.start()
        for url in api.urls:
            print(f"address {url}", flush=True)
        print(f"admin-kubeconfig {api.admin_kubeconfig}", flush=True)
        print(f"bootstrap-kubeconfig {api.bootstrap_kubeconfig}", flush=True)
        stop.wait()
    if args.request_log:
        _write_request_log(api, Path(args.request_log))
    return 0


def _outages(api: TestApiServer, stop: threading.Event) -> None:
    """SIGUSR1 takes the server down (every connection cut), SIGUSR2 brings it back."""
    while not stop.wait(0.02):
        while api._outage:
            if api._outage.pop(0) == "down":
                api.go_down()
                print(f"down {time.monotonic()}", flush=True)
            else:
                api.come_up()
                print(f"up {time.monotonic()}", flush=True)


def _write_request_log(api: TestApiServer, path: Path) -> None:
    with path.open("w") as log:
        for when, (method, target, user) in zip(api.request_times, api.requests, strict=False):
            log.write(json.dumps([when, method, target, user]) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())

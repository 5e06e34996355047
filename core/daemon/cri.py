"""A small CRI client: is the container runtime at an endpoint usable by a kubelet?

The kubelet talks to its runtime over CRI (``runtime.v1.RuntimeService``,
gRPC over a unix socket).  It asks ``Version`` once at start and ``Status``
every few seconds, and runs no pod until the ``RuntimeReady`` condition is
true; it reports its Node ``NotReady`` while ``RuntimeReady`` or
``NetworkReady`` is false (kubelet: ``pkg/kubelet/kubelet.go``,
``updateRuntimeUp``; ``pkg/kubelet/nodestatus/setters.go``, ``ReadyCondition``).
:func:`runtime_status` makes the same two calls and returns a
:class:`CriStatus`; a server that is gRPC but not CRI (a runtime with its CRI
service disabled) raises :class:`NotCri` with one line, ending with the hint
the caller gives for what to change (the runtime's plugin knows its program's
setting).

The calls go through :func:`nodehost.daemon.grpchealth.unary_call` (``h2``,
already a dependency for the health probe; no ``grpcio``, no generated
code): the few message fields used are encoded and read with
:mod:`nodehost.api.protowire`.  :func:`call` is the same unary call for any CRI
method, for callers that encode their own requests (``nodehost.testing.cri``
runs pods with it).  :func:`image_present` (``ImageStatus``) and
:func:`pull_image` (``PullImage``, with an optional :class:`CriAuth`) ask the
runtime's image service what the kubelet asks it: a pull resolved through the
runtime's own registry configuration (mirrors, TLS, credentials by host).

Endpoints are written as the kubelet's ``--container-runtime-endpoint``:
``unix:///run/containerd/containerd.sock`` or a bare absolute path.
"""

from __future__ import annotations

import asyncio
from dataclasses import field

from nodehost.api.protowire import encode_field, encode_message, fields
from nodehost.daemon.grpchealth import GrpcStatusError, HealthCheckError, response_message
from nodehost.frozen import frozen

RUNTIME_SERVICE = "runtime.v1.RuntimeService"
IMAGE_SERVICE = "runtime.v1.ImageService"
#: The CRI API version the kubelet sends in ``VersionRequest``.
CRI_API_VERSION = "v1"
RUNTIME_READY = "RuntimeReady"
NETWORK_READY = "NetworkReady"
#: gRPC's UNIMPLEMENTED: the server does not know the service (or the method).
UNIMPLEMENTED = 12


class NotCri(HealthCheckError):
    """The endpoint answers gRPC but does not serve CRI; the message says what to change."""


@frozen
class CriCondition:
    """One ``RuntimeCondition``: ``type`` (``RuntimeReady``...), whether it holds, and why not."""

    type: str
    status: bool
    reason: str = ""
    message: str = ""

    def describe(self) -> str:
        """``NetworkReady=false (NetworkPluginNotReady: cni config uninitialized)``."""
        why = ": ".join(part for part in (self.reason, self.message) if part)
        return f"{self.type}={str(self.status).lower()}" + (f" ({why})" if why else "")


@frozen
class CriStatus:
    """What ``Version`` and ``Status`` answered."""

    endpoint: str
    runtime_name: str
    runtime_version: str
    api_version: str
    conditions: tuple[CriCondition, ...]

    @property
    def version(self) -> str:
        """``containerd 1.6.20`` (the runtime's name and version)."""
        return f"{self.runtime_name} {self.runtime_version}".strip()

    def condition(self, kind: str) -> CriCondition | None:
        return next((c for c in self.conditions if c.type == kind), None)

    @property
    def runtime_ready(self) -> bool:
        """Whether ``RuntimeReady`` is true (the kubelet runs no pod otherwise)."""
        found = self.condition(RUNTIME_READY)
        return found is not None and found.status

    @property
    def network_ready(self) -> bool:
        """Whether ``NetworkReady`` is true (false until a CNI config is in place)."""
        found = self.condition(NETWORK_READY)
        return found is not None and found.status

    def not_ready(self, kind: str) -> CriCondition:
        """The condition ``kind``, or one saying the runtime did not report it."""
        return self.condition(kind) or CriCondition(kind, False, "NotReported", "not in Status")

    def summary(self) -> str:
        """One line: ``containerd 1.6.20: RuntimeReady=true, NetworkReady=false (...)``."""
        shown = [self.not_ready(RUNTIME_READY), self.not_ready(NETWORK_READY)]
        return f"{self.version or self.endpoint}: " + ", ".join(c.describe() for c in shown)


def socket_path(endpoint: str) -> str:
    """The socket of an endpoint (``unix:///x.sock`` or ``/x.sock``); ``ValueError`` otherwise."""
    path = endpoint.removeprefix("unix://")
    if not path.startswith("/"):
        raise ValueError(f"not a unix socket endpoint: {endpoint!r} (want unix:///path)")
    return path


async def call(
    endpoint: str,
    service: str,
    method: str,
    request: bytes,
    timeout: float,
    *,
    not_cri_hint: str = "",
) -> bytes:
    """One CRI unary call (``service``/``method``) with the encoded ``request``; its response.

    Raises :class:`OSError` (socket), :class:`TimeoutError`, :class:`NotCri`
    (ending with ``not_cri_hint``) when the server does not know ``service``,
    :class:`GrpcStatusError` for another non-OK status, :class:`HealthCheckError`
    for a non-gRPC answer.
    """
    from nodehost.daemon.grpchealth import unary_call

    path = socket_path(endpoint)
    try:
        async with asyncio.timeout(timeout):
            return response_message(await unary_call(path, f"/{service}/{method}", request))
    except GrpcStatusError as error:
        if error.code == UNIMPLEMENTED and "unknown service" in error.grpc_message:
            raise NotCri(not_cri_message(endpoint, service, error, not_cri_hint)) from None
        raise


def not_cri_message(endpoint: str, service: str, error: GrpcStatusError, hint: str = "") -> str:
    """The one line for a gRPC server without CRI; ``hint`` says what to change."""
    answer = f"{error.code_name}{': ' + error.grpc_message if error.grpc_message else ''}"
    line = f"{endpoint} does not serve CRI ({service}: {answer}): a kubelet cannot run pods on it"
    return f"{line}; {hint}" if hint else line


async def runtime_status(
    endpoint: str, timeout: float = 2.0, *, not_cri_hint: str = ""
) -> CriStatus:
    """``Version`` then ``Status`` on ``endpoint`` (each bounded by ``timeout`` seconds).

    Raises as :func:`call` does (:class:`NotCri`, ending with ``not_cri_hint``,
    for a gRPC server without CRI); a malformed answer raises :class:`HealthCheckError`.
    """
    request = encode_message((1, CRI_API_VERSION))
    version = await call(
        endpoint, RUNTIME_SERVICE, "Version", request, timeout, not_cri_hint=not_cri_hint
    )
    status = await call(endpoint, RUNTIME_SERVICE, "Status", b"", timeout)
    try:
        name, runtime_version, api_version = _read_version(version)
        conditions = _read_conditions(status)
    except ValueError as error:
        raise HealthCheckError(f"{endpoint}: malformed CRI answer ({error})") from None
    return CriStatus(endpoint, name, runtime_version, api_version, conditions)


def _read_version(message: bytes) -> tuple[str, str, str]:
    """``VersionResponse``: runtime_name (2), runtime_version (3), runtime_api_version (4)."""
    found = {number: value for number, value in fields(message) if isinstance(value, bytes)}
    return tuple(found.get(n, b"").decode(errors="replace") for n in (2, 3, 4))  # type: ignore[return-value]


def _read_conditions(message: bytes) -> tuple[CriCondition, ...]:
    """``StatusResponse.status`` (1) -> ``RuntimeStatus.conditions`` (1), each a condition."""
    conditions = []
    for number, status in fields(message):
        if number != 1 or not isinstance(status, bytes):
            continue
        for inner, condition in fields(status):
            if inner == 1 and isinstance(condition, bytes):
                conditions.append(_read_condition(condition))
    return tuple(conditions)


def _read_condition(message: bytes) -> CriCondition:
    """``RuntimeCondition``: type (1), status (2), reason (3), message (4)."""
    text: dict[int, str] = {}
    status = False
    for number, value in fields(message):
        if isinstance(value, bytes):
            text[number] = value.decode(errors="replace")
        elif number == 2:
            status = bool(value)
    return CriCondition(text.get(1, ""), status, text.get(3, ""), text.get(4, ""))


@frozen
class CriAuth:
    """CRI's ``AuthConfig`` for one pull; never shown (``repr`` hides the secrets).

    ``server_address`` limits it to one registry host: containerd uses it for
    that host alone (``pkg/cri/server/image_pull.go``, ``ParseAuth``).
    """

    server_address: str = ""
    username: str = field(default="", repr=False)
    password: str = field(default="", repr=False)
    auth: str = field(default="", repr=False)
    identity_token: str = field(default="", repr=False)

    def encode(self) -> bytes:
        """``AuthConfig``: username (1), password (2), auth (3), server_address (4),
        identity_token (5)."""
        return encode_message(
            (1, self.username),
            (2, self.password),
            (3, self.auth),
            (4, self.server_address),
            (5, self.identity_token),
        )


async def image_present(endpoint: str, image: str, timeout: float = 5.0) -> bool:
    """``ImageStatus``: whether the runtime at ``endpoint`` has ``image`` (no pull).

    Raises as :func:`call` does.
    """
    request = encode_field(1, encode_message((1, image)))
    answer = await call(endpoint, IMAGE_SERVICE, "ImageStatus", request, timeout)
    return any(number == 1 and value for number, value in fields(answer))


async def pull_image(
    endpoint: str, image: str, auth: CriAuth | None = None, timeout: float = 60.0
) -> str:
    """``PullImage`` of ``image`` as the kubelet asks it; the image reference stored.

    Without ``auth`` the runtime uses the credentials of its own configuration
    for each host it talks to (mirrors included).  Raises as :func:`call`
    does (a refused pull is a :class:`GrpcStatusError` with the runtime's
    message); :class:`HealthCheckError` when the answer has no reference.
    """
    request = encode_field(1, encode_message((1, image)))
    if auth is not None:
        request += encode_field(2, auth.encode())
    answer = await call(endpoint, IMAGE_SERVICE, "PullImage", request, timeout)
    reference = next((v for n, v in fields(answer) if n == 1 and isinstance(v, bytes)), b"")
    if not reference:
        raise HealthCheckError(f"{endpoint}: PullImage of {image} answered no image reference")
    return reference.decode(errors="replace")

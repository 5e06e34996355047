"""gRPC unary calls over a unix socket with ``h2``, and the health check (``Health/Check``).

gRPC servers such as containerd register the standard health service; one
call proves the server accepts a connection, speaks HTTP/2 and gRPC, and
answers -- which a socket file or an accepted connection alone does not.

The HTTP/2 side is the ``h2`` package (a sans-I/O protocol stack: framing,
HPACK, flow control, SETTINGS and PING acknowledgements); this module adds
the gRPC part: a unary call (:func:`unary_call`, which the CRI client
:mod:`nodehost.daemon.cri` uses too), the length-prefixed message, the
``HealthCheckRequest``/``HealthCheckResponse`` protobuf fields, and the
call's status from ``grpc-status`` in the trailers (or a trailers-only
answer).  A call the server ends with a non-OK status raises
:class:`GrpcStatusError` naming the code as gRPC does (``NOT_FOUND`` for a
service the server does not know).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterable

from nodehost.api.protowire import encode_message, fields

CHECK_PATH = "/grpc.health.v1.Health/Check"
READ_SIZE = 65536

#: ``grpc.health.v1.HealthCheckResponse.ServingStatus`` names.
SERVING_STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}
#: gRPC status codes (grpc/doc/statuscodes.md).
GRPC_CODES = (
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
)  # fmt: skip


class HealthCheckError(ValueError):
    """The server did not give a gRPC answer (a health answer, for the health check); the
    message says what it did instead."""


class GrpcStatusError(HealthCheckError):
    """The call ended with a gRPC status other than OK: ``code`` (``NOT_FOUND``) and message."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        self.code_name = GRPC_CODES[code] if 0 <= code < len(GRPC_CODES) else f"code {code}"
        self.grpc_message = message
        detail = f": {message}" if message else ""
        super().__init__(f"gRPC status {self.code_name}{detail}")


async def check_health(path: str, service: str = "") -> str:
    """Call ``Health/Check`` for ``service`` on the unix socket ``path``; the serving status name.

    Raises :class:`OSError` when the socket does not accept,
    :class:`GrpcStatusError` when the call ends with a non-OK gRPC status and
    :class:`HealthCheckError` when the server answers with something other
    than a health response (reset, GOAWAY, not HTTP/2).  Callers bound it with
    a timeout.
    """
    return serving_status(await unary_call(path, CHECK_PATH, health_request(service)))


async def unary_call(path: str, method: str, request: bytes) -> bytes:
    """One unary gRPC call of ``method`` (``/package.Service/Method``) on the unix socket
    ``path`` with the encoded ``request`` message; the gRPC-framed response.

    Raises as :func:`check_health` does; callers bound it with a timeout.
    """
    reader, writer = await asyncio.open_unix_connection(path)
    try:
        call = UnaryCall(method, request)
        writer.write(call.start())
        await writer.drain()
        while not call.done:
            data = await reader.read(READ_SIZE)
            writer.write(call.receive(data))
        return call.result()
    finally:
        writer.close()


class UnaryCall:
    """One unary call on its own HTTP/2 connection (no I/O of its own)."""

    def __init__(self, method: str, request: bytes) -> None:
        from h2.config import H2Configuration
        from h2.connection import H2Connection

        self.method = method
        self.request = request
        self.connection = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        self.stream = 0
        self.body = bytearray()
        self.status: dict[str, str] = {}
        self.done = False

    def start(self) -> bytes:
        """The bytes that open the connection and send the whole request."""
        self.connection.initiate_connection()
        self.stream = self.connection.get_next_available_stream_id()
        self.connection.send_headers(self.stream, request_headers(self.method))
        self.connection.send_data(self.stream, grpc_message(self.request), end_stream=True)
        return self.connection.data_to_send()

    def receive(self, data: bytes) -> bytes:
        """Feed what the server sent; return what to send back (acknowledgements)."""
        from h2.exceptions import ProtocolError

        if not data:
            raise HealthCheckError("the server closed the connection without an answer")
        try:
            events = self.connection.receive_data(data)
        except ProtocolError as error:
            raise HealthCheckError(f"the server does not speak HTTP/2 ({error})") from None
        for event in events:
            self._handle(event)
        return self.connection.data_to_send()

    def _handle(self, event: object) -> None:
        from h2 import events

        if isinstance(event, events.ConnectionTerminated):
            raise HealthCheckError("the server refused the call (HTTP/2 GOAWAY)")
        if getattr(event, "stream_id", self.stream) != self.stream:
            return
        if isinstance(event, events.StreamReset):
            raise HealthCheckError("the server reset the call (HTTP/2 RST_STREAM)")
        if isinstance(event, events.ResponseReceived | events.TrailersReceived):
            self.status.update(_grpc_fields(event.headers))
        elif isinstance(event, events.DataReceived):
            self.body += event.data
            self.connection.acknowledge_received_data(event.flow_controlled_length, self.stream)
        elif isinstance(event, events.StreamEnded):
            self.done = True

    def result(self) -> bytes:
        """The response message once the call ended; raise if its status is not OK."""
        if self.status.get(":status", "200") != "200":
            raise HealthCheckError(f"the server answered HTTP status {self.status[':status']}")
        if "grpc-status" not in self.status:
            raise HealthCheckError("the server ended the call without a gRPC status")
        code = int(self.status["grpc-status"]) if self.status["grpc-status"].isdigit() else 2
        if code != 0:
            raise GrpcStatusError(code, _percent_decoded(self.status.get("grpc-message", "")))
        return bytes(self.body)


def _grpc_fields(headers: Iterable[tuple[str | bytes, str | bytes]]) -> dict[str, str]:
    """The status headers; the connection decodes names and values as UTF-8 (str)."""
    wanted = (":status", "grpc-status", "grpc-message")
    return {str(name): str(value) for name, value in headers if name in wanted}


def _percent_decoded(text: str) -> str:
    from urllib.parse import unquote

    return unquote(text)


def request_headers(method: str = CHECK_PATH) -> list[tuple[str, str]]:
    """The headers of a call of ``method``, as gRPC over HTTP/2 requires them."""
    return [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", method),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]


def health_request(service: str) -> bytes:
    """``HealthCheckRequest{service}`` in protobuf (field 1, length-delimited)."""
    return encode_message((1, service))


def grpc_message(payload: bytes) -> bytes:
    """gRPC length-prefixed message: not compressed, 32-bit length."""
    return b"\x00" + struct.pack(">I", len(payload)) + payload


def response_message(body: bytes) -> bytes:
    """The message of a gRPC-framed response; :class:`HealthCheckError` if it is not one."""
    if len(body) < 5 or body[0] != 0:
        raise HealthCheckError("the answer is not an uncompressed gRPC message")
    length = int.from_bytes(body[1:5], "big")
    if len(body) < 5 + length:
        raise HealthCheckError("the answer is cut short")
    return body[5 : 5 + length]


def serving_status(body: bytes) -> str:
    """The status name in a gRPC-framed ``HealthCheckResponse`` (field 1, varint)."""
    message = response_message(body)
    status = 0
    try:
        for number, value in fields(message):
            if number == 1 and isinstance(value, int):
                status = value
    except ValueError as error:
        raise HealthCheckError(f"the answer is not a HealthCheckResponse ({error})") from None
    return SERVING_STATUS.get(status, f"status {status}")

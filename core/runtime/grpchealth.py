"""One gRPC health check (``grpc.health.v1.Health/Check``) over a unix socket, stdlib only.

gRPC servers such as containerd register the standard health service; one
call proves the server accepts a connection, speaks HTTP/2 and gRPC, and
answers -- which a socket file or an accepted connection alone does not.

The client is the least HTTP/2 that one unary call needs: the connection
preface, an empty SETTINGS frame, one HEADERS frame (HPACK literals, no
Huffman coding, no dynamic table) and one DATA frame; it acknowledges the
server's SETTINGS and PINGs and reads frames until stream 1 ends.  The
response's headers are not decoded (that would need the HPACK Huffman
table): a DATA frame holding a ``HealthCheckResponse`` is the answer, a
stream that ends without one is a gRPC error.
"""

from __future__ import annotations

import asyncio
import struct

from nodehost.protowire import encode_varint, fields

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
CHECK_PATH = "/grpc.health.v1.Health/Check"

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
STREAM = 1

#: ``grpc.health.v1.HealthCheckResponse.ServingStatus`` names.
SERVING_STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


class HealthCheckError(ValueError):
    """The server did not give a health answer; the message says what it did instead."""


async def check_health(path: str, service: str = "") -> str:
    """Call ``Health/Check`` for ``service`` on the unix socket ``path``; the serving status name.

    Raises :class:`OSError` when the socket does not accept,
    :class:`HealthCheckError` when the server answers with something other
    than a health response (reset, GOAWAY, a gRPC error, not HTTP/2).
    Callers bound it with a timeout.
    """
    reader, writer = await asyncio.open_unix_connection(path)
    try:
        writer.write(PREFACE + frame(SETTINGS, 0, 0, b""))
        writer.write(frame(HEADERS, END_HEADERS, STREAM, request_headers()))
        writer.write(frame(DATA, END_STREAM, STREAM, grpc_message(health_request(service))))
        await writer.drain()
        return serving_status(await read_response(reader, writer))
    finally:
        writer.close()


def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    """One HTTP/2 frame: 24-bit length, type, flags, stream id, payload."""
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes((kind, flags))
        + struct.pack(">I", stream)
        + payload
    )


def request_headers() -> bytes:
    """The HPACK block of the call: every header a literal without indexing."""
    headers = (
        (":method", "POST"),
        (":scheme", "http"),
        (":path", CHECK_PATH),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    )
    block = bytearray()
    for name, value in headers:
        block.append(0x00)
        block += hpack_string(name) + hpack_string(value)
    return bytes(block)


def hpack_string(text: str) -> bytes:
    """An HPACK string literal, not Huffman coded (7-bit prefix length)."""
    data = text.encode()
    return hpack_integer(len(data), 7) + data


def hpack_integer(value: int, prefix_bits: int) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((value,))
    out = bytearray((limit,))
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def health_request(service: str) -> bytes:
    """``HealthCheckRequest{service}`` in protobuf (field 1, length-delimited)."""
    if not service:
        return b""
    data = service.encode()
    return b"\x0a" + encode_varint(len(data)) + data


def grpc_message(payload: bytes) -> bytes:
    """gRPC length-prefixed message: not compressed, 32-bit length."""
    return b"\x00" + struct.pack(">I", len(payload)) + payload


async def read_response(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """The DATA bytes of stream 1 once it ends; raise :class:`HealthCheckError` on errors."""
    body = bytearray()
    while True:
        try:
            header = await reader.readexactly(9)
            length = int.from_bytes(header[:3], "big")
            payload = await reader.readexactly(length)
        except asyncio.IncompleteReadError:
            raise HealthCheckError("the server closed the connection without an answer") from None
        kind, flags = header[3], header[4]
        stream = int.from_bytes(header[5:9], "big") & 0x7FFFFFFF
        if kind == SETTINGS and not flags & ACK:
            writer.write(frame(SETTINGS, ACK, 0, b""))
        elif kind == PING and not flags & ACK:
            writer.write(frame(PING, ACK, 0, payload))
        elif kind == GOAWAY:
            raise HealthCheckError("the server refused the call (HTTP/2 GOAWAY)")
        elif kind == RST_STREAM and stream == STREAM:
            raise HealthCheckError("the server reset the call (HTTP/2 RST_STREAM)")
        elif kind == DATA and stream == STREAM:
            body += _unpadded(payload, flags)
        if stream == STREAM and kind in (DATA, HEADERS) and flags & END_STREAM:
            if not body:
                raise HealthCheckError(
                    "the server answered with a gRPC error, not a health status "
                    "(is the grpc.health.v1 service registered?)"
                )
            return bytes(body)


def _unpadded(payload: bytes, flags: int) -> bytes:
    padded = 0x8
    if flags & padded and payload:
        return payload[1 : len(payload) - payload[0]]
    return payload


def serving_status(body: bytes) -> str:
    """The status name in a gRPC-framed ``HealthCheckResponse`` (field 1, varint)."""
    if len(body) < 5 or body[0] != 0:
        raise HealthCheckError("the answer is not an uncompressed gRPC message")
    message = body[5 : 5 + int.from_bytes(body[1:5], "big")]
    status = 0
    try:
        for number, value in fields(message):
            if number == 1 and isinstance(value, int):
                status = value
    except ValueError as error:
        raise HealthCheckError(f"the answer is not a HealthCheckResponse ({error})") from None
    return SERVING_STATUS.get(status, f"status {status}")

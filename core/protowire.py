"""Protocol buffers' wire format, just enough to write and read small messages by hand.

Two callers need it and neither wants a protobuf dependency: the gRPC health
probe (:mod:`nodehost.runtime.grpchealth`) and the test API server's reading
of kubectl's protobuf bodies (:mod:`nodehost.testing.kubeproto`).  Malformed
input raises ``ValueError``; callers word it for their users.
"""

from __future__ import annotations

from collections.abc import Iterator

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5


def encode_varint(value: int) -> bytes:
    """``value`` (non-negative) as a base-128 varint."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(data: bytes, offset: int) -> tuple[int, int]:
    """The varint at ``offset`` and the offset after it; ``ValueError`` if it is cut short."""
    value = shift = 0
    while True:
        if offset >= len(data):
            raise ValueError("truncated varint")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """``(field number, value)`` for each field: ints for varints, bytes for length-delimited.

    Fixed-width fields are skipped; a group or an unknown wire type, or a
    length past the end, raises ``ValueError``.
    """
    offset = 0
    while offset < len(data):
        key, offset = read_varint(data, offset)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            value, offset = read_varint(data, offset)
            yield number, value
        elif wire == LENGTH_DELIMITED:
            length, offset = read_varint(data, offset)
            if offset + length > len(data):
                raise ValueError("truncated field")
            yield number, data[offset : offset + length]
            offset += length
        elif wire in (FIXED64, FIXED32):
            offset += 8 if wire == FIXED64 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")

"""Protocol buffers' wire format, just enough to write and read small messages by hand.

Three callers need it and none wants a protobuf dependency: the gRPC health
probe (:mod:`nodehost.daemon.grpchealth`), the CRI client
(:mod:`nodehost.daemon.cri`) and the test API server's reading of kubectl's
protobuf bodies (:mod:`nodehost.testing.kubeproto`).  Malformed
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


def encode_field(number: int, value: int | bool | str | bytes) -> bytes:
    """One field: ints and bools as varints, text and bytes (nested messages) length-delimited.

    Zero, False and empty values are written too; callers leave out what
    proto3 would not send.
    """
    if isinstance(value, bool | int):
        return encode_varint(number << 3 | VARINT) + encode_varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return encode_varint(number << 3 | LENGTH_DELIMITED) + encode_varint(len(data)) + data


def encode_message(*pairs: tuple[int, int | bool | str | bytes | None]) -> bytes:
    """A message of ``(field number, value)`` pairs; proto3 defaults (None, 0, "", b"") left out."""
    return b"".join(
        encode_field(number, value) for number, value in pairs if value not in (None, 0, "", b"")
    )


def encode_map(number: int, entries: dict[str, str]) -> bytes:
    """A ``map<string, string>`` field: one entry message (key 1, value 2) per item."""
    return b"".join(
        encode_field(number, encode_message((1, key), (2, value))) for key, value in entries.items()
    )

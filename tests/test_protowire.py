"""Protobuf's wire format: varints both ways, fields read, malformed input refused."""

from __future__ import annotations

import pytest

from nodehost.api.protowire import encode_varint, fields, read_varint


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**35])
def test_a_varint_reads_back_as_written(value: int) -> None:
    data = encode_varint(value)
    assert read_varint(data + b"\xff", 0) == (value, len(data))


def test_fields_yield_varints_and_bytes_and_skip_fixed_width_ones() -> None:
    message = b"\x08\x96\x01" + b"\x11" + bytes(8) + b"\x12\x02hi"
    assert list(fields(message)) == [(1, 150), (2, b"hi")]


@pytest.mark.parametrize("message", [b"\x08", b"\x12\x05hi", b"\x0b"])
def test_cut_short_or_unsupported_input_is_a_value_error(message: bytes) -> None:
    with pytest.raises(ValueError):
        list(fields(message))


def test_a_message_reads_back_as_written_with_proto3_defaults_left_out() -> None:
    from nodehost.api.protowire import encode_message

    message = encode_message((1, "v1"), (2, 0), (3, ""), (4, True), (5, b"\x08\x01"), (6, None))
    assert message == b"\x0a\x02v1" + b"\x20\x01" + b"\x2a\x02\x08\x01"
    assert list(fields(message)) == [(1, b"v1"), (4, 1), (5, b"\x08\x01")]


def test_a_map_is_one_key_value_entry_per_item() -> None:
    from nodehost.api.protowire import encode_map

    entries = [dict(fields(entry)) for _, entry in fields(encode_map(6, {"a": "1", "b": ""}))]
    assert entries == [{1: b"a", 2: b"1"}, {1: b"b"}]

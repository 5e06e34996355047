"""The bounded JSON loader: size, depth and strings as Go decodes them, never a RecursionError."""

from __future__ import annotations

import asyncio
import threading

import pytest

from nodehost.config.jsonsafe import INLINE_BYTES, MAX_DEPTH, DocumentError, off_loop, parse_json


def test_a_document_over_the_limit_is_refused_before_parsing() -> None:
    with pytest.raises(DocumentError, match="larger than the 1 MiB limit"):
        parse_json(b"[" + b" " * (1 << 20) + b"]", 1 << 20)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_nesting_past_the_limit_is_one_error_not_a_recursion_error(depth: int) -> None:
    with pytest.raises(DocumentError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_json("[" * depth + "]" * depth, 1 << 20)


def test_nesting_up_to_the_limit_is_fine() -> None:
    assert parse_json('{"a":' * (MAX_DEPTH - 1) + "[]" + "}" * (MAX_DEPTH - 1), 1 << 20)


def test_lone_surrogates_become_the_replacement_character_as_in_go() -> None:
    document = parse_json(
        b'{"k\\ud800": ["x\\udc00", {"y": "\\ud83d"}], "ok": "\\ud83d\\ude00"}', 100
    )
    assert document == {"k\ufffd": ["x\ufffd", {"y": "\ufffd"}], "ok": "\U0001f600"}
    assert parse_json(b'"\\ud800"', 100) == "\ufffd"


def test_garbage_is_one_error() -> None:
    with pytest.raises(DocumentError, match="not JSON"):
        parse_json(b"\xff{", 100)


def test_a_large_document_is_parsed_off_the_event_loop() -> None:
    seen: list[bool] = []

    def parse(data: bytes) -> int:
        seen.append(threading.current_thread() is threading.main_thread())
        return len(data)

    async def both() -> None:
        await off_loop(parse, b"x" * INLINE_BYTES)
        await off_loop(parse, b"x" * (INLINE_BYTES + 1))

    asyncio.run(both())
    assert seen == [True, False]

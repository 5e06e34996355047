"""Parsing JSON nodehost did not write (API objects, the ``/status`` document), and parsing
anything large without blocking the event loop.

:func:`parse_json` is the one JSON loader for bytes from outside, under the
limits of the YAML loader (:mod:`nodehost.config.yamlsafe`):

* at most ``limit`` bytes (the caller's: an API answer, a watch event, a
  status document), checked before parsing;
* nested at most :data:`MAX_DEPTH` levels, checked without recursion once
  parsed (JSON has no aliases: what is built is as large as the text); a
  document so deep that the parser itself recurses too far is refused the
  same way;
* strings as Go's decoder makes them: a lone surrogate escape (``"\\ud800"``)
  becomes U+FFFD, so every string encodes as UTF-8.

It raises :class:`DocumentError` (a ``ValueError``) with a one-line reason.

:func:`off_loop` runs a parse (JSON or YAML) from the event loop: inline when
the document is small (:data:`INLINE_BYTES`), otherwise in a worker thread, at
most :data:`PARSERS` at once, so ``/healthz`` and DNS keep answering while a
large or hostile document is parsed.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from nodehost.fileread import describe_limit

#: Nested collections a parsed document may have (YAML and JSON alike).
MAX_DEPTH = 64
#: Documents up to this size are parsed on the event loop (well under a millisecond).
INLINE_BYTES = 64 * 1024
#: Large parses running at once (each holds its document's memory).
PARSERS = 2

#: A lone surrogate; compiled on first use (``re``'s cache), for text that is not all ASCII.
_SURROGATE = "[\ud800-\udfff]"
_parsers = threading.BoundedSemaphore(PARSERS)
_T = TypeVar("_T")


class DocumentError(ValueError):
    """The bytes are not one JSON document within the limits; ``str()`` is the reason."""


def parse_json(data: bytes | str, limit: int) -> Any:
    """The JSON value in ``data``, within the limits of the module docstring."""
    if len(data) > limit:
        raise DocumentError(f"the document is larger than the {describe_limit(limit)} limit")
    try:
        value = json.loads(data)
    except RecursionError:
        raise DocumentError(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:
        raise DocumentError(f"not JSON: {error}") from None
    return _checked(value)


def _checked(root: Any) -> Any:
    """``root`` with lone surrogates replaced; :class:`DocumentError` past :data:`MAX_DEPTH`."""
    pending: list[tuple[Any, int]] = [(root, 0)]
    while pending:
        value, depth = pending.pop()
        if depth >= MAX_DEPTH:
            raise DocumentError(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            if any(lone_surrogate(key) is not None for key in value):
                replaced = {_go_string(key): item for key, item in value.items()}
                value.clear()
                value.update(replaced)
            for key, item in value.items():
                value[key] = _child(item, depth, pending)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                value[index] = _child(item, depth, pending)
    return _go_string(root) if isinstance(root, str) else root


def _child(item: Any, depth: int, pending: list[tuple[Any, int]]) -> Any:
    if isinstance(item, str):
        return _go_string(item)
    if isinstance(item, dict | list):
        pending.append((item, depth + 1))
    return item


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in ``text``, or ``None``: ASCII text has none, and is
    not searched."""
    if text.isascii():
        return None
    found = re.search(_SURROGATE, text)
    return None if found is None else found.group()


def _go_string(text: str) -> str:
    return text if lone_surrogate(text) is None else re.sub(_SURROGATE, "\ufffd", text)


async def off_loop(parse: Callable[..., _T], data: bytes | str, *args: Any) -> _T:
    """``parse(data, *args)``, in a worker thread unless ``data`` is small (module docstring).

    Whatever ``parse`` raises propagates.
    """
    import asyncio  # here: a CLI path that only loads files must not import it

    if len(data) <= INLINE_BYTES:
        return parse(data, *args)

    def bounded() -> _T:
        with _parsers:
            return parse(data, *args)

    return await asyncio.to_thread(bounded)

"""The YAML of a node folder's files without importing PyYAML, byte for byte as PyYAML writes it.

``import yaml`` costs about as much as the rest of ``nodehost config create``'s
own work (its pure-Python reader, scanner and resolver load with it), and the
files of a node folder -- ``node-config.yaml``, ``node.kubeconfig`` -- are
block mappings of plain data.  :func:`dump_block_yaml` writes exactly what
:func:`nodehost.config.dump.dump_yaml` writes for such a document when it can
be sure of that, and otherwise hands the document to it: the output is the
same either way; only the cost differs.

Written here: non-empty mappings with string keys (nested mappings,
sequences of scalars or mappings, ``{}`` and ``[]``), strings of printable
ASCII (plain when PyYAML writes them plain -- not a YAML 1.1 boolean, number,
null or timestamp, no indicator, see :func:`_plain` -- else single-quoted),
booleans, integers, finite floats and ``None``.  Anything else (another
type, a non-ASCII or control character, a very long key or value, an object
that appears twice and would become an alias) is PyYAML's to write.
tests/pki/test_yamlout.py holds both writers to the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: PyYAML's implicit resolvers (``yaml.resolver``) a plain string could hit, by first
#: character: a string that matches one is written quoted.
_RESOLVERS = tuple(
    (starts, re.compile(pattern))
    for starts, pattern in (
        (
            "yYnNtTfFoO",
            r"yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
        ),
        (
            "0123456789",
            r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?"
            r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
        ),
        (
            "0123456789",
            r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
            r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
        ),
        ("nN", r"null|Null|NULL"),
        ("0123456789", r"[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"),
    )
)
#: Plain candidates: no YAML indicator first, no space, ``#``, quote or flow start inside.
_PLAIN_CANDIDATE = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./:${}@+=,-]*")
#: Timestamps with a time part are checked by shape: a digit-led string with these is quoted.
_TIME_CHARS = re.compile(r"[0-9]{4}-[0-9]")
_PRINTABLE = re.compile(r"[ -~]*")
_INDICATORS = "#,[]{}&*!|>'\"%@`"
_MAX_KEY = 100  # PyYAML writes keys of 128 characters and more as complex keys ("? ")
_MAX_SCALAR = 4096  # far below the line width dump_yaml sets, so nothing is folded


class _Unsure(Exception):
    """The document holds something only PyYAML should write."""


def dump_block_yaml(document: Mapping[str, Any], *, sort_keys: bool = False) -> str:
    """``nodehost.config.dump.dump_yaml(document, sort_keys=...)``, without PyYAML when sure."""
    try:
        if not isinstance(document, dict) or not document:
            raise _Unsure
        lines: list[str] = []
        _mapping(document, 0, lines, sort_keys, set())
    except _Unsure:
        from nodehost.config.dump import dump_yaml

        return dump_yaml(document, sort_keys=sort_keys)
    return "\n".join(lines) + "\n"


def _mapping(
    value: dict[Any, Any], indent: int, lines: list[str], sort: bool, seen: set[int]
) -> None:
    _once(value, seen)
    pad = " " * indent
    if sort and any(type(key) is not str for key in value):
        raise _Unsure
    items = sorted(value.items(), key=lambda item: item[0]) if sort else value.items()
    for key, item in items:
        head = f"{pad}{_key(key)}:"
        if type(item) is dict and item:
            lines.append(head)
            _mapping(item, indent + 2, lines, sort, seen)
        elif type(item) is list and item:
            lines.append(head)
            _sequence(item, indent, lines, sort, seen)
        else:
            lines.append(f"{head} {_flow(item, seen)}")


def _sequence(value: list[Any], indent: int, lines: list[str], sort: bool, seen: set[int]) -> None:
    """A block sequence at ``indent`` (PyYAML does not indent one inside a mapping)."""
    _once(value, seen)
    pad = " " * indent
    for item in value:
        if type(item) is dict and item:
            start = len(lines)
            _mapping(item, indent + 2, lines, sort, seen)
            lines[start] = f"{pad}- {lines[start][indent + 2 :]}"
        elif type(item) is list:
            raise _Unsure
        else:
            lines.append(f"{pad}- {_flow(item, seen)}")


def _flow(value: Any, seen: set[int]) -> str:
    """A scalar, or an empty mapping or sequence, on the line of its key or dash."""
    if type(value) is dict or type(value) is list:
        _once(value, seen)
        return "{}" if type(value) is dict else "[]"
    return _scalar(value)


def _once(value: Any, seen: set[int]) -> None:
    """PyYAML writes an object met twice as an anchor and an alias: leave that to it."""
    if id(value) in seen:
        raise _Unsure
    seen.add(id(value))


def _key(key: Any) -> str:
    if type(key) is not str or not key or len(key) > _MAX_KEY:
        raise _Unsure
    return _scalar(key)


def _scalar(value: Any) -> str:
    """A scalar as PyYAML writes it (exact types only: PyYAML's safe writer refuses or
    treats subclasses its own way)."""
    kind = type(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is float:
        text = repr(value)
        if "." not in text or "e" in text or "n" in text:  # exponent, inf, nan: PyYAML's
            raise _Unsure
        return text
    if kind is not str or len(value) > _MAX_SCALAR or not _PRINTABLE.fullmatch(value):
        raise _Unsure
    if _PLAIN_CANDIDATE.fullmatch(value) and not value.endswith(":"):
        return _quoted(value) if _resolves(value) else value
    if _never_plain(value):
        return _quoted(value)
    raise _Unsure


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _resolves(text: str) -> bool:
    """Whether PyYAML reads the plain ``text`` as something other than a string."""
    first = text[0]
    if first.isdigit() and _TIME_CHARS.match(text):
        raise _Unsure  # a date, or a timestamp's shape: PyYAML's resolver decides
    return any(first in starts and pattern.fullmatch(text) for starts, pattern in _RESOLVERS)


def _never_plain(text: str) -> bool:
    """Printable ASCII PyYAML never writes plain: empty, an indicator first, a space at
    either end, ``: `` or `` #`` inside, or ``:`` last."""
    return (
        not text
        or text[0] in _INDICATORS
        or text[0] == " "
        or text[-1] == " "
        or ": " in text
        or " #" in text
        or text.endswith(":")
    )

"""Reading a YAML file that may be hostile: size, encoding, depth, alias bombs, duplicates.

:func:`read_yaml_file` returns the parsed document as plain Python data (no
shared or recursive structures: aliases are expanded into copies, as Go's
YAML-to-JSON step does) together with the 1-based (line, column) of every
value and key, addressed by field path (``servingInfo.namedCertificates[0].names[1]``).

Every failure raises :class:`YAMLFileError` carrying a one-line reason that
names the line and column where known; nothing else escapes, whatever the
file holds.  Limits: :data:`MAX_FILE_BYTES`, :data:`MAX_DEPTH` nested
collections, :data:`MAX_NODES` nodes after alias expansion.
"""

from __future__ import annotations

import codecs
import errno
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from yaml import nodes

from nodehost.config.schema import index_path, join_path
from nodehost.fileread import CONFIG_LIMIT, MiB, UnusableFile, read_file

MAX_FILE_BYTES = CONFIG_LIMIT
MAX_DEPTH = 64
MAX_NODES = 100_000

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"
# Characters YAML 1.1 allows in a stream (c-printable); anything else is refused up front.
_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)

Position = tuple[int, int]


class YAMLFileError(Exception):
    """The file cannot be read as one YAML mapping; ``str()`` is the reason."""


@dataclass(frozen=True)
class ParsedYAML:
    """A parsed YAML document and where each of its values and keys was written."""

    data: Any
    positions: dict[str, Position]
    key_positions: dict[str, Position]


def _os_reason(error: OSError) -> str:
    return (error.strerror or str(error)).lower()


def read_limited(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """Read a regular file of at most ``limit`` bytes; raise :class:`YAMLFileError` otherwise.

    Through :func:`nodehost.fileread.read_file`: a FIFO, device or socket is
    refused without blocking; directories, missing and unreadable files give
    Go-like reasons (``open x: permission denied``, ``read x: is a directory``).
    """
    try:
        return read_file(path, limit)
    except UnusableFile as error:
        if error.errno == errno.EFBIG:
            raise YAMLFileError(
                f"the file is larger than the limit of {limit // MiB} MiB ({limit} bytes)"
            ) from None
        verb = "read" if error.errno == errno.EISDIR else "open"
        raise YAMLFileError(f"{verb} {path}: {_os_reason(error)}") from None
    except OSError as error:
        raise YAMLFileError(f"open {path}: {_os_reason(error)}") from None


def _line_column(text: str, index: int) -> Position:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def decode(data: bytes) -> str:
    """UTF-8 (or UTF-16 with a byte-order mark) to text; refuse invalid or control characters."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding, body = "utf-16", data
    else:
        encoding, body = "utf-8", data.removeprefix(codecs.BOM_UTF8)
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as error:
        prefix = body[: error.start].decode(encoding, "replace")
        line, column = _line_column(prefix, len(prefix))
        raise YAMLFileError(
            f"yaml: line {line}, column {column}: invalid {encoding.upper()} "
            f"(byte offset {error.start})"
        ) from None
    bad = _NON_PRINTABLE.search(text)
    if bad is not None:
        line, column = _line_column(text, bad.start())
        raise YAMLFileError(
            f"yaml: line {line}, column {column}: control characters are not allowed "
            f"(found #x{ord(bad.group()):04x})"
        )
    return text.removeprefix("\ufeff")


def _mark_reason(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    parts = (getattr(error, "context", None), getattr(error, "problem", None))
    reason = ", ".join(part for part in parts if part) or str(error)
    if mark is None:
        return f"yaml: {reason}"
    return f"yaml: line {mark.line + 1}, column {mark.column + 1}: {reason}"


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _check_events(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before anything recursive runs."""
    loader = _Loader(text)
    try:
        depth, count = 0, 0
        while loader.check_event():
            event = loader.get_event()
            count += 1
            if count > 4 * MAX_NODES:
                raise YAMLFileError(f"yaml: {_at(event.start_mark)}: more than {MAX_NODES} nodes")
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise YAMLFileError(
                        f"yaml: {_at(event.start_mark)}: nested deeper than {MAX_DEPTH} levels"
                    )
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    finally:
        loader.dispose()


def _children(node: nodes.Node) -> Iterator[nodes.Node]:
    if isinstance(node, nodes.SequenceNode):
        yield from node.value
    elif isinstance(node, nodes.MappingNode):
        for key, value in node.value:
            yield key
            yield value


class _Measure:
    """Node count after alias expansion, expanded depth, and recursive aliases.

    Shared nodes (anchors) are measured once: their size and height are
    remembered, and a reuse is checked against the depth where it appears.
    """

    def __init__(self) -> None:
        self.measured: dict[int, tuple[int, int]] = {}
        self.visiting: set[int] = set()

    def _too_deep(self, node: nodes.Node) -> YAMLFileError:
        return YAMLFileError(
            f"yaml: {_at(node.start_mark)}: nested deeper than {MAX_DEPTH} levels (through aliases)"
        )

    def measure(self, node: nodes.Node, level: int = 0) -> tuple[int, int]:
        """``(size, height)`` of ``node`` found at nesting ``level``; raise past the limits."""
        if isinstance(node, nodes.ScalarNode):
            return 1, 0
        key = id(node)
        if key in self.measured:
            size, height = self.measured[key]
            if level + height >= MAX_DEPTH:
                raise self._too_deep(node)
            return size, height
        if key in self.visiting:
            raise YAMLFileError(f"yaml: {_at(node.start_mark)}: recursive alias")
        if level >= MAX_DEPTH:
            raise self._too_deep(node)
        self.visiting.add(key)
        size, height = 1, 0
        for child in _children(node):
            child_size, child_height = self.measure(child, level + 1)
            size += child_size
            height = max(height, child_height + 1)
            if size > MAX_NODES:
                raise YAMLFileError(
                    f"yaml: {_at(node.start_mark)}: more than {MAX_NODES} nodes after alias "
                    "expansion (an alias bomb?)"
                )
        self.visiting.discard(key)
        self.measured[key] = (size, height)
        return size, height


def _key_identity(node: nodes.Node) -> tuple[str, str] | None:
    return (node.tag, node.value) if isinstance(node, nodes.ScalarNode) else None


def _check_duplicates(node: nodes.MappingNode) -> None:
    seen: dict[tuple[str, str], nodes.Node] = {}
    for key_node, _ in node.value:
        identity = _key_identity(key_node)
        if identity is None or key_node.tag == _MERGE_TAG:
            continue
        first = seen.setdefault(identity, key_node)
        if first is not key_node:
            raise YAMLFileError(
                f"yaml: {_at(key_node.start_mark)}: mapping key {key_node.value!r} already "
                f"defined at line {first.start_mark.line + 1}"
            )


def _effective_pairs(node: nodes.MappingNode) -> Iterator[tuple[nodes.Node, nodes.Node]]:
    """Explicit pairs first, then pairs brought in by ``<<`` merge keys (which they override)."""
    merges = []
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE_TAG:
            merges.append(value_node)
        else:
            yield key_node, value_node
    for merge in merges:
        sources = merge.value if isinstance(merge, nodes.SequenceNode) else [merge]
        for source in sources:
            if isinstance(source, nodes.MappingNode):
                yield from _effective_pairs(source)


class _Locator:
    """Records positions by field path and checks each mapping for duplicate keys once."""

    def __init__(self) -> None:
        self.positions: dict[str, Position] = {}
        self.key_positions: dict[str, Position] = {}
        self.checked: set[int] = set()

    def walk(self, node: nodes.Node, path: str) -> None:
        self.positions.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, nodes.SequenceNode):
            for index, item in enumerate(node.value):
                self.walk(item, index_path(path, index))
        elif isinstance(node, nodes.MappingNode):
            if id(node) not in self.checked:
                self.checked.add(id(node))
                _check_duplicates(node)
            for key_node, value_node in _effective_pairs(node):
                if not isinstance(key_node, nodes.ScalarNode):
                    continue
                child = join_path(path, key_node.value)
                mark = key_node.start_mark
                self.key_positions.setdefault(child, (mark.line + 1, mark.column + 1))
                self.walk(value_node, child)


def _unshare(value: Any) -> Any:
    """A copy without shared or recursive parts (aliases expanded), bounded by the checks above."""
    if isinstance(value, dict):
        return {key: _unshare(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unshare(item) for item in value]
    return value


def _compose(text: str) -> ParsedYAML | None:
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _Measure().measure(root)
        locator = _Locator()
        locator.walk(root, "")
        data = loader.construct_document(root)
    finally:
        loader.dispose()
    return ParsedYAML(_unshare(data), locator.positions, locator.key_positions)


def parse_yaml(text: str) -> ParsedYAML:
    """Parse one YAML document from ``text`` within the limits; see the module docstring."""
    try:
        _check_events(text)
        parsed = _compose(text)
    except YAMLFileError:
        raise
    except yaml.YAMLError as error:
        raise YAMLFileError(_mark_reason(error)) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as error:
        raise YAMLFileError(f"yaml: cannot construct a value: {error}") from None
    if parsed is None:
        raise YAMLFileError("the file is empty")
    return parsed


def read_yaml_file(path: str) -> ParsedYAML:
    """Read and parse ``path``; raise :class:`YAMLFileError` with a one-line reason."""
    return parse_yaml(decode(read_limited(path)))

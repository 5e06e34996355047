"""Reading a YAML document that may be hostile: size, encoding, depth, alias bombs, duplicates.

The one YAML loader of nodehost: the node config (from its file, a config map
or a SIGHUP reload), kubeconfigs, component configs and the DNS records file
are all parsed here (JSON documents: :mod:`nodehost.config.jsonsafe`, same depth).
:func:`read_yaml_file` (or :func:`parse_yaml_bytes` for bytes from elsewhere)
returns the parsed document as plain Python data (no shared or recursive
structures: aliases are expanded into copies, as Go's YAML-to-JSON step does)
together with the 1-based (line, column) of every value and key, addressed by
field path (``servingInfo.namedCertificates[0].names[1]``).

Every failure raises :class:`YAMLFileError` carrying a one-line reason that
names the line and column where known; nothing else escapes, whatever the
file holds.  Limits: :data:`MAX_FILE_BYTES` (or the caller's ``max_bytes``),
:data:`MAX_DEPTH` nested collections, :data:`MAX_NODES` nodes as written (or
the caller's ``max_nodes``: a file of records is larger than a config), and
apart from those, at most :data:`MAX_ALIAS_NODES` more nodes made by expanding
aliases -- the alias-bomb limit, whatever the size of the file.  Alias
expansion is measured on the composed node graph, before anything is built.
Every key is loaded as the string Go's YAML-to-JSON step makes of it (``1``,
``true``, ``null``); two keys that load to the same string are duplicates.
Lone surrogates (possible through ``\\u`` escapes) are refused.

Parsing is CPU-bound: code on the event loop calls these through
:func:`nodehost.config.jsonsafe.off_loop` (a worker thread, at most two at once).
"""

from __future__ import annotations

import codecs
import errno
import re
from collections.abc import Callable, Iterator
from typing import Any

import yaml
from yaml import nodes

from nodehost.config.jsonsafe import MAX_DEPTH, lone_surrogate
from nodehost.config.schema import index_path, join_path, key_text
from nodehost.fileread import CONFIG_LIMIT, MiB, UnusableFile, read_file
from nodehost.frozen import frozen

MAX_FILE_BYTES = CONFIG_LIMIT
MAX_NODES = 100_000
MAX_ALIAS_NODES = 100_000

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):
    """libyaml's safe loader whose mappings are built with string keys (``1`` and ``true``
    stay two keys: as Python values they are equal)."""

    def construct_mapping(self, node: nodes.MappingNode, deep: bool = False) -> dict[str, Any]:
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, list | dict):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found unhashable key",
                    key_node.start_mark,
                )
            mapping[key_text(key)] = self.construct_object(value_node, deep=deep)
        return mapping


_MERGE_TAG = "tag:yaml.org,2002:merge"
# Characters YAML 1.1 allows in a stream (c-printable); anything else is refused up front.
_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


Position = tuple[int, int]
_KeyName = Callable[[nodes.ScalarNode], str]


class YAMLFileError(Exception):
    """The file cannot be read as one YAML mapping; ``str()`` is the reason."""


@frozen
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


def _check_events(text: str, max_nodes: int) -> int:
    """Refuse nesting deeper than MAX_DEPTH and more than ``max_nodes`` nodes as written, before
    anything recursive runs; the number of nodes as written."""
    loader = _Loader(text)
    try:
        depth, count = 0, 0
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, _NODE_EVENTS):
                count += 1
            if count > max_nodes:
                raise YAMLFileError(f"yaml: {_at(event.start_mark)}: more than {max_nodes} nodes")
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
    return count


_NODE_EVENTS = (yaml.ScalarEvent, yaml.AliasEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)


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

    def __init__(self, limit: int) -> None:
        self.limit = limit
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
            if size > self.limit:
                raise YAMLFileError(
                    f"yaml: {_at(node.start_mark)}: more than {MAX_ALIAS_NODES} nodes after alias "
                    "expansion (an alias bomb?)"
                )
        self.visiting.discard(key)
        self.measured[key] = (size, height)
        return size, height


def _check_duplicates(node: nodes.MappingNode, key_name: _KeyName) -> None:
    """Refuse a key written twice, as the text it loads to (``1`` and ``"1"`` are one key)."""
    seen: dict[str, nodes.Node] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, nodes.ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        first = seen.setdefault(key_name(key_node), key_node)
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
    """Records positions by field path, checks each mapping for duplicate keys once and
    every scalar for lone surrogates (which no UTF-8 file can hold)."""

    def __init__(self, key_name: _KeyName) -> None:
        self.key_name = key_name
        self.positions: dict[str, Position] = {}
        self.key_positions: dict[str, Position] = {}
        self.checked: set[int] = set()

    def walk(self, node: nodes.Node, path: str) -> None:
        self.positions.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, nodes.ScalarNode):
            _check_scalar(node)
        elif isinstance(node, nodes.SequenceNode):
            for index, item in enumerate(node.value):
                self.walk(item, index_path(path, index))
        elif isinstance(node, nodes.MappingNode):
            if id(node) not in self.checked:
                self.checked.add(id(node))
                _check_duplicates(node, self.key_name)
            for key_node, value_node in _effective_pairs(node):
                if not isinstance(key_node, nodes.ScalarNode):
                    continue
                _check_scalar(key_node)
                child = join_path(path, self.key_name(key_node))
                mark = key_node.start_mark
                self.key_positions.setdefault(child, (mark.line + 1, mark.column + 1))
                self.walk(value_node, child)


def _check_scalar(node: nodes.ScalarNode) -> None:
    found = lone_surrogate(node.value)
    if found is not None:
        raise YAMLFileError(
            f"yaml: {_at(node.start_mark)}: a lone surrogate (#x{ord(found):04x}) "
            "is not a character"
        )


def unshared(value: Any) -> Any:
    """A copy of parsed data whose mappings and lists are all its own (aliases expanded into
    copies); the checks above bound it for a document being parsed."""
    if isinstance(value, dict):
        return {key: unshared(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unshared(item) for item in value]
    return value


def _compose(text: str, written: int) -> ParsedYAML | None:
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _Measure(written + MAX_ALIAS_NODES).measure(root)
        locator = _Locator(lambda node: key_text(loader.construct_object(node)))
        locator.walk(root, "")
        data = loader.construct_document(root)
    finally:
        loader.dispose()
    return ParsedYAML(unshared(data), locator.positions, locator.key_positions)


def parse_yaml(text: str, max_nodes: int = MAX_NODES) -> ParsedYAML:
    """Parse one YAML document from ``text`` within the limits; see the module docstring."""
    try:
        written = _check_events(text, max_nodes)
        parsed = _compose(text, written)
    except YAMLFileError:
        raise
    except yaml.YAMLError as error:
        raise YAMLFileError(_mark_reason(error)) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as error:
        raise YAMLFileError(f"yaml: cannot construct a value: {error}") from None
    if parsed is None:
        raise YAMLFileError("the file is empty")
    return parsed


def parse_yaml_bytes(
    data: bytes, max_bytes: int = MAX_FILE_BYTES, max_nodes: int = MAX_NODES
) -> ParsedYAML:
    """Parse a document that did not come from a file (a config map's value) under the
    same limits as :func:`read_yaml_file`, its size included; raise :class:`YAMLFileError`."""
    if len(data) > max_bytes:
        raise YAMLFileError(
            f"the document is larger than the limit of {max_bytes // MiB} MiB ({max_bytes} bytes)"
        )
    return parse_yaml(decode(data), max_nodes)


def read_yaml_file(
    path: str, max_bytes: int = MAX_FILE_BYTES, max_nodes: int = MAX_NODES
) -> ParsedYAML:
    """Read and parse ``path``; raise :class:`YAMLFileError` with a one-line reason."""
    return parse_yaml(decode(read_limited(path, max_bytes)), max_nodes)

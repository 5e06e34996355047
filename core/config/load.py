"""Loading ``node-config.yaml`` into a :class:`~nodehost.config.schema.NodeConfig`.

Origin's ``ReadAndResolveNodeConfig`` (:ref:`origin-read-config`), stricter where Origin
only logs: read safely (:func:`read_config_file`), check ``apiVersion`` and
``kind``, type-check every field (collecting every problem, each with its
line and column), report unknown keys with a suggestion, keep plugin-owned
top-level sections raw, apply the v1 defaults, resolve relative paths.

Problems are returned, never raised: callers print them and stop on errors.
Only an unreadable or unparseable file raises (:class:`nodehost.errors.ConfigError`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import field, replace
from types import MappingProxyType
from typing import Any

from nodehost.config.defaults import apply_v1_defaults
from nodehost.config.noeffect import keys_without_effect
from nodehost.config.paths import resolve_paths
from nodehost.config.quantity import parse_quantity
from nodehost.config.schema import (
    API_VERSION,
    KIND,
    TYPE_META_KEYS,
    FieldSpec,
    Kind,
    NodeConfig,
    field_specs,
    index_path,
    join_path,
    key_text,
    yaml_keys,
)
from nodehost.errors import ConfigError
from nodehost.frozen import frozen
from nodehost.pluginhost.records import Problem, ProblemKind, Severity

Position = tuple[int, int]
AdjustHook = Callable[[dict[str, Any], str], None]

_INT64 = (-(1 << 63), (1 << 63) - 1)
_UINT32 = (0, (1 << 32) - 1)
_INVALID = object()
_SCALARS = (str, int, float, bool)
NUL_MESSAGE = "must not contain a NUL byte"


@frozen
class RawDocument:
    """A parsed config file: the top-level mapping and where each part of it was written.

    ``data``          the mapping (plain dicts/lists/scalars; the adjust hook may edit it).
    ``positions``     dotted field path -> (line, column) of its value, 1-based.
    ``key_positions`` dotted field path -> (line, column) of its key, 1-based.
    ``source``        the file name as given, or ``"<generated>"``.
    ``base_dir``      the absolute directory relative paths are resolved against.
    """

    data: dict[str, Any]
    source: str
    base_dir: str
    positions: Mapping[str, Position] = field(default_factory=dict)
    key_positions: Mapping[str, Position] = field(default_factory=dict)

    def where(self, path: str, *, key: bool = False) -> Position | None:
        """The (line, column) of the value (or key) at ``path``, if known."""
        table = self.key_positions if key else self.positions
        return table.get(path)


def _load_error(path: str, reason: str) -> ConfigError:
    quoted = json.dumps(path, ensure_ascii=False)
    return ConfigError(f"could not load config file {quoted} due to an error: {reason}")


def read_config_file(path: str) -> RawDocument:
    """Read ``path`` as one YAML mapping, safely, whatever the file holds.

    Raises :class:`~nodehost.errors.ConfigError` worded as Origin's
    ``could not load config file "<file>" due to an error: <why>``, where
    ``<why>`` names the line and column when known.  Refused: missing,
    unreadable or directory paths; files over 4 MiB; invalid UTF-8 and
    control characters; YAML syntax errors, several documents, duplicate keys,
    nesting deeper than 64, more than 100000 nodes after alias expansion
    (alias bombs), recursive aliases; an empty file; a top level that is not a
    mapping.
    """
    from nodehost.config import yamlsafe

    try:
        parsed = yamlsafe.read_yaml_file(path)
    except yamlsafe.YAMLFileError as error:
        raise _load_error(path, str(error)) from None
    if not isinstance(parsed.data, dict):
        line, column = parsed.positions.get("", (1, 1))
        raise _load_error(
            path,
            f"line {line}, column {column}: expected a mapping at the top level, "
            f"found {describe(parsed.data)}",
        )
    return RawDocument(
        data=parsed.data,
        source=path,
        base_dir=os.path.abspath(os.path.dirname(path) or "."),
        positions=parsed.positions,
        key_positions=parsed.key_positions,
    )


def describe(value: Any) -> str:
    """How a YAML value's type is named in messages (``a list``, ``null``, ``a timestamp``)."""
    if value is None:
        return "null"
    for kind, name in (
        (bool, "a boolean"),
        (int, "an integer"),
        (float, "a number"),
        (str, "a string"),
        (list, "a list"),
        (dict, "a mapping"),
        (bytes, "binary data"),
        (set, "a set"),
    ):
        if isinstance(value, kind):
            return name
    if type(value).__name__ in ("date", "datetime"):
        return "a timestamp"
    return f"a {type(value).__name__}"


class _Builder:
    """Converts a raw (defaulted) mapping to schema objects, collecting problems."""

    def __init__(self, doc: RawDocument, strict: bool) -> None:
        self.doc = doc
        self.strict = strict
        self.problems: list[Problem] = []

    def where(self, path: str, *, key: bool = False) -> str:
        position = self.doc.where(path, key=key)
        return f" (line {position[0]}, column {position[1]})" if position else ""

    def type_error(self, path: str, value: Any, expected: str) -> object:
        detail = f"must be {expected}, not {describe(value)}{self.where(path)}"
        if isinstance(value, _SCALARS):
            self.problems.append(Problem.invalid(path, value, detail))
        else:
            self.problems.append(Problem(path, ProblemKind.INVALID, detail))
        return _INVALID

    def unknown_key(self, path: str, name: str, known: Iterable[str]) -> None:
        from nodehost.suggest import closest  # difflib: only when a key is unknown

        detail = "unknown field" + self.where(path, key=True)
        suggestion = closest(name, known)
        if suggestion is not None:
            detail += f'; did you mean "{suggestion}"?'
        severity = Severity.ERROR if self.strict else Severity.WARNING
        self.problems.append(Problem.forbidden(path, detail, severity=severity))

    def build(
        self, cls: type, raw: Mapping[Any, Any], path: str, skip: Collection[str] = ()
    ) -> Any:
        """An instance of schema dataclass ``cls`` from ``raw``; bad fields keep their default."""
        specs = {spec.key: (attr, spec) for attr, spec in field_specs(cls)}
        values: dict[str, Any] = {}
        for key, value in raw.items():
            name = key_text(key)
            if name in skip:
                continue
            child = join_path(path, name)
            if name not in specs:
                self.unknown_key(child, name, [*specs, *skip])
                continue
            attr, spec = specs[name]
            converted = self.convert(spec, value, child)
            if converted is not _INVALID:
                values[attr] = converted
        return cls(**values)

    def convert(self, spec: FieldSpec, value: Any, path: str) -> Any:
        if value is None:
            return _zero(spec)
        converter = _CONVERTERS[spec.kind]
        return converter(self, spec, value, path)

    # --- one method per Kind -------------------------------------------------------

    def string(self, spec: FieldSpec, value: Any, path: str) -> Any:
        if not isinstance(value, str):
            return self.type_error(path, value, Kind.STRING.value)
        return self.text(value, path)

    def text(self, value: str, path: str) -> Any:
        """``value`` unless it holds a NUL byte (no path, name or argument can)."""
        if "\x00" not in value:
            return value
        self.problems.append(Problem.invalid(path, value, NUL_MESSAGE + self.where(path)))
        return _INVALID

    def raw_strings(self, value: Any, path: str) -> None:
        """Check every string inside a plugin's raw section (keys too) for NUL bytes."""
        if isinstance(value, str):
            self.text(value, path)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.raw_strings(item, index_path(path, index))
        elif isinstance(value, dict):
            for key, item in value.items():
                child = join_path(path, key_text(key))
                self.text(key_text(key), child)
                self.raw_strings(item, child)

    def boolean(self, spec: FieldSpec, value: Any, path: str) -> Any:
        return value if isinstance(value, bool) else self.type_error(path, value, Kind.BOOL.value)

    def _integer(self, value: Any, path: str, bounds: tuple[int, int], expected: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            return self.type_error(path, value, expected)
        if not bounds[0] <= value <= bounds[1]:
            return self.type_error(path, value, f"{expected} in [{bounds[0]}, {bounds[1]}]")
        return value

    def integer(self, spec: FieldSpec, value: Any, path: str) -> Any:
        return self._integer(value, path, _INT64, Kind.INT.value)

    def uint32(self, spec: FieldSpec, value: Any, path: str) -> Any:
        return self._integer(value, path, _UINT32, Kind.UINT32.value)

    def number(self, spec: FieldSpec, value: Any, path: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return self.type_error(path, value, Kind.FLOAT.value)
        if not math.isfinite(value):
            return self.type_error(path, value, "a finite number")
        return float(value)

    def string_list(self, spec: FieldSpec, value: Any, path: str) -> Any:
        if not isinstance(value, list):
            return self.type_error(path, value, Kind.STRING_LIST.value)
        items = []
        for index, item in enumerate(value):
            if item is None:
                item = ""
            elif not isinstance(item, str):
                item = self.type_error(index_path(path, index), item, Kind.STRING.value)
            else:
                item = self.text(item, index_path(path, index))
            items.append(item)
        return _INVALID if _INVALID in items else tuple(items)

    def arguments(self, spec: FieldSpec, value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            return self.type_error(path, value, Kind.ARGUMENTS.value)
        result = {}
        for key, values in value.items():
            name = key_text(key)
            if self.text(name, join_path(path, name)) is _INVALID:
                continue
            items = () if values is None else self.string_list(spec, values, join_path(path, name))
            if items is not _INVALID:
                result[name] = items
        return MappingProxyType(result)

    def mapping(self, spec: FieldSpec, value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            expected = Kind.OPTIONAL_OBJECT if spec.kind is Kind.OPTIONAL_OBJECT else Kind.OBJECT
            return self.type_error(path, value, expected.value)
        return self.build(spec.nested, value, path)  # type: ignore[arg-type]

    def mapping_list(self, spec: FieldSpec, value: Any, path: str) -> Any:
        if not isinstance(value, list):
            return self.type_error(path, value, Kind.OBJECT_LIST.value)
        items = []
        for index, item in enumerate(value):
            item_path = index_path(path, index)
            if item is None:
                items.append(spec.nested())  # type: ignore[misc]
            elif isinstance(item, dict):
                items.append(self.build(spec.nested, item, item_path))  # type: ignore[arg-type]
            else:
                items.append(self.type_error(item_path, item, Kind.OBJECT.value))
        return _INVALID if _INVALID in items else tuple(items)

    def quantity(self, spec: FieldSpec, value: Any, path: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return self.type_error(path, value, "a quantity such as 512Mi")
        try:
            return parse_quantity(str(value))
        except ValueError as error:
            self.problems.append(Problem.invalid(path, value, f"{error}{self.where(path)}"))
            return _INVALID


_CONVERTERS: dict[Kind, Callable[[_Builder, FieldSpec, Any, str], Any]] = {
    Kind.STRING: _Builder.string,
    Kind.BOOL: _Builder.boolean,
    Kind.INT: _Builder.integer,
    Kind.UINT32: _Builder.uint32,
    Kind.FLOAT: _Builder.number,
    Kind.STRING_LIST: _Builder.string_list,
    Kind.ARGUMENTS: _Builder.arguments,
    Kind.OBJECT: _Builder.mapping,
    Kind.OPTIONAL_OBJECT: _Builder.mapping,
    Kind.OBJECT_LIST: _Builder.mapping_list,
    Kind.QUANTITY: _Builder.quantity,
}


def _zero(spec: FieldSpec) -> Any:
    """What ``null`` decodes to, as Go's zero value (an empty object for a struct)."""
    zeros: dict[Kind, Any] = {
        Kind.STRING: "",
        Kind.BOOL: False,
        Kind.INT: 0,
        Kind.UINT32: 0,
        Kind.FLOAT: 0.0,
        Kind.STRING_LIST: (),
        Kind.ARGUMENTS: MappingProxyType({}),
        Kind.OPTIONAL_OBJECT: None,
        Kind.OBJECT_LIST: (),
        Kind.QUANTITY: None,
    }
    if spec.kind is Kind.OBJECT:
        return spec.nested()  # type: ignore[misc]
    return zeros[spec.kind]


def _check_type_meta(builder: _Builder, raw: Mapping[str, Any]) -> None:
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        if key not in raw:
            builder.problems.append(Problem.required(key, f'must be "{expected}"'))
        elif raw[key] != expected:
            detail = f'supported values: "{expected}"{builder.where(key)}'
            builder.problems.append(Problem(key, ProblemKind.NOT_SUPPORTED, detail, raw[key]))


def build_node_config(
    doc: RawDocument, *, known_sections: Collection[str] = (), strict: bool = False
) -> tuple[NodeConfig, list[Problem]]:
    """Turn a raw document into a resolved NodeConfig and the problems found on the way.

    * ``apiVersion`` must be ``v1`` and ``kind`` ``NodeConfig`` (errors otherwise);
    * every field is type checked; each wrong type is an error Problem at its
      field path whose detail names the line and column; all are reported;
    * no string (in plugin sections too) may hold a NUL byte;
    * unknown keys, at any depth, are warnings (errors when ``strict``) that
      suggest the closest known key;
    * keys nodehost does not act on are recorded in ``set_without_effect``
      (validation warns about them, :mod:`nodehost.config.noeffect`);
    * top-level keys in ``known_sections`` (plugin-owned) are kept raw in
      ``NodeConfig.extra``;
    * Origin's v1 defaults are applied and relative paths resolved against
      ``doc.base_dir``.

    A field with a wrong type keeps its default, so the returned NodeConfig is
    always complete; callers stop when any problem is an error.
    """
    builder = _Builder(doc, strict)
    raw = {key_text(key): value for key, value in doc.data.items()}
    _check_type_meta(builder, raw)
    node_keys = set(yaml_keys(NodeConfig))
    sections = [key for key in known_sections if key not in node_keys and key in raw]
    extra = {key: raw[key] for key in sections}
    for key in sections:
        builder.raw_strings(raw[key], key)
    skip = {*TYPE_META_KEYS, *known_sections} - node_keys
    config = builder.build(NodeConfig, apply_v1_defaults(raw), "", skip=skip)
    config = replace(
        resolve_paths(config, doc.base_dir),
        extra=MappingProxyType(extra),
        source=doc.source,
        base_dir=doc.base_dir,
    )
    wrong = [problem.path for problem in builder.problems]
    config = replace(config, set_without_effect=keys_without_effect(raw, wrong))
    return config, builder.problems


def load_node_config(
    path: str,
    *,
    known_sections: Collection[str] = (),
    strict: bool = False,
    adjust: AdjustHook | None = None,
) -> tuple[NodeConfig, list[Problem]]:
    """Read, adjust, build and resolve the NodeConfig in ``path``.

    ``adjust(raw, source)`` (the ``nodehost_adjust_config`` hook) may edit the
    raw mapping in place before defaults and type checking; whatever it raises
    propagates.  Raises :class:`~nodehost.errors.ConfigError` when the file
    cannot be read or parsed; everything else is returned as problems (see
    :func:`build_node_config`).
    """
    doc = read_config_file(path)
    if adjust is not None:
        adjust(doc.data, doc.source)
    return build_node_config(doc, known_sections=known_sections, strict=strict)


def node_config_from_mapping(
    raw: Mapping[str, Any],
    *,
    source: str = "<generated>",
    base_dir: str = ".",
    known_sections: Collection[str] = (),
    strict: bool = False,
    adjust: AdjustHook | None = None,
) -> tuple[NodeConfig, list[Problem]]:
    """Build a NodeConfig from a mapping made in code (generated configs).

    ``apiVersion``/``kind`` are filled in when absent; ``raw`` is not modified;
    relative paths resolve against ``base_dir`` (made absolute).  Same
    problems as :func:`build_node_config`, without line numbers.
    """
    import copy

    data = {"apiVersion": API_VERSION, "kind": KIND, **copy.deepcopy(dict(raw))}
    doc = RawDocument(data=data, source=source, base_dir=os.path.abspath(base_dir))
    if adjust is not None:
        adjust(doc.data, doc.source)
    return build_node_config(doc, known_sections=known_sections, strict=strict)

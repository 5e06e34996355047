"""A JSON Schema (draft-07) of node-config.yaml, generated from the schema's field table.

Point the YAML language server at the output of ``nodehost config schema`` to
get completion, descriptions and checks while editing ``node-config.yaml``.
The installed plugins' sections (``bridgeNetwork``, ``dnsServerConfig``,
``containerRuntime``, third parties') are top-level properties described by
the schema their record contributes (``config_schema``); other top-level keys
are allowed.  Origin's nested objects refuse unknown keys, so editors flag
typos.  ``null`` is accepted wherever Origin accepts it (it means "unset").
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any

from nodehost.config.quantity import QUANTITY_FORMAT_ERROR
from nodehost.config.schema import API_VERSION, KIND, FieldSpec, Kind, NodeConfig, field_specs

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
#: The schema's identifier (a URN: stable, names no server).
SCHEMA_ID = "urn:nodehost:schema:node-config:v1"
_QUANTITY_PATTERN = QUANTITY_FORMAT_ERROR.split("'")[1]
_INT64 = {"minimum": -(1 << 63), "maximum": (1 << 63) - 1}
_SIMPLE: dict[Kind, dict[str, Any]] = {
    Kind.STRING: {"type": ["string", "null"]},
    Kind.BOOL: {"type": ["boolean", "null"]},
    Kind.INT: {"type": ["integer", "null"], **_INT64},
    Kind.UINT32: {"type": ["integer", "null"], "minimum": 0, "maximum": (1 << 32) - 1},
    Kind.FLOAT: {"type": ["number", "null"]},
    Kind.QUANTITY: {"type": ["string", "integer", "number", "null"], "pattern": _QUANTITY_PATTERN},
}
_STRINGS = {"type": ["array", "null"], "items": {"type": ["string", "null"]}}


def _doc(cls: type) -> str:
    return (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")


def _default(cls: type, attr: str) -> Any:
    for item in dataclasses.fields(cls):
        if item.name == attr and isinstance(item.default, (str, bool, int, float)):
            return item.default
    return None


def _value_schema(spec: FieldSpec, definitions: dict[str, Any]) -> dict[str, Any]:
    if spec.kind in _SIMPLE:
        schema = dict(_SIMPLE[spec.kind])
    elif spec.kind is Kind.STRING_LIST:
        schema = {"type": ["array", "null"], "items": {"type": ["string", "null"]}}
        if spec.enum:
            schema["items"] = {"enum": [*spec.enum, None]}
    elif spec.kind is Kind.ARGUMENTS:
        schema = {"type": ["object", "null"], "additionalProperties": _STRINGS}
    else:
        reference = {"$ref": f"#/definitions/{_define(spec.nested, definitions)}"}
        if spec.kind is Kind.OBJECT_LIST:
            schema = {"type": ["array", "null"], "items": reference}
        else:
            schema = {"anyOf": [reference, {"type": "null"}]}
    if spec.enum and spec.kind is Kind.STRING:
        schema["enum"] = [*spec.enum, None]
    if spec.pattern:
        schema["pattern"] = spec.pattern
    return schema


def _properties(cls: type, definitions: dict[str, Any]) -> dict[str, Any]:
    properties = {}
    for attr, spec in field_specs(cls):
        schema = {"description": spec.doc, **_value_schema(spec, definitions)}
        default = _default(cls, attr)
        if default is not None:
            schema["default"] = default
        if spec.deprecated:
            schema["deprecated"] = True
            schema["deprecationMessage"] = spec.doc
        properties[spec.key] = schema
    return properties


def _define(cls: type | None, definitions: dict[str, Any]) -> str:
    assert cls is not None
    name = cls.__name__
    if name not in definitions:
        definitions[name] = {}
        definitions[name] = {
            "type": "object",
            "description": _doc(cls),
            "properties": _properties(cls, definitions),
            "additionalProperties": False,
        }
    return name


def node_config_schema(
    plugin_sections: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON Schema (draft-07) of a v1 NodeConfig document, as a JSON-ready mapping.

    ``plugin_sections`` maps each plugin-owned top-level key to its schema
    (see :meth:`nodehost.pluginhost.inventory.Inventory.section_schemas`); Origin's keys
    are never replaced.
    """
    definitions: dict[str, Any] = {}
    properties = {
        "apiVersion": {"description": "Must be v1.", "const": API_VERSION},
        "kind": {"description": "Must be NodeConfig.", "const": KIND},
        **_properties(NodeConfig, definitions),
    }
    for section, schema in sorted((plugin_sections or {}).items()):
        properties.setdefault(section, dict(schema))
    return {
        "$schema": DRAFT_07,
        "$id": SCHEMA_ID,
        "title": "NodeConfig",
        "description": _doc(NodeConfig),
        "type": "object",
        "required": ["apiVersion", "kind"],
        "properties": properties,
        "additionalProperties": True,
        "definitions": definitions,
    }

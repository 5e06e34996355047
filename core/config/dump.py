"""NodeConfig as YAML: Origin's keys in Origin's order, defaults applied, paths absolute.

Loading the output of :func:`dump_node_config` gives an equal NodeConfig
(plugin sections in ``extra`` included).
"""

from __future__ import annotations

from typing import Any

from nodehost.config.schema import API_VERSION, KIND, Kind, NodeConfig, field_specs


def _is_empty(value: Any) -> bool:
    return value in ("", None) or (hasattr(value, "__len__") and len(value) == 0)


def to_mapping(obj: Any) -> dict[str, Any]:
    """A schema dataclass as a plain mapping with Origin's YAML keys, in field order.

    ``omitempty`` fields are left out when empty; quantities become their text.
    """
    result: dict[str, Any] = {}
    cls: type = type(obj)  # a plain 'type': mypy takes type[Any] for unhashable
    for attr, spec in field_specs(cls):
        value = getattr(obj, attr)
        if spec.omitempty and _is_empty(value):
            continue
        result[spec.key] = _plain(spec.kind, value)
    return result


def _plain(kind: Kind, value: Any) -> Any:
    if value is None:
        return None
    if kind in (Kind.OBJECT, Kind.OPTIONAL_OBJECT):
        return to_mapping(value)
    if kind is Kind.OBJECT_LIST:
        return [to_mapping(item) for item in value]
    if kind is Kind.STRING_LIST:
        return list(value)
    if kind is Kind.ARGUMENTS:
        return {key: list(values) for key, values in value.items()}
    if kind is Kind.QUANTITY:
        return value.text
    return value


def node_config_mapping(config: NodeConfig) -> dict[str, Any]:
    """The whole document as a mapping: ``apiVersion``, ``kind``, the fields, then ``extra``."""
    document: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    document.update(to_mapping(config))
    for key, section in config.extra.items():
        document.setdefault(key, section)
    return document


def dump_node_config(config: NodeConfig) -> str:
    """The YAML text of ``config`` (block style, keys in Origin's order, no line folding)."""
    return dump_yaml(node_config_mapping(config))


def dump_yaml(document: Any, *, sort_keys: bool = False) -> str:
    """Block-style YAML as nodehost writes every file: safe types only, no line folding,
    keys in the mapping's order unless ``sort_keys`` (Go's writers sort them)."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(
        document,
        Dumper=dumper,
        sort_keys=sort_keys,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 20,
    )

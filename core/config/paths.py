"""Relative paths in NodeConfig, resolved against the config file's directory (:ref:`origin-paths`).

Which fields hold paths is read from the schema (``FieldSpec.is_path`` and
``FieldSpec.path_key_suffixes``), so the rule lives with the field table:
``servingInfo.certFile``/``keyFile``/``clientCA``, every named certificate's
``certFile``/``keyFile``, ``dnsRecursiveResolvConf``, ``masterKubeConfig``,
``volumeDirectory``, ``podManifestConfig.path``, and every value of every
``kubeletArguments`` key ending in ``-file`` or ``-dir``.  Not resolved:
``kubeletArguments["bootstrap-kubeconfig"]`` and ``proxyArguments``.
"""

from __future__ import annotations

import dataclasses
import posixpath
from types import MappingProxyType
from typing import Any, TypeVar

from nodehost.config.schema import Kind, field_specs

T = TypeVar("T")


def resolve_path(base_dir: str, path: str) -> str:
    """Origin's ``ResolvePaths`` for one value: empty and absolute paths are left alone,
    relative ones become ``join(base_dir, path)``, lexically cleaned like Go's ``filepath.Join``."""
    if not path or posixpath.isabs(path):
        return path
    joined = posixpath.normpath(posixpath.join(base_dir, path))
    if joined.startswith("//"):
        joined = "/" + joined.lstrip("/")
    return joined


def _resolve_arguments(
    arguments: Any, suffixes: tuple[str, ...], base_dir: str
) -> MappingProxyType[str, tuple[str, ...]]:
    return MappingProxyType(
        {
            key: tuple(resolve_path(base_dir, value) for value in values)
            if key.endswith(suffixes)
            else values
            for key, values in arguments.items()
        }
    )


def resolve_paths(obj: T, base_dir: str) -> T:
    """Return a copy of a schema dataclass (``NodeConfig`` or a nested type) with every path
    field resolved against ``base_dir`` (which should be absolute)."""
    changes: dict[str, Any] = {}
    cls: type = type(obj)  # a plain 'type': mypy takes type[T] for unhashable
    for attr, spec in field_specs(cls):
        value = getattr(obj, attr)
        if spec.is_path and isinstance(value, str):
            changes[attr] = resolve_path(base_dir, value)
        elif spec.kind in (Kind.OBJECT, Kind.OPTIONAL_OBJECT) and value is not None:
            changes[attr] = resolve_paths(value, base_dir)
        elif spec.kind is Kind.OBJECT_LIST:
            changes[attr] = tuple(resolve_paths(item, base_dir) for item in value)
        elif spec.kind is Kind.ARGUMENTS and spec.path_key_suffixes:
            changes[attr] = _resolve_arguments(value, spec.path_key_suffixes, base_dir)
    return dataclasses.replace(obj, **changes)  # type: ignore[type-var]

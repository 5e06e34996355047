"""The ``node-config.yaml`` of a generated node folder (:ref:`origin-generated-node-config` and
:ref:`origin-paths`).

The mapping uses Origin's v1 YAML keys.  Its paths are made absolute from the
current directory and then relative to the node folder
(:func:`relativize_node_config_paths`, Origin's ``RelativizeNodeConfigPaths``),
Origin's v1 defaults are applied and the master connection is switched to
protobuf (:mod:`nodehost.config.defaults`), and it is written with
``apiVersion`` and ``kind`` first and every other key sorted.  No
``cryptography`` here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, MutableMapping, MutableSequence
from dataclasses import field
from typing import Any

from nodehost.config.defaults import (
    DEFAULT_AUTH_CACHE_SIZE,
    DEFAULT_DOCKER_SHIM_ROOT_DIRECTORY,
    DEFAULT_EXEC_HANDLER,
    apply_v1_defaults,
    set_protobuf_client_defaults,
)
from nodehost.config.paths import resolve_path
from nodehost.config.schema import Kind, NodeConfig, field_specs
from nodehost.frozen import frozen

NODE_CONFIG_FILE = "node-config.yaml"
NODE_CONFIG_MODE = 0o644


@frozen
class NodeConfigFields:
    """The values create-node-config puts into ``node-config.yaml`` (paths as given)."""

    node_name: str
    bind_address: str
    volume_directory: str
    allow_disabled_docker: bool
    image_format: str
    latest_images: bool
    dns_bind_address: str
    dns_domain: str
    dns_ip: str
    master_kubeconfig: str
    network_plugin: str
    kubelet_arguments: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    server_cert_file: str = ""
    server_key_file: str = ""
    client_ca_file: str = ""


def node_config_mapping(fields: NodeConfigFields) -> dict[str, Any]:
    """The raw v1 ``NodeConfig`` mapping, before paths, defaults and protobuf."""
    serving: dict[str, Any] = {"bindAddress": fields.bind_address}
    if fields.server_cert_file:
        serving["certFile"] = fields.server_cert_file
        serving["keyFile"] = fields.server_key_file
    if fields.client_ca_file:
        serving["clientCA"] = fields.client_ca_file
    raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "NodeConfig",
        "nodeName": fields.node_name,
        "servingInfo": serving,
        "volumeDirectory": fields.volume_directory,
        "allowDisabledDocker": fields.allow_disabled_docker,
        "imageConfig": {"format": fields.image_format, "latest": fields.latest_images},
        "dnsBindAddress": fields.dns_bind_address,
        "dnsDomain": fields.dns_domain,
        "dnsIP": fields.dns_ip,
        "masterKubeConfig": fields.master_kubeconfig,
        "networkConfig": {"networkPluginName": fields.network_plugin},
        "enableUnidling": True,
    }
    if fields.kubelet_arguments:
        raw["kubeletArguments"] = {k: list(v) for k, v in fields.kubelet_arguments.items()}
    return raw


def _path_references(
    raw: MutableMapping[str, Any], cls: type = NodeConfig
) -> Iterator[tuple[Any, Any]]:
    """Every (container, key) of ``raw`` holding a file path, as the schema marks them.

    The fields are those of Origin's ``GetNodeFileReferences`` (see
    :mod:`nodehost.config.paths`), read from :mod:`nodehost.config.schema` so
    the list lives in one place.
    """
    for _, spec in field_specs(cls):
        value = raw.get(spec.key)
        nested = spec.nested
        if spec.is_path and isinstance(value, str):
            yield raw, spec.key
        elif nested and spec.kind is not Kind.OBJECT_LIST and isinstance(value, MutableMapping):
            yield from _path_references(value, nested)
        elif nested and spec.kind is Kind.OBJECT_LIST and isinstance(value, list):
            for item in value:
                if isinstance(item, MutableMapping):
                    yield from _path_references(item, nested)
        elif spec.kind is Kind.ARGUMENTS and spec.path_key_suffixes and isinstance(value, Mapping):
            for name, values in value.items():
                if name.endswith(spec.path_key_suffixes) and isinstance(values, MutableSequence):
                    yield from ((values, index) for index in range(len(values)))


def resolve_node_config_paths(raw: MutableMapping[str, Any], base: str) -> None:
    """Origin's ``ResolvePaths`` in place: relative paths become ``join(base, path)``."""
    for container, key in _path_references(raw):
        if isinstance(container[key], str):
            container[key] = resolve_path(base, container[key])


def relativize_node_config_paths(raw: MutableMapping[str, Any], base: str) -> None:
    """Origin's ``RelativizeNodeConfigPaths``: make paths relative to ``base`` in place.

    A result that needs backsteps (``../``) keeps an absolute path as it was;
    for a relative one it is an error.  Raises ``ValueError`` with Origin's
    message ``<path> requires backsteps and is not absolute``.
    """
    for container, key in _path_references(raw):
        value = container[key]
        if not isinstance(value, str) or not value:
            continue
        if os.path.isabs(value) != os.path.isabs(base):
            raise ValueError(f"Rel: can't make {value} relative to {base}")
        relative = os.path.relpath(value, base)
        if relative.startswith("../"):
            if os.path.isabs(value):
                continue
            raise ValueError(f"{value} requires backsteps and is not absolute")
        container[key] = relative


#: Settings nodehost has no use for (:mod:`nodehost.config.noeffect`), at the values Origin's
#: v1 defaults give them: left out of a generated file, which Origin reads the same without.
_UNUSED_DEFAULTS = (
    (("allowDisabledDocker",), False),
    (("enableUnidling",), True),
    (("dockerConfig", "execHandlerName"), DEFAULT_EXEC_HANDLER),
    (("dockerConfig", "dockerShimRootDirectory"), DEFAULT_DOCKER_SHIM_ROOT_DIRECTORY),
    (("authConfig", "authenticationCacheSize"), DEFAULT_AUTH_CACHE_SIZE),
    (("authConfig", "authorizationCacheSize"), DEFAULT_AUTH_CACHE_SIZE),
)


def finish_node_config(raw: dict[str, Any]) -> dict[str, Any]:
    """Apply Origin's v1 defaults and then the protobuf client defaults (:ref:`origin-defaults`,
    :ref:`origin-protobuf-defaults`).

    Then leave out the settings nodehost would only warn about while they hold
    Origin's defaults: Origin reads the file the same without them.
    """
    finished = set_protobuf_client_defaults(apply_v1_defaults(raw))
    for keys, default in _UNUSED_DEFAULTS:
        *parents, last = keys
        holder = finished
        for key in parents:
            holder = holder.get(key) or {}
        if holder.get(last, None) == default and type(holder.get(last)) is type(default):
            del holder[last]
    return finished


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def ordered_node_config(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A new NodeConfig mapping in file order: ``apiVersion``, ``kind``, then every key sorted
    (nested mappings too); loading :func:`dump_node_config`'s YAML of it gives it back."""
    head = {key: raw[key] for key in ("apiVersion", "kind") if key in raw}
    rest = {key: value for key, value in raw.items() if key not in head}
    return {**head, **_sorted(rest)}


def dump_node_config(raw: Mapping[str, Any]) -> bytes:
    """YAML of a NodeConfig mapping: ``apiVersion``, ``kind``, then every key sorted."""
    from nodehost.config.dump import dump_yaml

    return dump_yaml(ordered_node_config(raw)).encode("utf-8")

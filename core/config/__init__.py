"""NodeConfig: Origin's v1 node configuration -- schema, loading, defaults, validation.

* :mod:`nodehost.config.schema`   -- the typed, frozen :class:`NodeConfig`;
* :mod:`nodehost.config.defaults` -- Origin's v1 defaults on the raw mapping;
* :mod:`nodehost.config.load`     -- reading a file safely, type checking,
  unknown keys, path resolution (:func:`load_node_config`);
* :mod:`nodehost.config.validate` -- Origin's validation rules;
* :mod:`nodehost.config.dump`     -- YAML output; :mod:`nodehost.config.jsonschema`
  -- a JSON Schema for editors;
* helpers: :mod:`~nodehost.config.goduration`, :mod:`~nodehost.config.hostport`,
  :mod:`~nodehost.config.listen`, :mod:`~nodehost.config.quantity`,
  :mod:`~nodehost.config.tls`.

Names are resolved lazily, so ``import nodehost.config`` costs nothing and
``nodehost.config.NodeConfig`` does not import yaml.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodehost.lazy import lazy_attributes

_LAZY = {
    "NodeConfig": "nodehost.config.schema",
    "RawDocument": "nodehost.config.load",
    "read_config_file": "nodehost.config.load",
    "build_node_config": "nodehost.config.load",
    "load_node_config": "nodehost.config.load",
    "node_config_from_mapping": "nodehost.config.load",
    "validate_node_config": "nodehost.config.validate",
    "dump_node_config": "nodehost.config.dump",
    "node_config_schema": "nodehost.config.jsonschema",
}

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.config.dump import dump_node_config
    from nodehost.config.jsonschema import node_config_schema
    from nodehost.config.load import (
        RawDocument,
        build_node_config,
        load_node_config,
        node_config_from_mapping,
        read_config_file,
    )
    from nodehost.config.schema import NodeConfig
    from nodehost.config.validate import validate_node_config

__all__ = [
    "NodeConfig",
    "RawDocument",
    "build_node_config",
    "dump_node_config",
    "load_node_config",
    "node_config_from_mapping",
    "node_config_schema",
    "read_config_file",
    "validate_node_config",
]


__getattr__ = lazy_attributes(__name__, _LAZY)

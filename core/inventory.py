"""The inventory: every loaded plugin's component and network-provider records, indexed.

Built once per command from a loaded :class:`~nodehost.manager.PluginHost`;
clashes between plugins are errors naming both (see :func:`index_by_name`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from nodehost.manager import LoadOptions, PluginHost, Provided, index_by_name, unique
from nodehost.records import ComponentRecord, NetworkProviderRecord
from nodehost.selection import Catalog


@dataclass
class Inventory:
    """Loaded plugins plus their records.

    ``components`` maps every component name *and alias* to its record;
    ``providers`` maps every lower-cased provider name and alias to its record.
    """

    host: PluginHost
    components: dict[str, Provided[ComponentRecord]]
    providers: dict[str, Provided[NetworkProviderRecord]]

    @classmethod
    def load(cls, options: LoadOptions) -> Inventory:
        return cls.from_host(PluginHost().load(options))

    @classmethod
    def from_host(cls, host: PluginHost) -> Inventory:
        hooks = host.hooks
        components = index_by_name(hooks.components(), "component")
        providers = index_by_name(hooks.network_providers(), "network provider", fold_case=True)
        return cls(host, components, providers)

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog({item.record.name: item.record for item in unique(self.components)})

    def component(self, name: str) -> Provided[ComponentRecord]:
        return self.components[name]

    def provider_records(self) -> dict[str, NetworkProviderRecord]:
        return {key: item.record for key, item in self.providers.items()}

    def section_schemas(self) -> dict[str, dict[str, Any]]:
        """Every plugin-owned section with its JSON Schema (a plain object schema when the
        record gives none), its description naming the plugin that owns it."""
        owned: list[tuple[str, Any, str]] = []
        for item in unique(self.components):
            schemas = item.record.config_schema
            owned += [(s, schemas.get(s), item.source()) for s in item.record.config_sections]
        for provider in unique(self.providers):
            section = provider.record.config_section
            if section:
                owned.append((section, provider.record.config_schema, provider.source()))
        result: dict[str, dict[str, Any]] = {}
        for section, schema, source in owned:
            entry = dict(schema or {"type": ["object", "null"]})
            description = entry.get("description", f"A section of {source}; no schema given.")
            entry["description"] = f"{description} (owned by {source})"
            result.setdefault(section, entry)
        return result

    def known_sections(self) -> frozenset[str]:
        """Top-level NodeConfig keys that plugins own: components' and providers' sections."""
        owned = [record.config_sections for record in self.catalog.records.values()]
        providers = [item.record.config_section for item in unique(self.providers)]
        return frozenset(
            [*(section for sections in owned for section in sections), *filter(None, providers)]
        )

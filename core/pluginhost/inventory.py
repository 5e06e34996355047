"""The inventory: every loaded plugin's component and network-provider records, indexed.

Built once per command from a loaded :class:`~nodehost.pluginhost.manager.PluginHost`.
A name clash fails the third-party plugin(s) involved, not the command
(:mod:`nodehost.pluginhost.clashes`); the records of failed plugins are left out.
"""

from __future__ import annotations

from dataclasses import field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from nodehost.errors import PluginError
from nodehost.frozen import frozen
from nodehost.pluginhost.manager import LoadOptions, PluginHost, Provided, index_by_name, unique
from nodehost.pluginhost.records import ComponentRecord, NetworkProviderRecord, OptionRecord
from nodehost.pluginhost.selection import Catalog

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.config.schema import NodeConfig


@frozen
class Inventory:
    """Loaded plugins plus their records.

    ``components`` maps every component name *and alias* to its record;
    ``providers`` maps every lower-cased provider name and alias to its record.
    ``options`` lists every ``start`` option plugins declare, in declaration order.
    """

    host: PluginHost
    components: dict[str, Provided[ComponentRecord]]
    providers: dict[str, Provided[NetworkProviderRecord]]
    options: list[Provided[OptionRecord]] = field(default_factory=list)

    @classmethod
    def load(cls, options: LoadOptions) -> Inventory:
        return cls.from_host(PluginHost().load(options))

    @classmethod
    def from_host(cls, host: PluginHost) -> Inventory:
        from nodehost.config.schema import NodeConfig, yaml_keys
        from nodehost.options import HOST_OPTION_WORDS
        from nodehost.pluginhost.clashes import (
            component_claims,
            find_clashes,
            option_claims,
            provider_claims,
            section_claims,
            unknown_references,
        )

        hooks = host.hooks
        components, providers = hooks.components(), hooks.network_providers()
        options = hooks.options()
        clashes = [
            *find_clashes(component_claims(components), "nodehost_components", host),
            *find_clashes(provider_claims(providers), "nodehost_network_providers", host),
            *find_clashes(
                section_claims(components, providers, host, yaml_keys(NodeConfig)),
                "nodehost_components",
                host,
            ),
            *find_clashes(option_claims(options, HOST_OPTION_WORDS), "nodehost_options", host),
        ]
        _fail_for(host, clashes)
        components, providers = _without_failed(host, components), _without_failed(host, providers)
        while clashes := unknown_references(components, host):
            _fail_for(host, clashes)
            components = _without_failed(host, components)
        providers = _without_failed(host, providers)
        return cls(
            host,
            index_by_name(components, "component"),
            index_by_name(providers, "network provider", fold_case=True),
            _without_failed(host, options),
        )

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog({item.record.name: item.record for item in unique(self.components)})

    def component(self, name: str) -> Provided[ComponentRecord]:
        return self.components[name]

    def provider_records(self) -> dict[str, NetworkProviderRecord]:
        return {key: item.record for key, item in self.providers.items()}

    def sections_of(self, plugin: str) -> frozenset[str]:
        """The NodeConfig keys ``plugin``'s components and providers own."""
        sections = [
            section
            for item in unique(self.components)
            if item.plugin == plugin
            for section in item.record.config_sections
        ]
        sections += [
            item.record.config_section
            for item in unique(self.providers)
            if item.plugin == plugin and item.record.config_section
        ]
        return frozenset(sections)

    def in_play(self, plugin: str, selected: frozenset[str], config: NodeConfig) -> bool:
        """Whether ``plugin`` matters for this start: one of its components is selected, a
        provider of its is the configured one, or a key it owns is set in ``config``."""
        if any(
            item.plugin == plugin and item.record.name in selected
            for item in unique(self.components)
        ):
            return True
        configured = config.network_config.network_plugin_name.strip().lower()
        provider = self.providers.get(configured)
        if provider is not None and provider.plugin == plugin:
            return True
        return any(is_set(config, key) for key in self.sections_of(plugin))

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


def _fail_for(host: PluginHost, clashes: list[Any]) -> None:
    for clash in clashes:
        if host.infos[clash.plugin].status != "failed":
            host.disable_failed(clash.plugin, PluginError(clash.message), clash.hook)


def _without_failed(host: PluginHost, provided: list[Provided[Any]]) -> list[Provided[Any]]:
    failed = {info.name for info in host.failures()}
    return [item for item in provided if item.plugin not in failed]


def is_set(config: NodeConfig, key: str) -> bool:
    """Whether the top-level ``key`` has a value in ``config``: a plugin section present,
    or a NodeConfig field that is not empty."""
    from nodehost.config.schema import NodeConfig, field_specs

    if key in config.extra:
        return True
    for attribute, spec in field_specs(NodeConfig):
        if spec.key == key:
            return bool(getattr(config, attribute))
    return False

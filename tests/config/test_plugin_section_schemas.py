"""``nodehost config schema`` holds every plugin section, each with exactly the keys it reads."""

from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner

from nodehost.cli import cli
from nodehost.config.sections import SectionReader
from nodehost.pluginhost.inventory import Inventory
from nodehost.pluginhost.manager import LoadOptions

BUILTIN_SECTIONS = ("bridgeNetwork", "externalNetwork", "dnsServerConfig", "containerRuntime")


def schema_from_cli(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["config", "schema", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_schema_has_an_id_and_every_builtin_section() -> None:
    schema = schema_from_cli()
    assert schema["$id"] == "urn:nodehost:schema:node-config:v1"
    jsonschema.Draft7Validator.check_schema(schema)
    for section in BUILTIN_SECTIONS:
        described = schema["properties"][section]
        assert described["additionalProperties"] is False
        assert "(owned by plugin " in described["description"]


def test_sections_of_a_disabled_plugin_are_left_out() -> None:
    schema = schema_from_cli("--disable-plugin", "sdn")
    assert "bridgeNetwork" not in schema["properties"]
    assert "dnsServerConfig" in schema["properties"]


def test_editors_see_typos_and_wrong_types_in_plugin_sections() -> None:
    validator = jsonschema.Draft7Validator(schema_from_cli())
    document = {
        "apiVersion": "v1",
        "kind": "NodeConfig",
        "bridgeNetwork": {"podCIDR": "10.244.1.0/24", "ipmasq": True},
        "containerRuntime": {"paths": "elsewhere"},
        "dnsServerConfig": None,
    }
    messages = sorted(error.message for error in validator.iter_errors(document))
    assert any("'ipmasq' was unexpected" in message for message in messages), messages
    assert any("'elsewhere' is not one of" in message for message in messages), messages
    assert len(messages) == 2


def plugin_sections() -> list[tuple[str, dict]]:
    """The sections plugins add; Origin's keys (kubeletArguments...) keep their own schema."""
    from nodehost.config.jsonschema import node_config_schema

    inventory = Inventory.load(LoadOptions.from_environment())
    origin = node_config_schema()["properties"]
    return [
        (name, schema) for name, schema in inventory.section_schemas().items() if name not in origin
    ]


@pytest.mark.parametrize(("section", "schema"), plugin_sections())
def test_schema_keys_are_the_keys_the_plugin_reads(
    section, schema, monkeypatch, node_folder
) -> None:
    """The plugin's SectionReader reads exactly the schema's properties (no more, no fewer)."""
    read: dict[str, set[str]] = {}
    unknown_keys = SectionReader.unknown_keys

    def record(reader: SectionReader) -> None:
        read.setdefault(reader.section, set()).update(reader._read)
        unknown_keys(reader)

    monkeypatch.setattr(SectionReader, "unknown_keys", record)
    inventory = Inventory.load(LoadOptions.from_environment())
    provider = next(
        (i.record.name for i in inventory.providers.values() if i.record.config_section == section),
        "",
    )
    node_folder.update(
        {
            "networkConfig": {"networkPluginName": provider},
            "dnsBindAddress": "127.0.0.1:53",
            section: {},
        }
    )
    CliRunner().invoke(cli, ["config", "validate", str(node_folder.config_path)])
    assert section in read, f"no plugin read {section} during validation"
    assert read[section] == set(schema["properties"])

"""The JSON Schema for editors: well-formed draft-07, accepts real configs, flags mistakes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from nodehost.config.dump import node_config_mapping
from nodehost.config.jsonschema import node_config_schema
from nodehost.config.load import load_node_config
from nodehost.config.schema import NodeConfig, yaml_keys

VALIDATOR = jsonschema.Draft7Validator(node_config_schema())


def schema_errors(document: object) -> list[str]:
    return [error.message for error in VALIDATOR.iter_errors(document)]


def test_schema_is_valid_draft_07_and_json() -> None:
    schema = node_config_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    assert json.loads(json.dumps(schema)) == schema


def test_every_origin_key_is_described() -> None:
    properties = node_config_schema()["properties"]
    for key in yaml_keys(NodeConfig):
        assert properties[key]["description"]


def test_enums_for_closed_sets() -> None:
    definitions = node_config_schema()["definitions"]
    assert definitions["ServingInfo"]["properties"]["bindNetwork"]["enum"][:3] == [
        "tcp",
        "tcp4",
        "tcp6",
    ]
    assert "VersionTLS12" in definitions["ServingInfo"]["properties"]["minTLSVersion"]["enum"]
    assert definitions["DockerConfig"]["properties"]["execHandlerName"]["enum"][:2] == [
        "native",
        "nsenter",
    ]


def test_sample_configs_validate(sample_path: Path, valid_config_text: str) -> None:
    assert schema_errors(yaml.safe_load(sample_path.read_text())) == []
    assert schema_errors(yaml.safe_load(valid_config_text)) == []


def test_origins_own_testdata_validates() -> None:
    # Origin's pkg/cmd/server/apis/config/v1/testdata/node-config.yaml (every field, defaults).
    origin = {
        "allowDisabledDocker": False, "apiVersion": "v1",
        "authConfig": {"authenticationCacheSize": 1000, "authenticationCacheTTL": "5m",
                       "authorizationCacheSize": 1000, "authorizationCacheTTL": "5m"},
        "dnsBindAddress": "", "dnsDomain": "", "dnsIP": "", "dnsNameservers": None,
        "dnsRecursiveResolvConf": "",
        "dockerConfig": {"dockerShimRootDirectory": "/var/lib/dockershim",
                         "dockerShimSocket": "unix:///var/run/dockershim.sock",
                         "execHandlerName": "native"},
        "enableUnidling": False, "imageConfig": {"format": "", "latest": False},
        "iptablesSyncPeriod": "30s", "kind": "NodeConfig",
        "masterClientConnectionOverrides": {"acceptContentTypes": "application/json", "burst": 20,
                                            "contentType": "application/json", "qps": 10},
        "masterKubeConfig": "", "networkConfig": {"mtu": 1450, "networkPluginName": ""},
        "nodeName": "", "podManifestConfig": {"fileCheckIntervalSeconds": 0, "path": ""},
        "servingInfo": {"bindAddress": "", "bindNetwork": "tcp4", "certFile": "", "clientCA": "",
                        "keyFile": "", "namedCertificates": None},
        "volumeConfig": {"localQuota": {"perFSGroup": None}}, "volumeDirectory": "",
    }  # fmt: skip
    assert schema_errors(origin) == []


def test_dumped_config_validates(sample_path: Path) -> None:
    config, _ = load_node_config(str(sample_path))
    assert schema_errors(node_config_mapping(config)) == []


def test_plugin_sections_are_allowed_at_top_level() -> None:
    assert schema_errors({"apiVersion": "v1", "kind": "NodeConfig", "myNetwork": {"a": 1}}) == []


@pytest.mark.parametrize(
    "document",
    [
        {"apiVersion": "v2", "kind": "NodeConfig"},
        {"kind": "NodeConfig"},
        {"apiVersion": "v1", "kind": "NodeConfig", "servingInfo": {"bindAdress": "x:1"}},
        {"apiVersion": "v1", "kind": "NodeConfig", "servingInfo": {"bindNetwork": "udp"}},
        {"apiVersion": "v1", "kind": "NodeConfig", "dockerConfig": {"execHandlerName": "x"}},
        {"apiVersion": "v1", "kind": "NodeConfig", "networkConfig": {"mtu": -1}},
        {"apiVersion": "v1", "kind": "NodeConfig", "iptablesSyncPeriod": "30"},
        {"apiVersion": "v1", "kind": "NodeConfig", "kubeletArguments": {"max-pods": "250"}},
        {
            "apiVersion": "v1",
            "kind": "NodeConfig",
            "volumeConfig": {"localQuota": {"perFSGroup": "lots"}},
        },
        {"apiVersion": "v1", "kind": "NodeConfig", "nodeName": 5},
    ],
)
def test_mistakes_are_flagged(document: dict) -> None:
    assert schema_errors(document) != []

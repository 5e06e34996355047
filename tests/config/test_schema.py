"""The typed NodeConfig and its field table."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from nodehost.config.load import node_config_from_mapping
from nodehost.config.schema import (
    ClientConnectionOverrides,
    Kind,
    NodeConfig,
    ServingInfo,
    field_specs,
    yaml_keys,
)

# Reference section 4 / 4.1, in Origin's struct order.
ORIGIN_NODE_CONFIG_KEYS = (
    "nodeName", "nodeIP", "servingInfo", "masterKubeConfig", "masterClientConnectionOverrides",
    "dnsDomain", "dnsIP", "dnsBindAddress", "dnsNameservers", "dnsRecursiveResolvConf",
    "networkPluginName", "networkConfig", "volumeDirectory", "imageConfig", "allowDisabledDocker",
    "podManifestConfig", "authConfig", "dockerConfig", "kubeletArguments", "proxyArguments",
    "iptablesSyncPeriod", "enableUnidling", "volumeConfig",
)  # fmt: skip


def test_node_config_has_every_origin_key_in_origin_order() -> None:
    assert yaml_keys(NodeConfig) == ORIGIN_NODE_CONFIG_KEYS


def test_serving_info_has_every_origin_key() -> None:
    assert yaml_keys(ServingInfo) == (
        "bindAddress", "bindNetwork", "certFile", "keyFile", "clientCA", "namedCertificates",
        "minTLSVersion", "cipherSuites",
    )  # fmt: skip


def test_nested_types_know_their_dataclass() -> None:
    for _, spec in field_specs(NodeConfig):
        if spec.kind in (Kind.OBJECT, Kind.OPTIONAL_OBJECT, Kind.OBJECT_LIST):
            assert dataclasses.is_dataclass(spec.nested), spec.key


def test_default_node_config_equals_an_empty_loaded_config() -> None:
    config, _ = node_config_from_mapping({})
    assert config == NodeConfig()


def test_client_overrides_type_defaults_to_zero_rates_like_go() -> None:
    assert ClientConnectionOverrides().qps == 0.0
    assert NodeConfig().master_client_connection_overrides.qps == 10.0


def test_node_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        NodeConfig().node_name = "x"  # type: ignore[misc]


def test_source_and_base_dir_do_not_take_part_in_equality() -> None:
    assert NodeConfig(source="a.yaml", base_dir="/a") == NodeConfig(source="b", base_dir="/b")


def heavy_modules_after(statement: str) -> list[str]:
    code = (
        f"import sys; {statement}; print([m for m in ('yaml', 'cryptography') if m in sys.modules])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return eval(result.stdout)  # a printed list of str


def test_importing_the_schema_loads_neither_yaml_nor_cryptography() -> None:
    assert heavy_modules_after("import nodehost.config; nodehost.config.NodeConfig") == []
    assert heavy_modules_after("import nodehost.config.schema") == []


def test_importing_load_and_validate_stays_light() -> None:
    assert heavy_modules_after("import nodehost.config.load, nodehost.config.validate") == []

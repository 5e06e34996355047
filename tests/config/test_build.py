"""From raw YAML to NodeConfig: type meta, type checking, unknown keys, plugin sections."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nodehost.config.load import load_node_config, node_config_from_mapping
from nodehost.config.quantity import Quantity
from nodehost.config.schema import NodeConfig, PodManifestConfig
from nodehost.pluginhost.records import Problem, Severity

HEADER = "apiVersion: v1\nkind: NodeConfig\n"


def rendered(problems: list[Problem]) -> list[str]:
    return [problem.render() for problem in problems]


@pytest.fixture
def load(write_yaml: Callable[..., Path]) -> Callable[..., tuple[NodeConfig, list[Problem]]]:
    def load(body: str, **options: Any) -> tuple[NodeConfig, list[Problem]]:
        return load_node_config(str(write_yaml(HEADER + body)), **options)

    return load


# --- apiVersion and kind --------------------------------------------------------------


def test_type_meta_is_required(write_yaml: Callable[..., Path]) -> None:
    _, problems = load_node_config(str(write_yaml("nodeName: a\n")))
    assert rendered(problems) == [
        'apiVersion: Required value: must be "v1"',
        'kind: Required value: must be "NodeConfig"',
    ]


def test_wrong_type_meta_is_not_supported(write_yaml: Callable[..., Path]) -> None:
    _, problems = load_node_config(str(write_yaml("apiVersion: v2\nkind: MasterConfig\n")))
    assert rendered(problems) == [
        'apiVersion: Unsupported value: "v2": supported values: "v1" (line 1, column 13)',
        'kind: Unsupported value: "MasterConfig": supported values: "NodeConfig" '
        "(line 2, column 7)",
    ]


# --- type checking --------------------------------------------------------------------


def test_wrong_types_are_errors_with_line_and_column(load: Callable[..., Any]) -> None:
    _, problems = load(
        "nodeName: 12345\n"
        "allowDisabledDocker: 'yes'\n"
        "networkConfig:\n"
        "  mtu: -1\n"
        "servingInfo: [a]\n"
        "dnsNameservers: 1.2.3.4:53\n"
    )
    assert rendered(problems) == [
        "nodeName: Invalid value: 12345: must be a string, not an integer (line 3, column 11)",
        'allowDisabledDocker: Invalid value: "yes": must be a boolean, not a string '
        "(line 4, column 22)",
        "networkConfig.mtu: Invalid value: -1: must be an unsigned 32-bit integer in "
        "[0, 4294967295], not an integer (line 6, column 8)",
        "servingInfo: Invalid value: must be a mapping, not a list (line 7, column 14)",
        'dnsNameservers: Invalid value: "1.2.3.4:53": must be a list of strings, not a string '
        "(line 8, column 17)",
    ]
    assert all(problem.is_error for problem in problems)


@pytest.mark.parametrize(
    ("body", "path", "expected"),
    [
        ("masterClientConnectionOverrides: {qps: .nan}\n", "masterClientConnectionOverrides.qps",
         "a finite number"),
        ("masterClientConnectionOverrides: {burst: 2.5}\n", "masterClientConnectionOverrides.burst",
         "an integer"),
        ("authConfig: {authenticationCacheSize: true}\n", "authConfig.authenticationCacheSize",
         "an integer"),
        ("podManifestConfig: {fileCheckIntervalSeconds: 99999999999999999999}\n",
         "podManifestConfig.fileCheckIntervalSeconds", "an integer in"),
        ("podManifestConfig: 5\n", "podManifestConfig", "a mapping or null"),
        ("kubeletArguments: [a]\n", "kubeletArguments", "a mapping of names to lists of strings"),
        ("kubeletArguments: {max-pods: '250'}\n", "kubeletArguments.max-pods",
         "a list of strings"),
        ("servingInfo: {namedCertificates: [x]}\n", "servingInfo.namedCertificates[0]",
         "a mapping"),
        ("volumeConfig: {localQuota: {perFSGroup: [1]}}\n", "volumeConfig.localQuota.perFSGroup",
         "a quantity such as 512Mi"),
        ("nodeName: 2001-12-14\n", "nodeName", "a string, not a timestamp"),
        ("nodeName: !!binary aGVsbG8=\n", "nodeName", "a string, not binary data"),
    ],
)  # fmt: skip
def test_each_kind_is_checked(
    load: Callable[..., Any], body: str, path: str, expected: str
) -> None:
    _, problems = load(body)
    assert [problem.path for problem in problems] == [path]
    assert f"must be {expected}" in problems[0].detail
    assert "(line 3, column " in problems[0].detail


def test_bad_quantity_uses_kubernetes_message(load: Callable[..., Any]) -> None:
    _, problems = load("volumeConfig:\n  localQuota:\n    perFSGroup: lots\n")
    assert rendered(problems) == [
        'volumeConfig.localQuota.perFSGroup: Invalid value: "lots": quantities must match the '
        "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (line 5, column 17)"
    ]


def test_valid_fields_survive_next_to_invalid_ones(load: Callable[..., Any]) -> None:
    config, problems = load(
        "nodeName: node1\nnodeIP: [1]\nnetworkConfig: {mtu: x, networkPluginName: p}\n"
    )
    assert len(problems) == 2
    assert config.node_name == "node1"
    assert config.node_ip == ""
    assert config.network_config.mtu == 1450
    assert config.network_config.network_plugin_name == "p"


def test_invalid_kubelet_argument_drops_only_that_key(load: Callable[..., Any]) -> None:
    config, problems = load("kubeletArguments:\n  max-pods: [250]\n  v: ['4']\n")
    assert [problem.path for problem in problems] == ["kubeletArguments.max-pods[0]"]
    assert dict(config.kubelet_arguments) == {"v": ("4",)}


def test_nulls_decode_to_zero_values_then_defaults(load: Callable[..., Any]) -> None:
    config, problems = load(
        "nodeName: null\ndnsNameservers: null\nimageConfig: null\nauthConfig: null\n"
        "enableUnidling: null\nkubeletArguments: {v: null, x: [null]}\n"
    )
    assert problems == []
    assert config.node_name == ""
    assert config.dns_nameservers == ()
    assert config.image_config.format == ""
    assert config.auth_config.authentication_cache_ttl == "5m"
    assert config.enable_unidling is True
    assert dict(config.kubelet_arguments) == {"v": (), "x": ("",)}


def test_pod_manifest_config_absent_null_and_empty(load: Callable[..., Any]) -> None:
    assert load("")[0].pod_manifest_config is None
    assert load("podManifestConfig: null\n")[0].pod_manifest_config is None
    assert load("podManifestConfig: {}\n")[0].pod_manifest_config == PodManifestConfig()


def test_quantity_is_parsed_to_bytes(load: Callable[..., Any]) -> None:
    config, _ = load("volumeConfig: {localQuota: {perFSGroup: 512Mi}}\n")
    assert config.volume_config.local_quota.per_fs_group == Quantity("512Mi", 512 * 2**20)


def test_numeric_quantity(load: Callable[..., Any]) -> None:
    config, _ = load("volumeConfig: {localQuota: {perFSGroup: 1000}}\n")
    assert config.volume_config.local_quota.per_fs_group == Quantity("1000", 1000)


def test_integers_are_accepted_for_qps(load: Callable[..., Any]) -> None:
    config, problems = load("masterClientConnectionOverrides: {qps: 5, burst: 7}\n")
    assert problems == []
    overrides = config.master_client_connection_overrides
    assert (overrides.qps, overrides.burst) == (5.0, 7)
    assert overrides.content_type == "application/json"


# --- unknown keys ---------------------------------------------------------------------


def test_unknown_key_warns_and_suggests(load: Callable[..., Any]) -> None:
    config, problems = load("nodeNmae: a\nservingInfo:\n  bindAdress: 0.0.0.0:1\n")
    assert rendered(problems) == [
        'nodeNmae: Forbidden: unknown field (line 3, column 1); did you mean "nodeName"?',
        "servingInfo.bindAdress: Forbidden: unknown field (line 5, column 3); did you mean "
        '"bindAddress"?',
    ]
    assert all(problem.severity is Severity.WARNING for problem in problems)
    assert config.serving_info.bind_address == ""


def test_unknown_key_case_insensitive_suggestion(load: Callable[..., Any]) -> None:
    _, problems = load("nodeip: 1.2.3.4\n")
    assert problems[0].detail.endswith('did you mean "nodeIP"?')


def test_unknown_key_without_close_match_has_no_suggestion(load: Callable[..., Any]) -> None:
    _, problems = load("zzzzzz: 1\n")
    assert rendered(problems) == ["zzzzzz: Forbidden: unknown field (line 3, column 1)"]


def test_unknown_key_deep_inside_lists(load: Callable[..., Any]) -> None:
    _, problems = load("servingInfo:\n  namedCertificates:\n  - {names: [a], certfile: x}\n")
    assert rendered(problems) == [
        "servingInfo.namedCertificates[0].certfile: Forbidden: unknown field "
        '(line 5, column 18); did you mean "certFile"?'
    ]


def test_unknown_key_is_an_error_when_strict(load: Callable[..., Any]) -> None:
    _, problems = load("nodeNmae: a\n", strict=True)
    assert [problem.severity for problem in problems] == [Severity.ERROR]


def test_non_string_keys_are_reported_as_go_spells_them(load: Callable[..., Any]) -> None:
    _, problems = load("2: a\ntrue: b\n")
    assert [problem.path for problem in problems] == ["2", "true"]


# --- plugin sections and the adjust hook ------------------------------------------------


def test_known_sections_are_kept_raw_in_extra(load: Callable[..., Any]) -> None:
    config, problems = load(
        "myNetwork:\n  vni: 7\n  nested: [1, 2]\n", known_sections=["myNetwork"]
    )
    assert problems == []
    assert dict(config.extra) == {"myNetwork": {"vni": 7, "nested": [1, 2]}}


def test_known_section_suggested_for_typo(load: Callable[..., Any]) -> None:
    _, problems = load("myNetwrk: {}\n", known_sections=["myNetwork"])
    assert problems[0].detail.endswith('did you mean "myNetwork"?')


def test_known_section_cannot_shadow_an_origin_field(load: Callable[..., Any]) -> None:
    config, _ = load("nodeName: a\n", known_sections=["nodeName"])
    assert config.node_name == "a"
    assert dict(config.extra) == {}


def test_adjust_hook_edits_raw_mapping_before_defaults(load: Callable[..., Any]) -> None:
    seen = []

    def adjust(raw: dict[str, Any], source: str) -> None:
        seen.append((source, "iptablesSyncPeriod" in raw))
        raw["nodeName"] = raw.pop("legacyName")

    config, problems = load("legacyName: migrated\n", adjust=adjust)
    assert problems == []
    assert config.node_name == "migrated"
    assert seen[0][1] is False
    assert seen[0][0].endswith("node-config.yaml")


def test_adjust_hook_errors_propagate(load: Callable[..., Any]) -> None:
    def adjust(raw: dict[str, Any], source: str) -> None:
        raise RuntimeError("plugin bug")

    with pytest.raises(RuntimeError, match="plugin bug"):
        load("", adjust=adjust)


def test_generated_config_needs_no_type_meta_and_keeps_input(tmp_path: Path) -> None:
    raw = {"nodeName": "n", "servingInfo": {"certFile": "server.crt"}}
    config, problems = node_config_from_mapping(raw, base_dir=str(tmp_path))
    assert problems == []
    assert config.source == "<generated>"
    assert config.serving_info.cert_file == str(tmp_path / "server.crt")
    assert raw == {"nodeName": "n", "servingInfo": {"certFile": "server.crt"}}


def test_generated_config_reports_problems_without_positions() -> None:
    _, problems = node_config_from_mapping({"nodeName": 5})
    assert rendered(problems) == ["nodeName: Invalid value: 5: must be a string, not an integer"]

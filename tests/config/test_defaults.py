"""Origin's v1 NodeConfig defaults (:ref:`origin-defaults`) and the protobuf
switch (:ref:`origin-protobuf-defaults`)."""

from __future__ import annotations

import copy

import pytest

from nodehost.config.defaults import apply_v1_defaults, set_protobuf_client_defaults


def test_empty_config_gets_every_default() -> None:
    assert apply_v1_defaults({}) == {
        "masterClientConnectionOverrides": {
            "qps": 10.0,
            "burst": 20,
            "acceptContentTypes": "application/json",
            "contentType": "application/json",
        },
        "networkConfig": {"mtu": 1450},
        "iptablesSyncPeriod": "30s",
        "authConfig": {
            "authenticationCacheTTL": "5m",
            "authenticationCacheSize": 1000,
            "authorizationCacheTTL": "5m",
            "authorizationCacheSize": 1000,
        },
        "enableUnidling": True,
        "dockerConfig": {
            "execHandlerName": "native",
            "dockerShimSocket": "unix:///var/run/dockershim.sock",
            "dockerShimRootDirectory": "/var/lib/dockershim",
        },
        "servingInfo": {"bindNetwork": "tcp4"},
    }


def test_input_is_never_modified() -> None:
    raw = {"servingInfo": {"bindAddress": "0.0.0.0:10250"}, "authConfig": None}
    before = copy.deepcopy(raw)
    apply_v1_defaults(raw)
    set_protobuf_client_defaults(raw)
    assert raw == before


def test_present_client_overrides_keep_zero_qps_and_burst() -> None:
    # Go only defaults qps/burst when the whole section is nil.
    result = apply_v1_defaults({"masterClientConnectionOverrides": {"contentType": "x"}})
    assert result["masterClientConnectionOverrides"] == {
        "contentType": "x",
        "acceptContentTypes": "application/json",
    }


def test_null_client_overrides_get_historical_qps_and_burst() -> None:
    result = apply_v1_defaults({"masterClientConnectionOverrides": None})
    assert result["masterClientConnectionOverrides"]["qps"] == 10.0
    assert result["masterClientConnectionOverrides"]["burst"] == 20


def test_deprecated_network_plugin_name_fills_network_config() -> None:
    result = apply_v1_defaults({"networkPluginName": "redhat/openshift-ovs-subnet"})
    assert result["networkConfig"]["networkPluginName"] == "redhat/openshift-ovs-subnet"


def test_network_config_plugin_name_wins_over_deprecated_one() -> None:
    raw = {"networkPluginName": "old", "networkConfig": {"networkPluginName": "new"}}
    assert apply_v1_defaults(raw)["networkConfig"]["networkPluginName"] == "new"


@pytest.mark.parametrize(
    ("raw", "section", "key", "expected"),
    [
        ({"networkConfig": {"mtu": 0}}, "networkConfig", "mtu", 1450),
        ({"networkConfig": {"mtu": 9000}}, "networkConfig", "mtu", 9000),
        ({"authConfig": {"authenticationCacheTTL": ""}}, "authConfig", "authenticationCacheTTL", "5m"),
        ({"authConfig": {"authorizationCacheTTL": "0"}}, "authConfig", "authorizationCacheTTL", "0"),
        ({"authConfig": {"authenticationCacheSize": 0}}, "authConfig", "authenticationCacheSize", 1000),
        ({"authConfig": {"authorizationCacheSize": -1}}, "authConfig", "authorizationCacheSize", -1),
        ({"dockerConfig": {"execHandlerName": ""}}, "dockerConfig", "execHandlerName", "native"),
        ({"dockerConfig": {"execHandlerName": "nsenter"}}, "dockerConfig", "execHandlerName", "nsenter"),
        ({"servingInfo": {"bindNetwork": None}}, "servingInfo", "bindNetwork", "tcp4"),
        ({"servingInfo": {"bindNetwork": "tcp"}}, "servingInfo", "bindNetwork", "tcp"),
    ],
)  # fmt: skip
def test_zero_values_are_defaulted_and_set_values_kept(
    raw: dict, section: str, key: str, expected: object
) -> None:
    assert apply_v1_defaults(raw)[section][key] == expected


@pytest.mark.parametrize(
    ("raw", "key", "expected"),
    [
        ({"iptablesSyncPeriod": ""}, "iptablesSyncPeriod", "30s"),
        ({"iptablesSyncPeriod": "1m"}, "iptablesSyncPeriod", "1m"),
        ({"enableUnidling": None}, "enableUnidling", True),
        ({"enableUnidling": False}, "enableUnidling", False),
    ],
)
def test_top_level_defaults(raw: dict, key: str, expected: object) -> None:
    assert apply_v1_defaults(raw)[key] == expected


def test_value_of_wrong_type_is_left_for_type_checking() -> None:
    raw = {"networkConfig": {"mtu": ""}, "authConfig": ["not", "a", "mapping"]}
    result = apply_v1_defaults(raw)
    assert result["networkConfig"]["mtu"] == ""
    assert result["authConfig"] == ["not", "a", "mapping"]


def test_fields_origin_does_not_default_stay_unset() -> None:
    result = apply_v1_defaults({})
    for key in ("nodeName", "dnsDomain", "dnsIP", "imageConfig", "podManifestConfig"):
        assert key not in result
    assert "bindAddress" not in result["servingInfo"]


def test_protobuf_switch_doubles_defaulted_qps_and_burst() -> None:
    result = set_protobuf_client_defaults(apply_v1_defaults({}))
    assert result["masterClientConnectionOverrides"] == {
        "qps": 20.0,
        "burst": 40,
        "acceptContentTypes": "application/vnd.kubernetes.protobuf,application/json",
        "contentType": "application/vnd.kubernetes.protobuf",
    }


def test_protobuf_switch_on_raw_config_defaults_first() -> None:
    overrides = set_protobuf_client_defaults({})["masterClientConnectionOverrides"]
    assert (overrides["qps"], overrides["burst"]) == (20.0, 40)

"""kube-proxy's flag table and how it reads its healthz address."""

from __future__ import annotations

import pytest

from nodehost.plugins.proxy import configfile, flags

FLAGS = flags.KUBE_PROXY_FLAGS


@pytest.mark.parametrize(
    ("name", "config_field"),
    [
        ("proxy-mode", "mode"),
        ("bind-address", "bindAddress"),
        ("iptables-sync-period", "iptables.syncPeriod"),
        ("kubeconfig", "clientConnection.kubeconfig"),
        ("kube-api-qps", "clientConnection.qps"),
        ("hostname-override", "hostnameOverride"),
        ("healthz-bind-address", "healthzBindAddress"),
        ("metrics-bind-address", "metricsBindAddress"),
        ("oom-score-adj", "oomScoreAdj"),
        ("iptables-masquerade-bit", "iptables.masqueradeBit"),
        ("conntrack-max-per-core", "conntrack.maxPerCore"),
    ],
)
def test_flags_name_their_kube_proxy_configuration_field(name: str, config_field: str) -> None:
    assert FLAGS.lookup(name).config_field == config_field


@pytest.mark.parametrize("name", ["master", "config", "cleanup", "init-only", "v", "vmodule"])
def test_flags_without_a_field_stay_on_the_command_line(name: str) -> None:
    assert FLAGS.lookup(name).config_field == ""


def test_every_config_field_starts_with_a_known_top_level_field() -> None:
    for flag in FLAGS:
        if flag.config_field:
            assert flag.config_field.split(".")[0] in configfile.KUBE_PROXY_CONFIG_FIELDS, flag.name


def test_port_flags_are_deprecated_in_favour_of_addresses() -> None:
    assert "--healthz-bind-address" in FLAGS.lookup("healthz-port").deprecated
    assert "--metrics-bind-address" in FLAGS.lookup("metrics-port").deprecated


@pytest.mark.parametrize("name", ["udp-timeout", "resource-container", "cleanup-iptables"])
def test_userspace_era_flags_are_removed(name: str) -> None:
    assert FLAGS.lookup(name) is None and name in FLAGS.removed


def test_proxy_port_range_is_still_accepted_as_a_deprecated_no_op() -> None:
    parsed = FLAGS.parse_args(["--proxy-port-range=30000-30100"])
    assert parsed.warnings == [
        "Flag --proxy-port-range has been deprecated, "
        "This flag has no effect and will be removed in a future release."
    ]
    assert FLAGS.lookup("proxy-port-range").config_field == ""


def test_proxy_mode_accepts_any_text_like_go_proxy_mode() -> None:
    assert FLAGS.resolve({"proxy-mode": ["userspace"]}).errors == []


@pytest.mark.parametrize(
    ("healthz", "bind", "expected"),
    [
        ("", "", ("0.0.0.0", 10256)),
        ("", "fd00::1", ("::", 10256)),
        ("127.0.0.1", "", ("127.0.0.1", 10256)),
        ("127.0.0.1:18080", "", ("127.0.0.1", 18080)),
        ("[::1]:18080", "", ("::1", 18080)),
    ],
)
def test_healthz_address_follows_kube_proxy_defaulting(
    healthz: str, bind: str, expected: tuple[str, int]
) -> None:
    assert configfile.kube_proxy_healthz_address(healthz, bind) == expected


def test_check_configuration_rejects_an_unsupported_mode() -> None:
    document = {
        "apiVersion": configfile.KUBE_PROXY_CONFIG_API_VERSION,
        "kind": configfile.KUBE_PROXY_CONFIG_KIND,
        "mode": "userspace",
    }
    assert configfile.check_kube_proxy_configuration(document) == [
        'mode: Unsupported value: "userspace": supported values: "iptables", "ipvs", "nftables"'
    ]


def test_check_configuration_checks_nested_types() -> None:
    document = {
        "apiVersion": configfile.KUBE_PROXY_CONFIG_API_VERSION,
        "kind": configfile.KUBE_PROXY_CONFIG_KIND,
        "clientConnection": {"qps": "fast"},
    }
    assert configfile.check_kube_proxy_configuration(document) == [
        "clientConnection.qps: expected number, got 'fast'"
    ]

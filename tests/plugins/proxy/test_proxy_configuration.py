"""kube-proxy's settings: Origin's proxy build (:ref:`origin-proxy`) row by row, proxyArguments
overrides, the file and the flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodehost.plugins.proxy import configuration
from nodehost.plugins.proxy.configfile import check_kube_proxy_configuration as check_configuration


@pytest.fixture
def launch(make_config):
    """The launch (document, flags, values) for a config built from top-level changes."""

    def compute(**changes):
        merged = configuration.proxy_arguments(make_config(**changes))
        return configuration.launch_arguments(merged.arguments)

    return compute


def test_the_document_is_a_kube_proxy_configuration(launch) -> None:
    document = launch().document
    assert list(document)[:2] == ["apiVersion", "kind"]
    assert document["apiVersion"] == "kubeproxy.config.k8s.io/v1alpha1"
    assert document["kind"] == "KubeProxyConfiguration"
    assert check_configuration(document) == []


def test_mode_is_iptables(launch) -> None:
    assert launch().document["mode"] == "iptables"


def test_bind_address_is_the_ip_of_the_serving_bind_address(launch) -> None:
    assert launch().document["bindAddress"] == "10.0.0.2"


def test_iptables_sync_period_comes_from_node_config(launch) -> None:
    assert launch().document["iptables"]["syncPeriod"] == "45s"


def test_kubeconfig_is_the_master_kubeconfig(launch, tmp_path: Path) -> None:
    connection = launch().document["clientConnection"]
    assert connection["kubeconfig"] == str(tmp_path / "node" / "node.kubeconfig")


def test_client_connection_takes_the_master_overrides(launch) -> None:
    connection = launch(
        masterClientConnectionOverrides={"qps": 25, "burst": 50, "contentType": "application/x"}
    ).document["clientConnection"]
    assert (connection["qps"], connection["burst"], connection["contentType"]) == (
        25.0,
        50,
        "application/x",
    )


def test_hostname_override_is_the_node_name(launch) -> None:
    assert launch().document["hostnameOverride"] == "node1.example.com"


def test_oom_score_adjustment_and_masquerade_bit_are_zero_as_in_origin(launch) -> None:
    document = launch().document
    assert document["oomScoreAdj"] == 0
    assert document["iptables"]["masqueradeBit"] == 0


def test_healthz_is_kube_proxys_default_address(launch) -> None:
    assert launch().document["healthzBindAddress"] == "0.0.0.0:10256"


def test_metrics_keep_kube_proxys_loopback_default_unless_asked_for(launch) -> None:
    assert "metricsBindAddress" not in launch().document
    document = launch(proxyArguments={"metrics-bind-address": ["127.0.0.1:19249"]}).document
    assert document["metricsBindAddress"] == "127.0.0.1:19249"


def test_a_bind_address_with_a_host_name_cannot_be_used(make_config) -> None:
    config = make_config(servingInfo={"bindAddress": "node1:10250"})
    with pytest.raises(configuration.ArgumentsError, match="kube-proxy needs an IP address"):
        configuration.proxy_arguments(config)


# --- overrides -------------------------------------------------------------------------------


def test_proxy_arguments_with_a_config_field_go_into_the_file(launch) -> None:
    result = launch(proxyArguments={"proxy-mode": ["ipvs"], "ipvs-scheduler": ["rr"]})
    assert result.document["mode"] == "ipvs"
    assert result.document["ipvs"] == {"scheduler": "rr"}
    assert result.flags == ()


def test_proxy_arguments_without_a_field_stay_on_the_command_line(launch) -> None:
    result = launch(proxyArguments={"master": ["https://m:8443"], "v": ["4"]})
    assert result.flags == ("--master=https://m:8443", "--v=4")


def test_an_empty_list_removes_a_default(launch) -> None:
    assert "oomScoreAdj" not in launch(proxyArguments={"oom-score-adj": []}).document


def test_healthz_port_sets_the_port_of_the_healthz_address(launch) -> None:
    document = launch(proxyArguments={"healthz-port": ["18256"]}).document
    assert document["healthzBindAddress"] == "0.0.0.0:18256"


def test_healthz_port_zero_empties_the_address(launch) -> None:
    assert launch(proxyArguments={"healthz-port": ["0"]}).document["healthzBindAddress"] == ""


def test_metrics_port_applies_to_the_given_metrics_address(launch) -> None:
    document = launch(
        proxyArguments={"metrics-bind-address": ["127.0.0.2"], "metrics-port": ["9"]}
    ).document
    assert document["metricsBindAddress"] == "127.0.0.2:9"


def test_removed_userspace_flags_are_dropped_and_reported(make_config) -> None:
    merged = configuration.proxy_arguments(make_config(proxyArguments={"udp-timeout": ["250ms"]}))
    assert "udp-timeout" not in merged.arguments
    assert [found.key for found in merged.translations] == ["udp-timeout"]


def test_proxy_port_range_is_passed_on_as_kube_proxy_still_accepts_it(make_config) -> None:
    merged = configuration.proxy_arguments(
        make_config(proxyArguments={"proxy-port-range": ["30000-30100"]})
    )
    assert merged.arguments["proxy-port-range"] == ["30000-30100"]
    assert not merged.translations


def test_an_invalid_value_fails_the_launch_naming_it(make_config) -> None:
    merged = configuration.proxy_arguments(make_config(proxyArguments={"conntrack-min": ["x"]}))
    with pytest.raises(configuration.ArgumentsError) as caught:
        configuration.launch_arguments(merged.arguments)
    assert str(caught.value) == (
        "invalid kube-proxy arguments: conntrack-min='x' could not be set: "
        'strconv.ParseInt: parsing "x": invalid syntax'
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, ("0.0.0.0", 10256)),
        ({"healthz-bind-address": ["127.0.0.1:18080"]}, ("127.0.0.1", 18080)),
        ({"healthz-bind-address": ["127.0.0.1"]}, ("127.0.0.1", 10256)),
        ({"healthz-port": ["0"]}, ("0.0.0.0", 10256)),
    ],
)
def test_healthz_address_is_where_kube_proxy_will_serve(make_config, arguments, expected) -> None:
    merged = configuration.proxy_arguments(make_config(proxyArguments=arguments))
    values = configuration.launch_arguments(merged.arguments).values
    assert configuration.healthz_address(values) == expected

"""The dns component: its record, settings from NodeConfig, validation, plan and source hook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dnsrun import RECORDS, write_records

from nodehost import ValidationScope
from nodehost.component import PlanContext, ReportedProbe, TaskSpec
from nodehost.config import node_config_from_mapping
from nodehost.errors import InvalidSetting, RuntimeFailure
from nodehost.plugins.dns import NodeDns, nodehost_components, nodehost_validate_config
from nodehost.plugins.dns.settings import SECTION, SettingsError, settings_from_config

NODE = {
    "nodeName": "node1.example.com",
    "nodeIP": "10.0.0.2",
    "servingInfo": {"bindAddress": "10.0.0.2:10250"},
    "masterKubeConfig": "node.kubeconfig",
    "dnsBindAddress": "127.0.0.1:53",
}


@pytest.fixture
def node_dir(tmp_path: Path) -> Path:
    path = tmp_path / "node"
    path.mkdir()
    return path


@pytest.fixture
def host_resolv_conf(tmp_path: Path) -> str:
    path = tmp_path / "host-resolv.conf"
    path.write_text("search example\nnameserver 192.0.2.53\nnameserver 127.0.0.1\n")
    return str(path)


def config_of(node_dir: Path, **changes: Any) -> Any:
    config, problems = node_config_from_mapping(
        {**NODE, **changes}, base_dir=str(node_dir), known_sections=[SECTION, "bridgeNetwork"]
    )
    assert not [problem for problem in problems if problem.is_error], problems
    return config


def context_of(config: Any, hooks: Any = None) -> PlanContext:
    (record,) = nodehost_components()
    return PlanContext(
        config=config,
        options=None,
        record=record,
        selected=frozenset({"dns"}),
        state_dir="/nonexistent",
        network_providers={},
        hooks=hooks,
    )


def test_the_record_is_a_default_in_cluster_component() -> None:
    (record,) = nodehost_components()
    assert (record.name, record.default) == ("dns", True)
    assert record.validation_scope is ValidationScope.IN_CLUSTER


# --- settings -------------------------------------------------------------------------------------


def test_the_cluster_domain_is_the_kubelets_then_dns_domain_then_cluster_local(node_dir) -> None:
    assert settings_from_config(config_of(node_dir)).domain == "cluster.local"
    assert settings_from_config(config_of(node_dir, dnsDomain="Corp.Example.")).domain == (
        "corp.example"
    )
    kubelet = {"cluster-domain": ["kube.local"]}
    config = config_of(node_dir, dnsDomain="corp.example", kubeletArguments=kubelet)
    assert settings_from_config(config).domain == "kube.local"


def test_upstreams_are_dns_nameservers_then_the_recursive_resolv_conf(node_dir) -> None:
    (node_dir / "resolv.conf").write_text("nameserver 192.0.2.2\nnameserver fd00::2\n")
    config = config_of(
        node_dir, dnsNameservers=["192.0.2.1:5353"], dnsRecursiveResolvConf="resolv.conf"
    )
    assert settings_from_config(config).upstreams == (
        ("192.0.2.1", 5353),
        ("192.0.2.2", 53),
        ("fd00::2", 53),
    )


def test_without_upstreams_the_hosts_resolv_conf_is_used_but_never_this_server(
    node_dir, host_resolv_conf
) -> None:
    settings = settings_from_config(config_of(node_dir), host_resolv_conf)
    assert settings.upstreams == (("192.0.2.53", 53),)
    wildcard = config_of(node_dir, dnsBindAddress="0.0.0.0:53")
    assert settings_from_config(wildcard, host_resolv_conf).upstreams == (("192.0.2.53", 53),)


def test_an_unreadable_recursive_resolv_conf_is_origins_error(node_dir) -> None:
    config = config_of(node_dir, dnsRecursiveResolvConf="missing.conf")
    with pytest.raises(SettingsError) as caught:
        settings_from_config(config)
    assert caught.value.problem.path == "dnsRecursiveResolvConf"
    assert "could not start DNS, unable to read config file: No such file" in str(caught.value)


def test_the_dns_section_sets_the_records_file_sources_and_timeout(node_dir) -> None:
    section = {"recordsFile": "records.yaml", "recordSources": ["file"], "forwardTimeout": "1500ms"}
    settings = settings_from_config(config_of(node_dir, **{SECTION: section}))
    assert settings.records_file == str(node_dir / "records.yaml")
    assert settings.record_sources == ("file",)
    assert settings.forward_timeout == 1.5


@pytest.mark.parametrize(
    ("section", "path"),
    [
        ({"recordFile": "x"}, f"{SECTION}.recordFile"),
        ({"recordSources": "file"}, f"{SECTION}.recordSources"),
        ({"forwardTimeout": "2"}, f"{SECTION}.forwardTimeout"),
        ({"forwardTimeout": "0s"}, f"{SECTION}.forwardTimeout"),
        ({"recordsFile": 3}, f"{SECTION}.recordsFile"),
        ({"reverseCIDRs": "10.0.0.0/8"}, f"{SECTION}.reverseCIDRs"),
        ({"reverseCIDRs": ["172.30.0.0/16", "172.30.0.1"]}, f"{SECTION}.reverseCIDRs[1]"),
        ({"reverseCIDRs": ["0.0.0.0/0"]}, f"{SECTION}.reverseCIDRs[0]"),
    ],
)
def test_a_bad_dns_section_is_reported_at_its_field(node_dir, section, path) -> None:
    problems = nodehost_validate_config(
        config=config_of(node_dir, **{SECTION: section}), selected=frozenset({"dns"})
    )
    assert [problem.path for problem in problems] == [path]


def test_reverse_zones_are_the_networks_the_config_names_unless_listed(node_dir) -> None:
    config = config_of(
        node_dir,
        bridgeNetwork={"podCIDR": "10.128.1.0/24", "serviceNetworkCIDR": "172.30.0.0/16"},
        proxyArguments={"cluster-cidr": ["10.128.0.0/14,fd00:10::/56"]},
        kubeletArguments={"pod-cidr": ["10.128.1.0/24"]},
    )
    assert [str(net) for net in settings_from_config(config).reverse_networks] == [
        "172.30.0.0/16", "10.128.1.0/24", "10.128.0.0/14", "fd00:10::/56",
    ]  # fmt: skip
    listed = config_of(node_dir, bridgeNetwork={"podCIDR": "10.128.1.0/24"},
                       **{SECTION: {"reverseCIDRs": ["fd00::/64"]}})  # fmt: skip
    assert [str(net) for net in settings_from_config(listed).reverse_networks] == ["fd00::/64"]
    none = config_of(node_dir, bridgeNetwork={"podCIDR": "10.128.1.0/24"},
                     **{SECTION: {"reverseCIDRs": []}})  # fmt: skip
    assert settings_from_config(none).reverse_networks == ()


def test_the_apex_name_server_is_the_dns_ip_else_the_bind_address(node_dir) -> None:
    assert settings_from_config(config_of(node_dir, dnsIP="10.0.0.2")).ns_addresses == ("10.0.0.2",)
    assert settings_from_config(config_of(node_dir)).ns_addresses == ("127.0.0.1",)
    unbound = config_of(node_dir, dnsBindAddress="0.0.0.0:53")
    assert settings_from_config(unbound).ns_addresses == ()


def test_a_bad_records_file_is_reported_at_records_file(node_dir) -> None:
    (node_dir / "records.yaml").write_text("services: {}\n")
    config = config_of(node_dir, **{SECTION: {"recordsFile": "records.yaml"}})
    (problem,) = nodehost_validate_config(config=config, selected=frozenset({"dns"}))
    assert problem.path == f"{SECTION}.recordsFile"
    assert "services: must be a list" in problem.render()


def test_nothing_is_checked_when_the_server_would_not_run(node_dir) -> None:
    config = config_of(node_dir, dnsRecursiveResolvConf="missing.conf")
    assert nodehost_validate_config(config=config, selected=frozenset({"kubelet"})) == []
    unbound = config_of(node_dir, dnsBindAddress="", dnsRecursiveResolvConf="missing.conf")
    assert nodehost_validate_config(config=unbound, selected=frozenset({"dns"})) == []


# --- plan ----------------------------------------------------------------------------------------


def test_without_a_bind_address_the_component_is_inactive(node_dir) -> None:
    plan = NodeDns().plan(context_of(config_of(node_dir, dnsBindAddress="")))
    assert plan.run is None
    assert plan.inactive_reason == "dnsBindAddress is not set"


def test_the_plan_is_a_task_that_reports_its_own_readiness(node_dir) -> None:
    write_records(node_dir / "records.yaml", RECORDS)
    section = {"recordsFile": "records.yaml"}
    config = config_of(node_dir, dnsNameservers=["192.0.2.1:53"], **{SECTION: section})
    plan = NodeDns().plan(context_of(config))
    assert isinstance(plan.run, TaskSpec)
    assert isinstance(plan.run.readiness, ReportedProbe)
    assert plan.run.describe() == "DNS server on 127.0.0.1:53 (UDP and TCP) for cluster.local"
    assert plan.notes == (
        "cluster domain: cluster.local",
        "record sources: file, kubernetes",
        "forwards to: 192.0.2.1:53",
        "answers the reverse zones of: no network (PTR of known IPs only)",
    )


def test_without_a_master_kubeconfig_or_a_service_account_the_plan_fails(
    node_dir, monkeypatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    config = config_of(node_dir, masterKubeConfig="", dnsNameservers=["192.0.2.1:53"])
    with pytest.raises(RuntimeFailure) as raised:
        NodeDns().plan(context_of(config))
    assert str(raised.value) == (
        "component dns: record source 'kubernetes' could not be set up: there is no kubeconfig "
        "(masterKubeConfig is empty: the network-only selection runs against --kubeconfig) and "
        "no in-cluster service account (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are "
        "not set); give --kubeconfig FILE"
    )


def test_with_no_record_source_named_no_source_runs(node_dir) -> None:
    config = config_of(node_dir, **{SECTION: {"recordSources": []}})
    plan = NodeDns().plan(context_of(config))
    assert plan.notes[1] == "record sources: none (cluster names are NXDOMAIN)"


def test_naming_an_unknown_record_source_fails_the_plan(node_dir) -> None:
    config = config_of(node_dir, **{SECTION: {"recordSources": ["etcd"]}})
    with pytest.raises(InvalidSetting) as caught:
        NodeDns().plan(context_of(config))
    assert [problem.render() for problem in caught.value.problems] == [
        'dnsServerConfig.recordSources: Unsupported value: "etcd": supported values: "file", '
        '"kubernetes"'
    ]


def test_naming_the_file_source_without_a_file_fails_the_plan(node_dir) -> None:
    config = config_of(node_dir, **{SECTION: {"recordSources": ["file"]}})
    with pytest.raises(InvalidSetting, match=r"nothing to serve .*set dnsServerConfig.recordsFile"):
        NodeDns().plan(context_of(config))


def test_record_sources_come_through_the_hook_facade(node_dir) -> None:
    from nodehost.pluginhost.manager import LoadOptions, PluginHost

    hooks = PluginHost().load(LoadOptions(entry_points=False)).hooks
    provided = hooks.records("nodehost_dns_record_sources")
    assert [(item.record.name, item.plugin) for item in provided] == [
        ("file", "dns"),
        ("kubernetes", "dns"),
    ]
    write_records(node_dir / "records.yaml", RECORDS)
    config = config_of(node_dir, **{SECTION: {"recordsFile": "records.yaml"}})
    plan = NodeDns().plan(context_of(config, hooks))
    assert plan.notes[1] == "record sources: file, kubernetes"


def test_a_source_name_provided_twice_is_an_error_naming_both(node_dir) -> None:
    from nodehost import hookimpl
    from nodehost.pluginhost.manager import LoadOptions, PluginHost
    from nodehost.plugins.dns.hookspecs import DnsRecordSourceRecord

    class Twin:
        @hookimpl
        def nodehost_dns_record_sources(self):
            return [DnsRecordSourceRecord("file", "another file source", lambda context: None)]

    host = PluginHost().load(LoadOptions(entry_points=False))
    host.register(Twin(), "twin")
    with pytest.raises(RuntimeFailure, match=r"'file' is provided twice: by plugin 'twin'"):
        NodeDns().plan(context_of(config_of(node_dir), host.hooks))


def test_every_problem_of_the_section_is_reported_at_once(node_dir) -> None:
    from nodehost.plugins.dns import nodehost_validate_config

    config = config_of(
        node_dir,
        **{
            SECTION: {
                "recordsFile": 5,
                "recordSources": "file",
                "forwardTimeout": "3",
                "bogus": 1,
            }
        },
    )
    paths = {p.path for p in nodehost_validate_config(config=config, selected=frozenset({"dns"}))}
    assert {
        f"{SECTION}.bogus",
        f"{SECTION}.recordsFile",
        f"{SECTION}.recordSources",
        f"{SECTION}.forwardTimeout",
    } <= paths

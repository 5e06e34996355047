"""The proxy component's record, plan and validation hook."""

from __future__ import annotations

import pytest
import yaml

from nodehost import Severity, ValidationScope
from nodehost.component import HttpProbe
from nodehost.errors import InvalidSetting
from nodehost.plugins.proxy import CONFIG_FILE_NAME, Proxy, nodehost_components
from nodehost.plugins.proxy import nodehost_validate_config as validate
from nodehost.plugins.proxy.configfile import check_kube_proxy_configuration as check_configuration


def test_the_record_is_a_default_network_component() -> None:
    (record,) = nodehost_components()
    assert record.name == "proxy"
    assert record.default is True
    assert record.groups == ("network",)
    assert record.validation_scope is ValidationScope.IN_CLUSTER
    assert isinstance(record.component, Proxy)


def test_the_plan_runs_kube_proxy_with_its_config_file(make_config, make_context) -> None:
    context = make_context(make_config(proxyArguments={"v": ["2"]}))
    plan = Proxy().plan(context)
    path = f"{context.state_dir}/{CONFIG_FILE_NAME}"
    assert plan.run.argv == ("kube-proxy", f"--config={path}", "--v=2")
    assert [spec.path for spec in plan.files] == [path, f"{context.state_dir}/teardown.json"]


def test_teardown_has_kube_proxy_remove_its_rules(make_config, make_context) -> None:
    import json

    plan = Proxy().plan(make_context(make_config()))
    record = json.loads(plan.files[1].content)
    assert record == {"unmount_below": [], "commands": [["kube-proxy", "--cleanup"]]}
    assert check_configuration(yaml.safe_load(plan.files[0].content)) == []


def test_accepted_content_types_reach_the_config_file(make_config, make_context) -> None:
    """No flag sets clientConnection.acceptContentTypes; the plugin writes it into the file."""
    overrides = {"acceptContentTypes": "application/vnd.kubernetes.protobuf,application/json"}
    plan = Proxy().plan(make_context(make_config(masterClientConnectionOverrides=overrides)))
    document = yaml.safe_load(plan.files[0].content)
    assert document["clientConnection"]["acceptContentTypes"] == overrides["acceptContentTypes"]
    assert check_configuration(document) == []


def test_readiness_is_kube_proxys_healthz_on_loopback(make_config, make_context) -> None:
    plan = Proxy().plan(make_context(make_config()))
    assert plan.run.readiness == HttpProbe(url="http://127.0.0.1:10256/healthz")


def test_a_bad_proxy_argument_fails_the_plan_naming_the_component(
    make_config, make_context
) -> None:
    context = make_context(make_config(proxyArguments={"conntrack-min": ["x"]}))
    with pytest.raises(InvalidSetting, match=r"^proxyArguments: Invalid value: invalid kube-proxy"):
        Proxy().plan(context)


# --- validation --------------------------------------------------------------------------------


def problems_of(config, selected=frozenset({"proxy"}), scope=ValidationScope.NODE):
    return [
        (p.severity, p.render()) for p in validate(config=config, scope=scope, selected=selected)
    ]


@pytest.mark.parametrize("selected", [frozenset({"proxy"}), frozenset({"kubelet"})])
def test_a_numeric_port_argument_must_be_a_port_whether_or_not_the_proxy_runs(
    make_config, selected
) -> None:
    config = make_config(proxyArguments={"healthz-port": ["99999"]})
    assert problems_of(config, selected) == [
        (
            Severity.ERROR,
            'proxyArguments.healthz-port[0]: Invalid value: "99999": '
            "must be between 0 and 65535, inclusive",
        )
    ]


def test_the_port_rule_is_not_one_of_the_network_scope(make_config) -> None:
    config = make_config(proxyArguments={"healthz-port": ["99999"]})
    assert problems_of(config, frozenset({"sdn"}), ValidationScope.NETWORK) == []


def test_an_unknown_proxy_argument_is_reported_under_proxy_arguments(make_config) -> None:
    assert problems_of(make_config(proxyArguments={"no-such": ["1"]})) == [
        (Severity.ERROR, 'proxyArguments.no-such: Invalid value: "no-such": is not a valid flag')
    ]


def test_a_bad_value_is_reported_with_the_go_error(make_config) -> None:
    assert problems_of(make_config(proxyArguments={"iptables-sync-period": ["5"]})) == [
        (
            Severity.ERROR,
            'proxyArguments.iptables-sync-period: Invalid value: "5": could not be set: '
            'time: missing unit in duration "5"',
        )
    ]


def test_a_proxy_mode_current_kube_proxy_lacks_is_unsupported(make_config) -> None:
    assert problems_of(make_config(proxyArguments={"proxy-mode": ["userspace"]})) == [
        (
            Severity.ERROR,
            'proxyArguments.proxy-mode: Unsupported value: "userspace": supported values: '
            '"iptables", "ipvs", "nftables"',
        )
    ]


def test_a_removed_flag_is_a_warning(make_config) -> None:
    ((severity, text),) = problems_of(make_config(proxyArguments={"udp-timeout": ["250ms"]}))
    assert severity is Severity.WARNING
    assert text.startswith("proxyArguments.udp-timeout: Forbidden: removed in v1.29")


def test_a_flag_that_makes_kube_proxy_exit_is_forbidden(make_config) -> None:
    ((severity, text),) = problems_of(make_config(proxyArguments={"cleanup": ["true"]}))
    assert severity is Severity.ERROR
    assert text.startswith("proxyArguments.cleanup: Forbidden: makes kube-proxy remove its rules")


def test_a_host_name_bind_address_is_reported_for_the_proxy(make_config) -> None:
    assert problems_of(make_config(servingInfo={"bindAddress": "node1:10250"})) == [
        (
            Severity.ERROR,
            'servingInfo.bindAddress: Invalid value: "node1:10250": must be an IP address and '
            "port: it becomes kube-proxy's bindAddress",
        )
    ]


def test_nothing_is_checked_when_the_proxy_is_not_selected(make_config) -> None:
    config = make_config(proxyArguments={"no-such": ["1"]})
    assert problems_of(config, selected=frozenset({"kubelet"})) == []


def test_valid_proxy_arguments_give_no_problems(make_config) -> None:
    config = make_config(proxyArguments={"proxy-mode": ["nftables"], "masquerade-all": ["true"]})
    assert problems_of(config) == []

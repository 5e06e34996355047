"""The kubelet component's record and plan: command line, config file, readiness."""

from __future__ import annotations

import signal

import pytest
import yaml

from nodehost import ValidationScope
from nodehost.component import HttpProbe, StartedProbe
from nodehost.errors import InvalidSetting, PluginError
from nodehost.plugins.kubelet import CONFIG_FILE_NAME, Kubelet, nodehost_components
from nodehost.plugins.kubelet.arguments import kubelet_flags_line
from nodehost.plugins.kubelet.configfile import check_kubelet_configuration as check_configuration


def test_the_record_is_a_default_node_component_after_sdn_and_runtime() -> None:
    (record,) = nodehost_components()
    assert record.name == "kubelet"
    assert record.default is True
    assert record.groups == ()
    assert record.after == ("sdn", "runtime")
    assert record.validation_scope is ValidationScope.NODE
    assert record.write_flags is True
    assert isinstance(record.component, Kubelet)


def test_the_plan_runs_the_kubelet_with_its_config_file_first(make_config, make_context) -> None:
    context = make_context(make_config())
    plan = Kubelet().plan(context)
    path = f"{context.state_dir}/{CONFIG_FILE_NAME}"
    assert plan.run.argv[:2] == ("kubelet", f"--config={path}")
    assert "--hostname-override=node1.example.com" in plan.run.argv
    assert [spec.path for spec in plan.files] == [path, f"{context.state_dir}/teardown.json"]


def test_teardown_unmounts_below_the_kubelet_root(make_config, make_context) -> None:
    """The record teardown reads: the pod volumes' mounts go with a teardown."""
    import json

    context = make_context(make_config())
    record = json.loads(Kubelet().plan(context).files[1].content)
    assert record == {"unmount_below": [context.config.volume_directory], "commands": []}


def test_the_config_file_is_one_the_kubelet_accepts(make_config, make_context) -> None:
    plan = Kubelet().plan(make_context(make_config(kubeletArguments={"max-pods": ["90"]})))
    document = yaml.safe_load(plan.files[0].content)
    assert check_configuration(document) == []
    assert document["maxPods"] == 90
    assert document["healthzPort"] == 10248


def test_the_config_file_names_the_node_config_it_came_from(make_config, make_context) -> None:
    config = make_config()
    plan = Kubelet().plan(make_context(config))
    assert plan.files[0].content.decode().splitlines()[0] == (
        f"# Written by nodehost from {config.source}; it is rewritten at each start."
    )


def test_the_kubelet_may_replace_nodehost_and_stops_on_sigterm(make_config, make_context) -> None:
    run = Kubelet().plan(make_context(make_config())).run
    assert run.exec_allowed is True
    assert run.stop_signal == signal.SIGTERM


def test_readiness_is_the_kubelets_healthz(make_config, make_context) -> None:
    readiness = Kubelet().plan(make_context(make_config())).run.readiness
    assert readiness == HttpProbe(url="http://127.0.0.1:10248/healthz")


def test_readiness_follows_a_moved_healthz_and_probes_loopback_for_any_address(
    make_config, make_context
) -> None:
    config = make_config(
        kubeletArguments={"healthz-port": ["18248"], "healthz-bind-address": ["0.0.0.0"]}
    )
    readiness = Kubelet().plan(make_context(config)).run.readiness
    assert readiness.url == "http://127.0.0.1:18248/healthz"


def test_readiness_is_started_when_healthz_is_off(make_config, make_context) -> None:
    plan = Kubelet().plan(make_context(make_config(kubeletArguments={"healthz-port": ["0"]})))
    assert isinstance(plan.run.readiness, StartedProbe)
    assert "healthz is off (healthz-port 0): ready once started" in plan.notes


def test_contributions_come_from_the_hook_facade_with_config_and_selection(
    make_config, make_context
) -> None:
    config = make_config()
    context = make_context(config, {"max-pods": ["42"]})
    document = yaml.safe_load(Kubelet().plan(context).files[0].content)
    assert document["maxPods"] == 42
    assert context.hooks.calls == [(config, frozenset({"kubelet"}))]


def test_a_contribution_that_breaks_security_fails_the_plan_naming_it(
    make_config, make_context
) -> None:
    context = make_context(make_config(), {"tls-min-version": []})
    with pytest.raises(InvalidSetting) as caught:
        Kubelet().plan(context)
    assert str(caught.value).startswith(
        "kubeletArguments: Invalid value: the kubelet would run without required security "
        "settings: "
        "--tls-min-version="
    )


def test_a_contribution_that_is_not_a_kubelet_flag_fails_the_plan(
    make_config, make_context
) -> None:
    with pytest.raises(InvalidSetting, match="no-such-flag is not a kubelet flag"):
        Kubelet().plan(make_context(make_config(), {"no-such-flag": ["1"]}))


def test_an_unparseable_bind_address_fails_the_plan(make_config, make_context) -> None:
    context = make_context(make_config(servingInfo={"bindAddress": "nohost"}))
    with pytest.raises(InvalidSetting, match="kubeletArguments: Invalid value: cannot parse node"):
        Kubelet().plan(context)


def test_translated_kubelet_arguments_are_noted_in_the_plan(make_config, make_context) -> None:
    plan = Kubelet().plan(make_context(make_config(kubeletArguments={"network-plugin": ["cni"]})))
    assert (
        "kubeletArguments network-plugin: removed in v1.24 (CNI is configured in the container "
        "runtime); nodehost drops it" in plan.notes
    )


def test_flag_arguments_are_the_write_flags_line(make_config, make_context) -> None:
    config = make_config()
    flags = Kubelet().flag_arguments(make_context(config))
    assert " ".join(flags) == kubelet_flags_line(config, {})
    assert flags == tuple(sorted(flags, key=lambda flag: flag.split("=", 1)[0]))


def test_planning_writes_nothing(make_config, make_context, tmp_path) -> None:
    context = make_context(make_config())
    Kubelet().plan(context)
    Kubelet().flag_arguments(context)
    assert not (tmp_path / "state").exists()


def test_a_change_of_the_serving_certificate_or_kubeconfig_restarts_the_kubelet(
    make_config, make_context, tmp_path
) -> None:
    run = Kubelet().plan(make_context(make_config())).run
    node = tmp_path / "node"
    assert run.reload_signal is None
    assert set(run.reload_files) == {
        str(node / name) for name in ("server.crt", "server.key", "ca.crt", "node.kubeconfig")
    }


def test_the_files_the_kubeconfig_names_and_the_cert_dir_pairs_are_reload_files(
    make_config, make_context, tmp_path
) -> None:
    node = tmp_path / "node"
    node.mkdir()
    (node / "node.kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        "clusters: [{name: k, cluster: {server: 'https://a:6443', certificate-authority: ca.crt}}]\n"
        "users: [{name: u, user: {client-certificate: certificates/kubelet-client-current.pem,"
        " client-key: certificates/kubelet-client-current.pem}}]\n"
    )
    config = make_config(kubeletArguments={"cert-dir": ["./certificates"]})
    files = Kubelet().plan(make_context(config)).run.reload_files
    assert str(node / "certificates" / "kubelet-client-current.pem") in files
    assert str(node / "certificates" / "kubelet-server-current.pem") in files
    assert len(files) == len(set(files))


def test_a_contribution_that_is_not_a_list_fails_the_plan_naming_the_plugin(
    make_config, make_context
) -> None:
    context = make_context(make_config(), {"max-pods": "50"})
    with pytest.raises(PluginError, match="plugin 'contributor' failed in nodehost_kubelet_arguments: "
                       "gave kubelet argument 'max-pods' a non-list"):  # fmt: skip
        Kubelet().plan(context)


def test_the_serving_certificate_is_named_for_status_unless_bootstrap_reports_it(
    make_config, make_context
) -> None:
    import dataclasses

    config = make_config()
    context = make_context(config)
    names = [(c.name, c.path) for c in Kubelet().plan(context).certificates]
    assert ("server", config.serving_info.cert_file) in names
    rotated = dataclasses.replace(context, selected=context.selected | {"bootstrap"})
    assert Kubelet().plan(rotated).certificates == ()

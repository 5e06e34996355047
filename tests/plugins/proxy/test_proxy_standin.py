"""The kube-proxy stand-in as a real process, run with the command line and file the plan produces."""

from __future__ import annotations

from pathlib import Path

from nodehost.plugins.proxy import Proxy, nodehost_components
from nodehost.plugins.proxy.flags import KUBE_PROXY_FLAGS
from nodehost.plugins.proxy.standin import kube_proxy_flags_healthz_address


def test_the_standin_runs_the_planned_proxy_serves_healthz_and_stops_on_sigterm(
    make_config, make_context, write_files, free_port, start_standin
) -> None:
    config = make_config(proxyArguments={"healthz-bind-address": [f"127.0.0.1:{free_port}"]})
    plan = Proxy().plan(make_context(config))
    write_files(plan)
    assert plan.run.readiness.url == f"http://127.0.0.1:{free_port}/healthz"
    standin = start_standin(plan.run.argv[1:])
    assert standin.wait_for(plan.run.readiness.url) == 200
    code, out, err = standin.stop()
    assert code == 0, err
    assert "kube-proxy: loaded KubeProxyConfiguration from " in out


def test_with_a_config_file_the_healthz_flag_is_ignored_like_kube_proxy(
    tmp_path: Path, make_config, make_context, write_files, free_port, start_standin
) -> None:
    config = make_config(proxyArguments={"healthz-bind-address": [f"127.0.0.1:{free_port}"]})
    plan = Proxy().plan(make_context(config))
    write_files(plan)
    args = [*plan.run.argv[1:], "--healthz-bind-address=127.0.0.1:1"]
    standin = start_standin(args)
    assert standin.wait_for(plan.run.readiness.url) == 200
    assert standin.stop()[0] == 0


def test_an_unknown_flag_exits_1_with_pflags_message(start_standin) -> None:
    code, _, err = start_standin(["--foo"]).finish()
    assert (code, err.strip()) == (1, "Error: unknown flag: --foo")


def test_a_config_file_with_an_unsupported_mode_exits_1(tmp_path: Path, start_standin) -> None:
    path = tmp_path / "proxy.yaml"
    path.write_text(
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
        "mode: userspace\n"
    )
    code, _, err = start_standin([f"--config={path}"]).finish()
    assert code == 1
    assert err.strip() == (
        f'Error: failed complete: {path}: mode: Unsupported value: "userspace": '
        'supported values: "iptables", "ipvs", "nftables"'
    )


def test_a_mode_kube_proxy_no_longer_has_is_refused_as_a_flag(start_standin) -> None:
    code, _, err = start_standin(["--proxy-mode=userspace"]).finish()
    assert (code, err.strip()) == (
        1,
        'Error: KubeProxyConfiguration.mode: Unsupported value: "userspace": '
        'supported values: "iptables", "ipvs", "nftables"',
    )


def test_an_unknown_field_inside_a_structure_is_refused(tmp_path: Path, start_standin) -> None:
    path = tmp_path / "proxy.yaml"
    path.write_text(
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
        "iptables: {syncPeriod: 30s, bogus: 1}\n"
    )
    code, _, err = start_standin([f"--config={path}"]).finish()
    assert (code, err.strip()) == (
        1,
        f"Error: failed complete: {path}: iptables.bogus: unknown field",
    )


def test_a_kubelet_configuration_is_refused(tmp_path: Path, start_standin) -> None:
    path = tmp_path / "kubelet.yaml"
    path.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
    code, _, err = start_standin([f"--config={path}"]).finish()
    assert code == 1
    assert "kind: expected 'KubeProxyConfiguration', got 'KubeletConfiguration'" in err


def test_positional_arguments_are_refused_like_kube_proxy(start_standin) -> None:
    code, _, err = start_standin(["a", "b"]).finish()
    assert (code, err.strip()) == (
        1,
        'Error: "kube-proxy" does not take any arguments, got ["a" "b"]',
    )


def test_without_a_config_file_the_healthz_flags_apply() -> None:
    def address(*argv: str):
        return kube_proxy_flags_healthz_address(KUBE_PROXY_FLAGS.parse_args(list(argv)).values)

    assert address() == ("0.0.0.0", 10256)
    assert address("--healthz-bind-address=127.0.0.1", "--healthz-port=1234") == (
        "127.0.0.1",
        1234,
    )
    assert address("--healthz-port=0") is None


def test_the_standin_is_registered_for_the_kube_proxy_program() -> None:
    (record,) = nodehost_components()
    assert record.standins == {"kube-proxy": "nodehost-standin-kube-proxy"}

"""The kubelet stand-in as a real process, run with the command line and file the plan produces."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nodehost.plugins.kubelet import Kubelet, nodehost_components
from nodehost.plugins.kubelet.arguments import kubelet_flags_line
from nodehost.plugins.kubelet.flags import KUBELET_FLAGS
from nodehost.plugins.kubelet.standin import kubelet_healthz_address as healthz_address

PROGRAM = "kubelet"


@pytest.fixture
def planned(make_config, make_context, free_port, write_files):
    """A plan whose kubelet serves healthz on a free loopback port; its files written."""
    config = make_config(kubeletArguments={"healthz-port": [str(free_port)]})
    plan = Kubelet().plan(make_context(config))
    write_files(plan)
    return plan


def test_the_standin_runs_the_planned_kubelet_serves_healthz_and_stops_on_sigterm(
    planned, free_port, start_standin
) -> None:
    plan, port = planned, free_port
    standin = start_standin(PROGRAM, plan.run.argv[1:])
    assert standin.wait_for(plan.run.readiness.url) == 200
    assert plan.run.readiness.url == f"http://127.0.0.1:{port}/healthz"
    code, out, err = standin.stop()
    assert code == 0, err
    assert "kubelet: loaded KubeletConfiguration from " in out
    assert "kubelet: stopping on SIGTERM" in out


def test_the_standin_accepts_the_write_flags_line_as_its_command_line(
    make_config, free_port, start_standin
) -> None:
    port = free_port
    config = make_config(kubeletArguments={"healthz-port": [str(port)]})
    argv = kubelet_flags_line(config, {}).split(" ")
    standin = start_standin(PROGRAM, argv)
    assert standin.wait_for(f"http://127.0.0.1:{port}/healthz") == 200
    code, _, err = standin.stop()
    assert code == 0
    assert "Flag --port has been deprecated" in err


def test_an_unknown_flag_exits_1_with_the_kubelets_message(start_standin) -> None:
    code, _, err = start_standin(PROGRAM, ["--foo"]).finish()
    assert code == 1
    assert err.strip() == "Error: failed to parse kubelet flag: unknown flag: --foo"


def test_a_bad_flag_value_exits_1_with_pflags_message(start_standin) -> None:
    code, _, err = start_standin(PROGRAM, ["--port=x"]).finish()
    assert code == 1
    assert err.strip() == (
        'Error: failed to parse kubelet flag: invalid argument "x" for "--port" flag: '
        'strconv.ParseInt: parsing "x": invalid syntax'
    )


def test_a_wrong_config_file_exits_1_naming_the_file_and_the_problem(
    tmp_path: Path, start_standin
) -> None:
    path = tmp_path / "wrong.yaml"
    path.write_text(
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: x\n"
    )
    code, _, err = start_standin(PROGRAM, [f"--config={path}"]).finish()
    assert code == 1
    assert err.strip() == (
        f"Error: failed to load kubelet config file, path: {path}, error: "
        "apiVersion: expected 'kubelet.config.k8s.io/v1beta1', got "
        "'kubeproxy.config.k8s.io/v1alpha1'; kind: expected 'KubeletConfiguration', got "
        "'KubeProxyConfiguration'; mode: unknown field"
    )


def test_an_unknown_field_inside_a_structure_exits_1(tmp_path: Path, start_standin) -> None:
    path = tmp_path / "nested.yaml"
    path.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "authentication: {x509: {clientCAFile: /ca.crt, bogus: true}}\n"
        "evictionHard: {memory.available: 5%}\n"  # a map: any key
    )
    code, _, err = start_standin(PROGRAM, [f"--config={path}"]).finish()
    assert code == 1
    assert err.strip() == (
        f"Error: failed to load kubelet config file, path: {path}, error: "
        "authentication.x509.bogus: unknown field"
    )


def test_a_missing_config_file_exits_1(tmp_path: Path, start_standin) -> None:
    path = tmp_path / "absent.yaml"
    code, _, err = start_standin(PROGRAM, [f"--config={path}"]).finish()
    assert code == 1
    assert err.strip() == (
        f"Error: failed to load kubelet config file, path: {path}, error: "
        f"open {path}: no such file or directory"
    )


def test_a_config_value_of_the_wrong_type_exits_1(tmp_path: Path, start_standin) -> None:
    path = tmp_path / "kubelet.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "healthzPort": "10248",
            }
        )
    )
    code, _, err = start_standin(PROGRAM, [f"--config={path}"]).finish()
    assert code == 1
    assert err.strip().endswith("error: healthzPort: expected integer, got '10248'")


def test_a_positional_argument_is_an_unknown_command(start_standin) -> None:
    code, _, err = start_standin(PROGRAM, ["run"]).finish()
    assert (code, err.strip()) == (1, "Error: unknown command run")


def test_behaviour_variables_reach_the_standin(planned, start_standin) -> None:
    plan = planned
    env = {"NODEHOST_STANDIN_KUBELET_CRASH_AFTER": "0:3"}
    code, _, err = start_standin(PROGRAM, plan.run.argv[1:], env).finish()
    assert code == 3
    assert "kubelet: crashing with exit code 3" in err


def test_help_lists_every_kubelet_flag(start_standin) -> None:
    code, out, _ = start_standin(PROGRAM, ["--help"]).finish()
    assert code == 0
    listed = {line.split("--", 1)[1].split()[0] for line in out.splitlines() if "--" in line}
    assert listed == {flag.name for flag in KUBELET_FLAGS}


def test_command_line_healthz_flags_override_the_config_file() -> None:
    flags = KUBELET_FLAGS.parse_args(["--healthz-port=1234"]).values
    assert healthz_address(flags, {"healthzPort": 99, "healthzBindAddress": "10.0.0.1"}) == (
        "10.0.0.1",
        1234,
    )
    assert healthz_address({}, {}) == ("127.0.0.1", 10248)
    assert healthz_address({}, {"healthzPort": 0}) is None


def test_the_standin_is_registered_for_the_kubelet_program() -> None:
    (record,) = nodehost_components()
    assert record.standins == {"kubelet": "nodehost-standin-kubelet"}

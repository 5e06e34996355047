"""``nodehost start``: Origin's flag rules, selection errors, invalid configs and --dry-run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def dry_run(nodehost, node_dir: Path, *args: str):
    config = str(node_dir / "node-config.yaml")
    return nodehost("start", "--config", config, "--dry-run", "--standins=always", *args)


def test_dry_run_prints_the_plan_in_start_order(nodehost, node_dir: Path) -> None:
    result = dry_run(nodehost, node_dir, "--components=kubelet,proxy,sdn")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith(f"Plan for {node_dir / 'node-config.yaml'}")
    names = [line.split()[1] for line in lines if line[:4].strip().endswith(".")]
    assert names.index("sdn") < names.index("kubelet")
    assert "plugin: kubelet" in result.out


def test_dry_run_json_lists_components_with_dependencies(nodehost, node_dir: Path) -> None:
    result = dry_run(nodehost, node_dir, "--components=kubelet,sdn", "--json")
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    kubelet = next(c for c in plan["components"] if c["name"] == "kubelet")
    assert kubelet["after"] == ["sdn"]
    assert kubelet["plugin"] == "kubelet"


def test_dry_run_marks_stand_ins_loudly(nodehost, node_dir: Path) -> None:
    result = dry_run(nodehost, node_dir, "--components=kubelet")
    assert "STAND-IN" in result.out


def test_inactive_component_says_why(nodehost, node_dir: Path) -> None:
    result = dry_run(nodehost, node_dir, "--components=dns,kubelet")
    assert result.code == 0, result.err
    assert "inactive: dnsBindAddress is not set" in result.out


def test_missing_program_is_a_clear_runtime_error(nodehost, node_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(node_dir))
    config = str(node_dir / "node-config.yaml")
    result = nodehost("start", "--config", config, "--dry-run", "--components=kubelet")
    assert result.code == 1
    assert "component kubelet: program 'kubelet' was not found on PATH" in result.err
    assert "Traceback" not in result.err


def test_invalid_config_lists_every_error_and_exits_255(nodehost, write_config) -> None:
    path = write_config(
        """\
        apiVersion: v1
        kind: NodeConfig
        nodeIP: not-an-ip
        servingInfo:
          bindAddress: nope
          bindNetwork: udp
        masterKubeConfig: node.kubeconfig
        imageConfig:
          format: x
        iptablesSyncPeriod: "5"
        """,
        name="bad.yaml",
    )
    result = nodehost("start", "--config", str(path), "--standins=always")
    assert result.code == 255
    lines = result.err.splitlines()
    assert lines[0] == f"Invalid NodeConfig {path}"
    body = "\n".join(lines[1:])
    for expected in (
        "  nodeName: Required value",
        '  nodeIP: Invalid value: "not-an-ip": must be a valid IP',
        "  servingInfo.bindAddress: Invalid value",
        "  servingInfo.bindNetwork: Invalid value",
        "  iptablesSyncPeriod: Invalid value",
    ):
        assert expected in body
    assert "Traceback" not in result.err


def test_unparseable_config_names_the_file_and_exits_255(nodehost, write_config) -> None:
    path = write_config("nodeName: [unclosed\n", name="broken.yaml")
    result = nodehost("start", "--config", str(path))
    assert result.code == 255
    assert str(path) in result.err
    assert "Traceback" not in result.err


def test_missing_config_file_exits_255(nodehost, tmp_path: Path) -> None:
    result = nodehost("start", "--config", str(tmp_path / "absent.yaml"))
    assert result.code == 255
    assert "absent.yaml" in result.err


def test_unknown_key_is_a_warning_and_start_continues(nodehost, node_dir: Path) -> None:
    path = node_dir / "node-config.yaml"
    path.write_text(path.read_text() + "nodeNmae: typo\n")
    result = nodehost(
        "start", "--config", str(path), "--dry-run", "--standins=always", "--disable=runtime"
    )
    assert result.code == 0, result.err
    assert "nodeNmae" in result.err and "nodeName" in result.err


def test_strict_config_makes_unknown_keys_errors(nodehost, node_dir: Path) -> None:
    path = node_dir / "node-config.yaml"
    path.write_text(path.read_text() + "nodeNmae: typo\n")
    result = nodehost("start", "--config", str(path), "--dry-run", "--strict-config")
    assert result.code == 255
    assert "nodeNmae" in result.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--components=bogus",), "the following components are not recognized: bogus"),
        (("--enable=kubelet", "--disable=kubelet"), "can't be both disabled and enabled: kubelet"),
        (("--disable=all",), "at least one node component must be enabled"),
        (("--expire-days=-1",), "expire-days must be valid number of days"),
        (("--kubernetes=https://x",), "--kubernetes is no longer allowed, try using --kubeconfig"),
        (
            ("--write-config=/tmp/x", "--config=c.yaml"),
            "--config may not be set if you're only writing the config",
        ),
        (
            ("--write-config=/tmp/x", "--write-flags"),
            "--write-config and --write-flags are mutually exclusive",
        ),
        (("positional",), "no arguments are supported for start node"),
        (("--binary=kubelet",), "'kubelet' is not NAME=PATH"),
        (("--expire-days=999999999",), "expire-days must be at most 36500"),
        (("--health-address=garbage",), "invalid value for --health-address"),
        (("--ready-timeout=soon",), "invalid value for --ready-timeout"),
        (("--config-rollback-after=0s",), "invalid value for --config-rollback-after"),
    ],
)
def test_flag_misuse_is_a_usage_error(
    nodehost, node_dir: Path, args: tuple[str, ...], message: str
) -> None:
    config = (
        ()
        if any(a.startswith(("--config", "--write-config")) for a in args)
        else ("--config", str(node_dir / "node-config.yaml"))
    )
    result = nodehost("start", *config, "--dry-run", *args)
    assert result.code == 2, result.err
    assert message in result.err
    assert "Traceback" not in result.err


def test_unknown_flag_is_a_usage_error_naming_it(nodehost) -> None:
    result = nodehost("start", "--no-such-flag")
    assert result.code == 2
    assert "--no-such-flag" in result.err


def test_write_flags_prints_kubelet_arguments(nodehost, node_dir: Path) -> None:
    config = str(node_dir / "node-config.yaml")
    result = nodehost("start", "--config", config, "--write-flags")
    assert result.code == 0, result.err
    assert len(result.out.strip().splitlines()) == 1
    assert "--hostname-override=node1.example.com" in result.out


def test_installed_executable_reports_invalid_config(nodehost_exe, write_config) -> None:
    path = write_config("apiVersion: v1\nkind: NodeConfig\n", name="empty-ish.yaml")
    result = nodehost_exe("start", "--config", str(path))
    assert result.code == 255
    assert result.err.splitlines()[0] == f"Invalid NodeConfig {path}"
    assert "  nodeName: Required value" in result.err


def test_installed_executable_dry_run_exits_zero(nodehost_exe, node_dir: Path) -> None:
    config = str(node_dir / "node-config.yaml")
    result = nodehost_exe(
        "start", "--config", config, "--dry-run", "--standins=always", "--disable=runtime"
    )
    assert result.code == 0, result.err
    assert "kubelet" in result.out


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("NODEHOST_PROFILE", "gpu", "invalid value for NODEHOST_PROFILE"),
        ("NODEHOST_PROFILE_PORT", "99999", "invalid value for NODEHOST_PROFILE_PORT"),
        ("NODEHOST_PROFILE_DIR", "/no/such/dir", "invalid value for NODEHOST_PROFILE_DIR"),
    ],
)
def test_unusable_profiling_settings_are_refused_before_starting(
    nodehost, node_dir: Path, monkeypatch, variable: str, value: str, message: str
) -> None:
    mode = {"NODEHOST_PROFILE_PORT": "web", "NODEHOST_PROFILE_DIR": "cpu"}.get(variable, value)
    monkeypatch.setenv("NODEHOST_PROFILE", mode)
    monkeypatch.setenv(variable, value)
    result = nodehost("start", "--config", str(node_dir / "node-config.yaml"), "--dry-run")
    assert result.code == 2
    assert message in result.err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe\x00garbage", "unable to load bootstrap kubeconfig"),
        (b"clusters: [unclosed\n", "yaml: line 2, column 1: "),
        (
            b"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
            b"clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1', "
            b"certificate-authority-data: 42}}]\n",
            "certificate-authority-data must be a string",
        ),
    ],
)
def test_a_broken_bootstrap_kubeconfig_is_one_line(
    nodehost, tmp_path: Path, content: bytes, message: str
) -> None:
    kubeconfig = tmp_path / "bootstrap.kubeconfig"
    kubeconfig.write_bytes(content)
    result = nodehost(
        "start",
        "--bootstrap-config-name=node-config",
        f"--kubeconfig={kubeconfig}",
        f"--config-dir={tmp_path / 'node'}",
        "--bootstrap-timeout=1s",
        "--health-address=none",
    )
    assert result.code == 1
    assert len(result.err.strip().splitlines()) == 1
    assert message in result.err


def test_write_flags_does_not_go_with_bootstrap(nodehost, node_dir: Path) -> None:
    config = str(node_dir / "node-config.yaml")
    result = nodehost("start", "--config", config, "--bootstrap-config-name=n", "--write-flags")
    assert result.code == 2, result.err
    assert "--write-flags is mutually exclusive with --bootstrap-config-name" in result.err


def test_bootstrap_without_the_plugin_that_bootstraps_is_refused_not_ignored(
    nodehost, tmp_path: Path
) -> None:
    result = nodehost(
        "start",
        "--bootstrap-config-name=node-config",
        "--kubeconfig=/nonexistent/bootstrap.kubeconfig",
        f"--config-dir={tmp_path / 'node'}",
        "--disable-plugin=bootstrap",
        "--dry-run",
    )
    assert result.code == 2, result.err
    assert "No such option '--bootstrap-config-name'" in result.err
    assert not (tmp_path / "node").exists()


def test_every_start_flag_names_its_nodehost_variable_in_help(nodehost) -> None:
    from nodehost.cli.start import environment_variable, start

    result = nodehost("start", "--help")
    assert result.code == 0, result.err
    help_text = " ".join(result.out.split())
    options = [p for p in start.params if p.param_type_name == "option" and not p.hidden]
    for option in options:
        if option.allow_from_autoenv:
            assert f"env var: {environment_variable(option)}" in help_text, option.name
        else:  # the plugin options, read by the plugin loader: their help names the variable
            assert "(env NODEHOST_" in (option.help or ""), option.name
    assert environment_variable(next(o for o in options if o.name == "state_dir")) == (
        "NODEHOST_STATE_DIR"
    )


def test_start_flags_come_from_nodehost_variables_as_an_environment_file_sets_them(
    nodehost_exe, node_dir: Path, tmp_path: Path
) -> None:
    import os

    env = {
        **os.environ,
        "NODEHOST_CONFIG": str(node_dir / "node-config.yaml"),
        "NODEHOST_DRY_RUN": "true",
        "NODEHOST_JSON": "1",
        "NODEHOST_COMPONENTS": "kubelet",
        "NODEHOST_STANDINS": "always",
        "NODEHOST_STATE_DIR": str(tmp_path / "state"),
    }
    result = nodehost_exe("start", env=env)
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    assert [c["name"] for c in plan["components"]] == ["kubelet"]
    assert plan["state_dir"] == str(tmp_path / "state")
    flag_wins = nodehost_exe("start", "--components=proxy", env=env)
    assert [c["name"] for c in json.loads(flag_wins.out)["components"]] == ["proxy"]


def test_a_binary_override_for_no_program_is_a_usage_error(nodehost, node_dir: Path) -> None:
    result = dry_run(nodehost, node_dir, "--binary=kubelett=/bin/true")
    assert result.code == 2
    assert result.err.strip().splitlines()[-1] == (
        "error: invalid value for --binary: no selected component runs a program named "
        "'kubelett' (did you mean 'kubelet'?); the selected components run: containerd, kube-proxy, "
        "kubelet"
    )
    # A name that is run is taken (containerd's too, so that a machine without it plans).
    named = ("--binary=kubelet=/bin/true", "--binary=containerd=/bin/true")
    assert dry_run(nodehost, node_dir, *named).code == 0


@pytest.mark.parametrize("variable", ["NODEHOST_STRICT_PLUGINS", "NODEHOST_NO_PLUGINS"])
def test_a_plugin_switch_variable_that_is_no_boolean_is_a_usage_error(
    nodehost, monkeypatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "banana")
    result = nodehost("components")
    assert result.code == 2
    assert f"error: invalid value for {variable}: 'banana' is not a valid boolean" in result.err
    monkeypatch.setenv(variable, "off")
    assert nodehost("components").code == 0


def test_disabling_a_plugin_that_does_not_exist_is_a_warning_naming_it(nodehost) -> None:
    result = nodehost("plugins", "--disable-plugin", "kubelt")
    assert result.code == 0
    [event] = [json.loads(line) for line in result.err.splitlines() if "kubelt" in line]
    assert event["event"] == "no plugin of that name to disable"
    assert event["did_you_mean"] == "kubelet"


def test_exec_mode_warns_that_a_given_health_address_is_not_served(
    nodehost_exe, node_dir: Path, tmp_path: Path
) -> None:
    """Exec mode replaces nodehost with the kubelet (``/bin/true`` here): nothing serves
    ``--health-address``; saying nothing would ignore the flag.  The state directory is
    new: exec mode makes it.  ``/bin/true`` is no kubelet: the host checks a real one needs
    (its cgroup driver) are ignored."""
    config = f"--config={node_dir / 'node-config.yaml'}"
    args = ["start", config, "--components=kubelet", "--binary=kubelet=/bin/true"]
    args.append("--ignore-preflight-errors=all")
    given = nodehost_exe(*args, "--health-address=127.0.0.1:0", f"--state-dir={tmp_path}/a/s")
    assert given.code == 0, given.err
    assert "exec mode: no health server runs, --health-address is not served" in given.err
    # The suite sets NODEHOST_HEALTH_ADDRESS for every nodehost it starts; a default
    # start has neither the flag nor the variable.
    unset = {k: v for k, v in os.environ.items() if k != "NODEHOST_HEALTH_ADDRESS"}
    default = nodehost_exe(*args, f"--state-dir={tmp_path}/b/s", env=unset)
    assert default.code == 0, default.err
    assert "health" not in default.err

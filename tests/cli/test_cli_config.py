"""``nodehost config validate|show|schema``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_valid_config_exits_zero(nodehost, node_dir: Path) -> None:
    path = node_dir / "node-config.yaml"
    result = nodehost("config", "validate", str(path))
    assert result.code == 0, result.err
    assert result.out.strip() == f"{path}: valid NodeConfig"


def test_invalid_config_exits_255_with_every_error(nodehost, write_config) -> None:
    path = write_config("apiVersion: v1\nkind: NodeConfig\nnodeIP: 0.0.0.0\n", name="bad.yaml")
    result = nodehost("config", "validate", str(path))
    assert result.code == 255
    assert result.err.splitlines()[0] == f"Invalid NodeConfig {path}"
    assert "  nodeName: Required value" in result.err
    assert '  nodeIP: Invalid value: "0.0.0.0": cannot be an unspecified IP' in result.err
    assert "  imageConfig.format: Required value" in result.err


def test_json_output_has_errors_and_warnings(nodehost, write_config) -> None:
    path = write_config("apiVersion: v1\nkind: NodeConfig\nnodeNmae: x\n", name="bad.yaml")
    result = nodehost("config", "validate", str(path), "--json")
    assert result.code == 255
    report = json.loads(result.out)
    assert report["valid"] is False
    assert any(e["path"] == "nodeName" for e in report["errors"])
    assert any("nodeNmae" in w["message"] or w["path"] == "nodeNmae" for w in report["warnings"])


def test_json_output_for_an_unparseable_file(nodehost, write_config) -> None:
    path = write_config("{{{{", name="broken.yaml")
    result = nodehost("config", "validate", str(path), "--json")
    assert result.code == 255
    report = json.loads(result.out)
    assert report["valid"] is False and report["errors"][0]["severity"] == "error"


def test_warnings_alone_keep_exit_zero(nodehost, node_dir: Path) -> None:
    path = node_dir / "node-config.yaml"
    path.write_text(path.read_text() + "unknownThing: 1\n")
    result = nodehost("config", "validate", str(path))
    assert result.code == 0
    assert "unknownThing" in result.err
    assert "(1 warning)" in result.out


def test_show_prints_resolved_yaml_with_absolute_paths(nodehost, node_dir: Path) -> None:
    import yaml

    result = nodehost("config", "show", str(node_dir / "node-config.yaml"))
    assert result.code == 0, result.err
    shown = yaml.safe_load(result.out)
    assert shown["masterKubeConfig"] == str(node_dir / "node.kubeconfig")
    assert shown["authConfig"]["authenticationCacheTTL"] == "5m"
    assert shown["networkConfig"]["mtu"] == 1450


def test_schema_is_json_schema_for_node_config(nodehost) -> None:
    result = nodehost("config", "schema")
    assert result.code == 0
    schema = json.loads(result.out)
    assert "$schema" in schema
    assert "servingInfo" in schema["properties"]


def test_schema_accepts_the_valid_fixture(nodehost, node_dir: Path) -> None:
    import jsonschema
    import yaml

    schema = json.loads(nodehost("config", "schema").out)
    document = yaml.safe_load((node_dir / "node-config.yaml").read_text())
    jsonschema.validate(document, schema)


IDLE_SECTIONS = {
    # section: (bad content, the problem it must give)
    "dnsServerConfig": (
        {"recordz": "x", "forwardTimeout": "banana"},
        'dnsServerConfig.recordz: Forbidden: unknown field; did you mean "recordsFile"?',
    ),
    "bridgeNetwork": (
        {"podCIDRR": 1},
        'bridgeNetwork.podCIDRR: Forbidden: unknown field; did you mean "podCIDR"?',
    ),
    "containerRuntime": ({"bogus": 1}, "containerRuntime.bogus: Forbidden: unknown field"),
}


@pytest.mark.parametrize("section", sorted(IDLE_SECTIONS))
def test_a_plugin_section_is_checked_even_when_its_component_will_not_run(
    nodehost, node_dir: Path, section: str
) -> None:
    """docs/operating/configuration.rst: a plugin's section is checked whenever it is set in the file; for a component
    that will not run it is also a warning that it has no effect."""
    import yaml

    path = node_dir / "node-config.yaml"
    document = yaml.safe_load(path.read_text())
    document["dnsBindAddress"] = ""  # dns will not run; nor will bridge, nor (below) runtime
    document[section] = IDLE_SECTIONS[section][0]
    path.write_text(yaml.safe_dump(document))
    result = nodehost("config", "validate", str(path), "--components=kubelet")
    assert result.code == 255, result.err
    assert f"  {IDLE_SECTIONS[section][1]}" in result.err.splitlines()
    assert f"{section}: has no effect in nodehost: it is used only when" in result.err


def test_a_provider_nothing_can_run_is_a_warning_when_its_plugin_is_disabled(
    nodehost, node_dir: Path
) -> None:
    import yaml

    path = node_dir / "node-config.yaml"
    document = yaml.safe_load(path.read_text())
    document.setdefault("networkConfig", {})["networkPluginName"] = "bridge"
    path.write_text(yaml.safe_dump(document))
    result = nodehost("config", "validate", str(path), "--disable-plugin", "sdn")
    assert result.code == 0, result.err
    assert (
        "networkConfig.networkPluginName: Not checked: the configured provider 'bridge' will "
        "not run: no loaded plugin provides a component that runs network providers "
        "(disabled: sdn)"
    ) in result.err
    assert "will not run" not in nodehost("config", "validate", str(path)).err


def test_a_value_of_the_wrong_type_is_one_problem_not_two(nodehost, node_dir: Path) -> None:
    path = node_dir / "node-config.yaml"
    path.write_text(path.read_text().replace("nodeName:", "nodeName: 12345\nx:", 1))
    result = nodehost("config", "validate", str(path))
    assert result.code == 255
    about = [line for line in result.err.splitlines() if line.startswith("  nodeName:")]
    assert len(about) == 1, result.err
    assert "must be a string, not an integer" in about[0]


def test_show_and_validate_list_the_same_problems(nodehost, node_dir: Path) -> None:
    path = node_dir / "node-config.yaml"
    (node_dir / "node.kubeconfig").unlink()
    path.write_text(path.read_text().replace("nodeName:", "nodeName: 12345\nx:", 1))
    validated = nodehost("config", "validate", str(path))
    shown = nodehost("config", "show", str(path))
    assert validated.code == shown.code == 255
    assert "masterKubeConfig" in validated.err
    assert shown.err == validated.err


def test_each_unreadable_file_is_reported_under_its_own_field(
    node_dir: Path, unprivileged: list[str]
) -> None:
    """As a user who meets file modes (root through setpriv): the key under keyFile, the
    kubeconfig under masterKubeConfig, each once."""
    import subprocess
    import sys

    for name in ("server.key", "node.kubeconfig"):
        (node_dir / name).chmod(0)
    path = node_dir / "node-config.yaml"
    nodehost = str(Path(sys.executable).parent / "nodehost")
    done = subprocess.run(
        [*unprivileged, nodehost, "config", "validate", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 255, done.stderr
    problems = done.stderr.splitlines()[1:]
    assert problems == [
        f'  servingInfo.keyFile: Invalid value: "{node_dir}/server.key": could not read file: '
        f"open {node_dir}/server.key: permission denied",
        f'  masterKubeConfig: Invalid value: "{node_dir}/node.kubeconfig": could not read file: '
        f"open {node_dir}/node.kubeconfig: permission denied",
    ], done.stderr

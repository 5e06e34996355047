"""The sample config shipped in contrib/examples."""

from __future__ import annotations

import shutil
from pathlib import Path

from nodehost.config.load import load_node_config
from nodehost.config.validate import validate_node_config
from nodehost.records import ValidationScope

EXPECTED_FILES = ("server.crt", "server.key", "ca.crt", "node.kubeconfig")


def test_sample_loads_without_problems(sample_path: Path) -> None:
    config, problems = load_node_config(str(sample_path))
    assert problems == []
    assert config.node_name == "node1.example.com"
    assert config.network_config.network_plugin_name == "redhat/openshift-ovs-subnet"


def test_sample_comment_lists_the_files_it_expects(sample_path: Path) -> None:
    header = sample_path.read_text().split("apiVersion:")[0]
    for name in EXPECTED_FILES:
        assert f"#   {name}" in header


def test_sample_alone_reports_only_its_missing_files(sample_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "node-config.yaml"
    shutil.copy(sample_path, copy)
    config, _ = load_node_config(str(copy))
    problems = validate_node_config(config, ValidationScope.NODE)
    assert problems
    for problem in problems:
        assert "could not read file: stat " in problem.detail
        assert problem.detail.endswith(": no such file or directory")


def test_sample_with_its_files_is_valid(
    sample_path: Path, tmp_path: Path, serving_pair: tuple[bytes, bytes]
) -> None:
    shutil.copy(sample_path, tmp_path / "node-config.yaml")
    for name in EXPECTED_FILES:
        (tmp_path / name).write_text("placeholder\n")
    (tmp_path / "server.crt").write_bytes(serving_pair[0])
    (tmp_path / "server.key").write_bytes(serving_pair[1])
    config, _ = load_node_config(str(tmp_path / "node-config.yaml"))
    for scope in ValidationScope:
        assert validate_node_config(config, scope) == []

"""The sample config shipped in contrib/examples."""

from __future__ import annotations

import shutil
from pathlib import Path

from nodehost.config.load import load_node_config
from nodehost.config.validate import validate_node_config
from nodehost.pluginhost.records import ValidationScope


def test_sample_loads_without_problems(sample_path: Path) -> None:
    config, problems = load_node_config(str(sample_path))
    assert problems == []
    assert config.node_name == "node1.example.com"
    assert config.network_config.network_plugin_name == "redhat/openshift-ovs-subnet"


def test_sample_is_valid_in_every_scope_as_shipped(sample_path: Path) -> None:
    """The files it names are shipped next to it (tests/contrib checks the whole CLI)."""
    config, _ = load_node_config(str(sample_path))
    for scope in ValidationScope:
        assert [p for p in validate_node_config(config, scope) if p.is_error] == []


def test_sample_without_its_files_reports_only_missing_files(
    sample_path: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "node-config.yaml"
    shutil.copy(sample_path, copy)
    config, _ = load_node_config(str(copy))
    problems = [p for p in validate_node_config(config, ValidationScope.NODE) if p.is_error]
    assert {problem.path for problem in problems} == {"masterKubeConfig"}
    for problem in problems:
        assert problem.detail.endswith(": no such file or directory")

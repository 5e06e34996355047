"""The third-party plugin package in contrib/ (nodehost-ptp): listed, selectable, blockable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.needs("nodehost-ptp")

PTP_SECTION = "ptp:\n  subnet: 10.128.3.0/24\n  cniConfDir: {conf_dir}\n"


@pytest.fixture
def ptp_config(node_dir: Path, tmp_path: Path) -> Path:
    path = node_dir / "node-config.yaml"
    text = path.read_text().replace('networkPluginName: ""', "networkPluginName: ptp")
    path.write_text(text + PTP_SECTION.format(conf_dir=tmp_path / "net.d"))
    return path


def test_ptp_is_listed_with_its_distribution(nodehost) -> None:
    infos = {info["name"]: info for info in json.loads(nodehost("plugins", "--json").out)}
    assert infos["ptp"]["status"] == "active"
    assert infos["ptp"]["distribution"] == "nodehost-ptp"
    assert "nodehost_network_providers" in infos["ptp"]["hooks"]


@pytest.mark.needs("cni-plugins")  # the dry run checks the provider's plugins are there
def test_ptp_is_selected_by_network_plugin_name(nodehost, ptp_config: Path, tmp_path: Path) -> None:
    result = nodehost("start", "--config", str(ptp_config), "--components=sdn", "--dry-run")
    assert result.code == 0, result.err
    assert "network provider: ptp" in result.out
    assert str(tmp_path / "net.d" / "10-nodehost-ptp.conflist") in result.out


def test_ptp_section_is_a_known_key(nodehost, ptp_config: Path) -> None:
    result = nodehost("config", "validate", str(ptp_config))
    assert result.code == 0, result.err
    assert "ptp" not in result.err


def test_ptp_validates_its_section(nodehost, ptp_config: Path) -> None:
    ptp_config.write_text(ptp_config.read_text().replace("10.128.3.0/24", "10.128.3.1/24"))
    result = nodehost("start", "--config", str(ptp_config), "--components=sdn", "--dry-run")
    assert result.code == 255
    assert '  ptp.subnet: Invalid value: "10.128.3.1/24"' in result.err


def test_blocking_ptp_makes_its_name_unknown(nodehost, ptp_config: Path) -> None:
    result = nodehost(
        "start",
        "--config",
        str(ptp_config),
        "--components=sdn",
        "--dry-run",
        "--disable-plugin=ptp",
    )
    assert result.code == 255
    assert "networkConfig.networkPluginName" in result.err
    assert "no network provider is named 'ptp'" in result.err


def test_blocking_by_environment(nodehost, ptp_config: Path, monkeypatch) -> None:
    monkeypatch.setenv("NODEHOST_DISABLE_PLUGINS", "ptp")
    infos = {info["name"]: info for info in json.loads(nodehost("plugins", "--json").out)}
    assert infos["ptp"]["status"] == "blocked"
    assert os.environ["NODEHOST_DISABLE_PLUGINS"] == "ptp"

"""Every example shipped in contrib/ works as shipped: node configs validate, kubeconfigs load.

New examples are found by their ``kind``, so adding one adds its check.
"""

from __future__ import annotations

import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CONTRIB = Path(__file__).resolve().parents[2] / "contrib"


def examples(kind: str) -> list[Path]:
    """Every YAML file under contrib/ whose ``kind`` is ``kind``."""
    found = []
    for path in sorted(CONTRIB.rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".kubeconfig") or "build" in path.parts:
            continue
        document = yaml.safe_load(path.read_text())
        if isinstance(document, dict) and document.get("kind") == kind:
            found.append(path)
    return found


def test_the_examples_are_found() -> None:
    names = {path.name for path in examples("NodeConfig") + examples("Config")}
    assert {"node-config.yaml", "node.kubeconfig", "master.kubeconfig"} <= names


@pytest.mark.parametrize("path", examples("NodeConfig"), ids=lambda p: str(p.relative_to(CONTRIB)))
def test_a_shipped_node_config_validates(path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nodehost", "config", "validate", str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"{path}: valid NodeConfig" in result.stdout


@pytest.mark.parametrize("path", examples("Config"), ids=lambda p: str(p.relative_to(CONTRIB)))
def test_a_shipped_kubeconfig_loads_as_nodehost_loads_it(path: Path) -> None:
    from nodehost.api.client import load_kubeconfig

    endpoint = load_kubeconfig(str(path))
    assert endpoint.server.startswith("https://")
    assert endpoint.tls is not None and endpoint.tls.verify_mode == ssl.CERT_REQUIRED


def test_the_sample_header_lists_the_files_it_names_and_they_are_shipped() -> None:
    sample = CONTRIB / "examples" / "node-config.yaml"
    header = sample.read_text().split("apiVersion:")[0]
    raw = yaml.safe_load(sample.read_text())
    named = [raw["masterKubeConfig"], raw["servingInfo"]["clientCA"]]
    for name in named:
        assert f"#   {name}" in header
        assert (sample.parent / name).is_file()


def test_the_quick_start_kubeconfig_generates_a_valid_node(tmp_path: Path) -> None:
    """README's first command: a CA, then a generated node folder from master.kubeconfig."""
    master = tmp_path / "master"
    command = [sys.executable, "-m", "nodehost"]
    subprocess.run(
        [*command, "ca", "create", "--dir", str(master)], check=True, capture_output=True
    )
    done = subprocess.run(
        [*command, "start", f"--master-cert-dir={master}",
         f"--kubeconfig={CONTRIB / 'examples' / 'master.kubeconfig'}",
         f"--write-config={tmp_path / 'node'}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    validated = subprocess.run(
        [*command, "config", "validate", str(tmp_path / "node" / "node-config.yaml")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert validated.returncode == 0, validated.stderr

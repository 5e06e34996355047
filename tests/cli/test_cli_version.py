"""``nodehost version``: nodehost's own version alone; with a config, the plan's programs'."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nodehost.testing.nodefolder import NodeFolder

CNI_DIR = "/usr/lib/cni"


def first_line(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env={"PATH": "/bin"})
    return (done.stdout.strip() or done.stderr.strip()).splitlines()[0]


@pytest.fixture
def bridged(node_folder: NodeFolder) -> Path:
    """The node folder's config with the bridge network (its CNI plugins: bridge, host-local,
    portmap, loopback)."""
    return node_folder.update(
        {
            "networkConfig": {"networkPluginName": "bridge"},
            "bridgeNetwork": {"podCIDR": "10.244.9.0/24"},
        }
    )


def versions(nodehost_cli: Any, *args: str) -> dict[str, Any]:
    result = nodehost_cli("version", "--json", *args)
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_json_without_a_config_reports_python_kernel_and_distribution(nodehost_cli: Any) -> None:
    import platform
    import sys

    document = versions(nodehost_cli)
    assert document["python"] == sys.version.split()[0]
    assert document["kernel"] == platform.release()
    assert document["distribution"] == platform.freedesktop_os_release()["PRETTY_NAME"]
    assert document["programs"] is None


@pytest.mark.needs("containerd", "cni-plugins")
def test_every_program_of_the_plan_with_the_version_it_prints(
    nodehost_cli: Any, bridged: Path, tmp_path: Path
) -> None:
    document = versions(
        nodehost_cli, "--config", str(bridged), "--state-dir", str(tmp_path / "state"),
        "--standins", "missing",
    )  # fmt: skip
    programs = {program["name"]: program for program in document["programs"]}
    for name in ("containerd", "runc"):
        path = shutil.which(name, path=os.environ["PATH"] + ":/usr/sbin:/sbin")
        assert path is not None
        assert programs[name]["path"] == path
        assert programs[name]["version"] == first_line([path, "--version"])
    for name in ("bridge", "host-local", "portmap", "loopback"):
        assert programs[name]["path"] == f"{CNI_DIR}/{name}"
        assert programs[name]["version"] == first_line([f"{CNI_DIR}/{name}"])
    for name in ("kubelet", "kube-proxy"):
        if programs[name]["standin"]:
            assert programs[name]["version"].endswith("-nodehost-standin")


def test_a_program_given_with_binary_is_asked_for_its_version(
    nodehost_cli: Any, node_folder: NodeFolder, tmp_path: Path
) -> None:
    fake = tmp_path / "kubelet"
    fake.write_text("#!/bin/sh\necho 'Kubernetes v1.30.9'\n")
    fake.chmod(0o755)
    document = versions(
        nodehost_cli, "--config", str(node_folder.config_path), "--state-dir",
        str(tmp_path / "state"), "--binary", f"kubelet={fake}",
    )  # fmt: skip
    kubelet = next(p for p in document["programs"] if p["name"] == "kubelet")
    assert kubelet == {
        "name": "kubelet",
        "path": str(fake),
        "version": "Kubernetes v1.30.9",
        "error": None,
        "component": "kubelet",
        "standin": False,
    }


def test_a_program_not_found_is_reported_not_fatal(
    nodehost_cli: Any, node_folder: NodeFolder, tmp_path: Path
) -> None:
    result = nodehost_cli(
        "version", "--config", str(node_folder.config_path), "--state-dir",
        str(tmp_path / "state"), "--binary", f"kubelet={tmp_path / 'absent'}",
    )  # fmt: skip
    assert result.code == 0, result.err
    line = next(line for line in result.out.splitlines() if line.startswith("kubelet: "))
    assert "unknown" in line and str(tmp_path / "absent") in line


def test_a_binary_no_component_runs_is_a_usage_error(
    nodehost_cli: Any, node_folder: NodeFolder, tmp_path: Path
) -> None:
    result = nodehost_cli(
        "version", "--config", str(node_folder.config_path), "--state-dir",
        str(tmp_path / "state"), "--binary", "kubelett=/bin/true",
    )  # fmt: skip
    assert result.code == 2
    assert "--binary" in result.err and "kubelet" in result.err


def test_the_services_config_variable_is_enough(
    nodehost_cli: Any, node_folder: NodeFolder, tmp_path: Path
) -> None:
    """As the service's environment has it: ``nodehost version`` reports that node's programs."""
    env = {"NODEHOST_CONFIG": str(node_folder.config_path), "NODEHOST_STATE_DIR": str(tmp_path)}
    result = nodehost_cli("version", env=env)
    assert result.code == 0, result.err
    assert result.out.startswith("nodehost: ")
    assert any(line.startswith("kubelet: ") for line in result.out.splitlines())

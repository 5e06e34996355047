"""Files a NodeConfig names that are not small regular files: refused at once, exit 255.

Every kind of hostile file (an endless device, a FIFO whose writer never
writes, a 300 MB sparse file, a directory, a socket) in every field whose
file nodehost reads, through ``config validate`` and ``start --dry-run``: the
answer is ``Invalid NodeConfig <file>`` naming the field, never a hang, a
MemoryError or exit 0.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

COMPONENTS = "--components=kubelet,proxy,dns"


@pytest.fixture(scope="module")
def node_folder(
    tmp_path_factory: pytest.TempPathFactory, make_real_node_folder: Callable[[Path], Path]
) -> Path:
    return make_real_node_folder(tmp_path_factory.mktemp("hostile"))


def _hostile(kind: str, where: Path) -> Iterator[str]:
    if kind == "dev-zero":
        yield "/dev/zero"
    elif kind == "fifo":
        fifo = where / "fifo"
        os.mkfifo(fifo)
        writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # holds it open, never writes
        try:
            yield str(fifo)
        finally:
            os.close(writer)
    elif kind == "sparse":
        path = where / "sparse"
        with path.open("wb") as handle:
            handle.truncate(300 * 1024 * 1024)
        yield str(path)
    elif kind == "directory":
        yield str(where)
    else:
        path = where / "socket"
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(path))
            yield str(path)


FIELDS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "masterKubeConfig": lambda doc, path: doc.update(masterKubeConfig=path),
    "servingInfo.namedCertificates[0].certFile": lambda doc, path: doc["servingInfo"].update(
        namedCertificates=[{"names": ["n1"], "certFile": path, "keyFile": "server.key"}]
    ),
    "servingInfo.clientCA": lambda doc, path: doc["servingInfo"].update(clientCA=path),
    "servingInfo.keyFile": lambda doc, path: doc["servingInfo"].update(keyFile=path),
    "dnsRecursiveResolvConf": lambda doc, path: doc.update(dnsRecursiveResolvConf=path),
    "dnsServerConfig.recordsFile": lambda doc, path: doc.update(
        dnsServerConfig={"recordsFile": path}
    ),
}
KINDS = ["dev-zero", "fifo", "sparse", "directory", "socket"]


def _config_naming(node_folder: Path, tmp_path: Path, field: str, path: str) -> Path:
    document = yaml.safe_load((node_folder / "node-config.yaml").read_text())
    document["dnsBindAddress"] = "127.0.0.1:0"
    FIELDS[field](document, path)
    config = node_folder / f"hostile-{tmp_path.name}.yaml"
    config.write_text(yaml.safe_dump(document))
    return config


def _assert_refused(result: Any, config: Path, field: str) -> None:
    assert result.code == 255, (result.out, result.err)
    lines = result.err.splitlines()
    assert f"Invalid NodeConfig {config}" in lines
    assert any(line.strip().startswith(f"{field}:") for line in lines), result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("field", list(FIELDS))
def test_hostile_file_is_an_invalid_config(
    nodehost: Callable[..., Any], node_folder: Path, tmp_path: Path, field: str, kind: str
) -> None:
    for path in _hostile(kind, tmp_path):
        config = _config_naming(node_folder, tmp_path, field, path)
        try:
            validated = nodehost("config", "validate", str(config), COMPONENTS)
            _assert_refused(validated, config, field)
            planned = nodehost(
                "start", "--config", str(config), "--dry-run", "--standins=always", COMPONENTS,
                "--state-dir", str(tmp_path / "state"),
            )  # fmt: skip
            _assert_refused(planned, config, field)
        finally:
            config.unlink()


def test_the_unchanged_folder_is_valid(
    nodehost: Callable[..., Any], node_folder: Path, tmp_path: Path
) -> None:
    """The control: the same config naming the real files passes both."""
    config = _config_naming(node_folder, tmp_path, "masterKubeConfig", "node.kubeconfig")
    assert nodehost("config", "validate", str(config), COMPONENTS).code == 0
    planned = nodehost(
        "start", "--config", str(config), "--dry-run", "--standins=always", COMPONENTS,
        "--state-dir", str(tmp_path / "state"),
    )  # fmt: skip
    assert planned.code == 0, planned.err


@pytest.mark.parametrize("kind", KINDS)
def test_hostile_file_named_by_the_master_kubeconfig_is_an_invalid_config(
    nodehost: Callable[..., Any], node_folder: Path, tmp_path: Path, kind: str
) -> None:
    kubeconfig = yaml.safe_load((node_folder / "node.kubeconfig").read_text())
    for path in _hostile(kind, tmp_path):
        user = kubeconfig["users"][0]["user"]
        user.pop("client-certificate-data")
        user["client-certificate"] = path
        (tmp_path / "hostile.kubeconfig").write_text(yaml.safe_dump(kubeconfig))
        config = _config_naming(
            node_folder, tmp_path, "masterKubeConfig", str(tmp_path / "hostile.kubeconfig")
        )
        try:
            validated = nodehost("config", "validate", str(config), COMPONENTS)
            _assert_refused(validated, config, "masterKubeConfig")
            assert path in validated.err
        finally:
            config.unlink()

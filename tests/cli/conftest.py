"""Fixtures for CLI tests: a valid Origin node folder and ways to run ``nodehost``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from nodehost.cli import main
from nodehost.testing import parts

NODE_CONFIG = """\
apiVersion: v1
kind: NodeConfig
nodeName: node1.example.com
nodeIP: 127.0.0.1
servingInfo:
  bindAddress: 127.0.0.1:10250
  certFile: server.crt
  keyFile: server.key
  clientCA: ca.crt
masterKubeConfig: node.kubeconfig
dnsDomain: cluster.local
dnsIP: 10.0.0.10
networkConfig:
  networkPluginName: ""
  mtu: 1450
volumeDirectory: volumes
imageConfig:
  format: openshift/origin-${component}:${version}
  latest: false
iptablesSyncPeriod: 30s
kubeletArguments:
  fail-swap-on: ["false"]
"""


@pytest.fixture
def node_dir(tmp_path: Path, node_files: Callable[[Path], None]) -> Path:
    """A node folder with node-config.yaml and the files it names (a real serving pair)."""
    folder = tmp_path / "node"
    folder.mkdir()
    node_files(folder)
    (folder / "node-config.yaml").write_text(NODE_CONFIG)
    return folder


@pytest.fixture
def write_config(node_dir: Path) -> Callable[[str], Path]:
    """Write a node-config.yaml variant (dedented) into the node folder; returns its path."""

    def write(text: str, name: str = "node-config.yaml") -> Path:
        path = node_dir / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_in_process(args: Sequence[str]) -> Result:
    """Run ``nodehost ARGS`` through :func:`nodehost.cli.main` with captured streams."""
    runner = CliRunner()
    with runner.isolation() as streams:
        try:
            main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    out, err = streams[0].getvalue().decode(), streams[1].getvalue().decode()
    return Result(code, out, err)


@pytest.fixture
def nodehost() -> Callable[..., Result]:
    """Run ``nodehost ARGS`` in-process."""
    return lambda *args: run_in_process(args)


@pytest.fixture
def nodehost_exe() -> Callable[..., Result]:
    """Run the installed ``nodehost`` executable as a subprocess."""
    executable = Path(sys.executable).parent / "nodehost"
    parts.require("nodehost-script")

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> Result:
        done = subprocess.run(
            [str(executable), *args], capture_output=True, text=True, env=env, timeout=timeout
        )
        return Result(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture(scope="session")
def make_real_node_folder() -> Callable[[Path], Path]:
    """``make_real_node_folder(root)``: a CA in ``root/master`` and a node folder it signed
    (``root/node``, ECDSA, node ``n1``), plus a resolv.conf and an empty records file."""
    from nodehost.pki.ca import create_signer_ca
    from nodehost.pki.nodefolder import NodeFolderRequest, create_node_folder

    def make(root: Path) -> Path:
        master, node = root / "master", root / "node"
        create_signer_ca(master, name="test-ca", key_type="ecdsa")
        ca = str(master / "ca.crt")
        create_node_folder(
            NodeFolderRequest(
                node_dir=str(node), node_name="n1", hostnames=("n1",), key_type="ecdsa",
                master="https://127.0.0.1:6443", certificate_authority=(ca,),
                node_client_certificate_authority=ca, signer_cert=ca,
                signer_key=str(master / "ca.key"), signer_serial=str(master / "ca.serial.txt"),
            )
        )  # fmt: skip
        (node / "resolv.conf").write_text("nameserver 127.0.0.1\n")
        (node / "records.yaml").write_text("services: []\n")
        return node

    return make

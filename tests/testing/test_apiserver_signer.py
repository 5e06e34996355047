"""``python -m nodehost.testing.apiserver --signer DIR``: a node folder made with the
same CA joins it (the first-node walkthrough in docs/getting-started/first-node.rst)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodehost.testing.noderun import nodehost_executable
from nodehost.testing.parts import find_program


@pytest.fixture
def api_address(tmp_path: Path) -> Iterator[str]:
    """The walkthrough's first two steps: ``nodehost ca create``, then the API server."""
    nodehost = nodehost_executable()
    subprocess.run([nodehost, "ca", "create", "--dir", "ca"], cwd=tmp_path, check=True)
    command = [sys.executable, "-m", "nodehost.testing.apiserver", "--dir", "cluster"]
    server = subprocess.Popen(
        [*command, "--signer", "ca"], cwd=tmp_path, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline().split()  # blocks until the server listens
        assert first[:1] == ["address"], first
        yield first[1]
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.needs("kubectl")
def test_a_node_folder_signed_by_the_ca_reads_its_node_from_the_server(
    tmp_path: Path, api_address: str
) -> None:
    signer = ["--signer-cert", "ca/ca.crt", "--signer-key", "ca/ca.key"]
    subprocess.run(
        [
            nodehost_executable(),
            *("config", "create", "--node-dir", "node1", "--node", "node1"),
            *("--hostnames", "127.0.0.1", "--master", api_address),
            *("--certificate-authority", "ca/ca.crt", "--node-client-certificate-authority"),
            "ca/ca.crt",
            *signer,
            *("--signer-serial", "ca/ca.serial.txt"),
        ],
        cwd=tmp_path,
        check=True,
    )
    kubectl = find_program("kubectl") or str(Path(sys.executable).parent / "kubectl")
    # kubectl verifies the server's certificate with ca/ca.crt and authenticates with
    # the node's client certificate: both only work when the server uses that CA.
    done = subprocess.run(
        [kubectl, "--kubeconfig", "node1/node.kubeconfig", "get", "--raw", "/api/v1/nodes"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"kind":"NodeList"' in done.stdout.replace(" ", "")


def test_the_server_takes_its_serials_from_the_ca_folder(tmp_path: Path) -> None:
    from nodehost.pki.ca import create_signer_ca
    from nodehost.pki.serial import reserve_serials
    from nodehost.testing.apiserver import TestCA

    create_signer_ca(tmp_path, name="walkthrough")
    ca = TestCA.from_signer(tmp_path, block=1000)
    first = ca.next_serial()
    # The block the server issues from is counted in the file: config create goes on after it.
    assert reserve_serials(tmp_path / "ca.serial.txt").start > first + 999
    assert ca.pem == (tmp_path / "ca.crt").read_bytes()

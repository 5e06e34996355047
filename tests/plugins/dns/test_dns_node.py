"""``nodehost start`` runs the DNS server in its own event loop as the dns component."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dns.exception
import pytest
import yaml
from dnsrun import answer_set, ask, fqdn, free_udp_port

from nodehost.testing import parts

EXAMPLE = Path(__file__).parents[3] / "contrib" / "examples"


@pytest.fixture
def node_config(tmp_path: Path) -> tuple[Path, int]:
    """The example node config listening on a free loopback port, with its certificate files."""
    parts.require("openssl")
    port = free_udp_port()
    raw = yaml.safe_load((EXAMPLE / "node-config.yaml").read_text())
    raw.update(dnsBindAddress=f"127.0.0.1:{port}", dnsNameservers=[f"127.0.0.1:{free_udp_port()}"])
    raw["nodeIP"] = "127.0.0.1"  # the example's address is not this machine's
    # --components=dns validates as a node (Origin) and keeps masterKubeConfig, which points
    # at no API server here: serve no cluster records rather than wait for one.
    raw["dnsServerConfig"] = {"recordSources": []}
    path = tmp_path / "node-config.yaml"
    path.write_text(yaml.safe_dump(raw))
    shutil.copy(EXAMPLE / "master.kubeconfig", tmp_path / "node.kubeconfig")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", "server.key", "-out", "server.crt", "-days", "1",
         "-subj", "/CN=node1.example.com", "-addext", "subjectAltName=DNS:node1.example.com"],
        cwd=tmp_path, check=True, capture_output=True,
    )  # fmt: skip
    shutil.copy(tmp_path / "server.crt", tmp_path / "ca.crt")
    return path, port


class Where:
    def __init__(self, port: int) -> None:
        self.host, self.port = "127.0.0.1", port


def test_nodehost_start_serves_dns_until_stopped(node_config, tmp_path: Path) -> None:
    path, port = node_config
    command = [sys.executable, "-m", "nodehost", "start", "--config", str(path),
               "--components", "dns", "--state-dir", str(tmp_path / "state"),
               "--health-address", "127.0.0.1:0"]  # fmt: skip
    env = {**os.environ, "NODEHOST_NO_PLUGINS": "1"}
    node = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert node.poll() is None, node.communicate()[1].decode()
            try:
                response = ask(Where(port), fqdn("10-0-0-7.default.pod"), "A", timeout=0.2)
                break
            except (dns.exception.Timeout, OSError):
                assert time.monotonic() < deadline, "the node's DNS never answered"
        assert answer_set(response) == {(fqdn("10-0-0-7.default.pod"), "A", "10.0.0.7")}
    finally:
        node.send_signal(signal.SIGTERM)
        _, errors = node.communicate(timeout=30)
    assert node.returncode == 0, errors.decode()
    assert b'"event": "Starting DNS"' in errors

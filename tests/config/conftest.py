"""Fixtures for the NodeConfig tests: config files on disk and real certificates."""

from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from nodehost.config.load import load_node_config
from nodehost.config.schema import NodeConfig
from nodehost.testing import parts

EXAMPLES = Path(__file__).resolve().parents[2] / "contrib" / "examples"
SAMPLE = EXAMPLES / "node-config.yaml"

#: A complete, valid node configuration; relative paths point at files ``node_dir`` creates.
VALID_CONFIG = """\
apiVersion: v1
kind: NodeConfig
nodeName: node1.example.com
servingInfo:
  bindAddress: 0.0.0.0:10250
  certFile: server.crt
  keyFile: server.key
  clientCA: ca.crt
masterKubeConfig: node.kubeconfig
imageConfig:
  format: openshift/origin-${component}:${version}
"""


@pytest.fixture
def sample_path() -> Path:
    """The sample config shipped in contrib/examples."""
    return SAMPLE


@pytest.fixture
def valid_config_text() -> str:
    """VALID_CONFIG's YAML text."""
    return VALID_CONFIG


@pytest.fixture
def write_yaml(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write dedented YAML text to ``tmp_path/<name>`` and return the path."""

    def write(text: str, name: str = "node-config.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def node_dir(tmp_path: Path, node_files: Callable[[Path], None]) -> Path:
    """A node directory holding the files VALID_CONFIG refers to (a real serving pair)."""
    node_files(tmp_path)
    (tmp_path / "node-config.yaml").write_text(VALID_CONFIG)
    return tmp_path


@pytest.fixture
def valid_config(node_dir: Path) -> NodeConfig:
    """VALID_CONFIG loaded from ``node_dir``: no problems at any scope."""
    config, problems = load_node_config(str(node_dir / "node-config.yaml"))
    assert problems == []
    return config


def _openssl_certificate(directory: Path, name: str, subject: str, sans: str | None) -> None:
    command = [
        "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-days", "2", "-subj", subject,
        "-keyout", str(directory / f"{name}.key"), "-out", str(directory / f"{name}.crt"),
    ]  # fmt: skip
    if sans:
        command += ["-addext", f"subjectAltName={sans}"]
    subprocess.run(command, check=True, capture_output=True)


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real certificate/key pairs made by the openssl command line tool:

    * ``named``    -- CN ``named.example.com``, SANs ``a.example.com``, ``*.wild.example.com``;
    * ``other``    -- CN ``other.example.com``, no SANs (its key does not match ``named``).
    """
    parts.require("openssl")
    directory = tmp_path_factory.mktemp("certificates")
    _openssl_certificate(
        directory, "named", "/CN=named.example.com", "DNS:a.example.com,DNS:*.wild.example.com"
    )
    _openssl_certificate(directory, "other", "/CN=other.example.com", None)
    return directory

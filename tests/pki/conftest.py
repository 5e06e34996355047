"""Fixtures for the certificate and node-folder tests: CAs, requests, real tools."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from nodehost.config.listen import parse_listen
from nodehost.pki.ca import create_signer_ca
from nodehost.pki.nodefolder import NodeFolderRequest
from nodehost.testing import parts

REPO = Path(__file__).resolve().parents[2]


def _ca(directory: Path, key_type: str) -> Path:
    create_signer_ca(directory, name=f"test-{key_type}-ca", key_type=key_type)
    return directory


@pytest.fixture
def ca_dir(tmp_path: Path) -> Path:
    """A fresh ECDSA signer CA (fast to make) in ``tmp_path/master``."""
    return _ca(tmp_path / "master", "ecdsa")


@pytest.fixture
def make_ca(tmp_path: Path) -> Callable[[str, str], Path]:
    """``make_ca(name, key_type)`` -> a new signer CA folder under ``tmp_path``."""
    return lambda name, key_type: _ca(tmp_path / name, key_type)


def request_for(ca: Path, node_dir: Path | str, **changes: object) -> NodeFolderRequest:
    """A complete request signed by the CA in ``ca`` (ECDSA keys unless changed)."""
    base = NodeFolderRequest(
        node_dir=node_dir if isinstance(node_dir, str) else str(node_dir),
        node_name="node1",
        hostnames=("node1.example.com", "10.0.0.1"),
        certificate_authority=(str(ca / "ca.crt"),),
        node_client_certificate_authority=str(ca / "ca.crt"),
        signer_cert=str(ca / "ca.crt"),
        signer_key=str(ca / "ca.key"),
        signer_serial=str(ca / "ca.serial.txt"),
        master="https://master.example.com:8443",
        key_type="ecdsa",
        listen=parse_listen("0.0.0.0:10250", default_port=10250),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.fixture
def request_factory(ca_dir: Path, tmp_path: Path) -> Callable[..., NodeFolderRequest]:
    """``request_factory(**changes)`` -> a request for ``tmp_path/node1`` signed by ``ca_dir``."""

    def factory(**changes: object) -> NodeFolderRequest:
        node_dir = changes.pop("node_dir", str(tmp_path / "node1"))
        return request_for(ca_dir, str(node_dir), **changes)

    return factory


def cli_args(ca: Path, node_dir: Path, *extra: str) -> list[str]:
    """``nodehost config create`` flags for a node folder signed by ``ca``."""
    return [
        "--node-dir", str(node_dir), "--node", "node1", "--hostnames", "node1,127.0.0.1",
        "--certificate-authority", str(ca / "ca-bundle.crt"),
        "--node-client-certificate-authority", str(ca / "ca-bundle.crt"),
        "--signer-cert", str(ca / "ca.crt"), "--signer-key", str(ca / "ca.key"),
        "--signer-serial", str(ca / "ca.serial.txt"), "--key-type", "ecdsa", *extra,
    ]  # fmt: skip


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, **kwargs)


@pytest.fixture
def run_config_create() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``nodehost config create`` (``python -m nodehost``) in a child process."""
    return lambda args, **kwargs: _run(
        [sys.executable, "-m", "nodehost", "config", "create", *args], **kwargs
    )


@pytest.fixture
def openssl() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``openssl`` with the given arguments (needs the openssl part)."""
    parts.require("openssl")
    binary = parts.find_program("openssl")
    return lambda *args: _run([binary, *args])


@pytest.fixture
def node_request() -> Callable[..., NodeFolderRequest]:
    """``node_request(ca, node_dir, **changes)`` -> a complete request signed by ``ca``."""
    return request_for


@pytest.fixture
def config_create_args() -> Callable[..., list[str]]:
    """``config_create_args(ca, node_dir, *extra)`` -> CLI flags for a node folder."""
    return cli_args

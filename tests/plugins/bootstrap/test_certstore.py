"""The node's certificate files: pending keys, atomic swaps, pruning; CSR names and contents."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from nodehost.pki.certs import encode_certificates, make_client_certificate
from nodehost.plugins.bootstrap import certstore
from nodehost.plugins.bootstrap.csr import (
    CLIENT_USAGES,
    CertificateRequest,
    build_csr_pem,
    csr_name,
)
from nodehost.testing.apiserver import TestCA

REQUEST = CertificateRequest(
    signer="kubernetes.io/kube-apiserver-client-kubelet",
    common_name="system:node:n1",
    organizations=("system:nodes",),
    usages=CLIENT_USAGES,
)


def issue(ca: TestCA, key) -> bytes:
    cert = make_client_certificate(
        ca.certificate, ca.key, key.public_key(), user="system:node:n1",
        groups=["system:nodes"], serial=ca.next_serial(), days=1,
    )  # fmt: skip
    return encode_certificates([cert])


def test_the_pending_key_is_made_once_0600_and_reused(tmp_path: Path) -> None:
    first = certstore.pending_key(tmp_path / "certs", "kubelet-client")
    again = certstore.pending_key(tmp_path / "certs", "kubelet-client")
    path = tmp_path / "certs" / "kubelet-client.key.tmp"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert csr_name(first, REQUEST) == csr_name(again, REQUEST)


def test_storing_a_pair_points_current_at_it_and_keeps_one_older(tmp_path: Path) -> None:
    ca = TestCA()
    written = []
    for _ in range(3):
        key = certstore.pending_key(tmp_path, "kubelet-client")
        current = certstore.store_pair(tmp_path, "kubelet-client", issue(ca, key), key)
        certstore.forget_pending_key(tmp_path, "kubelet-client")
        written.append(current.resolve())
    pair = certstore.valid_pair(current)
    assert pair is not None and pair.path == current
    remaining = sorted(p.name for p in tmp_path.glob("kubelet-client-2*.pem"))
    assert remaining == sorted([written[1].name, written[2].name])
    assert stat.S_IMODE(written[2].stat().st_mode) == 0o600
    assert not (tmp_path / "kubelet-client.key.tmp").exists()


def test_a_pair_whose_key_does_not_match_is_not_valid(tmp_path: Path) -> None:
    ca = TestCA()
    key = certstore.pending_key(tmp_path, "a")
    other = certstore.pending_key(tmp_path, "b")
    (tmp_path / "mixed.pem").write_bytes(issue(ca, key) + (tmp_path / "b.key.tmp").read_bytes())
    assert other is not None
    assert certstore.read_pair(tmp_path / "mixed.pem") is None


def test_the_csr_name_depends_on_the_key(tmp_path: Path) -> None:
    one = certstore.pending_key(tmp_path, "one")
    two = certstore.pending_key(tmp_path, "two")
    assert csr_name(one, REQUEST).startswith("node-csr-")
    assert csr_name(one, REQUEST) != csr_name(two, REQUEST)


def test_a_serving_csr_carries_its_subject_and_sans_as_openssl_reads_them(tmp_path: Path) -> None:
    key = certstore.pending_key(tmp_path, "kubelet-server")
    request = CertificateRequest(
        signer="kubernetes.io/kubelet-serving",
        common_name="system:node:n1",
        organizations=("system:nodes",),
        usages=("digital signature", "key encipherment", "server auth"),
        dns_names=("n1.example.com",),
        ip_addresses=("10.0.0.5",),
    )
    (tmp_path / "r.csr").write_bytes(build_csr_pem(key, request))
    text = subprocess.run(
        ["openssl", "req", "-noout", "-text", "-verify", "-in", str(tmp_path / "r.csr")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "O=system:nodes, CN=system:node:n1" in text.replace(" = ", "=")
    assert "DNS:n1.example.com" in text and "IP Address:10.0.0.5" in text

"""The generated certificates as ``openssl`` sees them: chains, purposes, extensions, key pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodehost.pki.nodefolder import create_node_folder

KEY_TYPE_PAIRS = [("rsa", "rsa"), ("ecdsa", "ecdsa"), ("ed25519", "ed25519"), ("rsa", "ecdsa")]


@pytest.fixture(params=KEY_TYPE_PAIRS, ids=[f"ca-{c}-leaf-{k}" for c, k in KEY_TYPE_PAIRS])
def folder(request, make_ca, node_request, tmp_path: Path) -> tuple[Path, Path, str]:
    """(CA folder, node folder, leaf key type) for one CA/leaf key-type pair."""
    ca_type, leaf_type = request.param
    ca = make_ca("master", ca_type)
    create_node_folder(node_request(ca, tmp_path / "node1", key_type=leaf_type))
    return ca, tmp_path / "node1", leaf_type


def test_server_certificate_verifies_for_purpose_sslserver(folder, openssl) -> None:
    ca, node, _ = folder
    result = openssl("verify", "-CAfile", str(ca / "ca.crt"), "-purpose", "sslserver",
                     str(node / "server.crt"))  # fmt: skip
    assert (result.returncode, result.stdout.strip()) == (0, f"{node / 'server.crt'}: OK")


def test_client_certificate_verifies_for_purpose_sslclient(folder, openssl) -> None:
    ca, node, _ = folder
    result = openssl("verify", "-CAfile", str(ca / "ca.crt"), "-purpose", "sslclient",
                     str(node / "master-client.crt"))  # fmt: skip
    assert (result.returncode, result.stdout.strip()) == (0, f"{node / 'master-client.crt'}: OK")


def test_server_certificate_is_unsuitable_as_client_certificate(folder, openssl) -> None:
    ca, node, _ = folder
    result = openssl("verify", "-CAfile", str(ca / "ca.crt"), "-purpose", "sslclient",
                     str(node / "server.crt"))  # fmt: skip
    assert result.returncode != 0
    assert "unsuitable certificate purpose" in result.stdout + result.stderr


def test_node_client_ca_copy_verifies_the_client_certificate(folder, openssl) -> None:
    _, node, _ = folder
    result = openssl("verify", "-CAfile", str(node / "node-client-ca.crt"),
                     str(node / "master-client.crt"))  # fmt: skip
    assert result.returncode == 0


def test_server_extensions_are_origins(folder, openssl) -> None:
    _, node, leaf_type = folder
    result = openssl("x509", "-in", str(node / "server.crt"), "-noout",
                     "-ext", "subjectAltName,keyUsage,extendedKeyUsage")  # fmt: skip
    text = result.stdout
    assert "DNS:node1.example.com, DNS:10.0.0.1, IP Address:10.0.0.1" in text
    assert "TLS Web Server Authentication" in text
    assert "Digital Signature" in text
    assert ("Key Encipherment" in text) == (leaf_type == "rsa")


def test_client_extensions_and_subject_are_origins(folder, openssl) -> None:
    _, node, _ = folder
    crt = str(node / "master-client.crt")
    ext = openssl("x509", "-in", crt, "-noout", "-ext", "keyUsage,extendedKeyUsage").stdout
    subject = openssl("x509", "-in", crt, "-noout", "-subject").stdout.strip()
    assert "TLS Web Client Authentication" in ext
    assert subject == "subject=O = system:nodes, CN = system:node:node1"


@pytest.mark.parametrize(
    "pair", [("server.crt", "server.key"), ("master-client.crt", "master-client.key")]
)
def test_certificate_and_key_public_keys_match(folder, openssl, pair) -> None:
    _, node, _ = folder
    from_cert = openssl("x509", "-in", str(node / pair[0]), "-noout", "-pubkey")
    from_key = openssl("pkey", "-in", str(node / pair[1]), "-pubout")
    assert from_cert.returncode == from_key.returncode == 0
    assert from_cert.stdout == from_key.stdout


def test_serials_are_those_of_the_serial_file(folder, openssl) -> None:
    _, node, _ = folder
    serials = {
        openssl("x509", "-in", str(node / name), "-noout", "-serial").stdout.strip()
        for name in ("master-client.crt", "server.crt")
    }
    assert serials == {"serial=02", "serial=03"}


def test_ca_certificate_is_a_ca_for_openssl(folder, openssl) -> None:
    ca, _, _ = folder
    text = openssl("x509", "-in", str(ca / "ca.crt"), "-noout", "-ext", "basicConstraints").stdout
    assert "CA:TRUE" in text


def test_certificate_from_another_ca_does_not_verify(folder, make_ca, openssl) -> None:
    _, node, _ = folder
    other = make_ca("other", "ecdsa")
    result = openssl("verify", "-CAfile", str(other / "ca.crt"), str(node / "server.crt"))
    assert result.returncode != 0

"""The node identity's certificates: expired, foreign key, near their end, fine."""

from __future__ import annotations

import datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID

from nodehost.pki.keys import encode_private_key
from nodehost.plugins.bootstrap.checks import certificates_check

NOW = datetime.datetime.now(datetime.UTC)


def _pair(folder: Path, start: datetime.datetime, end: datetime.datetime) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "node1")])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(exist_ok=True)
    cert_file, key_file = folder / "server.crt", folder / "server.key"
    cert_file.write_bytes(certificate.public_bytes(Encoding.PEM))
    key_file.write_bytes(encode_private_key(key))
    return cert_file, key_file


def test_an_expired_certificate_is_an_error(tmp_path) -> None:
    cert, key = _pair(
        tmp_path / "a", NOW - datetime.timedelta(days=30), NOW - datetime.timedelta(days=1)
    )
    line = certificates_check([("serving", str(cert), str(key))], rotating=True)
    assert line.result.value == "error" and f"serving {cert}: expired" in line.found


def test_a_key_that_does_not_match_is_an_error(tmp_path) -> None:
    cert, _ = _pair(tmp_path / "a", NOW, NOW + datetime.timedelta(days=30))
    _, other_key = _pair(tmp_path / "b", NOW, NOW + datetime.timedelta(days=30))
    line = certificates_check([("serving", str(cert), str(other_key))], rotating=False)
    assert line.result.value == "error"
    assert f"its key {other_key} does not match" in line.found


def test_a_certificate_near_its_end_is_a_warning_while_rotation_runs(tmp_path) -> None:
    cert, key = _pair(
        tmp_path / "a", NOW - datetime.timedelta(days=95), NOW + datetime.timedelta(days=5)
    )
    rotating = certificates_check([("client", str(cert), str(key))], rotating=True)
    assert rotating.result.value == "warning" and rotating.fix == "certificate rotation renews them"
    alone = certificates_check([("client", str(cert), str(key))], rotating=False)
    assert alone.result.value == "error"


def test_a_valid_pair_is_ok_with_its_days_left(tmp_path) -> None:
    cert, key = _pair(tmp_path / "a", NOW, NOW + datetime.timedelta(days=30, hours=1))
    line = certificates_check([("serving", str(cert), str(key))], rotating=False)
    assert line.result.value == "ok" and "(30 days)" in line.found

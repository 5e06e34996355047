"""``create_signer_ca`` and ``load_signer``: Origin's CA files, never replaced, checked on load."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography import x509

from nodehost.errors import PKIError, UsageError
from nodehost.pki.ca import create_signer_ca, load_signer
from nodehost.pki.certs import decode_certificates

CA_FILES = {"ca.crt": 0o644, "ca.key": 0o600, "ca.serial.txt": 0o644, "ca-bundle.crt": 0o644}


def test_ca_folder_holds_origins_files_with_their_modes(tmp_path: Path) -> None:
    result = create_signer_ca(tmp_path / "master", name="my-ca", key_type="ecdsa")
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "master").iterdir()}
    assert modes == CA_FILES
    assert stat.S_IMODE((tmp_path / "master").stat().st_mode) == 0o755
    assert {p.name for p in result.files} == set(CA_FILES)


def test_new_ca_serial_file_is_00(ca_dir: Path) -> None:
    assert (ca_dir / "ca.serial.txt").read_bytes() == b"00"


def test_ca_certificate_is_a_ca_named_and_valid_five_years(tmp_path: Path) -> None:
    create_signer_ca(tmp_path, name="my-ca", key_type="ecdsa")
    cert = decode_certificates((tmp_path / "ca.crt").read_bytes(), "ca.crt")[0]
    assert cert.subject.rfc4514_string() == "CN=my-ca"
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime.days == 1825
    assert cert.serial_number == 1


def test_bundle_is_the_ca_certificate(ca_dir: Path) -> None:
    assert (ca_dir / "ca-bundle.crt").read_bytes() == (ca_dir / "ca.crt").read_bytes()


def test_default_name_is_signer_at_unix_time(tmp_path: Path) -> None:
    create_signer_ca(tmp_path, key_type="ecdsa")
    cert = decode_certificates((tmp_path / "ca.crt").read_bytes(), "ca.crt")[0]
    assert cert.subject.rfc4514_string().startswith("CN=nodehost-signer@")


def test_existing_ca_is_never_replaced(ca_dir: Path) -> None:
    key_before = (ca_dir / "ca.key").read_bytes()
    with pytest.raises(PKIError, match=r"ca\.(crt|key|serial\.txt).* already exists"):
        create_signer_ca(ca_dir, key_type="ecdsa")
    assert (ca_dir / "ca.key").read_bytes() == key_before


def test_lifetime_above_default_returns_origins_warning(tmp_path: Path) -> None:
    result = create_signer_ca(tmp_path, name="long", expire_days=4000, key_type="ecdsa")
    assert result.warnings == (
        'WARNING: Validity period of the certificate for "long" is greater than 5 years!\n'
        "WARNING: By security reasons it is strongly recommended to change this period "
        "and make it smaller!",
    )


def test_negative_lifetime_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as raised:
        create_signer_ca(tmp_path, expire_days=-1, key_type="ecdsa")
    assert raised.value.param == "--expire-days"
    assert not tmp_path.joinpath("ca.key").exists()


def test_load_signer_reads_a_created_ca(ca_dir: Path) -> None:
    signer = load_signer(ca_dir / "ca.crt", ca_dir / "ca.key", ca_dir / "ca.serial.txt")
    assert list(signer.reserve_serials(2)) == [2, 3]


def test_signer_key_of_another_ca_is_rejected(ca_dir: Path, make_ca) -> None:
    other = make_ca("other", "ecdsa")
    with pytest.raises(PKIError, match=r"signer key .*other/ca.key does not match signer cert"):
        load_signer(ca_dir / "ca.crt", other / "ca.key", ca_dir / "ca.serial.txt")


def test_signer_certificate_that_is_not_pem_is_rejected(ca_dir: Path) -> None:
    (ca_dir / "ca.crt").write_text("not a certificate\n")
    with pytest.raises(PKIError, match=r"signer certificate .*ca.crt: not a PEM certificate"):
        load_signer(ca_dir / "ca.crt", ca_dir / "ca.key", ca_dir / "ca.serial.txt")


def test_unreadable_serial_is_rejected_before_anything_is_issued(ca_dir: Path) -> None:
    (ca_dir / "ca.serial.txt").write_text("zz")
    with pytest.raises(PKIError, match="does not hold a hexadecimal number"):
        load_signer(ca_dir / "ca.crt", ca_dir / "ca.key", ca_dir / "ca.serial.txt")


def test_leaf_certificate_is_not_accepted_as_signer(
    ca_dir: Path, tmp_path: Path, node_request
) -> None:
    from nodehost.pki.nodefolder import create_node_folder

    node_dir = tmp_path / "n"
    create_node_folder(node_request(ca_dir, node_dir))
    with pytest.raises(PKIError, match="not a CA certificate"):
        load_signer(node_dir / "server.crt", node_dir / "server.key", ca_dir / "ca.serial.txt")

"""A signer CA: load one to issue node certificates, or create one (``nodehost ca create``).

A signer CA is three files (Origin's ``--signer-cert``, ``--signer-key``,
``--signer-serial``): the CA certificate (PEM; the first certificate signs, all
of them are appended to issued serving certificates as the chain), its private
key, and the serial file (:mod:`nodehost.pki.serial`).  ``nodehost ca create``
writes them as Origin's master did -- ``ca.crt``, ``ca.key``,
``ca.serial.txt`` -- plus ``ca-bundle.crt`` (the CA bundle clients trust,
here the same certificate).
"""

from __future__ import annotations

import time
from pathlib import Path

from cryptography import x509

from nodehost.errors import PKIError, UsageError
from nodehost.fileread import PEM_LIMIT, read_file
from nodehost.frozen import frozen
from nodehost.options import check_expire_days
from nodehost.pki import DEFAULT_KEY_TYPE
from nodehost.pki.certs import (
    certificate_days_and_warning,
    decode_certificates,
    encode_certificates,
    make_ca_certificate,
)
from nodehost.pki.commit import (
    CERT_MODE,
    KEY_MODE,
    PlannedFile,
    commit_files,
    describe_os_error,
)
from nodehost.pki.hostnames import MAX_COMMON_NAME
from nodehost.pki.keys import (
    PrivateKey,
    decode_private_key,
    encode_private_key,
    generate_private_key,
    key_matches,
)
from nodehost.pki.serial import INITIAL_SERIAL_TEXT, read_serial, reserve_serials

CA_CERT_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"
CA_SERIAL_FILE = "ca.serial.txt"
CA_BUNDLE_FILE = "ca-bundle.crt"
#: Origin's serial file is created 0644 (later updates keep the mode).
CA_SERIAL_MODE = 0o644


@frozen
class Signer:
    """A loaded signer CA, ready to issue certificates."""

    certificate: x509.Certificate
    chain: tuple[x509.Certificate, ...]
    key: PrivateKey
    serial_file: Path

    def reserve_serials(self, count: int) -> range:
        """Reserve ``count`` serial numbers (see :func:`nodehost.pki.serial.reserve_serials`)."""
        return reserve_serials(self.serial_file, count)


@frozen
class SignerCAResult:
    """What :func:`create_signer_ca` wrote, and Origin's lifetime warning if any."""

    directory: Path
    files: tuple[Path, ...]
    warnings: tuple[str, ...]


def _read(path: Path, what: str) -> bytes:
    try:
        return read_file(path, PEM_LIMIT)
    except OSError as error:
        raise PKIError(f"cannot read {what} {path}: {error.strerror}") from None


def load_signer(cert_file: Path, key_file: Path, serial_file: Path) -> Signer:
    """Load and check a signer CA; :class:`PKIError` names the file and what is wrong.

    Checks: the certificate file holds PEM certificates and the first is a CA;
    the key loads and belongs to that certificate; the serial file is readable
    and holds a hex number.
    """
    chain = tuple(
        decode_certificates(
            _read(cert_file, "signer certificate"), f"signer certificate {cert_file}"
        )
    )
    certificate = chain[0]
    if not _is_ca(certificate):
        raise PKIError(f"signer certificate {cert_file}: not a CA certificate (CA:TRUE missing)")
    key = decode_private_key(_read(key_file, "signer key"), f"signer key {key_file}")
    if not key_matches(key, certificate.public_key()):
        raise PKIError(f"signer key {key_file} does not match signer certificate {cert_file}")
    read_serial(Path(serial_file))
    return Signer(certificate, chain, key, Path(serial_file))


def _is_ca(certificate: x509.Certificate) -> bool:
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    except x509.ExtensionNotFound:
        return False
    return constraints.value.ca


def default_signer_name() -> str:
    """Origin's default CA name, ``<prefix>@<unix time>``, with nodehost's prefix."""
    return f"nodehost-signer@{int(time.time())}"


def create_signer_ca(
    directory: Path,
    name: str | None = None,
    expire_days: int = 0,
    key_type: str = DEFAULT_KEY_TYPE,
) -> SignerCAResult:
    """Create a signer CA in ``directory`` (``ca.crt``, ``ca.key``, ``ca.serial.txt``, bundle).

    ``expire_days`` 0 means the default (1825 days); more than the default adds
    Origin's warning to the result.  The folder is created (0755) if needed.
    Raises :class:`UsageError` for a bad name or negative lifetime and
    :class:`PKIError` if any of the four files exists already (an existing CA
    is never replaced) or the folder cannot be written; nothing is left half-made.
    """
    name = name or default_signer_name()
    if len(name) > MAX_COMMON_NAME:
        raise UsageError(f"{name!r} is longer than {MAX_COMMON_NAME} characters", "--name")
    check_expire_days(expire_days)
    directory = Path(directory).absolute()
    existing = [
        directory / f
        for f in (CA_CERT_FILE, CA_KEY_FILE, CA_SERIAL_FILE, CA_BUNDLE_FILE)
        if (directory / f).exists()
    ]
    if existing:
        raise PKIError(f"{existing[0]} already exists; refusing to replace an existing CA")
    days, warning = certificate_days_and_warning(expire_days, name, ca=True)
    key = generate_private_key(key_type)
    cert_pem = encode_certificates([make_ca_certificate(key, name, days)])
    files = [
        PlannedFile(CA_KEY_FILE, encode_private_key(key), KEY_MODE, replace=False),
        PlannedFile(CA_CERT_FILE, cert_pem, CERT_MODE, replace=False),
        PlannedFile(CA_SERIAL_FILE, INITIAL_SERIAL_TEXT, CA_SERIAL_MODE, replace=False),
        PlannedFile(CA_BUNDLE_FILE, cert_pem, CERT_MODE, replace=False),
    ]
    try:
        commit_files(directory, files)
    except OSError as error:
        raise PKIError(f"cannot write CA into {directory}: {describe_os_error(error)}") from None
    return SignerCAResult(
        directory=directory,
        files=tuple(directory / f.name for f in files),
        warnings=(warning,) if warning else (),
    )

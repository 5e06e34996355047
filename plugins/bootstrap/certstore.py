"""The node's certificate files, kept the way the kubelet keeps them
(:ref:`origin-bootstrap-client-certificate`).

In the certificate folder, per prefix (``kubelet-client``, ``kubelet-server``):

* ``<prefix>-<UTC timestamp>.pem`` -- certificate and private key in one file, 0600;
* ``<prefix>-current.pem``         -- a symlink to the newest one, swapped atomically
  (a new symlink renamed over the old), so a reader sees the old pair or the new one;
* ``<prefix>.key.tmp``             -- the key of a request still in flight, kept
  until its certificate arrives so a restart files the same request.

Keys are created 0600 and never overwritten (:mod:`nodehost.pki.atomic`).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodehost.fileread import PEM_LIMIT, read_file
from nodehost.frozen import frozen
from nodehost.pki.atomic import fsync_directory, make_directories, write_atomic
from nodehost.pki.nodefiles import CLIENT_CERT_PREFIX, SERVING_CERT_PREFIX, current_pair_file

if TYPE_CHECKING:  # pragma: no cover
    from cryptography import x509

    from nodehost.pki.keys import PrivateKey

CLIENT_PREFIX = CLIENT_CERT_PREFIX
SERVING_PREFIX = SERVING_CERT_PREFIX
PAIR_MODE = 0o600
CERT_DIR_MODE = 0o700


@frozen
class StoredPair:
    """A certificate and its key as read from ``path``."""

    path: Path
    certificate: x509.Certificate
    key: PrivateKey

    @property
    def not_before(self) -> datetime.datetime:
        return self.certificate.not_valid_before_utc

    @property
    def not_after(self) -> datetime.datetime:
        return self.certificate.not_valid_after_utc

    def remaining_seconds(self, now: datetime.datetime | None = None) -> float:
        now = now or datetime.datetime.now(datetime.UTC)
        return (self.not_after - now).total_seconds()

    def lifetime_seconds(self) -> float:
        return (self.not_after - self.not_before).total_seconds()


def current_path(cert_dir: Path, prefix: str) -> Path:
    return current_pair_file(cert_dir, prefix)


#: Parsed pairs by file identity: rotation looks at its files every few seconds, and a
#: pair is parsed again only when the file behind the path is another one (pairs are
#: written to new files and swapped in, never changed in place).
_PARSED: dict[tuple[str, int, int, int, int], StoredPair | None] = {}
_PARSED_LIMIT = 4096


def read_pair(path: Path) -> StoredPair | None:
    """The pair in ``path`` if it holds a certificate and the key that matches it, else None."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    identity = (str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if identity not in _PARSED:
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        _PARSED[identity] = _parse_pair(path)
    return _PARSED[identity]


def _parse_pair(path: Path) -> StoredPair | None:
    from nodehost.errors import PKIError
    from nodehost.pki.certs import decode_certificates
    from nodehost.pki.keys import decode_private_key, key_matches

    try:
        data = read_file(path, PEM_LIMIT)
        certificate = decode_certificates(data, str(path))[0]
        key = decode_private_key(data, str(path))
    except (OSError, PKIError):
        return None
    if not key_matches(key, certificate.public_key()):
        return None
    return StoredPair(Path(path), certificate, key)


def valid_pair(path: Path) -> StoredPair | None:
    """:func:`read_pair`, and only if the certificate is within its validity period now."""
    pair = read_pair(path)
    now = datetime.datetime.now(datetime.UTC)
    if pair is None or not (pair.not_before <= now < pair.not_after):
        return None
    return pair


def pending_key(cert_dir: Path, prefix: str) -> PrivateKey:
    """The key of the request in flight: ``<prefix>.key.tmp``, made (0600) if absent."""
    from nodehost.errors import PKIError
    from nodehost.pki.keys import decode_private_key, encode_private_key, generate_private_key

    make_directories(Path(cert_dir), CERT_DIR_MODE)
    path = Path(cert_dir) / f"{prefix}.key.tmp"
    with contextlib.suppress(FileNotFoundError):
        try:
            return decode_private_key(read_file(path, PEM_LIMIT), str(path))
        except PKIError:
            path.unlink()  # unusable: a new request with a new key
    key = generate_private_key("ecdsa")
    try:
        write_atomic(path, encode_private_key(key), PAIR_MODE, replace=False)
    except FileExistsError:
        return decode_private_key(read_file(path, PEM_LIMIT), str(path))
    return key


def forget_pending_key(cert_dir: Path, prefix: str) -> None:
    (Path(cert_dir) / f"{prefix}.key.tmp").unlink(missing_ok=True)


def store_pair(cert_dir: Path, prefix: str, cert_pem: bytes, key: PrivateKey) -> Path:
    """Write a new ``<prefix>-<timestamp>.pem`` and point ``<prefix>-current.pem`` at it.

    Returns the path of the ``-current.pem`` link.  Raises ``OSError``.
    """
    from nodehost.pki.keys import encode_private_key

    cert_dir = Path(cert_dir)
    make_directories(cert_dir, CERT_DIR_MODE)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d-%H-%M-%S")
    data = cert_pem.rstrip(b"\n") + b"\n" + encode_private_key(key)
    target = cert_dir / f"{prefix}-{stamp}.pem"
    while True:
        try:
            write_atomic(target, data, PAIR_MODE, replace=False, sync_directory=False)
            break
        except FileExistsError:
            target = cert_dir / f"{prefix}-{stamp}-{secrets.token_hex(2)}.pem"
    current = current_path(cert_dir, prefix)
    previous = os.readlink(current) if current.is_symlink() else None
    link = cert_dir / f".{current.name}.tmp-{secrets.token_hex(4)}"
    os.symlink(target.name, link)
    try:
        os.replace(link, current)
    except BaseException:
        link.unlink(missing_ok=True)
        raise
    fsync_directory(cert_dir)
    _prune(cert_dir, prefix, keep={target.name, previous or ""})
    return current


def _prune(cert_dir: Path, prefix: str, keep: set[str]) -> None:
    """Remove older ``<prefix>-<timestamp>.pem`` files: the new one and the one before stay."""
    for old in cert_dir.glob(f"{prefix}-*.pem"):
        if old.name not in keep and not old.is_symlink() and old.name[len(prefix) + 1].isdigit():
            old.unlink(missing_ok=True)


def certificate_status(name: str, pair: StoredPair | None, path: Path) -> dict[str, Any]:
    """The JSON-ready expiry status of one certificate (``/status`` ``details``)."""
    if pair is None:
        return {"name": name, "file": str(path), "present": False}
    from nodehost.pki.certs import expiry_fields

    return expiry_fields(name, pair.certificate, str(path))

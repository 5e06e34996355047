"""Certificate profiles (signer CA, node client, node server) and PEM in and out.

The profiles are Origin's (``pkg/cmd/server/crypto``, :ref:`origin-node-certificates`):

* every certificate: NotBefore = now - 1 s, NotAfter = now + lifetime,
  basic constraints present, SHA-256 signature (RSA or ECDSA signer; Ed25519
  signs without a separate hash);
* CA: CN = name, ``CA:TRUE``, key usage digitalSignature + keyEncipherment + keyCertSign;
* client: CN = user, O = groups, EKU clientAuth;
* server: CN and SANs from :class:`~nodehost.pki.hostnames.Hostnames`, EKU serverAuth.

Leaf key usage is digitalSignature + keyEncipherment for RSA keys as Origin.
For ECDSA and Ed25519 keys keyEncipherment is left out: it has no meaning for
them and RFC 5480/8410 do not allow it (Go's golang/go#36499).  nodehost also
adds subject/authority key identifiers, which Origin's Go version added itself
for CAs and which ``openssl`` uses to build chains.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import cast

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from nodehost.errors import PKIError
from nodehost.options import DEFAULT_EXPIRE_DAYS
from nodehost.pki import DEFAULT_CA_DAYS
from nodehost.pki.hostnames import Hostnames
from nodehost.pki.keys import PrivateKey, PublicKey

_ONE_SECOND = datetime.timedelta(seconds=1)


def lifetime_days(expire_days: int, default_days: int) -> int:
    """The lifetime to use: ``expire_days``, or ``default_days`` when it is 0 (unset)."""
    return expire_days if expire_days > 0 else default_days


def lifetime_warning(common_name: str, default_days: int) -> str:
    """Origin's two-line warning for a lifetime above the default (printed to stderr)."""
    years = default_days // 365
    return (
        f'WARNING: Validity period of the certificate for "{common_name}" is greater than '
        f"{years} years!\n"
        "WARNING: By security reasons it is strongly recommended to change this period "
        "and make it smaller!"
    )


def decode_certificates(data: bytes, source: str) -> list[x509.Certificate]:
    """Every ``CERTIFICATE`` block in PEM ``data``; :class:`PKIError` if there is none."""
    if b"-----BEGIN CERTIFICATE-----" not in data:
        raise PKIError(f"{source}: not a PEM certificate")
    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise PKIError(f"{source}: a PEM certificate block does not parse") from None
    return certificates


def encode_certificates(certificates: Sequence[x509.Certificate]) -> bytes:
    """The PEM blocks of ``certificates``, in order."""
    return b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in certificates)


def signature_hash(signer_key: PrivateKey) -> hashes.SHA256 | None:
    """SHA-256 for RSA and ECDSA signers; ``None`` for Ed25519 (it hashes internally)."""
    return None if isinstance(signer_key, ed25519.Ed25519PrivateKey) else hashes.SHA256()


def _leaf_key_usage(public_key: PublicKey) -> x509.KeyUsage:
    return _key_usage(key_encipherment=isinstance(public_key, rsa.RSAPublicKey), cert_sign=False)


def _key_usage(*, key_encipherment: bool, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


def _base_builder(
    subject: x509.Name, public_key: PublicKey, serial: int, days: int
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .public_key(public_key)
        .serial_number(serial)
        .not_valid_before(now - _ONE_SECOND)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def make_ca_certificate(key: PrivateKey, name: str, days: int, serial: int = 1) -> x509.Certificate:
    """A self-signed signer CA certificate for ``key``, valid ``days`` days."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    encipher = isinstance(key, rsa.RSAPrivateKey)
    builder = (
        _base_builder(subject, key.public_key(), serial, days)
        .issuer_name(subject)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(key_encipherment=encipher, cert_sign=True), critical=True)
    )
    return builder.sign(key, signature_hash(key))


def _sign_leaf(
    builder: x509.CertificateBuilder,
    issuer: x509.Certificate,
    issuer_key: PrivateKey,
    public_key: PublicKey,
    usage: x509.ObjectIdentifier,
) -> x509.Certificate:
    authority = x509.AuthorityKeyIdentifier.from_issuer_public_key(
        cast("PublicKey", issuer.public_key())  # a CA nodehost accepted: RSA, EC or Ed25519
    )
    builder = (
        builder.issuer_name(issuer.subject)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_leaf_key_usage(public_key), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(authority, critical=False)
    )
    return builder.sign(issuer_key, signature_hash(issuer_key))


def make_client_certificate(
    issuer: x509.Certificate,
    issuer_key: PrivateKey,
    public_key: PublicKey,
    *,
    user: str,
    groups: Sequence[str],
    serial: int,
    days: int,
) -> x509.Certificate:
    """A client certificate: CN = ``user``, one O per group, EKU clientAuth."""
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
    builder = _base_builder(x509.Name(attributes), public_key, serial, days)
    return _sign_leaf(builder, issuer, issuer_key, public_key, ExtendedKeyUsageOID.CLIENT_AUTH)


def make_server_certificate(
    issuer: x509.Certificate,
    issuer_key: PrivateKey,
    public_key: PublicKey,
    *,
    hostnames: Hostnames,
    serial: int,
    days: int,
) -> x509.Certificate:
    """A serving certificate for ``hostnames`` (CN, IP SANs, DNS SANs), EKU serverAuth."""
    common_name = hostnames.common_name
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)] if common_name else []
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in hostnames.dns_names]
    sans.extend(x509.IPAddress(ip) for ip in hostnames.ip_addresses)
    builder = _base_builder(x509.Name(attributes), public_key, serial, days).add_extension(
        x509.SubjectAlternativeName(sans), critical=not attributes
    )
    return _sign_leaf(builder, issuer, issuer_key, public_key, ExtendedKeyUsageOID.SERVER_AUTH)


def certificate_days_and_warning(
    expire_days: int, common_name: str, *, ca: bool = False
) -> tuple[int, str | None]:
    """The lifetime for ``expire_days`` and Origin's warning if it exceeds the default."""
    default = DEFAULT_CA_DAYS if ca else DEFAULT_EXPIRE_DAYS
    days = lifetime_days(expire_days, default)
    warning = lifetime_warning(common_name, default) if days > default else None
    return days, warning


def common_name_of(certificate: x509.Certificate) -> str:
    """The certificate's subject CN ("" if none)."""
    values = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(values[0].value) if values else ""


def organizations_of(certificate: x509.Certificate) -> list[str]:
    """The certificate's subject O values, in order."""
    return [
        str(a.value) for a in certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    ]


def expiry_fields(name: str, certificate: x509.Certificate, source: str) -> dict[str, object]:
    """The JSON-ready expiry of ``certificate`` (named ``name``, from ``source``): what
    ``/status`` shows in a component's ``details.certificates``."""
    not_after = certificate.not_valid_after_utc
    remaining = (not_after - datetime.datetime.now(datetime.UTC)).total_seconds()
    return {
        "name": name,
        "file": source,
        "present": True,
        "subject": certificate.subject.rfc4514_string(),
        "not_before": certificate.not_valid_before_utc.isoformat(),
        "not_after": not_after.isoformat(),
        "not_after_timestamp": not_after.timestamp(),
        "remaining_seconds": round(remaining, 3),
    }


def certificate_expiry(name: str, path: str, pem: bytes | None = None) -> dict[str, object]:
    """:func:`expiry_fields` of the first certificate of ``pem`` (else of the file ``path``);
    ``present: False`` when there is none to read."""
    from nodehost.fileread import PEM_LIMIT, read_file

    try:
        data = pem if pem is not None else read_file(path, PEM_LIMIT)
        return expiry_fields(name, decode_certificates(data, path)[0], path)
    except (OSError, PKIError, IndexError):
        return {"name": name, "file": path, "present": False}

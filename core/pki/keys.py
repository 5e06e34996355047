"""Private keys: generate, encode as Origin wrote them, load, and match against certificates.

Key types (``--key-type``):

* ``rsa``     -- 2048 bits, PEM ``RSA PRIVATE KEY`` (PKCS#1), exactly Origin's format and the
  default; every Kubernetes component and tool accepts it.
* ``ecdsa``   -- NIST P-256, PEM ``EC PRIVATE KEY`` (SEC 1), the format Go's
  ``x509.MarshalECPrivateKey`` writes; this is also the key type the kubelet itself
  generates for its CSR-based client and serving certificates.  Accepted everywhere
  Kubernetes reads keys (``keyutil.ParsePrivateKeyPEM``, ``tls.X509KeyPair``), and by kubeadm.
* ``ed25519`` -- PEM ``PRIVATE KEY`` (PKCS#8; there is no "traditional" format).
  Where it works: Go's ``crypto/tls`` and ``crypto/x509`` handle Ed25519 certificates
  and signatures since Go 1.13, so the kube-apiserver, kubelet and kubectl accept
  Ed25519 client and serving certificates in TLS 1.2 and 1.3 (the tests check kubectl
  against a loopback server with Ed25519 certificates from a ``nodehost`` CA), and
  OpenSSL >= 1.1.1 does too.  Where it does not: kubeadm offers only RSA and ECDSA
  (``encryptionAlgorithm``); FIPS-mode Go builds reject Ed25519 leaf and CA
  certificates; the kubelet's own certificate rotation (CSR API) always makes ECDSA
  P-256 keys, so Ed25519 applies only to the files nodehost writes.  Not verified here:
  whether every external CSR signer/approver accepts an Ed25519 public key in a CSR
  (Kubernetes' own CSR validation requires the ``key encipherment`` usage for the
  kubelet signers, which is meaningless for non-RSA keys -- kubernetes/kubernetes#109077).
  Use it when every client of the node is known to handle it.

Private keys never pass through here on their way to disk: callers write the
PEM bytes with :func:`nodehost.pki.atomic.write_atomic` and mode 0600.
"""

from __future__ import annotations

from typing import TypeAlias

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes

from nodehost.errors import PKIError

PrivateKey: TypeAlias = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
PublicKey: TypeAlias = rsa.RSAPublicKey | ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey

RSA_KEY_BITS = 2048


def generate_private_key(key_type: str) -> PrivateKey:
    """A new private key of ``key_type`` (one of :data:`nodehost.pki.KEY_TYPES`).

    Raises ``ValueError`` for an unknown type (the CLI restricts the choice).
    """
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=RSA_KEY_BITS)
    if key_type == "ecdsa":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    raise ValueError(f"unknown key type {key_type!r}")


def encode_private_key(key: PrivateKey) -> bytes:
    """PEM of ``key``: PKCS#1 for RSA and SEC 1 for ECDSA (as Go/Origin), PKCS#8 for Ed25519."""
    private_format = (
        serialization.PrivateFormat.PKCS8
        if isinstance(key, ed25519.Ed25519PrivateKey)
        else serialization.PrivateFormat.TraditionalOpenSSL
    )
    return key.private_bytes(
        serialization.Encoding.PEM, private_format, serialization.NoEncryption()
    )


def decode_private_key(data: bytes, source: str) -> PrivateKey:
    """Load an unencrypted PEM private key; ``source`` names the file in errors.

    Raises :class:`PKIError` when ``data`` holds no usable key.
    """
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise PKIError(f"{source}: the private key is encrypted") from None
    except UnsupportedAlgorithm:
        raise PKIError(f"{source}: unsupported private key algorithm") from None
    except ValueError:
        raise PKIError(f"{source}: not a PEM private key") from None
    if not isinstance(
        key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
    ):
        raise PKIError(f"{source}: unsupported private key type {type(key).__name__}")
    return key


def public_key_der(key: PublicKey | CertificatePublicKeyTypes) -> bytes:
    """The DER SubjectPublicKeyInfo of ``key``, for comparing keys."""
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def key_matches(private_key: PrivateKey, public_key: PublicKey | CertificatePublicKeyTypes) -> bool:
    """Whether ``public_key`` (say, a certificate's) belongs to ``private_key``."""
    return public_key_der(private_key.public_key()) == public_key_der(public_key)

"""Private keys are written in the formats Origin and Go use, and loading fails clearly."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from nodehost.errors import PKIError
from nodehost.pki.keys import (
    decode_private_key,
    encode_private_key,
    generate_private_key,
    key_matches,
)


@pytest.mark.parametrize(
    ("key_type", "header"),
    [
        ("rsa", b"-----BEGIN RSA PRIVATE KEY-----"),
        ("ecdsa", b"-----BEGIN EC PRIVATE KEY-----"),
        ("ed25519", b"-----BEGIN PRIVATE KEY-----"),
    ],
)
def test_key_pem_uses_origins_block_type(key_type: str, header: bytes) -> None:
    assert encode_private_key(generate_private_key(key_type)).startswith(header)


def test_rsa_keys_have_2048_bits() -> None:
    key = generate_private_key("rsa")
    assert isinstance(key, rsa.RSAPrivateKey)
    assert key.key_size == 2048


def test_ecdsa_keys_use_p256() -> None:
    key = generate_private_key("ecdsa")
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.curve.name == "secp256r1"


@pytest.mark.parametrize("key_type", ["rsa", "ecdsa", "ed25519"])
def test_encoded_key_loads_back_and_matches_itself(key_type: str) -> None:
    key = generate_private_key(key_type)
    loaded = decode_private_key(encode_private_key(key), "k.key")
    assert key_matches(loaded, key.public_key())


def test_other_key_does_not_match() -> None:
    assert not key_matches(
        generate_private_key("ecdsa"), generate_private_key("ecdsa").public_key()
    )


def test_non_pem_key_names_the_file() -> None:
    with pytest.raises(PKIError, match=r"^ca\.key: not a PEM private key"):
        decode_private_key(b"hello", "ca.key")


def test_encrypted_key_is_reported_as_encrypted() -> None:
    key = generate_private_key("ecdsa")
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pw"),
    )
    with pytest.raises(PKIError, match=r"ca\.key: the private key is encrypted"):
        decode_private_key(pem, "ca.key")

"""Go's ``tls.LoadX509KeyPair`` check of a serving pair, without ``cryptography``.

``nodehost config validate`` only needs to know that a certificate/key pair
loads and matches, and the leaf's names; importing ``cryptography``'s x509
for that was the largest part of the command's time.  Here OpenSSL (the
stdlib :mod:`ssl`) parses the certificates and checks that the key is the
certificate's, and a minimal DER reader takes the leaf's subject CN, DNS
subjectAltNames and key algorithm.  Errors are Go's wording, as
``ValueError``.
"""

from __future__ import annotations

import binascii
import re

_CERT_BLOCK = re.compile(rb"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.S)
_KEY_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----(.*?)-----END \1-----", re.S)

_OID_COMMON_NAME = "2.5.4.3"
_OID_SUBJECT_ALT_NAME = "2.5.29.17"
_KEY_ALGORITHMS = {
    "1.2.840.113549.1.1.1": "rsa",
    "1.2.840.10045.2.1": "ecdsa",
    "1.3.101.112": "ed25519",
}
_PEM_KEY_TYPES = {b"RSA PRIVATE KEY": "rsa", b"EC PRIVATE KEY": "ecdsa"}
_STRING_CODECS = {0x0C: "utf-8", 0x13: "ascii", 0x16: "ascii", 0x14: "latin-1", 0x1E: "utf-16-be"}
# OpenSSL's reasons when the key parsed but is not the certificate's: another
# algorithm lands in another slot (no certificate for it), the same one is compared.
_TYPE_MISMATCH = {"NO_CERTIFICATE_ASSIGNED", "KEY_TYPE_MISMATCH"}
_VALUE_MISMATCH = {"KEY_VALUES_MISMATCH", "KEY_PARAMETERS_MISMATCH"}

MALFORMED = "x509: malformed certificate"


class _Malformed(Exception):
    pass


def certificate_names(cert_file: str, key_file: str, cert_pem: bytes, key_pem: bytes) -> list[str]:
    """The leaf's subject CN ("" if none) then its DNS subjectAltNames, once the pair
    (already read from ``cert_file``/``key_file`` as ``cert_pem``/``key_pem``) loads and
    matches; ``ValueError`` with Go's wording otherwise."""
    if b"-----BEGIN" not in cert_pem:
        raise ValueError("tls: failed to find any PEM data in certificate input")
    if b"-----BEGIN CERTIFICATE-----" not in cert_pem:
        raise ValueError('tls: failed to find "CERTIFICATE" PEM block in certificate input')
    ders = _certificate_ders(cert_pem)
    try:
        common_name, dns_names, algorithm = _leaf(ders[0])
    except (_Malformed, IndexError, UnicodeDecodeError):
        raise ValueError(MALFORMED) from None
    if b"-----BEGIN" not in key_pem:
        raise ValueError("tls: failed to find any PEM data in key input")
    if b"PRIVATE KEY-----" not in key_pem:
        raise ValueError(
            "tls: found a certificate rather than a key in the PEM for the private key"
        )
    _check_pair(cert_file, key_file, algorithm, _key_algorithm(key_pem))
    return [common_name, *dns_names]


def _certificate_ders(cert_pem: bytes) -> list[bytes]:
    """Every CERTIFICATE block as DER, each parsed by OpenSSL; ``ValueError`` if one is not."""
    import ssl

    try:
        ders = [binascii.a2b_base64(block) for block in _CERT_BLOCK.findall(cert_pem)]
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=b"".join(ders))
    except (binascii.Error, ssl.SSLError, ValueError):
        raise ValueError(MALFORMED) from None
    if not ders:
        raise ValueError(MALFORMED)
    return ders


def _check_pair(cert_file: str, key_file: str, cert_algorithm: str, key_algorithm: str) -> None:
    """OpenSSL loads the pair: the key parses (unencrypted) and is the leaf's."""
    import ssl

    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(
            cert_file, key_file, password=_no_password
        )
    except ssl.SSLError as error:
        if error.reason in _TYPE_MISMATCH or (
            error.reason in _VALUE_MISMATCH and cert_algorithm != key_algorithm
        ):
            raise ValueError("tls: private key type does not match public key type") from None
        if error.reason in _VALUE_MISMATCH:
            raise ValueError("tls: private key does not match public key") from None
        raise ValueError("tls: failed to parse private key") from None
    except (OSError, _Encrypted):
        raise ValueError("tls: failed to parse private key") from None


class _Encrypted(Exception):
    pass


def _no_password() -> bytes:
    raise _Encrypted  # an encrypted key: Go loads none


def _key_algorithm(key_pem: bytes) -> str:
    """The key's algorithm from its PEM block (PKCS#1, SEC1 or PKCS#8); "" if unknown."""
    match = _KEY_BLOCK.search(key_pem)
    if match is None:
        return ""
    if match.group(1) in _PEM_KEY_TYPES:
        return _PEM_KEY_TYPES[match.group(1)]
    try:
        info = _children(_element(binascii.a2b_base64(match.group(2)), 0)[1])
        return _KEY_ALGORITHMS.get(_oid(_children(info[1][1])[0][1]), "")
    except (_Malformed, IndexError, binascii.Error):
        return ""


# --- a minimal DER reader ------------------------------------------------------------------


def _element(data: bytes, at: int) -> tuple[int, bytes, int]:
    """The TLV at ``at``: ``(tag, contents, end)``."""
    if at + 2 > len(data):
        raise _Malformed
    tag, length = data[at], data[at + 1]
    at += 2
    if length & 0x80:
        size = length & 0x7F
        if size == 0 or size > 4 or at + size > len(data):
            raise _Malformed
        length = int.from_bytes(data[at : at + size], "big")
        at += size
    if at + length > len(data):
        raise _Malformed
    return tag, data[at : at + length], at + length


def _children(data: bytes) -> list[tuple[int, bytes]]:
    """The TLVs of a constructed value's contents."""
    found, at = [], 0
    while at < len(data):
        tag, contents, at = _element(data, at)
        found.append((tag, contents))
    return found


def _oid(contents: bytes) -> str:
    if not contents:
        raise _Malformed
    arcs, value = [contents[0] // 40, contents[0] % 40], 0
    for byte in contents[1:]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    return ".".join(map(str, arcs))


def _leaf(der: bytes) -> tuple[str, list[str], str]:
    """A certificate's subject CN, DNS subjectAltNames and key algorithm."""
    _, certificate, _ = _element(der, 0)
    tbs = _children(_children(certificate)[0][1])
    if tbs[0][0] == 0xA0:  # [0] version
        tbs = tbs[1:]
    # serial, signature, issuer, validity, subject, subjectPublicKeyInfo, ..., [3] extensions
    subject, key_info = tbs[4][1], tbs[5][1]
    algorithm = _KEY_ALGORITHMS.get(_oid(_children(_children(key_info)[0][1])[0][1]), "")
    extensions = next((contents for tag, contents in tbs[6:] if tag == 0xA3), b"")
    return _common_name(subject), _dns_names(extensions), algorithm


def _common_name(subject: bytes) -> str:
    for _, rdn in _children(subject):
        for _, attribute in _children(rdn):
            (_, oid), (tag, value) = _children(attribute)[:2]
            if _oid(oid) == _OID_COMMON_NAME:
                return value.decode(_STRING_CODECS.get(tag, "latin-1"))
    return ""


def _dns_names(extensions: bytes) -> list[str]:
    if not extensions:
        return []
    for _, extension in _children(_children(extensions)[0][1]):
        fields = _children(extension)
        if _oid(fields[0][1]) == _OID_SUBJECT_ALT_NAME:
            names = _children(fields[-1][1])[0][1]
            return [value.decode("ascii") for tag, value in _children(names) if tag == 0x82]
    return []

"""Whether a certificate already in a node folder may be kept instead of issued anew.

Origin kept an existing pair whenever it loaded (and, for the serving pair,
covered the requested names) and otherwise silently replaced the key.
nodehost never replaces a key without ``--overwrite``; it keeps a pair only if
every check below passes and otherwise reports the first that failed:

1. the certificate and the key load;
2. the certificate belongs to the key;
3. the certificate was signed by the current signer CA;
4. it is valid now (not expired, not yet valid);
5. it is for what was asked: the client certificate's user and groups, or every
   requested serving name and IP.
"""

from __future__ import annotations

import datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from nodehost.errors import PKIError
from nodehost.frozen import frozen
from nodehost.pki.certs import common_name_of, decode_certificates, organizations_of
from nodehost.pki.hostnames import Hostnames
from nodehost.pki.keys import decode_private_key, key_matches


@frozen
class Wanted:
    """What the certificate must be for: a client identity or serving hostnames."""

    user: str | None = None
    groups: tuple[str, ...] = ()
    hostnames: Hostnames | None = None


def reuse_problem(
    cert_data: bytes,
    key_data: bytes,
    issuer: x509.Certificate | None,
    wanted: Wanted,
) -> str | None:
    """Why the pair cannot be kept (one short phrase), or ``None`` if it can.

    ``issuer`` ``None`` skips the signer check (no signer was given).
    """
    try:
        leaf = decode_certificates(cert_data, "certificate")[0]
        key = decode_private_key(key_data, "key")
    except PKIError as error:
        return f"it does not load ({error})"
    if not key_matches(key, leaf.public_key()):
        return "the certificate does not match its key"
    if issuer is not None and not _issued_by(leaf, issuer):
        return f"it was not signed by the current signer CA ({issuer.subject.rfc4514_string()})"
    now = datetime.datetime.now(datetime.UTC)
    if not leaf.not_valid_before_utc <= now <= leaf.not_valid_after_utc:
        return (
            f"it is not valid now (valid {leaf.not_valid_before_utc:%Y-%m-%d} "
            f"to {leaf.not_valid_after_utc:%Y-%m-%d})"
        )
    return _identity_problem(leaf, wanted)


def _issued_by(leaf: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        leaf.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _identity_problem(leaf: x509.Certificate, wanted: Wanted) -> str | None:
    if wanted.user is not None:
        user = common_name_of(leaf)
        if user != wanted.user:
            return f"it is for user {user!r}, not {wanted.user!r}"
        missing_groups = sorted(set(wanted.groups) - set(organizations_of(leaf)))
        if missing_groups:
            return f"it lacks the group(s) {', '.join(missing_groups)}"
    if wanted.hostnames is not None:
        missing = _missing_hostnames(leaf, wanted.hostnames)
        if missing:
            return f"it does not cover {', '.join(missing)}"
    return None


def _missing_hostnames(leaf: x509.Certificate, hostnames: Hostnames) -> list[str]:
    try:
        sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        sans = x509.SubjectAlternativeName([])
    ips = set(sans.get_values_for_type(x509.IPAddress))
    dns = {name.lower() for name in sans.get_values_for_type(x509.DNSName)}
    missing = [str(ip) for ip in hostnames.ip_addresses if ip not in ips]
    missing.extend(name for name in hostnames.non_ip_names if name not in dns)
    return sorted(missing)

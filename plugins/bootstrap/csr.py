"""Certificate signing requests (certificates.k8s.io/v1): build, file, wait for the certificate.

The node makes its private key itself; only the CSR (public key, subject,
SANs) leaves it.  Kinds of request:

* client -- signer ``kubernetes.io/kube-apiserver-client-kubelet``, subject
  ``CN=system:node:<name>, O=system:nodes``, no SANs;
* serving -- signer ``kubernetes.io/kubelet-serving``, same subject, SANs
  from the node's hostnames (:ref:`origin-server-cert-hostnames`).

The object name is client-go's ``digestedName``: ``node-csr-`` + base64url of
SHA-512/256 over the public key, subject and usages, so a restarted node finds
its own earlier request instead of filing a new one.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodehost.api.client import ClusterClient, ClusterError, ClusterRefused, WaitTimeout
from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.pki.keys import PrivateKey

CLIENT_USAGES = ("digital signature", "key encipherment", "client auth")
SERVING_USAGES = ("digital signature", "key encipherment", "server auth")
NODES_GROUP = "system:nodes"

#: The signer of kubelet client certificates and of kubelet serving certificates.
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"


class CSRNotAnswered(ClusterError):
    """Nobody approved (or denied) the request before the deadline."""


class CSRDenied(ClusterError):
    """The request was denied or failed; the message carries its reason."""


@frozen
class CertificateRequest:
    """What to ask for: signer, subject, usages and SANs."""

    signer: str
    common_name: str
    organizations: tuple[str, ...]
    usages: tuple[str, ...]
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    expiration_seconds: int | None = None


def node_common_name(node_name: str) -> str:
    return f"system:node:{node_name}"


def client_request(node_name: str) -> CertificateRequest:
    """The node's client certificate request: ``system:node:<name>`` in ``system:nodes``."""
    return CertificateRequest(
        signer=CLIENT_SIGNER,
        common_name=node_common_name(node_name),
        organizations=(NODES_GROUP,),
        usages=CLIENT_USAGES,
    )


def serving_request(node_name: str, hostnames: Sequence[str]) -> CertificateRequest:
    """The node's serving certificate request, for ``hostnames`` (names and IPs)."""
    dns_names, ips = serving_names(hostnames)
    return CertificateRequest(
        signer=SERVING_SIGNER,
        common_name=node_common_name(node_name),
        organizations=(NODES_GROUP,),
        usages=SERVING_USAGES,
        dns_names=dns_names,
        ip_addresses=ips,
    )


def csr_name(key: PrivateKey, request: CertificateRequest) -> str:
    """client-go's deterministic name: ``node-csr-<base64url(SHA-512/256(...))>``."""
    from nodehost.pki.keys import public_key_der

    digest = hashlib.new("sha512_256")

    def write(data: bytes) -> None:
        digest.update(base64.urlsafe_b64encode(data).rstrip(b"="))
        digest.update(b"|")

    write(public_key_der(key.public_key()))
    write(request.common_name.encode())
    for organization in request.organizations:
        write(organization.encode())
    for usage in request.usages:
        write(usage.encode())
    return "node-csr-" + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def build_csr_pem(key: PrivateKey, request: CertificateRequest) -> bytes:
    """The PEM ``CERTIFICATE REQUEST`` for ``request``, signed by ``key``."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.x509.oid import NameOID

    from nodehost.pki.certs import signature_hash

    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in request.organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, request.common_name))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attributes))
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in request.dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in request.ip_addresses]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    csr = builder.sign(key, signature_hash(key))
    return csr.public_bytes(serialization.Encoding.PEM)


def csr_object(name: str, pem: bytes, request: CertificateRequest) -> dict[str, Any]:
    """The CertificateSigningRequest object to create."""
    spec: dict[str, Any] = {
        "request": base64.b64encode(pem).decode(),
        "signerName": request.signer,
        "usages": list(request.usages),
    }
    if request.expiration_seconds:
        spec["expirationSeconds"] = request.expiration_seconds
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": spec,
    }


def conditions(obj: dict[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The CSR's true conditions by type (Approved, Denied, Failed); :class:`MalformedObject`
    when ``status`` or a condition is not the API's shape."""
    from nodehost.api.objects import mapping, sequence

    found = sequence(mapping(obj.get("status"), "status").get("conditions"), "status.conditions")
    states = [mapping(condition, "status.conditions[]") for condition in found]
    return {str(c.get("type", "")): c for c in states if str(c.get("status", "True")) == "True"}


def answered(obj: dict[str, Any]) -> bool:
    """Denied, failed, or approved with a certificate: nothing more will happen.  A CSR of
    the wrong shape (``status`` a list, a certificate that is not a string) is not answered:
    the wait goes on, bounded by its deadline."""
    from nodehost.api.objects import MalformedObject, mapping, text

    try:
        states = conditions(obj)
        if "Denied" in states or "Failed" in states:
            return True
        return "Approved" in states and bool(
            text(mapping(obj.get("status"), "status").get("certificate"), "status.certificate")
        )
    except MalformedObject:
        return False


async def file_request(client: ClusterClient, key: PrivateKey, request: CertificateRequest) -> str:
    """Create the CSR (or find this key's earlier one); return its name."""
    name = csr_name(key, request)
    body = csr_object(name, build_csr_pem(key, request), request)
    try:
        await client.create("CertificateSigningRequest", body)
    except ClusterRefused as error:
        if error.code != 409:
            raise
        existing = await client.get("CertificateSigningRequest", name)
        _check_same_request(existing, name, key, request)
    return name


def _check_same_request(
    existing: dict[str, Any], name: str, key: PrivateKey, request: CertificateRequest
) -> None:
    """An existing CSR of the same name must be for this key and signer (client-go's check;
    one of the wrong shape is not)."""
    from cryptography import x509

    from nodehost.api.objects import mapping, text
    from nodehost.pki.keys import key_matches

    try:
        spec = mapping(existing.get("spec"), "spec")
        filed = x509.load_pem_x509_csr(base64.b64decode(text(spec.get("request"), "request")))
        same_key = key_matches(key, filed.public_key())
        signer = spec.get("signerName")
    except ValueError:  # MalformedObject and binascii.Error are ValueErrors
        same_key, signer = False, None
    if not same_key or signer != request.signer:
        raise ClusterError(
            f"certificate signing request {name} exists but is not this node's request; "
            f"delete it (kubectl delete csr {name}) and start again"
        )


async def wait_for_certificate(client: ClusterClient, name: str, key: PrivateKey) -> bytes:
    """Wait until CSR ``name`` is answered; the certificate PEM, or :class:`CSRDenied`."""
    try:
        obj = await client.wait_for("CertificateSigningRequest", name, answered)
    except WaitTimeout:
        raise CSRNotAnswered(
            f"certificate signing request {name} was not answered in time: no approver signed "
            f"it; approve it (kubectl certificate approve {name}) or check the cluster's approver"
        ) from None
    states = conditions(obj)
    for verdict in ("Denied", "Failed"):
        if verdict in states:
            condition = states[verdict]
            raise CSRDenied(
                f"certificate signing request {name} was {verdict.lower()} "
                f"({condition.get('reason') or 'no reason'}): "
                f"{condition.get('message') or 'no message'}"
            )
    pem = base64.b64decode(obj["status"]["certificate"])  # a string: answered() checked it
    _check_certificate(name, pem, key)
    return pem


def _check_certificate(name: str, pem: bytes, key: PrivateKey) -> None:
    from nodehost.errors import PKIError
    from nodehost.pki.certs import decode_certificates
    from nodehost.pki.keys import key_matches

    try:
        certificate = decode_certificates(pem, f"certificate of {name}")[0]
    except PKIError as error:
        raise ClusterError(str(error)) from None
    if not key_matches(key, certificate.public_key()):
        raise ClusterError(
            f"the certificate issued for {name} does not match this node's key; delete the "
            f"request (kubectl delete csr {name}) and start again"
        )


async def obtain_certificate(
    client: ClusterClient,
    key: PrivateKey,
    request: CertificateRequest,
    status: Callable[[str], None],
) -> bytes:
    """File the request and wait for its certificate, reporting progress via ``status``."""
    name = await file_request(client, key, request)
    status(f"waiting for certificate signing request {name} ({request.signer}) to be approved")
    return await wait_for_certificate(client, name, key)


async def obtain_with_pending_key(
    client: ClusterClient,
    cert_dir: Path,
    prefix: str,
    request: CertificateRequest,
    status: Callable[[str], None],
) -> Path:
    """:func:`obtain_certificate` with the pending key of ``prefix``; the stored pair's path.

    The pending key (``<prefix>.key.tmp``) survives retries and restarts, so
    they find the same request; it is dropped once the certificate is stored,
    and when the request is denied, so the next attempt files a fresh one.
    """
    from nodehost.plugins.bootstrap import certstore

    key = certstore.pending_key(cert_dir, prefix)
    try:
        cert_pem = await obtain_certificate(client, key, request, status)
    except CSRDenied:
        certstore.forget_pending_key(cert_dir, prefix)
        raise
    current = certstore.store_pair(cert_dir, prefix, cert_pem, key)
    certstore.forget_pending_key(cert_dir, prefix)
    return current


def serving_names(hostnames: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split hostnames into (DNS names, IP addresses) for a serving CSR."""
    from nodehost.pki.hostnames import parse_hostnames

    parsed = parse_hostnames(hostnames)
    return parsed.non_ip_names, tuple(str(ip) for ip in parsed.ip_addresses)

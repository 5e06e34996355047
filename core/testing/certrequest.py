"""The kubelet stand-in's TLS bootstrap: ``--bootstrap-kubeconfig`` used as the kubelet uses it.

When ``--kubeconfig`` names no file yet and ``--bootstrap-kubeconfig`` is
given, the kubelet (``pkg/kubelet/certificate/bootstrap/bootstrap.go``,
``LoadClientCert``) asks for its client certificate with the bootstrap
credentials and then writes its kubeconfig; :func:`bootstrap_client` does the
same:

1. a new ECDSA P-256 key and a CSR for ``CN=system:node:<node>``,
   ``O=system:nodes``, signer ``kubernetes.io/kube-apiserver-client-kubelet``,
   usages ``digital signature`` and ``client auth``, created as the bootstrap
   user (``generateName: csr-``);
2. it waits for the certificate (approval and signing are the cluster's);
3. ``<cert-dir>/kubelet-client-<date>.pem`` (certificate and key, 0600) and
   the ``kubelet-client-current.pem`` link to it (replaced atomically);
4. ``--kubeconfig``: the bootstrap kubeconfig's cluster, with
   ``client-certificate``/``client-key`` naming ``kubelet-client-current.pem``.

Under nodehost the ``bootstrap`` component has written the kubeconfig before
the kubelet starts, so this runs only for a stand-in started on its own.
"""

from __future__ import annotations

import base64
import datetime
import os
from pathlib import Path
from typing import Any

from nodehost.pki.nodefiles import CLIENT_CERT_PREFIX, current_pair_file

SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
CONTEXT = {"cluster": "default-cluster", "user": "default-auth"}


def csr_body(node: str, key: Any) -> dict[str, Any]:
    """The CertificateSigningRequest the kubelet files for ``node`` with ``key``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}"),
        ]
    )
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    pem = csr.public_bytes(serialization.Encoding.PEM)
    return {
        "metadata": {"generateName": "csr-"},
        "spec": {
            "request": base64.b64encode(pem).decode(),
            "signerName": SIGNER,
            "usages": ["digital signature", "client auth"],
        },
    }


def issued(csr: dict[str, Any]) -> bool:
    """Whether the CSR carries its certificate; ``ValueError`` once it is denied or failed."""
    conditions = (csr.get("status") or {}).get("conditions") or []
    refused = [c["type"] for c in conditions if c.get("type") in ("Denied", "Failed")]
    if refused:
        raise ValueError(f"certificate request {csr['metadata']['name']} {refused[0].lower()}")
    return bool((csr.get("status") or {}).get("certificate"))


async def bootstrap_client(node: str, bootstrap: str, kubeconfig: str, cert_dir: str) -> None:
    """Obtain the node's client certificate with ``bootstrap`` and write ``kubeconfig``.

    Raises :class:`nodehost.api.client.ClusterError` when the API server
    refuses, ``ValueError`` when the request is denied.
    """
    from nodehost.api.client import ClusterClient
    from nodehost.pki.keys import encode_private_key, generate_private_key

    key = generate_private_key("ecdsa")
    async with ClusterClient(bootstrap) as client:
        created = await client.create("CertificateSigningRequest", csr_body(node, key))
        name = created["metadata"]["name"]
        signed = await client.wait_for("CertificateSigningRequest", name, issued)
    certificate = base64.b64decode(signed["status"]["certificate"])
    current = store_pair(Path(cert_dir), certificate + encode_private_key(key))
    write_kubeconfig(Path(kubeconfig), bootstrap, current)


def store_pair(cert_dir: Path, pem: bytes) -> Path:
    """Write ``kubelet-client-<date>.pem`` (0600) and point ``kubelet-client-current.pem`` at it."""
    from nodehost.pki.atomic import write_atomic

    cert_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d-%H-%M-%S")
    pair = cert_dir / f"{CLIENT_CERT_PREFIX}-{stamp}.pem"
    write_atomic(pair, pem, 0o600)
    current = current_pair_file(cert_dir, CLIENT_CERT_PREFIX)
    link = cert_dir / f".{current.name}.new"
    link.unlink(missing_ok=True)
    os.symlink(pair.name, link)
    os.replace(link, current)
    return current


def write_kubeconfig(path: Path, bootstrap: str, current: Path) -> None:
    """The kubelet's kubeconfig: the bootstrap kubeconfig's cluster, the current pair's file."""
    import yaml

    from nodehost.pki.atomic import write_atomic

    document = yaml.safe_load(Path(bootstrap).read_text())
    contexts = {c["name"]: c["context"] for c in document.get("contexts") or []}
    cluster_name = contexts[document["current-context"]]["cluster"]
    cluster = next(c["cluster"] for c in document["clusters"] if c["name"] == cluster_name)
    if "certificate-authority" in cluster:  # relative to the bootstrap kubeconfig's folder
        folder = Path(bootstrap).parent
        authority = str(folder / cluster["certificate-authority"])
        cluster = {**cluster, "certificate-authority": authority}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "default-cluster", "cluster": cluster}],
        "contexts": [{"name": "default-context", "context": CONTEXT}],
        "current-context": "default-context",
        "users": [
            {
                "name": "default-auth",
                "user": {"client-certificate": str(current), "client-key": str(current)},
            }
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, yaml.safe_dump(config).encode(), 0o600)

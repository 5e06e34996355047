"""Just enough of Kubernetes' protobuf encoding to read what kubectl PUTs to ``/approval``.

kubectl (client-go's typed clients) sends ``application/vnd.kubernetes.protobuf``
bodies for built-in types and does not fall back to JSON.  The only such
write the test API server must understand is ``kubectl certificate approve|deny``:
a CertificateSigningRequest whose status carries the new condition.  This
reads the envelope (``k8s\\0`` + ``runtime.Unknown``) and the fields of the
CSR that matter: ``metadata.name``, ``metadata.resourceVersion`` and
``status.conditions[].{type,status,reason,message}`` (field numbers from
``k8s.io/api/certificates/v1/generated.proto`` and apimachinery's
``generated.proto``).
"""

from __future__ import annotations

from typing import Any

from nodehost.api.protowire import fields

MAGIC = b"k8s\x00"


def _strings(data: bytes, names: dict[int, str]) -> dict[str, str]:
    return {names[n]: v.decode() for n, v in fields(data) if n in names and isinstance(v, bytes)}


def decode_csr(body: bytes) -> dict[str, Any]:
    """The JSON-shaped subset of a protobuf CSR; ``ValueError`` if it is not one."""
    if not body.startswith(MAGIC):
        raise ValueError("not a Kubernetes protobuf body")
    raw = next((v for n, v in fields(body[len(MAGIC) :]) if n == 2), None)
    if not isinstance(raw, bytes):
        raise ValueError("no object in the protobuf envelope")
    result: dict[str, Any] = {"metadata": {}, "status": {"conditions": []}}
    for number, value in fields(raw):
        if number == 1 and isinstance(value, bytes):
            result["metadata"] = _strings(value, {1: "name", 6: "resourceVersion"})
        elif number == 3 and isinstance(value, bytes):
            for field_number, condition in fields(value):
                if field_number == 1 and isinstance(condition, bytes):
                    result["status"]["conditions"].append(
                        _strings(condition, {1: "type", 2: "reason", 3: "message", 6: "status"})
                    )
    return result

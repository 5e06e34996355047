"""Server-side printing for the test API server: the ``Table`` kubectl asks for.

``kubectl get`` asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and
prints the columns the server sends; given a plain list it can show only
``NAME`` and ``AGE``.  The real API server prints each kind with its own
columns (``pkg/printers/internalversion/printers.go``); this module does so
for the kinds a node's user looks at -- Nodes (``STATUS`` from the ``Ready``
condition, ``ROLES`` from ``node-role.kubernetes.io/*`` labels, ``VERSION``
from ``status.nodeInfo``; ``-o wide`` adds addresses, OS image, kernel and
container runtime), CertificateSigningRequests (``SIGNERNAME``,
``REQUESTOR``, ``CONDITION``) and Leases (``HOLDER``) -- and names and ages
the others.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

TABLE_MEDIA = "as=Table"
ROLE_PREFIX = "node-role.kubernetes.io/"
NONE = "<none>"

Column = tuple[str, str, int, Callable[[dict[str, Any]], str]]


def wants_table(accept: str) -> bool:
    """Whether an ``Accept`` header asks for a ``meta.k8s.io`` Table (kubectl get)."""
    return TABLE_MEDIA in accept


def table(resource: str, items: list[dict[str, Any]], resource_version: str) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``items`` with the columns of ``resource``."""
    columns = COLUMNS.get(resource, DEFAULT_COLUMNS)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": [
            {
                "name": name,
                "type": kind,
                "format": "name" if name == "Name" else "",
                "description": "",
                "priority": priority,
            }
            for name, kind, priority, _ in columns
        ],
        "rows": [
            {"cells": [cell(item) for _, _, _, cell in columns], "object": _partial(item)}
            for item in items
        ],
    }


def _partial(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": item.get("metadata", {}),
    }


def age(item: dict[str, Any], now: datetime.datetime | None = None) -> str:
    """``metadata.creationTimestamp``'s age as the API server prints it (``5s``, ``3m20s``)."""
    stamp = item.get("metadata", {}).get("creationTimestamp")
    if not stamp:
        return "<unknown>"
    created = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    seconds = int(((now or datetime.datetime.now(datetime.UTC)) - created).total_seconds())
    return human_duration(max(seconds, 0))


def human_duration(seconds: int) -> str:
    """apimachinery's ``duration.HumanDuration`` (``util/duration/duration.go``)."""
    minutes, hours = seconds // 60, seconds // 3600
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m" + (f"{seconds % 60}s" if seconds % 60 else "")
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h" + (f"{minutes % 60}m" if minutes % 60 else "")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" + (f"{hours % 24}h" if hours % 24 else "")
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        return f"{days // 365}y" + (f"{days % 365}d" if days % 365 else "")
    return f"{hours // 24 // 365}y"


def node_status(node: dict[str, Any]) -> str:
    """``Ready``, ``NotReady``, ``Unknown`` (no condition); ``,SchedulingDisabled`` if cordoned."""
    conditions = node.get("status", {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    shown = {None: "Unknown", "True": "Ready"}.get(ready and ready.get("status"), "NotReady")
    if node.get("spec", {}).get("unschedulable"):
        shown += ",SchedulingDisabled"
    return shown


def node_roles(node: dict[str, Any]) -> str:
    labels = node.get("metadata", {}).get("labels") or {}
    roles = sorted(key.removeprefix(ROLE_PREFIX) for key in labels if key.startswith(ROLE_PREFIX))
    return ",".join(role for role in roles if role) or NONE


def _address(kind: str) -> Callable[[dict[str, Any]], str]:
    def cell(node: dict[str, Any]) -> str:
        addresses = node.get("status", {}).get("addresses") or []
        return next((a["address"] for a in addresses if a.get("type") == kind), NONE)

    return cell


def _info(field: str) -> Callable[[dict[str, Any]], str]:
    return lambda node: node.get("status", {}).get("nodeInfo", {}).get(field) or "<unknown>"


def csr_condition(csr: dict[str, Any]) -> str:
    """``Approved,Issued``, ``Denied``, ``Pending``: the conditions that hold, then ``Issued``."""
    status = csr.get("status") or {}
    held = [c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"]
    shown = held or ["Pending"]
    if status.get("certificate"):
        shown.append("Issued")
    return ",".join(shown)


def _requested_duration(csr: dict[str, Any]) -> str:
    seconds = (csr.get("spec") or {}).get("expirationSeconds")
    return human_duration(int(seconds)) if seconds else NONE


def _name(item: dict[str, Any]) -> str:
    return str(item.get("metadata", {}).get("name", ""))


DEFAULT_COLUMNS: list[Column] = [("Name", "string", 0, _name), ("Age", "string", 0, age)]
COLUMNS: dict[str, list[Column]] = {
    "nodes": [
        ("Name", "string", 0, _name),
        ("Status", "string", 0, node_status),
        ("Roles", "string", 0, node_roles),
        ("Age", "string", 0, age),
        ("Version", "string", 0, _info("kubeletVersion")),
        ("Internal-IP", "string", 1, _address("InternalIP")),
        ("External-IP", "string", 1, _address("ExternalIP")),
        ("OS-Image", "string", 1, _info("osImage")),
        ("Kernel-Version", "string", 1, _info("kernelVersion")),
        ("Container-Runtime", "string", 1, _info("containerRuntimeVersion")),
    ],
    "certificatesigningrequests": [
        ("Name", "string", 0, _name),
        ("Age", "string", 0, age),
        ("SignerName", "string", 0, lambda csr: (csr.get("spec") or {}).get("signerName", "")),
        ("Requestor", "string", 0, lambda csr: (csr.get("spec") or {}).get("username", "")),
        ("RequestedDuration", "string", 0, _requested_duration),
        ("Condition", "string", 0, csr_condition),
    ],
    "leases": [
        ("Name", "string", 0, _name),
        ("Holder", "string", 0, lambda lease: lease.get("spec", {}).get("holderIdentity", "")),
        ("Age", "string", 0, age),
    ],
}

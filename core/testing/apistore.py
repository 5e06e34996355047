"""The object store behind :mod:`nodehost.testing.apiserver`: resources, versions, watches, CSRs.

One global ``resourceVersion`` counter, as etcd's revision: every write bumps
it, and the write is appended to its resource's event log that watches read
from.  The store is thread-safe: one lock, and conditions on it that wake only
the watches a write concerns (the watches of that resource, and those that
select the written object by name), so a thousand watches of one CSR each cost
nothing when another CSR changes.

Stored objects are never changed in place (a write stores a new object), so
lists and watch events hand out references, and an event is serialised to
JSON once however many watches send it.  Each resource keeps its names sorted
for paged lists (:meth:`ObjectStore.page`) and at most
:attr:`ObjectStore.event_window` events: a watch from an older version is
answered ``410 Gone`` (``too old resource version``), as after an etcd
compaction.

CertificateSigningRequests get the controller manager's treatment: an
approver per signer (``approve``, ``deny`` or ``never``) answers a new request
after :attr:`ObjectStore.approve_delay` seconds, and the signer signs every
approved request of a known signer with the test CA, honouring
``spec.expirationSeconds`` (at least 600 s in Kubernetes; here any positive
value, so tests can use short lifetimes).
"""

from __future__ import annotations

import base64
import bisect
import copy
import datetime
import heapq
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeAlias

#: A request's user: its name and groups.
User: TypeAlias = tuple[str, list[str]]

#: The signers the test CA signs for, and their default approver mode.
SIGNERS = {
    "kubernetes.io/kube-apiserver-client-kubelet": "approve",
    "kubernetes.io/kube-apiserver-client": "never",
    "kubernetes.io/kubelet-serving": "never",
}
APPROVER_MODES = ("approve", "deny", "never")


@dataclass(frozen=True)
class ResourceType:
    """One REST resource the server serves."""

    plural: str
    kind: str
    group: str
    version: str
    namespaced: bool
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()


RESOURCES = {
    r.plural: r
    for r in (
        ResourceType("configmaps", "ConfigMap", "", "v1", True, ("cm",)),
        ResourceType("nodes", "Node", "", "v1", False, ("no",)),
        ResourceType("events", "Event", "", "v1", True, ("ev",)),
        ResourceType("services", "Service", "", "v1", True, ("svc",)),
        ResourceType("endpointslices", "EndpointSlice", "discovery.k8s.io", "v1", True),
        ResourceType("leases", "Lease", "coordination.k8s.io", "v1", True),
        ResourceType(
            "certificatesigningrequests",
            "CertificateSigningRequest",
            "certificates.k8s.io",
            "v1",
            False,
            ("csr",),
        ),
    )
}


class StoreError(Exception):
    """A request the API refuses: ``code`` and ``reason`` as the API's Status."""

    def __init__(self, code: int, reason: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details


@dataclass(frozen=True)
class Event:
    revision: int
    kind: str  # ADDED, MODIFIED, DELETED
    resource: str
    object: dict[str, Any]

    @cached_property
    def line(self) -> bytes:
        """The event as a watch stream sends it (one JSON line), made once."""
        return json.dumps({"type": self.kind, "object": self.object}).encode() + b"\n"


@dataclass
class _Log:
    """One resource's recent events, and the revision before the oldest one kept."""

    events: list[Event] = field(default_factory=list)
    revisions: list[int] = field(default_factory=list)
    compacted: int = 0


class Gone(StoreError):
    """A version older than the kept history (watch or continue token): ``410``."""

    def __init__(self, message: str) -> None:
        super().__init__(410, "Expired", message)


#: How many events each resource keeps for watches that resume (``resourceVersion``).
EVENT_WINDOW = 20_000


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


#: Stored objects as a list (``list`` is also a method name of the store).
Objects: TypeAlias = list[dict[str, Any]]


class ObjectStore:
    """Objects by resource and ``(namespace, name)``, with an event log for watches."""

    def __init__(self, signer: Callable[[dict[str, Any]], bytes] | None = None) -> None:
        self._mutex = threading.RLock()
        self.lock = threading.Condition(self._mutex)
        self.revision = 1
        self.objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {r: {} for r in RESOURCES}
        self._keys: dict[str, list[tuple[str, str]]] = {r: [] for r in RESOURCES}
        self._logs: dict[str, _Log] = {r: _Log() for r in RESOURCES}
        self._wakers: dict[tuple[str, str | None], threading.Condition] = {}
        self._waiting: dict[tuple[str, str | None], int] = {}
        self.event_window = EVENT_WINDOW
        self.approvers = dict(SIGNERS)
        self.approve_delay = 0.05
        self.signer = signer
        self.watch_generation = 0
        self._approvals: list[tuple[float, str]] = []
        self._approver_wake = threading.Condition(threading.Lock())
        self._approver: threading.Thread | None = None

    # --- reads ----------------------------------------------------------------

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any]:
        with self.lock:
            found = self.objects[resource].get((namespace, name))
            if found is None:
                kind = RESOURCES[resource]
                raise StoreError(
                    404,
                    "NotFound",
                    f'{resource}{_group_suffix(kind)} "{name}" not found',
                    name=name,
                    kind=resource,
                    group=kind.group,
                )
            return copy.deepcopy(found)

    def list(self, resource: str, namespace: str | None) -> tuple[Objects, int]:
        """Every object (copies) of ``resource`` in ``namespace`` (None: all), and the revision."""
        items, revision, _ = self.page(resource, namespace)
        return [copy.deepcopy(item) for item in items], revision

    def page(
        self,
        resource: str,
        namespace: str | None,
        after: tuple[str, str] | None = None,
        limit: int = 0,
    ) -> tuple[Objects, int, int]:
        """Up to ``limit`` (0: all) objects after key ``after``, in key order.

        Returns ``(objects, revision, how many more remain)``; the objects are
        the stored ones (never changed in place): serialise them, do not edit them.
        """  # fmt: skip
        with self.lock:
            keys = self._keys[resource]
            objects = self.objects[resource]
            start = bisect.bisect_right(keys, after) if after is not None else 0
            if namespace is not None:
                start = max(start, bisect.bisect_left(keys, (namespace, "")))
                end = bisect.bisect_left(keys, (namespace + "\x00", ""))
            else:
                end = len(keys)
            stop = min(end, start + limit) if limit > 0 else end
            items = [objects[key] for key in keys[start:stop]]
            return items, self.revision, end - stop

    def events_after(self, resource: str, namespace: str | None, revision: int) -> Iterator[Event]:
        """Events of ``resource`` (in ``namespace``) newer than ``revision``; call under lock.

        Raises :class:`Gone` when events after ``revision`` are no longer kept.
        """
        log = self._kept_after(resource, revision)
        start = bisect.bisect_right(log.revisions, revision)
        for event in log.events[start:]:
            if namespace is None or event.object["metadata"].get("namespace") == namespace:
                yield event

    def check_version(self, resource: str, revision: int) -> None:
        """Raise :class:`Gone` when the events after ``revision`` are no longer kept."""
        with self.lock:
            self._kept_after(resource, revision)

    def _kept_after(self, resource: str, revision: int) -> _Log:
        """The event log of ``resource``; raise :class:`Gone` when the events after
        ``revision`` are no longer kept (call under lock)."""
        log = self._logs[resource]
        if revision < log.compacted:
            raise Gone(f"too old resource version: {revision} ({log.compacted + 1})")
        return log

    # --- waking watches ---------------------------------------------------------

    def wait_for_events(self, resource: str, name: str | None, timeout: float) -> None:
        """Wait (under lock) until ``resource`` (the object ``name``, if given) may have changed,
        the watches are dropped, or ``timeout`` passes."""
        key = (resource, name)
        waker = self._wakers.get(key)
        if waker is None:
            waker = self._wakers[key] = threading.Condition(self._mutex)
        self._waiting[key] = self._waiting.get(key, 0) + 1
        try:
            waker.wait(timeout)
        finally:
            self._waiting[key] -= 1
            if not self._waiting[key]:
                del self._waiting[key], self._wakers[key]

    def wake_all(self) -> None:
        """Wake every waiting watch (they see :attr:`watch_generation` change); under lock."""
        self.lock.notify_all()
        for waker in self._wakers.values():
            waker.notify_all()

    # --- writes ---------------------------------------------------------------

    def _record(self, kind: str, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Bump the revision, stamp ``obj`` (which the store now owns and never changes),
        log the event, wake the watches it concerns; under lock.  A copy for the caller."""
        self.revision += 1
        obj["metadata"]["resourceVersion"] = str(self.revision)
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        keys = self._keys[resource]
        if kind == "DELETED":
            del keys[bisect.bisect_left(keys, key)]
        elif kind == "ADDED":
            bisect.insort(keys, key)
        log = self._logs[resource]
        log.events.append(Event(self.revision, kind, resource, obj))
        log.revisions.append(self.revision)
        if len(log.events) > self.event_window + self.event_window // 4:
            drop = len(log.events) - self.event_window
            log.compacted = log.revisions[drop - 1]
            del log.events[:drop], log.revisions[:drop]
        self.lock.notify_all()
        for waker in (self._wakers.get((resource, None)), self._wakers.get((resource, key[1]))):
            if waker is not None:
                waker.notify_all()
        return copy.deepcopy(obj)

    def create(
        self, resource: str, namespace: str, obj: dict[str, Any], user: User
    ) -> dict[str, Any]:
        kind = RESOURCES[resource]
        obj = copy.deepcopy(obj)
        metadata = obj.setdefault("metadata", {})
        if not metadata.get("name"):
            if not metadata.get("generateName"):
                raise StoreError(
                    422,
                    "Invalid",
                    f"{kind.kind}: metadata.name: Required value: name or generateName is required",
                )
            metadata["name"] = metadata["generateName"] + uuid.uuid4().hex[:5]
        name = metadata["name"]
        if resource == "certificatesigningrequests":
            _check_csr(obj, user)
        with self.lock:
            if (namespace, name) in self.objects[resource]:
                raise StoreError(
                    409,
                    "AlreadyExists",
                    f'{resource}{_group_suffix(kind)} "{name}" already exists',
                    name=name,
                    kind=resource,
                    group=kind.group,
                )
            obj["kind"], obj["apiVersion"] = kind.kind, kind.api_version
            if kind.namespaced:
                metadata["namespace"] = namespace
            metadata["uid"] = str(uuid.uuid4())
            metadata["creationTimestamp"] = now_rfc3339()
            self.objects[resource][(namespace, name)] = obj
            created = self._record("ADDED", resource, obj)
        if resource == "certificatesigningrequests":
            self._schedule_approver(name)
        return created

    def replace(
        self, resource: str, namespace: str, name: str, obj: dict[str, Any], part: str = ""
    ) -> dict[str, Any]:
        """PUT: the whole object, or only its ``status`` (``part="status"``/``"approval"``)."""
        with self.lock:
            current = self.objects[resource].get((namespace, name))
            if current is None:
                self.get(resource, namespace, name)  # raises the 404
            assert current is not None
            wanted = obj.get("metadata", {}).get("resourceVersion")
            if wanted and wanted != current["metadata"]["resourceVersion"]:
                raise StoreError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {resource} "{name}": the '
                    "object has been modified; please apply your changes to the latest version "
                    "and try again",
                    name=name,
                    kind=resource,
                )
            if part in ("approval", "status"):
                current = _with_status(current, obj, part)
                self.objects[resource][(namespace, name)] = current
            else:
                keep = current["metadata"]
                current = copy.deepcopy(obj)
                kind = RESOURCES[resource]
                current["kind"], current["apiVersion"] = kind.kind, kind.api_version
                current["metadata"] = {
                    **keep,
                    **{
                        k: v
                        for k, v in obj.get("metadata", {}).items()
                        if k in ("labels", "annotations")
                    },
                }
                self.objects[resource][(namespace, name)] = current
            updated = self._record("MODIFIED", resource, current)
        if resource == "certificatesigningrequests":
            self.sign_if_approved(name)
        return updated

    def patch(
        self, resource: str, namespace: str, name: str, patch: dict[str, Any], part: str = ""
    ) -> dict[str, Any]:
        """PATCH: ``patch`` merged into the object (:func:`merge_patch`), then :meth:`replace`."""
        with self.lock:
            current = self.get(resource, namespace, name)
            return self.replace(resource, namespace, name, merge_patch(current, patch), part)

    def delete(self, resource: str, namespace: str, name: str) -> dict[str, Any]:
        with self.lock:
            current = self.objects[resource].pop((namespace, name), None)
            if current is None:
                self.get(resource, namespace, name)
            assert current is not None
            gone = {**current, "metadata": dict(current["metadata"])}
            return self._record("DELETED", resource, gone)

    def put(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace ``obj`` as the cluster admin would (tests' set-up)."""
        metadata = obj["metadata"]
        namespace = metadata.get("namespace", "") if RESOURCES[resource].namespaced else ""
        with self.lock:
            exists = (namespace, metadata["name"]) in self.objects[resource]
        if exists:
            return self.replace(resource, namespace, metadata["name"], obj)
        return self.create(resource, namespace, obj, ("system:admin", ["system:masters"]))

    # --- the CSR approver and signer -------------------------------------------

    def _schedule_approver(self, name: str) -> None:
        """Have the approver look at CSR ``name`` after :attr:`approve_delay` (one thread
        serves every request, in due order)."""
        with self._approver_wake:
            heapq.heappush(self._approvals, (time.monotonic() + self.approve_delay, name))
            if self._approver is None:
                self._approver = threading.Thread(
                    target=self._approve_loop, name="test-csr-approver", daemon=True
                )
                self._approver.start()
            self._approver_wake.notify()

    def _approve_loop(self) -> None:
        while True:
            with self._approver_wake:
                while not self._approvals or self._approvals[0][0] > time.monotonic():
                    due = self._approvals[0][0] - time.monotonic() if self._approvals else None
                    self._approver_wake.wait(due)
                _, name = heapq.heappop(self._approvals)
            self.run_approver(name)

    def run_approver(self, name: str) -> None:
        """Answer CSR ``name`` as the approver for its signer is set to (if it exists still)."""
        try:
            csr = self.get("certificatesigningrequests", "", name)
        except StoreError:
            return
        mode = self.approvers.get(csr["spec"]["signerName"], "never")
        if mode == "never" or csr.get("status", {}).get("conditions"):
            return
        verdict = "Approved" if mode == "approve" else "Denied"
        condition = {
            "type": verdict,
            "status": "True",
            "reason": f"AutoTest{verdict}",
            "message": f"{verdict.lower()} by the nodehost test API server's approver",
            "lastUpdateTime": now_rfc3339(),
        }
        csr["status"] = {"conditions": [condition]}
        self.replace("certificatesigningrequests", "", name, csr, part="approval")

    def sign_if_approved(self, name: str) -> None:
        """Issue the certificate of an approved, unsigned CSR of a known signer."""
        with self.lock:
            csr = self.objects["certificatesigningrequests"].get(("", name))
            if csr is None or self.signer is None:
                return
            status = csr.get("status") or {}
            types = {
                c.get("type") for c in status.get("conditions", []) if c.get("status") == "True"
            }
            if "Approved" not in types or "Denied" in types or status.get("certificate"):
                return
            if csr["spec"]["signerName"] not in SIGNERS:
                return
            certificate = base64.b64encode(self.signer(csr)).decode()
            signed = _with_status(csr, {"status": {**status, "certificate": certificate}}, "status")
            self.objects["certificatesigningrequests"][("", name)] = signed
            self._record("MODIFIED", "certificatesigningrequests", signed)


def _with_status(current: dict[str, Any], obj: dict[str, Any], part: str) -> dict[str, Any]:
    """A new object: ``current`` with the status (or, for ``approval``, the conditions) of
    ``obj``, and its own metadata (the store stamps it)."""
    status = obj.get("status") or {}
    if part == "approval":
        status = {**(current.get("status") or {}), "conditions": status.get("conditions") or []}
    return {**current, "metadata": dict(current["metadata"]), "status": status}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: ``patch`` merged into ``target`` (a null deletes a key); ``$`` keys skipped.

    Skipping the ``$`` directives makes a strategic merge patch of maps and
    scalars come out as the API server's would.
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def _group_suffix(kind: ResourceType) -> str:
    return f".{kind.group}" if kind.group else ""


def _check_csr(obj: dict[str, Any], user: tuple[str, list[str]]) -> None:
    """The API's validation of a new CSR; fills ``spec.username``/``groups`` as the server does."""
    spec = obj.get("spec") or {}
    missing = [f for f in ("request", "signerName", "usages") if not spec.get(f)]
    if missing:
        raise StoreError(
            422,
            "Invalid",
            f"CertificateSigningRequest.certificates.k8s.io is invalid: spec.{missing[0]}: "
            "Required value",
        )
    from cryptography import x509

    try:
        x509.load_pem_x509_csr(base64.b64decode(spec["request"]))
    except ValueError:
        raise StoreError(
            422,
            "Invalid",
            "CertificateSigningRequest.certificates.k8s.io is invalid: "
            "spec.request: Invalid value: []byte{...}: PEM block type must be CERTIFICATE REQUEST",
        ) from None
    spec["username"], spec["groups"] = user[0], list(user[1])
    obj["spec"] = spec
    obj["status"] = {}

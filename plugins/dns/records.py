"""The cluster's DNS data and how names are answered from it (reference §9.4).

Pure Python: no DNS library, no I/O.  Three parts:

* the model -- :class:`Service`, :class:`Endpoints` (Kubernetes' Service and
  Endpoints reduced to what DNS needs);
* :class:`ClusterRecords` -- the store the record sources feed; every change
  returns (and announces to its listeners) the *dependency keys* it touched,
  so a cache can drop exactly the answers that depended on them;
* :class:`ClusterZone` -- answers one (name, type) question under the cluster
  domain as Origin's ``ServiceResolver`` and SkyDNS did.

Names, relative to the cluster domain ``D`` (all answers TTL 30, SRV priority
10 with SkyDNS's weights: 100 split evenly among the records)::

    <svc>.<ns>.svc                  cluster IP; headless: every endpoint IP;
                                    ExternalName: CNAME to the external name
    <anything>.<svc>.<ns>.svc       as above (Origin), unless <anything> is:
    _<port>._<proto>.<svc>.<ns>.svc SRV per service port ('*' or '_*' matches
    _<proto>.<svc>.<ns>.svc         any port or protocol; a missing port is '*')
    _endpoints.<svc>.<ns>.svc       every endpoint IP (also <svc>.<ns>.endpoints)
    <label>.<svc>.<ns>.endpoints    one endpoint (label: its hostname, or the
                                    FNV-32a hex hash of its IP); also under .svc
                                    for headless services
    <a-b-c-d>.<ns>.pod              the dashed IPv4 address
    d.c.b.a.in-addr.arpa (PTR)      <svc>.<ns>.svc.D for a service's cluster IP
    openshift.default.svc           kubernetes.default.svc when no openshift service
    _endpoints.openshift.default.svc  likewise, _endpoints.kubernetes.default.svc

Unknown names under ``D`` are NXDOMAIN; a name that exists without records of
the asked type is NODATA (both with the zone's SOA in the authority section).
``D``, ``svc.D``, ``endpoints.D``, ``pod.D``, ``<ns>.pod.D`` and, while the
namespace has a service, ``<ns>.svc.D`` / ``<ns>.endpoints.D`` exist (NODATA):
answering NXDOMAIN for a name with names below it would let caching resolvers
deny the whole subtree (RFC 8020).  ``ANY`` questions are refused, as SkyDNS
did.

Two deliberate differences from Origin's code: ``*`` (or ``_*``) is accepted
as the port or protocol label of an SRV name (Origin's check that every prefix label starts
with ``_`` rejected it, although the matching code honours it), and the
``_endpoints.openshift.default.svc`` fallback names
``_endpoints.kubernetes.default.svc`` (Origin's fallback dropped the ``svc``
label, which made it NXDOMAIN).
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

TTL = 30
PRIORITY = 10
WEIGHT = 10
HEADLESS = "None"
EXTERNAL_NAME = "ExternalName"

#: A dependency key: ``("svc", ns, name)``, ``("ns", ns)`` or ``("ptr", ip)``.
Dep = tuple[str, ...]

Rcode = Literal["NOERROR", "NXDOMAIN", "REFUSED"]

QUERY_NAME = ""
"""Owner name of a record that answers the question itself (written in the asker's case)."""


# --- the model ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServicePort:
    """A service port: ``name`` is required for SRV names; ``protocol`` is TCP/UDP/SCTP."""

    name: str
    port: int
    protocol: str = "TCP"
    target_port: int = 0


@dataclass(frozen=True)
class Service:
    """A Kubernetes Service as DNS sees it.

    ``cluster_ip`` is an IP, ``"None"`` (headless) or ``""`` (none: no DNS
    name unless ``type`` is ``ExternalName``).
    """

    namespace: str
    name: str
    cluster_ip: str = ""
    type: str = "ClusterIP"
    external_name: str = ""
    ports: tuple[ServicePort, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def is_external(self) -> bool:
        return self.type == EXTERNAL_NAME

    @property
    def reverse_ip(self) -> str | None:
        """The cluster IP that PTR questions map to this service (normalised), if any."""
        if self.is_external:
            return None
        return normal_ip(self.cluster_ip)


@dataclass(frozen=True)
class EndpointAddress:
    ip: str
    hostname: str = ""

    @property
    def label(self) -> str:
        """Origin's endpoint label: the hostname, else the FNV-32a hash of the IP."""
        return self.hostname or fnv32a_hex(self.ip)


@dataclass(frozen=True)
class EndpointSubset:
    addresses: tuple[EndpointAddress, ...] = ()
    ports: tuple[ServicePort, ...] = ()


@dataclass(frozen=True)
class Endpoints:
    """The ready endpoints of the service of the same namespace and name."""

    namespace: str
    name: str
    subsets: tuple[EndpointSubset, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)


def fnv32a_hex(text: str) -> str:
    """Go's ``fmt.Sprintf("%x", fnv.New32a().Sum32())`` of ``text``."""
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{value:x}"


def normal_ip(text: str) -> str | None:
    """``text`` as a canonical IP string, or None when it is not an IP."""
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


# --- the store ------------------------------------------------------------------------------


Listener = Callable[[set[Dep]], object]


class ClusterRecords:
    """Services and endpoints from every record source, indexed for answering.

    Each source writes through its own :class:`SourceSink` (see :meth:`sink`);
    a source's :meth:`SourceSink.replace` removes what that source no longer
    has.  Every change calls the listeners with the dependency keys it touched
    (nothing is called when nothing changed).
    """

    def __init__(self) -> None:
        self.services: dict[tuple[str, str], Service] = {}
        self.endpoints: dict[tuple[str, str], Endpoints] = {}
        self.by_ip: dict[str, tuple[str, str]] = {}
        self.namespaces: Counter[str] = Counter()
        self._listeners: list[Listener] = []
        self._sinks: dict[str, SourceSink] = {}

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def sink(self, source: str) -> SourceSink:
        """The sink of the source named ``source`` (the same one on every call)."""
        return self._sinks.setdefault(source, SourceSink(self, source))

    def set_service(self, key: tuple[str, str], service: Service | None) -> set[Dep]:
        """Store (or with None remove) the service at ``key``; the keys touched."""
        old = self.services.get(key)
        if old == service:
            return set()
        touched: set[Dep] = {("svc", *key)}
        if old is not None:
            del self.services[key]
            self._unindex(old, touched)
        if service is not None:
            self.services[key] = service
            self._index(service, touched)
        self._announce(touched)
        return touched

    def set_endpoints(self, key: tuple[str, str], endpoints: Endpoints | None) -> set[Dep]:
        """Store (or with None remove) the endpoints at ``key``; the keys touched."""
        if self.endpoints.get(key) == endpoints:
            return set()
        if endpoints is None:
            del self.endpoints[key]
        else:
            self.endpoints[key] = endpoints
        touched: set[Dep] = {("svc", *key)}
        self._announce(touched)
        return touched

    def _index(self, service: Service, touched: set[Dep]) -> None:
        self.namespaces[service.namespace] += 1
        if self.namespaces[service.namespace] == 1:
            touched.add(("ns", service.namespace))
        ip = service.reverse_ip
        if ip is not None:
            self.by_ip[ip] = service.key
            touched.add(("ptr", ip))

    def _unindex(self, service: Service, touched: set[Dep]) -> None:
        self.namespaces[service.namespace] -= 1
        if self.namespaces[service.namespace] <= 0:
            del self.namespaces[service.namespace]
            touched.add(("ns", service.namespace))
        ip = service.reverse_ip
        if ip is not None and self.by_ip.get(ip) == service.key:
            del self.by_ip[ip]
            touched.add(("ptr", ip))
            self._reindex_ip(ip)

    def _reindex_ip(self, ip: str) -> None:
        """Another service may share the freed cluster IP (a misconfiguration); keep it findable."""
        for key, other in self.services.items():
            if other.reverse_ip == ip:
                self.by_ip[ip] = key
                return

    def _announce(self, touched: set[Dep]) -> None:
        for listener in self._listeners:
            listener(touched)


@dataclass
class SourceSink:
    """What one record source writes to (the :class:`RecordSink` protocol).

    ``replace`` sets the source's whole state (a list, a file load);
    the ``upsert``/``delete`` methods apply one watch event; ``synced`` tells
    the server that the first complete state has arrived (readiness).
    """

    store: ClusterRecords
    source: str
    services: set[tuple[str, str]] = field(default_factory=set)
    endpoints: set[tuple[str, str]] = field(default_factory=set)
    on_synced: Callable[[], None] | None = None
    is_synced: bool = False

    def replace(self, services: Iterable[Service], endpoints: Iterable[Endpoints]) -> set[Dep]:
        new_services = {service.key: service for service in services}
        new_endpoints = {item.key: item for item in endpoints}
        touched: set[Dep] = set()
        for key in self.services - new_services.keys():
            touched |= self.delete_service(*key)
        for key in self.endpoints - new_endpoints.keys():
            touched |= self.delete_endpoints(*key)
        for service in new_services.values():
            touched |= self.upsert_service(service)
        for item in new_endpoints.values():
            touched |= self.upsert_endpoints(item)
        return touched

    def upsert_service(self, service: Service) -> set[Dep]:
        self.services.add(service.key)
        return self.store.set_service(service.key, service)

    def delete_service(self, namespace: str, name: str) -> set[Dep]:
        self.services.discard((namespace, name))
        if (namespace, name) not in self.store.services:
            return set()
        return self.store.set_service((namespace, name), None)

    def upsert_endpoints(self, endpoints: Endpoints) -> set[Dep]:
        self.endpoints.add(endpoints.key)
        return self.store.set_endpoints(endpoints.key, endpoints)

    def delete_endpoints(self, namespace: str, name: str) -> set[Dep]:
        self.endpoints.discard((namespace, name))
        if (namespace, name) not in self.store.endpoints:
            return set()
        return self.store.set_endpoints((namespace, name), None)

    def synced(self) -> None:
        if not self.is_synced:
            self.is_synced = True
            if self.on_synced is not None:
                self.on_synced()


# --- answering ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One resource record: ``name`` is absolute without the final dot, or
    :data:`QUERY_NAME` for the question's own name.  ``value`` by type: A/AAAA
    an IP, CNAME/PTR a name, SRV ``(priority, weight, port, target)``."""

    name: str
    rtype: str
    value: object
    ttl: int = TTL


@dataclass(frozen=True)
class Answer:
    """What to say about one question under the cluster domain.

    ``negative`` NXDOMAIN or NODATA: the SOA goes in the authority section.
    ``chase`` an external name whose address records the server should look up
    upstream and append (an ExternalName service's CNAME target).
    ``deps`` the dependency keys this answer was computed from.
    """

    rcode: Rcode = "NOERROR"
    answer: tuple[Record, ...] = ()
    additional: tuple[Record, ...] = ()
    deps: frozenset[Dep] = frozenset()
    chase: str | None = None

    @property
    def negative(self) -> bool:
        return self.rcode == "NXDOMAIN" or (self.rcode == "NOERROR" and not self.answer)


@dataclass(frozen=True)
class _Target:
    """SkyDNS's ``msg.Service``: a host (IP or name), a port and the SRV target name."""

    host: str
    port: int
    key: str


class _NoSuchName(Exception):
    pass


class ClusterZone:
    """Answers questions under ``domain`` from a :class:`ClusterRecords` store."""

    ARPA_V4 = "in-addr.arpa"
    ARPA_V6 = "ip6.arpa"

    def __init__(self, domain: str, store: ClusterRecords) -> None:
        self.domain = domain.strip(".").lower()
        self.store = store
        self._suffix = "." + self.domain

    def owns(self, name: str) -> bool:
        """Whether the lower-case ``name`` (no final dot) is in the cluster domain."""
        return name == self.domain or name.endswith(self._suffix)

    def reverse(self, name: str) -> Answer | None:
        """The PTR answer for a cluster IP's reverse name, or None (forward it)."""
        ip = reverse_name_ip(name)
        key = self.store.by_ip.get(ip) if ip else None
        if ip is None or key is None:
            return None
        target = f"{key[1]}.{key[0]}.svc.{self.domain}"
        return Answer(answer=(Record(QUERY_NAME, "PTR", target),), deps=frozenset({("ptr", ip)}))

    def answer(self, name: str, qtype: str, depth: int = 0) -> Answer:
        """The answer for the lower-case ``name`` (in the zone, no final dot).

        ``depth`` counts the in-zone CNAME links followed so far (at most 8, as SkyDNS).
        """
        if qtype == "ANY":
            return Answer(rcode="REFUSED")
        relative = name[: -len(self._suffix)] if name != self.domain else ""
        segments = tuple(reversed(relative.split("."))) if relative else ()
        deps: set[Dep] = set()
        try:
            targets = self._targets(segments, relative, deps)
        except _NoSuchName:
            return Answer(rcode="NXDOMAIN", deps=frozenset(deps))
        if targets is None:
            return self._structural(name, qtype, deps)
        return self._records(targets, qtype, deps, depth)

    # Origin's ServiceResolver.Records -------------------------------------------------------

    def _targets(
        self, segments: tuple[str, ...], relative: str, deps: set[Dep]
    ) -> list[_Target] | None:
        """The targets of a name, ``None`` for an existing name without records."""
        if len(segments) < 3:
            self._short_name(segments, deps)
            return None
        base = segments[0]
        if base == "pod":
            return self._pod(segments)
        if base not in ("svc", "endpoints"):
            raise _NoSuchName
        namespace, name = segments[1], segments[2]
        deps.add(("svc", namespace, name))
        service = self.store.services.get((namespace, name))
        if service is None:
            fallback = OPENSHIFT_FALLBACKS.get(relative)
            if fallback is None:
                raise _NoSuchName
            return self._targets(tuple(reversed(fallback.split("."))), fallback, deps)
        if not service.cluster_ip and not service.is_external:
            raise _NoSuchName
        return self._service_targets(service, segments)

    def _short_name(self, segments: tuple[str, ...], deps: set[Dep]) -> None:
        """Names above the services: existing names without records, or NXDOMAIN.

        Exist: the apex; ``svc``, ``endpoints``, ``pod``; ``<ns>.pod``; and
        ``<ns>.svc`` / ``<ns>.endpoints`` while the namespace has a service.
        """
        if not segments:
            return
        if segments[0] not in ("svc", "endpoints", "pod"):
            raise _NoSuchName
        if len(segments) == 1 or segments[0] == "pod":
            return
        deps.add(("ns", segments[1]))
        if segments[1] in self.store.namespaces:
            return
        raise _NoSuchName

    def _pod(self, segments: tuple[str, ...]) -> list[_Target]:
        if len(segments) != 3:
            raise _NoSuchName
        namespace, dashed = segments[1], segments[2]
        ip = dashed.replace("-", ".")
        if normal_ip(ip) is None or ":" in ip:
            raise _NoSuchName
        return [_Target(ip, 0, f"{fnv32a_hex(ip)}.{namespace}.pod.{self.domain}")]

    def _service_targets(self, service: Service, segments: tuple[str, ...]) -> list[_Target]:
        base, namespace, name = segments[0], segments[1], segments[2]
        subdomain = f"{name}.{namespace}.{base}.{self.domain}"
        extra = segments[3:]
        wants_endpoints = base == "endpoints" or (extra[:1] == ("_endpoints",))
        port_match = _port_pattern(extra)
        if service.cluster_ip != HEADLESS and not wants_endpoints:
            return _cluster_ip_targets(service, subdomain, port_match)
        endpoints = self.store.endpoints.get(service.key)
        if endpoints is None:
            raise _NoSuchName
        hostname = extra[0] if extra and not extra[0].startswith("_") else None
        targets = _endpoint_targets(endpoints, subdomain, hostname, port_match)
        if hostname is not None and not targets and not _has_label(endpoints, hostname):
            raise _NoSuchName
        return targets

    # records per question type ---------------------------------------------------------------

    def _records(self, targets: list[_Target], qtype: str, deps: set[Dep], depth: int) -> Answer:
        if qtype in ("A", "AAAA"):
            return self._address_records(targets, qtype, deps, depth)
        if qtype == "SRV":
            return _srv_records(targets, frozenset(deps))
        if qtype == "CNAME":
            names = [target.host for target in targets if normal_ip(target.host) is None]
            answer = (Record(QUERY_NAME, "CNAME", names[0].rstrip(".").lower()),) if names else ()
            return Answer(answer=answer, deps=frozenset(deps))
        return Answer(deps=frozenset(deps))

    def _address_records(
        self, targets: list[_Target], qtype: str, deps: set[Dep], depth: int
    ) -> Answer:
        records: list[Record] = []
        chase = None
        for target in targets:
            ip = normal_ip(target.host)
            if ip is None:
                cname = target.host.rstrip(".").lower()
                records.append(Record(QUERY_NAME, "CNAME", cname))
                if not self.owns(cname):
                    chase = cname
                elif depth < 8:
                    chained = self.answer(cname, qtype, depth + 1)
                    deps |= chained.deps
                    records.extend(_owned_by(chained.answer, cname))
                    chase = chained.chase
            elif ("." in ip) == (qtype == "A"):
                records.append(Record(QUERY_NAME, qtype, ip))
        return Answer(answer=tuple(_unique(records)), deps=frozenset(deps), chase=chase)

    def _structural(self, name: str, qtype: str, deps: set[Dep]) -> Answer:
        if name == self.domain and qtype == "SOA":
            return Answer(answer=(Record(QUERY_NAME, "SOA", None),), deps=frozenset(deps))
        return Answer(deps=frozenset(deps))


WILDCARDS = ("*", "_*")

OPENSHIFT_FALLBACKS = {
    "openshift.default.svc": "kubernetes.default.svc",
    "_endpoints.openshift.default.svc": "_endpoints.kubernetes.default.svc",
}


def _port_pattern(extra: tuple[str, ...]) -> tuple[str, str] | None:
    """(protocol, port) labels when the prefix asks for ports, else None.

    Origin: every prefix label starts with ``_`` (here ``*`` too), and the first
    is not ``_endpoints``; the port label defaults to ``*``.
    """
    if not extra or extra[0] == "_endpoints":
        return None
    if not all(label.startswith("_") or label == "*" for label in extra):
        return None
    return extra[0], extra[1] if len(extra) > 1 else "*"


def _port_labels(port: ServicePort, pattern: tuple[str, str]) -> bool:
    if not port.name:
        return False
    protocol_match, port_match = pattern
    port_ok = port_match in WILDCARDS or port_match == "_" + port.name.lower()
    protocol_ok = protocol_match in WILDCARDS or protocol_match == "_" + port.protocol.lower()
    return port_ok and protocol_ok


def _cluster_ip_targets(
    service: Service, subdomain: str, pattern: tuple[str, str] | None
) -> list[_Target]:
    host = service.external_name if service.is_external else service.cluster_ip
    key = f"{fnv32a_hex(host)}.{subdomain}"
    default = _Target(host, 0, key if not service.is_external else host)
    if not service.ports or pattern is None:
        return [default]
    targets = [
        _Target(host, port.port or port.target_port, default.key)
        for port in service.ports
        if _port_labels(port, pattern)
    ]
    return targets or [default]


def _endpoint_targets(
    endpoints: Endpoints, subdomain: str, hostname: str | None, pattern: tuple[str, str] | None
) -> list[_Target]:
    targets = []
    for subset in endpoints.subsets:
        for address in subset.addresses:
            label = address.label.lower()
            if hostname is not None and label != hostname:
                continue
            key = f"{label}.{subdomain}"
            if pattern is None:
                targets.append(_Target(address.ip, 0, key))
                continue
            targets.extend(
                _Target(address.ip, port.port, key)
                for port in subset.ports
                if port.port and _port_labels(port, pattern)
            )
    return targets


def _has_label(endpoints: Endpoints, label: str) -> bool:
    return any(
        address.label.lower() == label
        for subset in endpoints.subsets
        for address in subset.addresses
    )


def _srv_records(targets: list[_Target], deps: frozenset[Dep]) -> Answer:
    """SkyDNS's SRV answer: weights share 100 evenly; IP targets get address records."""
    weight = int(100.0 / (WEIGHT * len(targets)) * WEIGHT) if targets else 0
    answer: list[Record] = []
    additional: list[Record] = []
    for target in targets:
        ip = normal_ip(target.host)
        name = target.key if ip is not None else target.host.rstrip(".").lower()
        answer.append(Record(QUERY_NAME, "SRV", (PRIORITY, weight, target.port, name)))
        if ip is not None:
            additional.append(Record(name, "A" if "." in ip else "AAAA", ip))
    return Answer(answer=tuple(_unique(answer)), additional=tuple(_unique(additional)), deps=deps)


def _owned_by(records: Iterable[Record], name: str) -> list[Record]:
    """``records`` with the question's own name replaced by ``name``."""
    return [
        Record(name if record.name == QUERY_NAME else record.name, record.rtype, record.value)
        for record in records
    ]


def _unique(records: Iterable[Record]) -> Iterator[Record]:
    seen: set[Record] = set()
    for record in records:
        if record not in seen:
            seen.add(record)
            yield record


def reverse_name_ip(name: str) -> str | None:
    """The IP of a lower-case ``…in-addr.arpa``/``…ip6.arpa`` name, or None."""
    if name.endswith("." + ClusterZone.ARPA_V4):
        labels = name[: -len(ClusterZone.ARPA_V4) - 1].split(".")
        if len(labels) != 4:
            return None
        return normal_ip(".".join(reversed(labels)))
    if name.endswith("." + ClusterZone.ARPA_V6):
        nibbles = name[: -len(ClusterZone.ARPA_V6) - 1].split(".")
        if len(nibbles) != 32 or any(len(nibble) != 1 for nibble in nibbles):
            return None
        digits = "".join(reversed(nibbles))
        return normal_ip(":".join(digits[i : i + 4] for i in range(0, 32, 4)))
    return None

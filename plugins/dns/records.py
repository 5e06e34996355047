"""The cluster's DNS data and how names are answered from it.

Pure Python: no DNS library, no I/O.  Three parts:

* the model -- :class:`Service`, :class:`Endpoints` (Kubernetes' Service and
  Endpoints reduced to what DNS needs);
* :class:`ClusterRecords` -- the store the record sources feed; every change
  returns (and announces to its listeners) the *dependency keys* it touched,
  so a cache can drop exactly the answers that depended on them;
* :class:`ClusterZone` -- answers one (name, type) question under the cluster
  domain, and the reverse (PTR) names of the cluster's addresses.

Names follow the Kubernetes DNS-Based Service Discovery specification 1.1.0
(``kubernetes/dns`` ``docs/specification.md``), relative to the cluster domain
``D``; all answers TTL 30, SRV priority 10 with weights sharing 100::

    dns-version                     TXT "1.1.0" (TTL 28800)               spec 2.2
    (the apex)                      SOA; NS ns.dns.D (its address added)
    ns.dns                          A/AAAA of this server (when known)
    <svc>.<ns>.svc                  every cluster IP (A, AAAA: dual stack);  2.3.1
                                    headless: every ready endpoint IP,       2.4.1
                                    NXDOMAIN while there is none;
                                    ExternalName: CNAME to the external name 2.5
                                    SRV: one per service port (every port)
    _<port>._<proto>.<svc>.<ns>.svc SRV per named port; target               2.3.2
                                    <svc>.<ns>.svc.D, headless               2.4.2
                                    <hostname>.<svc>.<ns>.svc.D; an unknown
                                    port is NXDOMAIN
    <hostname>.<svc>.<ns>.svc       one endpoint (its hostname, else the     2.4.1
                                    FNV-32a hex hash of its IP)
    <a-b-c-d>.<ns>.pod              the dashed IPv4 address (also dashed     2.6
                                    IPv6, ``::`` written ``--``)
    PTR of a cluster IP             <svc>.<ns>.svc.D                         2.3.3
    PTR of a ready endpoint IP      <hostname>.<svc>.<ns>.svc.D              2.4.3

Origin's additions, kept where the specification leaves room:

    _<proto>.<svc>.<ns>.svc         SRV for every port of that protocol
    '*' or '_*' as port or protocol matches any
    _endpoints.<svc>.<ns>.svc       every ready endpoint IP
    <svc>.<ns>.endpoints            likewise; <hostname>.<svc>.<ns>.endpoints one
                                    of them; _<port>._<proto>.<svc>.<ns>.endpoints SRV
    openshift.default.svc           kubernetes.default.svc when no openshift service
    _endpoints.openshift.default.svc  likewise, _endpoints.kubernetes.default.svc

Any other name below a service is NXDOMAIN, and so are unknown names under
``D``; a name that exists without records of the asked type is NODATA (both
with the zone's SOA in the authority section).  ``D``, ``svc.D``,
``endpoints.D``, ``pod.D``, ``dns.D``, ``<ns>.pod.D`` and, while the namespace
has a service, ``<ns>.svc.D`` / ``<ns>.endpoints.D`` exist (NODATA): answering
NXDOMAIN for a name with names below it would let caching resolvers deny the
whole subtree (RFC 8020).  ``ANY`` questions are refused, as SkyDNS did.

Reverse names: PTR questions for the cluster's known IPs are answered
wherever they are; for the *reverse networks* (the service and pod networks
the node knows) the server is authoritative -- every name under their
``in-addr.arpa``/``ip6.arpa`` zones (a network's prefix rounded up to whole
octets or nibbles) is answered here, NXDOMAIN when no service or endpoint has
that address, never forwarded.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from nodehost.frozen import frozen

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


@dataclass(frozen=True, slots=True)
class ServicePort:
    """A service port: ``name`` is required for SRV names; ``protocol`` is TCP/UDP/SCTP."""

    name: str
    port: int
    protocol: str = "TCP"
    target_port: int = 0


@dataclass(frozen=True, slots=True)
class Service:
    """A Kubernetes Service as DNS sees it.

    ``cluster_ip`` is an IP, ``"None"`` (headless) or ``""`` (none: no DNS
    name unless ``type`` is ``ExternalName``); ``secondary_ip`` is the other
    family's cluster IP of a dual-stack service (``spec.clusterIPs[1]``), or "".
    """

    namespace: str
    name: str
    cluster_ip: str = ""
    type: str = "ClusterIP"
    external_name: str = ""
    ports: tuple[ServicePort, ...] = ()
    secondary_ip: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def is_external(self) -> bool:
        return self.type == EXTERNAL_NAME

    @property
    def is_headless(self) -> bool:
        return self.cluster_ip == HEADLESS and not self.is_external

    @property
    def has_name(self) -> bool:
        """Whether the service has DNS names at all (a cluster IP, headless, or ExternalName)."""
        return bool(self.cluster_ip) or self.is_external

    @property
    def cluster_ips(self) -> tuple[str, ...]:
        """Every cluster IP (normalised): none for headless and ExternalName services."""
        if self.is_external:
            return ()
        ips = (normal_ip(self.cluster_ip), normal_ip(self.secondary_ip))
        return tuple(ip for ip in ips if ip is not None)


@dataclass(frozen=True, slots=True)
class EndpointAddress:
    ip: str
    hostname: str = ""

    @property
    def label(self) -> str:
        """Origin's endpoint label: the hostname, else the FNV-32a hash of the IP."""
        return self.hostname or fnv32a_hex(self.ip)


@dataclass(frozen=True, slots=True)
class EndpointSubset:
    addresses: tuple[EndpointAddress, ...] = ()
    ports: tuple[ServicePort, ...] = ()


@dataclass(frozen=True, slots=True)
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
Key = tuple[str, str]


class IpIndex:
    """Which services hold an IP: most IPs have one, kept without a container of its own."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[str, Key | frozenset[Key]] = {}

    def __len__(self) -> int:
        return len(self._held)

    def get(self, ip: str) -> tuple[Key, ...]:
        """The keys holding ``ip``, sorted."""
        held = self._held.get(ip)
        if held is None:
            return ()
        return tuple(sorted(held)) if isinstance(held, frozenset) else (held,)

    def add(self, ip: str, key: Key) -> None:
        held = self._held.get(ip)
        if held is None:
            self._held[ip] = key
        elif isinstance(held, frozenset):
            self._held[ip] = held | {key}
        elif held != key:
            self._held[ip] = frozenset((held, key))

    def discard(self, ip: str, key: Key) -> None:
        held = self._held.get(ip)
        if held == key:
            del self._held[ip]
        elif isinstance(held, frozenset) and key in held:
            rest = held - {key}
            self._held[ip] = next(iter(rest)) if len(rest) == 1 else rest


class ClusterRecords:
    """Services and endpoints from every record source, indexed for answering.

    Each source writes through its own :class:`SourceSink` (see :meth:`sink`);
    a source's :meth:`SourceSink.replace` removes what that source no longer
    has.  Every change calls the listeners with the dependency keys it touched
    (nothing is called when nothing changed): ``("svc", ns, name)`` for the
    service's names, ``("ns", ns)`` when a namespace gains its first or loses
    its last service, ``("ptr", ip)`` when an IP gains or loses an owner.
    """

    def __init__(self) -> None:
        self.services: dict[Key, Service] = {}
        self.endpoints: dict[Key, Endpoints] = {}
        self.by_ip = IpIndex()
        self.by_endpoint_ip = IpIndex()
        self.namespaces: Counter[str] = Counter()
        self._listeners: list[Listener] = []
        self._sinks: dict[str, SourceSink] = {}

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def sink(self, source: str) -> SourceSink:
        """The sink of the source named ``source`` (the same one on every call)."""
        return self._sinks.setdefault(source, SourceSink(self, source))

    def set_service(self, key: Key, service: Service | None) -> set[Dep]:
        """Store (or with None remove) the service at ``key``; the keys touched."""
        old = self.services.get(key)
        if old == service:
            return set()
        touched: set[Dep] = {("svc", *key)}
        if old is not None:
            del self.services[key]
            self._count_namespace(old.namespace, -1, touched)
            self._reindex(self.by_ip, key, old.cluster_ips, (), touched)
        if service is not None:
            self.services[key] = service
            self._count_namespace(service.namespace, 1, touched)
            self._reindex(self.by_ip, key, (), service.cluster_ips, touched)
        self._announce(touched)
        return touched

    def set_endpoints(self, key: Key, endpoints: Endpoints | None) -> set[Dep]:
        """Store (or with None remove) the endpoints at ``key``; the keys touched."""
        old = self.endpoints.get(key)
        if old == endpoints:
            return set()
        if endpoints is None:
            del self.endpoints[key]
        else:
            self.endpoints[key] = endpoints
        touched: set[Dep] = {("svc", *key)}
        self._reindex(self.by_endpoint_ip, key, _ips(old), _ips(endpoints), touched)
        self._announce(touched)
        return touched

    def _count_namespace(self, namespace: str, change: int, touched: set[Dep]) -> None:
        self.namespaces[namespace] += change
        count = self.namespaces[namespace]
        if count <= 0:
            del self.namespaces[namespace]
        if count <= 0 or (change > 0 and count == 1):
            touched.add(("ns", namespace))

    @staticmethod
    def _reindex(
        index: IpIndex, key: Key, old: Iterable[str], new: Iterable[str], touched: set[Dep]
    ) -> None:
        before, after = set(old), set(new)
        for ip in before - after:
            index.discard(ip, key)
        for ip in after - before:
            index.add(ip, key)
        touched.update(("ptr", ip) for ip in before ^ after)

    def _announce(self, touched: set[Dep]) -> None:
        for listener in self._listeners:
            listener(touched)


def _ips(endpoints: Endpoints | None) -> Iterator[str]:
    """The endpoint IPs, normalised (the source's own string when it already is)."""
    if endpoints is not None:
        for subset in endpoints.subsets:
            for address in subset.addresses:
                ip = normal_ip(address.ip)
                if ip is not None:
                    yield address.ip if ip == address.ip else ip


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

SCHEMA_VERSION = "1.1.0"
"""The specification version ``dns-version.<zone>`` announces (spec 2.2)."""
SCHEMA_TTL = 28800
NS_NAME = "ns.dns"
"""This server's name, relative to the cluster domain (the apex's NS, the SOA's MNAME)."""


@dataclass(frozen=True)  # per query: the compiled __init__ is faster
class Record:
    """One resource record: ``name`` is absolute without the final dot, or
    :data:`QUERY_NAME` for the question's own name.  ``value`` by type: A/AAAA
    an IP; CNAME, PTR and NS a name; SRV ``(priority, weight, port, target)``;
    TXT its text; SOA the zone it is the SOA of."""

    name: str
    rtype: str
    value: object
    ttl: int = TTL


@dataclass(frozen=True)  # per query: the compiled __init__ is faster
class Answer:
    """What to say about one question under the cluster domain or a reverse zone.

    ``negative`` NXDOMAIN or NODATA: the SOA of ``zone`` (``""``: the cluster
    domain) goes in the authority section.
    ``chase`` an external name whose address records the server should look up
    upstream and append (an ExternalName service's CNAME target).
    ``deps`` the dependency keys this answer was computed from.
    """

    rcode: Rcode = "NOERROR"
    answer: tuple[Record, ...] = ()
    additional: tuple[Record, ...] = ()
    deps: frozenset[Dep] = frozenset()
    chase: str | None = None
    zone: str = ""

    @property
    def negative(self) -> bool:
        return self.rcode == "NXDOMAIN" or (self.rcode == "NOERROR" and not self.answer)


@dataclass(frozen=True)  # per query: the compiled __init__ is faster
class _Target:
    """SkyDNS's ``msg.Service``: a host (IP or name), a port (None: no SRV) and the SRV target."""

    host: str
    port: int | None
    key: str


class _NoSuchName(Exception):
    pass


IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class ClusterZone:
    """Answers questions under ``domain`` (and reverse names) from a :class:`ClusterRecords`.

    ``reverse_networks`` are the networks whose reverse zones this server is
    authoritative for; ``ns_addresses`` the addresses of ``ns.dns.<domain>``
    (the apex's name server: this server).
    """

    ARPA_V4 = "in-addr.arpa"
    ARPA_V6 = "ip6.arpa"

    def __init__(
        self,
        domain: str,
        store: ClusterRecords,
        *,
        reverse_networks: Iterable[IPNetwork] = (),
        ns_addresses: Iterable[str] = (),
    ) -> None:
        self.domain = domain.strip(".").lower()
        self.store = store
        self._suffix = "." + self.domain
        self.ns_name = f"{NS_NAME}.{self.domain}"
        self.reverse_networks = tuple(reverse_networks)
        self.ns_addresses = tuple(filter(None, map(normal_ip, ns_addresses)))

    def owns(self, name: str) -> bool:
        """Whether the lower-case ``name`` (no final dot) is in the cluster domain."""
        return name == self.domain or name.endswith(self._suffix)

    def answer(self, name: str, qtype: str, depth: int = 0) -> Answer:
        """The answer for the lower-case ``name`` (in the zone, no final dot).

        ``depth`` counts the in-zone CNAME links followed so far (at most 8, as SkyDNS).
        """
        if qtype == "ANY":
            return Answer(rcode="REFUSED")
        relative = name[: -len(self._suffix)] if name != self.domain else ""
        if relative in ZONE_NAMES:
            return self._zone_name(relative, qtype)
        segments = tuple(reversed(relative.split(".")))
        deps: set[Dep] = set()
        try:
            targets = self._targets(segments, relative, deps)
        except _NoSuchName:
            return Answer(rcode="NXDOMAIN", deps=frozenset(deps))
        if targets is None:
            return Answer(deps=frozenset(deps))
        return self._records(targets, qtype, deps, depth)

    def reverse(self, name: str, qtype: str) -> Answer | None:
        """The answer for the lower-case ``name`` under in-addr.arpa or ip6.arpa; None: forward it.

        A PTR question for an IP the cluster knows is answered wherever the
        IP is; any question inside a reverse network's zone is answered here
        (NXDOMAIN for an address nobody has, NODATA for the names above
        addresses, the SOA and NS at the zone's apex).
        """
        reverse = parse_reverse_name(name)
        if reverse is None:
            return None
        deps: set[Dep] = set()
        records = self._ptr_records(reverse.ip, deps) if reverse.ip else []
        if records and qtype == "PTR":
            return Answer(answer=tuple(records), deps=frozenset(deps))
        zone = self._reverse_zone(reverse)
        if zone is None:
            return None
        if qtype == "ANY":
            return Answer(rcode="REFUSED")
        if reverse.beyond or (reverse.ip and not records):
            return Answer(rcode="NXDOMAIN", deps=frozenset(deps), zone=zone)
        if name == zone and qtype in ("SOA", "NS"):
            return self._apex(zone, qtype)
        return Answer(deps=frozenset(deps), zone=zone)

    def reverse_deps(self, name: str) -> frozenset[Dep]:
        """What a reverse ``name`` that :meth:`reverse` leaves to others depends on: its IP
        gaining an owner makes it ours (an answer given for it before must then go)."""
        reverse = parse_reverse_name(name)
        if reverse is None or not reverse.ip:
            return frozenset()
        return frozenset({("ptr", reverse.ip)})

    # the names of the zone itself -----------------------------------------------------------

    def _zone_name(self, relative: str, qtype: str) -> Answer:
        """The apex, ``dns-version`` (TXT), ``ns.dns`` (this server's addresses), ``dns``."""
        if relative == "" and qtype in ("SOA", "NS"):
            return self._apex(self.domain, qtype)
        if relative == "dns-version" and qtype == "TXT":
            return Answer(answer=(Record(QUERY_NAME, "TXT", SCHEMA_VERSION, SCHEMA_TTL),))
        if relative == NS_NAME:
            return Answer(answer=tuple(self._ns_addresses(QUERY_NAME, qtype)))
        return Answer()

    def _apex(self, zone: str, qtype: str) -> Answer:
        if qtype == "SOA":
            return Answer(answer=(Record(QUERY_NAME, "SOA", zone),), zone=zone)
        additional = tuple(self._ns_addresses(self.ns_name, "A")) + tuple(
            self._ns_addresses(self.ns_name, "AAAA")
        )
        return Answer(answer=(Record(QUERY_NAME, "NS", self.ns_name),), additional=additional)

    def _ns_addresses(self, owner: str, qtype: str) -> Iterator[Record]:
        for ip in self.ns_addresses:
            if ("." in ip) == (qtype == "A") and qtype in ("A", "AAAA"):
                yield Record(owner, qtype, ip)

    # services, endpoints and pods ------------------------------------------------------------

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
        if not service.has_name:
            raise _NoSuchName
        return self._service_targets(service, segments)

    def _short_name(self, segments: tuple[str, ...], deps: set[Dep]) -> None:
        """Names above the services: existing names without records, or NXDOMAIN.

        Exist: ``svc``, ``endpoints``, ``pod``; ``<ns>.pod``; and ``<ns>.svc`` /
        ``<ns>.endpoints`` while the namespace has a service.
        """
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
        ip = pod_ip(segments[2])
        if ip is None:
            raise _NoSuchName
        return [_Target(ip, None, "")]

    def _service_targets(self, service: Service, segments: tuple[str, ...]) -> list[_Target]:
        """The targets of a name at or below an existing service (spec 2.3-2.5, Origin's names)."""
        base, namespace, name = segments[0], segments[1], segments[2]
        subdomain = f"{name}.{namespace}.{base}.{self.domain}"
        kind, label, pattern = _below_service(segments[3:], base)
        wants_endpoints = base == "endpoints" or kind in ("endpoints", "endpoint")
        if service.is_external:
            if wants_endpoints:
                raise _NoSuchName
            host = service.external_name
            targets = _port_targets(service.ports, (host,), host, pattern)
        elif service.is_headless or wants_endpoints:
            endpoints = self.store.endpoints.get(service.key)
            targets = _endpoint_targets(endpoints, subdomain, label, pattern) if endpoints else []
        else:
            targets = _port_targets(service.ports, service.cluster_ips, subdomain, pattern)
        if not targets:
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

    # reverse names ---------------------------------------------------------------------------

    def _ptr_records(self, ip: str, deps: set[Dep]) -> list[Record]:
        """PTR records for ``ip``: the services with that cluster IP (spec 2.3.3), else the
        names of the endpoints with that IP (2.4.3), as CoreDNS does."""
        deps.add(("ptr", ip))
        names = []
        for namespace, name in self.store.by_ip.get(ip):
            deps.add(("svc", namespace, name))
            names.append(f"{name}.{namespace}.svc.{self.domain}")
        for key in () if names else self.store.by_endpoint_ip.get(ip):
            deps.add(("svc", *key))
            service = self.store.services.get(key)
            endpoints = self.store.endpoints.get(key)
            if service is None or service.is_external or not service.has_name or not endpoints:
                continue
            subdomain = f"{key[1]}.{key[0]}.svc.{self.domain}"
            names += [f"{label}.{subdomain}" for label in _labels_at(endpoints, ip)]
        return [Record(QUERY_NAME, "PTR", name) for name in dict.fromkeys(names)]

    def _reverse_zone(self, reverse: ReverseName) -> str | None:
        """The reverse zone (of one of the reverse networks) that holds ``reverse``, if any."""
        for network in self.reverse_networks:
            if network.version != reverse.version:
                continue
            unit = 8 if reverse.version == 4 else 4
            zone_bits = max(unit, -(-network.prefixlen // unit) * unit)
            if reverse.length < zone_bits:
                continue
            shift = reverse.bits - network.prefixlen
            if reverse.value >> shift != int(network.network_address) >> shift:
                continue
            return reverse_zone_name(reverse.version, reverse.value, zone_bits)
        return None


#: Names under the cluster domain the server itself answers (relative to the domain).
ZONE_NAMES = ("", "dns-version", "dns", NS_NAME)

WILDCARDS = ("*", "_*")

OPENSHIFT_FALLBACKS = {
    "openshift.default.svc": "kubernetes.default.svc",
    "_endpoints.openshift.default.svc": "_endpoints.kubernetes.default.svc",
}

Kind = Literal["service", "endpoints", "endpoint", "ports"]


def _below_service(
    extra: tuple[str, ...], base: str
) -> tuple[Kind, str | None, tuple[str, str] | None]:
    """What the labels below a service name ask for (nearest label first).

    ``(kind, endpoint label, (protocol, port) pattern)``: the service itself;
    every endpoint (``_endpoints`` under ``.svc``, or the ``.endpoints``
    name); one endpoint by its label; or ports (``_<proto>`` alone means every
    port, Origin).  Anything else does not exist.
    """
    if not extra:
        return ("service" if base == "svc" else "endpoints"), None, None
    if extra == ("_endpoints",) and base == "svc":
        return "endpoints", None, None
    first = extra[0]
    if len(extra) == 1 and not first.startswith("_") and first != "*":
        return "endpoint", first, None
    portish = all((label.startswith("_") or label == "*") for label in extra)
    if len(extra) <= 2 and portish and "_endpoints" not in extra:
        return "ports", None, (first, extra[1] if len(extra) > 1 else "*")
    raise _NoSuchName


def _port_labels(port: ServicePort, pattern: tuple[str, str]) -> bool:
    """Whether ``port`` is named by the ``_<port>._<proto>`` labels (unnamed ports never are)."""
    if not port.name:
        return False
    protocol_match, port_match = pattern
    port_ok = port_match in WILDCARDS or port_match == "_" + port.name.lower()
    protocol_ok = protocol_match in WILDCARDS or protocol_match == "_" + port.protocol.lower()
    return port_ok and protocol_ok


def _port_numbers(
    ports: tuple[ServicePort, ...], pattern: tuple[str, str] | None
) -> list[int | None]:
    """The port numbers a name asks for: every port (None if there is none), or the named ones."""
    if pattern is None:
        return [port.port or port.target_port for port in ports] or [None]
    return [port.port or port.target_port for port in ports if _port_labels(port, pattern)]


def _port_targets(
    ports: tuple[ServicePort, ...],
    hosts: tuple[str, ...],
    target: str,
    pattern: tuple[str, str] | None,
) -> list[_Target]:
    return [_Target(host, port, target) for port in _port_numbers(ports, pattern) for host in hosts]


def _endpoint_targets(
    endpoints: Endpoints, subdomain: str, label: str | None, pattern: tuple[str, str] | None
) -> list[_Target]:
    targets = []
    for subset in endpoints.subsets:
        numbers = _port_numbers(subset.ports, pattern)
        for address in subset.addresses:
            name = address.label.lower()
            if label is None or name == label:
                key = f"{name}.{subdomain}"
                targets += [_Target(address.ip, port, key) for port in numbers]
    return targets


def _labels_at(endpoints: Endpoints, ip: str) -> Iterator[str]:
    for subset in endpoints.subsets:
        for address in subset.addresses:
            if address.ip == ip or normal_ip(address.ip) == ip:
                yield address.label.lower()


def _srv_records(targets: list[_Target], deps: frozenset[Dep]) -> Answer:
    """SRV records (targets without a port have none); IP targets get address records.

    Priority 10; the weights share 100 evenly, as SkyDNS did (the
    specification leaves both open).
    """
    unique = list(dict.fromkeys((t.port, t.key or t.host) for t in targets if t.port is not None))
    weight = int(100.0 / (WEIGHT * len(unique)) * WEIGHT) if unique else 0
    answer = [
        Record(QUERY_NAME, "SRV", (PRIORITY, weight, port, name.rstrip(".").lower()))
        for port, name in unique
    ]
    additional = [
        Record(target.key, "A" if "." in ip else "AAAA", ip)
        for target in targets
        if target.port is not None and (ip := normal_ip(target.host)) is not None
    ]
    return Answer(answer=tuple(answer), additional=tuple(_unique(additional)), deps=deps)


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


def pod_ip(dashed: str) -> str | None:
    """The IP of a pod name label: ``a-b-c-d`` IPv4, or IPv6 with ``-`` for ``:`` (as CoreDNS)."""
    if dashed.count("-") == 3 and "--" not in dashed:
        ip = normal_ip(dashed.replace("-", "."))
        return ip if ip is not None and "." in ip else None
    ip = normal_ip(dashed.replace("-", ":"))
    return ip if ip is not None and ":" in ip else None


# --- reverse names ----------------------------------------------------------------------------


@frozen
class ReverseName:
    """A name under in-addr.arpa or ip6.arpa read as an address prefix.

    ``value`` holds the first ``length`` bits (of ``bits``: 32 or 128) that
    the name's labels spell; ``ip`` is the address when the name is exactly
    one; ``beyond`` says more labels follow that are not part of an address
    (such a name cannot exist in a reverse zone).
    """

    version: int
    value: int
    length: int
    beyond: bool

    @property
    def bits(self) -> int:
        return 32 if self.version == 4 else 128

    @property
    def ip(self) -> str | None:
        if self.beyond or self.length != self.bits:
            return None
        address = ipaddress.IPv4Address if self.version == 4 else ipaddress.IPv6Address
        return str(address(self.value))


def parse_reverse_name(name: str) -> ReverseName | None:
    """The address prefix of the lower-case ``name``, or None when it is not a reverse name."""
    for version, suffix, unit, limit in (
        (4, ClusterZone.ARPA_V4, 8, 4),
        (6, ClusterZone.ARPA_V6, 4, 32),
    ):
        if name != suffix and not name.endswith("." + suffix):
            continue
        labels = name[: -len(suffix) - 1].split(".")[::-1] if name != suffix else []
        value = count = 0
        for label in labels[:limit]:
            digit = _octet(label) if version == 4 else _nibble(label)
            if digit is None:
                break
            value, count = (value << unit) | digit, count + 1
        bits = 32 if version == 4 else 128
        return ReverseName(
            version, value << (bits - count * unit), count * unit, count < len(labels)
        )
    return None


def _octet(label: str) -> int | None:
    if label.isdigit() and len(label) <= 3 and str(int(label)) == label and int(label) < 256:
        return int(label)
    return None


def _nibble(label: str) -> int | None:
    if len(label) == 1 and label in "0123456789abcdef":
        return int(label, 16)
    return None


def reverse_zone_name(version: int, value: int, length: int) -> str:
    """The reverse zone of the first ``length`` bits of the address ``value``."""
    if version == 4:
        labels = [str((value >> (24 - 8 * i)) & 0xFF) for i in range(length // 8)]
        return ".".join([*reversed(labels), ClusterZone.ARPA_V4])
    nibbles = [f"{(value >> (124 - 4 * i)) & 0xF:x}" for i in range(length // 4)]
    return ".".join([*reversed(nibbles), ClusterZone.ARPA_V6])


def reverse_name_ip(name: str) -> str | None:
    """The IP of a lower-case ``…in-addr.arpa``/``…ip6.arpa`` name, or None."""
    reverse = parse_reverse_name(name)
    return reverse.ip if reverse is not None else None

"""The ``kubernetes`` record source's translation: API objects to the DNS model.

:func:`service_from_api` and :func:`slice_from_api` turn ``v1`` Services and
``discovery.k8s.io/v1`` EndpointSlices (JSON mappings, checked with
:mod:`nodehost.api.objects`) into :mod:`nodehost.plugins.dns.records`' model;
:class:`Mirror` keeps what the source has written, so a resync writes only
differences; :data:`KINDS` says how each followed resource goes through both.
The rules are :mod:`nodehost.plugins.dns.sources.kubernetes`' (its module
docstring).  Only a running source imports this module: planning the source,
as ``config validate`` and ``start --dry-run`` do, does not load the DNS model.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodehost.api import objects as shape
from nodehost.api.objects import name_of
from nodehost.frozen import frozen
from nodehost.plugins.dns.records import (
    EXTERNAL_NAME,
    EndpointAddress,
    Endpoints,
    EndpointSubset,
    Service,
    ServicePort,
)
from nodehost.plugins.dns.sources import RecordSink

SERVICE_NAME_LABEL = "kubernetes.io/service-name"

Key = tuple[str, str]

# --- translation: API objects (JSON mappings) to the DNS model -------------------------------


_PORTS: dict[tuple[str, int, str, int], ServicePort] = {}
_PORTS_LIMIT = 4096


def _port(name: str, number: int, protocol: str, target: int = 0) -> ServicePort:
    """A :class:`ServicePort`, shared among the objects that have the same one (a cluster
    has few distinct ports and many services; at most :data:`_PORTS_LIMIT` are kept)."""
    key = (name, number, protocol, target)
    port = _PORTS.get(key)
    if port is None:
        port = ServicePort(name=sys.intern(name), port=number, protocol=sys.intern(protocol),
                           target_port=target)  # fmt: skip
        if len(_PORTS) < _PORTS_LIMIT:
            _PORTS[key] = port
    return port


def service_from_api(obj: Mapping[str, Any]) -> Service:
    """The DNS view of a ``v1`` Service object; :class:`MalformedObject` when a field it
    reads is not the API's shape."""
    name = name_of(obj)
    metadata, spec = shape.metadata(obj), shape.mapping(obj.get("spec"), "spec")
    kind = shape.text(spec.get("type"), "spec.type") or "ClusterIP"
    listed = shape.sequence(spec.get("clusterIPs"), "spec.clusterIPs")
    cluster_ips = [shape.text(ip, "spec.clusterIPs[]") for ip in listed if ip]
    cluster_ips = cluster_ips or [shape.text(spec.get("clusterIP"), "spec.clusterIP")]
    external = shape.text(spec.get("externalName"), "spec.externalName")
    return Service(
        namespace=sys.intern(shape.text(metadata.get("namespace"), "metadata.namespace")
                             or "default"),
        name=name,
        cluster_ip=cluster_ips[0],
        secondary_ip=cluster_ips[1] if len(cluster_ips) > 1 else "",
        type=kind,
        external_name=external.rstrip(".").lower() if kind == EXTERNAL_NAME else "",
        ports=tuple(
            _port_from_api(port, "spec.ports[]", target=True)
            for port in shape.sequence(spec.get("ports"), "spec.ports")
        ),
    )  # fmt: skip


def _port_from_api(obj: Any, where: str, target: bool = False) -> ServicePort:
    """A Service's or an EndpointSlice's port entry."""
    port = shape.mapping(obj, where)
    target_port = port.get("targetPort") if target else None
    return _port(
        shape.text(port.get("name"), f"{where}.name"),
        shape.integer(port.get("port"), f"{where}.port"),
        shape.text(port.get("protocol"), f"{where}.protocol") or "TCP",
        target_port if isinstance(target_port, int) else 0,  # a named target port: unknown
    )


@dataclass(frozen=True, slots=True)
class Slice:
    """The DNS view of one ``discovery.k8s.io/v1`` EndpointSlice; ``invalid`` are the
    addresses left out because they are not IPs of the slice's family (for the log)."""

    namespace: str
    name: str
    service: str  # the service it belongs to; "" when the label is missing
    subset: EndpointSubset
    invalid: tuple[str, ...] = field(default=(), compare=False)

    @property
    def key(self) -> Key:
        return (self.namespace, self.name)

    @property
    def service_key(self) -> Key:
        return (self.namespace, self.service)


_FAMILIES = {"IPv4": 4, "IPv6": 6}


def slice_from_api(obj: Mapping[str, Any]) -> Slice:
    """The DNS view of an EndpointSlice object: its ready addresses and its named ports.

    An address that is not an IP of the slice's ``addressType`` (``999.1.1.1``, null, a
    number) is left out and listed in :attr:`Slice.invalid`; a field of the wrong type
    anywhere else makes the whole slice :class:`MalformedObject`."""
    name = name_of(obj)
    metadata = shape.metadata(obj)
    labels = shape.mapping(metadata.get("labels"), "metadata.labels")
    family = _FAMILIES.get(obj.get("addressType"))  # type: ignore[arg-type]
    addresses: list[EndpointAddress] = []
    invalid: list[str] = []
    for endpoint in shape.sequence(obj.get("endpoints"), "endpoints") if family else ():
        endpoint = shape.mapping(endpoint, "endpoints[]")
        conditions = shape.mapping(endpoint.get("conditions"), "endpoints[].conditions")
        if conditions.get("ready") is False:
            continue
        hostname = shape.text(endpoint.get("hostname"), "endpoints[].hostname")
        for ip in shape.sequence(endpoint.get("addresses"), "endpoints[].addresses"):
            if _is_ip(ip, family):
                addresses.append(EndpointAddress(ip, hostname))
            else:
                invalid.append(repr(ip)[:60])
    ports = tuple(
        _port_from_api(port, "ports[]") for port in shape.sequence(obj.get("ports"), "ports")
    )
    return Slice(
        namespace=sys.intern(shape.text(metadata.get("namespace"), "metadata.namespace")
                             or "default"),
        name=name,
        service=shape.text(labels.get(SERVICE_NAME_LABEL), f"label {SERVICE_NAME_LABEL}"),
        subset=EndpointSubset(tuple(addresses), ports),
        invalid=tuple(invalid),
    )  # fmt: skip


def _is_ip(value: Any, family: int | None) -> bool:
    """Whether ``value`` is a string holding an IP address of ``family`` (4 or 6)."""
    import ipaddress

    if not isinstance(value, str):
        return False
    try:
        return ipaddress.ip_address(value).version == family
    except ValueError:
        return False


def endpoints_of(key: Key, slices: Iterable[Slice]) -> Endpoints:
    """The endpoints of service ``key`` from its slices (those without ready addresses add
    nothing)."""
    ordered = sorted(slices, key=lambda item: item.name)
    subsets = tuple(item.subset for item in ordered if item.subset.addresses)
    return Endpoints(namespace=key[0], name=key[1], subsets=subsets)


# --- the mirror: what this source has written, so a resync writes only differences ------------


@dataclass
class Mirror:
    """The cluster state as this source last saw it, written to ``sink`` change by change.

    Slices are indexed by their service, so one event costs the slices of one
    service, whatever the size of the cluster.
    """

    sink: RecordSink
    services: dict[Key, Service] = field(default_factory=dict)
    slices: dict[Key, Slice] = field(default_factory=dict)
    by_service: dict[Key, dict[Key, Slice]] = field(default_factory=dict)

    def replace_services(self, listed_services: Iterable[Service]) -> None:
        """A full list of Services: add and change what differs, delete what is gone."""
        listed = {service.key: service for service in listed_services}
        for key in self.services.keys() - listed.keys():
            self.delete_service(key)
        for service in listed.values():
            self.put_service(service)

    def apply_service(self, event: str, service: Service) -> None:
        if event == "DELETED":
            self.delete_service(service.key)
        else:
            self.put_service(service)

    def put_service(self, service: Service) -> None:
        if self.services.get(service.key) != service:
            self.services[service.key] = service
            self.sink.upsert_service(service)

    def delete_service(self, key: Key) -> None:
        if self.services.pop(key, None) is not None:
            self.sink.delete_service(*key)

    def replace_slices(self, listed_slices: Iterable[Slice]) -> None:
        """A full list of EndpointSlices: rewrite the endpoints of every service that changed."""
        listed = {item.key: item for item in listed_slices}
        grouped: dict[Key, dict[Key, Slice]] = {}
        for item in listed.values():
            if item.service:
                grouped.setdefault(item.service_key, {})[item.key] = item
        before, self.slices, self.by_service = self.by_service, listed, grouped
        for key in before.keys() | grouped.keys():
            if before.get(key) != grouped.get(key):
                self._write_endpoints(key)

    def apply_slice(self, event: str, new: Slice) -> None:
        old = self.slices.pop(new.key, None)
        if old is not None and old.service:
            group = self.by_service[old.service_key]
            del group[old.key]
            if not group:
                del self.by_service[old.service_key]
        if event != "DELETED":
            self.slices[new.key] = new
            if new.service:
                self.by_service.setdefault(new.service_key, {})[new.key] = new
        touched = {new.service_key} | ({old.service_key} if old is not None else set())
        for key in touched:
            if key[1] and (old is None or new != old or event == "DELETED"):
                self._write_endpoints(key)

    def _endpoints(self, key: Key) -> Endpoints | None:
        """The endpoints of service ``key``: None while no slice names it."""
        mine = self.by_service.get(key)
        return endpoints_of(key, mine.values()) if mine else None

    def _write_endpoints(self, key: Key) -> None:
        after = self._endpoints(key)
        if after is None:
            self.sink.delete_endpoints(*key)
        else:
            self.sink.upsert_endpoints(after)


# --- how the source follows each resource ----------------------------------------------------


@frozen
class Kind:
    """One followed resource: its API kind and how the mirror takes it."""

    label: str  # for logs: "services", "endpointslices"
    kind: str  # as :data:`nodehost.api.client.KINDS` names it
    convert: Callable[[Mapping[str, Any]], Any]
    replace: Callable[[Mirror, Iterable[Any]], None]
    apply: Callable[[Mirror, str, Any], None]


KINDS = (
    Kind("services", "Service", service_from_api, Mirror.replace_services, Mirror.apply_service),
    Kind("endpointslices", "EndpointSlice", slice_from_api, Mirror.replace_slices,
          Mirror.apply_slice),
)  # fmt: skip

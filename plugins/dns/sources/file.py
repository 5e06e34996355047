"""The ``file`` record source: services and endpoints from a small YAML file.

For standalone nodes, tests and benchmarks.  The file (``dnsServerConfig.recordsFile``)
looks like this; every key but ``name`` and ``port`` may be left out::

    services:
    - name: web                     # DNS-1123 label
      namespace: default            # default "default"
      clusterIP: 172.30.0.10        # an IP, "None" (headless), or absent (no DNS name)
      clusterIPs: [172.30.0.10, fd00::10]   # dual stack: one IP of each family (the
                                            # first is clusterIP); AAAA for the IPv6 one
      ports:
      - {name: http, port: 80, protocol: TCP}   # protocol TCP (default), UDP or SCTP
    - name: search
      namespace: default
      externalName: search.example.com          # type ExternalName: a CNAME
    endpoints:
    - name: web                     # the service of the same namespace and name
      namespace: default
      subsets:
      - addresses:
        - {ip: 10.128.0.5, hostname: web-0}     # hostname optional (its endpoint label)
        - {ip: 10.128.0.6}
        ports:
        - {name: http, port: 8080}

The file is checked completely when it is loaded: an unknown key, a wrong
type, a bad IP, name or port, or a service listed twice is an error naming
the file, the field and its line.  While the server runs the file is checked
for changes every second (``os.stat``: inode, size, modification time) and
reloaded in a worker thread; a change that does not load is logged and the
previous records are kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from nodehost.config.hostport import is_dns1123_label, is_valid_port
from nodehost.fileread import RECORDS_LIMIT, FileState, file_state
from nodehost.frozen import frozen
from nodehost.plugins.dns.records import (
    EXTERNAL_NAME,
    HEADLESS,
    EndpointAddress,
    Endpoints,
    EndpointSubset,
    Service,
    ServicePort,
    normal_ip,
)
from nodehost.plugins.dns.sources import RecordSink, SourceContext

NAME = "file"
POLL_INTERVAL = 1.0
#: A cluster of 10,000 services and 50,000 endpoints written out in block style is about
#: 5 MiB and 680,000 YAML nodes; these limits hold twice that.  Aliases may add at most
#: 100,000 nodes more (``yamlsafe.MAX_ALIAS_NODES``: an alias bomb is refused early).
MAX_FILE_BYTES = RECORDS_LIMIT
MAX_NODES = 1_500_000

_PROTOCOLS = ("TCP", "UDP", "SCTP")
_SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", EXTERNAL_NAME)


class RecordsFileError(ValueError):
    """The records file cannot be used; ``str()`` is one line naming the file and field."""


def source_factory(context: SourceContext) -> FileSource | None:
    """The ``file`` source when ``dnsServerConfig.recordsFile`` is set."""
    path = context.settings.records_file
    return FileSource(path) if path else None


# --- loading ------------------------------------------------------------------------------


@frozen
class RecordsFile:
    services: tuple[Service, ...]
    endpoints: tuple[Endpoints, ...]


def load_records_file(path: str) -> RecordsFile:
    """Read and check the records file at ``path``; :class:`RecordsFileError` on any problem."""
    from nodehost.config.yamlsafe import YAMLFileError, read_yaml_file

    try:
        parsed = read_yaml_file(path, max_bytes=MAX_FILE_BYTES, max_nodes=MAX_NODES)
    except YAMLFileError as error:
        raise RecordsFileError(f"DNS records file {path}: {error}") from None
    reader = _Reader(path, parsed.positions)
    return reader.document(parsed.data)


class _Reader:
    """Turns the parsed YAML into records, failing on the first problem with its place."""

    def __init__(self, path: str, positions: Mapping[str, tuple[int, int]]) -> None:
        self.path = path
        self.positions = positions

    def fail(self, where: str, message: str) -> RecordsFileError:
        place = self.positions.get(where)
        at = f" (line {place[0]}, column {place[1]})" if place else ""
        return RecordsFileError(f"DNS records file {self.path}: {where}: {message}{at}")

    def mapping(self, value: Any, where: str, known: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where or "(top level)", "must be a mapping")
        for key in value:
            if key not in known:
                raise self.fail(_join(where, str(key)), f"unknown key; known: {', '.join(known)}")
        return value

    def items(self, value: Any, where: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(where, "must be a list")
        return value

    def text(self, value: Any, where: str, default: str = "") -> str:
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(where, "must be a string")
        return value

    def label(self, value: Any, where: str, default: str = "") -> str:
        text = self.text(value, where, default)
        if not text:
            raise self.fail(where, "is required")
        if not is_dns1123_label(text):
            raise self.fail(where, f"{text!r} is not a DNS-1123 label (a-z, 0-9, '-')")
        return text

    def port(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not is_valid_port(value):
            raise self.fail(where, "must be a port number between 1 and 65535")
        return value

    def ip(self, value: Any, where: str) -> str:
        text = self.text(value, where)
        ip = normal_ip(text)
        if ip is None:
            raise self.fail(where, f"{text!r} is not an IP address")
        return ip

    def dns_name(self, value: Any, where: str) -> str:
        text = self.text(value, where).rstrip(".").lower()
        labels = text.split(".")
        valid = 0 < len(text) <= 253 and all(0 < len(label) <= 63 for label in labels)
        if not valid or not all(re.match(r"^[a-z0-9_]([-a-z0-9_]*[a-z0-9_])?$", x) for x in labels):
            raise self.fail(where, f"{text!r} is not a DNS name")
        return text

    def document(self, data: Any) -> RecordsFile:
        top = self.mapping(data, "", ("services", "endpoints"))
        services = [
            self.service(item, f"services[{index}]")
            for index, item in enumerate(self.items(top.get("services"), "services"))
        ]
        endpoints = [
            self.endpoints(item, f"endpoints[{index}]")
            for index, item in enumerate(self.items(top.get("endpoints"), "endpoints"))
        ]
        self.unique([service.key for service in services], "services")
        self.unique([item.key for item in endpoints], "endpoints")
        return RecordsFile(tuple(services), tuple(endpoints))

    def unique(self, keys: list[tuple[str, str]], where: str) -> None:
        seen: set[tuple[str, str]] = set()
        for index, key in enumerate(keys):
            if key in seen:
                raise self.fail(f"{where}[{index}]", f"{key[0]}/{key[1]} is listed twice")
            seen.add(key)

    def service(self, value: Any, where: str) -> Service:
        known = ("name", "namespace", "clusterIP", "clusterIPs", "type", "externalName", "ports")
        item = self.mapping(value, where, known)
        external = item.get("externalName")
        kind = self.text(item.get("type"), f"{where}.type", EXTERNAL_NAME if external else "")
        kind = kind or "ClusterIP"
        if kind not in _SERVICE_TYPES:
            raise self.fail(f"{where}.type", f"must be one of {', '.join(_SERVICE_TYPES)}")
        if (kind == EXTERNAL_NAME) != (external is not None):
            raise self.fail(f"{where}.externalName", "is required exactly for type ExternalName")
        cluster_ip, secondary_ip = self.cluster_ips(item, where)
        return Service(
            namespace=self.label(item.get("namespace"), f"{where}.namespace", "default"),
            name=self.label(item.get("name"), f"{where}.name"),
            cluster_ip=cluster_ip,
            type=kind,
            external_name=self.dns_name(external, f"{where}.externalName") if external else "",
            ports=self.ports(item.get("ports"), f"{where}.ports", target=True),
            secondary_ip=secondary_ip,
        )

    def cluster_ips(self, item: Mapping[str, Any], where: str) -> tuple[str, str]:
        """``clusterIP`` and ``clusterIPs`` as the API validates them: (primary, secondary)."""
        cluster_ip = self.text(item.get("clusterIP"), f"{where}.clusterIP")
        if cluster_ip and cluster_ip != HEADLESS:
            cluster_ip = self.ip(cluster_ip, f"{where}.clusterIP")
        at = f"{where}.clusterIPs"
        listed = []
        for index, value in enumerate(self.items(item.get("clusterIPs"), at)):
            text = self.text(value, f"{at}[{index}]")
            listed.append(text if text == HEADLESS else self.ip(text, f"{at}[{index}]"))
        if not listed:
            return cluster_ip, ""
        if cluster_ip and listed[0] != cluster_ip:
            raise self.fail(at, f"the first entry must be clusterIP ({cluster_ip})")
        if len(listed) > 2 or (len(listed) == 2 and HEADLESS in listed):
            raise self.fail(at, 'at most two IPs, one per family, or just "None"')
        if len(listed) == 2 and (":" in listed[0]) == (":" in listed[1]):
            raise self.fail(at, "two IPs must be of different families (IPv4 and IPv6)")
        return listed[0], listed[1] if len(listed) == 2 else ""

    def endpoints(self, value: Any, where: str) -> Endpoints:
        item = self.mapping(value, where, ("name", "namespace", "subsets"))
        subsets = [
            self.subset(subset, f"{where}.subsets[{index}]")
            for index, subset in enumerate(self.items(item.get("subsets"), f"{where}.subsets"))
        ]
        return Endpoints(
            namespace=self.label(item.get("namespace"), f"{where}.namespace", "default"),
            name=self.label(item.get("name"), f"{where}.name"),
            subsets=tuple(subsets),
        )

    def subset(self, value: Any, where: str) -> EndpointSubset:
        item = self.mapping(value, where, ("addresses", "ports"))
        addresses = []
        for index, address in enumerate(self.items(item.get("addresses"), f"{where}.addresses")):
            at = f"{where}.addresses[{index}]"
            fields = self.mapping(address, at, ("ip", "hostname"))
            hostname = fields.get("hostname")
            addresses.append(
                EndpointAddress(
                    ip=self.ip(fields.get("ip"), f"{at}.ip"),
                    hostname=self.label(hostname, f"{at}.hostname") if hostname else "",
                )
            )
        return EndpointSubset(tuple(addresses), self.ports(item.get("ports"), f"{where}.ports"))

    def ports(self, value: Any, where: str, target: bool = False) -> tuple[ServicePort, ...]:
        known = (
            ("name", "port", "protocol", "targetPort") if target else ("name", "port", "protocol")
        )
        ports = []
        for index, port in enumerate(self.items(value, where)):
            at = f"{where}[{index}]"
            fields = self.mapping(port, at, known)
            name = self.text(fields.get("name"), f"{at}.name")
            if name and (len(name) > 15 or not is_dns1123_label(name)):
                raise self.fail(f"{at}.name", f"{name!r} is not a port name (a-z, 0-9, '-')")
            protocol = self.text(fields.get("protocol"), f"{at}.protocol", "TCP")
            if protocol not in _PROTOCOLS:
                raise self.fail(f"{at}.protocol", f"must be one of {', '.join(_PROTOCOLS)}")
            target_port = fields.get("targetPort")
            ports.append(
                ServicePort(
                    name=name,
                    port=self.port(fields.get("port"), f"{at}.port"),
                    protocol=protocol,
                    target_port=self.port(target_port, f"{at}.targetPort") if target_port else 0,
                )
            )
        return tuple(ports)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


# --- running ----------------------------------------------------------------------------------


class FileSource:
    """Serves the records of ``path`` and reloads them when the file changes."""

    name = NAME

    def __init__(
        self,
        path: str,
        poll_interval: float = POLL_INTERVAL,
        log: Any = None,
        loader: Callable[[str], RecordsFile] = load_records_file,
    ) -> None:
        self.path = path
        self.poll_interval = poll_interval
        self.log = log
        self.loader = loader

    def __eq__(self, other: object) -> bool:
        """Equal when built alike (same file, interval and loader): see ``RecordSource``."""
        return isinstance(other, FileSource) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        return (self.path, self.poll_interval, self.loader)

    async def run(self, sink: RecordSink) -> None:
        """Load the file (failing if it cannot be loaded), report synced, then follow changes."""
        import asyncio

        state = file_state(self.path)
        records = await asyncio.to_thread(self.loader, self.path)
        sink.replace(records.services, records.endpoints)
        sink.synced()
        while True:
            await asyncio.sleep(self.poll_interval)
            current = file_state(self.path)
            if current == state:
                continue
            state = current
            await self._reload(sink, current)

    async def _reload(self, sink: RecordSink, state: FileState) -> None:
        import asyncio

        if state is None:
            self._log("warning", "DNS records file is gone; keeping the previous records")
            return
        try:
            records = await asyncio.to_thread(self.loader, self.path)
        except RecordsFileError as error:
            self._log("error", "DNS records file not reloaded; keeping the previous records",
                      error=str(error))  # fmt: skip
            return
        sink.replace(records.services, records.endpoints)
        self._log("info", "DNS records reloaded",
                  services=len(records.services), endpoints=len(records.endpoints))  # fmt: skip

    def _log(self, level: str, event: str, **fields: Any) -> None:
        if self.log is None:
            from nodehost.log import get_logger

            self.log = get_logger("nodehost", component="dns", source=NAME)
        getattr(self.log, level)(event, file=self.path, **fields)

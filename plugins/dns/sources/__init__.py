"""Record sources: where the DNS server's services and endpoints come from.

A source is registered with the ``nodehost_dns_record_sources`` hook as a
:class:`nodehost.plugins.dns.hookspecs.DnsRecordSourceRecord`; its ``factory`` receives a
:class:`SourceContext` at plan time and returns an object following
:class:`RecordSource` (or ``None`` when the configuration gives it nothing to
serve).  Built in: ``file`` (:mod:`nodehost.plugins.dns.sources.file`) and
``kubernetes`` (:mod:`nodehost.plugins.dns.sources.kubernetes`: Services and
EndpointSlices listed and watched through the node's master kubeconfig).

A source writes only through the :class:`RecordSink` it is given, so the
server knows which answers each change touches.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.plugins.dns.records import Endpoints, Service
    from nodehost.plugins.dns.settings import DnsSettings


@frozen
class SourceContext:
    """What a source factory may read: the resolved NodeConfig and the DNS settings."""

    config: Any
    settings: DnsSettings


class RecordSink(Protocol):
    """Where a running source puts what it knows (see ``records.SourceSink``)."""

    def replace(self, services: Iterable[Service], endpoints: Iterable[Endpoints]) -> Any:
        """Set the source's complete state; what it had and no longer has is removed."""

    def upsert_service(self, service: Service) -> Any:
        """Add or change one service (a watch event)."""

    def delete_service(self, namespace: str, name: str) -> Any:
        """Remove one service."""

    def upsert_endpoints(self, endpoints: Endpoints) -> Any:
        """Add or change the endpoints of one service."""

    def delete_endpoints(self, namespace: str, name: str) -> Any:
        """Remove the endpoints of one service."""

    def synced(self) -> None:
        """Report that the first complete state has been written (the server becomes ready
        when every source has said so)."""


@runtime_checkable
class RecordSource(Protocol):
    """A running supply of records.

    ``name`` is the record's name.  ``run(sink)`` runs in the host's event loop
    until cancelled: it writes the first complete state, calls
    ``sink.synced()``, then keeps the sink up to date.  It is called again
    (with a new sink) after the DNS component restarts.  Raising ends the DNS
    component (the restart policy applies), so a source retries transient
    failures itself and raises only when it cannot go on.

    Two sources built from the same settings should compare equal (``==``):
    a new node configuration that leaves the DNS settings and the sources
    equal leaves the DNS server running.  A source without ``__eq__``
    compares by identity, and the server restarts on every new configuration.
    """

    name: str

    async def run(self, sink: RecordSink) -> None: ...

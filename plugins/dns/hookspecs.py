"""The ``dns`` plugin's own hook: record sources for the node DNS server.

Added to the plugin manager through ``nodehost_addhooks`` when the ``dns``
plugin is registered, so the core knows nothing about DNS.  A plugin that
provides a record source implements::

    from nodehost import hookimpl
    from nodehost.plugins.dns.hookspecs import DnsRecordSourceRecord

    @hookimpl
    def nodehost_dns_record_sources():
        return [DnsRecordSourceRecord("etcd", "Records from etcd.", make_etcd_source)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from nodehost.frozen import frozen
from nodehost.pluginhost.markers import hookspec
from nodehost.pluginhost.records import check_name


@frozen
class DnsRecordSourceRecord:
    """One source of cluster DNS records, returned by ``nodehost_dns_record_sources``."""

    #: unique lower-case name (``file``, ``kubernetes``), used in the DNS component's
    #: ``recordSources`` list and in its log lines.
    name: str
    #: one line for listings.
    summary: str
    #: called once per plan as ``factory(context)`` with the DNS component's source context (the
    #: resolved NodeConfig and the DNS settings); returns the source object, or ``None`` when
    #: this configuration gives the source nothing to serve (the file source without a records
    #: file).  It must not start anything: the source runs later, in the host's event loop (see
    #: :mod:`nodehost.plugins.dns.sources` for the protocol).
    factory: Callable[[Any], Any]

    def __post_init__(self) -> None:
        check_name("DNS record source", self.name)


@hookspec
def nodehost_dns_record_sources() -> Sequence[DnsRecordSourceRecord]:
    """Announce sources of cluster DNS records (services and endpoints) for the DNS server.

    **When**: once each time the ``dns`` component plans (``start``, ``start
    --dry-run``), and only when the DNS server is active (``dnsBindAddress`` set).

    **Arguments**: none.

    **Returns**: a sequence of :class:`DnsRecordSourceRecord` (possibly empty).
    The ``dns`` component calls each record's ``factory`` and runs every source
    that it returns (or those that its ``recordSources`` setting names); two
    records with the same name are an error naming both plugins.

    **Kind**: broadcast; results are flattened in call order.

    **Errors**: an exception marks a third-party plugin failed and its sources
    unknown; naming one of them in ``recordSources`` is then an error.
    """

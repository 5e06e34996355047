"""The ``dns`` component: the node's cluster DNS server, in nodehost's event loop.

Origin ran its DNS server only when the ``dns`` component was enabled *and*
``dnsBindAddress`` was set (:ref:`origin-dns`); without the address the component
is inactive.  The server answers the cluster's names from its record sources
(:mod:`nodehost.plugins.dns.records` lists the names), forwards everything else
to the upstream resolvers (:mod:`nodehost.plugins.dns.settings` says which) and
is ready once its UDP and TCP sockets are bound and every record source has
delivered its first complete state.

Record sources come from the ``nodehost_dns_record_sources`` hook; this plugin
provides ``file`` (:mod:`nodehost.plugins.dns.sources.file`) and ``kubernetes``
(:mod:`nodehost.plugins.dns.sources.kubernetes`).  The server
itself (and dnspython) is imported only when the task starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nodehost import ComponentRecord, Problem, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, PlanContext, ReportedProbe, TaskContext, TaskSpec
from nodehost.config.sections import idle_section_problems
from nodehost.errors import InvalidSetting, RuntimeFailure
from nodehost.frozen import frozen
from nodehost.plugins.dns import hookspecs
from nodehost.plugins.dns.hookspecs import DnsRecordSourceRecord
from nodehost.plugins.dns.settings import (
    SCHEMA,
    SECTION,
    DnsSettings,
    SettingsError,
    bind_address,
    section_problems,
    settings_from_config,
)

if TYPE_CHECKING:  # pragma: no cover
    from pluggy import PluginManager

    from nodehost.check import Check, CheckContext
    from nodehost.config.schema import NodeConfig
    from nodehost.hookspecs import MetricsCollector
    from nodehost.plugins.dns.sources import RecordSource, SourceContext

STOP_GRACE = 5.0


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name="dns",
            summary="Node DNS server for cluster names (when dnsBindAddress is set).",
            component=NodeDns(),
            validation_scope=ValidationScope.IN_CLUSTER,
            config_sections=(SECTION,),
            config_schema={SECTION: SCHEMA},
        )
    ]


@hookimpl
def nodehost_validate_config(config: NodeConfig, selected: frozenset[str]) -> list[Problem]:
    """Every problem with the DNS settings, when the server would run.

    Origin's start-up check that ``dnsRecursiveResolvConf`` is readable, the
    ``dnsServerConfig`` section, and the records file (loaded and checked).
    """
    if "dns" not in selected or not config.dns_bind_address:
        runs_when = "the dns component is selected and dnsBindAddress is set"
        return idle_section_problems(config, SECTION, section_problems(config), runs_when)
    problems = section_problems(config)
    for check in (bind_address_check, settings_from_config):
        try:
            check(config)
        except SettingsError as error:
            if error.problem not in problems:
                problems.append(error.problem)
    if not problems:
        problems += _records_file_problems(settings_from_config(config))
    return [problem for problem in problems if not _core_owned(problem.path)]


#: Fields the core's NodeConfig rules already check (Origin's rules 5 and 7,
#: :ref:`origin-validation-dns`).
CORE_CHECKED = ("dnsBindAddress", "dnsNameservers")


def _core_owned(path: str) -> bool:
    return path.startswith(CORE_CHECKED)


@hookimpl
def nodehost_metrics_collectors() -> list[MetricsCollector]:
    """The DNS server's request, response, cache and upstream metrics (:mod:`.metrics`)."""
    from nodehost.plugins.dns.metrics import DnsCollector

    return [DnsCollector()]


@hookimpl
def nodehost_addhooks(pluginmanager: PluginManager) -> None:
    """Add this plugin's own hook, ``nodehost_dns_record_sources``."""
    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def nodehost_dns_record_sources() -> list[DnsRecordSourceRecord]:
    return [
        DnsRecordSourceRecord(
            name="file",
            summary="Services and endpoints from dnsServerConfig.recordsFile, reloaded on change.",
            factory=_file_source,
        ),
        DnsRecordSourceRecord(
            name="kubernetes",
            summary="Services and EndpointSlices watched through masterKubeConfig's API server.",
            factory=_kubernetes_source,
        ),
    ]


def bind_address_check(config: Any) -> None:
    bind_address(config.dns_bind_address)


def _file_source(context: SourceContext) -> RecordSource | None:
    if not context.settings.records_file:  # no source: its module is not even imported
        return None
    from nodehost.plugins.dns.sources.file import source_factory

    return source_factory(context)


def _kubernetes_source(context: SourceContext) -> RecordSource | None:
    from nodehost.plugins.dns.sources.kubernetes import source_factory

    return source_factory(context)


def _records_file_problems(settings: DnsSettings) -> list[Problem]:
    if not settings.records_file:
        return []
    from nodehost.plugins.dns.sources.file import RecordsFileError, load_records_file

    try:
        load_records_file(settings.records_file)
    except RecordsFileError as error:
        return [Problem.invalid(f"{SECTION}.recordsFile", settings.records_file, str(error))]
    return []


class NodeDns:
    """Plans the DNS server: a task in the host's event loop (inactive without dnsBindAddress)."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        config = context.config
        if not config.dns_bind_address:
            return ComponentPlan(inactive_reason="dnsBindAddress is not set")
        try:
            settings = settings_from_config(config)
        except SettingsError as error:
            raise InvalidSetting(error.problem) from None
        sources = choose_sources(context, settings)
        task = DnsTask(settings, tuple(sources))
        return ComponentPlan(
            run=TaskSpec(
                run=task,
                readiness=ReportedProbe(),
                stop_grace=STOP_GRACE,
                description=f"DNS server on {settings.address} (UDP and TCP) for {settings.domain}",
            ),
            notes=task.notes(),
        )


def choose_sources(context: PlanContext, settings: DnsSettings) -> list[RecordSource]:
    """The record sources to run: those ``recordSources`` names, else every one that applies."""
    from nodehost.plugins.dns.sources import SourceContext

    records = _source_records(context.hooks)
    source_context = SourceContext(context.config, settings)
    if settings.record_sources is None:
        built = [_build(record, source_context) for record in records.values()]
        return [source for source in built if source is not None]
    chosen = []
    for name in settings.record_sources:
        record = records.get(name)
        where = f"{SECTION}.recordSources"
        if record is None:
            known = ", ".join(sorted(records)) or "none"
            raise InvalidSetting(
                Problem.not_supported(where, name, sorted(records))
                if records
                else Problem.invalid(where, name, f"no plugin provides it (known: {known})")
            )
        source = _build(record, source_context)
        if source is None:
            detail = "this record source has nothing to serve with this configuration" + (
                f" (set {SECTION}.recordsFile)" if name == "file" else ""
            )
            raise InvalidSetting(Problem.invalid(where, name, detail))
        chosen.append(source)
    return chosen


def _source_records(hooks: Any) -> dict[str, DnsRecordSourceRecord]:
    provided = (
        [
            (item.record, item.source())
            for item in hooks.records("nodehost_dns_record_sources", DnsRecordSourceRecord)
        ]
        if hooks is not None
        else [(record, "plugin 'dns'") for record in nodehost_dns_record_sources()]
    )
    records: dict[str, DnsRecordSourceRecord] = {}
    origins: dict[str, str] = {}
    for record, origin in provided:
        if record.name in records:
            raise RuntimeFailure(
                f"component dns: DNS record source {record.name!r} is provided twice: by "
                f"{origins[record.name]} and by {origin}; disable one with --disable-plugin"
            )
        records[record.name] = record
        origins[record.name] = origin
    return records


def _build(record: DnsRecordSourceRecord, context: SourceContext) -> RecordSource | None:
    try:
        return record.factory(context)
    except Exception as error:
        raise RuntimeFailure(
            f"component dns: record source {record.name!r} could not be set up: {error}"
        ) from error


@frozen
class DnsTask:
    """The dns component's task: serve ``settings`` from ``sources`` until cancelled."""

    settings: DnsSettings
    sources: tuple[RecordSource, ...]

    async def __call__(self, context: TaskContext) -> None:
        from nodehost.plugins.dns.server import serve

        await serve(
            self.settings,
            self.sources,
            log=context.log,
            ready=lambda _server: context.ready(),
            status=context.status,
        )

    def notes(self) -> tuple[str, ...]:
        settings = self.settings
        upstreams = ", ".join(f"{host}:{port}" for host, port in settings.upstreams)
        names = ", ".join(source.name for source in self.sources)
        networks = ", ".join(str(network) for network in settings.reverse_networks)
        return (
            f"cluster domain: {settings.domain}",
            f"record sources: {names or 'none (cluster names are NXDOMAIN)'}",
            f"forwards to: {upstreams or 'nothing (no upstream nameservers; REFUSED)'}",
            f"answers the reverse zones of: {networks or 'no network (PTR of known IPs only)'}",
        )


@hookimpl
def nodehost_checks(context: CheckContext) -> list[Check]:
    """The DNS server's port check (:mod:`nodehost.plugins.dns.checks`), if it is selected
    and active (its module is not loaded to answer "none")."""
    if context.planned("dns") is None:
        return []
    from nodehost.plugins.dns.checks import dns_checks

    return dns_checks(context)

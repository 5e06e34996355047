"""``/metrics``: the host's status as Prometheus metrics, with prometheus_client.

One registry per health server holds:

* :class:`StatusCollector` -- read from the live status document on every scrape:
  ``nodehost_ready``, ``nodehost_uptime_seconds``, ``nodehost_build_info``,
  per component ``nodehost_component_{up,ready,restarts_total,last_exit_code,
  start_latency_seconds,crash_looping}``, the certificates components report
  (``nodehost_certificate_{expiry_timestamp,remaining}_seconds``) and the
  configuration (``nodehost_config_generation``, ``nodehost_config_last_apply_*``,
  ``nodehost_config_applies_total``);
* prometheus_client's process and platform collectors (``process_*``, ``python_info``);
* every plugin's collectors (``nodehost_metrics_collectors``), each isolated: one
  that raises is logged once and left out of that scrape, never the whole page.

prometheus_client renders values exactly (``1234567``, not ``1.23457e+06``).
Imported only when the health server starts.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

StatusDocument = dict[str, Any]

_COMPONENT_GAUGES = (
    ("nodehost_component_up", "1 if the component's process or task is running."),
    ("nodehost_component_ready", "1 if the component passed its readiness probe."),
    (
        "nodehost_component_last_exit_code",
        "Exit code of the last unrequested exit (negative: signal; absent: none yet).",
    ),
    ("nodehost_component_start_latency_seconds", "Seconds from the latest start to readiness."),
    ("nodehost_component_crash_looping", "1 while the component is crash looping."),
)

_CERTIFICATE_GAUGES = (
    (
        "nodehost_certificate_expiry_timestamp_seconds",
        "not_after_timestamp",
        "Unix time at which a certificate a component reports expires.",
    ),
    (
        "nodehost_certificate_remaining_seconds",
        "remaining_seconds",
        "Seconds until a certificate a component reports expires (negative: expired).",
    ),
)


class StatusCollector:
    """Metrics of the host and its components, from ``document()`` at scrape time."""

    def __init__(self, document: Callable[[], StatusDocument]) -> None:
        self.document = document

    def collect(self) -> Iterator[Metric]:
        document = self.document()
        yield GaugeMetricFamily(
            "nodehost_ready", "1 if every component is ready.", value=int(bool(document["ready"]))
        )
        yield GaugeMetricFamily(
            "nodehost_uptime_seconds",
            "Seconds since the host started.",
            value=document["uptime_seconds"],
        )
        yield build_info(document.get("version", ""))
        yield from component_metrics(document["components"])
        yield from certificate_metrics(document["components"])
        yield from config_metrics(document.get("configuration"))


def build_info(version: str) -> Metric:
    """``nodehost_build_info{version, python_version} 1`` (as CoreDNS's ``coredns_build_info``)."""
    family = GaugeMetricFamily(
        "nodehost_build_info",
        "A metric with a constant 1 labelled by nodehost's version and Python's.",
        labels=["version", "python_version"],
    )
    family.add_metric([version, sys.version.split()[0]], 1)
    return family


def _component_values(component: Mapping[str, Any]) -> dict[str, float | None]:
    last_exit = component.get("last_exit")
    return {
        "nodehost_component_up": float(bool(component["up"])),
        "nodehost_component_ready": float(bool(component["ready"])),
        "nodehost_component_last_exit_code": (
            float(last_exit["code"]) if last_exit and last_exit["code"] is not None else None
        ),
        "nodehost_component_start_latency_seconds": component["start_latency_seconds"],
        "nodehost_component_crash_looping": float(bool(component["crash_looping"])),
    }


def component_metrics(components: Iterable[Mapping[str, Any]]) -> Iterator[Metric]:
    """One gauge family per per-component value, and the restart counter."""
    components = list(components)
    values = [(c["name"], _component_values(c)) for c in components]
    for name, help_text in _COMPONENT_GAUGES:
        family = GaugeMetricFamily(name, help_text, labels=["component"])
        for component, by_name in values:
            value = by_name[name]
            if value is not None:
                family.add_metric([component], value)
        yield family
    restarts = CounterMetricFamily(
        "nodehost_component_restarts", "Restarts by the restart policy.", labels=["component"]
    )
    for component in components:
        restarts.add_metric([component["name"]], float(component["restarts"]))
    yield restarts


def certificate_metrics(components: Iterable[Mapping[str, Any]]) -> Iterator[Metric]:
    """Gauges for the certificates components report in ``details["certificates"]``.

    Each entry is a mapping with ``name`` and, when the certificate exists,
    ``not_after_timestamp`` and ``remaining_seconds``; labels are the
    component and the certificate name.
    """
    entries = [
        (component["name"], certificate)
        for component in components
        for certificate in (component.get("details") or {}).get("certificates") or []
        if isinstance(certificate, Mapping)
    ]
    if not entries:
        return
    for name, key, help_text in _CERTIFICATE_GAUGES:
        family = GaugeMetricFamily(name, help_text, labels=["component", "certificate"])
        for component, certificate in entries:
            value = certificate.get(key)
            if isinstance(value, int | float):
                family.add_metric([component, str(certificate.get("name", ""))], float(value))
        yield family


def config_metrics(configuration: Mapping[str, Any] | None) -> Iterator[Metric]:
    """The running configuration's generation and how its applies ended.

    ``nodehost_config_last_apply_result{result}`` is 1 for the last apply's
    result and 0 for the others (absent before the first apply, as is the
    timestamp); ``nodehost_config_applies_total{result}`` counts them.
    """
    if not configuration:
        return
    yield GaugeMetricFamily(
        "nodehost_config_generation",
        "Generation of the running configuration (1 at start, +1 per apply or rollback).",
        value=configuration["generation"],
    )
    applies = configuration.get("applies") or {}
    last = configuration.get("last_apply")
    if last is not None:
        yield GaugeMetricFamily(
            "nodehost_config_last_apply_timestamp_seconds",
            "Unix time at which the last configuration apply ended.",
            value=last["at"],
        )
        result = GaugeMetricFamily(
            "nodehost_config_last_apply_result",
            "1 for how the last configuration apply ended (applied, rejected, rolled_back, "
            "rollback_failed).",
            labels=["result"],
        )
        for name in applies:
            result.add_metric([name], float(name == last["result"].replace(" ", "_")))
        yield result
    total = CounterMetricFamily(
        "nodehost_config_applies", "Configuration applies by result.", labels=["result"]
    )
    for name, count in applies.items():
        total.add_metric([name], float(count))
    yield total


class IsolatedCollector:
    """A plugin's collector whose failure costs only its own metrics (logged once)."""

    def __init__(self, plugin: str, collector: Any, log: Any) -> None:
        self.plugin = plugin
        self.collector = collector
        self.log = log
        self.failed = False

    def collect(self) -> Iterator[Metric]:
        try:
            metrics = list(self.collector.collect())
        except Exception as error:
            if not self.failed:
                self.failed = True
                self.log.warning(
                    "plugin metrics failed; left out", plugin=self.plugin, error=repr(error)
                )
            return iter(())
        return iter(metrics)


def metrics_registry(
    document: Callable[[], StatusDocument],
    plugin_collectors: Iterable[tuple[str, Any]],
    log: Any,
) -> CollectorRegistry:
    """The registry ``/metrics`` renders (see the module docstring)."""
    registry = CollectorRegistry(auto_describe=False)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    registry.register(StatusCollector(document))
    for plugin, collector in plugin_collectors:
        registry.register(IsolatedCollector(plugin, collector, log))
    return registry

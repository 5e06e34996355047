"""The health server's endpoints, all rendered from one status document.

``/healthz``  200 ``ok`` while the host's event loop answers;
``/readyz``   200 when every component is ready, else 503; ``?verbose`` lists
              each component as ``[+]name ready`` or ``[-]name not ready: reason``;
``/metrics``  Prometheus text format 0.0.4 (see :func:`render_metrics`);
``/status``   the status document as JSON (what ``nodehost status`` reads).

The status document is ``{"ready", "state", "pid", "version", "uptime_seconds",
"config", "state_dir", "components": [component status, ...]}``; a component
status is :meth:`nodehost.runtime.supervisor.ComponentSupervisor.status`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from nodehost.runtime.server import Response, Route, text

StatusDocument = dict[str, Any]

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def health_routes(document: Callable[[], StatusDocument]) -> dict[str, Route]:
    """The routes of the health server, reading the live ``document()`` per request."""
    return {
        "/healthz": lambda _query: text(200, "ok"),
        "/livez": lambda _query: text(200, "ok"),
        "/readyz": lambda query: readyz(document(), "verbose" in query),
        "/metrics": lambda _query: Response(
            200, render_metrics(document()).encode(), METRICS_CONTENT_TYPE
        ),
        "/status": lambda _query: Response(
            200, (json.dumps(document(), indent=2) + "\n").encode(), "application/json"
        ),
    }


def readyz(document: StatusDocument, verbose: bool) -> Response:
    """200 ``ok`` if the node is ready, else 503; ``verbose`` lists each component."""
    ready = bool(document["ready"])
    status = 200 if ready else 503
    if not verbose:
        return text(status, "ok" if ready else "not ready")
    lines = []
    for component in document["components"]:
        if component["ready"]:
            lines.append(f"[+]{component['name']} ready")
        else:
            lines.append(f"[-]{component['name']} not ready: {component['reason']}")
    lines.append("readyz check passed" if ready else "readyz check failed")
    return text(status, "\n".join(lines) + "\n")


_METRICS = (
    ("nodehost_component_up", "gauge", "1 if the component's process or task is running."),
    ("nodehost_component_ready", "gauge", "1 if the component passed its readiness probe."),
    ("nodehost_component_restarts_total", "counter", "Restarts by the restart policy."),
    (
        "nodehost_component_last_exit_code",
        "gauge",
        "Exit code of the last unrequested exit (negative: signal; absent: none yet).",
    ),
    (
        "nodehost_component_start_latency_seconds",
        "gauge",
        "Seconds from the latest start to readiness.",
    ),
    ("nodehost_component_crash_looping", "gauge", "1 while the component is crash looping."),
)


def _component_values(component: Mapping[str, Any]) -> dict[str, float | None]:
    last_exit = component.get("last_exit")
    return {
        "nodehost_component_up": float(bool(component["up"])),
        "nodehost_component_ready": float(bool(component["ready"])),
        "nodehost_component_restarts_total": float(component["restarts"]),
        "nodehost_component_last_exit_code": (
            float(last_exit["code"]) if last_exit and last_exit["code"] is not None else None
        ),
        "nodehost_component_start_latency_seconds": component["start_latency_seconds"],
        "nodehost_component_crash_looping": float(bool(component["crash_looping"])),
    }


def render_metrics(document: StatusDocument) -> str:
    """Prometheus text format: per-component gauges/counters plus node-level ones."""
    out = [
        "# HELP nodehost_ready 1 if every component is ready.",
        "# TYPE nodehost_ready gauge",
        f"nodehost_ready {int(bool(document['ready']))}",
        "# HELP nodehost_uptime_seconds Seconds since the host started.",
        "# TYPE nodehost_uptime_seconds gauge",
        f"nodehost_uptime_seconds {document['uptime_seconds']}",
    ]
    values = [(c["name"], _component_values(c)) for c in document["components"]]
    for metric, kind, help_text in _METRICS:
        out += [f"# HELP {metric} {help_text}", f"# TYPE {metric} {kind}"]
        for name, by_metric in values:
            value = by_metric[metric]
            if value is not None:
                out.append(f'{metric}{{component="{_label(name)}"}} {value:g}')
    out += certificate_metrics(document)
    return "\n".join(out) + "\n"


_CERTIFICATE_METRICS = (
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


def certificate_metrics(document: StatusDocument) -> list[str]:
    """Gauges for the certificates components report in ``details["certificates"]``.

    Each entry is a mapping with ``name`` and, when the certificate exists,
    ``not_after_timestamp`` and ``remaining_seconds``; labels are the
    component and the certificate name.
    """
    entries = [
        (component["name"], certificate)
        for component in document["components"]
        for certificate in (component.get("details") or {}).get("certificates") or []
        if isinstance(certificate, Mapping)
    ]
    if not entries:
        return []
    out: list[str] = []
    for metric, key, help_text in _CERTIFICATE_METRICS:
        out += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge"]
        for component, certificate in entries:
            value = certificate.get(key)
            if isinstance(value, int | float):
                labels = (
                    f'component="{_label(component)}",'
                    f'certificate="{_label(str(certificate.get("name", "")))}"'
                )
                out.append(f"{metric}{{{labels}}} {float(value):.3f}")
    return out


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

"""The health server's endpoints, all rendered from one status document.

``/healthz``            200 ``ok`` while the host's event loop answers;
``/livez``              200 while no component failed or is crash looping, else 500;
                        ``?verbose`` lists ``[+]ping ok`` and each component;
``/readyz``             200 when every component is ready, else 503; ``?verbose``
                        lists each component as ``[+]name ready`` or
                        ``[-]name not ready: reason``; ``?exclude=NAME`` (repeatable,
                        or comma separated) leaves components out, as kube-apiserver does
                        (a name that matches none is a ``warn:`` line of the verbose list);
``/readyz/<component>`` and ``/livez/<component>``: that component alone;
``/metrics``            Prometheus text format 0.0.4 (:mod:`nodehost.daemon.metrics`);
``/status``             the status document as JSON (what ``nodehost status`` reads);
``/debug/logs/<component>`` the component's last output lines (both streams, all runs,
                        at most :data:`nodehost.daemon.output.HISTORY_LINES`), as text.

The status document is ``{"ready", "state", "pid", "version", "uptime_seconds",
"config", "state_dir", "agents", "components": [component status, ...]}``; a
component status is :meth:`nodehost.daemon.supervisor.ComponentSupervisor.status`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nodehost.daemon.server import Response, Route, text

StatusDocument = dict[str, Any]

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: States in which the host answers for nobody's readiness.
_NOT_SERVING = ("stopping", "stopped", "failed")


def health_routes(
    document: Callable[[], StatusDocument],
    plugin_collectors: Iterable[tuple[str, Any]] = (),
    log: Any = None,
    recent_lines: Callable[[str], list[str] | None] | None = None,
) -> dict[str, Route]:
    """The routes of the health server, reading the live ``document()`` per request.

    ``recent_lines(name)`` gives a component's recent output (``None``: no such
    component now) for ``/debug/logs/<name>``.
    """
    from nodehost.daemon.metrics import metrics_registry

    registry = metrics_registry(document, plugin_collectors, log)
    routes: dict[str, Route] = {
        "/healthz": lambda _query: text(200, "ok"),
        "/livez": lambda query: livez(document(), "verbose" in query),
        "/readyz": lambda query: readyz(document(), "verbose" in query, _names(query)),
        "/metrics": lambda _query: _render(registry),
        "/status": lambda _query: Response(
            200, (json.dumps(document(), indent=2) + "\n").encode(), "application/json"
        ),
    }
    for component in document()["components"]:
        routes.update(_component_routes(document, component["name"]))
        if recent_lines is not None:
            routes[f"/debug/logs/{component['name']}"] = _logs_route(
                recent_lines, component["name"]
            )
    return routes


def _logs_route(recent_lines: Callable[[str], list[str] | None], name: str) -> Route:
    def answer(_query: Mapping[str, str]) -> Response:
        lines = recent_lines(name)
        if lines is None:
            return text(404, f"no component {name} now")
        return text(200, "".join(f"{line}\n" for line in lines))

    return answer


def _component_routes(document: Callable[[], StatusDocument], name: str) -> dict[str, Route]:
    def only(check: Callable[..., Response]) -> Route:
        return lambda query: check(_just(document(), name), "verbose" in query)

    return {f"/readyz/{name}": only(readyz), f"/livez/{name}": only(livez)}


def _just(document: StatusDocument, name: str) -> StatusDocument:
    """``document`` narrowed to component ``name``, ready by that component alone."""
    [component] = [c for c in document["components"] if c["name"] == name]
    ready = bool(component["ready"]) and document.get("state") not in _NOT_SERVING
    return {**document, "ready": ready, "components": [component]}


def _names(query: Mapping[str, str]) -> frozenset[str]:
    return frozenset(name for name in query.get("exclude", "").split(",") if name)


def _render(registry: Any) -> Response:
    from prometheus_client import generate_latest

    return Response(200, generate_latest(registry), METRICS_CONTENT_TYPE)


def readyz(
    document: StatusDocument, verbose: bool, exclude: frozenset[str] = frozenset()
) -> Response:
    """200 ``ok`` if the node is ready, else 503; ``verbose`` lists each component.

    Components named in ``exclude`` do not count (listed as ``excluded``); a name
    that matches no component is warned about in the verbose list, as kube-apiserver
    does (``warn: some health checks cannot be excluded: no matches for "x"``).
    """
    components = document["components"]
    if exclude:
        ready = document.get("state") not in _NOT_SERVING and all(
            c["ready"] for c in components if c["name"] not in exclude
        )
    else:
        ready = bool(document["ready"])
    status = 200 if ready else 503
    if not verbose:
        return text(status, "ok" if ready else "not ready")
    lines = []
    for component in components:
        if component["name"] in exclude:
            lines.append(f"[+]{component['name']} excluded: ok")
        elif component["ready"]:
            lines.append(f"[+]{component['name']} ready")
        else:
            lines.append(f"[-]{component['name']} not ready: {component['reason']}")
    unmatched = sorted(exclude - {component["name"] for component in components})
    if unmatched:
        quoted = ", ".join(f'"{name}"' for name in unmatched)
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
    lines.append("readyz check passed" if ready else "readyz check failed")
    return text(status, "\n".join(lines) + "\n")


def livez(document: StatusDocument, verbose: bool) -> Response:
    """200 ``ok`` while no component failed or crash loops (the watchdog's rule), else 500."""
    lines = ["[+]ping ok"]
    live = True
    for component in document["components"]:
        if component.get("state") == "failed" or component["crash_looping"]:
            live = False
            problem = "failed" if component.get("state") == "failed" else "crash looping"
            lines.append(f"[-]{component['name']} {problem}: {component['reason']}")
        else:
            lines.append(f"[+]{component['name']} ok")
    status = 200 if live else 500
    if not verbose:
        return text(status, "ok" if live else "not live")
    lines.append("livez check passed" if live else "livez check failed")
    return text(status, "\n".join(lines) + "\n")


def render_metrics(document: StatusDocument) -> str:
    """The ``nodehost_*`` metrics of ``document`` in the text format (no process metrics)."""
    from prometheus_client import CollectorRegistry, generate_latest

    from nodehost.daemon.metrics import StatusCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatusCollector(lambda: document))
    return generate_latest(registry).decode()

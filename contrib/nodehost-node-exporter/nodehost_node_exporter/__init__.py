"""nodehost-node-exporter: the ``node-exporter`` component -- Prometheus' node exporter.

Registered through the ``nodehost`` entry-point group as plugin
``node-exporter``.  The component runs the node exporter (Debian's
``prometheus-node-exporter``, or upstream's ``node_exporter``) as a
supervised child of nodehost: it starts after ``proxy`` when that is
selected, is ready when ``GET <listenAddress><telemetryPath>`` answers, and
shares every component's restart policy and stop protocol.  It is off by
default: select it (``--components=...,node-exporter``).

Settings, in the ``nodeExporter`` section::

    nodeExporter:
      listenAddress: 127.0.0.1:9100     # HOST:PORT; loopback unless you say otherwise
      telemetryPath: /metrics
      collectors: [cpu, meminfo, loadavg]   # only these (default: the exporter's defaults)
      textfileDirectory: /var/lib/prometheus/node-exporter   # *.prom files to export

With ``nodehost start --standins=missing`` (or ``always``) a machine without
the exporter runs :mod:`nodehost_node_exporter.standin` instead, which takes
the same flags and serves a small ``/metrics``.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from typing import Any

from nodehost import ComponentRecord, Problem, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, HttpProbe, PlanContext, ProcessSpec
from nodehost.config.sections import SectionReader, idle_section_problems, section_schema

__version__ = "0.1.0"

NAME = "node-exporter"
SECTION = "nodeExporter"
#: The program, by the names Debian and upstream install it under (first found wins).
PROGRAMS = ("prometheus-node-exporter", "node_exporter")
STANDIN = "nodehost-standin-node-exporter"
DEFAULT_LISTEN = "127.0.0.1:9100"
_COLLECTOR = re.compile(r"^[a-z][a-z0-9_]*$")

SCHEMA = section_schema(
    "Prometheus' node exporter, run by nodehost (nodehost-node-exporter).",
    {
        "listenAddress": {
            "type": "string",
            "default": DEFAULT_LISTEN,
            "description": "HOST:PORT the exporter listens on (an IP address; empty host: all).",
        },
        "telemetryPath": {
            "type": "string",
            "default": "/metrics",
            "pattern": "^/.+",
            "description": "The path metrics are served on.",
        },
        "collectors": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
            "description": "Run only these collectors (default: the exporter's default set).",
        },
        "textfileDirectory": {
            "type": "string",
            "description": "Directory of *.prom files the textfile collector exports (absolute).",
        },
    },
)


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name=NAME,
            summary="Prometheus' node exporter: this host's metrics on /metrics.",
            component=NodeExporter(),
            default=False,
            after=("proxy",),
            validation_scope=ValidationScope.NETWORK,
            config_sections=(SECTION,),
            config_schema={SECTION: SCHEMA},
            standins=dict.fromkeys(PROGRAMS, STANDIN),
        )
    ]


@hookimpl
def nodehost_validate_config(config: Any, selected: frozenset[str]) -> list[Problem]:
    """Check the ``nodeExporter`` section when the component is selected or it is set."""
    if NAME not in selected:
        runs_when = f"the {NAME} component is selected"
        return idle_section_problems(config, SECTION, read_settings(config)[1], runs_when)
    return read_settings(config)[1]


@dataclass(frozen=True)
class ExporterSettings:
    """The ``nodeExporter`` section, read (defaults applied)."""

    host: str
    port: int
    telemetry_path: str = "/metrics"
    collectors: tuple[str, ...] | None = None
    textfile_directory: str | None = None

    @property
    def listen(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def probe_url(self) -> str:
        """Where readiness is asked: the listen address (loopback for "every address")."""
        host = self.host if self.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}{self.telemetry_path}"


def read_settings(config: Any) -> tuple[ExporterSettings, list[Problem]]:
    """The section's values and every problem in it."""
    reader = SectionReader(SECTION, config.extra.get(SECTION))
    host, port = reader.host_port("listenAddress", DEFAULT_LISTEN)
    path = reader.text("telemetryPath", "/metrics")
    if not path.startswith("/") or path == "/":
        reader.invalid("telemetryPath", path, "must be a path below / such as /metrics")
        path = "/metrics"
    collectors = reader.names("collectors", "collector names")
    bad = [name for name in collectors or () if not _COLLECTOR.match(name)]
    if bad:
        reader.invalid("collectors", bad[0], "a collector name is lower-case letters, digits, _")
        collectors = None
    textfile = reader.absolute_path("textfileDirectory")
    if textfile and collectors is not None and "textfile" not in collectors:
        reader.invalid("textfileDirectory", textfile, "needs the textfile collector in collectors")
    settings = ExporterSettings(
        host=host,
        port=port,
        telemetry_path=path,
        collectors=collectors,
        textfile_directory=textfile,
    )
    reader.unknown_keys()
    return settings, reader.problems


class NodeExporter:
    """Runs the exporter with flags from the section; ready when its metrics page answers."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        settings, _ = read_settings(context.config)
        return ComponentPlan(
            run=ProcessSpec(
                argv=(program(), *arguments(settings)),
                readiness=HttpProbe(url=settings.probe_url),
                stop_grace=10.0,
            ),
            notes=(f"metrics: {settings.probe_url}",),
        )


def program() -> str:
    """The exporter's name as installed here (Debian's first), else Debian's for the error."""
    return next((name for name in PROGRAMS if shutil.which(name)), PROGRAMS[0])


def arguments(settings: ExporterSettings) -> tuple[str, ...]:
    """The exporter's command-line flags for ``settings``."""
    args = [
        f"--web.listen-address={settings.listen}",
        f"--web.telemetry-path={settings.telemetry_path}",
    ]
    if settings.collectors is not None:
        args.append("--collector.disable-defaults")
        args += [f"--collector.{name}" for name in settings.collectors]
    if settings.textfile_directory:
        args.append(f"--collector.textfile.directory={settings.textfile_directory}")
    return tuple(args)

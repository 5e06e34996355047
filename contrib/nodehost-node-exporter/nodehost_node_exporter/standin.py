"""A stand-in for Prometheus' node exporter: the same flags, a small real ``/metrics``.

``nodehost-standin-node-exporter`` replaces ``prometheus-node-exporter`` /
``node_exporter`` under ``nodehost start --standins``.  It accepts the node
exporter's flags that nodehost and most setups use and rejects any other
the way the exporter does (``error: unknown long flag '--x'``, exit 1):

``--web.listen-address=HOST:PORT``  where to serve (one address; default ``:9100``)
``--web.telemetry-path=PATH``       the metrics path (default ``/metrics``)
``--collector.disable-defaults``    start from no collector
``--collector.NAME`` / ``--no-collector.NAME``  turn one on / off
``--collector.textfile.directory=DIR``  ``*.prom`` files the textfile collector adds
``--web.disable-exporter-metrics``, ``--log.level=L``, ``--log.format=F``, ``--version``

Metrics come from this host: ``loadavg`` (``node_load1/5/15`` from
``/proc/loadavg``), ``meminfo`` (``node_memory_*_bytes``), ``time``
(``node_time_seconds``), ``uname`` (``node_uname_info``) and ``textfile``
(the files' samples); other collector names are accepted and reported in
``node_scrape_collector_success`` only.  The generic stand-in behaviours
(``NODEHOST_STANDIN_*``: crash, slow ready, hang on stop; see
:mod:`nodehost.testing.standin`) apply, under the program name
``node-exporter``.
"""

from __future__ import annotations

import glob
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn

PROGRAM = "node-exporter"
VERSION = "1.5.0-nodehost-standin"

#: The node exporter 1.5.0 collectors enabled by default (``--collector.disable-defaults`` clears).
DEFAULT_COLLECTORS = frozenset(
    [
        "arp",
        "bcache",
        "bonding",
        "btrfs",
        "conntrack",
        "cpu",
        "cpufreq",
        "diskstats",
        "dmi",
        "edac",
        "entropy",
        "fibrechannel",
        "filefd",
        "filesystem",
        "hwmon",
        "infiniband",
        "ipvs",
        "loadavg",
        "mdadm",
        "meminfo",
        "netclass",
        "netdev",
        "netstat",
        "nfs",
        "nfsd",
        "nvme",
        "os",
        "powersupplyclass",
        "pressure",
        "rapl",
        "schedstat",
        "selinux",
        "sockstat",
        "softnet",
        "stat",
        "tapestats",
        "textfile",
        "thermal_zone",
        "time",
        "timex",
        "udp_queues",
        "uname",
        "vmstat",
        "xfs",
        "zfs",
    ]
)
#: Collectors off by default that can be turned on.
OTHER_COLLECTORS = frozenset(
    [
        "buddyinfo",
        "cgroups",
        "drbd",
        "drm",
        "ethtool",
        "interrupts",
        "ksmd",
        "lnstat",
        "logind",
        "meminfo_numa",
        "mountstats",
        "network_route",
        "ntp",
        "perf",
        "processes",
        "qdisc",
        "runit",
        "slabinfo",
        "supervisord",
        "sysctl",
        "systemd",
        "tcpstat",
        "wifi",
        "zoneinfo",
    ]
)
KNOWN_COLLECTORS = DEFAULT_COLLECTORS | OTHER_COLLECTORS
_VALUE_FLAGS = (
    "--web.listen-address",
    "--web.telemetry-path",
    "--collector.textfile.directory",
    "--log.level",
    "--log.format",
    "--path.procfs",
    "--path.sysfs",
    "--path.rootfs",
)


class UsageFailure(ValueError):
    """A flag the node exporter would refuse; the message is its own wording."""


@dataclass
class Flags:
    """The parsed command line."""

    listen: str = ":9100"
    path: str = "/metrics"
    collectors: set[str] = field(default_factory=lambda: set(DEFAULT_COLLECTORS))
    textfile_directory: str = "/var/lib/prometheus/node-exporter"
    procfs: str = "/proc"
    exporter_metrics: bool = True
    version: bool = False


def parse(argv: Sequence[str]) -> Flags:
    """The node exporter's flags (kingpin style: ``--flag=value`` or ``--flag value``)."""
    flags = Flags()
    enabled: list[tuple[str, bool]] = []
    listens = 0
    items = list(argv)
    while items:
        arg = items.pop(0)
        name, has_value, value = arg.partition("=")
        if name in _VALUE_FLAGS:
            if not has_value:
                if not items:
                    raise UsageFailure(f"expected argument for flag '{name}'")
                value = items.pop(0)
            listens += name == "--web.listen-address"
            _set_value(flags, name, value)
        elif arg == "--collector.disable-defaults":
            flags.collectors = set()
        elif arg == "--web.disable-exporter-metrics":
            flags.exporter_metrics = False
        elif arg == "--version":
            flags.version = True
        elif arg.startswith(("--collector.", "--no-collector.")) and not has_value:
            collector = arg.split(".", 1)[1]
            if collector not in KNOWN_COLLECTORS:
                raise UsageFailure(f"unknown long flag '{arg}'")
            enabled.append((collector, arg.startswith("--collector.")))
        else:
            raise UsageFailure(f"unknown long flag '{name}'")
    if listens > 1:
        raise UsageFailure("the stand-in serves one --web.listen-address")
    for collector, on in enabled:
        (flags.collectors.add if on else flags.collectors.discard)(collector)
    return flags


def _set_value(flags: Flags, name: str, value: str) -> None:
    if name == "--web.listen-address":
        flags.listen = value
    elif name == "--web.telemetry-path":
        flags.path = value
    elif name == "--collector.textfile.directory":
        flags.textfile_directory = value
    elif name == "--path.procfs":
        flags.procfs = value


def render_metrics(flags: Flags) -> bytes:
    """The metrics page: the enabled collectors' samples, then each collector's success."""
    lines: list[str] = []
    success = {}
    for collector in sorted(flags.collectors):
        produce = _COLLECTORS.get(collector)
        try:
            lines += produce(flags) if produce else []
            success[collector] = 1
        except OSError:
            success[collector] = 0
    lines += ["# HELP node_scrape_collector_success Whether a collector succeeded.",
              "# TYPE node_scrape_collector_success gauge"]  # fmt: skip
    lines += [f'node_scrape_collector_success{{collector="{c}"}} {v}' for c, v in success.items()]
    if flags.exporter_metrics:
        lines += [
            "# HELP node_exporter_build_info A metric with a constant '1' value.",
            "# TYPE node_exporter_build_info gauge",
            f'node_exporter_build_info{{version="{VERSION}"}} 1',
        ]
    return ("\n".join(lines) + "\n").encode()


def _gauge(name: str, help_text: str, value: float | str, labels: str = "") -> list[str]:
    return [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name}{labels} {value}"]


def _loadavg(flags: Flags) -> list[str]:
    with open(os.path.join(flags.procfs, "loadavg")) as handle:
        one, five, fifteen = handle.read().split()[:3]
    return [
        *_gauge("node_load1", "1m load average.", one),
        *_gauge("node_load5", "5m load average.", five),
        *_gauge("node_load15", "15m load average.", fifteen),
    ]


def _meminfo(flags: Flags) -> list[str]:
    lines = []
    with open(os.path.join(flags.procfs, "meminfo")) as handle:
        for entry in handle:
            key, _, rest = entry.partition(":")
            parts = rest.split()
            if key in ("MemTotal", "MemFree", "MemAvailable") and parts:
                name = f"node_memory_{key}_bytes"
                lines += _gauge(
                    name, f"Memory information field {key}_bytes.", int(parts[0]) * 1024
                )
    return lines


def _time(flags: Flags) -> list[str]:
    return _gauge("node_time_seconds", "System time in seconds since epoch (1970).", time.time())


def _uname(flags: Flags) -> list[str]:
    info = os.uname()
    labels = f'{{nodename="{info.nodename}",release="{info.release}",sysname="{info.sysname}"}}'
    return _gauge("node_uname_info", "Labeled system information as provided by uname.", 1, labels)


def _textfile(flags: Flags) -> list[str]:
    lines = []
    for path in sorted(glob.glob(os.path.join(flags.textfile_directory, "*.prom"))):
        with open(path) as handle:
            lines += [line.rstrip("\n") for line in handle if line.strip()]
    return lines + _gauge("node_textfile_scrape_error", "1 if there was an error reading.", 0)


_COLLECTORS = {
    "loadavg": _loadavg,
    "meminfo": _meminfo,
    "time": _time,
    "uname": _uname,
    "textfile": _textfile,
}


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """``nodehost-standin-node-exporter [flags]``: see the module docstring."""
    from nodehost.testing.standin import parse_address, run_standin

    program = os.path.basename(sys.argv[0]) or PROGRAM
    try:
        flags = parse(sys.argv[1:] if argv is None else argv)
        if flags.version:
            print(f"node_exporter, version {VERSION}")
            raise SystemExit(0)
        address = parse_address(flags.listen)
    except (UsageFailure, ValueError) as error:
        print(f"{program}: error: {error}, try --help", file=sys.stderr)
        raise SystemExit(1) from None
    run_standin(
        PROGRAM,
        address if flags.listen.rpartition(":")[0] else ("", address[1]),
        healthz_path=flags.path,
        content=lambda: render_metrics(flags),
        content_type="text/plain; version=0.0.4; charset=utf-8",
    )


if __name__ == "__main__":
    main()

"""Run the host on a plan described in JSON, without config or plugins: tests and benchmarks.

``python -m nodehost.testing.planhost PLAN.json [options]`` builds a
:class:`~nodehost.plan.Plan` of process components from ``PLAN.json`` and runs
it with :func:`nodehost.daemon.run_plan`, exactly as ``nodehost start`` would::

    {"state_dir": "/tmp/x", "components": [
      {"name": "a", "argv": ["sleep", "infinity"]},
      {"name": "b", "argv": ["..."], "after": ["a"], "env": {"K": "V"}, "cwd": null,
       "ready": {"http": "http://127.0.0.1:8080/healthz"},
       "stop_signal": "SIGTERM", "stop_grace": 10,
       "files": [{"path": "/tmp/x/b.conf", "content": "text", "mode": "0600"}]},
      {"name": "c", "inactive": "nothing to do"}]}

``ready`` is ``"started"`` (default), ``{"http": URL}``, ``{"tcp": "HOST:PORT"}``,
``{"unix": PATH}`` or ``{"file": PATH}``.  ``--hooks-log FILE`` appends one JSON
line per lifecycle hook call (``{"hook": ..., "name": ..., "time": ...}``).
A :class:`~nodehost.errors.NodehostError` is printed as one ``error:`` text and
exits with its code, as the ``nodehost`` CLI does; and as the console script
does, the heap is frozen on the way out (:func:`nodehost.entry.before_exit`),
so the interpreter's exit costs what ``nodehost start``'s does.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from nodehost.component import (
    ComponentPlan,
    FileProbe,
    FileSpec,
    HttpProbe,
    ProcessSpec,
    StartedProbe,
    TcpProbe,
    UnixProbe,
)
from nodehost.plan import Plan, PlannedComponent


def _probe(ready: Any) -> Any:
    if ready in (None, "started"):
        return StartedProbe()
    (kind, target), *_ = ready.items()
    if kind == "http":
        return HttpProbe(url=target, interval=0.2)
    if kind == "tcp":
        host, _, port = target.rpartition(":")
        return TcpProbe(host=host, port=int(port), interval=0.2)
    if kind == "unix":
        return UnixProbe(path=target, interval=0.2)
    if kind == "file":
        return FileProbe(path=target, interval=0.2)
    raise ValueError(f"unknown readiness {ready!r}")


def _component(entry: dict[str, Any]) -> PlannedComponent:
    files = tuple(
        FileSpec(f["path"], f["content"].encode(), int(f.get("mode", "0644"), 8))
        for f in entry.get("files", ())
    )
    if "inactive" in entry:
        plan = ComponentPlan(run=None, files=files, inactive_reason=entry["inactive"])
    else:
        plan = ComponentPlan(
            run=ProcessSpec(
                argv=tuple(entry["argv"]),
                env=dict(entry.get("env", {})),
                cwd=entry.get("cwd"),
                readiness=_probe(entry.get("ready")),
                stop_signal=signal.Signals[entry.get("stop_signal", "SIGTERM")],
                stop_grace=float(entry.get("stop_grace", 10.0)),
            ),
            files=files,
        )
    return PlannedComponent(
        name=entry["name"],
        summary=entry.get("summary", entry["name"]),
        plugin="planhost",
        after=tuple(entry.get("after", ())),
        plan=plan,
    )


def load_plan(path: str) -> Plan:
    """Read a JSON plan description (see the module docstring)."""
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    return Plan(
        components=tuple(_component(entry) for entry in document["components"]),
        state_dir=document["state_dir"],
        config_source=document.get("config_source", path),
    )


class HookRecorder:
    """Lifecycle hooks that append one JSON line per call to a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _record(self, hook: str, **fields: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"hook": hook, "time": time.monotonic(), **fields}) + "\n")

    def component_started(self, *, name: str, pid: int | None) -> None:
        self._record("component_started", name=name, pid=pid)

    def component_ready(self, *, name: str, seconds: float) -> None:
        self._record("component_ready", name=name, seconds=seconds)

    def component_exited(self, *, name: str, returncode: int | None, restarting: bool) -> None:
        self._record("component_exited", name=name, returncode=returncode, restarting=restarting)

    def component_stopped(self, *, name: str) -> None:
        self._record("component_stopped", name=name)

    def node_ready(
        self, *, seconds: float, status_address: str | None, keeps_running: bool = True
    ) -> None:
        self._record(
            "node_ready",
            seconds=seconds,
            status_address=status_address,
            keeps_running=keeps_running,
        )

    def metrics_collectors(self) -> list[tuple[str, Any]]:
        """None: a recorder adds no metrics."""
        return []

    def plugin_failures(self) -> list[dict[str, Any]]:
        """None: a recorder has no plugins."""
        return []


def _address(text: str) -> tuple[str, int] | None:
    if text in ("", "none"):
        return None
    from nodehost.testing.standin import parse_address

    return parse_address(text)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the plan named on the command line; exit with the host's code (see the module
    docstring).  Meant for a process of its own: the heap is frozen on the way out."""
    from nodehost.entry import before_exit

    try:
        _run(argv)
    finally:
        before_exit()


def _run(argv: Sequence[str] | None) -> NoReturn:
    from nodehost.daemon import HostSettings, RestartPolicy, run_plan
    from nodehost.errors import NodehostError
    from nodehost.log import configure_logging

    parser = argparse.ArgumentParser(prog="python -m nodehost.testing.planhost")
    parser.add_argument("plan")
    parser.add_argument("--health-address", default="none", metavar="HOST:PORT|none")
    parser.add_argument("--exit-on-ready", action="store_true")
    parser.add_argument("--ready-timeout", type=float)
    parser.add_argument("--crash-loop-limit", type=int, default=5)
    parser.add_argument("--initial-backoff", type=float, default=0.02)
    parser.add_argument("--stable-period", type=float, default=10.0)
    parser.add_argument("--stop-grace", type=float)
    parser.add_argument("--no-notify", action="store_true")
    parser.add_argument("--hooks-log", metavar="FILE")
    parser.add_argument("--log-format", default="json", choices=("json", "console"))
    args = parser.parse_args(argv)
    configure_logging(0, args.log_format)
    settings = HostSettings(
        restart=RestartPolicy(
            initial_backoff=args.initial_backoff,
            stable_period=args.stable_period,
            crash_loop_limit=args.crash_loop_limit,
        ),
        health_address=_address(args.health_address),
        exit_on_ready=args.exit_on_ready,
        ready_timeout=args.ready_timeout,
        notify=not args.no_notify,
        stop_grace=args.stop_grace,
    )
    hooks = HookRecorder(args.hooks_log) if args.hooks_log else None
    try:
        code = run_plan(load_plan(args.plan), hooks, settings)
    except NodehostError as error:
        print(error.render(), file=sys.stderr)
        raise SystemExit(error.exit_code) from None
    raise SystemExit(code)


if __name__ == "__main__":
    main()

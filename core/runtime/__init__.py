"""The runtime host: runs a :class:`~nodehost.plan.Plan` and keeps the node up.

Public API (imported lazily; ``import nodehost.runtime`` stays cheap):

* :func:`run_plan` -- run a plan until stopped; the entry ``nodehost start`` uses;
* :class:`HostSettings`, :class:`RestartPolicy` -- how it runs;
* :class:`LifecycleHooks` (protocol), :class:`NoHooks` -- what it tells plugins;
* :func:`exec_single`, :func:`can_exec` -- Origin's exec mode;
* :data:`DEFAULT_HEALTH_ADDRESS` -- where ``/healthz``, ``/readyz``,
  ``/metrics`` and ``/status`` are served by default.

Modules: ``host`` (the graph, signals, systemd, exit-on-ready),
``supervisor`` (one component's lifecycle), ``process`` (spawn, reap, stop
with no orphans), ``task`` (in-loop components), ``probes`` (readiness),
``ownership`` and ``listeners`` (whose listener a probe reached),
``restart`` (the policy), ``output`` (child output as log events),
``pidfiles`` (pid files, state lock, leftovers), ``notify`` (sd_notify),
``server`` and ``endpoints`` (health server), ``profile`` (``NODEHOST_PROFILE``),
``execmode``, ``proc`` (``/proc`` and ``prctl``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodehost.lazy import lazy_attributes

_LAZY = {
    "run_plan": "nodehost.runtime.run",
    "HostSettings": "nodehost.runtime.settings",
    "RestartPolicy": "nodehost.runtime.settings",
    "DEFAULT_HEALTH_ADDRESS": "nodehost.runtime.settings",
    "LifecycleHooks": "nodehost.runtime.host",
    "NoHooks": "nodehost.runtime.host",
    "exec_single": "nodehost.runtime.execmode",
    "can_exec": "nodehost.runtime.execmode",
}

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.runtime.execmode import can_exec, exec_single
    from nodehost.runtime.host import LifecycleHooks, NoHooks
    from nodehost.runtime.run import run_plan
    from nodehost.runtime.settings import DEFAULT_HEALTH_ADDRESS, HostSettings, RestartPolicy

__all__ = [
    "DEFAULT_HEALTH_ADDRESS",
    "HostSettings",
    "LifecycleHooks",
    "NoHooks",
    "RestartPolicy",
    "can_exec",
    "exec_single",
    "run_plan",
]


__getattr__ = lazy_attributes(__name__, _LAZY)

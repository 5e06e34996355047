"""The daemon behind ``nodehost start``: runs a :class:`~nodehost.plan.Plan`, keeps the node up.

Public API (imported lazily; ``import nodehost.daemon`` stays cheap):

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
    "run_plan": "nodehost.daemon.run",
    "HostSettings": "nodehost.daemon.settings",
    "RestartPolicy": "nodehost.daemon.settings",
    "DEFAULT_HEALTH_ADDRESS": "nodehost.daemon.settings",
    "LifecycleHooks": "nodehost.daemon.host",
    "NoHooks": "nodehost.daemon.host",
    "exec_single": "nodehost.daemon.execmode",
    "can_exec": "nodehost.daemon.execmode",
}

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.daemon.execmode import can_exec, exec_single
    from nodehost.daemon.host import LifecycleHooks, NoHooks
    from nodehost.daemon.run import run_plan
    from nodehost.daemon.settings import DEFAULT_HEALTH_ADDRESS, HostSettings, RestartPolicy

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

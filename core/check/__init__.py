"""Host checks: is this host fit to run the selected components?

Plugins contribute checks through ``nodehost_checks``
(:mod:`nodehost.hookspecs`); the core runs them (:mod:`nodehost.check.run`),
prints them as a table or JSON (``nodehost check``), and, before ``start``
starts anything, runs those that can make the start fail (the *preflight*,
:mod:`nodehost.check.preflight`).

A check is one :class:`Check` line: a stable ``name`` (``kubelet.swap``: the
component, a dot, what it looks at -- the name ``--ignore-preflight-errors``
takes), its :class:`Result`, what was ``found`` and the ``fix`` (a command or
the config key to change).  The core knows no component: what a check looks
at is the contributing plugin's business.  The host libraries plugins share
live beside this module: :mod:`.cgroups` (cgroup v2 and v1 controllers),
:mod:`.ports` (who holds a port), :mod:`.space` (free space and inodes),
:mod:`.links` (link types proved in a throw-away network namespace),
:mod:`.programs` (a program's version).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.component import PlanContext
    from nodehost.config.schema import NodeConfig
    from nodehost.plan import Plan


class Result(enum.Enum):
    """A check's outcome; only ``ERROR`` makes ``nodehost check`` exit 1 and stops a start."""

    OK = "ok"
    WARNING = "warning"
    ERROR = "error"
    SKIPPED = "skipped"


@frozen
class Check:
    """One checked thing: ``name``, ``result``, what was ``found``, and the ``fix``.

    ``found`` says what the host has (for ``skipped``: why it was not
    checked); ``fix`` is empty for ``ok`` and ``skipped`` and otherwise a
    command to run or the config key to change.  ``plugin`` is filled in by
    the core (the plugin that returned it).
    """

    name: str
    result: Result
    found: str
    fix: str = ""
    plugin: str = ""

    @classmethod
    def ok(cls, name: str, found: str) -> Check:
        return cls(name, Result.OK, found)

    @classmethod
    def warning(cls, name: str, found: str, fix: str) -> Check:
        return cls(name, Result.WARNING, found, fix)

    @classmethod
    def error(cls, name: str, found: str, fix: str) -> Check:
        return cls(name, Result.ERROR, found, fix)

    @classmethod
    def skipped(cls, name: str, why: str) -> Check:
        return cls(name, Result.SKIPPED, why)

    @property
    def is_error(self) -> bool:
        return self.result is Result.ERROR

    def as_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "result": self.result.value,
            "found": self.found,
            "fix": self.fix,
            "plugin": self.plugin,
        }


@frozen
class CheckContext:
    """What a ``nodehost_checks`` implementation may read."""

    #: the resolved, validated NodeConfig.
    config: NodeConfig
    #: the names of the selected components (check only for yours).
    selected: frozenset[str]
    #: the plan ``start`` would run: programs resolved (a stand-in's ``standin`` is true),
    #: inactive components with their reason; a component that cannot run on this host is missing
    #: from it (the core reports it as ``plan.<component>``).
    plan: Plan
    #: true before a ``start``: return only the checks that can make the start fail, and only
    #: cheap ones (reads of ``/proc``, ``/sys`` and files; no subprocess, no network).
    preflight: bool
    #: the :class:`~nodehost.component.PlanContext` a component is planned with (its own
    #: settings, the hooks), by name.
    plan_context: Callable[[str], PlanContext]

    def planned(self, name: str) -> Any:
        """The :class:`~nodehost.plan.PlannedComponent` ``name``, None if it is not planned
        or inactive."""
        for component in self.plan.components:
            if component.name == name and not component.plan.inactive_reason:
                return component
        return None

    def program(self, name: str) -> tuple[str, bool] | None:
        """``(program path, is a stand-in)`` of planned component ``name``'s process."""
        component = self.planned(name)
        argv = getattr(getattr(component, "plan", None) and component.plan.run, "argv", None)
        return (argv[0], component.standin) if argv else None

    def component_serving(self, host: str, port: int) -> str | None:
        """The planned component whose readiness probe reaches ``host:port`` (it will
        listen there once ``start`` runs it), None if none: a server nodehost runs itself."""
        from urllib.parse import urlsplit

        for component in self.plan.components:
            probe = getattr(component.plan.run, "readiness", None)
            url = getattr(probe, "url", "")
            where = urlsplit(url) if url else None
            probe_host = where.hostname if where else getattr(probe, "host", None)
            probe_port = (where.port or 443) if where else getattr(probe, "port", None)
            if probe_port == port and probe_host in (host, *_LOOPBACK.get(host, ())):
                return str(component.name)
        return None


_LOOPBACK = {"localhost": ("127.0.0.1", "::1"), "127.0.0.1": ("localhost",), "::1": ("localhost",)}

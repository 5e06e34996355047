"""The versions ``nodehost version`` reports: nodehost's, the host's and the plan's programs'.

A program's version is the first line it prints for ``--version`` (stdout,
else stderr, whatever its exit status: CNI plugins print theirs on stderr and
exit 1), asked with a time limit and no input.  The programs are those a plan
runs -- each component's ``argv[0]``, resolved as ``start`` resolves it (see
:mod:`nodehost.binaries`) -- and those they run in turn
(:attr:`nodehost.component.ComponentPlan.programs`).
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from nodehost import __version__
from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping

    from nodehost.binaries import StandinMode
    from nodehost.plan import Plan
    from nodehost.pluginhost.inventory import Inventory


@frozen
class ProgramVersion:
    """One program: ``path`` (``None`` when not found), its ``version`` line or the ``error``."""

    name: str
    path: str | None
    version: str | None = None
    error: str | None = None
    component: str | None = None
    standin: bool = False

    def render(self) -> str:
        about = self.version or f"unknown ({self.error})"
        where = f" ({self.path})" if self.path else ""
        marks = " [stand-in]" if self.standin else ""
        return f"{self.name}: {about}{where}{marks}"


def host_versions() -> dict[str, str]:
    """nodehost's and Python's versions, the kernel release and the distribution's name."""
    return {
        "nodehost": __version__,
        "python": sys.version.split()[0],
        "kernel": platform.release(),
        "distribution": _distribution(),
    }


def _distribution() -> str:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME", "unknown")
    except OSError:
        return "unknown"


def plan_programs(
    plan: Plan, inventory: Inventory, overrides: Mapping[str, str], standins: StandinMode
) -> list[ProgramVersion]:
    """Every program ``plan`` runs and that those run in turn, each once, with its version.

    ``plan`` is built without resolving programs; each is resolved here as
    :func:`nodehost.plan.build_plan` resolves it, and one that is missing is
    reported (``path`` ``None``, the resolver's reason) instead of failing.
    """
    from nodehost.binaries import check_overrides_used, resolve_program
    from nodehost.component import ProcessSpec
    from nodehost.errors import RuntimeFailure

    runs = [(c, c.plan.run) for c in plan.components if isinstance(c.plan.run, ProcessSpec)]
    check_overrides_used(overrides, [run.argv[0] for _, run in runs])
    found: dict[str, ProgramVersion] = {}
    for component, run in runs:
        record = inventory.components[component.name].record
        try:
            program = resolve_program(
                component.name,
                run.argv[0],
                overrides=overrides,
                standins=standins,
                standin_scripts=record.standins,
            )
        except RuntimeFailure as error:
            found[run.argv[0]] = ProgramVersion(run.argv[0], None, error=str(error))
            continue
        found[program.path] = program_version(
            program.path, component.name, program.standin, name=run.argv[0]
        )
    for component in plan.components:
        for path in component.plan.programs:
            if path not in found:
                found[path] = program_version(path, component.name)
    return list(found.values())


def program_version(
    path: str, component: str | None = None, standin: bool = False, name: str | None = None
) -> ProgramVersion:
    """Ask ``path --version``; a bare name (not found by the plan) is reported as not found.

    ``name`` is the program's name (default: ``path``'s last part).
    """
    from nodehost.check.programs import program_version as first_line

    name = name or os.path.basename(path)
    if not os.path.isabs(path):
        return ProgramVersion(name, None, error="not found", component=component)
    try:
        line = first_line(path, any_exit=True)
    except OSError as error:
        return ProgramVersion(name, path, error=error.strerror or str(error), component=component)
    return ProgramVersion(name, path, line, component=component, standin=standin)


def as_dict(host: dict[str, str], programs: list[ProgramVersion] | None) -> dict[str, Any]:
    """The JSON document of ``nodehost version --json``."""
    document: dict[str, Any] = dict(host)
    document["programs"] = None if programs is None else [asdict(p) for p in programs]
    return document

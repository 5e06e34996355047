"""Running the host checks: the context, the plugins' checks, and how they are shown.

:func:`host_checks` is what ``nodehost check`` and the preflight share: it
builds the :class:`~nodehost.check.CheckContext` from a plan and asks every
plugin (``nodehost_checks``).  ``nodehost check`` plans with the host's
failures collected (:func:`plan_for_checks`): a component that cannot run
here -- a program not found, a CNI plugin missing -- is one ``plan`` error
line with the planner's own message, and the other components are still checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nodehost.check import Check, CheckContext, Result

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.binaries import StandinMode
    from nodehost.options import StartOptions
    from nodehost.plan import Plan
    from nodehost.pluginhost.inventory import Inventory
    from nodehost.resolve import ResolvedConfig

#: The name of the line for a component that cannot be planned on this host.
PLAN_CHECK = "plan"


def plan_for_checks(
    inventory: Inventory,
    resolved: ResolvedConfig,
    options: StartOptions,
    overrides: dict[str, str],
    standins: StandinMode,
) -> tuple[Plan, list[Check]]:
    """The plan ``start`` would run, and one ``plan`` error per component that cannot run here."""
    from nodehost.errors import RuntimeFailure
    from nodehost.plan import build_plan, default_state_dir

    failures: list[RuntimeFailure] = []
    plan = build_plan(
        inventory,
        resolved,
        options,
        state_dir=default_state_dir(options.state_dir),
        overrides=overrides,
        standins=standins,
        require_active=False,
        host_failures=failures,
    )
    lines = [
        Check(PLAN_CHECK, Result.ERROR, str(failure), "as the message says", plugin="nodehost")
        for failure in failures
    ]
    return plan, lines


def host_checks(
    inventory: Inventory,
    resolved: ResolvedConfig,
    options: StartOptions,
    plan: Plan,
    *,
    preflight: bool,
) -> list[Check]:
    """Every plugin's checks for ``plan`` (``nodehost_checks``), in call order."""
    from nodehost.plan import plan_context, plan_shared

    shared = plan_shared(inventory, resolved, plan.state_dir)

    def context_of(name: str) -> Any:
        return plan_context(inventory, resolved, options, name, plan.state_dir, shared)

    context = CheckContext(
        config=resolved.config,
        selected=resolved.selected,
        plan=plan,
        preflight=preflight,
        plan_context=context_of,
    )
    return inventory.host.hooks.checks(context)


def count(checks: Sequence[Check], result: Result) -> int:
    return sum(1 for check in checks if check.result is result)


def render_table(checks: Sequence[Check], width: int | None = None) -> str:
    """``NAME RESULT FOUND FIX``, one line per check (cells wrap to ``width``)."""
    from nodehost.table import format_table

    rows = [("NAME", "RESULT", "FOUND", "FIX")]
    rows += [(c.name, c.result.value, c.found, c.fix or "-") for c in checks]
    return format_table(rows, width)


def summary_line(checks: Sequence[Check]) -> str:
    parts = [f"{count(checks, result)} {result.value}" for result in Result]
    return f"{len(checks)} checks: " + ", ".join(parts)


def as_document(checks: Sequence[Check]) -> dict[str, Any]:
    """The ``--json`` document (docs/operating/checks.rst): the checks and a count per result."""
    return {
        "checks": [check.as_dict() for check in checks],
        "counts": {result.value: count(checks, result) for result in Result},
        "ok": count(checks, Result.ERROR) == 0,
    }

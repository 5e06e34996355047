"""The preflight: the checks that can make a start fail, run before anything starts.

``start`` calls :func:`preflight` once its plan is built.  Each plugin returns
only its cheap, start-blocking checks (``context.preflight``).  An ``error``
stops the start (:class:`~nodehost.errors.RuntimeFailure`, exit 1) with the
same lines ``nodehost check`` prints, unless ``--ignore-preflight-errors``
(``NODEHOST_IGNORE_PREFLIGHT_ERRORS``) names it -- a comma separated list of
check names, or ``all`` (as kubeadm's flag) -- which turns it into a warning.
Warnings are logged once, one event per check; a name that matched no check
is logged once too (a typo ignores nothing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nodehost.check import Check, Result

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.options import StartOptions
    from nodehost.plan import Plan
    from nodehost.pluginhost.inventory import Inventory
    from nodehost.resolve import ResolvedConfig

IGNORE_ALL = "all"
FLAG = "--ignore-preflight-errors"


def parse_ignored(text: str | None) -> frozenset[str]:
    """``a,b`` -> ``{"a", "b"}``; spaces and empty items dropped; ``all`` stays ``all``."""
    return frozenset(item.strip() for item in (text or "").split(",") if item.strip())


def downgrade(checks: Sequence[Check], ignored: frozenset[str]) -> list[Check]:
    """The checks with every error that ``ignored`` names (or ``all``) made a warning."""
    every = IGNORE_ALL in ignored
    return [
        dataclasses.replace(check, result=Result.WARNING, fix=f"ignored ({FLAG}); {check.fix}")
        if check.is_error and (every or check.name in ignored)
        else check
        for check in checks
    ]


def preflight(
    inventory: Inventory,
    resolved: ResolvedConfig,
    options: StartOptions,
    plan: Plan,
    ignored: frozenset[str],
) -> None:
    """Run the preflight; log its warnings once; raise ``RuntimeFailure`` on an error."""
    from nodehost.check.run import host_checks, render_table
    from nodehost.errors import RuntimeFailure
    from nodehost.log import get_logger

    checks = downgrade(host_checks(inventory, resolved, options, plan, preflight=True), ignored)
    log = get_logger()
    for check in checks:
        if check.result is Result.WARNING:
            log.warning("preflight", check=check.name, found=check.found, fix=check.fix)
    unknown = ignored - {IGNORE_ALL} - {check.name for check in checks}
    if unknown:
        log.warning(f"{FLAG}: no preflight check of that name ran", names=",".join(sorted(unknown)))
    errors = [check for check in checks if check.is_error]
    if errors:
        raise RuntimeFailure(
            "preflight failed; fix these, or pass "
            f"{FLAG}=NAME[,NAME...] (or all) to start anyway:\n" + render_table(errors)
        )

"""The ``bootstrap`` component: TLS bootstrap and certificate rotation.

Selected automatically when ``--bootstrap-config-name`` is given (Origin's
bootstrap mode), and selectable by name.  The CSR flow and rotation are not part
of this release; selecting the component fails at plan time and says so.
"""

from __future__ import annotations

from typing import Any

from nodehost import ComponentRecord, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, PlanContext
from nodehost.errors import RuntimeFailure


def bootstrapping(options: Any) -> bool:
    """Whether the start options ask for bootstrap (``--bootstrap-config-name``)."""
    return bool(getattr(options, "bootstrap_config_name", ""))


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name="bootstrap",
            summary="TLS bootstrap through the CSR API, then certificate rotation.",
            component=Bootstrap(),
            default=False,
            enable_if=bootstrapping,
            validation_scope=ValidationScope.NETWORK,
        )
    ]


class Bootstrap:
    """Plans certificate bootstrap and rotation."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        raise RuntimeFailure(
            "component bootstrap: TLS bootstrap and certificate rotation are not available in "
            "this version of nodehost; leave the component out"
        )

"""The ``dns`` component: the node's cluster DNS server.

Origin ran its DNS server only when the ``dns`` component was enabled *and*
``dnsBindAddress`` was set (reference §9.4); without the address the component
is inactive.  The server itself is not part of this release: a config that asks
for it fails at plan time with a message saying so, rather than pretending.
"""

from __future__ import annotations

from nodehost import ComponentRecord, Problem, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, PlanContext
from nodehost.errors import RuntimeFailure


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name="dns",
            summary="Node DNS server for cluster names (when dnsBindAddress is set).",
            component=NodeDns(),
            validation_scope=ValidationScope.IN_CLUSTER,
        )
    ]


@hookimpl
def nodehost_validate_config(config: object, selected: frozenset[str]) -> list[Problem]:
    """Origin's start-up check: ``dnsRecursiveResolvConf`` must be readable (§9.4)."""
    path = config.dns_recursive_resolv_conf  # type: ignore[attr-defined]
    if "dns" not in selected or not config.dns_bind_address or not path:  # type: ignore[attr-defined]
        return []
    try:
        with open(path, encoding="utf-8", errors="replace") as resolv_conf:
            resolv_conf.read(1 << 20)
    except OSError as error:
        detail = f"could not start DNS, unable to read config file: {error.strerror}"
        return [Problem.invalid("dnsRecursiveResolvConf", path, detail)]
    return []


class NodeDns:
    """Plans the DNS server (inactive without ``dnsBindAddress``)."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        if not context.config.dns_bind_address:
            return ComponentPlan(inactive_reason="dnsBindAddress is not set")
        raise RuntimeFailure(
            "component dns: the node DNS server is not available in this version of nodehost; "
            "remove dnsBindAddress from the config or leave the component out with --disable=dns"
        )

"""nodehost-ptp: the ``ptp`` network provider (CNI ptp + host-local IPAM + portmap).

Registered through the ``nodehost`` entry-point group as plugin ``ptp``.  Its
settings live in the top-level ``ptp`` section of NodeConfig, which it owns and
validates; Origin's own keys are untouched, so Origin configs load unchanged.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Mapping
from typing import Any

from nodehost import NetworkProviderRecord, Problem, hookimpl
from nodehost.component import ComponentPlan, FileSpec, PlanContext

__version__ = "0.1.0"

SECTION = "ptp"
DEFAULT_CNI_CONF_DIR = "/etc/cni/net.d"
CONFLIST_NAME = "10-nodehost-ptp.conflist"
NETWORK_NAME = "nodehost-ptp"


@hookimpl
def nodehost_network_providers() -> list[NetworkProviderRecord]:
    return [
        NetworkProviderRecord(
            name="ptp",
            summary="Point-to-point veth pairs per pod (CNI ptp, host-local IPAM).",
            provider=PtpProvider(),
            config_section=SECTION,
        )
    ]


@hookimpl
def nodehost_validate_config(config: Any, selected: frozenset[str]) -> list[Problem]:
    """Check the ``ptp`` section when the sdn component runs this provider."""
    name = (config.network_config.network_plugin_name or "").strip().lower()
    if "sdn" not in selected or name != "ptp":
        return []
    return section_problems(config.extra.get(SECTION))


def section_problems(section: object) -> list[Problem]:
    """Every problem in the ``ptp`` section (``subnet`` required, a CIDR; paths absolute)."""
    if not isinstance(section, Mapping):
        return [Problem.required(SECTION, "the ptp provider needs a 'ptp' section with a subnet")]
    problems = []
    subnet = section.get("subnet")
    if not subnet:
        problems.append(Problem.required(f"{SECTION}.subnet", "this node's pod CIDR"))
    else:
        try:
            ipaddress.ip_network(str(subnet), strict=True)
        except ValueError as error:
            problems.append(Problem.invalid(f"{SECTION}.subnet", subnet, str(error)))
    conf_dir = section.get("cniConfDir", DEFAULT_CNI_CONF_DIR)
    if not isinstance(conf_dir, str) or not os.path.isabs(conf_dir):
        problems.append(
            Problem.invalid(f"{SECTION}.cniConfDir", conf_dir, "must be an absolute path")
        )
    if not isinstance(section.get("ipMasq", True), bool):
        problems.append(
            Problem.invalid(f"{SECTION}.ipMasq", section["ipMasq"], "must be true or false")
        )
    unknown = sorted(set(section) - {"subnet", "cniConfDir", "ipMasq"})
    problems.extend(Problem.invalid(f"{SECTION}.{key}", key, "unknown key") for key in unknown)
    return problems


class PtpProvider:
    """Writes the CNI configuration list; ready once it is written."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        section = context.config.extra[SECTION]
        conf_dir = section.get("cniConfDir", DEFAULT_CNI_CONF_DIR)
        conflist = cni_conflist(
            subnet=str(section["subnet"]),
            mtu=int(context.config.network_config.mtu),
            ip_masq=bool(section.get("ipMasq", True)),
        )
        content = (json.dumps(conflist, indent=2) + "\n").encode()
        return ComponentPlan(files=(FileSpec(os.path.join(conf_dir, CONFLIST_NAME), content),))


def cni_conflist(*, subnet: str, mtu: int, ip_masq: bool) -> dict[str, Any]:
    """The CNI 1.0.0 configuration list: ptp with host-local IPAM, then portmap."""
    return {
        "cniVersion": "1.0.0",
        "name": NETWORK_NAME,
        "plugins": [
            {
                "type": "ptp",
                "mtu": mtu,
                "ipMasq": ip_masq,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": subnet}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }

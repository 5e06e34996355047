"""nodehost-ptp: the ``ptp`` network provider (CNI ptp + host-local IPAM + portmap).

Registered through the ``nodehost`` entry-point group as plugin ``ptp``.  Its
settings live in the top-level ``ptp`` section of NodeConfig, which it owns and
validates; Origin's own keys are untouched, so Origin configs load unchanged.

A whole provider in three parts: its record, its validation, and the object
that describes its CNI network -- :func:`nodehost.cni.conflist_plan` does the
rest (plugin binaries checked, the marked list and nodehost's ledger written).
"""

from __future__ import annotations

from typing import Any

from nodehost import NetworkProviderRecord, Problem, hookimpl
from nodehost.cni import (
    CNI_DIRS_SCHEMA,
    DEFAULT_BIN_DIRS,
    DEFAULT_CONF_DIR,
    CniNetwork,
    conflist_file_name,
    conflist_plan,
    provider_section_problems,
)
from nodehost.component import ComponentPlan, PlanContext
from nodehost.config.sections import SectionReader, section_schema

__version__ = "0.1.0"

NAME = "ptp"
SECTION = "ptp"
NETWORK_NAME = "nodehost-ptp"

SCHEMA = section_schema(
    "The ptp network provider (nodehost-ptp): a veth pair per pod, host-local IPAM.",
    {
        "subnet": {"type": "string", "description": "This node's pod addresses (CIDR)."},
        "ipMasq": {
            "type": "boolean",
            "default": True,
            "description": "Masquerade traffic leaving the subnet.",
        },
        **CNI_DIRS_SCHEMA,
    },
    required=("subnet",),
)


@hookimpl
def nodehost_network_providers() -> list[NetworkProviderRecord]:
    return [
        NetworkProviderRecord(
            name=NAME,
            summary="Point-to-point veth pairs per pod (CNI ptp, host-local IPAM).",
            provider=PtpProvider(),
            config_section=SECTION,
            config_schema=SCHEMA,
        )
    ]


@hookimpl
def nodehost_validate_config(config: Any, selected: frozenset[str]) -> list[Problem]:
    """Check the ``ptp`` section when the sdn component runs this provider or it is set."""
    return provider_section_problems(config, selected, NAME, SECTION, read_settings(config)[1])


def read_settings(config: Any) -> tuple[dict[str, Any], list[Problem]]:
    """The section's values (defaults applied) and every problem in it."""
    reader = SectionReader(SECTION, config.extra.get(SECTION))
    settings = {
        "subnet": reader.cidr("subnet", required=True),
        "ip_masq": reader.boolean("ipMasq", True),
        "conf_dir": reader.absolute_path("cniConfDir", DEFAULT_CONF_DIR),
        "bin_dirs": reader.absolute_paths("cniBinDirs", DEFAULT_BIN_DIRS),
    }
    reader.unknown_keys()
    return settings, reader.problems


class PtpProvider:
    """Writes the CNI configuration list; ready once it is written."""

    def cni_network(self, context: PlanContext) -> CniNetwork:
        settings, _ = read_settings(context.config)
        mtu = int(context.config.network_config.mtu)
        return CniNetwork(
            provider=NAME,
            conf_dir=settings["conf_dir"],
            bin_dirs=settings["bin_dirs"],
            conflist=cni_conflist(
                subnet=str(settings["subnet"]), mtu=mtu, ip_masq=settings["ip_masq"]
            ),
            file_name=conflist_file_name(NAME),
            mtu=mtu,
        )

    def plan(self, context: PlanContext) -> ComponentPlan:
        return conflist_plan(context, self.cni_network(context))


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
            {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True},
        ],
    }

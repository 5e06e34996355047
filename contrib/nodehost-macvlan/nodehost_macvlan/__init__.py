"""nodehost-macvlan: the ``macvlan`` network provider -- pods on a host link's layer 2.

Registered through the ``nodehost`` entry-point group as plugin ``macvlan``.
Each pod gets a macvlan interface on the *master* link, with its own MAC
address, and an address from this node's slice (``podCIDR``) of the master's
network; pods are reachable from the rest of that network (the LAN) without
routing through the host -- and, as macvlan works, not from the host itself.

Its record declares :attr:`nodehost.Topology.L2`, so nodehost checks what
such a network needs (:mod:`nodehost.cni.layer2`): the master exists and is
up, the pods' MTU fits it, the pod CIDR lies in the master's network and
spares the master's own address; ``nodehost network check`` proves two pods
on the master reach each other.

Settings, in the ``macvlanNetwork`` section::

    networkConfig:
      networkPluginName: macvlan
    macvlanNetwork:
      master: eth1                  # the host link pods share (required)
      podCIDR: 192.168.50.128/25    # this node's pod addresses, in eth1's network (required)
      gateway: 192.168.50.1         # the LAN's router: the pods' default route (optional)
      mode: bridge                  # bridge (default), private, vepa, passthru
      mtu: 1500                     # default networkConfig.mtu; at most the master's MTU
      cniConfDir: /etc/cni/net.d
      cniBinDirs: [/usr/lib/cni, /opt/cni/bin]
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from nodehost import NetworkProviderRecord, Problem, Topology, hookimpl
from nodehost.cni import (
    CNI_DIRS_SCHEMA,
    DEFAULT_BIN_DIRS,
    DEFAULT_CONF_DIR,
    CniNetwork,
    conflist_file_name,
    conflist_plan,
    master_network,
    provider_section_problems,
)
from nodehost.component import ComponentPlan, PlanContext
from nodehost.config.sections import SectionReader, section_schema

__version__ = "0.1.0"

NAME = "macvlan"
SECTION = "macvlanNetwork"
NETWORK_NAME = "nodehost-macvlan"
MODES = ("bridge", "private", "vepa", "passthru")

#: Why pods of one node cannot reach each other over the master, per macvlan mode.
ISOLATION = {
    "private": "macvlan mode private keeps pods on one master apart",
    "vepa": "macvlan mode vepa sends pod-to-pod traffic through the external switch",
    "passthru": "macvlan mode passthru gives the master to a single pod",
}

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

SCHEMA = section_schema(
    "The macvlan provider (nodehost-macvlan): pods on a host link's layer 2.",
    {
        "master": {
            "type": "string",
            "pattern": "^[^/:\\s]{1,15}$",
            "description": "The host link the pods' macvlan interfaces hang off.",
        },
        "podCIDR": {
            "type": "string",
            "description": "This node's pod addresses (CIDR), inside the master's network.",
        },
        "gateway": {
            "type": "string",
            "description": "The router on the master's network the pods use as default route.",
        },
        "mode": {"enum": list(MODES), "default": "bridge", "description": "The macvlan mode."},
        "mtu": {
            "type": "integer",
            "minimum": 68,
            "maximum": 65535,
            "description": "The pods' MTU (default networkConfig.mtu); at most the master's.",
        },
        **CNI_DIRS_SCHEMA,
    },
    required=("master", "podCIDR"),
)


@hookimpl
def nodehost_network_providers() -> list[NetworkProviderRecord]:
    return [
        NetworkProviderRecord(
            name=NAME,
            summary="Pods on a host link's layer 2, each with its own MAC (CNI macvlan).",
            provider=MacvlanProvider(),
            config_section=SECTION,
            config_schema=SCHEMA,
            topology=Topology.L2,
        )
    ]


@hookimpl
def nodehost_validate_config(config: Any, selected: frozenset[str]) -> list[Problem]:
    """Check the ``macvlanNetwork`` section when the sdn component runs this provider or it
    is set."""
    return provider_section_problems(config, selected, NAME, SECTION, read_settings(config)[1])


@dataclass(frozen=True)
class MacvlanSettings:
    """The ``macvlanNetwork`` section, read (defaults applied)."""

    master: str | None
    pod_cidr: IPNetwork | None
    gateway: IPAddress | None
    mode: str
    mtu: int
    conf_dir: str
    bin_dirs: tuple[str, ...]


def read_settings(config: Any) -> tuple[MacvlanSettings, list[Problem]]:
    """The section's values and every problem in it (placement on the host is checked at plan)."""
    reader = SectionReader(SECTION, config.extra.get(SECTION))
    master = reader.text("master", required=True)
    if master is not None:
        master = reader.link_name("master", master)
    settings = MacvlanSettings(
        master=master,
        pod_cidr=reader.cidr("podCIDR", required=True),
        gateway=reader.ip_address("gateway"),
        mode=reader.choice("mode", MODES, "bridge"),
        mtu=reader.integer("mtu", int(config.network_config.mtu), minimum=68, maximum=65535),
        conf_dir=reader.absolute_path("cniConfDir", DEFAULT_CONF_DIR),
        bin_dirs=reader.absolute_paths("cniBinDirs", DEFAULT_BIN_DIRS),
    )
    reader.unknown_keys()
    return settings, reader.problems + gateway_problems(settings)


def gateway_problems(settings: MacvlanSettings) -> list[Problem]:
    """The gateway is a router on the LAN: same family as the pods, not one of their addresses."""
    pod, gateway = settings.pod_cidr, settings.gateway
    if pod is None or gateway is None:
        return []
    path = f"{SECTION}.gateway"
    if gateway.version != pod.version:
        return [Problem.invalid(path, str(gateway), f"must be an IPv{pod.version} address")]
    if gateway in pod:
        return [Problem.invalid(path, str(gateway), f"is inside podCIDR {pod}; pods would take it")]
    return []


class MacvlanProvider:
    """Writes the macvlan configuration list; ready once it is written."""

    def cni_network(self, context: PlanContext) -> CniNetwork:
        settings, _ = read_settings(context.config)
        assert settings.master is not None and settings.pod_cidr is not None  # validated
        who = f"network provider {NAME}"
        lan = master_network(settings.master, settings.pod_cidr, who).network
        return CniNetwork(
            provider=NAME,
            conf_dir=settings.conf_dir,
            bin_dirs=settings.bin_dirs,
            conflist=macvlan_conflist(settings, lan),
            file_name=conflist_file_name(NAME),
            mtu=settings.mtu,
            master=settings.master,
            isolation=ISOLATION.get(settings.mode),
        )

    def plan(self, context: PlanContext) -> ComponentPlan:
        return conflist_plan(context, self.cni_network(context))


def macvlan_conflist(settings: MacvlanSettings, lan: IPNetwork) -> dict[str, Any]:
    """CNI 1.0.0 list: macvlan on the master, host-local handing out the pod CIDR of ``lan``."""
    pod = settings.pod_cidr
    assert pod is not None
    pool: dict[str, Any] = {
        "subnet": str(lan),
        "rangeStart": str(max(pod.network_address, lan.network_address + 1)),
        "rangeEnd": str(min(pod.broadcast_address, lan.broadcast_address - 1)),
    }
    ipam: dict[str, Any] = {"type": "host-local", "ranges": [[pool]]}
    if settings.gateway is not None:
        pool["gateway"] = str(settings.gateway)
        ipam["routes"] = [{"dst": "0.0.0.0/0" if pod.version == 4 else "::/0"}]
    return {
        "cniVersion": "1.0.0",
        "name": NETWORK_NAME,
        "plugins": [
            {
                "type": "macvlan",
                "master": settings.master,
                "mode": settings.mode,
                "mtu": settings.mtu,
                "ipam": ipam,
            }
        ],
    }

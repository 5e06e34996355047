"""The built-in ``bridge`` network provider: a Linux bridge with host-local IPAM on the pod CIDR.

Settings, in the ``bridgeNetwork`` section of NodeConfig (Origin's schema has
no place for them)::

    networkConfig:
      networkPluginName: bridge
      mtu: 1450                          # the pods' MTU
    bridgeNetwork:
      podCIDR: 10.244.1.0/24             # this node's pod addresses (required)
      bridge: nodehost0                  # the bridge's name
      ipMasq: true                       # masquerade traffic leaving the pod CIDR
      serviceNetworkCIDR: 172.30.0.0/16  # the cluster's service network, to catch overlaps
      cniConfDir: /etc/cni/net.d
      cniBinDirs: [/usr/lib/cni, /opt/cni/bin]

The provider writes ``10-nodehost-bridge.conflist`` -- ``bridge`` (gateway on
the bridge, hairpin mode) with ``host-local`` IPAM, then ``portmap`` -- and
is ready once it is written.  The pods' ``lo`` is a network of its own in CNI:
runtimes bring it up with the ``loopback`` plugin, so that binary is checked too.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from nodehost import Problem
from nodehost.cni import (
    CNI_DIRS_SCHEMA,
    DEFAULT_BIN_DIRS,
    DEFAULT_CONF_DIR,
    CniNetwork,
    HostLink,
    conflist_file_name,
)
from nodehost.component import ComponentPlan, PlanContext
from nodehost.config.sections import SectionReader, section_schema
from nodehost.errors import RuntimeFailure
from nodehost.frozen import frozen

NAME = "bridge"
SECTION = "bridgeNetwork"
SUMMARY = "A Linux bridge with host-local IPAM on this node's pod CIDR (CNI bridge, portmap)."
NETWORK_NAME = "nodehost-bridge"
DEFAULT_BRIDGE = "nodehost0"

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

SCHEMA = section_schema(
    "The bridge network provider: a Linux bridge with host-local IPAM on the pod CIDR.",
    {
        "podCIDR": {"type": "string", "description": "This node's pod addresses (CIDR)."},
        "bridge": {
            "type": "string",
            "default": DEFAULT_BRIDGE,
            "pattern": "^[^/:\\s]{1,15}$",
            "description": "The bridge's name.",
        },
        "ipMasq": {
            "type": "boolean",
            "default": True,
            "description": "Masquerade traffic leaving the pod CIDR.",
        },
        "serviceNetworkCIDR": {
            "type": "string",
            "description": "The cluster's service network: a pod CIDR overlapping it is refused.",
        },
        **CNI_DIRS_SCHEMA,
    },
    required=("podCIDR",),
)


@frozen
class BridgeSettings:
    """The ``bridgeNetwork`` section, read (defaults applied)."""

    pod_cidr: IPNetwork | None
    bridge: str = DEFAULT_BRIDGE
    ip_masq: bool = True
    service_cidr: IPNetwork | None = None
    conf_dir: str = DEFAULT_CONF_DIR
    bin_dirs: tuple[str, ...] = DEFAULT_BIN_DIRS


def read_settings(config: Any) -> tuple[BridgeSettings, list[Problem]]:
    """The settings and every problem of the section (including overlaps with the node's IPs)."""
    reader = SectionReader(SECTION, config.extra.get(SECTION))
    settings = BridgeSettings(
        pod_cidr=reader.cidr("podCIDR", required=True),
        bridge=reader.link_name("bridge", DEFAULT_BRIDGE),
        ip_masq=reader.boolean("ipMasq", True),
        service_cidr=reader.cidr("serviceNetworkCIDR"),
        conf_dir=reader.absolute_path("cniConfDir", DEFAULT_CONF_DIR),
        bin_dirs=reader.absolute_paths("cniBinDirs", DEFAULT_BIN_DIRS),
    )
    reader.unknown_keys()
    return settings, reader.problems + overlap_problems(settings, config)


def overlap_problems(settings: BridgeSettings, config: Any) -> list[Problem]:
    """The pod CIDR must not overlap the service network nor hold the node's or DNS IP."""
    pod = settings.pod_cidr
    if pod is None:
        return []
    path = f"{SECTION}.podCIDR"
    problems = []
    service = settings.service_cidr
    if service is not None and service.version == pod.version and service.overlaps(pod):
        problems.append(
            Problem.invalid(
                path,
                str(pod),
                f"overlaps the service network {service} ({SECTION}.serviceNetworkCIDR)",
            )
        )
    for field, value in (("nodeIP", config.node_ip), ("dnsIP", config.dns_ip)):
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            continue
        if address in pod:
            problems.append(
                Problem.invalid(path, str(pod), f"contains {field} {value}; pods would take it")
            )
    return problems


def bridge_conflist(settings: BridgeSettings, mtu: int) -> dict[str, Any]:
    """CNI 1.0.0 list: bridge (gateway, hairpin, MTU) with host-local on the pod CIDR; portmap."""
    assert settings.pod_cidr is not None
    default_route = "0.0.0.0/0" if settings.pod_cidr.version == 4 else "::/0"
    return {
        "cniVersion": "1.0.0",
        "name": NETWORK_NAME,
        "plugins": [
            {
                "type": "bridge",
                "bridge": settings.bridge,
                "isGateway": True,
                "ipMasq": settings.ip_masq,
                "hairpinMode": True,
                "mtu": mtu,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": str(settings.pod_cidr)}]],
                    "routes": [{"dst": default_route}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True},
        ],
    }


class BridgeProvider:
    """Writes the bridge configuration list; ready once it is written."""

    def problems(self, config: Any) -> list[Problem]:
        return read_settings(config)[1]

    def cni_network(self, context: PlanContext) -> CniNetwork:
        settings, _ = read_settings(context.config)
        if settings.pod_cidr is None:
            raise RuntimeFailure(f"network provider {NAME}: {SECTION}.podCIDR is required")
        mtu = int(context.config.network_config.mtu)
        return CniNetwork(
            provider=NAME,
            conf_dir=settings.conf_dir,
            bin_dirs=settings.bin_dirs,
            conflist=bridge_conflist(settings, mtu),
            file_name=conflist_file_name(NAME),
            mtu=mtu,
            host_links=(HostLink(settings.bridge, "bridge"),),
        )

    def plan(self, context: PlanContext) -> ComponentPlan:
        from nodehost.cni import conflist_plan  # host links, the ledger: a plan's needs only

        return conflist_plan(context, self.cni_network(context))

"""The ``node-config.yaml`` the local cluster publishes in its ``node-config`` config map.

nodehost's defaults -- what ``nodehost start`` generates from flags
(:func:`nodehost.pki.nodeconfig.node_config_mapping` with Origin's v1
defaults) -- plus what makes every component run on one machine:

* ``dnsBindAddress`` on loopback (the DNS server runs: cluster names from the
  local API server's Services and EndpointSlices, the rest forwarded to the
  host's resolvers from ``/etc/resolv.conf``);
* the kubelet serving and healthz ports and kube-proxy's healthz address on
  loopback, at the ports chosen at the first start (:mod:`.layout`);
* the ``bridge`` network provider when this machine can run it
  (:mod:`.machine`), on a pod CIDR of ``10.244.0.0/16`` no host route uses,
  with its configuration in ``DIR/node/cni`` and a bridge named after DIR;
  otherwise no provider (``sdn`` is inactive).

Bootstrap then applies the start's overrides as for any config map (node
name, serving certificate, client CA).
"""

from __future__ import annotations

import hashlib
import ipaddress
from typing import TYPE_CHECKING, Any

from nodehost.plugins.localcluster.layout import LOOPBACK, ClusterSettings, Layout

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.options import StartOptions

SERVICE_NETWORK = "172.30.0.0/16"
POD_NETWORKS = ipaddress.IPv4Network("10.244.0.0/16")
POD_PREFIX = 24


def node_config(
    options: StartOptions, layout: Layout, settings: ClusterSettings, bridge: bool
) -> dict[str, Any]:
    """The raw NodeConfig mapping to publish (see the module docstring)."""
    from nodehost.options import default_cluster_domain
    from nodehost.pki.nodeconfig import NodeConfigFields, finish_node_config, node_config_mapping

    fields = NodeConfigFields(
        node_name=options.hostname,
        bind_address=f"{LOOPBACK}:{settings.kubelet_port}",
        volume_directory=str(layout.node_dir / "volumes"),
        allow_disabled_docker=False,
        image_format=options.images,
        latest_images=options.latest_images,
        dns_bind_address=f"{LOOPBACK}:{settings.dns_port}",
        dns_domain=default_cluster_domain(),
        dns_ip="",
        master_kubeconfig="node.kubeconfig",
        network_plugin="bridge" if bridge else "",
        kubelet_arguments={
            "fail-swap-on": ("false",),
            "healthz-port": (str(settings.kubelet_healthz_port),),
        },
    )
    raw = node_config_mapping(fields)
    raw["proxyArguments"] = {
        "healthz-bind-address": [f"{LOOPBACK}:{settings.proxy_healthz_port}"],
    }
    if bridge:
        raw["bridgeNetwork"] = bridge_section(layout)
    return finish_node_config(raw)


def bridge_section(layout: Layout) -> dict[str, Any]:
    """The ``bridgeNetwork`` section: this DIR's bridge and pod CIDR, files under DIR."""
    return {
        "podCIDR": str(pod_cidr(layout)),
        "bridge": bridge_name(layout),
        "serviceNetworkCIDR": SERVICE_NETWORK,
        "cniConfDir": str(layout.node_dir / "cni"),
    }


def _seed(layout: Layout) -> int:
    return int.from_bytes(hashlib.sha256(str(layout.directory).encode()).digest()[:4], "big")


def bridge_name(layout: Layout) -> str:
    """``nh-`` and 8 hex digits of DIR's hash: one bridge per local cluster (15 chars at most)."""
    return f"nh-{_seed(layout):08x}"


def pod_cidr(layout: Layout) -> ipaddress.IPv4Network:
    """A /24 of ``10.244.0.0/16`` that no route or address of this host overlaps.

    The search starts at a place DIR's hash picks, so the same DIR gets the
    same network while nothing else claims it, and two DIRs rarely share one.
    """
    taken = host_networks()
    candidates = list(POD_NETWORKS.subnets(new_prefix=POD_PREFIX))
    start = _seed(layout) % len(candidates)
    for candidate in candidates[start:] + candidates[:start]:
        if not any(candidate.overlaps(network) for network in taken):
            return candidate
    from nodehost.errors import RuntimeFailure

    raise RuntimeFailure(f"every /24 of {POD_NETWORKS} is in use on this host: no pod network")


def host_networks(routes: str = "/proc/net/route") -> list[ipaddress.IPv4Network]:
    """The IPv4 networks this host routes (the default route left out) and its addresses."""
    from nodehost.hostaddr import local_ipv4_addresses

    found = [ipaddress.IPv4Network(f"{address}/32") for address in local_ipv4_addresses()]
    from nodehost.fileread import PROC_LIMIT, read_text

    try:
        lines = read_text(routes, PROC_LIMIT).splitlines()[1:]
    except OSError:
        return found
    for line in lines:
        parts = line.split()
        if len(parts) < 8 or parts[1] == "00000000":
            continue
        destination, mask = (_little_endian_ip(parts[1]), _little_endian_ip(parts[7]))
        found.append(ipaddress.IPv4Network(f"{destination}/{mask}", strict=False))
    return found


def _little_endian_ip(text: str) -> str:
    return str(ipaddress.IPv4Address(int(text, 16).to_bytes(4, "little")))

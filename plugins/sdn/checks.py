"""The pod network's host checks (``nodehost_checks``), for the configured provider's CNI network.

Read from the network the provider describes (``cni_network``: its
configuration list and binary directories), so they hold for any provider,
built-in or third-party, that writes or reads a CNI configuration:

* ``sdn.cni-plugins`` (not in the preflight) -- every plugin the list names
  (and ``loopback``) found in the binary directories, with the CNI versions
  it supports (``CNI_COMMAND=VERSION``);
* ``sdn.link-types`` (not in the preflight) -- every link type those plugins
  and the provider's host links create, proved by making one in a throw-away
  network namespace (:mod:`nodehost.check.links`);
* ``sdn.ip-forward`` -- IPv4 forwarding for networks routed through the
  host (a ``bridge`` plugin with ``isGateway`` turns it on itself);
  ``sdn.ipv6-forward`` likewise for IPv6 when the pods get IPv6 addresses;
* ``sdn.br-netfilter`` -- for bridged networks, ``bridge-nf-call-iptables``
  so that the service proxy's rules see traffic between pods on the bridge.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from nodehost.check import Check, CheckContext
from nodehost.pluginhost.records import Topology

NAME = "sdn"
#: The links each CNI plugin type makes.
PLUGIN_LINKS = {
    "bridge": ("bridge", "veth"),
    "ptp": ("veth",),
    "macvlan": ("macvlan",),
    "ipvlan": ("ipvlan",),
    "vlan": ("vlan",),
}
IP_FORWARD = "/proc/sys/net/ipv4/ip_forward"
IPV6_FORWARD = "/proc/sys/net/ipv6/conf/all/forwarding"
BRIDGE_NF = "/proc/sys/net/bridge/bridge-nf-call-iptables"


def sdn_checks(context: CheckContext) -> list[Check]:
    """The checks above when the selected, active sdn (the hook asks only then) has a CNI
    network."""
    from nodehost.cni import node_network
    from nodehost.errors import RuntimeFailure

    network = node_network(context.plan_context(NAME))
    if network is None:
        return []
    try:
        source, conflist = network.current()
    except RuntimeFailure as error:
        return [Check.skipped(f"{NAME}.cni", str(error))]
    plugins = [p for p in conflist.get("plugins", []) if isinstance(p, Mapping)]
    types = [str(p.get("type")) for p in plugins] + (["loopback"] if network.loopback else [])
    types += [str(p["ipam"]["type"]) for p in plugins if isinstance(p.get("ipam"), Mapping)]
    found = []
    if not context.preflight:
        found.append(cni_plugins_check(types, network.bin_dirs, source))
        kinds = [kind for t in types for kind in PLUGIN_LINKS.get(t, ())]
        kinds += [link.kind for link in network.host_links]
        found.append(link_types_check(list(dict.fromkeys(kinds))))
    if network.topology is Topology.HOST:
        found.append(ip_forward_check(plugins))
        if _has_ipv6_pods(plugins):
            found.append(ipv6_forward_check())
    if "bridge" in types:
        found.append(br_netfilter_check())
    return found


def cni_plugins_check(types: Sequence[str], bin_dirs: Sequence[str], source: str) -> Check:
    from nodehost.cni.plugins import find_plugin, missing_plugins

    name = f"{NAME}.cni-plugins"
    lacking = missing_plugins(types, bin_dirs)
    if lacking:
        return Check.error(
            name,
            f"{', '.join(lacking)} (named by {source}) not in {', '.join(bin_dirs)}",
            "apt-get install containernetworking-plugins, or add their folder to cniBinDirs",
        )
    found = []
    for plugin_type in dict.fromkeys(types):
        path = find_plugin(plugin_type, bin_dirs) or plugin_type
        found.append(f"{plugin_type} ({path}, CNI {_supported(path)})")
    return Check.ok(name, "; ".join(found))


def _supported(path: str) -> str:
    """The highest CNI version ``path`` supports, from ``CNI_COMMAND=VERSION``."""
    try:
        done = subprocess.run(
            [path],
            env={"CNI_COMMAND": "VERSION"},
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        versions = json.loads(done.stdout).get("supportedVersions") or []
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return "version unknown"
    return f"up to {versions[-1]}" if versions else "version unknown"


def link_types_check(kinds: Sequence[str]) -> Check:
    from nodehost.check.links import ProbeUnavailable, probe_link_types

    name = f"{NAME}.link-types"
    if not kinds:
        return Check.ok(name, "the network makes no links of its own")
    try:
        results = probe_link_types(kinds)
    except ProbeUnavailable as error:
        return Check.skipped(name, f"cannot prove {', '.join(kinds)}: the probe {error}")
    failed = {kind: why for kind, why in results.items() if why is not None}
    if failed:
        details = ", ".join(f"{kind} ({why})" for kind, why in failed.items())
        return Check.error(
            name,
            f"the kernel cannot make {details}",
            f"modprobe {' '.join(failed)}, or a kernel with those link types",
        )
    return Check.ok(name, f"made {', '.join(kinds)} in a throw-away network namespace")


def ip_forward_check(plugins: Sequence[Mapping[str, Any]], path: str = IP_FORWARD) -> Check:
    name = f"{NAME}.ip-forward"
    value = _read(path)
    if value == "1":
        return Check.ok(name, "IPv4 forwarding is on")
    if any(p.get("type") == "bridge" and p.get("isGateway") for p in plugins):
        return Check.ok(name, "IPv4 forwarding is off; the bridge plugin (isGateway) turns it on")
    return Check.error(
        name,
        f"IPv4 forwarding is {'off' if value == '0' else 'unknown'} ({path}): pod traffic "
        "cannot leave the node",
        "sysctl -w net.ipv4.ip_forward=1 (and in /etc/sysctl.d)",
    )


def _has_ipv6_pods(plugins: Sequence[Mapping[str, Any]]) -> bool:
    """Whether an IPAM range or subnet of the list is IPv6 (a dual-stack or IPv6 network)."""
    text = json.dumps([p.get("ipam") for p in plugins if isinstance(p.get("ipam"), Mapping)])
    return any(":" in part for part in text.split('"') if "/" in part)


def ipv6_forward_check(path: str = IPV6_FORWARD) -> Check:
    name = f"{NAME}.ipv6-forward"
    value = _read(path)
    if value == "1":
        return Check.ok(name, "IPv6 forwarding is on")
    return Check.error(
        name,
        f"IPv6 forwarding is {'off' if value == '0' else 'unknown'} ({path}) and the pods "
        "have IPv6 addresses: their IPv6 traffic cannot leave the node",
        "sysctl -w net.ipv6.conf.all.forwarding=1 (and in /etc/sysctl.d)",
    )


def br_netfilter_check(path: str = BRIDGE_NF) -> Check:
    name = f"{NAME}.br-netfilter"
    value = _read(path)
    if value == "1":
        return Check.ok(name, "bridge-nf-call-iptables is 1")
    found = "br_netfilter is not loaded" if value is None else "bridge-nf-call-iptables is 0"
    return Check.warning(
        name,
        f"{found}: the service proxy's rules miss traffic between pods on the bridge",
        "modprobe br_netfilter && sysctl -w net.bridge.bridge-nf-call-iptables=1",
    )


def _read(path: str) -> str | None:
    try:
        with open(path) as file:
            return file.read().strip()
    except OSError:
        return None if not os.path.exists(path) else "?"

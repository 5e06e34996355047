"""The kubelet's host checks (``nodehost_checks``): can this host run the kubelet as planned?

Every check reads the kubelet's effective settings -- nodehost's defaults,
the plugins' contributions, ``kubeletArguments`` (:mod:`.arguments`) -- so it
judges what the kubelet would really be given:

* ``kubelet.cgroups`` -- cgroup v2 with cpu, memory, pids, io and cpuset in
  nodehost's own subtree (systemd delegation included); a v1 (or hybrid)
  host is named as such, a warning;
* ``kubelet.cgroup-driver`` -- ``cgroup-driver`` agrees with the container
  runtime's (the ``cgroup-driver`` a plugin contributes: containerd's
  ``SystemdCgroup``) and with whether systemd is PID 1;
* ``kubelet.swap`` -- swap on while ``fail-swap-on`` is true;
* ``kubelet.port-<n>`` -- the serving and healthz ports free, or who holds them;
* ``kubelet.resolv-conf`` -- a loopback nameserver in ``resolv-conf`` would
  be handed to pods and loop their DNS;
* ``kubelet.space-root-dir``, ``kubelet.space-state-dir`` -- free space and
  inodes above the ``eviction-hard`` ``nodefs`` thresholds;
* ``kubelet.node-name`` -- a lower-case RFC 1123 name;
* ``kubelet.program`` (not in the preflight) -- found, and its version.

With a stand-in kubelet (``--standins``), the checks of what only the real
kubelet needs of the host (cgroups, driver, swap) are skipped, saying so.
The node IP's check (``kubelet.node-ip``, :func:`node_ip_check`) chooses it as ``start``
will, with :mod:`nodehost.nodeip`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nodehost.check import Check, CheckContext

NAME = "kubelet"
#: What the kubelet and the agents need in their cgroup subtree.
CONTROLLERS = ("cpu", "memory", "pids", "io", "cpuset")
#: The kubelet's own defaults when ``eviction-hard`` is not given.
DEFAULT_EVICTION_HARD = {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
}
_RFC1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LOOPBACK_NAMESERVER = re.compile(r"^\s*nameserver\s+(127\.\S+|::1)\s*$", re.MULTILINE)
#: systemd-resolved's file of the real upstream servers.
RESOLVED_UPSTREAM = "/run/systemd/resolve/resolv.conf"


def kubelet_checks(context: CheckContext) -> list[Check]:
    """Every check above for the kubelet, if it is selected; the cheap ones in the preflight."""
    if NAME not in context.selected:
        return []
    from nodehost.plugins.kubelet import Kubelet, contributed_arguments
    from nodehost.plugins.kubelet import arguments as args

    plan_context = context.plan_context(NAME)
    arguments = Kubelet._arguments(plan_context).arguments
    launch = args.launch_arguments(arguments).values
    values = {key: value.config() for key, value in launch.items()}
    program = context.program(NAME)
    standin = program is not None and program[1]
    found = [
        *_host_checks(values, contributed_arguments(plan_context), standin),
        *port_checks(values, args.healthz_address(launch)),
        resolv_conf_check(values),
        *space_checks(values, context.plan.state_dir),
        node_name_check(context.config.node_name),
    ]
    node_ip = node_ip_check(context)
    if node_ip is not None:
        found.append(node_ip)
    if not context.preflight:
        found.append(program_check(program))
    return found


def _host_checks(
    values: Mapping[str, Any], contributed: Mapping[str, Sequence[str]], standin: bool
) -> list[Check]:
    names = ("kubelet.cgroups", "kubelet.cgroup-driver", "kubelet.swap")
    if standin:
        why = "the kubelet is a stand-in (--standins): only a real kubelet needs this of the host"
        return [Check.skipped(name, why) for name in names]
    from nodehost.check.cgroups import read_cgroup_host

    given = contributed.get("cgroup-driver") or ()
    runtime_driver = given[-1] if given else None
    return [
        cgroups_check(read_cgroup_host()),
        cgroup_driver_check(values.get("cgroup-driver") or "cgroupfs", runtime_driver),
        swap_check(bool(values.get("fail-swap-on", True))),
    ]


def cgroups_check(host: Any, wanted: Sequence[str] = CONTROLLERS) -> Check:
    """v2 with every ``wanted`` controller in the subtree; v1 named (warning); none an error."""
    from nodehost.check.cgroups import missing

    name = "kubelet.cgroups"
    lacking = missing(host.controllers, wanted)
    if host.mode == "none":
        return Check.error(name, host.describe(), "mount cgroup2 at /sys/fs/cgroup")
    if lacking and host.mode == "v2":
        parent = os.path.dirname(host.subtree)
        return Check.error(
            name,
            f"{host.describe()}: controllers {', '.join(lacking)} not enabled there",
            f"echo '{' '.join('+' + c for c in lacking)}' > {parent}/cgroup.subtree_control "
            "(under systemd: Delegate=yes in nodehost's unit)",
        )
    if lacking:
        return Check.error(
            name,
            f"{host.describe()}: controllers {', '.join(lacking)} not mounted",
            "boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1)",
        )
    if host.mode != "v2":
        return Check.warning(
            name,
            f"{host.describe()}; the kubelet runs on v1 but Kubernetes 1.31+ deprecates it",
            "boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1)",
        )
    return Check.ok(name, f"{host.describe()}: {', '.join(wanted)}")


def cgroup_driver_check(driver: str, runtime_driver: str | None) -> Check:
    """The kubelet's driver against the runtime's and against systemd being PID 1."""
    name = "kubelet.cgroup-driver"
    systemd = os.path.isdir("/run/systemd/system")
    if runtime_driver is not None and runtime_driver != driver:
        return Check.error(
            name,
            f"the kubelet's cgroup driver is {driver}, the container runtime's is "
            f"{runtime_driver}: pods start, then break",
            f"set kubeletArguments cgroup-driver: [{runtime_driver}], or the runtime's "
            f"cgroupDriver: {driver}",
        )
    if driver == "systemd" and not systemd:
        return Check.error(
            name,
            "the kubelet's cgroup driver is systemd, but systemd is not PID 1",
            "set kubeletArguments cgroup-driver: [cgroupfs]",
        )
    agreement = ", as the container runtime's" if runtime_driver else ""
    pid1 = "systemd is PID 1" if systemd else "systemd is not PID 1"
    return Check.ok(name, f"{driver}{agreement}; {pid1}")


def swap_check(fail_swap_on: bool, swaps: str = "/proc/swaps") -> Check:
    name = "kubelet.swap"
    try:
        with open(swaps) as file:
            active = [line.split()[0] for line in file.read().splitlines()[1:] if line.strip()]
    except OSError as error:
        return Check.skipped(name, f"cannot read {swaps}: {error.strerror}")
    if not active:
        return Check.ok(name, "no swap")
    if fail_swap_on:
        return Check.error(
            name,
            f"swap is on ({', '.join(active)}) and fail-swap-on is true: the kubelet exits",
            "swapoff -a (and remove it from /etc/fstab), or kubeletArguments "
            'fail-swap-on: ["false"]',
        )
    return Check.ok(name, f"swap is on ({', '.join(active)}); fail-swap-on is false")


def port_checks(values: Mapping[str, Any], healthz: tuple[str, int] | None) -> list[Check]:
    """The serving port and the healthz port (``healthz``: None when it is off)."""
    wanted = [(str(values.get("address") or "0.0.0.0"), int(values.get("port") or 10250))]
    if healthz is not None:
        wanted.append(healthz)
    from nodehost.check.ports import port_check

    return [port_check(f"kubelet.port-{port}", ip, port) for ip, port in wanted if port]


def resolv_conf_check(values: Mapping[str, Any]) -> Check:
    """A loopback nameserver in the file the kubelet hands to pods loops their DNS."""
    name = "kubelet.resolv-conf"
    path = values.get("resolv-conf") or "/etc/resolv.conf"
    if path == "":
        return Check.ok(name, "resolv-conf is off: pods get no host resolvers")
    try:
        with open(path) as file:
            text = file.read(1 << 16)
    except OSError as error:
        return Check.error(
            name,
            f"{path}: {error.strerror}",
            "kubeletArguments resolv-conf: [<a readable resolv.conf>]",
        )
    loops = LOOPBACK_NAMESERVER.findall(text)
    if not loops:
        return Check.ok(name, f"{path} names no loopback nameserver")
    instead = RESOLVED_UPSTREAM if os.path.isfile(RESOLVED_UPSTREAM) else "a resolv.conf "
    instead += "" if instead == RESOLVED_UPSTREAM else "of the real upstream servers"
    return Check.warning(
        name,
        f"{path} names loopback nameserver {', '.join(loops)}: pods would get it and loop "
        "their DNS",
        f"kubeletArguments resolv-conf: [{instead}]",
    )


def space_checks(values: Mapping[str, Any], state_dir: str) -> list[Check]:
    """The kubelet's root and the node's state dir against ``nodefs`` thresholds."""
    thresholds = dict(values.get("eviction-hard") or DEFAULT_EVICTION_HARD)
    root = str(values.get("root-dir") or "/var/lib/kubelet")
    folders = (("root-dir", root), ("state-dir", state_dir))
    return [space_check(f"kubelet.space-{what}", path, thresholds) for what, path in folders]


def space_check(name: str, path: str, thresholds: Mapping[str, str]) -> Check:
    """``error`` when ``path``'s file system is at or below a ``nodefs`` eviction threshold."""
    from nodehost.check.space import space_of

    try:
        space = space_of(path)
    except OSError as error:
        return Check.skipped(name, f"cannot measure {path}: {error.strerror}")
    below = [
        f"nodefs.{signal}<{limit}"
        for signal, limit in (
            ("available", thresholds.get("nodefs.available")),
            ("inodesFree", thresholds.get("nodefs.inodesFree")),
        )
        if limit and space.at_or_below(limit, inodes=signal == "inodesFree")
    ]
    if below:
        return Check.error(
            name,
            f"{space.describe()}: at the kubelet's eviction threshold {', '.join(below)}",
            f"free space on {space.measured}, or move it (--state-dir, volumeDirectory)",
        )
    return Check.ok(name, space.describe())


def node_name_check(node_name: str) -> Check:
    name = "kubelet.node-name"
    if node_name and len(node_name) <= 253 and _RFC1123.match(node_name):
        return Check.ok(name, f"{node_name} is a lower-case RFC 1123 name")
    return Check.error(
        name,
        f"{node_name!r} is not a lower-case RFC 1123 name: the API server refuses the Node",
        "set nodeName (or --hostname) to lower-case letters, digits, '-' and '.'",
    )


def node_ip_check(context: CheckContext) -> Check | None:
    """``kubelet.node-ip``: the node IP (``nodeIP`` or ``--node-ip``: an address, a pair,
    a selector, or unset for the default route's source) is on a local interface.

    Outside the preflight only: ``start`` chooses the node IP before the preflight and
    stops there, with the same words, when it cannot.
    """
    if context.preflight:
        return None
    from nodehost.nodeip import NodeIPError, resolve_node_ip

    name = "kubelet.node-ip"
    try:
        chosen = resolve_node_ip(context.config.node_ip)
    except (NodeIPError, ValueError) as error:
        fix = "set nodeIP (or --node-ip) to an address of this host, iface:NAME or cidr:NET"
        return Check.error(name, str(error), fix)
    return Check.ok(name, f"{chosen.value} ({chosen.chosen_by})")


def program_check(program: tuple[str, bool] | None) -> Check:
    name = "kubelet.program"
    if program is None:
        return Check.skipped(name, "the kubelet is not planned (see the plan line)")
    from nodehost.check.programs import program_version

    path, standin = program
    try:
        version = program_version(path)
    except OSError as error:
        return Check.error(name, str(error), "install a working kubelet, or --binary kubelet=PATH")
    return Check.ok(name, f"{path}: {version}" + (" (stand-in)" if standin else ""))

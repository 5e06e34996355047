"""``nodehost network check``: prove that pod networking works on this node, then leave no trace.

In a throw-away namespace (:class:`~nodehost.cni.sandbox.Sandbox`) the
network's chain runs as a runtime runs it for a pod: ``lo`` through the
loopback plugin (if the network says so), then ADD on ``eth0``; the check
verifies the interface and its addresses inside the namespace, then the data
path by the network's :class:`~nodehost.Topology`:

* through the host: the namespace reaches its gateway over TCP (a listener
  on the gateway address on the host, a connect from inside);
* layer 2: before the ADD, the master link exists, is up, has room for the
  MTU and carries the pod network (:mod:`nodehost.cni.layer2`); after it, a
  second throw-away namespace is attached to the same master and reaches the
  first over TCP (the host cannot reach pods through its own master link).

Then CHECK and DEL.  Everything the run caused is removed, host switches are
restored, and every step is reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from nodehost.cni.chain import check_supported
from nodehost.cni.conflist import ipam_types, plugin_types
from nodehost.cni.network import CniNetwork
from nodehost.cni.plugins import require_plugins
from nodehost.cni.sandbox import Attachment, Sandbox
from nodehost.errors import RuntimeFailure
from nodehost.pluginhost.records import Topology

Echo = Callable[[str], None]


def run_check(network: CniNetwork, echo: Echo) -> None:
    """Run the check, reporting each step through ``echo``.

    Raises the first failure -- a :class:`~nodehost.cni.invoke.CniError` naming
    the failing plugin, or a :class:`RuntimeFailure` -- after the cleanup.
    """
    source, conflist = network.current()
    echo(f"network {conflist['name']} (CNI {conflist['cniVersion']}) from {source}")
    types = list(dict.fromkeys([*plugin_types(conflist), *ipam_types(conflist)]))
    if network.loopback:
        types.append("loopback")
    require_plugins(types, network.bin_dirs, f"network provider {network.provider}")
    step(echo, "plugins", f"{', '.join(types)} found in {', '.join(network.bin_dirs)}")
    sandbox = Sandbox(bin_dirs=network.bin_dirs, prefix="nh-check")
    try:
        with sandbox:
            step(echo, "netns", f"{sandbox.name} created")
            exercise(sandbox, network, echo)
    finally:
        for line in sandbox.cleanup_report:
            echo(f"  cleanup  {line}")


def exercise(sandbox: Sandbox, network: CniNetwork, echo: Echo) -> Attachment:
    """In an open sandbox: loopback, ADD, the checks inside, the data path, CHECK, DEL.

    The data path follows ``network.topology`` (see the module docstring).
    Returns the (detached) attachment; raises the first failure.
    """
    _, conflist = network.current()
    if network.topology is Topology.L2:
        check_layer2(network, echo)
    attachment = attach_pod(sandbox, conflist, echo, loopback=network.loopback)
    if network.topology is Topology.L2:
        check_peer(sandbox, attachment, network, echo)
    else:
        check_gateway(sandbox, attachment, echo)
    finish(sandbox, attachment, echo)
    return attachment


def attach_pod(
    sandbox: Sandbox, conflist: Mapping[str, Any], echo: Echo, *, loopback: bool, who: str = ""
) -> Attachment:
    """Loopback (if wanted), ADD, and the interface's addresses checked inside the namespace."""
    if loopback:
        check_loopback(sandbox, echo, who)
    attachment = timed(echo, f"ADD{who}", lambda: sandbox.attach(conflist))
    assert attachment is not None
    check_inside(sandbox, attachment, echo, who)
    return attachment


def finish(sandbox: Sandbox, attachment: Attachment, echo: Echo, who: str = "") -> None:
    """CHECK (where the list supports it), then DEL."""
    if check_supported(attachment.conflist):
        timed(echo, f"CHECK{who}", lambda: sandbox.check(attachment))
    else:
        step(echo, f"CHECK{who}", "skipped (CNI < 0.4.0 or disableCheck)")
    timed(echo, f"DEL{who}", lambda: sandbox.detach(attachment))


def check_layer2(network: CniNetwork, echo: Echo) -> None:
    """The master link and the pods' place on it (:mod:`nodehost.cni.layer2`)."""
    from nodehost.cni.layer2 import check_master, check_pods_on_master

    who = f"network provider {network.provider}"
    state = check_master(network, who)
    step(echo, "master", f"{state.name} is up, MTU {state.mtu} (pods: {network.mtu or 'default'})")
    for line in check_pods_on_master(network, who):
        step(echo, "pod-cidr", line)


def check_peer(sandbox: Sandbox, attachment: Attachment, network: CniNetwork, echo: Echo) -> None:
    """A second pod on the same master reaches the first over TCP (layer-2 data path)."""
    if network.isolation:
        step(echo, "peer", f"skipped: {network.isolation}")
        return
    addresses = attachment.addresses()
    if not addresses:
        raise RuntimeFailure("the chain's ADD gave the pod no address to reach")
    address = addresses[0][0]
    with sandbox.sibling() as peer:
        step(echo, "netns", f"{peer.name} created (a second pod on {network.master})")
        other = attach_pod(peer, attachment.conflist, echo, loopback=network.loopback, who="#2")
        (source, _), *_ = other.addresses()
        seen = peer.reach_peer(sandbox, str(address.ip))
        if seen != str(source.ip):
            raise RuntimeFailure(
                f"the connection to {address.ip} came from {seen}, not from {source.ip}"
            )
        step(echo, "peer", f"TCP from {source.ip} to {address.ip} across {network.master}")
        finish(peer, other, echo, "#2")


def step(echo: Echo, name: str, detail: str) -> None:
    echo(f"  {name:<8} ok  {detail}")


def timed(echo: Echo, name: str, action: Callable[[], Attachment | None]) -> Attachment | None:
    started = time.monotonic()
    value = action()
    detail = f"{(time.monotonic() - started) * 1000:.0f} ms"
    if isinstance(value, Attachment):
        detail = describe(value) + f" ({detail})"
    step(echo, name, detail)
    return value


def describe(attachment: Attachment) -> str:
    parts = [f"{address} gateway {gateway or '-'}" for address, gateway in attachment.addresses()]
    return f"{attachment.runtime.ifname} " + ", ".join(parts or ["no addresses"])


def check_loopback(sandbox: Sandbox, echo: Echo, who: str = "") -> None:
    sandbox.attach_loopback()
    found = sandbox.addresses("lo")
    if not sandbox.link_is_up("lo") or not any(a.ip.is_loopback for a in found):
        raise RuntimeFailure("plugin loopback (ADD) succeeded but lo is not up with 127.0.0.1")
    step(echo, f"loopback{who}", "lo up with " + ", ".join(str(a) for a in found))


def check_inside(sandbox: Sandbox, attachment: Attachment, echo: Echo, who: str = "") -> None:
    """Every address of the result is on the interface inside the namespace, which is up."""
    ifname = attachment.runtime.ifname
    found = sandbox.addresses(ifname)
    wanted = [address for address, _ in attachment.addresses()]
    missing = [str(address) for address in wanted if address not in found]
    if not found and not wanted:
        raise RuntimeFailure(f"the chain's ADD gave {ifname} no address")
    if missing:
        raise RuntimeFailure(
            f"{ifname} inside the namespace lacks {', '.join(missing)} "
            f"(has {', '.join(map(str, found)) or 'nothing'})"
        )
    if not sandbox.link_is_up(ifname):
        raise RuntimeFailure(f"{ifname} inside the namespace is down")
    step(
        echo,
        f"address{who}",
        f"{ifname} is up inside the namespace with {', '.join(map(str, found))}",
    )


def check_gateway(sandbox: Sandbox, attachment: Attachment, echo: Echo) -> None:
    """A TCP connection from the namespace reaches a listener on the gateway address."""
    pairs = [(address, gateway) for address, gateway in attachment.addresses() if gateway]
    if not pairs:
        step(echo, "gateway", "skipped: the result names no gateway")
        return
    address, gateway = pairs[0]
    source = sandbox.reach(gateway)
    if source != str(address.ip):
        raise RuntimeFailure(
            f"the connection to the gateway {gateway} came from {source}, not from {address.ip}"
        )
    step(echo, "gateway", f"TCP from {address.ip} inside the namespace to {gateway} on the host")

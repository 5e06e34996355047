"""``nodehost network check``: prove that pod networking works on this node, then leave no trace.

In a throw-away namespace (:class:`~nodehost.cni.sandbox.Sandbox`) the
network's chain runs as a runtime runs it for a pod: ``lo`` through the
loopback plugin (if the network says so), then ADD on ``eth0``; the check
verifies the interface and its addresses inside the namespace and that the
namespace reaches its gateway over TCP (a listener on the gateway address,
a connect from inside); then CHECK and DEL.  Everything the run caused is
removed, host switches are restored, and every step is reported.
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
            exercise(sandbox, conflist, echo, loopback=network.loopback)
    finally:
        for line in sandbox.cleanup_report:
            echo(f"  cleanup  {line}")


def exercise(
    sandbox: Sandbox, conflist: Mapping[str, Any], echo: Echo, *, loopback: bool = True
) -> Attachment:
    """In an open sandbox: loopback, ADD, the checks inside, gateway, CHECK, DEL.

    Returns the (detached) attachment; raises the first failure.
    """
    if loopback:
        check_loopback(sandbox, echo)
    attachment = timed(echo, "ADD", lambda: sandbox.attach(conflist))
    assert attachment is not None
    check_inside(sandbox, attachment, echo)
    check_gateway(sandbox, attachment, echo)
    if check_supported(conflist):
        timed(echo, "CHECK", lambda: sandbox.check(attachment))
    else:
        step(echo, "CHECK", "skipped (CNI < 0.4.0 or disableCheck)")
    timed(echo, "DEL", lambda: sandbox.detach(attachment))
    return attachment


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


def check_loopback(sandbox: Sandbox, echo: Echo) -> None:
    sandbox.attach_loopback()
    found = sandbox.addresses("lo")
    if not sandbox.link_is_up("lo") or not any(a.ip.is_loopback for a in found):
        raise RuntimeFailure("plugin loopback (ADD) succeeded but lo is not up with 127.0.0.1")
    step(echo, "loopback", "lo up with " + ", ".join(str(a) for a in found))


def check_inside(sandbox: Sandbox, attachment: Attachment, echo: Echo) -> None:
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
    step(echo, "address", f"{ifname} is up inside the namespace with {', '.join(map(str, found))}")


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

"""Building blocks for network providers that write a CNI configuration list.

:func:`conflist_plan` is the whole ``plan()`` of such a provider: given the
:class:`~nodehost.cni.network.CniNetwork` it describes, it checks the
environment and returns the files to write -- the marked configuration list
and the ledger :mod:`nodehost.cni.ledger` keeps for ``network cleanup``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from nodehost.cni import LEDGER_NAME, hostnet
from nodehost.cni.conflist import (
    ipam_ranges,
    ipam_types,
    is_marked,
    marked,
    network_files,
    plugin_types,
    render,
)
from nodehost.cni.ledger import LedgerNetwork, read_ledger
from nodehost.cni.network import CniNetwork, configured_record, with_topology
from nodehost.cni.plugins import require_plugins
from nodehost.component import ComponentPlan, FileSpec
from nodehost.errors import RuntimeFailure
from nodehost.pluginhost.records import Topology

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.component import PlanContext


def conflist_plan(context: PlanContext, network: CniNetwork) -> ComponentPlan:
    """The plan of a provider that writes ``network.conflist`` into ``network.conf_dir``.

    No side effects; raises :class:`RuntimeFailure` (naming the component and
    provider) when a plugin binary is missing from ``bin_dirs``, ``conf_dir``
    cannot be written, or another configuration sorts before this one
    (runtimes would use that one); then, by the topology the provider's
    record declares (:class:`nodehost.Topology`): through the host, when a
    host address overlaps the network's subnets; on layer 2, when the master
    link is missing, down or has a smaller MTU, or a subnet is not on the
    master's network (see :mod:`nodehost.cni.layer2`).
    The component is ready once the files are written.
    """
    if network.conflist is None or network.conf_path is None:
        raise ValueError("conflist_plan needs a network with a conflist and a file name")
    conflist, conf_path = network.conflist, network.conf_path
    network = with_topology(network, configured_record(context))
    who = f"component {context.record.name} (network provider {network.provider})"
    needed = [*plugin_types(conflist), *ipam_types(conflist)]
    require_plugins([*needed, *(["loopback"] if network.loopback else [])], network.bin_dirs, who)
    check_writable(network.conf_dir, who)
    others = check_first(network, who)
    check_placement(network, who)
    ledger_path = os.path.join(context.state_dir, LEDGER_NAME)
    import hashlib  # OpenSSL's digests: a provider's plan only, not a file's validation

    content = render(marked(conflist, network.provider))
    digest = hashlib.sha256(content).hexdigest()
    ledger = read_ledger(ledger_path).with_network(
        conf_path,
        network.host_links,
        hostnet.links() if network.host_links else {},
        LedgerNetwork(str(conflist["name"]), tuple(network.bin_dirs), (digest,)),
    )
    notes = [
        f"CNI plugins: {', '.join(dict.fromkeys(needed))} (from {', '.join(network.bin_dirs)})"
    ]
    if others:
        notes.append(f"runtimes ignore the later configurations in {network.conf_dir}: {others}")
    return ComponentPlan(
        files=(
            FileSpec(conf_path, content),
            FileSpec(ledger_path, ledger.render()),
        ),
        notes=tuple(notes),
    )


def check_writable(directory: str, who: str) -> None:
    """:class:`RuntimeFailure` unless ``directory`` exists writable or can be created."""
    current = directory
    while not os.path.exists(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    if not os.path.isdir(current):
        raise RuntimeFailure(f"{who}: cannot write {directory}: {current} is not a directory")
    if not os.access(current, os.W_OK | os.X_OK):
        raise RuntimeFailure(f"{who}: cannot write {directory}: {current} is not writable")


def check_first(network: CniNetwork, who: str) -> str:
    """Fail if another configuration sorts before the provider's; the later ones, listed."""
    assert network.conf_path is not None
    earlier: list[str] = []
    later: list[str] = []
    for path in network_files(network.conf_dir):
        if path != network.conf_path:
            (earlier if path < network.conf_path else later).append(path)
    if earlier:
        hint = (
            "'nodehost network cleanup' removes it"
            if all(is_marked(path) for path in earlier)
            else "remove or rename it if it is stale"
        )
        raise RuntimeFailure(
            f"{who}: {', '.join(earlier)} sorts before {network.conf_path}, so container runtimes "
            f"would use it instead; {hint}"
        )
    return ", ".join(os.path.basename(path) for path in later)


def check_placement(network: CniNetwork, who: str) -> None:
    """The topology's placement rule: no overlap with the host, or a fit on the master (L2)."""
    if network.topology is Topology.L2:
        from nodehost.cni.layer2 import check_master, check_pods_on_master

        check_master(network, who)
        check_pods_on_master(network, who)
    else:
        check_no_overlap(network, who)


def check_no_overlap(network: CniNetwork, who: str) -> None:
    """Fail if a host address (not the network's own link or gateway) overlaps its subnets."""
    assert network.conflist is not None
    ranges = ipam_ranges(network.conflist)
    if not ranges:
        return
    clashes = hostnet.overlapping_addresses(
        [subnet for subnet, _ in ranges],
        ignore_links=[link.name for link in network.host_links],
        ignore_addresses=[gateway for _, gateway in ranges],
    )
    if clashes:
        subnets = ", ".join(str(subnet) for subnet, _ in ranges)
        found = ", ".join(f"{address} on {link}" for link, address in clashes)
        raise RuntimeFailure(
            f"{who}: pod network {subnets} overlaps this host's addresses ({found}); "
            "choose a pod CIDR no host interface uses"
        )

"""Pod attachments to nodehost's networks, as libcni cached them, and their removal.

A container runtime using libcni (containerd's CRI) caches every attachment
it made in ``/var/lib/cni/results/<network>-<container>-<ifname>``: a JSON
object of kind ``cniCacheV1`` holding the configuration list it used
(``config``, base64), the container, interface, arguments and the ADD result
(see libcni's ``api.go``).  A runtime removes them with CNI DEL when it
removes a pod; when the runtime and its pods were killed instead (teardown),
nodehost does it (:func:`remove_attachments`): DEL through the whole chain
with the cached result, which makes each plugin undo its work on the host --
the veth pair, the IPAM reservation, the masquerade rule and chain (bridge's
``ipMasq``), the host-port chains and rules (portmap) -- then the pod's
network namespace and the cache entry go.

Only attachments made with a configuration list nodehost wrote for this
state directory are touched -- the cached list's SHA-256 is one the ledger
recorded (:class:`nodehost.cni.ledger.LedgerNetwork`; a ledger of an older
nodehost without digests: the network's name and nodehost's marker) --
anything else in the cache belongs to someone else, another nodehost's
network of the same name included.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nodehost.cni.conflist import MARKER_KEY
from nodehost.fileread import TEXT_LIMIT, read_file
from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.cni.ledger import LedgerNetwork

#: libcni's cache folder (``CacheDir``), as containerd's CRI uses it.
CACHE_DIR = "/var/lib/cni"
#: Where ``ip netns`` (and the runtimes) pin network namespaces.
NETNS_DIRS = ("/run/netns", "/var/run/netns")
CACHE_KIND = "cniCacheV1"


@frozen
class CachedAttachment:
    """One cache entry: where it is, and what a CNI DEL of it needs."""

    path: str
    network: str
    container_id: str
    ifname: str
    conflist: Mapping[str, Any]
    args: Mapping[str, str] = field(default_factory=dict)
    capability_args: Mapping[str, Any] = field(default_factory=dict)
    result: Mapping[str, Any] | None = None
    netns: str = ""


@dataclass
class AttachmentReport:
    """One line per attachment removed (``done``) or not (``failed``, kept for a next run)."""

    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def cached_attachments(
    networks: Sequence[LedgerNetwork], cache_dir: str = CACHE_DIR
) -> list[tuple[CachedAttachment, LedgerNetwork]]:
    """The cache entries made with ``networks``' lists (see the module docstring), each with
    its network (unreadable or foreign entries skipped)."""
    folder = os.path.join(cache_dir, "results")
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        read = _read_entry(os.path.join(folder, name))
        if read is None:
            continue
        entry, digest = read
        for network in networks:
            if entry.network == network.name and (not network.digests or digest in network.digests):
                found.append((entry, network))
                break
    return found


def _read_entry(path: str) -> tuple[CachedAttachment, str] | None:
    """The entry at ``path`` and the SHA-256 of its configuration list, if nodehost's."""
    try:
        data = json.loads(read_file(path, TEXT_LIMIT, follow_symlinks=False))
        if data.get("kind") != CACHE_KIND:
            return None
        raw = base64.b64decode(data["config"])
        conflist = json.loads(raw)
        marker = conflist.get(MARKER_KEY)
        if not isinstance(marker, Mapping) or marker.get("managedBy") != "nodehost":
            return None
        entry = CachedAttachment(
            path=path,
            network=str(data["networkName"]),
            container_id=str(data["containerId"]),
            ifname=str(data["ifName"]),
            conflist=conflist,
            args={str(k): str(v) for k, v in data.get("cniArgs") or ()},
            capability_args=dict(data.get("capabilityArgs") or {}),
            result=data.get("result"),
            netns=str(data.get("netns") or _sandbox(data.get("result"))),
        )
        return entry, hashlib.sha256(raw).hexdigest()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _sandbox(result: Any) -> str:
    """The network namespace an ADD result names (its interfaces' ``sandbox``), or ``""``."""
    if not isinstance(result, Mapping):
        return ""
    for interface in result.get("interfaces") or ():
        if isinstance(interface, Mapping) and interface.get("sandbox"):
            return str(interface["sandbox"])
    return ""


def remove_attachments(
    networks: Sequence[LedgerNetwork], cache_dir: str = CACHE_DIR
) -> AttachmentReport:
    """CNI DEL every cached attachment of ``networks`` (with each network's plugin folders),
    then remove its network namespace and cache entry.  A DEL that fails leaves both for a
    next run."""
    from nodehost.cni.chain import delete_network
    from nodehost.cni.invoke import CniError, RuntimeConf

    report = AttachmentReport()
    for entry, network in cached_attachments(networks, cache_dir):
        netns = entry.netns if entry.netns and os.path.exists(entry.netns) else ""
        runtime = RuntimeConf(
            entry.container_id, netns, entry.ifname, entry.args, entry.capability_args
        )
        about = (
            f"pod network attachment {entry.container_id[:12]} ({entry.network}, {entry.ifname})"
        )
        try:
            delete_network(entry.conflist, runtime, network.bin_dirs, entry.result)
        except CniError as error:
            report.failed.append(f"{about}: CNI DEL failed: {error.describe()}")
            continue
        report.done.append(f"removed {about}")
        _remove_namespace(entry.netns, report)
        try:
            os.unlink(entry.path)
        except FileNotFoundError:
            pass
        except OSError as error:
            report.failed.append(f"cannot remove {entry.path}: {error.strerror}")
    return report


def _remove_namespace(path: str, report: AttachmentReport) -> None:
    """Remove a pinned namespace ``ip netns`` knows (in :data:`NETNS_DIRS`); others are left."""
    from nodehost.cni import netns
    from nodehost.errors import RuntimeFailure

    if not path or os.path.dirname(path) not in NETNS_DIRS or not os.path.exists(path):
        return
    try:
        netns.delete(os.path.basename(path))
    except RuntimeFailure as error:
        report.failed.append(str(error))
        return
    report.done.append(f"removed network namespace {path}")


def cache_uses(plugin_type: str, cache_dir: str = CACHE_DIR) -> bool:
    """Whether any attachment in the cache (of any network) was made with a list holding a
    ``plugin_type`` plugin (entries without a readable list are not counted)."""
    folder = os.path.join(cache_dir, "results")
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return False
    for name in names:
        try:
            data = json.loads(
                read_file(os.path.join(folder, name), TEXT_LIMIT, follow_symlinks=False)
            )
            plugins = json.loads(base64.b64decode(data["config"])).get("plugins") or ()
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if any(isinstance(p, Mapping) and p.get("type") == plugin_type for p in plugins):
            return True
    return False

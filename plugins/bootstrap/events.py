"""Events about the Node, as the kubelet's own node events look (``kubectl describe node``)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

EVENT_NAMESPACE = "default"
#: The API server's limit on an event's message.
EVENT_MESSAGE_LIMIT = 1024


def node_event(node: str, kind: str, reason: str, message: str) -> dict[str, Any]:
    """An Event about Node ``node``: ``kind`` ``Normal`` or ``Warning``, from nodehost."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{node}.", "namespace": EVENT_NAMESPACE},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
        "reason": reason,
        "message": message[:EVENT_MESSAGE_LIMIT],
        "type": kind,
        "source": {"component": "nodehost", "host": node},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def rejoined_event(node: str, lost: str) -> dict[str, Any]:
    """The ``NodeRejoined`` Warning event: the node lost its identity (``lost``: why)."""
    return node_event(
        node,
        "Warning",
        "NodeRejoined",
        f"node {node} lost its identity ({lost}) and joined again through a new certificate "
        "request with its bootstrap credentials",
    )


async def post_event(kubeconfig: Path, event: dict[str, Any], timeout: float = 30.0) -> str | None:
    """Create ``event`` as the user of ``kubeconfig``: None, or why it could not (best effort:
    an event is never worth failing for)."""
    import time

    from nodehost.apiclient import ClusterClient, ClusterError

    try:
        async with ClusterClient(str(kubeconfig), deadline=time.monotonic() + timeout) as client:
            await client.create("Event", event)
    except ClusterError as error:
        return str(error)
    return None

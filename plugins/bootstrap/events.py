"""Events about the Node, as the kubelet's own node events look (``kubectl describe node``)."""

from __future__ import annotations

import datetime
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

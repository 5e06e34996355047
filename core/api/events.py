"""Node events as the kubelet posts them: one ``v1`` Event about the Node, best effort."""

from __future__ import annotations

import datetime
import time
from typing import Any

#: Node events live in ``default``, as the kubelet's own (``kubelet.go``: ``nodeRef``).
EVENT_NAMESPACE = "default"
#: The longest message kept (the API server refuses far longer ones).
EVENT_MESSAGE_LIMIT = 1024
#: How long posting one event is retried (seconds).
POST_DEADLINE = 30.0


def node_event(node: str, reason: str, message: str, kind: str = "Normal") -> dict[str, Any]:
    """The Event (``kind`` ``Normal`` or ``Warning``) that says ``message`` about Node ``node``."""
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


async def post_event(kubeconfig: str, event: dict[str, Any]) -> str | None:
    """Create ``event`` as the user of ``kubeconfig`` (retried for :data:`POST_DEADLINE`):
    None, or why it could not -- never raised, an event is not worth failing for."""
    from nodehost.api.client import ClusterClient, ClusterError

    try:
        async with ClusterClient(kubeconfig, deadline=time.monotonic() + POST_DEADLINE) as client:
            await client.create("Event", event)
    except ClusterError as error:
        return str(error)
    return None


async def post_node_event(kubeconfig: str, event: dict[str, Any], log: Any) -> bool:
    """:func:`post_event`, a failure logged as a warning; whether it was posted."""
    failure = await post_event(kubeconfig, event)
    if failure is not None:
        log.warning("cannot post the Node event", reason=event["reason"], error=failure)
    return failure is None

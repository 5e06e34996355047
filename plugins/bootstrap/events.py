"""The bootstrap component's own Node event (built with :mod:`nodehost.api.events`)."""

from __future__ import annotations

from typing import Any

from nodehost.api.events import node_event


def rejoined_event(node: str, lost: str) -> dict[str, Any]:
    """The ``NodeRejoined`` Warning event: the node lost its identity (``lost``: why)."""
    return node_event(
        node,
        "NodeRejoined",
        f"node {node} lost its identity ({lost}) and joined again through a new certificate "
        "request with its bootstrap credentials",
        "Warning",
    )

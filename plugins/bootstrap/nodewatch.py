"""The Node registered again when it is deleted while the node runs.

A kubelet registers its Node once, when it starts, and never again: a Node
deleted while the kubelet runs stays gone (upstream kubernetes#71398) and the
node silently drops out of the cluster.  The ``bootstrap`` component follows
its Node (one watch, as the node's own identity) and, when it is deleted:

* logs one warning and has the host restart the processes that read the
  node's kubeconfig (``context.files_changed``) -- the kubelet, which registers
  the Node again as it starts;
* once the Node is back, logs that and calls ``registered_again`` (config sync
  labels and annotates it again: a new Node carries only what the kubelet
  registers).

An administrator who deletes a Node to retire the machine stops nodehost on
it first (``nodehost uninstall``); while nodehost runs, the node is meant to
be in the cluster.  Before the kubelet first registers the Node, the watch
waits for it (a missing Node is retried with the client's backoff, not an error).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


class NodeWatch:
    """Follows Node ``node_name`` through ``kubeconfig`` for one task run."""

    def __init__(
        self,
        kubeconfig: str,
        node_name: str,
        context: Any,
        registered_again: Callable[[], None] = lambda: None,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.node_name = node_name
        self.context = context
        self.registered_again = registered_again
        self.deleted = False

    async def run(self) -> None:
        """Follow the Node until cancelled; never raises for the API server's failures."""
        from nodehost.api.client import RETRY_BACKOFF, ClusterClient, ClusterError

        failures = 0
        while True:
            try:
                async with ClusterClient(self.kubeconfig) as client:
                    async for node in client.follow("Node", self.node_name, on_deleted=self.gone):
                        failures = 0
                        self.seen(node)
            except ClusterError as error:
                failures += 1
                if not _missing(error):
                    self.context.log.info(
                        "node watch: cannot follow the Node; retrying",
                        node=self.node_name,
                        error=str(error),
                    )
                await asyncio.sleep(RETRY_BACKOFF.delay(failures))

    def gone(self, node: dict[str, Any]) -> None:
        """The Node was deleted: restart what reads the kubeconfig so the kubelet registers."""
        self.deleted = True
        self.context.log.warning(
            "the Node was deleted while the node runs: restarting the kubelet (and whatever "
            "else reads the node's kubeconfig) so that it registers the Node again",
            node=self.node_name,
            kubeconfig=self.kubeconfig,
        )
        self.context.files_changed([self.kubeconfig])

    def seen(self, node: dict[str, Any]) -> None:
        if not self.deleted:
            return
        self.deleted = False
        self.context.log.info("the Node is registered again", node=self.node_name)
        self.registered_again()


def _missing(error: Exception) -> bool:
    from nodehost.api.client import ClusterRefused

    return isinstance(error, ClusterRefused) and error.code == 404

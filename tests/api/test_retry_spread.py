"""A fleet that lost the API server at the same instant does not come back in step.

Every node's first failure is the same moment (the server went away); what the
server sees when it returns is each node's first retry after that.  The client's
real retry loop (:meth:`ClusterClient.call`: real connection errors, its
classification, its default backoff) runs once per simulated node on a clock of
its own, so the test proves the schedule, not the timing of this machine.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from nodehost.api import client as apiclient
from nodehost.api.client import RETRY_BACKOFF, ClusterClient
from nodehost.testing.apiserver import TestApiServer

NODES = 300
OUTAGE = 30.0


def first_retries_after_the_outage(
    api: TestApiServer, monkeypatch: pytest.MonkeyPatch
) -> list[float]:
    """For each node: seconds from the server's return to its first retry."""
    api.go_down()
    clock = [0.0]

    class Clock:  # the client's asyncio, but a sleep only moves the node's own clock
        def __getattr__(self, name: str) -> object:
            return getattr(asyncio, name)

        @staticmethod
        async def sleep(delay: float) -> None:
            clock[0] += delay

    monkeypatch.setattr(apiclient, "asyncio", Clock())

    async def fleet() -> list[float]:
        answers = []
        path = apiclient.resource_path("ConfigMap", "openshift-node", "node-config")

        async with ClusterClient(str(api.admin_kubeconfig)) as client:  # no deadline

            async def operation() -> float:
                if clock[0] < OUTAGE:  # one real request, refused: the server is down
                    await client.request("GET", path)
                return clock[0] - OUTAGE

            for _ in range(NODES):
                clock[0] = 0.0  # every node lost the server at the same instant
                answers.append(await client.call("get config map", operation))
        return answers

    random.seed(18)
    return asyncio.run(fleet())


def test_first_retries_after_an_outage_are_spread_over_the_backoff_window(
    api: TestApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    after = first_retries_after_the_outage(api, monkeypatch)
    assert max(after) <= RETRY_BACKOFF.maximum  # everyone is back within one capped delay
    per_second = Counter(int(seconds) for seconds in after)
    assert len(per_second) == int(RETRY_BACKOFF.maximum)  # every second of the window is used
    # Evenly over the 8 s window would be 12.5 % a second; +-25 % jitter put 29 % in one.
    assert max(per_second.values()) <= 0.22 * NODES

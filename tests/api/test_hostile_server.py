"""A misbehaving API server (or a proxy in front of it): every loop backs off, deadlines bound
whole requests, silent watches are re-established, malformed answers are failures, not crashes.

Rates are counted by events, not timed: a :class:`CountingBackoff` records each delay the
client takes, and the test stops once the server has had a number of requests; without a
backoff before each retry the requests outnumber the delays."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nodehost.api.client import (
    WATCH_TIMEOUT,
    ClusterClient,
    ClusterError,
    ClusterRefused,
    ClusterUnreachable,
)
from nodehost.backoff import Backoff
from nodehost.plugins.bootstrap.csr import answered
from nodehost.testing.apiserver import TestApiServer

CONFIG_MAPS = "/api/v1/namespaces/openshift-node/configmaps"
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


@dataclass(frozen=True)
class CountingBackoff(Backoff):
    """A fast schedule that records every delay asked of it."""

    taken: list[float] = field(default_factory=list, compare=False)

    def delay(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        value = super().delay(attempt, rand)
        self.taken.append(value)
        return value


def counting() -> CountingBackoff:
    return CountingBackoff(initial=0.002, maximum=0.01)


def client(api: TestApiServer, backoff: Backoff, **kwargs: Any) -> ClusterClient:
    return ClusterClient(str(api.admin_kubeconfig), backoff=backoff, **kwargs)


def requests_to(api: TestApiServer, prefix: str) -> int:
    return sum(1 for _method, path, _user in list(api.requests) if path.startswith(prefix))


async def run_until_requests(
    api: TestApiServer, prefix: str, count: int, work: Coroutine[Any, Any, Any]
) -> None:
    """Run ``work`` until the server has had ``count`` requests under ``prefix`` (a guard of
    60 s bounds a failure only), then cancel it."""
    task = asyncio.ensure_future(work)
    guard = time.monotonic() + 60
    while requests_to(api, prefix) < count and not task.done() and time.monotonic() < guard:
        await asyncio.sleep(0.005)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, ClusterError):
        await task
    assert requests_to(api, prefix) >= count, "the loop stopped asking"


async def follow_config_map(c: ClusterClient, since: str | None = None) -> None:
    async with c:
        async for _ in c.follow("ConfigMap", "node-config", "openshift-node", since=since):
            pass


def test_429_with_retry_after_0_is_retried_no_sooner_than_the_backoff(api) -> None:
    """2,006 requests in 5 s were seen: ``Retry-After: 0`` is a floor, not the delay."""
    api.misbehave("retry-now", CONFIG_MAPS)
    backoff = counting()

    async def read() -> None:
        async with client(api, backoff) as c:
            await c.get("ConfigMap", "node-config", "openshift-node")

    asyncio.run(run_until_requests(api, CONFIG_MAPS, 20, read()))
    assert len(backoff.taken) >= requests_to(api, CONFIG_MAPS) - 1


@pytest.mark.parametrize("mode", ["empty", "garbage", "gone"])
def test_a_watch_answered_at_once_without_events_is_resumed_after_a_backoff(api, mode) -> None:
    """An empty or garbage 200, or 410 on every watch: each new watch (and each new read) of a
    followed object comes after a backoff delay (5,000 requests in 20 s were seen)."""
    api.misbehave(mode, CONFIG_MAPS, watches=True)
    backoff = counting()
    asyncio.run(run_until_requests(api, CONFIG_MAPS, 30, follow_config_map(client(api, backoff))))
    watches = sum(1 for _m, path, _u in list(api.requests) if "watch=" in path)
    assert watches >= 10
    assert len(backoff.taken) >= watches - 1


@pytest.mark.parametrize(
    "body", [b"", b"<html>", b"[]", b'"x"', b'{"metadata": []}', b'{"status": []}',
             b'{"status": {"conditions": "Approved", "certificate": 5}}'],
)  # fmt: skip
def test_a_csr_wait_answered_with_garbage_backs_off_and_ends_at_the_deadline(api, body) -> None:
    """The CSR wait against a server that answers 200 with nothing usable: a retried failure
    with backoff until the client's deadline, never a crash."""
    api.misbehave("garbage", CSRS, body=body)
    backoff = counting()

    async def wait() -> None:
        async with client(api, backoff, deadline=time.monotonic() + 30) as c:
            await c.wait_for("CertificateSigningRequest", "csr-1", answered)

    asyncio.run(run_until_requests(api, CSRS, 15, wait()))
    rounds = requests_to(api, CSRS) // 2  # a round is a read and, for an object, a watch
    assert len(backoff.taken) >= rounds - 1


def test_a_trickling_answer_is_bounded_by_the_requests_timeout(api) -> None:
    """One byte a second kept every read within its timeout, and the request for ever."""
    api.misbehave("trickle", CONFIG_MAPS, interval=0.05)

    async def once() -> None:
        async with client(api, counting(), timeout=0.5) as c:
            await c.request("GET", f"{CONFIG_MAPS}/node-config")

    with pytest.raises(Exception, match=r"no complete answer within 0\.5s"):
        asyncio.run(asyncio.wait_for(once(), 30))  # 30 s bounds a failure only


def test_a_trickling_answer_is_bounded_by_the_clients_deadline(api) -> None:
    """``--bootstrap-timeout 5s`` ran past 90 s: the deadline ends the attempt in flight."""
    api.misbehave("trickle", CONFIG_MAPS, interval=0.05)

    async def read() -> None:
        deadline = time.monotonic() + 0.5
        async with client(api, counting(), timeout=40, deadline=deadline) as c:
            await c.get("ConfigMap", "node-config", "openshift-node")

    with pytest.raises(ClusterUnreachable, match="no complete answer before the deadline"):
        asyncio.run(asyncio.wait_for(read(), 30))  # 30 s bounds a failure only


def test_a_silent_watch_is_re_established_from_its_version_after_the_idle_limit(api) -> None:
    """A stream that says nothing while the object changes: the change arrives once the idle
    limit re-establishes the watch from the last version seen."""
    api.misbehave("silent", CONFIG_MAPS, watches=True, count=1)

    def change_during_the_silent_watch() -> None:
        while not any("watch=" in path for _m, path, _u in list(api.requests)):
            time.sleep(0.01)
        api.put_config_map("openshift-node", "node-config", {"node-config.yaml": "changed"})

    async def follow() -> list[str]:
        seen: list[str] = []
        changing = asyncio.create_task(asyncio.to_thread(change_during_the_silent_watch))
        async with client(api, counting(), watch_idle=0.3) as c:
            async for obj in c.follow("ConfigMap", "node-config", "openshift-node"):
                seen.append(obj["data"]["node-config.yaml"])
                if len(seen) == 2:
                    break
        await changing
        return seen

    seen = asyncio.run(asyncio.wait_for(follow(), 30))
    assert seen[1] == "changed"
    watches = [p for _m, p, _u in api.requests if "watch=" in p]
    assert len(watches) >= 2 and "resourceVersion=" in watches[1]


def test_watches_ask_for_a_server_timeout_spread_as_client_gos(api) -> None:
    async def watch_once(c: ClusterClient) -> None:
        stream = c.watch("ConfigMap", "openshift-node", version="1", server_timeout=None)
        async with contextlib.aclosing(stream):
            api.put_config_map("openshift-node", "other", {"a": "b"})
            await anext(stream)

    async def watches() -> None:
        async with client(api, counting()) as c:
            for _ in range(8):
                await watch_once(c)

    asyncio.run(watches())
    asked = [p for _m, p, _u in api.requests if "watch=" in p]
    timeouts = {int(p.split("timeoutSeconds=")[1].split("&")[0]) for p in asked}
    assert all(WATCH_TIMEOUT <= value < 2 * WATCH_TIMEOUT for value in timeouts)
    assert len(timeouts) > 1  # spread, not one value for a whole fleet


def test_a_redirect_says_where_to_and_that_it_is_not_followed(api) -> None:
    api.misbehave("redirect", CONFIG_MAPS)

    async def read() -> None:
        async with client(api, counting(), deadline=time.monotonic() + 10) as c:
            await c.get("ConfigMap", "node-config", "openshift-node")

    with pytest.raises(ClusterRefused) as refused:
        asyncio.run(read())
    message = str(refused.value)
    assert f"redirected (HTTP 302) to https://elsewhere.example{CONFIG_MAPS}" in message
    assert "does not follow redirects" in message and "not JSON" not in message


@pytest.mark.parametrize(
    "event",
    [{"type": "MODIFIED", "object": []}, {"type": "MODIFIED"}, [], "x",
     {"type": "MODIFIED", "object": {"metadata": {"name": "node-config"}, "data": []}}],
    ids=["object-list", "no-object", "list", "string", "one-event-then-the-end"],
)  # fmt: skip
def test_a_watch_event_that_is_not_an_event_is_a_failure_with_backoff(api, event) -> None:
    """Also a good event in a stream the server ends at once, again and again: the
    follow is asked ever more slowly (a real server holds a watch for minutes)."""
    api.misbehave("event", CONFIG_MAPS, watches=True, body=json.dumps(event).encode())
    backoff = counting()
    asyncio.run(run_until_requests(api, CONFIG_MAPS, 20, follow_config_map(client(api, backoff))))
    watches = sum(1 for _m, path, _u in list(api.requests) if "watch=" in path)
    assert len(backoff.taken) >= watches - 1


def test_a_followed_object_without_metadata_does_not_end_the_follow(api) -> None:
    """``metadata`` missing or null in a watch event: the object is handed on (the caller
    decides what to do with it) and the follow resumes from the last good version."""
    for metadata in ({}, {"metadata": None}, {"metadata": []}):
        line = json.dumps({"type": "MODIFIED", "object": {**metadata, "data": []}})
        api.misbehave("event", CONFIG_MAPS, watches=True, body=line.encode(), count=1)

    async def follow() -> list[Any]:
        seen: list[Any] = []
        async with client(api, counting()) as c:
            async for obj in c.follow("ConfigMap", "node-config", "openshift-node"):
                seen.append(obj)
                if len(seen) == 4:
                    return seen
        return seen

    seen = asyncio.run(asyncio.wait_for(follow(), 30))
    assert [obj.get("data") for obj in seen[1:]] == [[], [], []]
    watches = [p for _m, p, _u in api.requests if "watch=" in p]
    first = seen[0]["metadata"]["resourceVersion"]
    assert all(f"resourceVersion={first}" in watch for watch in watches[:4])


def test_no_loop_test_leaves_rules_behind(tmp_path: Path) -> None:
    """:meth:`TestApiServer.misbehave` rules are per server; an unknown mode is refused."""
    api = TestApiServer(tmp_path / "api")
    with pytest.raises(ValueError, match="unknown misbehaviour"):
        api.misbehave("teapot")

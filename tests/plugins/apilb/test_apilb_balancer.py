"""The balancer against the test API server on three ports: where connections go, failover,
cutting connections of a server that goes down, fail-back, servers learnt from the cluster."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from nodehost.api.client import ClusterClient, WatchEnded
from nodehost.plugins.apilb.routing import Route, plan_route
from nodehost.plugins.apilb.settings import LbSettings, read_learnt
from nodehost.plugins.apilb.task import BalancerTask
from nodehost.testing.apiserver import TestApiServer
from nodehost.testing.ports import free_port
from nodehost.testing.taskcontext import RecordingTaskContext

WAIT = 30.0


def in_loop(test: Callable[..., Any]) -> Callable[..., None]:
    """Run the coroutine test ``test`` in its own event loop (same fixtures)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


async def until(condition: Callable[[], Any], what: str) -> Any:
    """``condition()``'s first truthy value (checked every 10 ms); fail after WAIT seconds."""
    async with asyncio.timeout(WAIT):
        while not (value := condition()):
            await asyncio.sleep(0.01)
        return value
    raise AssertionError(what)  # pragma: no cover


@pytest.fixture
def api(tmp_path: Path) -> Any:
    with TestApiServer(tmp_path / "api", listeners=3) as server:
        yield server


def route_for(api: TestApiServer, tmp_path: Path, mode: str = "auto") -> Route:
    servers = tuple(f"127.0.0.1:{port}" for port in api.ports[1:]) if mode == "auto" else ()
    settings = LbSettings(mode, servers, "127.0.0.1", free_port(), 0.2, 1.0)
    route = plan_route(settings, str(api.admin_kubeconfig), str(tmp_path / "apilb"))
    assert isinstance(route, Route), route
    return route


class Running:
    """A balancer task running in the test's loop, with its routed kubeconfig written."""

    def __init__(self, route: Route, tmp_path: Path) -> None:
        from nodehost.pki.kubeconfig import dump_kubeconfig

        path = Path(route.kubeconfig_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(dump_kubeconfig(route.kubeconfig))
        self.kubeconfig = str(path)
        self.context = RecordingTaskContext("apilb")
        self.task = BalancerTask(
            source=route.source,
            routed_kubeconfig=route.kubeconfig_path,
            component_dir=str(path.parent),
            servers=route.servers,
            server_name=route.server_name,
            bind_host="127.0.0.1",
            bind_port=int(route.kubeconfig["clusters"][0]["cluster"]["server"].rsplit(":", 1)[1]),
            interval=0.2,
            timeout=1.0,
        )

    def servers(self) -> dict[str, str]:
        return {s["address"]: s["state"] for s in self.context.details.get("servers", ())}

    def task_servers(self) -> list[dict[str, Any]]:
        """The servers as the balancer sees them now (not as last reported)."""
        from nodehost.plugins.apilb.task import LIVE

        (balancer,) = list(LIVE)
        return list(balancer.snapshot())

    def using(self) -> str | None:
        return self.context.details.get("using")


@contextlib.asynccontextmanager
async def running(route: Route, tmp_path: Path) -> AsyncIterator[Running]:
    run = Running(route, tmp_path)
    task = asyncio.create_task(run.task(run.context))
    try:
        await asyncio.wait_for(run.context.wait_ready(), WAIT)
        yield run
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def get_version(kubeconfig: str) -> None:
    async with ClusterClient(kubeconfig, timeout=5.0) as client:
        await client.call("get", lambda: client.request("GET", "/version"))


def address(port: int) -> str:
    return f"127.0.0.1:{port}"


@in_loop
async def test_requests_go_through_the_first_server_with_tls_verified_end_to_end(
    api: TestApiServer, tmp_path: Path
) -> None:
    async with running(route_for(api, tmp_path), tmp_path) as run:
        first, second, third = api.ports
        before = api.connections.get(first, 0)
        async with ClusterClient(run.kubeconfig) as client:
            nodes = await client.call("list", lambda: client.request("GET", "/api/v1/nodes"))
        assert nodes["kind"] == "NodeList"
        assert api.connections[first] > before
        made = {s["address"]: s["connections_total"] for s in run.task_servers()}
        assert made[address(first)] >= 1  # this client's, and the balancer's own follower's
        assert made[address(second)] == made[address(third)] == 0
        # the client's certificate reached the real server: it is admin there
        assert ("GET", "/api/v1/nodes", "admin") in api.requests


@in_loop
async def test_a_stopped_server_takes_no_new_connection_and_its_watch_resumes_elsewhere(
    api: TestApiServer, tmp_path: Path
) -> None:
    first, second, _ = api.ports
    async with running(route_for(api, tmp_path), tmp_path) as run:
        await until(lambda: run.servers().get(address(first)) == "up", "the first server up")
        api.put_config_map("default", "watched", {"n": "0"})
        seen: list[str] = []
        async with ClusterClient(run.kubeconfig) as client:
            follower = asyncio.create_task(_follow(client, seen))
            await until(lambda: seen == ["0"], "the first version")
            api.go_down(first)
            api.put_config_map("default", "watched", {"n": "1"})
            await until(lambda: seen[-1:] == ["1"], "the change, through another server")
            follower.cancel()
            await asyncio.gather(follower, return_exceptions=True)
        assert run.servers()[address(first)] == "down"
        assert run.using() == address(second)
        served = api.connections.get(second, 0)
        await get_version(run.kubeconfig)
        assert api.connections[second] > served


async def _follow(client: ClusterClient, seen: list[str]) -> None:
    async for config_map in client.follow("ConfigMap", "watched", "default"):
        seen.append(config_map["data"]["n"])


@in_loop
async def test_connections_to_a_server_that_fails_its_check_are_cut(
    api: TestApiServer, tmp_path: Path
) -> None:
    """The server keeps its connections open (its storage is gone, /readyz says 500): the
    balancer cuts them, so a long watch ends and can start again through a live server."""
    first, second, _ = api.ports
    async with running(route_for(api, tmp_path), tmp_path) as run:
        await until(lambda: run.servers().get(address(first)) == "up", "the first server up")
        api.put_config_map("default", "watched", {"n": "0"})
        async with ClusterClient(run.kubeconfig) as client:
            watch = client.watch("ConfigMap", "default", name="watched", version="0")
            events = asyncio.create_task(_drain(watch))
            await until(lambda: api.watches_opened >= 1, "the watch")
            api.set_ready(first, False)
            with pytest.raises(WatchEnded):
                await asyncio.wait_for(events, WAIT)
        assert run.servers()[address(first)] == "down"
        assert run.using() == address(second)


async def _drain(watch: Any) -> None:
    async for _ in watch:
        pass


@in_loop
async def test_the_first_server_takes_new_connections_again_when_it_returns(
    api: TestApiServer, tmp_path: Path
) -> None:
    first, second, _ = api.ports
    async with running(route_for(api, tmp_path), tmp_path) as run:
        api.go_down(first)
        await until(lambda: run.using() == address(second), "the second server in use")
        api.come_up(first)
        await until(lambda: run.using() == address(first), "the first server back in use")
        served = api.connections.get(first, 0)
        await get_version(run.kubeconfig)
        assert api.connections[first] > served


@in_loop
async def test_with_every_server_down_clients_are_closed_and_the_balancer_says_so(
    api: TestApiServer, tmp_path: Path
) -> None:
    async with running(route_for(api, tmp_path), tmp_path) as run:
        api.go_down()
        await until(lambda: run.using() is None, "no server in use")
        assert run.context.problems == ("no API server is up",)
        reader, writer = await asyncio.open_connection("127.0.0.1", run.task.bind_port)
        assert await asyncio.wait_for(reader.read(), WAIT) == b""  # closed, not hung
        writer.close()


@in_loop
async def test_a_certificate_not_valid_for_the_name_marks_a_server_down(
    api: TestApiServer, tmp_path: Path
) -> None:
    route = route_for(api, tmp_path)
    wrong = Route(route.source, route.servers, "not-the-server.example", route.kubeconfig_path,
                  route.kubeconfig)  # fmt: skip
    async with running(wrong, tmp_path) as run:
        first = address(api.ports[0])
        await until(lambda: run.servers().get(first) == "down", "the first server down")
        reason = next(s["reason"] for s in run.context.details["servers"] if s["address"] == first)
        assert "certificate not trusted" in reason


@in_loop
async def test_servers_are_learnt_from_the_kubernetes_endpointslice_and_kept(
    api: TestApiServer, tmp_path: Path
) -> None:
    """mode on with one known server: the others come from the cluster, through the balancer."""
    first, second, third = api.ports
    api.store.put(
        "endpointslices",
        {
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": "kubernetes"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": p, "protocol": "TCP"} for p in api.ports],
        },
    )  # fmt: skip
    route = route_for(api, tmp_path, mode="on")
    assert [a for a, _ in route.servers] == [address(first)]
    async with running(route, tmp_path) as run:
        await until(lambda: len(run.servers()) == 3, "three servers")
        learnt = await until(lambda: read_learnt(str(tmp_path / "apilb")), "the kept list")
        assert set(learnt) == {address(p) for p in api.ports}
        api.go_down(first)
        await until(lambda: run.using() in (address(second), address(third)), "failover")
    state = json.loads((tmp_path / "apilb" / "servers.json").read_text())
    assert set(state["servers"]) == {address(p) for p in api.ports}
    again = route_for(api, tmp_path, mode="on")
    assert [a for a, _ in again.servers] == [address(p) for p in api.ports]


@in_loop
async def test_a_server_that_accepts_but_never_answers_is_marked_down_by_its_timeout(
    api: TestApiServer, tmp_path: Path
) -> None:
    """A black hole (the kernel completes the TCP handshake, nothing answers): only the
    check's timeout can tell, and then new connections go elsewhere."""
    import socket

    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen(64)  # never accepted, never answered
        silent = address(hole.getsockname()[1])
        route = route_for(api, tmp_path)
        servers = ((silent, "kubeconfig"), *route.servers)
        async with running(Route(route.source, servers, route.server_name,
                                 route.kubeconfig_path, route.kubeconfig), tmp_path) as run:  # fmt: skip
            await until(lambda: run.servers().get(silent) == "down", "the silent server down")
            reason = next(s["reason"] for s in run.context.details["servers"]
                          if s["address"] == silent)  # fmt: skip
            assert reason == "no answer within 1s"
            assert run.using() == address(api.ports[0])
            await get_version(run.kubeconfig)

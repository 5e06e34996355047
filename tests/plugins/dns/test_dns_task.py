"""The dns component's task as the host runs it: in an event loop, reporting readiness."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from dnsrun import RECORDS, answer_set, fqdn, free_udp_port, write_records

from nodehost.component import PlanContext
from nodehost.config import node_config_from_mapping
from nodehost.plugins.dns import NodeDns, nodehost_components
from nodehost.plugins.dns.records import Service
from nodehost.plugins.dns.server import serve
from nodehost.plugins.dns.settings import SECTION, DnsSettings


class Context:
    """A TaskContext that records what the task reports."""

    name = "dns"

    def __init__(self) -> None:
        import structlog

        self.log = structlog.get_logger("test")
        self.is_ready = threading.Event()
        self.statuses: list[str] = []

    def ready(self) -> None:
        self.is_ready.set()

    def status(self, message: str) -> None:
        self.statuses.append(message)


class LoopThread:
    """An event loop in a thread running one coroutine until :meth:`stop`."""

    def __init__(self, coroutine_function: Any, *args: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.error: BaseException | None = None
        self.task: asyncio.Task[Any] | None = None
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.task = self.loop.create_task(coroutine_function(*args))
            started.set()
            try:
                self.loop.run_until_complete(self.task)
            except asyncio.CancelledError:
                pass
            except BaseException as error:
                self.error = error

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        started.wait()

    def stop(self) -> None:
        assert self.task is not None
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(10)
        assert not self.thread.is_alive()
        self.loop.close()


def _ask(port: int, name: str) -> Any:
    import dns.message
    import dns.query

    return dns.query.udp(dns.message.make_query(name, "A"), "127.0.0.1", port=port, timeout=5)


def _plan_task(tmp_path: Path, port: int):
    records = write_records(tmp_path / "records.yaml", RECORDS)
    raw = {
        "nodeName": "node1",
        "nodeIP": "10.0.0.2",
        "servingInfo": {"bindAddress": "10.0.0.2:10250"},
        "masterKubeConfig": "node.kubeconfig",
        "dnsBindAddress": f"127.0.0.1:{port}",
        "dnsNameservers": [f"127.0.0.1:{free_udp_port()}"],
        SECTION: {"recordsFile": str(records), "recordSources": ["file"]},
    }
    config, _ = node_config_from_mapping(raw, base_dir=str(tmp_path), known_sections=[SECTION])
    (record,) = nodehost_components()
    context = PlanContext(config, None, record, frozenset({"dns"}), str(tmp_path), {}, None)
    return NodeDns().plan(context).run, records


def test_the_planned_task_serves_reports_ready_follows_the_file_and_stops(tmp_path) -> None:
    port = free_udp_port()
    spec, records = _plan_task(tmp_path, port)
    context = Context()
    running = LoopThread(spec.run, context)
    try:
        assert context.is_ready.wait(20), running.error
        assert answer_set(_ask(port, fqdn("web.default.svc"))) == {
            (fqdn("web.default.svc"), "A", "172.30.0.10")
        }
        changed = {**RECORDS, "services": [{"name": "web", "clusterIP": "172.30.0.99"}]}
        write_records(records, changed)
        for _ in range(200):
            answer = answer_set(_ask(port, fqdn("web.default.svc")))
            if answer == {(fqdn("web.default.svc"), "A", "172.30.0.99")}:
                break
            threading.Event().wait(0.05)
        assert answer == {(fqdn("web.default.svc"), "A", "172.30.0.99")}
    finally:
        running.stop()
    assert running.error is None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", port))  # the TCP socket was closed on stop


class NeverSynced:
    """A record source that never finishes its first sync."""

    name = "stuck"

    async def run(self, sink) -> None:
        sink.upsert_service(Service("default", "early", "172.30.0.5"))
        await asyncio.Event().wait()


class Broken:
    name = "broken"

    async def run(self, sink) -> None:
        raise RuntimeError("the API went away")


def test_the_server_is_not_ready_until_every_source_has_synced() -> None:
    settings = DnsSettings(bind_host="127.0.0.1", bind_port=0)
    context = Context()
    servers: list[Any] = []

    async def scenario() -> None:
        def ready(server: Any) -> None:
            servers.append(server)

        task = asyncio.ensure_future(
            serve(settings, [NeverSynced()], log=context.log, ready=ready, status=context.status)
        )
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert servers == []
    assert context.statuses == ["waiting for DNS record sources: stuck"]


class SyncsAtOnce:
    name = "file"

    async def run(self, sink) -> None:
        sink.synced()
        await asyncio.Event().wait()


def test_the_waiting_reason_drops_each_source_as_it_syncs() -> None:
    settings = DnsSettings(bind_host="127.0.0.1", bind_port=0)
    statuses: list[str] = []

    async def scenario() -> None:
        updated = asyncio.Event()

        def status(message: str) -> None:
            statuses.append(message)
            if len(statuses) == 2:
                updated.set()

        task = asyncio.ensure_future(
            serve(
                settings,
                [SyncsAtOnce(), NeverSynced()],
                log=Context().log,
                ready=lambda server: None,
                status=status,
            )
        )
        await asyncio.wait_for(updated.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert statuses == [
        "waiting for DNS record sources: file, stuck",
        "waiting for DNS record sources: stuck",
    ]


def test_a_failing_source_ends_the_server_with_its_error() -> None:
    settings = DnsSettings(bind_host="127.0.0.1", bind_port=0)
    with pytest.raises(RuntimeError, match="the API went away"):
        asyncio.run(serve(settings, [Broken()], log=Context().log, ready=lambda server: None))


def test_an_address_in_use_is_an_error_naming_it() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        settings = DnsSettings(bind_host="127.0.0.1", bind_port=port)
        with pytest.raises(OSError, match=rf"DNS cannot listen on 127.0.0.1:{port}: .*in use"):
            asyncio.run(serve(settings, [], log=Context().log, ready=lambda server: None))


#: Why a test skips: the machine's nature, not a missing install (CI need not notice).
NO_IPV6 = "this machine has no IPv6 loopback (its kernel or network setup, not a missing install)"


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _has_ipv6_loopback(), reason=NO_IPV6)
def test_a_wildcard_address_answers_on_ipv4_and_ipv6_loopback() -> None:
    settings = DnsSettings(bind_host="0.0.0.0", bind_port=0)
    context = Context()
    addresses: list[Any] = []

    async def scenario() -> None:
        import dns.asyncquery
        import dns.message

        ready = asyncio.Event()

        def on_ready(server: Any) -> None:
            addresses.append(server.address)
            ready.set()

        task = asyncio.ensure_future(serve(settings, [], log=context.log, ready=on_ready))
        await asyncio.wait_for(ready.wait(), 10)
        port = addresses[0][1]
        for host in ("127.0.0.1", "::1"):
            query = dns.message.make_query(fqdn("x.default.pod"), "A")
            response = await dns.asyncquery.udp(query, host, port=port, timeout=5)
            assert response.rcode() == 3  # NXDOMAIN: answered
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())


@pytest.mark.skipif(not _has_ipv6_loopback(), reason=NO_IPV6)
def test_an_ipv6_address_is_served_over_udp_and_tcp() -> None:
    settings = DnsSettings(bind_host="::1", bind_port=0)

    async def scenario() -> None:
        import dns.asyncquery
        import dns.message

        ready = asyncio.Event()
        ports: list[int] = []

        def on_ready(server: Any) -> None:
            ports.append(server.address[1])
            ready.set()

        task = asyncio.ensure_future(serve(settings, [], log=Context().log, ready=on_ready))
        await asyncio.wait_for(ready.wait(), 10)
        query = dns.message.make_query(fqdn("10-0-0-1.default.pod"), "A")
        for send in (dns.asyncquery.udp, dns.asyncquery.tcp):
            response = await send(query, "::1", port=ports[0], timeout=5)
            assert answer_set(response) == {(fqdn("10-0-0-1.default.pod"), "A", "10.0.0.1")}
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())

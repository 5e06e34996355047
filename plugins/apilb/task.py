"""The ``apilb`` task: the balancer, the servers learnt from the cluster, status and metrics.

Once listening the task is ready.  Then, through itself (so that it fails
over too), it follows the ``kubernetes`` EndpointSlice in ``default`` (the
one the API servers keep of themselves): every ready endpoint address with
every TCP port of the slice is a server.  A change of that list is applied
at once (new servers are checked, gone ones dropped) and kept in
``<state-dir>/apilb/servers.json`` for the next start.  A slice that cannot
be read is retried with backoff, one warning per failure; a cluster without
that slice is said once (info) and asked again every 30 s.

``/status`` shows every server (address, where it came from, state and
why, connections) under the component's ``details``; ``nodehost status``
prints one line per server; ``/metrics`` has ``nodehost_apilb_*``
(:mod:`nodehost.plugins.apilb.metrics`).
"""

from __future__ import annotations

import weakref
from typing import Any

from nodehost.backoff import Backoff
from nodehost.frozen import frozen

#: The EndpointSlice the API servers keep of themselves.
SLICE_NAME, SLICE_NAMESPACE = "kubernetes", "default"
#: How often the status document's connection counts are refreshed.
REPORT_SECONDS = 1.0
FOLLOW_BACKOFF = Backoff(initial=1.0, maximum=30.0, jitter=0.5)

#: The balancers running in this process, for the metrics collector.
LIVE: weakref.WeakSet[Any] = weakref.WeakSet()


@frozen
class BalancerTask:
    """The component's task (a value: an unchanged plan leaves it running)."""

    source: str
    routed_kubeconfig: str
    component_dir: str
    servers: tuple[tuple[str, str], ...]  # the configured ones; those learnt are read at start
    server_name: str
    bind_host: str
    bind_port: int
    interval: float
    timeout: float

    async def __call__(self, context: Any) -> None:
        import asyncio

        from nodehost.api.client import load_kubeconfig
        from nodehost.plugins.apilb.balancer import Balancer

        endpoint = load_kubeconfig(self.source)
        log = context.log.bind(component=context.name)  # every line names the component

        def tls() -> Any:
            return endpoint.tls

        balancer = Balancer(
            self.known_servers(),
            tls=tls,
            server_name=self.server_name,
            interval=self.interval,
            timeout=self.timeout,
            log=log,
            on_change=lambda: report(context, balancer),
        )
        LIVE.add(balancer)
        jobs: list[asyncio.Task[None]] = []
        try:
            await balancer.serve(self.bind_host, self.bind_port)
            report(context, balancer)
            context.ready()
            jobs = [
                asyncio.create_task(self.follow_cluster(balancer, log)),
                asyncio.create_task(refresh(context, balancer)),
            ]
            await asyncio.gather(*jobs)
        finally:
            for job in jobs:
                job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)
            await balancer.close()

    def known_servers(self) -> list[tuple[str, str]]:
        """The configured servers, then those learnt from the cluster before."""
        from nodehost.plugins.apilb.settings import CLUSTER, read_learnt

        known = {address for address, _ in self.servers}
        learnt = [(a, CLUSTER) for a in read_learnt(self.component_dir) if a not in known]
        return [*self.servers, *learnt]

    async def follow_cluster(self, balancer: Any, log: Any) -> None:
        """Learn the servers from the cluster's EndpointSlice, for ever (see the docstring)."""
        import asyncio

        from nodehost.api.client import ClusterClient, ClusterError
        from nodehost.plugins.apilb.settings import write_learnt

        failures = 0
        while True:
            try:
                async with ClusterClient(self.routed_kubeconfig) as client:
                    async for endpoints in client.follow(
                        "EndpointSlice", SLICE_NAME, SLICE_NAMESPACE
                    ):
                        failures = 0
                        servers = slice_servers(endpoints)
                        if servers and balancer.learn(servers):
                            write_learnt(self.component_dir, servers)
            except ClusterError as error:
                failures += 1
                delay = FOLLOW_BACKOFF.delay(failures)
                if getattr(error, "code", None) == 404:
                    if failures == 1:
                        log.info("the cluster keeps no EndpointSlice of its API servers (yet)",
                                 slice=f"{SLICE_NAMESPACE}/{SLICE_NAME}")  # fmt: skip
                    await asyncio.sleep(FOLLOW_BACKOFF.maximum)
                    continue
                log.warning(
                    "cannot follow the API servers' EndpointSlice; retrying",
                    slice=f"{SLICE_NAMESPACE}/{SLICE_NAME}",
                    error=str(error),
                    retry_in=round(delay, 1),
                )
                await asyncio.sleep(delay)


def slice_servers(endpoints: dict[str, Any]) -> tuple[str, ...]:
    """``host:port`` of every ready endpoint address and TCP port of an EndpointSlice."""
    from nodehost.config.hostport import join_host_port

    ports = [
        port["port"]
        for port in endpoints.get("ports") or ()
        if isinstance(port, dict)
        and isinstance(port.get("port"), int)
        and port.get("protocol", "TCP") == "TCP"
    ]
    found: list[str] = []
    for endpoint in endpoints.get("endpoints") or ():
        if not isinstance(endpoint, dict):
            continue
        if (endpoint.get("conditions") or {}).get("ready") is False:
            continue
        for address in endpoint.get("addresses") or ():
            if isinstance(address, str):
                found += [join_host_port(address, port) for port in ports]
    return tuple(dict.fromkeys(found))


def report(context: Any, balancer: Any) -> None:
    """Publish the servers for ``/status`` (a problem when none can be used)."""
    current = balancer.current()
    servers = balancer.snapshot()
    lines = [
        f"API server {s['address']} ({s['source']}): {s['state']}"
        + (f" ({s['reason']})" if s["reason"] else "")
        + f", {s['connections']} connection(s)"
        + (" <- in use" if current is not None and s["address"] == current.address else "")
        for s in servers
    ]
    problems = [] if current is not None else ["no API server is up"]
    details = {"servers": servers, "using": current.address if current else None, "lines": lines}
    context.report(details, problems)


async def refresh(context: Any, balancer: Any) -> None:
    """Keep the connection counts in ``/status`` current (published when they change)."""
    import asyncio

    shown = balancer.snapshot()
    while True:
        await asyncio.sleep(REPORT_SECONDS)
        now = balancer.snapshot()
        if now != shown:
            report(context, balancer)
            shown = now

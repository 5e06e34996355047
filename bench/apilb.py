"""The node-local API server load balancer: latency it adds, time to resume a watch after failover.

    python bench/apilb.py [--requests 3000] [--failovers 5]

One test API server store is served on three loopback ports (threads of this
process); the balancer runs in a child process of its own, with its default
health settings (every 500 ms +-20%, 1 s timeout), as the ``apilb`` task runs in
nodehost's event loop.

* **added latency**: ``GET /version`` over one kept TLS connection, alternately
  straight to the first server (the baseline) and through the balancer, one
  request at a time; the medians and p99s of both side by side, and the
  difference of the medians (budget: <= 0.2 ms);
* **failover**: nodehost's API client follows a ConfigMap through the
  balancer; the server in use is stopped (its port closed, its connections
  cut) and the ConfigMap changed at once; the time until the client sees the
  change through another server (budget: <= 2 s).  Then a server that stays
  up but whose ``/readyz`` answers 500: the time until the balancer has cut
  the watch and the client has opened it again through another server.  The
  baseline, a client of that one server alone, sees nothing until it returns.

Prints one table; exits 1 when a median is over its budget.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import socket
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LATENCY_BUDGET_MS = 0.2
FAILOVER_BUDGET_S = 2.0


def run_balancer(route: Any, port: int, ready: Any) -> None:
    """The child process: the apilb task on ``port`` until killed."""
    from nodehost.plugins.apilb.task import BalancerTask
    from nodehost.testing.taskcontext import RecordingTaskContext

    async def main() -> None:
        context = RecordingTaskContext("apilb")
        task = BalancerTask(
            source=route.source, routed_kubeconfig=route.kubeconfig_path,
            component_dir=str(Path(route.kubeconfig_path).parent), servers=route.servers,
            server_name=route.server_name, bind_host="127.0.0.1", bind_port=port,
            interval=0.5, timeout=1.0,
        )  # fmt: skip
        running = asyncio.create_task(task(context))
        await context.wait_ready()
        ready.set()
        await running

    try:
        import uvloop  # the 'fast' extra, as nodehost uses it when installed

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())


def tls_socket(address: tuple[str, int], context: ssl.SSLContext, name: str) -> ssl.SSLSocket:
    raw = socket.create_connection(address)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return context.wrap_socket(raw, server_hostname=name)


def one_request(conn: ssl.SSLSocket, name: str) -> float:
    """Seconds for one ``GET /version`` and its whole answer on a kept connection."""
    start = time.perf_counter()
    conn.sendall(f"GET /version HTTP/1.1\r\nHost: {name}\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )  # fmt: skip
    while len(body) < length:
        body += conn.recv(65536)
    return time.perf_counter() - start


def latency(api: Any, route: Any, lb_port: int, requests: int) -> tuple[list[float], list[float]]:
    from nodehost.api.client import load_kubeconfig

    context = load_kubeconfig(route.source).tls
    assert context is not None
    name = route.server_name
    direct = tls_socket(("127.0.0.1", api.ports[0]), context, name)
    through = tls_socket(("127.0.0.1", lb_port), context, name)
    for _ in range(200):  # warm up both paths
        one_request(direct, name)
        one_request(through, name)
    base, balanced = [], []
    for _ in range(requests):
        base.append(one_request(direct, name))
        balanced.append(one_request(through, name))
    direct.close()
    through.close()
    return base, balanced


async def failover(api: Any, kubeconfig: str, sick: bool) -> float:
    """Seconds from the first server's failure to the change seen through another."""
    from nodehost.api.client import ClusterClient

    first = api.ports[0]
    api.put_config_map("default", "bench", {"n": "0"})
    seen: list[tuple[float, str]] = []
    async with ClusterClient(kubeconfig) as client:

        async def follow() -> None:
            async for config_map in client.follow("ConfigMap", "bench", "default"):
                seen.append((time.monotonic(), config_map["data"]["n"]))

        follower = asyncio.create_task(follow())
        while not seen:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.3)  # the watch is open (it follows the GET at once)
        watches = api.watches_opened
        start = time.monotonic()
        if sick:  # it still serves: the watch goes on until the balancer cuts it
            api.set_ready(first, False)
            while api.watches_opened == watches:
                await asyncio.sleep(0.001)
            resumed = time.monotonic()
        else:
            api.go_down(first)
            api.put_config_map("default", "bench", {"n": "1"})
            while not seen or seen[-1][1] != "1":
                await asyncio.sleep(0.001)
            resumed = seen[-1][0]
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
    if sick:
        api.set_ready(first, True)
    else:
        api.come_up(first)
    await asyncio.sleep(1.5)  # the balancer sees it back and prefers it again
    return resumed - start


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--failovers", type=int, default=5)
    args = parser.parse_args(argv)

    from nodehost.pki.kubeconfig import dump_kubeconfig
    from nodehost.plugins.apilb.routing import Route, plan_route
    from nodehost.plugins.apilb.settings import LbSettings
    from nodehost.testing.apiserver import TestApiServer
    from nodehost.testing.ports import free_port

    with tempfile.TemporaryDirectory(prefix="bench-apilb-") as folder:
        lb_port = free_port()
        spawn = multiprocessing.get_context("spawn")
        with TestApiServer(Path(folder) / "api", listeners=3) as api:
            servers = tuple(f"127.0.0.1:{port}" for port in api.ports[1:])
            settings = LbSettings("auto", servers, "127.0.0.1", lb_port, 0.5, 1.0)
            route = plan_route(settings, str(api.admin_kubeconfig), str(Path(folder) / "apilb"))
            assert isinstance(route, Route), route
            Path(route.kubeconfig_path).parent.mkdir(parents=True)
            Path(route.kubeconfig_path).write_bytes(dump_kubeconfig(route.kubeconfig))
            ready = spawn.Event()
            child = spawn.Process(target=run_balancer, args=(route, lb_port, ready), daemon=True)
            child.start()
            try:
                if not ready.wait(30):
                    raise SystemExit("the balancer did not start")
                base, balanced = latency(api, route, lb_port, args.requests)
                died = [asyncio.run(failover(api, route.kubeconfig_path, False))
                        for _ in range(args.failovers)]  # fmt: skip
                sick = [asyncio.run(failover(api, route.kubeconfig_path, True))
                        for _ in range(args.failovers)]  # fmt: skip
            finally:
                child.kill()
                child.join()
    added = ms(balanced, 0.5) - ms(base, 0.5)
    rows = [
        ("measure", "baseline", "through apilb", "ratio", "budget"),
        ("GET /version median (ms)", f"{ms(base, 0.5):.3f}", f"{ms(balanced, 0.5):.3f}",
         f"{ms(balanced, 0.5) / ms(base, 0.5):.2f}x", ""),
        ("GET /version p99 (ms)", f"{ms(base, 0.99):.3f}", f"{ms(balanced, 0.99):.3f}",
         f"{ms(balanced, 0.99) / ms(base, 0.99):.2f}x", ""),
        ("added latency, median (ms)", "0", f"{added:.3f}", "", f"<= {LATENCY_BUDGET_MS}"),
        ("server stopped -> watch resumed, median (s)", "never (until it returns)",
         f"{statistics.median(died):.2f} (max {max(died):.2f})", "", f"<= {FAILOVER_BUDGET_S}"),
        ("/readyz 500 -> watch resumed, median (s)", "never (until it returns)",
         f"{statistics.median(sick):.2f} (max {max(sick):.2f})", "", f"<= {FAILOVER_BUDGET_S}"),
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print(f"({args.requests} requests each way, {args.failovers} failovers of each kind, "
          f"python {sys.version.split()[0]})")  # fmt: skip
    over = added > LATENCY_BUDGET_MS or max(statistics.median(died), statistics.median(sick)) > (
        FAILOVER_BUDGET_S
    )
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())

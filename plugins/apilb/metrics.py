"""The balancer's metrics, read from the running balancers at scrape time.

* ``nodehost_apilb_server_up`` {server, source}: 1 up, 0 down, -1 not checked yet;
* ``nodehost_apilb_server_in_use`` {server}: 1 for the server new connections go to;
* ``nodehost_apilb_server_open_connections`` {server}: connections open through the balancer;
* ``nodehost_apilb_server_connections_total`` {server}: connections made since start;
* ``nodehost_apilb_refused_connections_total``: clients closed because no server answered.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_STATES = {"up": 1, "down": 0, "unknown": -1}


class BalancerCollector:
    """prometheus_client collector over :data:`nodehost.plugins.apilb.task.LIVE`."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        from nodehost.plugins.apilb.task import LIVE

        up = GaugeMetricFamily(
            "nodehost_apilb_server_up",
            "1 if the API server passed its last check, 0 if down, -1 if not checked yet.",
            labels=["server", "source"],
        )
        in_use = GaugeMetricFamily(
            "nodehost_apilb_server_in_use",
            "1 for the API server new connections go to.",
            labels=["server"],
        )
        open_now = GaugeMetricFamily(
            "nodehost_apilb_server_open_connections",
            "Connections open to the API server through the balancer.",
            labels=["server"],
        )
        made = CounterMetricFamily(
            "nodehost_apilb_server_connections",
            "Connections made to the API server through the balancer.",
            labels=["server"],
        )
        refused = CounterMetricFamily(
            "nodehost_apilb_refused_connections",
            "Client connections closed because no API server could be reached.",
        )
        total_refused = 0
        for balancer in list(LIVE):
            current = balancer.current()
            total_refused += balancer.refused
            for server in balancer.servers:
                up.add_metric([server.address, server.source], _STATES[server.state])
                in_use.add_metric([server.address], int(server is current))
                open_now.add_metric([server.address], len(server.links))
                made.add_metric([server.address], server.connections_total)
        refused.add_metric([], total_refused)
        yield from (up, in_use, open_now, made, refused)

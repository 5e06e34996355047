"""A small fleet of nodes (the real bootstrap code and API client, one process) against one
test API server: they join through an outage with jittered retries, and certificates issued
together are renewed apart.  ``bench/scale.py`` measures the same with 1,000 nodes."""

from __future__ import annotations

import asyncio
import datetime
import re
import threading
from pathlib import Path

from clusterrun import CONFIG_MAP, NAMESPACE

from nodehost.plugins.bootstrap.join import BootstrapSettings, run_bootstrap
from nodehost.plugins.bootstrap.rotation import RENEW_WINDOW, Tracked
from nodehost.testing.apiserver import TestApiServer

NODES = 6


def settings(api: TestApiServer, root: Path, name: str) -> BootstrapSettings:
    return BootstrapSettings(
        config_dir=root / name,
        bootstrap_kubeconfig=api.bootstrap_kubeconfig,
        config_map=CONFIG_MAP,
        namespace=NAMESPACE,
        node_name=name,
        hostnames=(name,),
        listen_provided=False,
        listen_host="",
        volume_dir=None,
        timeout=120.0,
        serving_wait=60.0,
    )


def test_a_fleet_joins_through_an_outage_retrying_out_of_step(tmp_path: Path) -> None:
    api = TestApiServer(tmp_path / "api")  # down: the nodes start before it
    api.set_approver("approve")
    api.put_config_map(NAMESPACE, CONFIG_MAP, {"node-config.yaml": "kind: NodeConfig\n"})
    delays: dict[str, list[float]] = {f"node-{i}": [] for i in range(NODES)}
    retried = threading.Event()

    def say_for(name: str):
        def say(message: str) -> None:
            found = re.search(r"retrying in ([0-9.]+)s", message)
            if found:
                delays[name].append(float(found[1]))
                if all(len(seen) >= 2 for seen in delays.values()):
                    retried.set()

        return say

    async def fleet() -> None:
        joins = [
            asyncio.create_task(run_bootstrap(settings(api, tmp_path / "nodes", n), say_for(n)))
            for n in delays
        ]
        await asyncio.to_thread(retried.wait, 60)
        api.come_up()
        await asyncio.gather(*joins)

    try:
        asyncio.run(fleet())
    finally:
        api.go_down()
    for name in delays:
        assert (tmp_path / "nodes" / name / "node-config.yaml").exists()
        assert (tmp_path / "nodes" / name / "certificates" / "kubelet-client-current.pem").exists()
    second = [seen[1] for seen in delays.values()]
    assert len(set(second)) > 1  # the same attempt waits a different time on different nodes
    signed = [csr for csr in api.csrs() if csr["status"].get("certificate")]
    assert len(signed) == 2 * NODES  # a client and a serving certificate each, one CSR apiece


def test_certificates_issued_together_are_renewed_at_different_points_of_the_window() -> None:
    """Each certificate draws its own point in 70-90 % of its lifetime (as the kubelet)."""
    issued = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

    class Pair:
        not_before = issued
        not_after = issued + datetime.timedelta(hours=1)

        def lifetime_seconds(self) -> float:
            return 3600.0

    points = [Tracked("client", "kubelet-client", True).renew_at(Pair()) for _ in range(200)]
    seconds = [(point - issued).total_seconds() for point in points if point is not None]
    assert all(RENEW_WINDOW[0] * 3600 <= s <= RENEW_WINDOW[1] * 3600 for s in seconds)
    assert len({round(s) for s in seconds}) > 150
    window = (RENEW_WINDOW[1] - RENEW_WINDOW[0]) * 3600
    assert max(seconds) - min(seconds) > 0.8 * window  # they cover the window, not one corner

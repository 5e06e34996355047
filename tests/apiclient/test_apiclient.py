"""The API client: retries with backoff, Retry-After, final errors, TLS checks, resuming watches."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from nodehost.apiclient import (
    ClusterClient,
    ClusterRefused,
    ClusterTLSError,
    ClusterUnreachable,
)
from nodehost.backoff import Backoff
from nodehost.pki.kubeconfig import dump_kubeconfig
from nodehost.testing.apiserver import TestApiServer, TestCA

FAST = Backoff(initial=0.05, maximum=0.2)


def client(api: TestApiServer, deadline: float = 10, **kwargs) -> ClusterClient:
    return ClusterClient(
        str(api.admin_kubeconfig), deadline=time.monotonic() + deadline, backoff=FAST, **kwargs
    )


async def read_config_map(c: ClusterClient) -> dict:
    async with c:
        return await c.get("ConfigMap", "node-config", "openshift-node")


def test_a_429_is_retried_after_the_servers_retry_after(api) -> None:
    api.fail_next(1, 429, retry_after=1)
    retries: list[str] = []
    got = asyncio.run(read_config_map(client(api, on_retry=retries.append)))
    assert got["metadata"]["name"] == "node-config"
    [retry] = retries
    assert retry.endswith("retrying in 1.0s")  # the server's delay; FAST backs off <= 0.2s


def test_5xx_answers_are_retried_until_one_succeeds(api) -> None:
    api.fail_next(3, 503)
    retries: list[str] = []
    got = asyncio.run(read_config_map(client(api, on_retry=retries.append)))
    assert got["kind"] == "ConfigMap"
    assert len(retries) == 3 and "503" in retries[0]


def test_a_403_is_final_and_not_retried(api) -> None:
    api.fail_next(1, 403)  # injected codes other than 429 come back as given
    with pytest.raises(ClusterRefused) as caught:
        asyncio.run(read_config_map(client(api)))
    assert caught.value.code == 403
    assert len(api.requests) == 1


def test_a_404_is_final_and_names_the_object(api) -> None:
    async def missing() -> None:
        async with client(api) as c:
            await c.get("ConfigMap", "nope", "openshift-node")

    with pytest.raises(ClusterRefused, match='"nope" not found') as caught:
        asyncio.run(missing())
    assert caught.value.code == 404


def test_an_unreachable_server_gives_up_at_the_deadline(api) -> None:
    """Retries stop where the next delay would pass the deadline, and the count is reported."""
    api.go_down()
    retries: list[str] = []
    with pytest.raises(ClusterUnreachable, match=r"gave up after (\d+) attempt") as caught:
        asyncio.run(read_config_map(client(api, deadline=2, on_retry=retries.append)))
    delays = [float(r.rsplit("retrying in ", 1)[1].rstrip("s")) for r in retries]
    assert sum(delays) <= 2.0
    assert f"gave up after {len(retries) + 1} attempt(s)" in str(caught.value)


def test_a_server_that_comes_up_late_is_reached(api) -> None:
    api.go_down()
    retries: list[str] = []

    def retried(message: str) -> None:
        retries.append(message)
        if len(retries) == 2:
            api.come_up()  # after two failed attempts

    assert asyncio.run(read_config_map(client(api, on_retry=retried)))["kind"] == "ConfigMap"
    assert len(retries) == 2


def test_a_certificate_from_another_ca_fails_at_once(api, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "wrong.kubeconfig"
    kubeconfig.write_bytes(
        dump_kubeconfig(api.token_kubeconfig("abcdef.0123456789abcdef", TestCA().pem))
    )
    retries: list[str] = []
    wrong = ClusterClient(
        str(kubeconfig), deadline=time.monotonic() + 10, backoff=FAST, on_retry=retries.append
    )
    with pytest.raises(ClusterTLSError, match="not trusted"):
        asyncio.run(read_config_map(wrong))
    assert retries == []  # no second attempt: retrying cannot fix a wrong CA


def test_a_kubeconfig_that_does_not_load_is_one_clear_error(tmp_path: Path) -> None:
    from nodehost.apiclient import ClusterError

    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("clusters: [\n")
    with pytest.raises(ClusterError, match=f"cannot load kubeconfig {broken}"):
        ClusterClient(str(broken))


def test_wait_for_resumes_after_the_watch_is_dropped(api) -> None:
    def later() -> None:
        api.wait_for_watches(1)
        api.drop_watches()
        api.wait_for_watches(2)  # the client watches again
        api.put_config_map("openshift-node", "node-config", {"ready": "yes"})

    async def wait() -> dict:
        async with client(api) as c:
            return await c.wait_for(
                "ConfigMap",
                "node-config",
                lambda obj: (obj.get("data") or {}).get("ready") == "yes",
                "openshift-node",
            )

    threading.Thread(target=later).start()
    assert asyncio.run(wait())["data"] == {"ready": "yes"}

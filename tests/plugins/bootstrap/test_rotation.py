"""The ``bootstrap`` component renews short-lived certificates while the node keeps running."""

from __future__ import annotations

import datetime
import json
import signal
import time
from pathlib import Path

import pytest
from clusterrun import http_get, start_serving, wait_for

from nodehost.plugins.bootstrap.rotation import RENEWAL_BACKOFF

LIFETIME = 6


@pytest.fixture
def running_node(api, start_args, start_env, tmp_path: Path):
    """A bootstrapped node with the bootstrap component, certificates living LIFETIME seconds."""
    api.default_lifetime = LIFETIME
    api.set_approver("approve")
    process, base = start_serving(
        start_args(components="kubelet,proxy,bootstrap", health="127.0.0.1:0"),
        start_env,
        tmp_path / "state",
    )
    try:
        wait_for(lambda: http_get(f"{base}/readyz")[0] == 200, "the node to be ready")
        yield process, base
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)


def bootstrap_status(base: str) -> dict:
    document = json.loads(http_get(f"{base}/status")[1])
    return next(c for c in document["components"] if c["name"] == "bootstrap")


def component_status(base: str, name: str) -> dict:
    document = json.loads(http_get(f"{base}/status")[1])
    return next(c for c in document["components"] if c["name"] == name)


def pid_of(base: str, name: str) -> int | None:
    return component_status(base, name)["pid"]


def test_certificates_are_renewed_without_stopping_the_node(running_node, node_dir: Path) -> None:
    process, base = running_node
    link = node_dir / "certificates" / "kubelet-client-current.pem"
    first = link.resolve()
    wait_for(lambda: bootstrap_status(base)["details"]["rotations"] >= 2, "two renewals")
    assert link.resolve() != first
    assert process.poll() is None
    wait_for(lambda: http_get(f"{base}/readyz")[0] == 200, "the node to be ready again")
    names = {c["name"] for c in bootstrap_status(base)["details"]["certificates"]}
    assert names == {"client", "serving"}


def test_the_kubelet_is_restarted_after_a_rotation_and_the_node_stays_up(running_node) -> None:
    process, base = running_node
    kubelet_pid, proxy_pid = pid_of(base, "kubelet"), pid_of(base, "proxy")
    rotations = bootstrap_status(base)["details"]["rotations"]
    wait_for(lambda: bootstrap_status(base)["details"]["rotations"] > rotations, "a renewal")
    wait_for(lambda: pid_of(base, "kubelet") not in (None, kubelet_pid), "a new kubelet")
    wait_for(lambda: http_get(f"{base}/readyz")[0] == 200, "the node to be ready again")
    assert process.poll() is None
    assert pid_of(base, "proxy") == proxy_pid
    kubelet = component_status(base, "kubelet")
    assert kubelet["restarts"] >= 1 and not kubelet["crash_looping"]


def test_certificate_expiry_is_in_status_and_metrics(running_node) -> None:
    _, base = running_node
    [client] = [
        c for c in bootstrap_status(base)["details"]["certificates"] if c["name"] == "client"
    ]
    assert 0 < client["remaining_seconds"] <= LIFETIME + 1
    from prometheus_client.parser import text_string_to_metric_families

    metrics = text_string_to_metric_families(http_get(f"{base}/metrics")[1])
    found = {
        (sample.name, sample.labels["certificate"])
        for family in metrics
        for sample in family.samples
        if sample.name.startswith("nodehost_certificate_")
        and sample.labels["component"] == "bootstrap"
    }
    assert ("nodehost_certificate_remaining_seconds", "client") in found
    assert ("nodehost_certificate_expiry_timestamp_seconds", "serving") in found


def test_nodehost_status_prints_certificate_expiry(running_node) -> None:
    import subprocess
    import sys
    from pathlib import Path

    _, base = running_node
    address = base.removeprefix("http://")
    exe = str(Path(sys.executable).parent / "nodehost")
    done = subprocess.run([exe, "status", f"--address={address}"], capture_output=True, text=True)
    assert "certificate client (bootstrap): expires" in done.stdout
    assert "certificate serving (bootstrap): expires" in done.stdout


def test_a_certificate_that_cannot_be_renewed_makes_readyz_say_so(api, running_node) -> None:
    _, base = running_node
    api.set_approver("deny")
    body = wait_for(lambda: failing_readyz(base), "readyz to fail")
    assert "[-]bootstrap not ready: client certificate" in body
    assert "[+]kubelet ready" in body


def test_renewal_recovers_once_requests_are_approved_again(api, running_node) -> None:
    _, base = running_node
    api.set_approver("deny")
    wait_for(lambda: failing_readyz(base), "readyz to fail")
    api.set_approver("approve")
    # The denied renewals back off (2, 4, 8 s... with jitter): readiness comes back with the
    # next attempt, which the node's status names (``retry_at``); wait for it and 30 s more.
    limit = [time.monotonic() + 30.0]

    def ready_again() -> bool:
        if http_get(f"{base}/readyz")[0] == 200:
            return True
        for status in bootstrap_status(base)["details"]["certificates"]:
            if status["name"] == "client" and "retry_at" in status:
                retry_at = datetime.datetime.fromisoformat(status["retry_at"])
                retry_in = (retry_at - datetime.datetime.now(datetime.UTC)).total_seconds()
                limit[0] = max(limit[0], time.monotonic() + retry_in + 30.0)
        assert time.monotonic() < limit[0], "readyz did not pass again within 30 s of a retry"
        return False

    wait_for(ready_again, "readyz to pass again", timeout=RENEWAL_BACKOFF.maximum * 2)
    [client] = [
        c for c in bootstrap_status(base)["details"]["certificates"] if c["name"] == "client"
    ]
    assert client["remaining_seconds"] > 0


def failing_readyz(base: str) -> str | None:
    """The verbose /readyz body while it answers 503, else None."""
    code, body = http_get(f"{base}/readyz?verbose")
    return body if code == 503 else None

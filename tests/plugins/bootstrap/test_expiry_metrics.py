"""Certificates a component reports become metrics; problems it reports make it unready."""

from __future__ import annotations

import asyncio

from nodehost.daemon.endpoints import readyz, render_metrics
from nodehost.daemon.task import HostTaskContext


def component(name: str, ready: bool, details: dict, reason: str = "ready") -> dict:
    return {
        "name": name, "ready": ready, "up": True, "restarts": 0, "last_exit": None,
        "start_latency_seconds": 0.1, "crash_looping": False, "reason": reason,
        "details": details,
    }  # fmt: skip


def test_reported_certificates_become_expiry_gauges() -> None:
    certificates = [
        {"name": "client", "not_after_timestamp": 1796040669.0, "remaining_seconds": 42.5},
        {"name": "serving", "present": False},
    ]
    document = {
        "ready": True, "uptime_seconds": 1.0,
        "components": [component("bootstrap", True, {"certificates": certificates})],
    }  # fmt: skip
    from prometheus_client.parser import text_string_to_metric_families

    text = render_metrics(document)
    samples = {
        (sample.name, sample.labels["certificate"]): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith("nodehost_certificate")
        and sample.labels["component"] == "bootstrap"
    }
    assert samples == {
        ("nodehost_certificate_expiry_timestamp_seconds", "client"): 1796040669.0,
        ("nodehost_certificate_remaining_seconds", "client"): 42.5,
    }


def test_no_reported_certificates_means_no_certificate_metrics() -> None:
    document = {"ready": True, "uptime_seconds": 1.0, "components": [component("x", True, {})]}
    assert "nodehost_certificate" not in render_metrics(document)


def test_a_task_reporting_problems_is_listed_by_readyz() -> None:
    async def scenario() -> list[str]:
        messages: list[str] = []
        context = HostTaskContext("bootstrap", None, messages.append)
        context.report({"certificates": []}, ["client certificate expires in 3s"])
        assert context.problems == ("client certificate expires in 3s",)
        context.report({"certificates": []}, [])
        return messages

    assert asyncio.run(scenario()) == ["client certificate expires in 3s", "ready"]
    document = {
        "ready": False, "uptime_seconds": 1.0,
        "components": [component("bootstrap", False, {}, "client certificate expires in 3s")],
    }  # fmt: skip
    answer = readyz(document, verbose=True)
    assert answer.status == 503
    assert b"[-]bootstrap not ready: client certificate expires in 3s" in answer.body

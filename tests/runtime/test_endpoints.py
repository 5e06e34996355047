"""Rendering of /readyz and /metrics from a status document (no server needed)."""

from __future__ import annotations

from nodehost.runtime.endpoints import readyz, render_metrics
from nodehost.runtime.server import parse_query


def component(name: str, ready: bool, **extra) -> dict:
    base = {
        "name": name,
        "state": "ready" if ready else "backoff",
        "ready": ready,
        "up": ready,
        "restarts": 0,
        "crash_looping": False,
        "last_exit": None,
        "start_latency_seconds": 0.25 if ready else None,
        "reason": "ready" if ready else "crash loop, exit code 1",
    }
    base.update(extra)
    return base


DOCUMENT = {
    "ready": False,
    "uptime_seconds": 12.5,
    "components": [
        component("kubelet", True),
        component(
            'we"ird',
            False,
            restarts=4,
            crash_looping=True,
            last_exit={"code": -9, "description": "killed by SIGKILL", "seconds_ago": 1},
        ),
    ],
}


def test_readyz_verbose_names_each_component_and_its_reason() -> None:
    response = readyz(DOCUMENT, verbose=True)
    assert response.status == 503
    assert response.body.decode().splitlines() == [
        "[+]kubelet ready",
        '[-]we"ird not ready: crash loop, exit code 1',
        "readyz check failed",
    ]


def test_metrics_have_help_type_and_escaped_labels() -> None:
    lines = render_metrics(DOCUMENT).splitlines()
    assert "nodehost_ready 0" in lines
    assert 'nodehost_component_restarts_total{component="we\\"ird"} 4' in lines
    assert 'nodehost_component_last_exit_code{component="we\\"ird"} -9' in lines
    assert 'nodehost_component_crash_looping{component="we\\"ird"} 1' in lines
    assert 'nodehost_component_start_latency_seconds{component="kubelet"} 0.25' in lines
    # absent values are left out, not invented
    assert not any(
        line.startswith('nodehost_component_last_exit_code{component="kubelet"') for line in lines
    )
    for name in ("nodehost_component_up", "nodehost_component_ready"):
        assert f"# TYPE {name} gauge" in lines


def test_query_strings_are_parsed_with_bare_keys() -> None:
    assert parse_query("verbose&exclude=a%20b") == {"verbose": "", "exclude": "a b"}

"""Rendering of /readyz and /metrics from a status document (no server needed)."""

from __future__ import annotations

from nodehost.daemon.endpoints import livez, readyz, render_metrics
from nodehost.daemon.server import parse_query


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
    assert "nodehost_ready 0.0" in lines
    assert 'nodehost_component_restarts_total{component="we\\"ird"} 4.0' in lines
    assert 'nodehost_component_last_exit_code{component="we\\"ird"} -9.0' in lines
    assert 'nodehost_component_crash_looping{component="we\\"ird"} 1.0' in lines
    assert 'nodehost_component_start_latency_seconds{component="kubelet"} 0.25' in lines
    # absent values are left out, not invented
    assert not any(
        line.startswith('nodehost_component_last_exit_code{component="kubelet"') for line in lines
    )
    for name in ("nodehost_component_up", "nodehost_component_ready"):
        assert f"# TYPE {name} gauge" in lines


def test_query_strings_are_parsed_with_bare_keys() -> None:
    assert parse_query("verbose&exclude=a%20b") == {"verbose": "", "exclude": "a b"}
    assert parse_query("exclude=a&exclude=b")["exclude"] == "a,b"


def test_large_counts_keep_every_digit() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    document = {**DOCUMENT, "components": [component("kubelet", True, restarts=1234567)]}
    families = {f.name: f for f in text_string_to_metric_families(render_metrics(document))}
    [sample] = families["nodehost_component_restarts"].samples
    assert sample.value == 1234567
    assert "1.23457e+06" not in render_metrics(document)


def test_readyz_can_exclude_components_as_kube_apiserver_does() -> None:
    excluded = readyz({**DOCUMENT, "state": "starting"}, True, frozenset({'we"ird'}))
    assert excluded.status == 200
    assert excluded.body.decode().splitlines() == [
        "[+]kubelet ready",
        '[+]we"ird excluded: ok',
        "readyz check passed",
    ]
    assert readyz({**DOCUMENT, "state": "stopping"}, False, frozenset({'we"ird'})).status == 503


def test_readyz_warns_about_an_exclude_that_matches_no_component() -> None:
    response = readyz(DOCUMENT, True, frozenset({'we"ird', "nosuch", "kubelett"}))
    assert response.body.decode().splitlines()[-2:] == [
        'warn: some health checks cannot be excluded: no matches for "kubelett", "nosuch"',
        "readyz check passed",
    ]


def test_livez_fails_while_a_component_crash_loops() -> None:
    response = livez(DOCUMENT, verbose=True)
    assert response.status == 500
    assert response.body.decode().splitlines() == [
        "[+]ping ok",
        "[+]kubelet ok",
        '[-]we"ird crash looping: crash loop, exit code 1',
        "livez check failed",
    ]
    healthy = {**DOCUMENT, "components": [component("kubelet", True)]}
    assert livez(healthy, verbose=False).status == 200

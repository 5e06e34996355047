"""/healthz, /readyz, /metrics, /status over real HTTP, and ``nodehost status`` reading them."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hostrun import HostRun, free_port, http_get, wait_for

from nodehost.cli.status import status


def gated_host(tmp_path_factory, open_gate: bool):
    """A running host: ``steady`` is ready, ``gated`` waits for a file (created if ``open_gate``)."""
    directory = tmp_path_factory.mktemp("server")
    gate = directory / "gate"
    components = [
        {"name": "steady", "argv": ["sleep", "600"]},
        {"name": "gated", "argv": ["sleep", "600"], "ready": {"file": str(gate)}},
    ]
    run = HostRun(directory, components, [], None)
    run.gate = gate
    try:
        run.wait_hook("component_ready", "steady")
        if open_gate:
            gate.touch()
            run.wait_ready()
        yield run
    finally:
        run.cleanup()


@pytest.fixture(scope="module")
def unready(tmp_path_factory):
    yield from gated_host(tmp_path_factory, open_gate=False)


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    yield from gated_host(tmp_path_factory, open_gate=True)


def test_healthz_answers_ok(gated) -> None:
    assert http_get(gated.url("/healthz")) == (200, "ok")


def test_readyz_is_503_while_a_component_is_not_ready(unready) -> None:
    assert http_get(unready.url("/readyz")) == (503, "not ready")
    code, body = http_get(unready.url("/readyz?verbose"))
    assert code == 503
    assert "[+]steady ready" in body
    assert f"[-]gated not ready: waiting for file {unready.gate}" in body
    assert body.rstrip().endswith("readyz check failed")


def test_status_cli_exits_1_while_not_ready(unready) -> None:
    result = CliRunner().invoke(status, ["--address", unready.address()])
    assert result.exit_code == 1
    assert result.output.startswith("node: not ready (starting)")
    row = next(line for line in result.output.splitlines() if line.startswith("gated"))
    assert row.split()[1:3] == ["starting", "no"]


def test_readyz_is_200_once_every_component_is_ready(gated) -> None:
    assert http_get(gated.url("/readyz")) == (200, "ok")
    code, body = http_get(gated.url("/readyz?verbose"))
    assert code == 200
    assert body.splitlines() == ["[+]steady ready", "[+]gated ready", "readyz check passed"]


def test_metrics_are_prometheus_text(gated) -> None:
    code, body = http_get(gated.url("/metrics"))
    assert code == 200
    lines = body.splitlines()
    assert "nodehost_ready 1.0" in lines
    assert 'nodehost_component_up{component="gated"} 1.0' in lines
    assert 'nodehost_component_ready{component="steady"} 1.0' in lines
    assert 'nodehost_component_restarts_total{component="gated"} 0.0' in lines
    assert "# TYPE nodehost_component_restarts_total counter" in lines
    latency = [line for line in lines if line.startswith("nodehost_component_start_latency")]
    assert len(latency) == 2 and all(float(line.split()[-1]) >= 0 for line in latency)
    samples = [line for line in lines if line and not line.startswith("#")]
    assert all(len(line.rsplit(" ", 1)) == 2 for line in samples)


def test_status_is_json_with_each_component(gated) -> None:
    code, body = http_get(gated.url("/status"))
    assert code == 200
    document = json.loads(body)
    assert document["ready"] is True
    assert document["pid"] == gated.pid
    by_name = {c["name"]: c for c in document["components"]}
    assert set(by_name) == {"steady", "gated"}
    gated_status = by_name["gated"]
    assert gated_status["state"] == "ready"
    started = {e["name"]: e["pid"] for e in gated.hooks() if e["hook"] == "component_started"}
    assert gated_status["pid"] == started["gated"]
    assert gated_status["restarts"] == 0
    assert gated_status["backoff_remaining_seconds"] is None
    assert gated_status["last_exit"] is None
    assert gated_status["readiness"] == f"file {gated.gate}"


def test_status_cli_prints_a_table_and_exits_0_when_ready(gated) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nodehost.cli.status", "--address", gated.address()],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("node: ready; nodehost pid ")
    assert lines[1].split()[:3] == ["COMPONENT", "STATE", "READY"]
    assert [line.split()[0] for line in lines[2:]] == ["steady", "gated"]


def test_status_cli_json_prints_the_document(gated) -> None:
    result = CliRunner().invoke(status, ["--address", gated.address(), "--json"])
    assert result.exit_code == 0
    assert json.loads(result.output)["ready"] is True


def test_unknown_path_is_404_and_post_is_405(gated) -> None:
    assert http_get(gated.url("/nope"))[0] == 404
    host, port = gated.address().rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(b"POST /status HTTP/1.1\r\nHost: x\r\n\r\n")
        assert connection.recv(100).startswith(b"HTTP/1.1 405 ")


def test_oversized_request_is_refused_and_the_server_keeps_serving(gated) -> None:
    host, port = gated.address().rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(b"GET /status HTTP/1.1\r\nX-Junk: " + b"a" * 20000 + b"\r\n\r\n")
        assert connection.recv(100).startswith(b"HTTP/1.1 431 ")
    assert http_get(gated.url("/healthz")) == (200, "ok")


def test_status_cli_says_clearly_when_nothing_listens() -> None:
    port = free_port()
    result = subprocess.run(
        [sys.executable, "-m", "nodehost.cli.status", "--address", f"127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: no nodehost answers at 127.0.0.1:{port} (Connection refused); "
        "is it running? (see --address)"
    )


def test_status_cli_rejects_a_malformed_address() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nodehost.cli.status", "--address", "localhost"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "--address" in result.stderr


def test_taken_health_address_is_a_clear_error(host_run) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        run = host_run(
            [{"name": "sleeper", "argv": ["sleep", "600"]}], "--health-address", f"127.0.0.1:{port}"
        )
        assert run.wait() == 1
    assert f"error: cannot serve health and status on 127.0.0.1:{port}" in run.stderr()
    assert run.hooks() == []


def test_status_shows_backoff_and_last_exit_of_a_crashing_component(host_run, tmp_path: Path):
    component = {
        "name": "flappy",
        "argv": ["sh", "-c", "exit 3"],
    }
    run = host_run([component], "--initial-backoff", "30", "--crash-loop-limit", "0")
    run.wait_hook("component_exited", "flappy")

    def backing_off():
        document = json.loads(http_get(run.url("/status"))[1])
        flappy = document["components"][0]
        return flappy if flappy["state"] == "backoff" else None

    flappy = wait_for(backing_off, what="backoff state")
    assert flappy["last_exit"]["code"] == 3
    assert flappy["backoff_remaining_seconds"] > 0
    assert flappy["up"] is False
    run.signal(signal.SIGTERM)
    assert run.wait() == 0


def test_readyz_of_one_component_and_with_one_excluded(unready) -> None:
    assert http_get(unready.url("/readyz/steady")) == (200, "ok")
    assert http_get(unready.url("/readyz/gated"))[0] == 503
    assert http_get(unready.url("/readyz?exclude=gated")) == (200, "ok")
    code, body = http_get(unready.url("/readyz?exclude=gated&verbose"))
    assert (code, body.splitlines()[1]) == (200, "[+]gated excluded: ok")
    assert http_get(unready.url("/readyz/nonexistent"))[0] == 404


def test_livez_verbose_lists_the_host_and_every_component(unready) -> None:
    code, body = http_get(unready.url("/livez?verbose"))
    assert code == 200
    assert body.splitlines() == ["[+]ping ok", "[+]steady ok", "[+]gated ok", "livez check passed"]


def test_live_metrics_parse_with_prometheus_clients_parser(gated) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    code, body = http_get(gated.url("/metrics"))
    assert code == 200
    families = {family.name: family for family in text_string_to_metric_families(body)}
    [build] = families["nodehost_build_info"].samples
    assert build.value == 1 and build.labels["version"]
    assert families["process_resident_memory_bytes"].samples[0].value > 0
    assert families["process_cpu_seconds"].type == "counter"
    up = {s.labels["component"]: s.value for s in families["nodehost_component_up"].samples}
    assert up == {"steady": 1.0, "gated": 1.0}
    assert families["nodehost_ready"].samples[0].value == 1.0

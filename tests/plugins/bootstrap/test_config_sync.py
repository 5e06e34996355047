"""A bootstrapped node follows its config map: kubectl edits it, the node applies, rejects or
rolls back, and labels and annotates its Node."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from clusterrun import CONFIG_MAP, NAMESPACE, NODE_NAME, http_get, start_serving, wait_for

from nodehost.testing.apiserver import TestApiServer
from nodehost.testing.ports import free_port

WAIT = 30.0
CONFIG_MAP_PATH = f"/api/v1/namespaces/{NAMESPACE}/configmaps"


@dataclass
class Node:
    """A running bootstrapped node: its process, health address, config and API server."""

    process: subprocess.Popen[str]
    base: str
    api: TestApiServer
    node_dir: Path
    state_dir: Path
    config: dict[str, Any]
    kubectl: Callable[..., subprocess.CompletedProcess[str]]
    workdir: Path
    stderr: str = ""

    def status(self) -> dict[str, Any]:
        return json.loads(http_get(f"{self.base}/status")[1])

    def component(self, name: str) -> dict[str, Any]:
        return next(c for c in self.status()["components"] if c["name"] == name)

    def pid(self, name: str) -> int | None:
        return self.component(name)["pid"]

    def last_apply(self) -> dict[str, Any] | None:
        return self.status()["configuration"]["last_apply"]

    def ready(self) -> bool:
        return http_get(f"{self.base}/readyz")[0] == 200

    def apply(self, config: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        """``kubectl apply`` the config map with ``config`` as its node-config.yaml."""
        manifest = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
            "data": {"node-config.yaml": yaml.safe_dump(config)},
        }
        path = self.workdir / f"config-map-{time.monotonic_ns()}.yaml"
        path.write_text(yaml.safe_dump(manifest))
        done = self.admin("apply", "--validate=false", "-f", str(path))
        assert done.returncode == 0, done.stderr
        return done

    def admin(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.kubectl("--kubeconfig", str(self.api.admin_kubeconfig), *args)

    def wait_for_apply(self, result: str, generation: int) -> dict[str, Any]:
        def settled() -> dict[str, Any] | None:
            last = self.last_apply()
            return last if last and last["generation"] == generation else None

        last = wait_for(settled, f"a config apply ending at generation {generation}")
        assert last["result"] == result, last
        return last

    def events(self) -> list[dict[str, Any]]:
        done = self.admin("get", "events", "-n", "default", "-o", "json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["items"]


def node_config(kubelet_port: int, proxy_port: int, dns_port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "NodeConfig",
        "nodeName": "replaced-by-bootstrap",
        "nodeIP": "127.0.0.1",
        "servingInfo": {"bindAddress": "127.0.0.1:10250"},
        "masterKubeConfig": "node.kubeconfig",
        "dnsDomain": "cluster.local",
        "dnsIP": "10.0.0.10",
        "dnsBindAddress": f"127.0.0.1:{dns_port}",
        "dnsNameservers": [],
        "networkConfig": {"networkPluginName": ""},
        "volumeDirectory": "volumes",
        "imageConfig": {"format": "openshift/origin-${component}:${version}"},
        "kubeletArguments": {
            "fail-swap-on": ["false"],
            "healthz-port": [str(kubelet_port)],
            "max-pods": ["110"],
        },
        "proxyArguments": {"healthz-port": [str(proxy_port)]},
    }


def start_node(
    api: TestApiServer,
    start_args,
    start_env,
    kubectl,
    tmp_path: Path,
    node_dir: Path,
    *extra: str,
    rollback_after: str = "2m",
) -> Node:
    """A bootstrapped node, ready.  ``rollback_after`` is short only where a test waits for
    the rollback of a kubelet that never gets ready: elsewhere a slow machine's kubelet
    must not be rolled back."""
    config = node_config(free_port(), free_port(), free_port())
    api.put_config_map(NAMESPACE, CONFIG_MAP, {"node-config.yaml": yaml.safe_dump(config)})
    api.store.put("nodes", {"metadata": {"name": NODE_NAME, "labels": {"existing": "kept"}}})
    process, base = start_serving(
        start_args(
            f"--config-rollback-after={rollback_after}",
            *extra,
            components="kubelet,proxy,dns,bootstrap",
            health="127.0.0.1:0",
        ),
        start_env,
        tmp_path / "state",
    )
    node = Node(process, base, api, node_dir, tmp_path / "state", config, kubectl, tmp_path)
    wait_for(lambda: node.ready() or process.poll() is not None, "the node to be ready")
    if process.poll() is not None:
        raise AssertionError(process.communicate()[1][-4000:])
    return node


@pytest.fixture
def node(api, start_args, start_env, kubectl, tmp_path: Path, node_dir: Path) -> Iterator[Node]:
    running = start_node(api, start_args, start_env, kubectl, tmp_path, node_dir)
    yield running
    stop(running)


def stop(node: Node) -> str:
    """Stop the node (once); its stderr."""
    if node.process.returncode is None:
        node.process.send_signal(signal.SIGTERM)
        node.stderr = node.process.communicate(timeout=WAIT)[1]
    return node.stderr


def changed(config: dict[str, Any], **arguments: list[str]) -> dict[str, Any]:
    new = json.loads(json.dumps(config))
    new["kubeletArguments"].update(arguments)
    return new


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


# --- applied ----------------------------------------------------------------------------


def test_a_changed_kubelet_argument_restarts_only_the_kubelet(node: Node) -> None:
    kubelet, proxy = node.pid("kubelet"), node.pid("proxy")
    dns_restarts = node.component("dns")["restarts"]
    node.apply(changed(node.config, **{"node-labels": ["region=east"], "max-pods": ["42"]}))
    last = node.wait_for_apply("applied", generation=2)
    assert last["restarted"] == ["kubelet"]
    new_kubelet = wait_for(lambda: node.pid("kubelet"), "the new kubelet")
    assert new_kubelet != kubelet
    assert "--node-labels=region=east" in cmdline(new_kubelet)
    settings = yaml.safe_load((node.state_dir / "kubelet" / "kubelet-config.yaml").read_text())
    assert settings["maxPods"] == 42
    wait_for(node.ready, "the node to be ready again")
    assert node.pid("proxy") == proxy
    assert node.component("dns")["restarts"] == dns_restarts
    assert node.process.poll() is None


def test_kubectl_edit_of_the_config_map_is_applied(node: Node, tmp_path: Path) -> None:
    editor = tmp_path / "editor"
    editor.write_text(
        f"#!{sys.executable}\n"
        "import sys, yaml\n"
        "manifest = yaml.safe_load(open(sys.argv[1]))\n"
        "config = yaml.safe_load(manifest['data']['node-config.yaml'])\n"
        "config['kubeletArguments']['max-pods'] = ['7']\n"
        "manifest['data']['node-config.yaml'] = yaml.safe_dump(config)\n"
        "yaml.safe_dump(manifest, open(sys.argv[1], 'w'))\n"
    )
    editor.chmod(0o755)
    done = subprocess.run(
        [kubectl_binary(), "--kubeconfig", str(node.api.admin_kubeconfig), "edit",
         "--validate=false", "configmap", CONFIG_MAP, "-n", NAMESPACE],
        capture_output=True, text=True, timeout=WAIT,
        env={**os.environ, "KUBE_EDITOR": str(editor), "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert node.wait_for_apply("applied", generation=2)["restarted"] == ["kubelet"]
    settings = yaml.safe_load((node.state_dir / "kubelet" / "kubelet-config.yaml").read_text())
    assert settings["maxPods"] == 7


def kubectl_binary() -> str:
    """kubectl as the ``kubectl`` fixture finds it (the test requesting ``node`` has it)."""
    beside = Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.exists() else str(shutil.which("kubectl"))


def test_the_applied_config_is_written_and_the_previous_one_kept(node: Node) -> None:
    before = (node.node_dir / "node-config.yaml").read_bytes()
    node.apply(changed(node.config, **{"max-pods": ["42"]}))
    node.wait_for_apply("applied", generation=2)
    after = yaml.safe_load((node.node_dir / "node-config.yaml").read_text())
    assert after["kubeletArguments"]["max-pods"] == ["42"]
    assert after["nodeName"] == NODE_NAME  # the bootstrap overrides, as at start
    assert (node.node_dir / "node-config.yaml.prev").read_bytes() == before
    assert not list(node.node_dir.glob(".*candidate*"))


def test_the_node_gets_the_labels_and_the_config_annotations(node: Node) -> None:
    config = changed(node.config, **{"node-labels": ["region=east,tier=gold", "zone=a"]})
    node.apply(config)
    node.wait_for_apply("applied", generation=2)
    data = yaml.safe_dump(config)
    md5 = hashlib.md5(data.encode()).hexdigest()
    served = node.admin("get", "configmap", CONFIG_MAP, "-n", NAMESPACE, "-o", "json")
    assert json.loads(served.stdout)["data"]["node-config.yaml"] == data

    def annotated() -> dict[str, Any] | None:
        done = node.admin("get", "node", NODE_NAME, "-o", "yaml")
        metadata = yaml.safe_load(done.stdout)["metadata"]
        annotations = metadata.get("annotations") or {}
        return metadata if annotations.get("node.openshift.io/md5sum") == md5 else None

    metadata = wait_for(annotated, "the Node to be annotated")
    assert metadata["annotations"]["nodehost.io/config-generation"] == "2"
    labels = metadata["labels"]
    assert (labels["region"], labels["tier"], labels["zone"]) == ("east", "gold", "a")
    assert labels["existing"] == "kept"  # labels are added and changed, never removed


def test_a_node_registered_later_gets_its_labels_then(node: Node) -> None:
    """The Node is gone when the config is applied; the kubelet the new config restarts
    registers it again (as a kubelet does at start), and config sync labels it then."""
    node.api.store.delete("nodes", "", NODE_NAME)
    node.apply(changed(node.config, **{"node-labels": ["late=yes"]}))
    node.wait_for_apply("applied", generation=2)

    def labels() -> dict[str, str]:
        done = node.admin("get", "node", NODE_NAME, "-o", "json")
        if done.returncode != 0:  # NotFound until the restarted kubelet registers it again
            return {}
        return json.loads(done.stdout)["metadata"].get("labels") or {}

    assert wait_for(lambda: labels().get("late"), "the labels") == "yes"


def test_a_node_deleted_while_it_runs_is_registered_again_and_labelled_again(
    node: Node,
) -> None:
    """A kubelet registers its Node only at start: the bootstrap component's Node watch
    restarts it when the Node is deleted, and config sync labels the new Node again."""

    def annotations() -> dict[str, str]:
        found = node.api.store.objects["nodes"].get(("", NODE_NAME))
        return (found or {}).get("metadata", {}).get("annotations") or {}

    wait_for(lambda: "node.openshift.io/md5sum" in annotations(), "config sync's annotation")
    kubelet = node.pid("kubelet")
    done = node.admin("delete", "node", NODE_NAME)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: node.pid("kubelet") not in (None, kubelet), "a restarted kubelet")
    wait_for(lambda: "node.openshift.io/md5sum" in annotations(), "the Node annotated again")
    assert node.component("kubelet")["restarts"] >= 1


def test_an_applied_config_is_a_node_event(node: Node) -> None:
    node.apply(changed(node.config, **{"max-pods": ["42"]}))
    node.wait_for_apply("applied", generation=2)
    event = wait_for(lambda: reason(node, "NodeConfigApplied"), "the event")
    assert event["type"] == "Normal"
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Node",
        "name": NODE_NAME,
        "uid": NODE_NAME,
    }


def reason(node: Node, wanted: str) -> dict[str, Any] | None:
    return next((e for e in node.events() if e["reason"] == wanted), None)


# --- rejected ---------------------------------------------------------------------------


def test_an_invalid_config_is_rejected_with_every_problem_and_the_node_runs_on(
    node: Node, nodehost: str
) -> None:
    kubelet = node.pid("kubelet")
    before = (node.node_dir / "node-config.yaml").read_bytes()
    bad = changed(node.config, **{"no-such-flag": ["x"]})
    bad["nodeIP"] = "not-an-ip"
    node.apply(bad)
    last = node.wait_for_apply("rejected", generation=1)
    assert any(p.startswith("nodeIP: Invalid value") for p in last["problems"]), last
    assert any("no-such-flag" in p for p in last["problems"]), last
    assert last["restarted"] == []
    assert (node.node_dir / "node-config.yaml").read_bytes() == before
    assert node.pid("kubelet") == kubelet and node.ready()
    address = node.base.removeprefix("http://")
    shown = subprocess.run(
        [nodehost, "status", f"--address={address}"], capture_output=True, text=True
    )
    assert "config rejected" in shown.stdout
    assert "  nodeIP: Invalid value" in shown.stdout
    event = wait_for(lambda: reason(node, "NodeConfigRejected"), "the event")
    assert event["type"] == "Warning" and "nodeIP" in event["message"]


def test_a_config_that_does_not_parse_is_rejected(node: Node) -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
        "data": {"node-config.yaml": "kind: [unclosed\n"},
    }
    path = node.workdir / "broken.yaml"
    path.write_text(yaml.safe_dump(manifest))
    assert node.admin("apply", "--validate=false", "-f", str(path)).returncode == 0
    last = node.wait_for_apply("rejected", generation=1)
    [problem] = last["problems"]
    assert "could not load config file" in problem and str(node.node_dir) in problem
    assert ".candidate" not in problem
    assert node.ready()


def test_the_rejection_is_one_log_line_with_every_problem(node: Node) -> None:
    bad = changed(node.config, **{"no-such-flag": ["x"]})
    bad["nodeIP"] = "not-an-ip"
    node.apply(bad)
    node.wait_for_apply("rejected", generation=1)
    events = [json.loads(line) for line in stop(node).splitlines() if line.startswith("{")]
    [rejected] = [e for e in events if e["event"] == "config rejected"]
    assert len(rejected["problems"]) == 2 and rejected["level"] == "error"
    assert rejected["origin"].startswith(f"config map {NAMESPACE}/{CONFIG_MAP} (resourceVersion")


# --- rolled back ------------------------------------------------------------------------


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port some other process listens on (the kubelet cannot serve its healthz there)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_config_whose_kubelet_never_gets_ready_is_rolled_back(
    api, start_args, start_env, kubectl, tmp_path: Path, node_dir: Path, held_port: int
) -> None:
    node = start_node(
        api, start_args, start_env, kubectl, tmp_path, node_dir, "--crash-loop-limit=0",
        rollback_after="4s",
    )  # fmt: skip
    try:
        before = (node.node_dir / "node-config.yaml").read_bytes()
        node.apply(changed(node.config, **{"healthz-port": [str(held_port)]}))
        last = node.wait_for_apply("rolled back", generation=3)
        assert last["restarted"] == ["kubelet"]
        assert any(p.startswith("kubelet not ready within 4s") for p in last["problems"]), last
        assert (node.node_dir / "node-config.yaml").read_bytes() == before
        rolled = yaml.safe_load((node.node_dir / "node-config.yaml.rolled-back").read_text())
        assert rolled["kubeletArguments"]["healthz-port"] == [str(held_port)]
        wait_for(node.ready, "the node to be ready again")
        assert f"--healthz-port={held_port}" not in " ".join(cmdline(node.pid("kubelet")))
        event = wait_for(lambda: reason(node, "NodeConfigRolledBack"), "the event")
        assert event["type"] == "Warning"
        assert node.process.poll() is None
    finally:
        stop(node)


def test_a_config_whose_kubelet_fails_is_rolled_back_at_once(
    api, start_args, start_env, kubectl, tmp_path: Path, node_dir: Path, held_port: int
) -> None:
    """Past its restart budget the kubelet fails: rolled back then, not after the 2 minutes
    (and the node does not fail)."""
    node = start_node(api, start_args, start_env, kubectl, tmp_path, node_dir)
    try:
        node.apply(changed(node.config, **{"healthz-port": [str(held_port)]}))
        last = node.wait_for_apply("rolled back", generation=3)
        assert any(p.startswith("kubelet failed: exited 5 times") for p in last["problems"]), last
        wait_for(node.ready, "the node to be ready again")
        assert node.process.poll() is None
    finally:
        stop(node)


# --- the watch --------------------------------------------------------------------------


def test_a_dropped_watch_is_resumed_from_the_last_version_and_converges(node: Node) -> None:
    wait_for(lambda: watches(node.api), "the config map watch")
    seen = node.api.store.get("configmaps", NAMESPACE, CONFIG_MAP)["metadata"]["resourceVersion"]
    node.api.drop_watches()
    node.apply(changed(node.config, **{"max-pods": ["42"]}))
    node.wait_for_apply("applied", generation=2)
    resumed = watches(node.api)[1:]
    assert resumed and f"resourceVersion={seen}" in resumed[0], watches(node.api)


def watches(api: TestApiServer) -> list[str]:
    return [
        path for _, path, _ in api.requests if path.startswith(CONFIG_MAP_PATH) and "watch" in path
    ]


def test_the_config_map_is_read_once_not_polled(node: Node) -> None:
    node.apply(changed(node.config, **{"max-pods": ["42"]}))
    node.wait_for_apply("applied", generation=2)
    gets = [
        path
        for method, path, user in node.api.requests
        if method == "GET" and path.startswith(f"{CONFIG_MAP_PATH}/{CONFIG_MAP}")
        and user == f"system:node:{NODE_NAME}"
    ]  # fmt: skip
    assert len(gets) == 2, gets  # the bootstrap's read, then the sync's first one


def test_metrics_show_the_generation_and_the_last_apply(node: Node) -> None:
    node.apply(changed(node.config, **{"max-pods": ["42"]}))
    node.wait_for_apply("applied", generation=2)
    from prometheus_client.parser import text_string_to_metric_families

    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(http_get(f"{node.base}/metrics")[1])
        for sample in family.samples
        if sample.name.startswith("nodehost_config_")
    }
    assert samples[("nodehost_config_generation", ())] == 2
    assert samples[("nodehost_config_last_apply_result", (("result", "applied"),))] == 1
    assert samples[("nodehost_config_last_apply_result", (("result", "rejected"),))] == 0
    assert samples[("nodehost_config_applies_total", (("result", "applied"),))] == 1
    stamp = samples[("nodehost_config_last_apply_timestamp_seconds", ())]
    assert abs(stamp - time.time()) < 3600


# --- hostile content --------------------------------------------------------------------


def rejections(node: Node) -> int:
    return node.status()["configuration"]["applies"]["rejected"]


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_hostile_map_content_is_rejected_with_its_place_and_the_node_runs_on(node: Node) -> None:
    from nodehost.testing.hostile import refused_documents

    base = yaml.safe_dump(node.config, sort_keys=False)
    documents = refused_documents(base)
    kubelet = node.pid("kubelet")
    for count, (name, text) in enumerate(documents.items(), start=1):
        node.api.put_config_map(NAMESPACE, CONFIG_MAP, {"node-config.yaml": text})
        wait_for(lambda count=count: rejections(node) == count, f"the rejection of {name}")
        [problem] = node.last_apply()["problems"]
        assert "could not load config file" in problem, (name, problem)
        assert re.search(r"line \d+, column \d+", problem), (name, problem)
        assert "larger than" not in problem, (name, problem)
    # A lone surrogate in the API's JSON decodes as Go's decoder does: U+FFFD.
    surrogate = base.replace("nodeIP: 127.0.0.1", 'nodeIP: "127.0.0.1\ud800"')
    node.api.put_config_map(NAMESPACE, CONFIG_MAP, {"node-config.yaml": surrogate})
    wait_for(lambda: rejections(node) == len(documents) + 1, "the rejection of a surrogate")
    assert node.last_apply()["problems"][0].startswith("nodeIP: Invalid value")
    huge = base + "padding: " + "x" * (5 << 20) + "\n"
    node.api.put_config_map(NAMESPACE, CONFIG_MAP, {"node-config.yaml": huge})
    wait_for(lambda: rejections(node) == len(documents) + 2, "the rejection of a 5 MiB map")
    assert "larger than the limit of 4 MiB" in node.last_apply()["problems"][0]
    assert node.status()["configuration"]["generation"] == 1
    assert node.pid("kubelet") == kubelet and node.ready() and node.process.poll() is None
    assert peak_rss_kib(node.process.pid) < 400 << 10  # an alias bomb expanded is gigabytes
    assert "Traceback" not in stop(node)


# --- a misbehaving API server -------------------------------------------------------------------

MALFORMED_CONFIG_MAPS = [
    {"data": {"node-config.yaml": "x"}},  # no metadata
    {"metadata": None, "data": {"node-config.yaml": "x"}},
    {"metadata": {"name": CONFIG_MAP}, "data": ["a", "b"]},
    {"metadata": [], "data": {"node-config.yaml": 5}},
]


def test_malformed_config_map_versions_are_ignored_and_the_node_runs_on(node: Node) -> None:
    """A watch event whose config map has no metadata, null metadata or data as a list: one
    log line each, the running config stays, and the next good version is applied."""
    wait_for(lambda: watches(node.api), "the config map watch")
    for config_map in MALFORMED_CONFIG_MAPS:
        line = json.dumps({"type": "MODIFIED", "object": config_map}).encode()
        node.api.misbehave("event", CONFIG_MAP_PATH, watches=True, body=line, count=1)
    node.api.drop_watches()
    wait_for(lambda: len(watches(node.api)) > len(MALFORMED_CONFIG_MAPS) + 1, "the events")
    assert node.ready() and node.last_apply() is None  # nothing applied, nothing rolled back
    node.apply(changed(node.config, **{"max-pods": ["42"]}))
    node.wait_for_apply("applied", generation=2)
    stderr = stop(node)
    assert "Traceback" not in stderr
    ignored = stderr.count("config map ignored: not the shape of a ConfigMap")
    assert ignored == len(MALFORMED_CONFIG_MAPS), stderr[-3000:]

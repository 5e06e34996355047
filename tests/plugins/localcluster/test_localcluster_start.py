"""``nodehost start --local-cluster DIR``: the whole node from one command, on any machine.

These run wherever nodehost is installed: what this machine cannot run for
real (the bridge network, containerd) is left out with a notice, and the
kubelet and kube-proxy are stand-ins where the real programs are missing.
The test with every real part, kubectl and dig is ``test_localcluster_whole_node``.
"""

from __future__ import annotations

import json
from pathlib import Path

EXIT_ON_READY = ("--exit-on-ready", "--health-address=none", "--log-format=json")


def summary_rows(stdout: str) -> dict[str, str]:
    """The readiness summary's rows: component -> its READY AFTER column."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("node ready after"))
    return {line.split()[0]: line.split()[1] for line in lines[start + 2 :] if line.strip()}


def warnings(stderr: str) -> list[str]:
    return [
        event["event"]
        for event in map(json.loads, stderr.splitlines())
        if event.get("level") == "warning"
    ]


def client_certificate(cluster_dir: Path) -> bytes:
    return (cluster_dir / "node" / "certificates" / "kubelet-client-current.pem").read_bytes()


def test_one_command_brings_up_the_node_against_its_own_cluster(run_nodehost, cluster_dir) -> None:
    done = run_nodehost("start", "--local-cluster", str(cluster_dir), *EXIT_ON_READY)
    assert done.code == 0, done.err[-3000:]
    rows = summary_rows(done.out)
    assert next(iter(rows)) == "localcluster"
    assert {"localcluster", "bootstrap", "dns", "proxy", "kubelet", "sdn"} <= set(rows)
    assert all(rows[name] != "inactive" for name in ("localcluster", "bootstrap", "dns"))
    # it is about to stop: no "how to reach it", no "Ctrl-C stops the node"
    assert "kubectl --kubeconfig" not in done.out
    assert "Ctrl-C" not in done.out
    said = warnings(done.err)
    assert sum(line.startswith("LOCAL CLUSTER: nodehost's test API server") for line in said) == 1
    assert not [line for line in said if "has no effect in nodehost" in line]
    assert (cluster_dir / "node" / "node-config.yaml").exists()


def test_the_same_command_again_reuses_dir_without_a_new_certificate(
    run_nodehost, cluster_dir
) -> None:
    first = run_nodehost("start", "--local-cluster", str(cluster_dir), *EXIT_ON_READY)
    assert first.code == 0, first.err[-3000:]
    issued = client_certificate(cluster_dir)
    again = run_nodehost("start", "--local-cluster", str(cluster_dir), *EXIT_ON_READY)
    assert again.code == 0, again.err[-3000:]
    assert client_certificate(cluster_dir) == issued
    assert "node ready after" in again.out


def test_a_flag_the_cluster_chooses_is_one_usage_line(run_nodehost, cluster_dir) -> None:
    done = run_nodehost(
        "start", "--local-cluster", str(cluster_dir), "--config", "x.yaml", *EXIT_ON_READY
    )
    assert done.code == 2
    (line,) = [event["event"] for event in map(json.loads, done.err.splitlines())]
    assert line.startswith("error: --config cannot be given with --local-cluster")
    assert not cluster_dir.exists()


def test_without_its_plugin_the_flag_is_refused_not_ignored(run_nodehost, cluster_dir) -> None:
    done = run_nodehost(
        "start", "--local-cluster", str(cluster_dir), "--disable-plugin", "localcluster",
        *EXIT_ON_READY,
    )  # fmt: skip
    assert done.code == 2
    assert "No such option '--local-cluster'" in done.err
    assert not cluster_dir.exists()


def test_a_dry_run_says_what_would_happen_and_leaves_no_trace(run_nodehost, cluster_dir) -> None:
    done = run_nodehost("start", "--local-cluster", str(cluster_dir), "--dry-run")
    assert done.code == 0, done.err
    assert done.out.startswith(f"would start the local cluster in {cluster_dir}")
    assert "then bootstrap against it" in done.out
    assert not cluster_dir.exists()

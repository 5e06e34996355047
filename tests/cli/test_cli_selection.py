"""Selections that mean something: nothing-active is Origin's usage error; validation scope,
``masterKubeConfig`` and the in-cluster service account follow Origin's ``RunNode``
(:ref:`origin-validation-choice`).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dns.exception
import dns.message
import dns.query
import dns.rdatatype
import pytest

from nodehost.testing import parts
from nodehost.testing.apiserver import TestApiServer

ORIGIN = "error: at least one node component must be enabled (apilb, bootstrap, dns, images, kubelet, localcluster, mirror-rewrite, proxy, runtime, sdn)"


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_dns_port() -> int:
    """A port free for UDP and TCP both (the DNS server binds the two)."""
    while True:
        port = free_port(socket.SOCK_DGRAM)
        with socket.socket() as tcp:
            try:
                tcp.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port


def append(config: Path, text: str) -> None:
    config.write_text(config.read_text() + text)


@pytest.mark.parametrize(
    "disabled", ["dns,kubelet,plugins,proxy,bootstrap", "dns,kubelet,plugins,proxy"]
)
def test_a_selection_with_nothing_active_is_origins_usage_error(
    nodehost_exe, node_dir: Path, tmp_path: Path, disabled: str
) -> None:
    """Only the runtime is left, and it has nothing to do without the kubelet: refused, not
    'node ready' with nothing running."""
    config = node_dir / "node-config.yaml"
    result = nodehost_exe(
        "start", f"--config={config}", f"--disable={disabled}", f"--state-dir={tmp_path}",
        "--health-address=none", "--exit-on-ready", "--log-format=console",
        env={**os.environ, "NODEHOST_NO_PLUGINS": "1"},
    )  # fmt: skip
    assert result.code == 2
    lines = result.err.splitlines()
    assert lines[0] == ORIGIN
    assert lines[1].startswith("  apilb is inactive: ")
    assert lines[2] == "  mirror-rewrite is inactive: no registry mirror has a rewrite"
    assert lines[3].startswith("  runtime is inactive: ")
    assert "node ready" not in result.out + result.err


def test_every_component_inactive_by_config_is_the_same_error(nodehost, node_dir: Path) -> None:
    """The DNS server alone, without dnsBindAddress, would serve nothing."""
    result = nodehost("start", f"--config={node_dir / 'node-config.yaml'}", "--components=dns",
                      "--dry-run", "--no-plugins")  # fmt: skip
    assert result.code == 2
    assert result.err.splitlines()[:2] == [
        ORIGIN,
        "  dns is inactive: dnsBindAddress is not set",
    ]


def test_an_unknown_component_gets_a_did_you_mean(nodehost, node_dir: Path) -> None:
    config = f"--config={node_dir / 'node-config.yaml'}"
    result = nodehost("start", config, "--components=kubelt", "--dry-run", "--no-plugins")
    assert result.code == 2
    assert result.err.rstrip().endswith("did you mean kubelet?")
    several = nodehost("start", config, "--disable=netwrk,prxy", "--dry-run", "--no-plugins")
    assert several.err.rstrip().endswith("did you mean network (for netwrk), proxy (for prxy)?")


def test_the_proxy_alone_is_validated_as_a_node(nodehost, node_dir: Path) -> None:
    """Origin: only the network-only set gets the in-cluster rules; rule 13 (kubeletArguments)
    and the masterKubeConfig file apply to --components=proxy as to the kubelet."""
    config = node_dir / "node-config.yaml"
    config.write_text(
        config.read_text().replace(
            'fail-swap-on: ["false"]', 'fail-swap-on: ["false"]\n  nope: ["1"]'
        )
    )
    (node_dir / "node.kubeconfig").unlink()
    proxy = nodehost(
        "start", f"--config={config}", "--components=proxy", "--dry-run", "--no-plugins"
    )
    kubelet = nodehost(
        "start", f"--config={config}", "--components=kubelet", "--dry-run", "--no-plugins"
    )
    assert proxy.code == kubelet.code == 255
    for result in (proxy, kubelet):
        assert '  flag: Invalid value: "nope": is not a valid flag' in result.err
        assert "  masterKubeConfig: Invalid value: " in result.err


def test_the_network_only_set_runs_against_kubeconfig_with_in_cluster_rules(
    nodehost, node_dir: Path, tmp_path: Path
) -> None:
    """--disable=kubelet is exactly {dns, sdn, proxy}: masterKubeConfig := --kubeconfig, so a
    missing masterKubeConfig file is no error; the proxy's file names --kubeconfig."""
    config = node_dir / "node-config.yaml"
    kubeconfig = node_dir / "node.kubeconfig"
    moved = kubeconfig.rename(tmp_path / "given.kubeconfig")
    args = ["start", f"--config={config}", f"--state-dir={tmp_path / 'state'}", "--no-plugins",
            "--standins=always", "--dry-run", "--json"]  # fmt: skip
    refused = nodehost(*args, "--components=dns,sdn,proxy,kubelet")
    assert refused.code == 255 and "masterKubeConfig" in refused.out  # --json: JSON on stdout
    planned = nodehost(*args, "--disable=kubelet", f"--kubeconfig={moved}")
    assert planned.code == 0, planned.err
    assert '"name": "proxy"' in planned.out


def test_without_kubeconfig_or_service_account_the_api_components_fail_in_one_line(
    nodehost_exe, node_dir: Path, tmp_path: Path
) -> None:
    config = node_dir / "node-config.yaml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE_")}
    env["NODEHOST_NO_PLUGINS"] = "1"
    result = nodehost_exe(
        "start", f"--config={config}", "--disable=kubelet", "--standins=always",
        f"--state-dir={tmp_path}", "--health-address=none", "--dry-run", env=env,
    )  # fmt: skip
    assert result.code == 1
    errors = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: component proxy: kube-proxy needs the API server, but there is no kubeconfig "
        "(masterKubeConfig is empty: the network-only selection runs against --kubeconfig) and "
        "no in-cluster service account (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are "
        "not set); give --kubeconfig FILE"
    ]
    assert "Traceback" not in result.err


def ask(port: int, name: str) -> dns.message.Message | None:
    try:
        query = dns.message.make_query(name, dns.rdatatype.A)
        return dns.query.udp(query, "127.0.0.1", port=port, timeout=0.3)
    except (dns.exception.Timeout, OSError):
        return None


def test_an_empty_kubeconfig_means_the_in_cluster_service_account(
    node_dir: Path, tmp_path: Path
) -> None:
    """The network-only set with no --kubeconfig: DNS answers a Service through the pod's
    service account (token, CA, KUBERNETES_SERVICE_HOST/PORT) of a real API server."""
    parts.require("nodehost-script")
    executable = Path(sys.executable).parent / "nodehost"
    dns_port = free_dns_port()
    config = node_dir / "node-config.yaml"
    append(config, f'dnsBindAddress: "127.0.0.1:{dns_port}"\n'
                   f'proxyArguments:\n  healthz-port: ["{free_port()}"]\n')  # fmt: skip
    with TestApiServer(tmp_path / "api") as api:
        api.store.put("services", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"clusterIP": "172.30.0.10", "ports": [{"port": 80}]},
        })  # fmt: skip
        account = api.service_account(tmp_path / "serviceaccount")
        env = {**os.environ, "NODEHOST_NO_PLUGINS": "1", "NODEHOST_SERVICE_ACCOUNT_DIR": str(account),
               "KUBERNETES_SERVICE_HOST": api.host, "KUBERNETES_SERVICE_PORT": str(api.port)}  # fmt: skip
        node = subprocess.Popen(
            [str(executable), "start", f"--config={config}", "--disable=kubelet",
             "--standins=always", f"--state-dir={tmp_path / 'state'}", "--health-address=none"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while True:
                assert node.poll() is None, node.communicate()[1].decode()
                answer = ask(dns_port, "web.default.svc.cluster.local.")
                if answer is not None and answer.answer:
                    break
                assert time.monotonic() < deadline, "the DNS server never answered the service"
                time.sleep(0.05)
        finally:
            node.send_signal(signal.SIGTERM)
            _, errors = node.communicate(timeout=30)
        users = {user for _, path, user in api.requests if "services" in path}
    assert {rdata.to_text() for rrset in answer.answer for rdata in rrset} == {"172.30.0.10"}
    assert node.returncode == 0, errors.decode()
    assert users == {"system:serviceaccount:kube-system:nodehost"}

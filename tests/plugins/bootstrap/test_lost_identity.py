"""A node whose identity is lost joins again with its bootstrap credentials, once, and says so.

The identity is lost three ways the test API server makes real: a client
certificate that expired while the node was off (the server signed it with a
short lifetime), one the server refuses (revoked: 401), and a server whose CA
no longer matches the one in ``node.kubeconfig`` (rotated).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from clusterrun import NODE_NAME, error_lines, run_start, wait_until

from nodehost.plugins.bootstrap.certstore import valid_pair

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"


def client_csrs(api) -> list[dict]:
    return [c for c in api.csrs() if c["spec"]["signerName"] == CLIENT_SIGNER]


def current_client(node_dir: Path) -> Path:
    return node_dir / "certificates" / "kubelet-client-current.pem"


def warnings(stderr: str) -> list[str]:
    found = []
    for line in stderr.splitlines():
        event = json.loads(line) if line.startswith("{") else {"event": line}
        if "lost its identity" in str(event.get("event", "")):
            found.append(event["event"])
    return found


def rejoin_events(api) -> list[dict]:
    events = api.store.list("events", None)[0]
    return [e for e in events if e.get("reason") == "NodeRejoined"]


def joined(api, start_args, start_env) -> None:
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert done.returncode == 0, done.stderr
    assert len(client_csrs(api)) == 1


def assert_joined_again(api, done, why: str) -> None:
    assert done.returncode == 0, done.stderr
    assert len(client_csrs(api)) == 2  # one new request, not a loop of them
    [line] = warnings(done.stderr)
    assert f"node {NODE_NAME} lost its identity ({why}" in line
    assert "joining again through a new certificate request" in line
    [event] = rejoin_events(api)
    assert event["type"] == "Warning"
    assert event["involvedObject"] == {
        "apiVersion": "v1", "kind": "Node", "name": NODE_NAME, "uid": NODE_NAME
    }  # fmt: skip
    assert why in event["message"]


def test_a_certificate_that_expired_while_the_node_was_off(
    api, start_args, start_env, node_dir: Path
) -> None:
    api.default_lifetime = 5  # the test API server signs it to expire
    joined(api, start_args, start_env)
    wait_until(lambda: valid_pair(current_client(node_dir)) is None, "the certificate to expire")
    api.default_lifetime = 3600
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert_joined_again(api, done, "its client certificate expired at")
    assert valid_pair(current_client(node_dir)) is not None


def test_a_certificate_the_api_server_refuses(api, start_args, start_env, node_dir: Path) -> None:
    joined(api, start_args, start_env)
    api.revoke(current_client(node_dir).read_bytes())
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert_joined_again(api, done, "the API server refused its client certificate: 401")


def test_an_api_server_whose_ca_was_rotated(api, start_args, start_env, node_dir: Path) -> None:
    from nodehost.testing.apiserver import TestCA

    joined(api, start_args, start_env)
    kubeconfig = node_dir / "node.kubeconfig"
    document = yaml.safe_load(kubeconfig.read_text())
    import base64

    stale = base64.b64encode(TestCA().pem).decode()  # the CA the node knew
    document["clusters"][0]["cluster"]["certificate-authority-data"] = stale
    kubeconfig.write_text(yaml.safe_dump(document))
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert_joined_again(api, done, "API server")
    assert "certificate is not trusted" in warnings(done.stderr)[0]


def test_without_accepted_bootstrap_credentials_one_line_says_what_to_provide(
    api, start_args, start_env, node_dir: Path
) -> None:
    joined(api, start_args, start_env)
    api.revoke(current_client(node_dir).read_bytes())
    api.tokens.clear()  # the bootstrap token is gone too
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert done.returncode == 1
    [line] = error_lines(done.stderr)
    assert f"node {NODE_NAME} lost its identity (the API server refused" in line
    assert "provide bootstrap credentials" in line and "--kubeconfig" in line
    assert len(client_csrs(api)) == 1


def test_a_running_node_refused_at_renewal_joins_again(
    api, start_args, start_env, node_dir: Path, tmp_path: Path
) -> None:
    """Revoked while running: the next renewal, made as the node, gets a 401; the one after
    is made with the bootstrap credentials, and the node runs on."""
    import signal

    from clusterrun import http_get, start_serving, wait_for

    api.default_lifetime = 6  # renewals every few seconds
    process, base = start_serving(
        start_args(components="kubelet,proxy,bootstrap", health="127.0.0.1:0"),
        start_env,
        tmp_path / "state",
    )
    try:
        wait_for(lambda: http_get(f"{base}/readyz")[0] == 200, "readiness")
        api.revoke(current_client(node_dir).read_bytes())
        by_bootstrap = len([c for c in client_csrs(api) if "bootstrap" in c["spec"]["username"]])
        [event] = wait_for(lambda: rejoin_events(api), "the NodeRejoined event")
        assert "the API server refused its client certificate: 401" in event["message"]
        after = [c for c in client_csrs(api) if "bootstrap" in c["spec"]["username"]]
        assert len(after) == by_bootstrap + 1
        assert process.poll() is None
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert any("lost its identity" in line for line in stderr.splitlines())

"""The test API server answers a real client (kubectl) and speaks the API's status codes."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import subprocess
from pathlib import Path

import pytest
import yaml

from nodehost.testing.apiserver import TestApiServer

CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def admin(api: TestApiServer) -> list[str]:
    return ["--kubeconfig", str(api.admin_kubeconfig)]


def request(
    api: TestApiServer, method: str, path: str, token: str | None = None, body: dict | None = None
) -> tuple[int, dict, dict]:
    """One HTTPS request verified against the test CA; (status, headers, JSON body)."""
    context = ssl.create_default_context(cafile=str(api.ca_file))
    connection = http.client.HTTPSConnection(api.host, api.port, context=context, timeout=10)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        connection.request(method, path, body=json.dumps(body) if body else None, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.headers), json.loads(response.read())
    finally:
        connection.close()


def openssl_csr(tmp_path: Path, subject: str) -> str:
    subprocess.run(
        [
            "openssl",
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            str(tmp_path / "k.pem"),
            "-subj",
            subject,
            "-out",
            str(tmp_path / "r.csr"),
        ],
        check=True,
        capture_output=True,
    )
    return base64.b64encode((tmp_path / "r.csr").read_bytes()).decode()


def csr_body(
    name: str, request_b64: str, signer: str = "kubernetes.io/kube-apiserver-client-kubelet"
) -> dict:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": request_b64,
            "signerName": signer,
            "usages": ["digital signature", "client auth"],
        },
    }


def test_kubectl_reads_the_version(api, kubectl) -> None:
    done = kubectl(*admin(api), "get", "--raw", "/version")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["major"] == "1"


def test_kubectl_gets_a_config_map_as_yaml(api, kubectl) -> None:
    done = kubectl(
        *admin(api), "get", "configmap", "node-config", "-n", "openshift-node", "-o", "yaml"
    )
    assert done.returncode == 0, done.stderr
    document = yaml.safe_load(done.stdout)
    assert document["kind"] == "ConfigMap"
    assert document["metadata"]["namespace"] == "openshift-node"
    assert "nodeName" in document["data"]["node-config.yaml"]


def test_kubectl_lists_and_approves_a_csr_that_the_ca_then_signs(api, kubectl, tmp_path) -> None:
    api.set_approver("never")
    status, _, _ = request(
        api,
        "POST",
        CSR_PATH,
        "abcdef.0123456789abcdef",
        csr_body("csr-one", openssl_csr(tmp_path, "/O=system:nodes/CN=system:node:n9")),
    )
    assert status == 201
    listed = kubectl(*admin(api), "get", "csr")
    assert listed.returncode == 0, listed.stderr
    assert "csr-one" in listed.stdout
    approved = kubectl(*admin(api), "certificate", "approve", "csr-one")
    assert approved.returncode == 0, approved.stderr
    csr = api.store.get("certificatesigningrequests", "", "csr-one")
    assert csr["status"]["conditions"][0]["reason"] == "KubectlApprove"
    (tmp_path / "issued.crt").write_bytes(base64.b64decode(csr["status"]["certificate"]))
    verify = subprocess.run(
        ["openssl", "verify", "-CAfile", str(api.ca_file), str(tmp_path / "issued.crt")],
        capture_output=True,
        text=True,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_kubectl_denies_a_csr(api, kubectl, tmp_path) -> None:
    api.set_approver("never")
    request(
        api,
        "POST",
        CSR_PATH,
        "abcdef.0123456789abcdef",
        csr_body("csr-two", openssl_csr(tmp_path, "/O=system:nodes/CN=system:node:n9")),
    )
    denied = kubectl(*admin(api), "certificate", "deny", "csr-two")
    assert denied.returncode == 0, denied.stderr
    csr = api.store.get("certificatesigningrequests", "", "csr-two")
    assert [c["type"] for c in csr["status"]["conditions"]] == ["Denied"]
    assert "certificate" not in csr["status"]


def test_a_signed_certificate_lives_as_long_as_expiration_seconds_asks(api, tmp_path) -> None:
    body = csr_body("csr-short", openssl_csr(tmp_path, "/O=system:nodes/CN=system:node:n9"))
    body["spec"]["expirationSeconds"] = 3600
    request(api, "POST", CSR_PATH, "abcdef.0123456789abcdef", body)
    from cryptography import x509

    for _ in range(100):
        csr = api.store.get("certificatesigningrequests", "", "csr-short")
        if csr["status"].get("certificate"):
            break
        import time

        time.sleep(0.02)
    cert = x509.load_pem_x509_certificate(base64.b64decode(csr["status"]["certificate"]))
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert 3600 <= lifetime.total_seconds() <= 3602


def test_no_credentials_is_401_with_a_status_body(api) -> None:
    status, _, body = request(api, "GET", "/api/v1/nodes")
    assert status == 401
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Unauthorized", 401)


def test_a_bootstrap_token_may_not_read_config_maps(api) -> None:
    status, _, body = request(
        api,
        "GET",
        "/api/v1/namespaces/openshift-node/configmaps/node-config",
        "abcdef.0123456789abcdef",
    )
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert 'User "system:bootstrap:abcdef" cannot get resource "configmaps"' in body["message"]


def test_a_missing_object_is_404_naming_it(api) -> None:
    status, _, body = request(api, "GET", f"{CSR_PATH}/nope", "abcdef.0123456789abcdef")
    assert status == 404
    assert body["message"] == 'certificatesigningrequests.certificates.k8s.io "nope" not found'
    assert body["details"]["name"] == "nope"


def test_creating_an_existing_name_is_409(api, tmp_path) -> None:
    body = csr_body("csr-dup", openssl_csr(tmp_path, "/CN=system:node:n9"))
    assert request(api, "POST", CSR_PATH, "abcdef.0123456789abcdef", body)[0] == 201
    status, _, answer = request(api, "POST", CSR_PATH, "abcdef.0123456789abcdef", body)
    assert (status, answer["reason"]) == (409, "AlreadyExists")


def test_an_injected_429_carries_retry_after(api) -> None:
    api.fail_next(1, 429, retry_after=3)
    status, headers, body = request(api, "GET", "/version")
    assert status == 429
    assert headers["Retry-After"] == "3"
    assert body["details"]["retryAfterSeconds"] == 3
    assert request(api, "GET", "/version")[0] == 200


def test_a_wrong_token_is_401(api) -> None:
    assert request(api, "GET", CSR_PATH, "abcdef.wrongwrongwrong1")[0] == 401


def test_a_watch_streams_events_after_the_resource_version(api, tmp_path) -> None:
    context = ssl.create_default_context(cafile=str(api.ca_file))
    connection = http.client.HTTPSConnection(api.host, api.port, context=context, timeout=10)
    _, _, listed = request(api, "GET", CSR_PATH, "abcdef.0123456789abcdef")
    version = listed["metadata"]["resourceVersion"]
    connection.request(
        "GET",
        f"{CSR_PATH}?watch=1&resourceVersion={version}",
        headers={"Authorization": "Bearer abcdef.0123456789abcdef"},
    )
    response = connection.getresponse()
    request(
        api,
        "POST",
        CSR_PATH,
        "abcdef.0123456789abcdef",
        csr_body("csr-watched", openssl_csr(tmp_path, "/CN=system:node:n9")),
    )
    first = json.loads(response.readline())
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "csr-watched")
    second = json.loads(response.readline())
    assert second["type"] == "MODIFIED"  # the approver approved it, then it was signed
    connection.close()


@pytest.mark.parametrize("how", ["go_down"])
def test_a_server_that_went_down_comes_back_on_the_same_port(api, how) -> None:
    getattr(api, how)()
    with pytest.raises(OSError):
        request(api, "GET", "/version")
    api.come_up()
    assert request(api, "GET", "/version")[0] == 200


def test_the_standalone_server_prints_its_address_and_writes_kubeconfigs(tmp_path, kubectl) -> None:
    import sys

    process = subprocess.Popen(
        [sys.executable, "-m", "nodehost.testing.apiserver", "--dir", str(tmp_path / "s")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        address = process.stdout.readline().split()
        assert address[0] == "address" and address[1].startswith("https://127.0.0.1:")
        admin_line = process.stdout.readline().split()
        done = kubectl("--kubeconfig", admin_line[1], "get", "--raw", "/version")
        assert done.returncode == 0, done.stderr
    finally:
        process.terminate()
        assert process.wait(10) == 0

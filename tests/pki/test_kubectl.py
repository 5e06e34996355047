"""The generated kubeconfig and certificates with a real client: kubectl against a loopback
HTTPS server that requires client certificates (the generated server pair, trusting the CA)."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nodehost.pki.nodefolder import create_node_folder

VERSION = {"major": "1", "minor": "37", "gitVersion": "v1.37.0-nodehost-test"}


class _VersionHandler(BaseHTTPRequestHandler):
    """Answers ``/version`` and records the client certificate's subject."""

    clients: list[str]

    def do_GET(self) -> None:
        peer = self.connection.getpeercert()  # type: ignore[attr-defined]
        subject = dict(item[0] for item in peer["subject"])
        self.clients.append(subject["commonName"])
        body = json.dumps(VERSION).encode() if self.path == "/version" else b"{}"
        self.send_response(200 if self.path == "/version" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class LoopbackAPIServer:
    """A TLS server on 127.0.0.1 that requires a client certificate signed by ``ca_file``."""

    def __init__(self) -> None:
        handler = type("Handler", (_VersionHandler,), {"clients": []})
        self.clients: list[str] = handler.clients
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"https://127.0.0.1:{self.http.server_address[1]}"

    def serve(self, cert_file: Path, key_file: Path, ca_file: Path) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        context.load_verify_locations(ca_file)
        context.verify_mode = ssl.CERT_REQUIRED
        self.http.socket = context.wrap_socket(self.http.socket, server_side=True)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def api_server() -> Iterator[LoopbackAPIServer]:
    server = LoopbackAPIServer()
    yield server
    server.close()


def test_kubectl_parses_the_kubeconfig(request_factory, tmp_path, kubectl) -> None:
    create_node_folder(request_factory())
    folder = tmp_path / "node1"
    kubeconfig = str(folder / "node.kubeconfig")
    view = kubectl("--kubeconfig", kubeconfig, "config", "view", "--raw", "-o", "json")
    assert view.returncode == 0, view.stderr
    config = json.loads(view.stdout)
    user = config["users"][0]["user"]
    assert (
        base64.b64decode(user["client-certificate-data"])
        == (folder / "master-client.crt").read_bytes()
    )
    assert config["current-context"] == "default/master-example-com:8443/system:node:node1"


@pytest.mark.parametrize("key_type", ["ecdsa", "rsa", "ed25519"])
def test_kubectl_gets_version_over_mutual_tls(
    make_ca, node_request, tmp_path, kubectl, api_server, key_type
) -> None:
    ca = make_ca("master", key_type)
    folder = tmp_path / "node1"
    create_node_folder(
        node_request(ca, folder, hostnames=("127.0.0.1", "localhost"), master=api_server.url,
                     key_type=key_type)
    )  # fmt: skip
    api_server.serve(folder / "server.crt", folder / "server.key", ca / "ca.crt")
    result = kubectl("--kubeconfig", str(folder / "node.kubeconfig"), "get", "--raw", "/version")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == VERSION
    assert set(api_server.clients) == {"system:node:node1"}


def test_server_refuses_a_client_of_another_ca(
    make_ca, node_request, tmp_path, kubectl, api_server
) -> None:
    ca, other = make_ca("master", "ecdsa"), make_ca("other", "ecdsa")
    create_node_folder(
        node_request(ca, tmp_path / "server-side", hostnames=("127.0.0.1",), master=api_server.url)
    )
    stranger = tmp_path / "stranger"
    create_node_folder(
        node_request(other, stranger, hostnames=("127.0.0.1",), master=api_server.url,
                     certificate_authority=(str(ca / "ca.crt"),))
    )  # fmt: skip
    server_side = tmp_path / "server-side"
    api_server.serve(server_side / "server.crt", server_side / "server.key", ca / "ca.crt")
    result = kubectl("--kubeconfig", str(stranger / "node.kubeconfig"), "get", "--raw", "/version")
    assert result.returncode != 0
    assert api_server.clients == []

"""Helpers of the ``kubernetes`` record source tests: API objects, writes through the API, polling.

Imported by name (``conftest`` puts this folder on ``sys.path``); a unique module name
because test folders are plain folders.
"""

from __future__ import annotations

import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dns.message
from dnsrun import ChildLog, ask, stop_child

from nodehost.testing.apiserver import TestApiServer
from nodehost.testing.wait import wait_until as wait_until


def service_body(name: str, namespace: str, cluster_ip: str, **spec: Any) -> dict[str, Any]:
    """A ``v1`` Service as ``kubectl create -f`` would send it."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterIP": cluster_ip, **spec},
    }


def slice_body(
    name: str, namespace: str, service: str, endpoints: list[dict[str, Any]], ports: list[Any]
) -> dict[str, Any]:
    """A ``discovery.k8s.io/v1`` EndpointSlice of ``service`` (IPv4)."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kubernetes.io/service-name": service},
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": ports,
    }


class ApiWriter:
    """Creates, replaces and deletes objects through the API (lightkube, admin credentials)."""

    def __init__(self, kubeconfig: Path) -> None:
        from lightkube import Client, KubeConfig

        self.client = Client(KubeConfig.from_file(str(kubeconfig)), trust_env=False)

    @staticmethod
    def _resource(body: dict[str, Any]) -> Any:
        from lightkube.resources.core_v1 import Service
        from lightkube.resources.discovery_v1 import EndpointSlice

        return {"Service": Service, "EndpointSlice": EndpointSlice}[body["kind"]]

    def create(self, body: dict[str, Any]) -> None:
        self.client.create(self._resource(body).from_dict(body))

    def replace(self, body: dict[str, Any]) -> None:
        """PUT ``body`` over the current object (the test server has no PATCH)."""
        resource = self._resource(body)
        metadata = body["metadata"]
        current = self.client.get(resource, metadata["name"], namespace=metadata["namespace"])
        changed = {
            **body,
            "metadata": {**metadata, "resourceVersion": current.metadata.resourceVersion},
        }
        self.client.replace(resource.from_dict(changed))

    def delete(self, body: dict[str, Any]) -> None:
        metadata = body["metadata"]
        self.client.delete(self._resource(body), metadata["name"], namespace=metadata["namespace"])

    def close(self) -> None:
        self.client.close()


def converge(
    server: Any,
    name: str,
    rdtype: str,
    done: Callable[[dns.message.Message], bool],
    timeout: float = 10.0,
    tcp: bool = False,
) -> tuple[float, dns.message.Message]:
    """Ask ``name`` (over UDP, or TCP) every 10 ms until ``done(answer)``; (seconds taken, last
    answer).

    The seconds are measured from the call, so call it right after the API write.
    """
    start = time.monotonic()
    while True:
        response = ask(server, name, rdtype, timeout=2, tcp=tcp)
        elapsed = time.monotonic() - start
        if done(response) or elapsed > timeout:
            return elapsed, response
        time.sleep(0.01)


def refused_kubeconfig(api: TestApiServer, path: Path, how: str) -> Path:
    """A kubeconfig for ``api`` that it refuses: ``401`` (an unknown token) or ``403``
    (a node's client certificate, with services forbidden to nodes)."""
    from nodehost.pki.atomic import write_atomic
    from nodehost.pki.kubeconfig import dump_kubeconfig, node_kubeconfig

    if how == "401":
        config = api.token_kubeconfig("zzzzzz.0000000000000000")
    else:
        cert, key = api.ca.client_pair("system:node:node1", ["system:nodes"])
        config = node_kubeconfig(api.url, api.ca.pem, cert, key, "system:node:node1")
        api.forbid("services")
    write_atomic(path, dump_kubeconfig(config), 0o600)
    return path


class PendingServer:
    """The standalone DNS server as a child process that may not become ready at once."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nodehost.plugins.dns.server", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log = ChildLog(self.process.stderr)

    def ready_line(self, timeout: float) -> str | None:
        """The ``ready host:port`` line if it comes within ``timeout`` seconds (0: already)."""
        assert self.process.stdout is not None
        readable, _, _ = select.select([self.process.stdout], [], [], timeout)
        return self.process.stdout.readline().strip() if readable else None

    def stop(self) -> str:
        """Stop it (SIGTERM) and return its log (stderr)."""
        stop_child(self.process)
        return self.log.text()

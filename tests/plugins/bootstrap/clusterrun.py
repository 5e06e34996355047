"""Helpers for the cluster tests (a unique module name: test folders are plain folders)."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from nodehost.testing.wait import wait_for as wait_for
from nodehost.testing.wait import wait_until as wait_until

NAMESPACE = "openshift-node"
CONFIG_MAP = "node-config"
NODE_NAME = "node1.example.com"
NODE_CONFIG = """\
apiVersion: v1
kind: NodeConfig
nodeName: replaced-by-bootstrap
nodeIP: 127.0.0.1
servingInfo:
  bindAddress: 127.0.0.1:10250
masterKubeConfig: node.kubeconfig
dnsDomain: cluster.local
dnsIP: 10.0.0.10
networkConfig:
  networkPluginName: ""
volumeDirectory: volumes
imageConfig:
  format: openshift/origin-${component}:${version}
  latest: false
kubeletArguments:
  fail-swap-on: ["false"]
"""


def node_config(kubelet_healthz_port: int, proxy_healthz_port: int) -> str:
    """:data:`NODE_CONFIG` with the stand-ins' ``/healthz`` on these ports.

    Never the defaults (10248, 10256): a neighbour's test run or a real kubelet
    may hold them, and readiness proves the listener is the stand-in's own.
    """
    return (
        NODE_CONFIG
        + f'  healthz-port: ["{kubelet_healthz_port}"]\n'
        + f'proxyArguments:\n  healthz-port: ["{proxy_healthz_port}"]\n'
    )


def run_start(
    args: list[str], env: dict[str, str], timeout: float = 40
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)


def error_lines(stderr: str) -> list[str]:
    """The ``error:`` messages on stderr, plain or (``--log-format=json``) JSON events."""
    found = []
    for line in stderr.splitlines():
        if line.startswith("{"):
            line = json.loads(line).get("event", "")
        if isinstance(line, str) and line.startswith("error:"):
            found.append(line)
    return found


def http_get(url: str) -> tuple[int, str]:
    """(status, body) of ``GET url``; (0, "") when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError:
        return 0, ""


def start_serving(
    argv: list[str], env: dict[str, str], state_dir: Path
) -> tuple[subprocess.Popen[str], str]:
    """Start ``nodehost start`` (``argv`` with ``--health-address 127.0.0.1:0``, its
    state directory ``state_dir``) and return it with its health server's base URL.

    The kernel picks the port and the node writes it to ``<state-dir>/run/health.address``:
    no port is chosen ahead, which another process could take first.  A file left by an
    earlier run is removed first.  Raises AssertionError with the node's stderr if it exits
    before it serves, or if it does not serve in time (it is then killed); either way the
    process is reaped.
    """
    path = state_dir / "run" / "health.address"
    path.unlink(missing_ok=True)
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )

    def bound() -> str | None:
        if process.poll() is not None:
            raise AssertionError(process.communicate()[1][-4000:])
        return (path.read_text().strip() or None) if path.exists() else None

    try:
        return process, f"http://{wait_for(bound, 'the health server to listen')}"
    except BaseException:
        if process.poll() is None:
            process.kill()
            process.communicate()
        raise

"""Runtime readiness through CRI (``nodehost.daemon.cri``): a kubelet could use it, or it is not ready."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from realruntime import NODEHOST, needs_containerd, wait_for

from nodehost.daemon.cri import NotCri, runtime_status
from nodehost.plugins.runtime.containerd import NOT_CRI_HINT
from nodehost.plugins.runtime.testing import own_containerd

pytestmark = [needs_containerd, pytest.mark.usefixtures("outside_guard")]

CRI_DISABLED = 'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'


@pytest.fixture
def containerd(short_dir: Path) -> Iterator[Callable[..., str]]:
    """Factory: start a containerd of the test's own (``extra`` TOML at the top); its endpoint."""
    with contextlib.ExitStack() as stack:
        yield lambda name, extra="": stack.enter_context(own_containerd(short_dir / name, extra))


def status_of(endpoint: str):
    """``endpoint``'s CRI status, asked as the runtime plugin asks (with its hint)."""
    return asyncio.run(runtime_status(endpoint, timeout=5, not_cri_hint=NOT_CRI_HINT))


def test_containerd_with_cri_is_runtime_ready_and_network_ready_once_a_cni_config_appears(
    containerd, short_dir: Path
) -> None:
    endpoint = containerd("cri")
    status = wait_for(lambda: _answered(endpoint), what="containerd's CRI answer")
    assert status.runtime_name == "containerd" and status.api_version == "v1"
    assert status.runtime_ready and not status.network_ready
    assert status.not_ready("NetworkReady").reason == "NetworkPluginNotReady"
    assert "NetworkReady=false (NetworkPluginNotReady" in status.summary()

    conf_dir = short_dir / "cri" / "net.d"
    conf_dir.mkdir(exist_ok=True)  # containerd makes it to watch it
    conflist = {
        "cniVersion": "0.4.0",
        "name": "nodehost-cri-test",
        "plugins": [{"type": "loopback"}],
    }
    (conf_dir / "10-test.conflist").write_text(json.dumps(conflist))
    wait_for(lambda: status_of(endpoint).network_ready, what="NetworkReady after the CNI config")


def _answered(endpoint: str):
    try:
        return status_of(endpoint)
    except OSError:
        return None


def test_containerd_with_cri_disabled_is_not_cri_and_the_message_says_what_to_change(
    containerd,
) -> None:
    endpoint = containerd("nocri", CRI_DISABLED)
    with pytest.raises(NotCri) as raised:
        wait_for(lambda: _answered(endpoint), what="containerd's answer")
    message = str(raised.value)
    assert message.startswith(f"{endpoint} does not serve CRI (runtime.v1.RuntimeService: ")
    assert 'remove "io.containerd.grpc.v1.cri" from disabled_plugins' in message


def start_with_external(node_folder, short_dir: Path, plugin_env, endpoint: str, timeout: str):
    config = node_folder(f"containerRuntime:\n  endpoint: {endpoint}\n  waitTimeout: {timeout}\n")
    argv = [
        NODEHOST,
        "start",
        f"--config={config}",
        f"--state-dir={short_dir / 'state'}",
        "--components=runtime,kubelet",
        "--standins=always",
        "--health-address=127.0.0.1:0",
        "--exit-on-ready",
        "--ready-timeout=20s",
    ]
    return subprocess.run(argv, capture_output=True, text=True, env=plugin_env, timeout=90)


def test_an_external_containerd_without_cri_keeps_the_kubelet_from_starting(
    containerd, node_folder, short_dir: Path, plugin_env
) -> None:
    endpoint = containerd("nocri", CRI_DISABLED)
    result = start_with_external(node_folder, short_dir, plugin_env, endpoint, "2s")
    assert result.returncode == 1, result.stderr[-3000:]
    errors = [
        json.loads(line)
        for line in result.stderr.splitlines()
        if line.startswith("{") and "not ready for a kubelet" in line
    ]
    assert errors, result.stderr[-3000:]
    assert errors[0]["detail"].startswith(f"{endpoint} does not serve CRI")
    assert "disabled_plugins" in errors[0]["detail"]
    assert '"component started"' not in "".join(
        line for line in result.stderr.splitlines() if '"kubelet"' in line
    )


def test_an_external_containerd_with_cri_is_ready_for_the_kubelet(
    containerd, node_folder, short_dir: Path, plugin_env
) -> None:
    endpoint = containerd("cri")
    result = start_with_external(node_folder, short_dir, plugin_env, endpoint, "20s")
    assert result.returncode == 0, result.stderr[-3000:]


def test_status_shows_the_managed_containerds_runtime_and_network_conditions(
    node_folder, short_dir: Path, plugin_env, free_port
) -> None:
    address = f"127.0.0.1:{free_port()}"
    argv = [
        NODEHOST,
        "start",
        f"--config={node_folder()}",
        f"--state-dir={short_dir / 'state'}",
        "--components=runtime,kubelet",
        "--standins=always",
        f"--health-address={address}",
    ]
    host = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=plugin_env)
    try:

        def runtime_row() -> str | None:
            shown = subprocess.run(
                [NODEHOST, "status", f"--address={address}"], capture_output=True, text=True
            )
            rows = [line for line in shown.stdout.splitlines() if line.startswith("runtime ")]
            return rows[0] if shown.returncode == 0 and rows else None

        row = wait_for(runtime_row, timeout=60, what="a ready node's status")
    finally:
        host.terminate()
        host.communicate(timeout=60)
    assert "ready: containerd " in row
    assert "RuntimeReady=true, NetworkReady=false (NetworkPluginNotReady" in row


def check_external(node_folder, short_dir: Path, plugin_env, endpoint: str) -> dict[str, Any]:
    """``nodehost check --json`` of a node whose runtime is the external ``endpoint``."""
    config = node_folder(f"containerRuntime:\n  endpoint: {endpoint}\n")
    argv = [NODEHOST, "check", f"--config={config}", f"--state-dir={short_dir / 'state'}",
            "--components=runtime", "--json"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, env=plugin_env, timeout=90)
    checks = {check["name"]: check for check in json.loads(done.stdout)["checks"]}
    return {"code": done.returncode, "checks": checks, "err": done.stderr}


@pytest.mark.parametrize(
    ("extra", "result", "found"),
    [
        ("", "ok", "RuntimeReady=true"),
        (CRI_DISABLED, "error", 'remove "io.containerd.grpc.v1.cri" from disabled_plugins'),
        (None, "error", "No such file or directory"),
    ],
)
def test_check_asks_an_external_endpoint_for_cri_version_and_status(
    containerd, node_folder, short_dir: Path, plugin_env, extra, result, found
) -> None:
    endpoint = f"unix://{short_dir}/none.sock" if extra is None else containerd("ext", extra)
    answer = check_external(node_folder, short_dir, plugin_env, endpoint)
    cri = answer["checks"]["runtime.cri"]
    assert cri["result"] == result, answer
    assert answer["code"] == 1 or result == "ok"  # other checks (the API server) may fail too
    assert found in cri["found"]

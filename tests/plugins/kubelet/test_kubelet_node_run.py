"""The kubelet and proxy plans under the real host: files written, stand-ins ready, clean stop."""

from __future__ import annotations

import dataclasses
import json
import socket
import subprocess
import sys
from pathlib import Path

import yaml

from nodehost.component import TEARDOWN_FILE
from nodehost.plugins.kubelet import Kubelet
from nodehost.plugins.kubelet.configfile import check_kubelet_configuration
from nodehost.plugins.proxy import Proxy
from nodehost.plugins.proxy.configfile import (
    check_kube_proxy_configuration as check_proxy_configuration,
)


def as_planhost_entry(name: str, plan, after: tuple[str, ...] = ()) -> dict:
    """A planned component for ``nodehost.testing.planhost``, its program replaced by a stand-in."""
    program, *arguments = plan.run.argv
    return {
        "name": name,
        "argv": [str(Path(sys.executable).parent / f"nodehost-standin-{program}"), *arguments],
        "after": list(after),
        "ready": {"http": plan.run.readiness.url},
        "files": [
            {"path": spec.path, "content": spec.content.decode(), "mode": f"{spec.mode:o}"}
            for spec in plan.files
        ],
    }


def test_the_host_brings_the_planned_kubelet_and_proxy_to_ready_and_stops_them(
    tmp_path: Path, make_config, make_context, free_port
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        proxy_port = probe.getsockname()[1]
    config = make_config(
        kubeletArguments={"healthz-port": [str(free_port)]},
        proxyArguments={"healthz-bind-address": [f"127.0.0.1:{proxy_port}"]},
        servingInfo={"bindAddress": "127.0.0.1:10250"},
    )
    context = make_context(config)
    kubelet = Kubelet().plan(context)
    proxy_dir = str(tmp_path / "state" / "proxy")
    proxy = Proxy().plan(dataclasses.replace(context, state_dir=proxy_dir))
    description = {
        "state_dir": str(tmp_path / "state"),
        "components": [
            as_planhost_entry("proxy", proxy),
            as_planhost_entry("kubelet", kubelet, after=("proxy",)),
        ],
    }
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(description))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "nodehost.testing.planhost",
            str(plan_file),
            "--exit-on-ready",
            "--ready-timeout",
            "20",
            "--no-notify",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    summary = result.stdout.splitlines()
    assert summary[0].startswith("node ready after")
    assert [line.split()[0] for line in summary[2:4]] == ["proxy", "kubelet"]
    assert "kubelet: stopping on SIGTERM" in result.stderr
    written = {
        spec.path: yaml.safe_load(Path(spec.path).read_bytes())
        for spec in kubelet.files
        if Path(spec.path).name != TEARDOWN_FILE  # what teardown undoes, not a kubelet file
    }
    assert [check_kubelet_configuration(document) for document in written.values()] == [[]]
    (proxy_file,) = [spec for spec in proxy.files if Path(spec.path).name != TEARDOWN_FILE]
    assert check_proxy_configuration(yaml.safe_load(Path(proxy_file.path).read_bytes())) == []

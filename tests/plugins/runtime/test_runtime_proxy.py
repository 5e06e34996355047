"""``containerRuntime.proxy``: containerd's environment only, ``NO_PROXY`` completed with what
must never be proxied, ``CONTAINERD_*`` variables as k3s reads them, passwords never shown."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from realruntime import NODEHOST, wait_for

from nodehost.component import ProcessSpec
from nodehost.plugins.runtime import RUNTIME, nodehost_validate_config

SELECTED = frozenset({"runtime", "kubelet"})
BRIDGE = {
    "networkConfig": {"networkPluginName": "bridge"},
    "bridgeNetwork": {"podCIDR": "10.244.9.0/24"},
}


def environment(sample_config, make_context, **changes: object) -> dict[str, str]:
    plan = RUNTIME.plan(make_context(sample_config(**changes)))
    assert isinstance(plan.run, ProcessSpec)
    return dict(plan.run.env)


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CONTAINERD_HTTP_PROXY", "CONTAINERD_HTTPS_PROXY", "CONTAINERD_NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_the_proxy_goes_to_containerd_with_no_proxy_completed(sample_config, make_context) -> None:
    env = environment(
        sample_config,
        make_context,
        containerRuntime={
            "proxy": {
                "httpProxy": "http://proxy.example:3128",
                "httpsProxy": "http://user:pw@proxy.example:3128",
                "noProxy": "registry.internal, 10.20.0.0/16",
            }
        },
        kubeletArguments={"pod-cidr": ["10.244.7.0/24"]},
        **BRIDGE,
    )
    assert env["HTTP_PROXY"] == "http://proxy.example:3128"
    assert env["HTTPS_PROXY"] == "http://user:pw@proxy.example:3128"
    assert env["NO_PROXY"].split(",") == [
        "registry.internal",
        "10.20.0.0/16",
        "localhost",
        "127.0.0.1",
        "::1",
        "10.0.0.2",  # the node IP
        "10.244.9.0/24",  # the CNI configuration's subnet
        "10.244.7.0/24",  # kubeletArguments.pod-cidr
        "172.30.0.0/16",  # Origin's service network
        ".svc",
        "cluster.local",
        ".cluster.local",
    ]


def test_the_password_of_a_proxy_is_not_in_the_plan_notes(sample_config, make_context) -> None:
    config = sample_config(
        containerRuntime={"proxy": {"httpsProxy": "http://u:hunter2@p.example:8"}}
    )
    notes = RUNTIME.plan(make_context(config)).notes
    assert any("HTTPS_PROXY=http://u:***@p.example:8" in note for note in notes)
    assert not any("hunter2" in note for note in notes)


def test_without_a_proxy_containerd_gets_none(sample_config, make_context) -> None:
    assert set(environment(sample_config, make_context)) == {"PATH"}


def test_containerd_variables_are_read_as_k3s_reads_them(
    sample_config, make_context, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTAINERD_HTTP_PROXY", "http://from-env:1")
    monkeypatch.setenv("HTTP_PROXY", "http://general:1")
    monkeypatch.setenv("CONTAINERD_NO_PROXY", "a.example")
    env = environment(sample_config, make_context)
    assert env["HTTP_PROXY"] == "http://from-env:1"
    assert env["NO_PROXY"].startswith("a.example,localhost,")
    config = {"proxy": {"httpProxy": "http://from-file:2"}}
    assert environment(sample_config, make_context, containerRuntime=config)["HTTP_PROXY"] == (
        "http://from-file:2"
    )


def test_bad_proxy_settings_are_problems_with_their_paths(sample_config) -> None:
    config = sample_config(
        containerRuntime={
            "proxy": {
                "httpProxy": "proxy.example:3128",
                "httpsProxy": "ftp://u:secret@x:1",
                "noProxy": {"a": 1},
                "serviceNetworkCIDR": "172.30.0.1/16",
                "noproxy": "x",
            }
        }
    )
    problems = [p.render() for p in nodehost_validate_config(config=config, selected=SELECTED)]
    assert problems[:3] == [
        'containerRuntime.proxy.httpProxy: Invalid value: "proxy.example:3128": must be an '
        "http:// or https:// URL",
        'containerRuntime.proxy.httpsProxy: Invalid value: "ftp://u:***@x:1": must be an '
        "http:// or https:// URL",
        "containerRuntime.proxy.noProxy: Invalid value: \"{'a': 1}\": must be a comma-separated "
        "string or a list of them",
    ]
    assert problems[3].startswith(
        'containerRuntime.proxy.serviceNetworkCIDR: Invalid value: "172.30.0.1/16"'
    )
    assert (
        problems[4]
        == 'containerRuntime.proxy.noproxy: Forbidden: unknown field; did you mean "noProxy"?'
    )
    assert len(problems) == 5


@pytest.mark.needs("root", "containerd", "nodehost-script")
@pytest.mark.usefixtures("outside_guard")
def test_only_containerd_runs_with_the_proxy(node_folder, short_dir: Path, plugin_env) -> None:
    config = node_folder(
        """\
        containerRuntime:
          proxy: {httpsProxy: "http://127.0.0.1:9"}
        """
    )
    state = short_dir / "state"
    argv = [NODEHOST, "start", f"--config={config}", f"--state-dir={state}"]
    argv += ["--components=runtime,kubelet", "--standins=always", "--health-address=127.0.0.1:0"]
    host = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=plugin_env)
    try:
        pids = {
            name: wait_for(lambda name=name: _pid(state, name), f"{name} to run", 60)
            for name in ("runtime", "kubelet")
        }
        containerd, kubelet = (_environ(pids[name]) for name in ("runtime", "kubelet"))
        assert containerd["HTTPS_PROXY"] == "http://127.0.0.1:9"
        assert ".svc" in containerd["NO_PROXY"].split(",")
        assert "HTTPS_PROXY" not in kubelet and "NO_PROXY" not in kubelet
    finally:
        host.send_signal(signal.SIGTERM)
        _, err = host.communicate(timeout=60)
    assert host.returncode == 0, err[-3000:]


def _pid(state: Path, name: str) -> int | None:
    try:
        return int((state / "run" / f"{name}.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(pair.decode().split("=", 1) for pair in pairs if b"=" in pair)

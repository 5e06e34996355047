"""What a newcomer reads first: the root help, ``plugins``, and the messages of the commonest
first mistakes each point at the fix."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nodehost import __version__
from nodehost.pluginhost.manager import BUILTIN_PLUGINS


def test_the_root_help_names_every_built_in_component(nodehost: Callable[..., Any]) -> None:
    helped = nodehost("--help")
    text = " ".join(helped.out.split())
    for module in BUILTIN_PLUGINS:
        assert module.rsplit(".", 1)[1] in text, module


def test_the_root_help_into_a_closed_pipe_is_no_traceback() -> None:
    nodehost = Path(sys.executable).parent / "nodehost"
    with subprocess.Popen(
        [str(nodehost), "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0
    ) as reader:
        assert reader.stdout is not None and reader.stderr is not None
        reader.stdout.close()  # as `| head -0` does, before nodehost writes
        stderr = reader.stderr.read().decode()
    assert "Traceback" not in stderr, stderr


def test_plugins_has_a_version_column(nodehost: Callable[..., Any]) -> None:
    listed = nodehost("plugins", "--no-plugins")
    assert listed.code == 0, listed.err
    header, *rows = listed.out.splitlines()
    assert header.split()[:3] == ["NAME", "DISTRIBUTION", "VERSION"]
    kubelet = next(row for row in rows if row.startswith("kubelet "))
    assert "nodehost (built-in)" in kubelet and f" {__version__} " in kubelet


@pytest.mark.parametrize("flag", ["--components", "--disable"])
def test_names_separated_by_a_space_are_told_to_use_commas(
    nodehost: Callable[..., Any], flag: str
) -> None:
    result = nodehost("start", f"{flag}=kubelet proxy", "--dry-run")
    assert result.code == 2
    assert "separate names with commas: kubelet,proxy" in result.err, result.err
    assert "did you mean" not in result.err


def test_a_bare_start_points_at_config_and_local_cluster(
    nodehost: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for variable in ("NODEHOST_CONFIG", "NODEHOST_KUBECONFIG", "NODEHOST_LOCAL_CLUSTER"):
        monkeypatch.delenv(variable, raising=False)
    result = nodehost("start")
    assert result.code == 2
    assert result.err.startswith("error: --kubeconfig must be set"), result.err
    assert "--config FILE" in result.err and "--local-cluster DIR" in result.err
    assert list(tmp_path.iterdir()) == []


def test_status_shows_the_certificate_expiry_of_a_config_create_node(
    make_real_node_folder: Callable[[Path], Path], tmp_path: Path
) -> None:
    """No bootstrap rotates them, yet ``status`` says when the serving and client (embedded
    in node.kubeconfig) certificates expire, as it does for a bootstrapped node."""
    from nodehost.testing.noderun import NodeRun, run_nodehost

    node = make_real_node_folder(tmp_path)
    config = node / "node-config.yaml"
    config.write_text(config.read_text().replace("0.0.0.0:10250", "127.0.0.1:0"))
    run = NodeRun.start(
        config, components="kubelet", state_dir=tmp_path / "state", args=["--no-exec"]
    )
    try:
        run.ready()
        status = run_nodehost("status", "--address", run.address())
    finally:
        assert run.stop() == 0
    lines = status.out.splitlines()
    for name in ("server", "client"):
        line = next(
            (line for line in lines if line.startswith(f"certificate {name} (kubelet)")), ""
        )
        assert ": expires 20" in line and "(in 7" in line, status.out

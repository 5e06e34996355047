"""The plugin API version a plugin can require, and hook tracing at ``-v 6``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import nodehost
from nodehost.errors import PluginError
from nodehost.pluginhost.manager import check_plugin_api
from nodehost.testing.distributions import throwaway_distribution


class Declaring:
    def __init__(self, wanted: str) -> None:
        self.NODEHOST_PLUGIN_API = wanted


def test_the_api_is_a_major_minor_pair() -> None:
    major, minor = nodehost.PLUGIN_API
    assert isinstance(major, int) and isinstance(minor, int)


def test_a_plugin_asking_for_this_api_or_an_older_minor_loads() -> None:
    major, minor = nodehost.PLUGIN_API
    check_plugin_api(Declaring(f"{major}.{minor}"))
    check_plugin_api(Declaring(f"{major}.0"))
    check_plugin_api(object())  # declaring nothing is fine


@pytest.mark.parametrize("bump", [(0, 1), (1, 0)])
def test_a_plugin_asking_for_a_newer_or_other_major_api_fails(bump: tuple[int, int]) -> None:
    wanted = f"{nodehost.PLUGIN_API[0] + bump[0]}.{nodehost.PLUGIN_API[1] + bump[1]}"
    have = ".".join(map(str, nodehost.PLUGIN_API))
    with pytest.raises(PluginError, match=f"needs nodehost plugin API {wanted}; .* {have}$"):
        check_plugin_api(Declaring(wanted))


def test_a_malformed_api_version_fails() -> None:
    with pytest.raises(PluginError, match="NODEHOST_PLUGIN_API is 'one', not"):
        check_plugin_api(Declaring("one"))


FUTURE = """
NODEHOST_PLUGIN_API = "{major}.99"

from nodehost import hookimpl

@hookimpl
def nodehost_components():
    return []
"""


def nodehost_cli(*args: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [sys.executable, "-m", "nodehost", *args],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip


def test_a_distribution_needing_a_newer_api_fails_alone_in_the_listing(tmp_path: Path) -> None:
    path = throwaway_distribution(
        tmp_path / "dists", "futureplugin", FUTURE.format(major=nodehost.PLUGIN_API[0]), "2.0"
    )
    result = nodehost_cli("plugins", "--json", pythonpath=path)
    assert result.returncode == 0, result.stderr
    (info,) = [row for row in json.loads(result.stdout) if row["name"] == "futureplugin"]
    assert info["status"] == "failed"
    assert info["error"].startswith(f"needs nodehost plugin API {nodehost.PLUGIN_API[0]}.99;")
    assert {row["name"] for row in json.loads(result.stdout) if row["status"] == "active"} >= {
        "kubelet",
        "sdn",
    }


def test_verbosity_six_traces_every_hook_call_and_outcome() -> None:
    result = nodehost_cli("components", "-v", "6", "--log-format", "json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    calls = [e for e in events if e.get("event") == "hook call"]
    returns = [e for e in events if e.get("event") == "hook returned"]
    assert any(e["hook"] == "nodehost_components" and e["plugin"] == "kubelet" for e in calls)
    assert any(e["hook"] == "nodehost_components" and e["results"] >= 1 for e in returns)


def test_below_verbosity_six_nothing_is_traced() -> None:
    result = nodehost_cli("components", "-v", "5", "--log-format", "json")
    assert result.returncode == 0, result.stderr
    assert '"hook call"' not in result.stderr

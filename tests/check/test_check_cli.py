"""``nodehost check``: the table and JSON, exit codes, no false errors, third-party checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from checkrun import AS_REAL_PROGRAMS, BIN

pytestmark = pytest.mark.needs("nodehost-script")


@pytest.mark.needs("containerd")  # the runtime's checks ask containerd's plan
def test_this_host_has_no_false_errors_as_root(api_server, check_node, run_check) -> None:
    # The API server binds first: the node's ports are picked free after it, so its
    # kernel-chosen port cannot be one of them.
    check_node.update({"masterKubeConfig": str(api_server.admin_kubeconfig)})
    run = run_check(check_node, *AS_REAL_PROGRAMS)
    assert run.errors() == {}, run.errors()
    assert run.code == 0, run.err
    assert run.document["ok"] is True
    assert run.checks["kubelet.cgroups"]["result"] != "skipped"  # checked as a real kubelet
    assert run.checks["bootstrap.api-server"]["result"] == "ok"


@pytest.mark.needs("containerd")  # the runtime's checks ask containerd's plan
def test_this_host_has_no_false_errors_unprivileged(
    api_server, check_node, run_check, unprivileged
) -> None:
    check_node.update({"masterKubeConfig": str(api_server.admin_kubeconfig)})
    run = run_check(check_node, *AS_REAL_PROGRAMS, prefix=unprivileged)
    assert run.errors() == {}, run.errors()
    assert run.code == 0, run.err


def test_every_line_has_a_known_result_and_a_fix_for_each_problem(check_node, run_check) -> None:
    run = run_check(check_node, *AS_REAL_PROGRAMS)
    assert set(run.document) == {"checks", "counts", "ok"}
    for row in run.document["checks"]:
        assert set(row) == {"name", "result", "found", "fix", "plugin"}
        assert row["result"] in {"ok", "warning", "error", "skipped"}
        assert row["found"]
        if row["result"] in {"warning", "error"}:
            assert row["fix"], row
    assert sum(run.document["counts"].values()) == len(run.document["checks"])


def test_an_invalid_config_is_json_with_exit_255(check_node, run_check) -> None:
    check_node.update({"servingInfo": {"bindAddress": "nonsense"}})
    run = run_check(check_node)
    assert run.code == 255
    assert run.document["checks"] == []
    assert "Invalid NodeConfig" in run.document["error"]["message"]
    assert run.document["error"]["exit_code"] == 255


def test_a_usage_error_is_exit_2(check_node, run_check) -> None:
    run = run_check(check_node, "--components=nonesuch")
    assert run.code == 2
    assert "nonesuch" in run.document["error"]["message"]


def test_the_table_has_one_line_per_check_and_a_summary(check_node, tmp_path) -> None:
    done = subprocess.run(
        [str(BIN / "nodehost"), "check", f"--config={check_node.config_path}",
         f"--state-dir={tmp_path / 'state'}", "--components=kubelet", AS_REAL_PROGRAMS[0]],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "300"}, timeout=60,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["NAME", "RESULT", "FOUND", "FIX"]
    assert any(line.startswith("kubelet.swap ") for line in lines)
    rows = [line for line in lines[1:-1] if not line.startswith(" ")]  # wrapped cells indent
    assert lines[-1].startswith(f"{len(rows)} checks: ")


PLUGIN = """
from nodehost import hookimpl
from nodehost.check import Check


@hookimpl
def nodehost_checks(context):
    return [Check.warning("thirdparty.widget", "the widget is loose", "tighten the widget")]
"""

RAISING = """
from nodehost import hookimpl


@hookimpl
def nodehost_checks(context):
    raise RuntimeError("the probe fell over")
"""


@pytest.fixture
def third_party(tmp_path: Path) -> dict[str, str]:
    """A throw-away distribution with two plugins: one whose check warns, one that raises;
    the environment that puts it on ``sys.path``."""
    site = tmp_path / "site"
    info = site / "nodehost_checkdemo-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nodehost-checkdemo\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[nodehost]\ncheckdemo = nodehost_checkdemo\ncheckboom = nodehost_checkboom\n"
    )
    (site / "nodehost_checkdemo.py").write_text(textwrap.dedent(PLUGIN))
    (site / "nodehost_checkboom.py").write_text(textwrap.dedent(RAISING))
    return {"PYTHONPATH": os.pathsep.join([str(site), *sys.path])}


def test_a_third_party_plugins_check_shows_in_the_table(
    check_node, run_check, third_party, tmp_path
) -> None:
    run = run_check(check_node, *AS_REAL_PROGRAMS, env=third_party)
    widget = run.checks["thirdparty.widget"]
    assert (widget["result"], widget["plugin"]) == ("warning", "checkdemo")
    assert widget["fix"] == "tighten the widget"
    table = subprocess.run(
        [str(BIN / "nodehost"), "check", f"--config={check_node.config_path}",
         f"--state-dir={tmp_path / 'state'}", "--components=kubelet", AS_REAL_PROGRAMS[0]],
        capture_output=True, text=True, env={**os.environ, **third_party, "COLUMNS": "300"},
        timeout=60,
    )  # fmt: skip
    [line] = [line for line in table.stdout.splitlines() if line.startswith("thirdparty.widget")]
    assert line.split(None, 2)[1] == "warning"
    assert "the widget is loose" in line and "tighten the widget" in line


def test_a_plugin_whose_check_raises_fails_alone_as_its_error_line(
    check_node, run_check, third_party
) -> None:
    run = run_check(check_node, *AS_REAL_PROGRAMS, env=third_party)
    line = run.checks["checkboom.checks"]
    assert line["result"] == "error" and line["plugin"] == "checkboom"
    assert "RuntimeError: the probe fell over" in line["found"]
    assert "nodehost-checkdemo 0.1" in line["found"]
    assert "thirdparty.widget" in run.checks and "kubelet.swap" in run.checks
    assert run.code == 1


def test_disabling_the_raising_plugin_leaves_only_the_good_checks(
    check_node, run_check, third_party
) -> None:
    run = run_check(check_node, *AS_REAL_PROGRAMS, "--disable-plugin=checkboom", env=third_party)
    assert "checkboom.checks" not in run.checks
    assert "thirdparty.widget" in run.checks


@pytest.mark.needs("root", "cni-plugins", "ip", "containerd", "nodehost-script")
def test_a_local_cluster_is_checked_as_its_first_start_left_it(tmp_path) -> None:
    """Before any start the config does not exist: one line says so.  After one, the
    node's own API server (started by start) is not called unreachable."""
    cluster, state = tmp_path / "lc", tmp_path / "state"
    nodehost = str(BIN / "nodehost")
    check = [nodehost, "check", f"--local-cluster={cluster}", f"--state-dir={state}", "--json"]
    before = subprocess.run(check, capture_output=True, text=True, timeout=120)
    [line] = json.loads(before.stdout)["checks"]
    assert (line["name"], line["result"]) == ("config", "skipped")
    assert before.returncode == 0 and not cluster.exists()
    started = subprocess.run(
        [nodehost, "start", f"--local-cluster={cluster}", f"--state-dir={state}",
         "--exit-on-ready", "--health-address=none"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr[-2000:]
    after = subprocess.run(check, capture_output=True, text=True, timeout=120)
    rows = {row["name"]: row for row in json.loads(after.stdout)["checks"]}
    assert "is component localcluster's" in rows["bootstrap.api-server"]["found"]
    assert [name for name, row in rows.items() if row["result"] == "error"] == []
    assert after.returncode == 0

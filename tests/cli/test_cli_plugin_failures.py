"""The diagnostic commands work, and show the failure, whatever a third-party plugin does.

``nodehost-rogue 3.0`` clashes with the built-in ``kubelet``, raises in
validation, adjust, a lifecycle hook and ``nodehost_addhooks``, and misspells
a hook (``tests/data/rogue_dists``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodehost.testing.ports import free_port

CLASH = "component name 'kubelet' is already taken by built-in plugin 'kubelet'"
INTERNAL = (
    "  nodehost-rogue: Internal error: plugin 'roguevalidate' (nodehost-rogue 3.0, entry point "
    "roguevalidate = nodehost_rogue.validate): nodehost_validate_config raised KeyError: "
    "'rogue-rule'"
)


def failure_events(stderr: str) -> list[dict]:
    events = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    return [event for event in events if event["event"].startswith("plugin failed")]


def test_components_and_plugins_work_and_name_the_clash(nodehost, rogue_dists, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line per row: the failure is not wrapped
    listed = nodehost("components")
    assert listed.code == 0, listed.err
    assert "failed plugins" in listed.out
    assert (
        "plugin 'rogueclash' (entry point rogueclash = nodehost_rogue.clash, nodehost-rogue 3.0) "
        f"failed in hook nodehost_components: {CLASH}" in listed.out
    )
    kubelet = next(line for line in listed.out.splitlines() if line.startswith("kubelet"))
    assert "nodehost (built-in)" in kubelet
    plugins = nodehost("plugins")
    assert plugins.code == 0, plugins.err
    row = next(line for line in plugins.out.splitlines() if line.startswith("rogueclash"))
    assert f"failed in nodehost_components: {CLASH}" in row


def test_the_failure_is_one_log_line_naming_distribution_version_entry_point_and_hook(
    nodehost_exe, rogue_dists_env
) -> None:
    result = nodehost_exe("plugins", "--json", env=rogue_dists_env)
    assert result.code == 0
    events = {event["entry_point"]: event for event in failure_events(result.err)}
    assert events["rogueclash"] == {
        **events["rogueclash"],
        "distribution": "nodehost-rogue",
        "version": "3.0",
        "module": "nodehost_rogue.clash",
        "hook": "nodehost_components",
        "error": CLASH,
    }
    infos = {info["name"]: info for info in json.loads(result.out)}
    assert infos["rogueclash"]["hook"] == "nodehost_components"
    assert infos["fakegood"]["status"] == "active"


def test_strict_plugins_exits_1_naming_the_plugin(nodehost, rogue_dists) -> None:
    result = nodehost("components", "--strict-plugins", "--disable-plugin", "fakebroken")
    assert result.code == 1
    assert "rogue" in result.err and "Traceback" not in result.err


def test_config_validate_reports_a_raising_validation_hook_as_its_distribution(
    nodehost, rogue_dists, node_dir: Path
) -> None:
    result = nodehost("config", "validate", str(node_dir / "node-config.yaml"))
    assert result.code == 255
    assert INTERNAL in result.err
    assert "Forbidden" not in result.err


def test_a_raising_validation_hook_is_no_error_when_its_plugin_is_not_in_play(
    nodehost_exe, rogue_dists_env, node_dir: Path, tmp_path: Path
) -> None:
    config = str(node_dir / "node-config.yaml")
    args = ["start", f"--config={config}", "--dry-run", "--standins=always"]
    result = nodehost_exe(
        *args, "--components=kubelet", f"--state-dir={tmp_path}", env=rogue_dists_env
    )
    assert result.code == 0, result.err
    failed = {event["entry_point"]: event for event in failure_events(result.err)}
    assert failed["roguevalidate"]["hook"] == "nodehost_validate_config"
    assert "hijacked-by-rogue" not in result.out  # the raising adjust hook left nothing behind
    assert "--hostname-override=node1.example.com" in result.out


def test_a_raising_validation_hook_is_an_error_when_its_component_is_selected(
    nodehost, rogue_dists, node_dir: Path
) -> None:
    config = str(node_dir / "node-config.yaml")
    result = nodehost(
        "start", f"--config={config}", "--dry-run", "--components=rogue", "--log-format=console"
    )
    assert result.code == 255
    assert f"Invalid NodeConfig {config}\n{INTERNAL}" in result.err


def test_a_raising_validation_hook_is_an_error_when_its_section_is_set(
    nodehost, rogue_dists, node_dir: Path
) -> None:
    path = node_dir / "node-config.yaml"
    path.write_text(path.read_text() + "rogueSettings:\n  level: 3\n")
    result = nodehost("start", f"--config={path}", "--dry-run", "--components=kubelet")
    assert result.code == 255
    assert INTERNAL in result.err


def test_debug_verbosity_prints_the_plugins_traceback(
    nodehost_exe, rogue_dists_env, node_dir: Path
) -> None:
    config = str(node_dir / "node-config.yaml")
    quiet = nodehost_exe("config", "validate", config, env=rogue_dists_env)
    debug = nodehost_exe("config", "validate", config, "-v", "4", env=rogue_dists_env)
    assert "Traceback" not in quiet.err
    event = next(e for e in failure_events(debug.err) if e["entry_point"] == "roguevalidate")
    frames = json.dumps(event["exception"])
    assert "nodehost_rogue/validate.py" in frames and "rogue-rule" in frames


@pytest.fixture
def only_roguelife(rogue_dists_env, node_dir: Path) -> tuple[Path, dict[str, str]]:
    """The node config (its kubelet's healthz on a free port) and an environment in which
    ``roguelife`` is the only rogue plugin loaded."""
    config = node_dir / "node-config.yaml"
    config.write_text(
        config.read_text().replace(
            "  fail-swap-on:", f'  healthz-port: ["{free_port()}"]\n  fail-swap-on:'
        )
    )
    others = "rogueclash,roguetypo,rogueaddhooks,roguevalidate,rogueadjust,fakebroken,fakebadhook"
    env = {**rogue_dists_env, "NODEHOST_DISABLE_PLUGINS": others}
    return config, env


def test_a_raising_lifecycle_hook_does_not_fail_the_node_unless_strict(
    nodehost_exe, only_roguelife, tmp_path: Path
) -> None:
    config, env = only_roguelife
    args = [
        "start",
        f"--config={config}",
        "--components=kubelet",
        "--standins=always",
        "--exit-on-ready",
        "--health-address=none",
        "--log-format=json",
    ]
    lenient = nodehost_exe(*args, f"--state-dir={tmp_path / 'a'}", env=env)
    assert lenient.code == 0, lenient.err
    failed = failure_events(lenient.err)
    assert [(e["entry_point"], e["hook"]) for e in failed] == [
        ("roguelife", "nodehost_component_ready")
    ]
    strict = nodehost_exe(*args, "--strict-plugins", f"--state-dir={tmp_path / 'b'}", env=env)
    assert strict.code == 1
    assert "error: plugin 'roguelife'" in strict.err
    assert "failed in hook nodehost_component_ready: ValueError" in strict.err
    assert os.path.exists(tmp_path / "b")


def test_keys_a_disabled_plugin_would_check_are_reported_unchecked(
    nodehost, node_dir: Path
) -> None:
    path = node_dir / "node-config.yaml"
    path.write_text(path.read_text() + "dnsServerConfig:\n  recordSources: []\n")
    result = nodehost(
        "config", "validate", str(path), "--no-plugins",
        "--disable-plugin", "kubelet", "--disable-plugin", "dns",
    )  # fmt: skip
    assert result.code == 0, result.err
    warnings = result.err.splitlines()
    assert (
        f"warning: {path}: kubeletArguments: Not checked: no loaded plugin checks it "
        "(disabled: dns, kubelet)" in warnings
    )
    section = next(line for line in warnings if "dnsServerConfig" in line)
    assert section.endswith("; no loaded plugin owns it (disabled: dns, kubelet)")
    loaded = nodehost("config", "validate", str(path), "--no-plugins")
    assert "Not checked" not in loaded.err and "no loaded plugin" not in loaded.err


def plugin_distribution(tmp_path: Path, monkeypatch, name: str, version: str, code: str) -> None:
    """Put distribution ``nodehost-<name> <version>`` on ``sys.path``: entry point ``name``,
    a module (unique to this process) holding ``code``."""
    module = f"nodehost_{name}_{os.getpid()}"
    (tmp_path / f"{module}.py").write_text(code)
    info = tmp_path / f"nodehost_{name}-{version}.dist-info"
    info.mkdir()
    metadata = f"Metadata-Version: 2.1\nName: nodehost-{name}\nVersion: {version}\n"
    (info / "METADATA").write_text(metadata)
    (info / "entry_points.txt").write_text(f"[nodehost]\n{name} = {module}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_hook_returning_the_wrong_type_is_that_plugins_failure_in_every_command(
    nodehost, fake_dists, node_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    """``nodehost_components`` returning a string and ``nodehost_validate_config`` returning
    non-problems: each command works and names the plugin with its distribution."""
    code = (
        "from nodehost import hookimpl\n"
        "@hookimpl\ndef nodehost_components():\n    return 'notalist'\n"
        "@hookimpl\ndef nodehost_validate_config(config):\n    return ['a string', 42]\n"
    )
    plugin_distribution(tmp_path, monkeypatch, "wrongtype", "1.0", code)
    monkeypatch.setenv("COLUMNS", "400")
    config = str(node_dir / "node-config.yaml")
    for args in (
        ["plugins"],
        ["components"],
        ["config", "validate", config],
        [
            "start",
            f"--config={config}",
            "--dry-run",
            "--standins=always",
            "--binary=containerd=/bin/true",  # planned on a machine without containerd too
            f"--state-dir={tmp_path}/s",
        ],
    ):
        result = nodehost(*args)
        assert "Traceback" not in result.err, args
        assert result.code == 0, (args, result.err)
        assert "nodehost-wrongtype" in result.out + result.err, args
        assert "returned str, not a list of ComponentRecord" in result.out + result.err, args


def test_a_component_whose_plan_raises_fails_validate_and_start_with_exit_1(
    nodehost, fake_dists, node_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    """docs/reference/exitcodes.rst: a plugin bug is no config problem: one line naming the
    component and its distribution, exit 1, for ``config validate`` as for ``start``."""
    code = (
        "from nodehost import ComponentRecord, hookimpl\n"
        "class Boom:\n    def plan(self, context):\n        raise RuntimeError('plan boom')\n"
        "@hookimpl\ndef nodehost_components():\n"
        "    return [ComponentRecord('planfails', 'fails to plan', Boom())]\n"
    )
    plugin_distribution(tmp_path, monkeypatch, "planfails", "2.0", code)
    config = str(node_dir / "node-config.yaml")
    line = (
        "error: component planfails (plugin 'planfails' (nodehost-planfails 2.0)) failed to "
        "plan: RuntimeError: plan boom"
    )
    for args in (  # console: the fake plugins' events precede the error, in one format
        ["config", "validate", config, "--log-format=console"],
        ["start", f"--config={config}", "--dry-run", "--standins=always", "--log-format=console"],
    ):
        result = nodehost(*args)
        assert result.code == 1, (args, result.err)
        assert result.err.strip().splitlines()[-1] == line, args


def test_a_lifecycle_hook_failure_shows_in_status(
    nodehost_exe, only_roguelife, tmp_path: Path
) -> None:
    from nodehost.testing.noderun import NodeRun

    config, env = only_roguelife
    run = NodeRun.start(
        config, components="kubelet", state_dir=tmp_path / "state", env=env, args=["--no-exec"]
    )
    try:
        run.ready()
        document = run.status()
        (failure,) = document["plugin_failures"]
        assert (failure["name"], failure["hook"], failure["status"]) == (
            "roguelife",
            "nodehost_component_ready",
            "failed",
        )
        assert failure["error"] == "ValueError: rogue cannot stand kubelet being ready"
        shown = nodehost_exe("status", "--address", run.address())
        assert shown.code == 0, shown.err
        assert "plugin failure: plugin 'roguelife' (entry point roguelife = " in shown.out
        assert "failed in hook nodehost_component_ready: ValueError: rogue cannot" in shown.out
    finally:
        assert run.stop() == 0

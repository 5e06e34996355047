"""``nodehost components`` and ``nodehost plugins``, with built-in and fake third-party plugins."""

from __future__ import annotations

import json


def test_components_lists_builtins_with_groups_and_order(nodehost) -> None:
    result = nodehost("components", "--no-plugins")
    assert result.code == 0, result.err
    rows = {line.split()[0]: line for line in result.out.splitlines()[1:]}
    assert set(rows) == {
        "apilb", "bootstrap", "dns", "images", "kubelet", "localcluster", "mirror-rewrite",
        "proxy", "runtime", "sdn",
    }  # fmt: skip
    assert "network" in rows["sdn"] and "(plugins)" in rows["sdn"]
    assert " auto " in rows["bootstrap"]
    assert " auto " in rows["localcluster"] and "(before all)" in rows["localcluster"]


def test_components_json_names_plugin_and_distribution(nodehost, fake_dists) -> None:
    rows = {row["name"]: row for row in json.loads(nodehost("components", "--json").out)}
    assert rows["echo"]["plugin"] == "fakegood"
    assert rows["echo"]["distribution"] == "nodehost-fake 1.0"
    assert rows["kubelet"]["distribution"] == "nodehost (built-in)"
    assert rows["echo"]["after"] == ["sdn"]


def test_plugins_json_reports_status_of_each(nodehost, fake_dists) -> None:
    result = nodehost("plugins", "--json", "--disable-plugin", "fakeblocked")
    infos = {info["name"]: info for info in json.loads(result.out)}
    assert infos["kubelet"]["status"] == "active"
    assert infos["fakegood"]["status"] == "active"
    assert infos["fakeblocked"]["status"] == "blocked"
    assert infos["fakebroken"]["status"] == "failed"
    assert "ModuleNotFoundError" in infos["fakebroken"]["error"]
    assert "nodehost_components" in infos["fakegood"]["hooks"]


def test_plugins_table_shows_failure_reason(nodehost, fake_dists, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # wide enough that no cell wraps
    result = nodehost("plugins")
    line = next(line for line in result.out.splitlines() if line.startswith("fakebroken"))
    assert "failed: ModuleNotFoundError" in line
    assert line.split()[1:3] == ["nodehost-fake", "1.0"]  # distribution, version


def test_strict_plugins_fails_the_command(nodehost, fake_dists) -> None:
    result = nodehost("plugins", "--strict-plugins")
    assert result.code == 1
    assert "fakebroken" in result.err and "failed to load" in result.err


def test_selecting_a_component_of_a_failed_plugin_names_the_failure(
    nodehost, fake_dists, node_dir
) -> None:
    config = str(node_dir / "node-config.yaml")
    result = nodehost("start", "--config", config, "--dry-run", "--components=fakebroken")
    assert result.code == 2
    assert "not recognized: fakebroken" in result.err
    assert (
        "plugin 'fakebroken' (entry point fakebroken = nodehost_fake_broken, nodehost-fake 1.0) "
        "failed to load: ModuleNotFoundError" in result.err
    )


def test_third_party_component_is_selectable(nodehost, fake_dists, node_dir) -> None:
    config = str(node_dir / "node-config.yaml")
    result = nodehost(
        "start", "--config", config, "--dry-run", "--standins=always", "--components=echo"
    )
    assert result.code == 0, result.err
    assert "echo" in result.out and "fakegood (nodehost-fake 1.0)" in result.out


def test_third_party_validation_rule_joins_the_list(nodehost, fake_dists, node_dir) -> None:
    path = node_dir / "node-config.yaml"
    path.write_text(path.read_text().replace("node1.example.com", "forbidden-by-echo"))
    result = nodehost(
        "start", "--config", str(path), "--components=echo,kubelet", "--dry-run",
        "--log-format=console",  # the failed fake plugins' events, then the problems: plain
    )  # fmt: skip
    assert result.code == 255
    assert (
        '  nodeName: Invalid value: "forbidden-by-echo": echo refuses this node name' in result.err
    )


def test_failed_plugins_are_logged_as_one_line_each(nodehost_exe, fake_dists_env) -> None:
    result = nodehost_exe("components", env=fake_dists_env)
    assert result.code == 0
    lines = [line for line in result.err.splitlines() if "plugin failed to load" in line]
    assert len(lines) == 2
    broken = json.loads(next(line for line in lines if "fakebroken" in line))
    assert broken["distribution"] == "nodehost-fake" and broken["version"] == "1.0"
    assert broken["entry_point"] == "fakebroken"

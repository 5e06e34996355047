"""``nodehost network providers``: every provider with its topology, section and summary."""

from __future__ import annotations

import json

from nodehost.plugins.sdn import bridge, external


def test_builtin_providers_are_listed_with_their_summaries(nodehost) -> None:
    result = nodehost("network", "providers", "--json")
    assert result.code == 0, result.err
    providers = {item["name"]: item for item in json.loads(result.out)}
    assert providers["bridge"] == {
        "name": "bridge",
        "aliases": [],
        "topology": "host",
        "config_section": "bridgeNetwork",
        "plugin": "sdn",
        "distribution": "nodehost (built-in)",
        "summary": bridge.SUMMARY,
    }
    assert providers["external"]["summary"] == external.SUMMARY


def test_table_names_summary_and_section(nodehost, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    result = nodehost("network", "providers")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    header = ["NAME", "TOPOLOGY", "SECTION", "PLUGIN", "DISTRIBUTION", "SUMMARY"]
    assert lines[0].split() == header  # as README says: the plugin too
    row = next(line for line in lines if line.startswith("bridge "))
    assert row.split()[:4] == ["bridge", "host", "bridgeNetwork", "sdn"]
    assert bridge.SUMMARY in row


def test_blocked_provider_is_not_listed(nodehost, fake_dists) -> None:
    names = {i["name"] for i in json.loads(nodehost("network", "providers", "--json").out)}
    blocked = json.loads(nodehost("network", "providers", "--json", "--disable-plugin", "sdn").out)
    assert "bridge" in names
    assert "bridge" not in {item["name"] for item in blocked}

"""A third-party distribution with a bad record fails alone, through the real CLI.

A plugin whose record ``requires`` a component nobody provides once broke
``config validate`` for every file (exit 2, blaming ``--components``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from nodehost.testing.distributions import throwaway_distribution

NEEDY = """
from nodehost import ComponentRecord, hookimpl
from nodehost.component import ComponentPlan

class Nothing:
    def plan(self, context):
        return ComponentPlan()

@hookimpl
def nodehost_components():
    return [ComponentRecord("needy", "needs a ghost", Nothing(), requires=("ghost",))]
"""


def test_a_bad_distribution_leaves_validate_and_start_working(
    nodehost_exe, node_dir: Path, tmp_path: Path
) -> None:
    dists = throwaway_distribution(tmp_path / "dists", "needyplugin", NEEDY)
    env = {**os.environ, "PYTHONPATH": str(dists)}
    config = str(node_dir / "node-config.yaml")
    validate = nodehost_exe("config", "validate", config, env=env)
    assert validate.code == 0, validate.err
    assert "--components" not in validate.err
    assert '"entry_point": "needyplugin"' in validate.err  # one line names the failure
    dry_run = nodehost_exe(
        "start",
        "--config",
        config,
        "--components=kubelet",
        "--standins=missing",
        "--dry-run",
        env=env,
    )
    assert dry_run.code == 0, dry_run.err
    listing = nodehost_exe("plugins", "--json", env=env)
    assert listing.code == 0, listing.err
    (info,) = [info for info in json.loads(listing.out) if info["name"] == "needyplugin"]
    assert (info["status"], info["distribution"], info["version"]) == (
        "failed",
        "needyplugin",
        "1.0",
    )
    assert info["error"] == "component 'needy' names unknown component(s) in requires: 'ghost'"


def test_selecting_the_failed_plugins_component_names_the_failure(
    nodehost_exe, node_dir: Path, tmp_path: Path
) -> None:
    dists = throwaway_distribution(tmp_path / "dists", "needyplugin", NEEDY)
    env = {**os.environ, "PYTHONPATH": str(dists)}
    config = str(node_dir / "node-config.yaml")
    result = nodehost_exe("start", "--config", config, "--components=needy", "--dry-run", env=env)
    assert result.code == 2
    assert "needyplugin" in result.err

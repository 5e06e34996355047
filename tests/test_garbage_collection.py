"""The console script loads without cyclic garbage collections (``nodehost.entry``) and a
running node collects again (``nodehost.daemon.run_plan``), what loaded counted as old."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

VALIDATE = """\
import atexit, gc, sys
atexit.register(lambda: print("COLLECTING", gc.isenabled(), flush=True))
from nodehost.entry import main
main(sys.argv[1:])
"""

RUN = """\
import gc, sys
from nodehost.daemon import HostSettings, run_plan
from nodehost.testing.planhost import HookRecorder, load_plan

class Hooks(HookRecorder):
    def node_ready(self, **fields):
        print("COLLECTING", gc.isenabled(), flush=True)

gc.disable()  # as the console script leaves it
settings = HostSettings(exit_on_ready=True, health_address=None, notify=False)
sys.exit(run_plan(load_plan(sys.argv[1]), Hooks("/dev/null"), settings))
"""


def collecting(script: str, *args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=60
    )
    return [line for line in done.stdout.splitlines() if line.startswith("COLLECTING")]


def test_a_command_runs_without_collections(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    assert collecting(VALIDATE, "config", "validate", str(missing)) == ["COLLECTING False"]


def test_a_running_node_collects(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    component = {"name": "gc-sleeper", "argv": ["sleep", "600"]}
    plan.write_text(json.dumps({"state_dir": str(tmp_path / "state"), "components": [component]}))
    assert collecting(RUN, str(plan)) == ["COLLECTING True"]


def test_a_starting_node_counts_what_loaded_as_old() -> None:
    """Objects made while the collector was off start in the oldest generation, not the
    youngest: young collections do not walk everything the imports made."""
    from nodehost.daemon.run import start_collecting

    gc.unfreeze()  # as in a fresh process: an earlier test's freeze (DNS ready) would stay
    gc.disable()
    try:
        loaded = [[]]  # a container the collector tracks, made while it was off
        start_collecting()
        assert gc.isenabled()
        assert any(found is loaded for found in gc.get_objects(generation=2))
    finally:
        gc.enable()


def test_a_starting_node_leaves_what_someone_else_froze_frozen() -> None:
    from nodehost.daemon.run import start_collecting

    gc.disable()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        start_collecting()
        assert gc.isenabled()
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
        gc.enable()

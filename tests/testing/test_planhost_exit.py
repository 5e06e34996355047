"""The plan host leaves as the console script does: what bench/supervisor.py times is
``nodehost start``'s way out, not final collections the console script never runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXIT_CHECK = """\
import atexit, gc, sys
atexit.register(lambda: print("FROZEN", gc.get_freeze_count() > 0, flush=True))
from nodehost.testing.planhost import main
main(sys.argv[1:])
"""


def test_the_plan_host_freezes_the_heap_before_the_interpreter_exits(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    component = {"name": "planhost-exit-sleeper", "argv": ["sleep", "600"]}
    plan.write_text(json.dumps({"state_dir": str(tmp_path / "state"), "components": [component]}))
    done = subprocess.run(
        [sys.executable, "-c", EXIT_CHECK, str(plan), "--exit-on-ready", "--no-notify"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "FROZEN True"

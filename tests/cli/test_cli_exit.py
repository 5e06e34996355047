"""The console script's way out: the interpreter is spared its last full collections."""

from __future__ import annotations

import subprocess
import sys


def test_the_console_script_freezes_the_heap_before_the_interpreter_exits() -> None:
    # An atexit handler runs after main() returned: by then every object is frozen, so the
    # interpreter's final collections have nothing to walk (60-90 ms after a start).
    script = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('FROZEN', gc.get_freeze_count() > 0))\n"
        "from nodehost.entry import main\n"
        "main(['config', '--help'])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "FROZEN True"

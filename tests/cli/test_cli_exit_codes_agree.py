"""An unusable config file is exit 255 for every command that reads one (docs/reference/exitcodes.rst)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

COMMANDS = {
    "validate": lambda path, state: ("config", "validate", path),
    "show": lambda path, state: ("config", "show", path),
    "dry-run": lambda path, state: ("start", "--config", path, "--dry-run", "--state-dir", state),
    "start": lambda path, state: ("start", "--config", path, "--state-dir", state),
}


def _unusable(kind: str, tmp_path: Path) -> str:
    if kind == "directory":
        return str(tmp_path)
    if kind == "missing":
        return str(tmp_path / "absent.yaml")
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    return str(fifo)


@pytest.mark.parametrize("kind", ["directory", "missing", "fifo"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_unusable_config_file_exits_255(
    nodehost: Callable[..., Any], tmp_path: Path, command: str, kind: str
) -> None:
    path = _unusable(kind, tmp_path)
    result = nodehost(*COMMANDS[command](path, str(tmp_path / "state")))
    assert result.code == 255, (result.out, result.err)
    assert result.err.startswith(f'error: could not load config file "{path}" due to an error: ')
    assert "Usage:" not in result.err

"""Removing a stopped node's cgroups: every empty one goes, deepest first; a populated one
stays; and a cgroup that can go at once is not listed first."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nodehost.daemon import cgroups

from .hostrun import needs_cgroups, wait_for


@needs_cgroups
def test_empty_cgroups_go_deepest_first_and_leaves_are_not_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, reason = cgroups.expected_base(str(tmp_path / "state"))
    assert base is not None, reason
    agents, workloads = base / cgroups.AGENTS, base / cgroups.WORKLOADS
    for folder in (agents / "a", agents / "b" / "nested", workloads):
        folder.mkdir(parents=True)
    resident = subprocess.Popen(["sleep", "600"])
    listed: list[str] = []
    scandir = os.scandir

    def listing(path: str | os.PathLike[str]) -> object:
        listed.append(str(path))
        return scandir(path)

    try:
        cgroups.move(resident.pid, workloads)
        monkeypatch.setattr(os, "scandir", listing)
        removed = cgroups.remove_empty(base)
        monkeypatch.undo()
        assert removed == [agents / "a", agents / "b" / "nested", agents / "b", agents]
        assert workloads.is_dir() and base.is_dir()  # a process is in workloads
        assert sorted(listed) == sorted(str(p) for p in (base, agents, agents / "b", workloads))
    finally:
        resident.kill()
        resident.wait()
        wait_for(lambda: not cgroups.populated(base), what=f"{base} to empty")
        cgroups.remove_empty(base)
    assert not base.exists()

"""Building ``docs/`` as CI does, and reading what the build holds."""

from __future__ import annotations

import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@dataclass(frozen=True)
class BuiltDocs:
    """The HTML build of ``docs/``: its folder and the objects its inventory lists."""

    html: Path
    objects: frozenset[tuple[str, str]]
    warnings: str

    def names(self, role: str) -> set[str]:
        """Every object name of one ``domain:role`` (``std:confval``, ``py:function``)."""
        return {name for kind, name in self.objects if kind == role}

    def page_text(self, page: str) -> str:
        return (self.html / f"{page}.html").read_text()


def read_inventory(path: Path) -> frozenset[tuple[str, str]]:
    """``(domain:role, name)`` of every object in a Sphinx ``objects.inv`` (version 2)."""
    data = path.read_bytes()
    header_end = 0
    for _ in range(4):  # four header lines, then the zlib-compressed entries
        header_end = data.index(b"\n", header_end) + 1
    entries = set()
    for line in zlib.decompress(data[header_end:]).decode().splitlines():
        name, role = line.split(" ")[:2]
        entries.add((role, name))
    return frozenset(entries)


def sphinx_build(
    builder: str, out: Path, *, strict: bool = True
) -> subprocess.CompletedProcess[str]:
    """``sphinx-build -W --keep-going -n -b BUILDER docs OUT`` in a fresh environment
    (without ``-W`` when not ``strict``: warnings are printed, the build goes on)."""
    command = [sys.executable, "-m", "sphinx", "-E", "--keep-going", "-n", "-q"]
    command += ["-W"] if strict else []
    return subprocess.run(
        [*command, "-b", builder, str(DOCS), str(out)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )

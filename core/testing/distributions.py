"""A throw-away plugin distribution on disk, for tests of how nodehost loads plugins."""

from __future__ import annotations

import textwrap
from pathlib import Path


def throwaway_distribution(root: Path, name: str, source: str, version: str = "1.0") -> Path:
    """Make folder ``root`` hold module ``name`` (``source``, dedented) and its dist-info with
    a ``nodehost`` entry point ``name = name``; put ``root`` on ``PYTHONPATH`` to install it."""
    root.mkdir(parents=True)
    (root / f"{name}.py").write_text(textwrap.dedent(source))
    info = root / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[nodehost]\n{name} = {name}\n")
    return root

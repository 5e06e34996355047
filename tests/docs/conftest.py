"""Build the documentation once per session, as CI does, into a temporary folder.

The helpers live in ``docsbuild``; pytest runs with ``--import-mode=importlib``,
so this folder is put on ``sys.path`` here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nodehost.testing.parts import require

sys.path.insert(0, str(Path(__file__).parent))

from docsbuild import BuiltDocs, read_inventory, sphinx_build


@pytest.fixture(scope="session")
def built_docs(tmp_path_factory: pytest.TempPathFactory) -> BuiltDocs:
    require("docs")
    out = tmp_path_factory.mktemp("docs") / "html"
    result = sphinx_build("html", out, strict=False)  # one test judges the warnings
    assert result.returncode == 0, f"sphinx-build failed:\n{result.stderr}"
    return BuiltDocs(out, read_inventory(out / "objects.inv"), result.stderr)

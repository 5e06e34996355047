"""Build the documentation once per session, as CI does, into a temporary folder.

The helpers live in ``docsbuild``; pytest runs with ``--import-mode=importlib``,
so this folder is put on ``sys.path`` here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from docsbuild import INSTALL_LINE, BuiltDocs, read_inventory, sphinx_build


@pytest.fixture(scope="session")
def built_docs(tmp_path_factory: pytest.TempPathFactory) -> BuiltDocs:
    pytest.importorskip("sphinx", reason=f"the docs need Sphinx: {INSTALL_LINE}")
    pytest.importorskip("sphinx_click", reason=f"the docs need sphinx-click: {INSTALL_LINE}")
    pytest.importorskip("furo", reason=f"the docs need furo: {INSTALL_LINE}")
    out = tmp_path_factory.mktemp("docs") / "html"
    result = sphinx_build("html", out, strict=False)  # one test judges the warnings
    assert result.returncode == 0, f"sphinx-build failed:\n{result.stderr}"
    return BuiltDocs(out, read_inventory(out / "objects.inv"), result.stderr)

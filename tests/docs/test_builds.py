"""The docs build clean (warnings and broken references fail) and make the man page."""

from __future__ import annotations

from pathlib import Path

import pytest
from docsbuild import BuiltDocs, sphinx_build


def test_html_builds_without_warnings(built_docs: BuiltDocs) -> None:
    """What ``sphinx-build -W -n`` in CI would fail on: any warning, any broken reference."""
    assert (built_docs.html / "index.html").is_file()
    assert built_docs.warnings == ""


@pytest.mark.needs("docs")
def test_man_page_is_built_from_the_same_sources(tmp_path: Path) -> None:
    result = sphinx_build("man", tmp_path)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "nodehost.1").read_text()
    assert page.startswith('.\\"') or ".TH" in page
    assert "nodehost start" in page
    assert "\\-\\-config" in page


def test_no_literal_shows_its_backticks(built_docs: BuiltDocs) -> None:
    """A ``literal`` that starts or ends with a space (or touches a letter) is not
    markup to reStructuredText: its backticks reach the reader.  None may."""
    stray = {
        str(page.relative_to(built_docs.html)): page.read_text().count("``")
        for page in built_docs.html.rglob("*.html")
        if "``" in page.read_text()
    }
    assert not stray, f"pages showing literal ``: {stray}"

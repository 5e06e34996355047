"""The ``needs`` mark works in a plugin author's own test suite, not only in nodehost's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nodehost.testing import parts

AUTHOR_TESTS = """
import pytest

from nodehost.testing import parts

parts.add_part("unicorn", lambda: False, "apt-get install unicorn")


@pytest.mark.needs("unicorn")
def test_needs_a_missing_part():
    raise AssertionError("ran without its part")


@pytest.mark.needs("root")
def test_needs_a_part_that_is_here_or_not():
    pass
"""


def run_author_suite(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """pytest on a folder of the author's (no nodehost conftest), the plugin auto-loaded."""
    (tmp_path / "test_author.py").write_text(textwrap.dedent(AUTHOR_TESTS))
    environment = {k: v for k, v in os.environ.items() if k != parts.REQUIRE_VARIABLE}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", "--strict-markers",
         str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env={**environment, **env}, check=False,
    )  # fmt: skip


def test_a_missing_part_skips_with_its_install_line(tmp_path: Path) -> None:
    result = run_author_suite(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "needs unicorn: apt-get install unicorn" in result.stdout
    assert "ran without its part" not in result.stdout


def test_a_missing_part_fails_when_parts_are_required(tmp_path: Path) -> None:
    result = run_author_suite(tmp_path, **{parts.REQUIRE_VARIABLE: "1"})
    assert result.returncode == 1
    assert "needs unicorn: apt-get install unicorn (NODEHOST_REQUIRE_REAL_PARTS is set)" in (
        result.stdout
    )


def test_a_part_name_is_added_once() -> None:
    with pytest.raises(ValueError, match="part 'root' exists already"):
        parts.add_part("root", lambda: True, "be root")

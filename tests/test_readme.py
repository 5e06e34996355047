"""README.rst is valid reStructuredText and its test command is the one CI runs."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.rst"


def code_lines(text: str) -> list[str]:
    """The first line of every ``.. code-block:: sh`` block."""
    lines = text.splitlines()
    found = []
    for index, line in enumerate(lines):
        if line.strip() == ".. code-block:: sh":
            body = [item.strip() for item in lines[index + 1 :] if item.strip()]
            found.append(body[0])
    return found


def test_readme_renders_without_warnings() -> None:
    import docutils.core

    docutils.core.publish_doctree(
        README.read_text(), settings_overrides={"halt_level": 2, "report_level": 2}
    )


def test_quick_start_has_exactly_two_setup_commands_and_ci_runs_the_second() -> None:
    quick_start = README.read_text().split("\nWhat it does\n")[0]
    commands = code_lines(quick_start)
    assert len(commands) == 2
    main_job, tests = commands
    assert "nodehost start" in main_job
    assert tests in (ROOT / ".ci" / "run").read_text()

"""Tables fit the terminal: cells wrap instead of lines growing past the width."""

from __future__ import annotations

from nodehost.table import format_table, wrap_cell

ROWS = [
    ("NAME", "STATUS", "HOOKS"),
    ("sdn", "active", "components,network_providers,validate_config"),
    ("broken", "failed: " + "a very long reason " * 10, "-"),
]


def test_without_a_width_lines_keep_their_natural_length() -> None:
    lines = format_table(ROWS).splitlines()
    assert len(lines) == 3
    assert max(map(len, lines)) > 200


def test_with_a_width_no_line_is_longer() -> None:
    lines = format_table(ROWS, 60).splitlines()
    assert max(map(len, lines)) <= 60
    assert len(lines) > 3


def test_wrapping_keeps_every_word_in_its_column() -> None:
    text = format_table(ROWS, 60)
    status_column = text.splitlines()[0].index("STATUS")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("broken")) + 1
    words = [word for line in lines[start:] for word in line[status_column:].split()]
    assert words and all(word in ("a", "very", "long", "reason") for word in words), words
    assert text.count("reason") == 10


def test_hook_lists_break_after_commas() -> None:
    assert wrap_cell("components,network_providers,validate_config", 20) == [
        "components,",
        "network_providers,",
        "validate_config",
    ]


def test_words_longer_than_the_column_are_split() -> None:
    assert wrap_cell("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_plugins_table_fits_the_terminal(monkeypatch) -> None:
    from click.testing import CliRunner

    from nodehost.cli import cli

    monkeypatch.setenv("COLUMNS", "60")
    result = CliRunner().invoke(cli, ["plugins"])
    assert result.exit_code == 0, result.output
    assert max(map(len, result.output.splitlines())) <= 60
    monkeypatch.setenv("COLUMNS", "300")
    wide = CliRunner().invoke(cli, ["plugins"]).output
    assert len(wide.splitlines()) < len(result.output.splitlines())

"""The root command: help, version, unknown commands, and staying light to start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("click", "structlog", "cryptography", "yaml", "pluggy", "asyncio", "importlib.metadata")


def test_help_lists_every_command(nodehost) -> None:
    result = nodehost("--help")
    assert result.code == 0
    for command in (
        "start",
        "config",
        "components",
        "plugins",
        "version",
        "ca",
        "status",
        "network",
    ):
        assert f"  {command} " in result.out


def test_version_prints_the_version(nodehost) -> None:
    from nodehost import __version__

    assert nodehost("version").out.strip() == f"nodehost {__version__}"
    assert json.loads(nodehost("version", "--json").out)["nodehost"] == __version__


def test_unknown_command_is_a_usage_error(nodehost) -> None:
    result = nodehost("bogus")
    assert result.code == 2
    assert "No such command 'bogus'" in result.err


def test_console_script_help_matches_the_click_group(nodehost) -> None:
    from nodehost.entry import root_help

    assert nodehost("--help").out == root_help() + "\n"


def test_click_group_knows_every_command_of_the_table() -> None:
    import click

    from nodehost.cli import cli
    from nodehost.entry import COMMANDS

    with click.Context(cli) as ctx:
        assert set(cli.list_commands(ctx)) == set(COMMANDS)
        for name in COMMANDS:
            assert cli.get_command(ctx, name) is not None


def test_subcommand_help_is_rendered_by_click(nodehost) -> None:
    result = nodehost("config", "--help")
    assert result.code == 0
    assert "Usage: nodehost config" in result.out and "validate" in result.out


def test_help_and_version_import_nothing_heavy() -> None:
    script = (
        "import sys\n"
        "from nodehost.entry import main\n"
        "for argv in (['--help'], ['-h'], ['version'], ['--version']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print('HEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "HEAVY="


def test_installed_executable_runs(nodehost_exe) -> None:
    result = nodehost_exe("version")
    assert result.code == 0
    assert result.out.startswith("nodehost ")


def test_status_refuses_a_negative_timeout(nodehost) -> None:
    result = nodehost("status", "--timeout=-1")
    assert result.code == 2
    assert "--timeout" in result.err


def test_teardown_of_a_state_dir_that_is_a_file_says_so_and_exits_2(
    nodehost, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.write_text("x")
    result = nodehost("teardown", f"--state-dir={plain}")
    assert result.code == 2
    assert result.err.strip() == f"error: invalid value for --state-dir: {plain} is not a directory"
    missing = nodehost("teardown", f"--state-dir={tmp_path / 'missing'}")
    assert (missing.code, missing.out.strip()) == (
        0,
        f"nothing to tear down: {tmp_path / 'missing'} does not exist",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("start", "--bogus-flag"), "No such option '--bogus-flag'. (see 'nodehost start --help')"),
        (
            ("config", "validate"),
            "Missing argument 'FILE'. (see 'nodehost config validate --help')",
        ),
        (("bogus",), "No such command 'bogus'. (see 'nodehost --help')"),
    ],
)
def test_a_usage_mistake_click_finds_is_one_line_naming_it(nodehost, args, message) -> None:
    """As nodehost's own usage errors: one ``error:`` line on stderr, exit 2 (not click's
    three lines of usage, hint and ``Error:``)."""
    result = nodehost(*args)
    assert (result.code, result.err, result.out) == (2, f"error: {message}\n", "")
